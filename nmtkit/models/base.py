"""The interface every model offers to training and to search.

``encode(src, mask) -> EncoderOut``, ``init_state(enc) -> state``,
``step(y_prev, state, enc) -> (logp, state, attn)`` for one target position,
and ``forward(src, src_mask, tgt_in) -> logits`` (teacher forcing), which is
built from the same recurrence and readout as ``step``. Models see ids and
sizes only, never text or vocabulary files.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..config import ModelConfig


@dataclass
class EncoderOut:
    """Annotations ``h`` (B, Tx, 2n), their precomputed ``U_a h`` (B, Tx, n') and the mask (B, Tx)."""

    h: torch.Tensor
    mask: torch.Tensor
    keys: torch.Tensor | None = None
    summary: torch.Tensor | None = None


class Seq2Seq(nn.Module):
    cfg: ModelConfig

    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> EncoderOut:
        raise NotImplementedError

    def init_state(self, enc: EncoderOut) -> torch.Tensor:
        raise NotImplementedError

    def step(self, y_prev: torch.Tensor, state: torch.Tensor,
             enc: EncoderOut) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError
