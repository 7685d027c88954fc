"""``nmtkit lexicon``: store the candidate lists of a corpus in a checkpoint file (training
stores one already; this is for older checkpoints or other sizes)."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import UserError
from ..data.binarized import Corpus
from ..data.lexicon import FREQUENT, PER_SOURCE, Lexicon, lexicon_of
from .file import check_destination, check_not_train_s, load, save


def add_lexicon(
    model_path: str | Path,
    data_bin: str | Path,
    out: str | Path,
    frequent: int = FREQUENT,
    per_source: int = PER_SOURCE,
) -> Lexicon:
    """Store the lexicon of ``data_bin`` in the checkpoint ``model_path`` (written to ``out``)."""
    check_destination(out)
    if not Path(model_path).exists():  # said before what the output's name is refused for
        raise UserError(f"{model_path}: no such checkpoint")
    if os.path.realpath(out) != os.path.realpath(model_path):  # in place, the run's file stays its own
        check_not_train_s(out, "the model with its lexicon", "with-lexicon.pt")
    ckpt = load(model_path, lazy=False)
    corpus = Corpus(data_bin)
    corpus.check_vocab(ckpt.text.vocab_sha256, f"the checkpoint {model_path}", ckpt.text.langs)
    ckpt.lexicon = lexicon_of(corpus, frequent, per_source)
    save(out, ckpt)
    return ckpt.lexicon
