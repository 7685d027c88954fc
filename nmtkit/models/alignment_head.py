"""An alignment head: where each target word comes from, read once the word is known.

RNNsearch's α_i is computed from s_{i−1}, before y_i is chosen: it is where the decoder looks
to predict the next word, not where that word came from, and guided alignment can pull it only
so far (docs/alignment.md). Peter et al. (2017) give the attention *target foresight*, the word
y_i itself; here the foresight goes into a head of its own beside the attention, so that
translation keeps its α and the head learns the links alone:

    A_ij = softmax_j( (W_q [t_i; E y_i]) · (W_k h_j + b_k) / √d  +  β log α_ij )

t_i is the readout that predicts y_i (it holds s_{i−1}, E y_{i−1} and c_i), h_j the
annotations. Its inputs are detached, so the head's loss never reaches the translation model
(its BLEU is the model's without the head). It starts as the attention itself (β = 1, the
products ≈ 0) and learns from the word links what to change. A target word the links leave
unaligned is trained toward the source's </s>, which thus reads "no link"
(:func:`~nmtkit.align.links.word_alignment`).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class AlignmentHead(nn.Module):
    def __init__(self, readout: int, emb: int, annotation: int, dim: int):
        super().__init__()
        self.W_q = nn.Linear(readout + emb, dim, bias=False)
        self.W_k = nn.Linear(annotation, dim)
        self.beta = nn.Parameter(torch.ones(()))
        self.scale = 1.0 / math.sqrt(dim)

    def reset_parameters(self) -> None:
        """Small products and β = 1: the head starts as the attention it reads."""
        nn.init.normal_(self.W_q.weight, 0.0, 0.01)
        nn.init.normal_(self.W_k.weight, 0.0, 0.01)
        nn.init.zeros_(self.W_k.bias)
        nn.init.ones_(self.beta)

    def forward(
        self, t: torch.Tensor, e_y: torch.Tensor, h: torch.Tensor, mask: torch.Tensor, alpha: torch.Tensor
    ) -> torch.Tensor:
        """log A (B, Ty, Tx), float32: ``t`` (B, Ty, l) the readouts, ``e_y`` (B, Ty, m) the
        embeddings of the words aligned, ``h`` (B, Tx, 2n), ``mask`` (B, Tx), α (B, Ty, Tx)."""
        q = self.W_q(torch.cat([t.detach(), e_y.detach()], -1))
        k = self.W_k(h.detach())
        scores = torch.bmm(q, k.transpose(1, 2)).float() * self.scale
        scores = scores + self.beta * torch.log(alpha.detach().float() + 1e-6)
        # finite, so that a guide's zeros times the padding's log A stay 0 in the loss
        return torch.log_softmax(scores.masked_fill(~mask.bool().unsqueeze(1), -1e9), -1)
