"""The exponential moving average of a run's weights (``--ema-decay D``): a copy of the model whose
parameters follow the training ones after every update, average ← average + w × (weights −
average), w = 1 − min(D, (1 + t) / (10 + t)) after update t. The warm-up (TensorFlow's
``ExponentialMovingAverage`` with its update count, OpenNMT-py's ``-average_decay``) keeps the
average from holding the untrained weights for the first thousand updates of a D of 0.999.
Validation scores the average and the checkpoints translate with it; ``last.pt`` keeps the
training weights beside it, to resume."""

from __future__ import annotations

import copy

import torch

from ..models.base import Seq2Seq


class Average:
    """The average of ``model``'s weights, started at their present values."""

    def __init__(self, model: Seq2Seq, decay: float):
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = decay
        # tied weights are one parameter in each model: the two lists pair them alike
        self._mine: list[torch.Tensor] = list(self.model.parameters())
        self._theirs: list[torch.Tensor] = list(model.parameters())
        # the share of the weights in the coming update's average: on the device, where a captured
        # update reads it (torch's own EMA step takes a number, which a graph would keep as captured)
        self._share = torch.zeros((), device=self._mine[0].device)

    def prepare(self, step: int) -> None:
        """The share of the weights of update ``step`` (from 1), written before that update."""
        self._share.fill_(1.0 - min(self.decay, (1 + step) / (10 + step)))

    @torch.no_grad()
    def update(self) -> None:
        gap = torch._foreach_sub(self._theirs, self._mine)
        torch._foreach_mul_(gap, self._share)
        torch._foreach_add_(self._mine, gap)
