"""The architectures, by name, and the model a config describes. An explicit dict: three models need no registry."""

from __future__ import annotations

from ..core.errors import UserError
from .base import Seq2Seq
from .config import LuongConfig, ModelConfig
from .luong import Luong
from .rnnsearch import RNNEncDec, RNNSearch

# the families of models.config.FAMILIES, in its order (a test holds the two alike)
MODELS: dict[str, type[Seq2Seq]] = {"rnnsearch": RNNSearch, "rnnencdec": RNNEncDec, "luong": Luong}


def build_model(cfg: ModelConfig) -> Seq2Seq:
    """The model ``cfg`` describes. Its choices and bounds (architecture, readout, encoder,
    coverage, attention, score, window, dropout) were checked when ``cfg`` was made, by the
    declarations of its family's config: not again here."""
    if isinstance(cfg, LuongConfig) and cfg.layers < 1:
        raise UserError(f"need layers ≥ 1 (got {cfg.layers})")
    return MODELS[cfg.arch](cfg)
