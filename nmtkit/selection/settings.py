"""Settings of data selection, readable without loading the language models."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings, setting

# what --keep-words can count, and the unit's name where a count is reported
COUNT_UNITS = {"moses": "Moses tokens", "selection": "the selection's tokens"}


@dataclass(frozen=True)
class SelectConfig(Settings):
    keep_words: int  # target-side words to keep, counted as ``count`` says
    order: int = setting(4, "N-gram order of the language models.", ge=1, le=4, flag="--lm-order")
    min_count: int = 2  # in-domain words seen fewer times are <unk> to the LMs
    chunk_lines: int = 20_000
    seed: int = 1
    count: str = setting(
        "moses",
        "What --keep-words counts: the target side's Moses tokens, as preprocess --no-normalize-punct makes "
        "them, or the selection's own tokens (lowercased, every punctuation mark split off), which score faster.",
        choices=tuple(COUNT_UNITS),
        flag="--count-words",
    )
