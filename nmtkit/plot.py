"""Pictures from plain numbers: training curves (and, with issue 4, attention heatmaps).

matplotlib with the Agg backend, so it works without a display; no torch
here, so plotting never loads a model. Files are written atomically: the
picture a user opens is never half drawn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .files import atomic_write


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def training_curves(entries: list[dict[str, Any]], out: str | Path) -> None:
    """Train and dev NLL per target token against updates, and dev BLEU when logged."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(e["step"], e["train_nll_token"]) for e in entries if "train_nll_token" in e]
    dev = [(e["step"], e["dev_nll_token"]) for e in entries if "dev_nll_token" in e]
    bleu = [(e["step"], e["dev_bleu_tok"]) for e in entries if "dev_bleu_tok" in e]
    fig, axes = plt.subplots(1, 2 if bleu else 1, figsize=(11 if bleu else 6, 4), squeeze=False)
    ax = axes[0][0]
    if train:
        ax.plot(*zip(*train), label="train", lw=1)
    if dev:
        ax.plot(*zip(*dev), "o-", label="dev", ms=4)
    ax.set_xlabel("update")
    ax.set_ylabel("NLL per target token")
    ax.grid(alpha=0.3)
    ax.legend()
    if bleu:
        ax = axes[0][1]
        ax.plot(*zip(*bleu), "o-", color="tab:green", ms=4)
        ax.set_xlabel("update")
        ax.set_ylabel("dev BLEU (greedy, tokenized)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    suffix = Path(out).suffix.lstrip(".") or "png"
    with atomic_write(out, "wb") as fh:
        fig.savefig(fh, format=suffix, dpi=120)
    plt.close(fig)
