"""Where local-p attention looks, watched at validation.

Luong et al.'s local-p predicts its window's centre, p_t = S·sigmoid(·). When
that sigmoid saturates, p_t pins to the sentence's first or last word for
every target word: the window stops following the source, the gradient
through the sigmoid vanishes so training cannot free it, and the loss curve
shows nothing but a worse NLL (seen on the Bible within 300 updates: pinned to
the start with Adam at 5e-3 and 5e-4, to the end at 1e-3; not with the
weights renormalised, ``--window-renorm``).
Validation therefore reports the mean of p_t / S over the dev set's target
words and the share of them whose p_t lies within one word of an end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch

from ..models.attention import LuongAttention

STUCK = 0.9  # a share of target words at an edge above which the window is reported stuck


class WindowWatch:
    """Collects p_t of the teacher-forced passes of a model's local-p attention."""

    def __init__(self, model: torch.nn.Module):
        self.attention = [m for m in model.modules() if isinstance(m, LuongAttention) and m.window == "local-p"]
        self.relative: list[np.ndarray] = []
        self.edge: list[np.ndarray] = []

    def __enter__(self) -> WindowWatch:
        for m in self.attention:
            m.seen = []
        return self

    def __exit__(self, *_: object) -> None:
        for m in self.attention:
            m.seen = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Not recording inside the block (the search of dev BLEU: its positions are its own)."""
        for m in self.attention:
            m.seen = None
        try:
            yield
        finally:
            for m in self.attention:
                m.seen = []

    def take(self, src_lengths: np.ndarray, tgt_lengths: np.ndarray) -> None:
        """Keep the batch just scored: sentences of ``src_lengths`` and ``tgt_lengths`` tokens
        (</s> included, as the model sees them); padding positions are left out."""
        for m in self.attention:
            assert m.seen is not None
            if not m.seen:
                continue
            p = torch.cat(m.seen, 1).cpu().numpy()  # (B, Ty): one call per position or one for all
            m.seen = []
            real = np.arange(p.shape[1])[None, :] < tgt_lengths[:, None]
            S = src_lengths[:, None]
            self.relative.append((p / S)[real])
            self.edge.append(((p < 1) | (p > S - 1))[real])

    def metrics(self) -> dict[str, float]:
        """dev_pt_mean (p_t / S) and dev_pt_edge (share within a word of an end); {} when the
        model has no local-p attention."""
        if not self.relative:
            return {}
        return {
            "dev_pt_mean": float(np.concatenate(self.relative).mean()),
            "dev_pt_edge": float(np.concatenate(self.edge).mean()),
        }


def stuck_message(metrics: dict[str, float]) -> str | None:
    """A warning when the window has pinned to an edge, else None."""
    edge = metrics.get("dev_pt_edge")
    if edge is None or edge <= STUCK:
        return None
    where = "start" if metrics["dev_pt_mean"] < 0.5 else "end"
    return (
        f"warning: local-p's predicted position p_t lies at the source sentence's {where} for "
        f"{100 * edge:.0f}% of dev target words: its window no longer follows the source, and a "
        f"saturated p_t does not recover with training (--window-renorm kept it free in the Bible "
        f"runs of docs/alignment.md; local-m's window, p_t = t, cannot stick)"
    )
