"""Hard word alignments from attention, in Pharaoh format (``i-j``: source word i, target word j).

The attention is over subwords, with ``</s>`` on both axes; the words are the
Moses tokens after BPE is undone. A source word's weight is the sum over its
subwords, a target word's row the mean over its subwords, and each target
word is aligned to the source word it attends to most (as fairseq's
``--print-alignment`` and Marian's ``--alignment hard`` do): at most one link a
target word, none where the word attends most to the source's ``</s>``, and none
for ``</s>``.
"""

from __future__ import annotations

import re

import numpy as np

from ..core.errors import UserError
from ..text.bpe import GUESSED, SEPARATOR, SPM_MARK, UnitKinds, is_spm_units


def word_ids(tokens: list[str], sentencepiece: bool | None = None) -> np.ndarray:
    """The word each subword belongs to: ``['Éter@@', 'nel', 'dit']`` (BPE) or
    ``['▁Éter', 'nel', '▁dit']`` (SentencePiece) → ``[0, 0, 1]``; ``sentencepiece``: which, as
    the codes say (None: guessed from the units). An empty unit, left where <unk>s in a row wrote
    one source word once (``translate --replace-unk``), is part of the word before it."""
    if is_spm_units(tokens, sentencepiece):
        starts = [i == 0 or t.startswith(SPM_MARK) for i, t in enumerate(tokens)]
        return np.cumsum(starts).astype(np.int64) - 1
    ids: list[int] = []
    word = 0
    for tok in tokens:
        if not tok and ids:
            ids.append(ids[-1])
            continue
        ids.append(word)
        if not tok.endswith(SEPARATOR):
            word += 1
    return np.asarray(ids, dtype=np.int64)


def word_alignment(
    source: list[str], target: list[str], attention: np.ndarray, sentencepiece: UnitKinds = GUESSED
) -> list[tuple[int, int]]:
    """(source word, target word) pairs, 0-based, at most one per target word, in target order.
    ``attention`` is (len(target) + 1, len(source) + 1): rows and columns end with </s>;
    ``sentencepiece``: the two sides' kinds of units, as their codes say. A
    target word whose weight goes mostly to the source's </s> is left unlinked: an alignment
    head (:mod:`~nmtkit.models.alignment_head`) learns to say "no link" so; attention rarely
    does."""
    if not source or not target:
        return []
    alpha = np.asarray(attention, dtype=np.float64)[: len(target), : len(source) + 1]
    src_w, tgt_w = word_ids(source, sentencepiece[0]), word_ids(target, sentencepiece[1])
    end = src_w[-1] + 1  # </s> as one more source "word"
    by_src = np.zeros((len(target), end + 1))
    np.add.at(by_src.T, np.append(src_w, end), alpha.T)  # sum over a source word's subwords
    rows = np.zeros((tgt_w[-1] + 1, end + 1))
    np.add.at(rows, tgt_w, by_src)
    rows /= np.bincount(tgt_w)[:, None]  # mean over a target word's subwords
    return [(int(row[:end].argmax()), j) for j, row in enumerate(rows) if row.argmax() != end]


def pharaoh(pairs: list[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in pairs)


_PAIR = re.compile(r"([0-9]+)-([0-9]+)")  # ASCII digits: int() read '٠' as 0, '1_0' as 10, '+1' as 1


def read_pharaoh(line: str, where: str) -> list[tuple[int, int]]:
    pairs = [_PAIR.fullmatch(item) for item in line.split()]
    if not all(pairs):
        raise UserError(f"{where}: not Pharaoh alignment pairs ('i-j i-j …')")
    return [(int(p[1]), int(p[2])) for p in pairs if p]


def unit_links(links: list[tuple[int, int]], src_words: np.ndarray, tgt_words: np.ndarray, where: str) -> np.ndarray:
    """Word links (source word i, target word j) as links between their subword units: every unit
    of word i with every unit of word j (a word split in three and linked once gives three links),
    flattened ``[i0, j0, i1, j1, …]`` over unit positions. ``src_words``/``tgt_words``: the word of
    each unit (:func:`word_ids`); a link past either sentence's words is a one-line UserError."""
    n_src, n_tgt = (int(w[-1]) + 1 if len(w) else 0 for w in (src_words, tgt_words))
    out: list[int] = []
    for i, j in links:
        if i >= n_src or j >= n_tgt:
            raise UserError(
                f"{where}: link {i}-{j} is out of range: the pair has {n_src} source and {n_tgt} target words"
            )
        src_units = range(*np.searchsorted(src_words, (i, i + 1)))
        tgt_units = range(*np.searchsorted(tgt_words, (j, j + 1)))
        out.extend(x for s in src_units for t in tgt_units for x in (s, t))
    return np.asarray(out, dtype=np.int64)
