"""Checkpoints made by hand: a complete one without training, and the version-1 layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from nmtkit import checkpoint
from nmtkit.checkpoint import Checkpoint, Progress, TextSides, TrainingState
from nmtkit.models.config import ModelConfig, model_config
from nmtkit.text.settings import TextConfig
from nmtkit.train.config import TrainConfig

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


def fake_checkpoint(
    path: Path,
    step: int = 500,
    seconds: float = 120.0,
    weights: dict[str, torch.Tensor] | None = None,
    model: ModelConfig | None = None,
) -> Checkpoint:
    """A well-formed checkpoint of a model that was never trained (its weights need not fit);
    ``model``'s vocabularies must have the 6 entries of the checkpoint's."""
    vocab = SPECIALS + ["a", "b"]
    text = TextSides(
        langs={"src": "en", "tgt": "fr"},
        vocab={"src": vocab, "tgt": vocab},
        text={"src": TextConfig("en"), "tgt": TextConfig("fr")},
        bpe_codes={"src": None, "tgt": None},
        vocab_sha256={"en": "0" * 64, "fr": "1" * 64},
    )
    ckpt = Checkpoint(
        model or model_config(src_vocab=len(vocab), tgt_vocab=len(vocab)),
        weights if weights is not None else {"w": torch.zeros(3, 3)},
        text,
        TrainingState(TrainConfig(), Progress(step=step, seconds=seconds)),
    )
    checkpoint.save(path, ckpt)
    return ckpt


def as_version_1(ckpt: Checkpoint) -> dict[str, Any]:
    """What nmtkit wrote before the typed sections: the layout :func:`checkpoint.load` still reads."""
    run = ckpt.training
    train: dict[str, Any] = {"config": run.config.to_dict(), "progress": vars(run.progress).copy()}
    if run.resumable:
        train |= {"optimizer": run.optimizer, "batches": run.batches, "rng": {"ranks": run.rng}}
    t = ckpt.text
    return {
        "format": "nmtkit-checkpoint",
        "version": 1,
        "nmtkit": "0.1.0",
        "model": ckpt.model.flat(),  # 1.0 kept one flat record
        "weights": ckpt.weights,
        "train": train,
        "corpus": {
            "langs": t.langs,
            "vocab": t.vocab,
            "vocab_sha256": t.vocab_sha256,
            "text": {s: c.to_dict() for s, c in t.text.items()},
            "bpe_codes": t.bpe_codes,
            "settings_sha256": t.settings_sha256,
        },
    }
