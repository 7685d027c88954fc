"""The architectures, by name, and the model a config describes. An explicit dict: three models need no registry."""

from __future__ import annotations

from .base import Seq2Seq
from .config import ModelConfig
from .luong import Luong
from .rnnsearch import RNNEncDec, RNNSearch

# the families of models.config.FAMILIES, in its order (a test holds the two alike)
MODELS: dict[str, type[Seq2Seq]] = {"rnnsearch": RNNSearch, "rnnencdec": RNNEncDec, "luong": Luong}


def build_model(cfg: ModelConfig) -> Seq2Seq:
    """The model ``cfg`` describes. Its choices and bounds (architecture, sizes, readout, encoder,
    coverage, attention, score, window, dropout) were checked when ``cfg`` was made, by its
    family's config: not again here."""
    return MODELS[cfg.arch](cfg)
