"""Additive attention of Bahdanau et al. (2015), Appendix A.1.2 and A.2.2.

e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j); α_i = softmax_j(e_i) over real
words only; c_i = Σ_j α_ij h_j. ``keys`` = U_a h is computed once per
sentence (``precompute``), since it does not depend on i.
"""

from __future__ import annotations

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, query: int, annotation: int, align: int):
        super().__init__()
        self.W_a = nn.Linear(query, align, bias=False)
        self.U_a = nn.Linear(annotation, align)
        self.v_a = nn.Linear(align, 1, bias=False)

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """U_a h: (B, Tx, 2n) → (B, Tx, n')."""
        return self.U_a(h)

    def forward(self, s_prev: torch.Tensor, keys: torch.Tensor, h: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Context (B, 2n) and weights α (B, Tx) for decoder states ``s_prev`` (B, n)."""
        e = self.v_a(torch.tanh(keys + self.W_a(s_prev).unsqueeze(1))).squeeze(-1)
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(alpha.unsqueeze(1), h).squeeze(1), alpha
