"""The optimizer of a run and its learning rate: by epoch (Luong et al.'s halving), or over the
budget (a warm-up, then a linear or cosine fall to zero at the budget's end)."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..core.errors import UserError
from .config import TrainConfig


def optimizer(model: torch.nn.Module, cfg: TrainConfig, capturable: bool = False) -> torch.optim.Optimizer:
    """The optimizer of ``model``'s parameters that learn (all but those frozen). ``capturable``
    (the update captured as a CUDA graph): its step counts and its rate are tensors on the
    device, which the step reads there and the schedule writes in place (:func:`set_rate`), so
    that nothing in the step waits for the host."""
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device if params else torch.device("cpu")
    lr: float | torch.Tensor = torch.tensor(cfg.lr, device=device) if capturable else cfg.lr
    if cfg.optimizer == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=cfg.rho, eps=cfg.eps, capturable=capturable)
    if cfg.optimizer == "adam":
        # the fused kernel does the same arithmetic in one pass: several times faster than the
        # default on a CPU, where the default's step was a tenth of a small model's update
        return torch.optim.Adam(params, lr=lr, fused=True, capturable=capturable)
    if cfg.optimizer == "sgd":
        # the fused step reads a tensor rate on the device; the foreach step would read it on the host
        return torch.optim.SGD(params, lr=lr, fused=True if capturable else None)
    raise UserError(f"unknown optimizer '{cfg.optimizer}' (adadelta, adam, sgd)")


def set_rate(opt: torch.optim.Optimizer, rate: float) -> None:
    """Every group's rate set to ``rate``: in place where it is a tensor on the device."""
    for group in opt.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(rate)
        else:
            group["lr"] = rate


def rate_of(opt: torch.optim.Optimizer) -> float:
    """The first group's rate as a number (reading a tensor rate waits for its device)."""
    return float(opt.param_groups[0]["lr"])


def saved_optimizer(opt: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer's state for a checkpoint, its rates as numbers whatever kind the run keeps."""
    saved = opt.state_dict()
    saved["param_groups"] = [{**g, "lr": float(g["lr"])} for g in saved["param_groups"]]
    return saved


def load_optimizer(opt: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """A saved optimizer state (its moments and step counts) loaded under this run's settings.
    torch's loading brings back the saving run's group settings: its rate (a number, whatever kind
    it kept), ``capturable``, Adadelta's ``rho`` and ``eps``. This run's own are kept instead, as
    the command gives them (fairseq's optimizer overrides): a rate a schedule does not move is the
    command's ``--lr``, and a rate the graph's step reads is a tensor on the device."""
    own = [{k: v for k, v in group.items() if k != "params"} for group in opt.param_groups]
    opt.load_state_dict(saved)
    for group, settings in zip(opt.param_groups, own, strict=True):
        group.update(settings)
    place_step_counts(opt)


def place_step_counts(opt: torch.optim.Optimizer) -> None:
    """Step counts where this run's step reads them, which torch's loading decides by the saving
    run's kind: on the device for a capturable or fused step, else on the host (where a device's
    would be read, one wait for the GPU each, at every step)."""
    for group in opt.param_groups:
        on_device = group.get("capturable") or group.get("fused")
        for param in group["params"]:
            state = opt.state.get(param, {})
            if isinstance(state.get("step"), torch.Tensor):
                where = param.device if on_device else torch.device("cpu")
                state["step"] = state["step"].to(dtype=torch.float32, device=where)


def scheduled(cfg: TrainConfig) -> bool:
    """Whether the rate changes during the run (else it stays ``lr``, as Appendix B's)."""
    return bool(cfg.decay_after or cfg.warmup or cfg.lr_decay != "none")


def learning_rate(cfg: TrainConfig, epoch: int, step: int = 0, budget: int = 0, decays: int = 0) -> float:
    """The rate of update ``step`` (from 1), in epoch ``epoch`` (from 0), of a run whose rate
    falls over ``budget`` updates (0: not known yet, the rate stays at its peak) and which
    ``--lr-decay plateau`` has lowered ``decays`` times.

    ``decay_after``: ``lr`` for that many epochs, then times ``decay`` once per epoch (Luong et
    al.: 1, 1, 1, 1, 1, 0.5, 0.25, …). ``warmup``: a linear rise over the first updates.
    ``lr_decay``: from the end of the warm-up, linear or cosine to 0 at update ``budget + 1``
    (budgeted training, Li, Yumer & Ramanan 2020), so the last update still moves; or
    ``lr``·sqrt(warmup/step) (inverse-sqrt; Vaswani et al.'s, as fairseq's ``inverse_sqrt``); or
    ``lr``·``decay``^``decays`` (plateau). A function of counts alone, never of the clock, so a
    resumed run follows the same schedule."""
    if cfg.decay_after and epoch >= cfg.decay_after:
        return cfg.lr * cfg.decay ** (epoch - cfg.decay_after + 1)
    if cfg.warmup and step <= cfg.warmup:
        return cfg.lr * step / cfg.warmup
    return cfg.lr * _decayed(cfg, step, budget, decays)


def _decayed(cfg: TrainConfig, step: int, budget: int, decays: int) -> float:
    """The factor ``--lr-decay`` puts on the rate after the warm-up."""
    if cfg.lr_decay == "plateau":
        return cfg.decay**decays
    if cfg.lr_decay == "inverse-sqrt":
        return math.sqrt(max(cfg.warmup, 1) / max(step, 1))
    if cfg.lr_decay == "none" or budget <= cfg.warmup:
        return 1.0
    done = min(1.0, (step - cfg.warmup) / (budget + 1 - cfg.warmup))
    return 1.0 - done if cfg.lr_decay == "linear" else 0.5 * (1.0 + math.cos(math.pi * done))
