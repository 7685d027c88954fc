"""Tu et al. (2016)'s coverage models, which RNNsearch's attention reads, behind one interface.

A coverage keeps, for each source word j, a vector C_{i,j} of ``dim`` numbers, C_{0,j} = 0, that
the attention reads beside s_{i−1} and h_j, and that each decoder step updates from the attention
α_ij it gave. :class:`Coverage` is the interface RNNsearch uses: ``precompute(h)`` once per
sentence, then ``forward(C_{i−1}, α_i, s_{i−1}, pre)`` once per step. Two variants:

- :class:`LinguisticCoverage` (section 3.1.1): C_{i,j} = C_{i−1,j} + α_ij / Φ_j, one number per
  word, the attention it received so far over its fertility Φ_j = N σ(U_f h_j), N the most target
  words a source word may cover (``--max-fertility``, 2 in the paper's experiments).
- :class:`NeuralCoverage` (section 3.1.2, with gating): d units per word (d = 10 in the paper)
  updated by a paper-GRU whose input is [α_ij; h_j; s_{i−1}]:
  z, r = σ(W_{z,r} x + U_{z,r} C), C̃ = tanh(W x + U (r ∘ C)), C_{i,j} = (1 − z) ∘ C_{i−1,j} + z ∘ C̃.
  W's columns are split by what they read, since the three parts change at different rates: the
  h_j part (with the bias) once per sentence, the s_{i−1} part once per step for every word, the
  α_ij part a column scaled per word.

Both update in float32 whatever the autocast or the weights' dtype (--bf16), and the decoder's
state keeps C in float32 (:meth:`~nmtkit.models.rnnsearch.RNNSearch.init_state`): no step's
share is rounded away.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import NEURAL_COVERAGE_DIM, CoverageConfig
from .layers import PaperGRU, gru_update


class Coverage(nn.Module):
    """The interface: ``dim`` numbers per source word, what a sentence needs precomputed, a step."""

    dim: int

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """What every step of a sentence reads of its annotations ``h`` (B, Tx, 2n), float32."""
        raise NotImplementedError

    def forward(
        self, coverage: torch.Tensor, alpha: torch.Tensor, s_prev: torch.Tensor, pre: torch.Tensor
    ) -> torch.Tensor:
        """C_i (B, Tx, dim), float32, from C_{i−1} (B, Tx, dim), α_i (B, Tx), s_{i−1} (B, n) and
        the sentence's :meth:`precompute`."""
        raise NotImplementedError


class LinguisticCoverage(Coverage):
    dim = 1

    def __init__(self, annotation: int, max_fertility: float):
        super().__init__()
        self.max_fertility = max_fertility
        self.U_f = nn.Linear(annotation, 1)

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """The fertility Φ = N σ(U_f h) (B, Tx)."""
        return self.max_fertility * torch.sigmoid(self.U_f(h).squeeze(-1).float())

    def forward(
        self, coverage: torch.Tensor, alpha: torch.Tensor, s_prev: torch.Tensor, pre: torch.Tensor
    ) -> torch.Tensor:
        return coverage.float() + (alpha.float() / pre).unsqueeze(-1)


class NeuralCoverage(Coverage):
    def __init__(self, annotation: int, query: int, dim: int = NEURAL_COVERAGE_DIM):
        super().__init__()
        self.annotation, self.dim = annotation, dim
        self.gru = PaperGRU(1 + annotation + query, dim)  # W's columns: [α | h | s]

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """W_h h_j + b: (B, Tx, 2n) → (B, Tx, 3d)."""
        W = self.gru.W
        with torch.autocast(h.device.type, enabled=False):
            return F.linear(h.float(), W.weight[:, 1 : 1 + self.annotation].float(), W.bias.float())

    def forward(
        self, coverage: torch.Tensor, alpha: torch.Tensor, s_prev: torch.Tensor, pre: torch.Tensor
    ) -> torch.Tensor:
        W = self.gru.W.weight.float()
        U_zr, U = self.gru.U_zr.weight.float(), self.gru.U.weight.float()
        with torch.autocast(s_prev.device.type, enabled=False):
            w_s = F.linear(s_prev.float(), W[:, 1 + self.annotation :])
            wx = pre.float() + w_s.unsqueeze(1) + alpha.float().unsqueeze(-1) * W[:, 0]
            return gru_update(wx, coverage.float(), lambda c: F.linear(c, U_zr), lambda rc: F.linear(rc, U))


def coverage_model(cfg: CoverageConfig, annotation: int, query: int) -> Coverage | None:
    """The coverage ``cfg`` describes for annotations of ``annotation`` units and decoder states of
    ``query``, or None for ``none``."""
    if cfg.kind == "linguistic":
        return LinguisticCoverage(annotation, cfg.max_fertility)
    if cfg.kind == "neural":
        return NeuralCoverage(annotation, query)
    return None


# Where 1.1 kept the coverages' weights, on RNNsearch itself: checkpoint.file renames them on reading.
RENAMED_1_1 = {"U_f.": "coverage.U_f.", "coverage_rnn.": "coverage."}
