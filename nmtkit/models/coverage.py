"""Tu et al. (2016)'s NN-based coverage with gating (section 3.1.2), which RNNsearch's attention reads.

Each source word j has a coverage vector C_{i,j} of d units (d = 10 in the paper), C_{0,j} = 0,
updated after each decoder step by a paper-GRU whose input is [α_ij; h_j; s_{i−1}]:
z, r = σ(W_{z,r} x + U_{z,r} C), C̃ = tanh(W x + U (r ∘ C)), C_{i,j} = (1 − z) ∘ C_{i−1,j} + z ∘ C̃.
W's columns are split by what they read, since the three parts change at different rates: the
h_j part (with the bias) once per sentence (``precompute``), the s_{i−1} part once per step for
every word, the α_ij part a column scaled per word.

The update runs in float32 whatever the autocast or the weights' dtype (--bf16), as the linguistic
coverage's sum does: the state then rounds C once a step, not every product and gate of the cell.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .layers import PaperGRU, gru_update


class NeuralCoverage(nn.Module):
    def __init__(self, annotation: int, query: int, dim: int):
        super().__init__()
        self.annotation, self.dim = annotation, dim
        self.gru = PaperGRU(1 + annotation + query, dim)  # W's columns: [α | h | s]

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """W_h h_j + b: (B, Tx, 2n) → (B, Tx, 3d), float32."""
        W = self.gru.W
        with torch.autocast(h.device.type, enabled=False):
            return F.linear(h.float(), W.weight[:, 1 : 1 + self.annotation].float(), W.bias.float())

    def forward(
        self, coverage: torch.Tensor, alpha: torch.Tensor, s_prev: torch.Tensor, keys: torch.Tensor
    ) -> torch.Tensor:
        """C_i (B, Tx, d), float32, from C_{i−1} (B, Tx, d), α_i (B, Tx), s_{i−1} (B, n) and the
        sentence's :meth:`precompute` (B, Tx, 3d)."""
        W = self.gru.W.weight.float()
        U_zr, U = self.gru.U_zr.weight.float(), self.gru.U.weight.float()
        with torch.autocast(s_prev.device.type, enabled=False):
            w_s = F.linear(s_prev.float(), W[:, 1 + self.annotation :])
            wx = keys.float() + w_s.unsqueeze(1) + alpha.float().unsqueeze(-1) * W[:, 0]
            return gru_update(wx, coverage.float(), lambda c: F.linear(c, U_zr), lambda rc: F.linear(rc, U))
