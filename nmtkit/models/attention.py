"""Additive attention of Bahdanau et al. (2015), Appendix A.1.2 and A.2.2.

e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j); α_i = softmax_j(e_i) over real
words only; c_i = Σ_j α_ij h_j. ``keys`` = U_a h is computed once per
sentence (``precompute``), since it does not depend on i.

Training saves, for every target position, what backward needs; for the
energies that would be tanh(U_a h + W_a s) — B×Tx×n' floats a step, most
of the activation memory of a batch. ``_Energy`` keeps only W_a s and
recomputes the tanh in backward: one more elementwise pass per step.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _tanh_(x: torch.Tensor) -> torch.Tensor:
    """tanh in place as 2σ(2x) − 1 (error < 2e-7): torch's CPU tanh is ~10× slower than its
    sigmoid, and this B×Tx×n' tanh is the largest elementwise op of a decoder step."""
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


class _Energy(torch.autograd.Function):
    """e = tanh(keys + q) · v: keys (B, Tx, n'), q (B, n'), v (n',) → (B, Tx)."""

    @staticmethod
    def forward(ctx: Any, keys: torch.Tensor, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(keys, q, v)
        return torch.nn.functional.linear(_tanh_(keys + q.unsqueeze(1)), v.unsqueeze(0)).squeeze(-1)

    @staticmethod
    def backward(ctx: Any, grad_e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        keys, q, v = ctx.saved_tensors
        a = _tanh_(keys + q.unsqueeze(1))
        grad_v = grad_e.reshape(1, -1).mm(a.flatten(0, 1)).squeeze(0)
        grad_pre = torch.ops.aten.tanh_backward(grad_e.unsqueeze(-1) * v, a)   # ∂e ∘ v ∘ (1 − a²)
        return grad_pre, grad_pre.sum(1), grad_v


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
        q = self.W_a(s_prev)
        e = _Energy.apply(keys, q.to(keys.dtype), self.v_a.weight[0].to(keys.dtype))
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(alpha.unsqueeze(1), h).squeeze(1), alpha
