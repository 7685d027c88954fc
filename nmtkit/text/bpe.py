"""Byte-pair encoding through subword-nmt (Sennrich et al. 2016).

Codes are kept as a string so that the corpus directory and the checkpoint
can carry them; :func:`learn_codes` takes token counts (subword-nmt's
dictionary input) so that learning needs no second pass over the corpus.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

SEPARATOR = "@@"
_JOIN = re.compile(re.escape(SEPARATOR) + r"( |$)")


def learn_codes(counts: Counter[str], merges: int, min_frequency: int = 2) -> str:
    """Learn ``merges`` BPE operations from token counts; return the codes file's text."""
    vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in counts.most_common()))
    out = io.StringIO()
    # subword-nmt draws a tqdm bar on stderr; keep it off in pipes and tests.
    os.environ.setdefault("TQDM_DISABLE", "1")
    learn_bpe(vocab, out, merges, min_frequency=min_frequency, is_dict=True)
    return out.getvalue()


class Segmenter:
    """Applies BPE codes to token lists and joins subwords back into tokens."""

    def __init__(self, codes: str):
        self._bpe = BPE(io.StringIO(codes), separator=SEPARATOR)

    def segment(self, tokens: list[str]) -> list[str]:
        return self._bpe.segment_tokens(tokens)


def merge_subwords(tokens: list[str]) -> list[str]:
    """Undo BPE: ``['Éter@@', 'nel']`` → ``['Éternel']`` (a dangling separator is dropped)."""
    return _JOIN.sub("", " ".join(tokens)).split()
