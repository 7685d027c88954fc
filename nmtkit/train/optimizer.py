"""The optimizer of a run and its learning rate by epoch."""

from __future__ import annotations

import torch

from ..core.errors import UserError
from .config import TrainConfig


def optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "adadelta":
        return torch.optim.Adadelta(model.parameters(), lr=cfg.lr, rho=cfg.rho, eps=cfg.eps)
    if cfg.optimizer == "adam":
        # the fused kernel does the same arithmetic in one pass: 7x faster than the default on a
        # 2-core CPU for 22M parameters (18 vs 125 ms a step), 10% of a small-preset update
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr)
    raise UserError(f"unknown optimizer '{cfg.optimizer}' (adadelta, adam, sgd)")


def learning_rate(cfg: TrainConfig, epoch: int) -> float:
    """The rate for epoch ``epoch`` (from 0): ``lr`` for the first ``decay_after`` epochs, then
    multiplied by ``decay`` once per epoch (Luong et al.: 1, 1, 1, 1, 1, 0.5, 0.25, …). A function
    of the epoch alone, so a resumed run follows the same schedule."""
    if not cfg.decay_after or epoch < cfg.decay_after:
        return cfg.lr
    return cfg.lr * cfg.decay ** (epoch - cfg.decay_after + 1)
