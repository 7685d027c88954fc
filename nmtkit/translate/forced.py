"""Forced decoding: the model walked along given translations, its attention read as word
alignments (``nmtkit align``) or as heatmaps (``nmtkit align-plot --model``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import IO

from ..align.combine import combined_links
from ..align.files import EOS_LABEL
from ..align.heatmap import Heatmap
from ..align.links import pharaoh, word_alignment
from ..align.settings import LinkConfig
from ..core.console import progress
from ..core.errors import UserError
from ..core.files import STDIO, atomic_write, read_lines
from ..core.settings import RuntimeConfig
from .both_ways import directions, word_table
from .translator import Translator


def align_file(
    model_paths: list[str],
    source: str,
    target: str,
    output: str | None,
    tokenized: bool,
    runtime: RuntimeConfig | None = None,
    links: LinkConfig = LinkConfig(),
) -> int:
    """``nmtkit align``: Pharaoh links of each (source, target) line pair by forced decoding, with
    the models of one direction (an ensemble), or of both directions combined as ``links`` says."""
    sources, targets = list(read_lines(source)), list(read_lines(target))
    if len(sources) != len(targets):
        raise UserError(f"{source} has {len(sources):,} lines but {target} {len(targets):,}")
    forward, backward = directions(model_paths)
    translator = Translator.from_checkpoints(forward, runtime)
    with progress("pairs") as bar:
        task = bar.add_task("align", total=len(sources) * (2 if backward else 1))
        ahead = translator.force(sources, targets, tokenized, done=lambda n: bar.advance(task, n), scored=False)
        if backward:
            back = Translator.from_checkpoints(backward, runtime).force(
                targets, sources, tokenized, done=lambda n: bar.advance(task, n), scored=False
            )
    if backward:
        pairs = [combined_links(word_table(f), word_table(b), links) for f, b in zip(ahead, back)]
    else:
        pairs = [word_alignment(f.source_tokens, f.target_tokens, f.attention) for f in ahead]
    lines = [pharaoh(p) for p in pairs]
    with contextlib.ExitStack() as stack:
        out: IO[str] = stack.enter_context(atomic_write(output)) if output and output != STDIO else sys.stdout
        out.write("".join(line + "\n" for line in lines))
    return len(lines)


def from_model(
    model_paths: Sequence[str],
    source: str,
    target: str,
    lines: Sequence[int],
    tokenized: bool = False,
    runtime: RuntimeConfig | None = None,
) -> list[Heatmap]:
    src, tgt = list(read_lines(source)), list(read_lines(target))
    if len(src) != len(tgt):
        raise UserError(f"{source} has {len(src)} lines but {target} has {len(tgt)}")
    missing = [n for n in lines if n > len(src)]
    if missing:
        raise UserError(f"{source}: has no line {missing[0]} (it has {len(src)})")
    if any(not src[n - 1].strip() for n in lines):
        raise UserError(f"{source}: line {next(n for n in lines if not src[n - 1].strip())} is empty")
    translator = Translator.from_checkpoints(list(model_paths), runtime)
    forced = translator.force([src[n - 1] for n in lines], [tgt[n - 1] for n in lines], tokenized)
    return [
        Heatmap(
            n,
            f.source_tokens + [EOS_LABEL],
            f.target_tokens + [EOS_LABEL],
            f.attention,
            f"line {n}, reference forced, log p = {f.score:.2f}",
        )
        for n, f in zip(lines, forced)
    ]
