"""Settings of the data stage: the vocabulary build-vocab counts, and the candidate lists of
vocabulary selection (translate --shortlist) training stores. Plain values, no torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings

VALID = "valid"  # the split that validates training and picks its model


@dataclass(frozen=True)
class VocabConfig(Settings):
    """The paper's shortlist: the ``size`` most frequent tokens per language."""

    size: int = 30000
    min_count: int = 1
    bpe_merges: int = 0
    joint_bpe: bool = True  # one set of subword codes for both languages
    spm: str = ""  # "unigram" | "bpe": SentencePiece instead of subword-nmt
    spm_size: int = 8000  # SentencePiece pieces per model


@dataclass(frozen=True)
class LexiconConfig:
    """Vocabulary selection's lists: the ``frequent`` most frequent target words always, and
    ``per_source`` translations of each source word (Marian's default is 100 and 100 over 50k words)."""

    frequent: int = 1000
    per_source: int = 20
