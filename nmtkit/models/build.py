"""The architectures, by name, and the model a config describes. An explicit dict: three models need no registry."""

from __future__ import annotations

from ..core.errors import UserError
from .base import Seq2Seq
from .config import COVERAGES, ENCODERS, READOUTS, SCORES, WINDOWS, ModelConfig, is_luong
from .luong import Luong
from .rnnsearch import RNNEncDec, RNNSearch

MODELS: dict[str, type[Seq2Seq]] = {"rnnsearch": RNNSearch, "rnnencdec": RNNEncDec, "luong": Luong}


def build_model(cfg: ModelConfig) -> Seq2Seq:
    if cfg.arch not in MODELS:
        raise UserError(f"unknown architecture '{cfg.arch}' (known: {', '.join(MODELS)})")
    if cfg.readout not in READOUTS:
        raise UserError(f"readout must be 'prev' or 'next', not '{cfg.readout}'")
    if cfg.encoder not in ENCODERS:
        raise UserError(f"encoder must be 'paper' or 'cudnn', not '{cfg.encoder}'")
    if cfg.coverage not in COVERAGES:
        raise UserError(f"coverage must be one of {', '.join(COVERAGES)}; not '{cfg.coverage}'")
    if is_luong(cfg.arch):
        if cfg.attention not in (*WINDOWS, "none"):
            raise UserError(f"attention must be one of {', '.join(WINDOWS)}, none; not '{cfg.attention}'")
        if cfg.score not in SCORES:
            raise UserError(f"score must be one of {', '.join(SCORES)}; not '{cfg.score}'")
        if cfg.attention.startswith("local") and cfg.window < 1:
            raise UserError(
                f"local attention needs a window half-width D ≥ 1 (got --window {cfg.window}): "
                f"with D = 0, local-p's Gaussian has σ = D/2 = 0"
            )
        if cfg.layers < 1 or not 0 <= cfg.dropout < 1:
            raise UserError(f"need layers ≥ 1 and 0 ≤ dropout < 1 (got {cfg.layers}, {cfg.dropout})")
    return MODELS[cfg.arch](cfg)
