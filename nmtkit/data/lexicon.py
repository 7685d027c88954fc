"""Vocabulary selection for decoding: which target words a batch may produce.

Most of a decoder step's time on a CPU is the output layer over the whole
target vocabulary. Jean et al. (2015) and Marian's shortlists restrict it,
per batch, to a candidate list: the ``frequent`` most frequent target words
(ids are ranked by frequency, so these are ids below ``frequent``) and, for
every source word of the batch, its ``per_source`` likeliest translations
among the other target words. The search then runs over the candidates
alone; the specials (<pad>, <unk>, <s>, </s>) are always among them, with
their own ids.

The translations come from co-occurrence in the training pairs (at most
``max_pairs`` of them, drawn with a fixed seed): for a source word s and a
target word t outside the frequent list, Dice's coefficient
2·c(s, t) / (c(s) + c(t)), where c counts the pairs a word occurs in. It
needs no aligner and no model, takes seconds, and a frequent target word
never needs a table entry. Training stores the table in every checkpoint
(:class:`Lexicon`, a ``src_vocab × per_source`` array of target ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .settings import LexiconConfig
from .vocab import SPECIALS

FREQUENT, PER_SOURCE = LexiconConfig.frequent, LexiconConfig.per_source
MAX_PAIRS = 300_000


@dataclass(frozen=True)
class Lexicon:
    frequent: int  # target ids below this are always candidates
    table: torch.Tensor  # (src_vocab, per_source) int32 target ids; 0 (<pad>) where none

    def candidates(self, src: torch.Tensor) -> torch.Tensor:
        """The sorted target ids a batch of source ids (B, Tx) may produce (on src's device)."""
        words = self.table[src.flatten().to(self.table.device)].flatten().long().to(src.device)
        always = torch.arange(max(self.frequent, len(SPECIALS)), device=src.device)
        found: torch.Tensor = torch.unique(torch.cat([always, words]))  # sorted: specials keep their ids
        return found

    @staticmethod
    def union(lexicons: Sequence[Lexicon]) -> Lexicon | None:
        """One list holding each of ``lexicons``' candidates (an ensemble's members', of one
        vocabulary): what any member would let a batch produce, whatever their order."""
        if len(lexicons) < 2:
            return lexicons[0] if lexicons else None
        table = torch.cat([lex.table.to(lexicons[0].table.device) for lex in lexicons], dim=1)
        return Lexicon(max(lex.frequent for lex in lexicons), table)

    def to(self, device: torch.device) -> Lexicon:
        """The same lists with the table on ``device`` (once, not per batch)."""
        return Lexicon(self.frequent, self.table.to(device))

    def to_dict(self) -> dict[str, Any]:
        return {"frequent": self.frequent, "table": self.table}


def build_lexicon(
    src: Sequence[np.ndarray],
    tgt: Sequence[np.ndarray],
    src_vocab: int,
    tgt_vocab: int,
    frequent: int = FREQUENT,
    per_source: int = PER_SOURCE,
    max_pairs: int = MAX_PAIRS,
    seed: int = 1,
) -> Lexicon:
    """The table of ``src``/``tgt`` id sequences (a binarized corpus's train split)."""
    frequent, per_source = min(frequent, tgt_vocab), min(per_source, tgt_vocab)
    n = len(src)
    pairs = np.arange(n) if n <= max_pairs else np.sort(np.random.default_rng(seed).choice(n, max_pairs, replace=False))
    in_src, in_tgt = np.zeros(src_vocab), np.zeros(tgt_vocab)
    keys = []
    for i in pairs:
        s, t = np.unique(np.asarray(src[i], dtype=np.int64)), np.unique(np.asarray(tgt[i], dtype=np.int64))
        in_src[s] += 1
        in_tgt[t] += 1
        rare = t[t >= frequent]
        if len(rare) and len(s):
            keys.append((s[:, None] * tgt_vocab + rare[None, :]).ravel())
    table = np.zeros((src_vocab, per_source), dtype=np.int32)
    if keys:
        found, together = np.unique(np.concatenate(keys), return_counts=True)
        s_id, t_id = found // tgt_vocab, found % tgt_vocab
        dice = 2 * together / (in_src[s_id] + in_tgt[t_id])
        order = np.lexsort((t_id, -dice, s_id))  # by source word, best first, ties by id
        s_id, t_id = s_id[order], t_id[order]
        first = np.searchsorted(s_id, s_id)  # where each source word's run starts
        rank = np.arange(len(s_id)) - first
        keep = rank < per_source
        table[s_id[keep], rank[keep]] = t_id[keep]
    return Lexicon(frequent, torch.from_numpy(table))


def lexicon_of(corpus: Any, frequent: int = FREQUENT, per_source: int = PER_SOURCE) -> Lexicon:
    """The table of a binarized corpus's training split (:class:`~nmtkit.data.binarized.Corpus`)."""
    src, tgt = corpus.split("train")
    return build_lexicon(
        src, tgt, len(corpus.vocab(corpus.src_lang)), len(corpus.vocab(corpus.tgt_lang)), frequent, per_source
    )
