"""Attention over words rather than subword pieces, as the paper's Figure 3 draws it.

The pieces of a word are found as the Pharaoh links find them
(:func:`~nmtkit.align.links.word_ids`: BPE's ``@@`` continuation, or
SentencePiece's ``▁`` word start). A source word's column is the sum of its
pieces' columns and a target word's row the mean of its pieces' rows, so
every row still sums to 1. A trailing ``</s>`` stays its own row and column,
and words are labelled without the markers (``P@@ lé@@ iades`` → ``Pléiades``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..text.bpe import GUESSED, SEPARATOR, SPM_MARK, UnitKinds, is_spm_units
from .files import EOS_LABEL
from .links import word_ids


@dataclass(frozen=True)
class WordAttention:
    source: list[str]  # word labels, </s> last where the tokens had it
    target: list[str]
    attention: npt.NDArray[np.float64]  # (len(target), len(source))


def word_attention(
    source: list[str], target: list[str], attention: Any, sentencepiece: UnitKinds = GUESSED
) -> WordAttention:
    """The attention between words of a (len(target), len(source)) matrix over subword tokens:
    columns summed over a source word's pieces, rows averaged over a target word's pieces.
    ``sentencepiece``: the two sides' kinds of units, as their codes say."""
    alpha = np.asarray(attention, dtype=np.float64)
    if alpha.shape != (len(target), len(source)):
        raise ValueError(f"attention of shape {alpha.shape} for {len(target)} target and {len(source)} source tokens")
    src_ids, src_words = _words(source, sentencepiece[0])
    tgt_ids, tgt_words = _words(target, sentencepiece[1])
    columns = np.zeros((len(target), len(src_words)))
    np.add.at(columns.T, src_ids, alpha.T)  # sum over a source word's pieces
    rows = np.zeros((len(tgt_words), len(src_words)))
    np.add.at(rows, tgt_ids, columns)
    rows /= np.maximum(np.bincount(tgt_ids, minlength=len(tgt_words)), 1)[:, None]  # mean over its pieces
    return WordAttention(src_words, tgt_words, rows)


def _words(tokens: list[str], sentencepiece: bool | None) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Each token's word and the words' labels; a final </s> is a word of its own."""
    eos = bool(tokens) and tokens[-1] == EOS_LABEL
    pieces = tokens[:-1] if eos else tokens
    spm = is_spm_units(pieces, sentencepiece)
    ids = np.asarray(word_ids(pieces, spm), dtype=np.int64)
    groups: list[list[str]] = [[] for _ in range(int(ids[-1]) + 1 if len(ids) else 0)]
    for word, piece in zip(ids, pieces):
        groups[word].append(piece)
    labels = [_label(group, spm) for group in groups]
    if eos:
        ids = np.append(ids, len(labels))
        labels.append(EOS_LABEL)
    return ids, labels


def _label(pieces: list[str], spm: bool) -> str:
    if spm:
        word = "".join(pieces).replace(SPM_MARK, "")
    else:
        word = "".join(p[: -len(SEPARATOR)] if p.endswith(SEPARATOR) else p for p in pieces)
    return word or "".join(pieces)
