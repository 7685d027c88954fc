"""Settings of data selection, readable without loading the language models."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SelectConfig:
    keep_words: int  # target-side words to keep (the selection's own tokens)
    order: int = 4
    min_count: int = 2  # in-domain words seen fewer times are <unk> to the LMs
    chunk_lines: int = 20_000
    seed: int = 1
