"""The architectures, by name, and the model a config describes. An explicit dict: three models need no registry."""

from __future__ import annotations

import torch

from .base import Seq2Seq
from .config import ModelConfig
from .luong import Luong
from .rnnsearch import RNNEncDec, RNNSearch

# the families of models.config.FAMILIES, in its order (a test holds the two alike)
MODELS: dict[str, type[Seq2Seq]] = {"rnnsearch": RNNSearch, "rnnencdec": RNNEncDec, "luong": Luong}


def outside_classes(model: torch.nn.Module) -> tuple[str, ...]:
    """The classes of ``model``'s modules that come from outside nmtkit and torch (a ``Luong``
    subclass, its ``attention_class``): a checkpoint names its family, and a process that builds the
    family's own classes would read such weights as the paper's model."""
    kinds = {type(m) for m in model.modules()}
    return tuple(sorted(f"{k.__module__}.{k.__qualname__}" for k in kinds if not k.__module__.startswith(_OURS)))


_OURS = ("nmtkit.", "torch.")


def build_model(cfg: ModelConfig) -> Seq2Seq:
    """The model ``cfg`` describes. Its choices and bounds (architecture, sizes, readout, encoder,
    coverage, attention, score, window, dropout) were checked when ``cfg`` was made, by its
    family's config: not again here."""
    return MODELS[cfg.arch](cfg)
