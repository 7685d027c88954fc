"""The architectures, by name. An explicit dict: three models need no registry."""

from __future__ import annotations

from ..config import ModelConfig
from ..errors import UserError
from .base import Seq2Seq
from .rnnsearch import RNNEncDec, RNNSearch

MODELS: dict[str, type[Seq2Seq]] = {"rnnsearch": RNNSearch, "rnnencdec": RNNEncDec}


def build_model(cfg: ModelConfig) -> Seq2Seq:
    if cfg.arch not in MODELS:
        raise UserError(f"unknown architecture '{cfg.arch}' (known: {', '.join(MODELS)})")
    if cfg.readout not in ("prev", "next"):
        raise UserError(f"readout must be 'prev' or 'next', not '{cfg.readout}'")
    if cfg.encoder not in ("paper", "cudnn"):
        raise UserError(f"encoder must be 'paper' or 'cudnn', not '{cfg.encoder}'")
    return MODELS[cfg.arch](cfg)
