"""``nmtkit align-plot``: the paper's Figure 3, attention weights α_ij as grey-scale heatmaps.

The weights come from a ``translate --alignments`` file (what the model
attended to while it searched) or from walking a checkpoint along given
source and reference lines (what it attends to when it must produce the
reference). Sentences are chosen by line number, 1-based, as ``3,10-12``.
Subword pieces are drawn merged into words (:mod:`.words`), or as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core.console import log
from ..core.errors import UserError
from ..core.files import read_lines
from ..core.plot import alignment_heatmap, check_format
from ..core.wording import counted
from ..text.bpe import GUESSED, UnitKinds
from .aer import read_gold
from .files import is_alignment_header, read_alignments, spans, unit_kinds
from .words import word_attention


@dataclass
class Heatmap:
    line: int
    source: list[str]
    target: list[str]
    alignment: Any
    title: str
    subwords: bool = True  # tokens may be subword pieces (False: Moses tokens, as given)
    sentencepiece: UnitKinds = GUESSED  # the two sides' kinds of units, where known


# pictures one run draws at most: a range typed wrong (1-20000000) would otherwise be expanded,
# gigabytes of it, before the file said it holds 567 lines
MAX_PICTURES = 10_000


def parse_sentences(spec: str, option: str = "--sentences") -> list[int]:
    """'3,10-12' → [3, 10, 11, 12]; line numbers start at 1, each drawn once. ``option``: the
    option the errors name."""
    out: dict[int, None] = {}
    try:
        for part in filter(None, (p.strip() for p in spec.split(","))):
            lo, dash, hi = part.partition("-")
            first, last = int(lo), int(hi) if dash else int(lo)
            if first < 1 or last < first:
                raise ValueError
            if last - first >= MAX_PICTURES:  # before it is spelt out
                raise UserError(f"{option} '{spec}': more than {MAX_PICTURES:,} pictures; draw fewer at a time")
            out.update(dict.fromkeys(range(first, last + 1)))
            if len(out) > MAX_PICTURES:
                raise UserError(f"{option} '{spec}': more than {MAX_PICTURES:,} pictures; draw fewer at a time")
    except ValueError:
        raise UserError(f"{option} '{spec}': expected line numbers from 1, like 3,10-12") from None
    if not out:
        raise UserError(f"{option}: give at least one line number")
    return list(out)


def drawable(where: str | Path, lines: Sequence[int], empty: Sequence[int]) -> list[int]:
    """The asked lines less the empty ones, each of those said on stderr: one empty line among
    several does not stop the others' pictures. None left is an error."""
    if len(empty) == len(lines):
        what = f"sentence {empty[0]} is" if len(empty) == 1 else f"sentences {', '.join(map(str, empty))} are all"
        raise UserError(f"{where}: {what} empty, there is nothing to plot")
    for n in empty:
        log(f"warning: {where}: sentence {n} is empty: not drawn")
    return [n for n in lines if n not in set(empty)]


def from_pharaoh(path: str | Path, source: str | None, target: str | None, lines: Sequence[int]) -> list[Heatmap]:
    """Hard alignments (``translate --print-alignment``, fast_align …) or gold links over
    Moses-token files: a white cell per link, a grey one per possible link (``i?j``)."""
    links = list(read_lines(path, allow_empty=True))
    if links and is_alignment_header(links[0]):  # its header line would count as a sentence
        raise UserError(
            f"{path} is an attention file (translate --alignments), not Pharaoh links: "
            "plot it without --source and --target"
        )
    if not (source and target):
        raise UserError("Pharaoh links need both --source and --target (Moses tokens)")
    src, tgt = list(read_lines(source)), list(read_lines(target))
    if not len(links) == len(src) == len(tgt):
        raise UserError(f"{path}, {source} and {target} differ in length ({len(links)}, {len(src)}, {len(tgt)} lines)")
    if missing := [n for n in lines if n > len(links)]:
        raise UserError(f"{path}: has no line {missing[0]} (it has {len(links)})")
    maps = []
    for n in drawable(path, lines, [n for n in lines if not (src[n - 1].split() and tgt[n - 1].split())]):
        s, t = src[n - 1].split(), tgt[n - 1].split()
        sure, pairs = read_gold(links[n - 1], f"{path}: line {n}")
        bad = next(((i, j) for i, j in pairs if i >= len(s) or j >= len(t)), None)
        if bad:
            raise UserError(
                f"{path}: line {n} links {bad[0]}-{bad[1]}, beyond its {len(s)} source and {len(t)} target words"
            )
        grid = np.zeros((len(t), len(s)))
        for i, j in pairs:
            grid[j, i] = 1.0 if (i, j) in sure else 0.5
        maybe = len(pairs) - len(sure)
        title = f"line {n}, {counted(len(sure), 'link')}" + (f" and {maybe} possible (grey)" if maybe else "")
        maps.append(Heatmap(n, s, t, grid, title, subwords=False))
    return maps


def from_alignment_file(path: str | Path, lines: Sequence[int]) -> list[Heatmap]:
    records = read_alignments(path)
    missing = [n for n in lines if n not in records]
    if missing:
        held = (
            f"it holds {'line' if len(records) == 1 else 'lines'} {spans(records)}"
            if records
            else "it holds no sentence"
        )
        raise UserError(f"{path}: has no sentence {missing[0]} ({held})")
    for n in lines:
        source, target, alignment, score = (records[n].get(k) for k in ("source", "target", "alignment", "score"))
        tokens = (source, target)
        if not (
            all(isinstance(side, list) and all(isinstance(t, str) for t in side) for side in tokens)
            and isinstance(alignment, list)
            and isinstance(score, (int, float))
            and not isinstance(score, bool)
        ):
            raise UserError(f"{path}: sentence {n} is not an alignment record (source, target, alignment, score)")
    maps = []
    for n in drawable(path, lines, [n for n in lines if not records[n]["alignment"]]):
        source, target, alignment, score = (records[n][k] for k in ("source", "target", "alignment", "score"))
        try:
            weights = np.asarray(alignment, dtype=float)
        except (TypeError, ValueError):  # ragged, or not numbers
            raise UserError(f"{path}: sentence {n}: its attention is not a table of numbers") from None
        # 1.01: a bf16 softmax rounds above 1
        if not (np.isfinite(weights).all() and (weights >= 0).all() and (weights <= 1.01).all()):
            raise UserError(f"{path}: sentence {n}: its attention holds weights outside [0, 1], NaN or infinite")
        if weights.shape != (len(target), len(source)):
            raise UserError(
                f"{path}: sentence {n}: attention of shape {weights.shape} for {len(target)} target "
                f"and {len(source)} source tokens"
            )
        title = f"line {n}, log p = {score:.2f}"
        maps.append(Heatmap(n, source, target, alignment, title, sentencepiece=unit_kinds(records[n])))
    return maps


def output_paths(out: str | Path, lines: Sequence[int]) -> list[Path]:
    """OUT itself for one sentence; OUT's stem with -LINE for several (fig.png → fig-3.png)."""
    out = Path(out)
    check_format(out)
    if len(lines) == 1:
        return [out]
    return [out.with_name(f"{out.stem}-{n}{out.suffix}") for n in lines]


def in_words(m: Heatmap) -> Heatmap:
    """The heatmap over words: subword pieces merged (columns summed, rows averaged)."""
    if not m.subwords:
        return m
    try:
        words = word_attention(m.source, m.target, m.alignment, m.sentencepiece)
    except ValueError as err:
        raise UserError(f"line {m.line}: {err}") from None
    return replace(m, source=words.source, target=words.target, alignment=words.attention)


def plot(maps: list[Heatmap], out: str | Path, pieces: bool = False, asked: Sequence[int] = ()) -> list[Path]:
    """One picture per heatmap, over words unless ``pieces`` (the subword pieces as the model saw them).
    Named by ``asked``, the lines asked for where some were not drawn (OUT-LINE for several)."""
    named = dict(zip(asked or [m.line for m in maps], output_paths(out, asked or [m.line for m in maps])))
    paths = [named[m.line] for m in maps]
    for m, path in zip(maps, paths):
        shown = m if pieces else in_words(m)
        alignment_heatmap(shown.source, shown.target, shown.alignment, path, shown.title)
    return paths
