"""The exponential moving average of a run's weights (``--ema-decay``): a copy of the model whose
parameters follow the training ones after every update, by torch's own EMA step
(:func:`torch.optim.swa_utils.get_ema_multi_avg_fn`, one foreach lerp that never reads a value
on the host, so that a captured update takes it in). Validation scores the average and the
checkpoints translate with it; ``last.pt`` keeps the training weights beside it, to resume."""

from __future__ import annotations

import copy

import torch
from torch.optim.swa_utils import get_ema_multi_avg_fn

from ..models.base import Seq2Seq


class Average:
    """The average of ``model``'s weights, started at their present values."""

    def __init__(self, model: Seq2Seq, decay: float):
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        # tied weights are one parameter in each model: the two lists pair them alike
        self._mine, self._theirs = list(self.model.parameters()), list(model.parameters())
        self._step = get_ema_multi_avg_fn(decay)  # type: ignore[no-untyped-call]

    @torch.no_grad()
    def update(self) -> None:
        self._step(self._mine, self._theirs, None)
