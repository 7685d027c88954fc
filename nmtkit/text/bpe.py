"""Byte-pair encoding through subword-nmt (Sennrich et al. 2016).

Codes are kept as a string so that the corpus directory and the checkpoint
can carry them; :func:`learn_codes` takes token counts (subword-nmt's
dictionary input) so that learning needs no second pass over the corpus.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import subword_nmt.learn_bpe as _learn
from subword_nmt.apply_bpe import BPE

SEPARATOR = "@@"
_JOIN = re.compile(re.escape(SEPARATOR) + r"( |$)")


def learn_codes(counts: Counter[str], merges: int, min_frequency: int = 2) -> str:
    """Learn ``merges`` BPE operations from token counts; return the codes file's text."""
    vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in counts.most_common()))
    out = io.StringIO()
    # subword-nmt's own bar is tqdm's, drawn even into pipes and logs: ours replaces it
    _learn.tqdm = _merges_bar
    _learn.learn_bpe(vocab, out, merges, min_frequency=min_frequency, is_dict=True)
    return out.getvalue()


def _merges_bar(steps: Iterable[int], *_: Any, **__: Any) -> Iterator[int]:
    from ..console import progress
    steps = list(steps)
    with progress("merges") as bar:
        task = bar.add_task("learning BPE", total=len(steps))
        for step in steps:
            yield step
            bar.advance(task)


class Segmenter:
    """Applies BPE codes to token lists and joins subwords back into tokens."""

    def __init__(self, codes: str):
        self._bpe = BPE(io.StringIO(codes), separator=SEPARATOR)

    def segment(self, tokens: list[str]) -> list[str]:
        return list(self._bpe.segment_tokens(tokens))


def merge_subwords(tokens: list[str]) -> list[str]:
    """Undo BPE: ``['Éter@@', 'nel']`` → ``['Éternel']`` (a dangling separator is dropped)."""
    return _JOIN.sub("", " ".join(tokens)).split()
