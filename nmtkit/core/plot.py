"""Pictures from plain numbers: training curves, BLEU by sentence length, attention heatmaps.

matplotlib with the Agg backend, so it works without a display; no torch
here, so plotting never loads a model. Files are written atomically: the
picture a user opens is never half drawn.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec

import numpy as np

from .console import short_names
from .errors import UserError
from .files import atomic_write, names_descriptor

FORMATS = ("png", "svg", "pdf")
P = ParamSpec("P")


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _literal(draw: Callable[P, None]) -> Callable[P, None]:
    """``draw`` with its text shown as it is: words, system names and titles are the user's, and
    matplotlib read ``$x$`` in them as mathematics (an italic x), ``\\$`` as ``$``."""

    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> None:
        with pyplot().rc_context({"text.parse_math": False}):
            draw(*args, **kwargs)

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


def save_figure(fig: Any, out: str | Path) -> None:
    suffix = check_format(out)
    with atomic_write(out, "wb") as fh:
        fig.savefig(fh, format=suffix, dpi=120)
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
        ax.plot(*zip(*bleu), "o-", color="tab:green", ms=4)
        ax.set_ylabel("dev BLEU (greedy, tokenized)")
        ax.set_ylim(bottom=0)
    for ax in axes[0]:
        ax.set_xlabel("update")
        ax.xaxis.get_major_locator().set_params(integer=True)  # updates are whole: no 19.25
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out)


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
        ax.plot(x, [r[kind][name] for r in rows], "o-", ms=4, label=label)
    ax.set_xticks(x, [f"{r['lo']}–{r['hi']}\n({r['sentences']})" for r in rows], fontsize=8)
    ax.set_xlabel("source sentence length in words (sentences)")
    ax.set_ylabel("tokenized BLEU (Moses tokens)" if kind == "bleu_tok" else "sacreBLEU (detokenized)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    if names:
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out)


# matplotlib resamples the image in float64 at the canvas's size: a side grown with a long
# sentence's words would ask for gigabytes
_HEATMAP_MAX_INCHES = 30.0
_LABEL_SPACING = 0.13  # inches between labels at the least: 4.5-point type, every k-th word beyond


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
    ax.set_xticks(range(0, len(source), every), source[::every], rotation=90, fontsize=font)
    ax.set_yticks(range(0, len(target), every), target[::every], fontsize=font)
    ax.tick_params(length=0)
    if title:
        ax.set_xlabel(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, out)
