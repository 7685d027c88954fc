"""Pictures from plain numbers: training curves, BLEU by sentence length, attention heatmaps.

matplotlib with the Agg backend, so it works without a display; no torch
here, so plotting never loads a model. Files are written atomically: the
picture a user opens is never half drawn.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec

import numpy as np

from .console import log, short_names
from .errors import UserError
from .files import atomic_write
from .streams import names_descriptor
from .wording import counted

FORMATS = ("png", "svg", "pdf")
P = ParamSpec("P")


def pyplot() -> Any:
    """matplotlib's pyplot on Agg. Where HOME is read-only, matplotlib's import logged two long
    lines (no config directory, a temporary cache made instead) that -q did not silence: its import
    logs errors alone."""
    said = logging.getLogger("matplotlib")
    level = said.level
    said.setLevel(logging.ERROR)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    finally:
        said.setLevel(level)
    return plt


# Families that draw what DejaVu Sans (matplotlib's own) lacks, Chinese, Japanese and Korean above
# all, tried after it in this order where installed: matplotlib falls back glyph by glyph
FALLBACK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "Arial Unicode MS",
)
_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from (current )?font")
# The other warnings of a drawing, passed on once each, as Python's default filter shows them: recorded
# to find the glyphs', each came again with every picture (the filters' registry is reset by recording)
_SHOWN: set[tuple[str, type[Warning], str, int]] = set()


def font_families(installed: set[str]) -> list[str]:
    """DejaVu Sans, then the fallbacks among ``installed`` (font family names)."""
    return ["DejaVu Sans", *(f for f in FALLBACK_FONTS if f in installed)]


def _installed_families() -> set[str]:
    pyplot()  # matplotlib imported as pyplot() imports it
    from matplotlib import font_manager

    return {f.name for f in font_manager.fontManager.ttflist}


def _literal(draw: Callable[P, None]) -> Callable[P, None]:
    """``draw`` with its text shown as it is: words, system names and titles are the user's, and
    matplotlib read ``$x$`` in them as mathematics (an italic x), ``\\$`` as ``$``. Characters no
    installed font draws are said in one line, not in a warning of matplotlib's per character."""

    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> None:
        families = font_families(_installed_families())
        rc = {"text.parse_math": False, "font.family": "sans-serif", "font.sans-serif": families}
        with pyplot().rc_context(rc), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            draw(*args, **kwargs)
        missing: set[str] = set()
        for w in caught:
            found = _MISSING_GLYPH.search(str(w.message))
            if found:
                missing.add(chr(int(found.group(1))))
            elif (key := (str(w.message), w.category, w.filename, w.lineno)) not in _SHOWN:
                _SHOWN.add(key)
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if missing:
            out = inspect.signature(draw).bind(*args, **kwargs).arguments["out"]
            shown = "".join(sorted(missing)[:10]) + ("…" if len(missing) > 10 else "")
            log(
                f"warning: {out}: {counted(len(missing), 'character')} ({shown}) in no installed font "
                f"({', '.join(families)}): drawn as boxes; a font that has them, Noto Sans CJK for Chinese, "
                "Japanese and Korean, is used once installed"
            )

    return drawn


def check_format(out: str | Path) -> str:
    if str(out) == "/dev/stdout" or names_descriptor(out, 1):
        raise UserError(f"{out}: a picture is a file, not text for stdout: name it (.png, .svg or .pdf)")
    suffix = Path(out).suffix.lstrip(".").lower()
    if suffix not in FORMATS:
        raise UserError(
            f"{out}: pictures are written as {', '.join(FORMATS)}; name the file with one of those suffixes"
        )
    return suffix


def save_figure(fig: Any, out: str | Path, cropped: bool = False) -> None:
    """``fig`` written to ``out``; ``cropped``: without the blank margin a figure sized in advance
    leaves around its content (a heatmap of two rows filled half its height)."""
    suffix = check_format(out)
    with atomic_write(out, "wb") as fh:
        fig.savefig(fh, format=suffix, dpi=120, **({"bbox_inches": "tight", "pad_inches": 0.1} if cropped else {}))
    pyplot().close(fig)


@_literal
def training_curves(entries: list[dict[str, Any]], out: str | Path) -> None:
    """Train and dev NLL per target token against updates, and dev BLEU when logged."""
    plt = pyplot()
    train = [(e["step"], e["train_nll_token"]) for e in entries if "train_nll_token" in e]
    dev = [(e["step"], e["dev_nll_token"]) for e in entries if "dev_nll_token" in e]
    bleu = [(e["step"], e["dev_bleu_tok"]) for e in entries if "dev_bleu_tok" in e]
    fig, axes = plt.subplots(1, 2 if bleu else 1, figsize=(11 if bleu else 6, 4), squeeze=False)
    ax = axes[0][0]
    if train:  # a point of its own where it is the only one: a line of one point is not drawn
        ax.plot(*zip(*train), "o-" if len(train) == 1 else "-", label="train", lw=1, ms=4)
    if dev:
        ax.plot(*zip(*dev), "o-", label="dev", ms=4)
    ax.set_ylabel("NLL per target token")
    ax.legend()
    if bleu:
        ax = axes[0][1]
        ax.plot(*zip(*bleu), "o-", color="tab:green", ms=4, clip_on=False)  # a BLEU of 0 on the axis, whole
        ax.set_ylabel("dev BLEU (greedy, tokenized)")
        ax.set_ylim(bottom=0)
    steps = {step for step, _ in train + dev + bleu}
    for ax in axes[0]:
        ax.set_xlabel("update")
        ax.xaxis.get_major_locator().set_params(integer=True)  # updates are whole: no 19.25
        if len(steps) < 3:  # too few whole numbers in the range for the rule above: 5.7, 6.0, 6.3
            ax.set_xticks(sorted(steps))
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out)


_LENGTH_LABELS = 12  # length buckets labelled at the most, across the chart's 6.5 inches


@_literal
def bleu_by_length_chart(rows: list[dict[str, Any]], out: str | Path, title: str = "") -> None:
    """The paper's Figure 2: BLEU against source sentence length, one line per system; the
    tokenized BLEU (as the paper's) where the rows have it, else sacreBLEU."""
    plt = pyplot()
    rows = [r for r in rows if r["hi"]]
    kind = "bleu_tok" if rows and "bleu_tok" in rows[0] else "bleu"
    names = list(rows[0][kind]) if rows else []
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = [r["hi"] for r in rows]
    for name, label in zip(names, short_names(names)):
        ax.plot(x, [r[kind][name] for r in rows], "o-", ms=4, label=label, clip_on=False)
    every = max(1, math.ceil(len(rows) / _LENGTH_LABELS))  # more labels than that run into each other
    labels = [f"{r['lo']}–{r['hi']}\n({r['sentences']})" if k % every == 0 else "" for k, r in enumerate(rows)]
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlabel("; ".join(filter(None, ["source sentence length in words (sentences)", _every(every, "bucket")])))
    ax.set_ylabel("tokenized BLEU (Moses tokens)" if kind == "bleu_tok" else "sacreBLEU (detokenized)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    if names:
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out)


def _every(k: int, what: str) -> str:
    """The note, for an axis' title, that one ``what`` in ``k`` is labelled ("" where each is)."""
    return f"one {what} in {k} labelled" if k > 1 else ""


# matplotlib resamples the image in float64 at the canvas's size: a side grown with a long
# sentence's words would ask for gigabytes
_HEATMAP_MAX_INCHES = 30.0
_LABEL_SPACING = 0.13  # inches between labels at the least: 4.5-point type, every k-th word beyond


_LABEL_CHARACTERS = 40  # of a word, at the most: the picture is cropped to its labels, which bound its size


def _label(word: str) -> str:
    return word if len(word) <= _LABEL_CHARACTERS else word[: _LABEL_CHARACTERS - 1] + "…"


@_literal
def alignment_heatmap(source: list[str], target: list[str], alignment: Any, out: str | Path, title: str = "") -> None:
    """The paper's Figure 3: α_ij with source words on the x-axis (top) and generated words on
    the y-axis, grey from 0 (black) to 1 (white). Sized by the sentence so that 50 words stay legible;
    a longer one's cells shrink so that no side passes ``_HEATMAP_MAX_INCHES``, and where they are
    too small for a label each, every k-th word is labelled (1, k+1, …)."""
    plt = pyplot()
    a = np.asarray(alignment, dtype=float)
    longest = max(len(source), len(target), 1)
    cell = min(0.26, (_HEATMAP_MAX_INCHES - 1.6) / longest)
    every = math.ceil(_LABEL_SPACING / cell - 1e-9)
    font = 9 * min(0.26, cell * every) / 0.26
    fig, ax = plt.subplots(figsize=(max(3.0, 1.6 + cell * len(source)), max(3.0, 1.6 + cell * len(target))))
    ax.imshow(a, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal")
    ax.xaxis.tick_top()
    ax.set_xticks(range(0, len(source), every), [_label(w) for w in source[::every]], rotation=90, fontsize=font)
    ax.set_yticks(range(0, len(target), every), [_label(w) for w in target[::every]], fontsize=font)
    ax.tick_params(length=0)
    note = _every(every, "word")
    if title or note:
        ax.set_xlabel(f"{title} ({note})" if title and note else title or note, fontsize=9)
    with warnings.catch_warnings():  # long words' labels overflow the figure: the crop takes them in
        warnings.filterwarnings("ignore", "Tight layout not applied", UserWarning)
        fig.tight_layout()
    save_figure(fig, out, cropped=True)
