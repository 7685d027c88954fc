"""Interpolated modified Kneser–Ney n-gram language models, estimated and queried in numpy.

Why our own and not a library (measured when it was written):
Moore–Lewis selection estimates only two small models per language (the
in-domain text and a general sample of the same size) and then *scores* the
whole general corpus. ``kenlm``'s Python module queries fast but cannot
estimate, ``lmplz`` needs a C++ build against Boost, and ``nltk.lm`` scores
about 12 n-grams a second. Estimation here is a few ``np.unique`` calls per
order; scoring keys every n-gram of a chunk as one uint64 (16 bits a word,
so up to 4-grams over 65,533 words) and probes one hash table per order for
all positions at once (``make bench-data`` times it).
Nothing compiled is needed.

The model is stored in backoff form (as in ARPA files): every seen n-gram
keeps its interpolated log-probability and, as a context, its backoff weight,
so a query is ``log p(w | h) = logp[hw]`` if seen, else ``bow[h] + log p(w | h')``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from .hashindex import EMPTY, HashIndex

UNK, BOS, EOS = 0, 1, 2
SPECIALS = ("<unk>", "<s>", "</s>")
BITS = 16
MAX_ORDER = 64 // BITS
MAX_WORDS = (1 << BITS) - 1 - len(SPECIALS)  # id 65535 is never used, so no key is all ones
LOG_ZERO = -99.0

# Punctuation split off words and case folded: the cheap stand-in for Moses tokens that
# selection uses, applied to a whole chunk by one regex pass.
_PUNCT = re.compile(r"([^\w\s])")


def words_of(text: str) -> list[list[str]]:
    """Lowercased tokens of each line of ``text`` (lines split on '\\n' only)."""
    return [line.split() for line in _PUNCT.sub(r" \1 ", text.lower()).split("\n")]


class SelectionVocab:
    """Word ids for the language models: the in-domain words seen ``min_count`` times or more."""

    def __init__(self, words: list[str]):
        self.words = list(SPECIALS) + words
        self.ids = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def from_counts(cls, counts: Counter[str], min_count: int = 2, max_words: int = MAX_WORDS) -> SelectionVocab:
        kept = [w for w, c in counts.most_common(max_words) if c >= min_count and w not in SPECIALS]
        return cls(sorted(kept, key=lambda w: (-counts[w], w)))

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """The ids of a chunk of lines as one sequence ``<s> w… </s> <s> w… </s>``, and words per line."""
        lines = words_of(text)
        lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        flat = [w for line in lines for w in line]
        ids = np.fromiter(map(self.ids.get, flat, repeat(UNK)), dtype=np.uint64, count=len(flat))
        return frame(ids, lengths), lengths

    def save(self, path: Path) -> None:
        path.write_text("\n".join(self.words[len(SPECIALS) :]) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> SelectionVocab:
        return cls(path.read_text(encoding="utf-8").split("\n")[:-1])


def frame(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Insert ``<s>`` before and ``</s>`` after each sentence of the flat ``ids``."""
    n = lengths.size
    seq = np.empty(ids.size + 2 * n, dtype=np.uint64)
    ends = np.cumsum(lengths + 2)
    starts = ends - lengths - 2
    seq[starts] = BOS
    seq[ends - 1] = EOS
    sentence = np.repeat(np.arange(n), lengths)
    seq[np.arange(ids.size) + 2 * sentence + 1] = ids
    return seq


def positions(seq: np.ndarray) -> np.ndarray:
    """Each token's distance from its sentence's ``<s>``."""
    idx = np.arange(seq.size)
    return idx - np.maximum.accumulate(np.where(seq == BOS, idx, 0))


def ngram_keys(seq: np.ndarray, order: int) -> list[np.ndarray]:
    """keys[k-1][t]: the k-gram ending at t packed into a uint64 (garbage where it leaves the sentence)."""
    keys = [seq]
    shift = np.uint64(BITS)
    for _ in range(1, order):
        prev = keys[-1]
        k = np.empty_like(seq)
        k[0] = EMPTY
        k[1:] = (prev[:-1] << shift) | seq[1:]
        keys.append(k)
    return keys


def _discounts(adjusted: np.ndarray) -> np.ndarray:
    """Chen & Goodman's D1, D2, D3+ from the counts of counts, with KenLM's fallback on tiny data."""
    n = [int((adjusted == i).sum()) for i in (1, 2, 3, 4)]
    try:
        y = n[0] / (n[0] + 2 * n[1])
        d = np.array([1 - 2 * y * n[1] / n[0], 2 - 3 * y * n[2] / n[1], 3 - 4 * y * n[3] / n[2]])
    except ZeroDivisionError:
        d = np.array([-1.0])
    if not (np.all(d > 0) and np.all(d < np.array([1, 2, 3])[: d.size])) or d.size < 3:
        d = np.array([0.5, 1.0, 1.5])
    return d


@dataclass
class _Order:
    keys: np.ndarray  # sorted unique k-grams
    adjusted: np.ndarray  # KN adjusted counts


class NgramLM:
    """A queryable model: dense unigram arrays and one hash table per higher order."""

    def __init__(
        self,
        order: int,
        vocab_size: int,
        uni_logp: np.ndarray,
        uni_bow: np.ndarray,
        tables: list[tuple[HashIndex, np.ndarray, np.ndarray]],
    ):
        self.order, self.vocab_size = order, vocab_size
        self.uni_logp, self.uni_bow, self.tables = uni_logp, uni_bow, tables

    # -- estimation -------------------------------------------------------------------
    @classmethod
    def estimate(cls, sequences: Iterable[np.ndarray], vocab_size: int, order: int = 4) -> NgramLM:
        if not 1 <= order <= MAX_ORDER:
            raise ValueError(f"order must be 1..{MAX_ORDER}")
        raw: list[list[np.ndarray]] = [[] for _ in range(order)]
        for seq in sequences:
            pos = positions(seq)
            for k, keys in enumerate(ngram_keys(seq, order), start=1):
                raw[k - 1].append(keys[(pos >= k - 1) & (seq != BOS)])
        levels: list[_Order] = []
        uniq = [np.unique(np.concatenate(r) if r else np.empty(0, np.uint64), return_counts=True) for r in raw]
        for k in range(order, 0, -1):
            keys, c = uniq[k - 1]
            adjusted = c.astype(np.float64)
            if k < order:
                higher = levels[0].keys
                suffix = higher & np.uint64((1 << (BITS * k)) - 1)
                s_keys, s_n = np.unique(suffix, return_counts=True)
                cont = np.zeros(keys.size)
                cont[np.searchsorted(keys, s_keys)] = s_n
                starts_bos = (keys >> np.uint64(BITS * (k - 1))) == BOS if k > 1 else np.zeros(keys.size, bool)
                adjusted = np.where(starts_bos | (cont == 0), adjusted, cont)
            levels.insert(0, _Order(keys, adjusted))
        return cls._from_levels(levels, vocab_size, order)

    @classmethod
    def _from_levels(cls, levels: list[_Order], vocab_size: int, order: int) -> NgramLM:
        # Unigrams interpolate with the uniform distribution over the vocabulary (not <s>).
        uni = levels[0]
        d = _discounts(uni.adjusted)
        total = uni.adjusted.sum()
        disc = d[np.minimum(uni.adjusted, 3).astype(int) - 1]
        gamma0 = disc.sum() / total if total else 1.0
        p1 = np.full(vocab_size, gamma0 / (vocab_size - 1))
        ids = uni.keys.astype(np.int64)
        p1[ids] += (uni.adjusted - disc) / total if total else 0
        p1[BOS] = 0.0
        uni_logp = np.where(p1 > 0, np.log(np.maximum(p1, 1e-300)), LOG_ZERO).astype(np.float32)
        uni_bow = np.zeros(vocab_size, dtype=np.float32)
        prev_keys, prev_logp = np.arange(vocab_size, dtype=np.uint64), uni_logp.astype(np.float64)
        prev_bow = uni_bow.astype(np.float64)
        tables: list[tuple[HashIndex, np.ndarray, np.ndarray]] = []
        for k in range(2, order + 1):
            lv = levels[k - 1]
            ctx = lv.keys >> np.uint64(BITS)
            c_keys, c_start, c_of = np.unique(ctx, return_index=True, return_inverse=True)
            denom = np.bincount(c_of, weights=lv.adjusted)
            d = _discounts(lv.adjusted)
            disc = d[np.minimum(lv.adjusted, 3).astype(int) - 1]
            gamma = np.bincount(c_of, weights=disc) / denom
            suffix = lv.keys & np.uint64((1 << (BITS * (k - 1))) - 1)
            lower = prev_logp[np.searchsorted(prev_keys, suffix)]
            p = (lv.adjusted - disc) / denom[c_of] + gamma[c_of] * np.exp(lower)
            logp = np.log(p)
            # The contexts' backoff weights belong to the (k-1)-gram entries.
            at = np.searchsorted(prev_keys, c_keys)
            prev_bow[at] = np.log(gamma)
            if k == 2:
                uni_bow = prev_bow.astype(np.float32)
            else:
                tables[-1] = (tables[-1][0], tables[-1][1], tables[-1][0].slot_values(prev_bow.astype(np.float32)))
            index = HashIndex.build(lv.keys)
            tables.append((index, index.slot_values(logp.astype(np.float32)), np.zeros(index.table.size, np.float32)))
            prev_keys, prev_logp, prev_bow = lv.keys, logp, np.zeros(lv.keys.size)
        return cls(order, vocab_size, uni_logp, uni_bow, tables)

    # -- queries ----------------------------------------------------------------------
    def token_logprobs(self, seq: np.ndarray) -> np.ndarray:
        """ln p of each token given its history within the sentence (0 at ``<s>``)."""
        pos = positions(seq)
        ids = seq.astype(np.int64)
        p = self.uni_logp[ids].astype(np.float64)
        ctx_bow = np.zeros(seq.size)
        ctx_bow[1:] = self.uni_bow[ids[:-1]]
        keys = ngram_keys(seq, self.order)
        for k in range(2, self.order + 1):
            index, logp, bow = self.tables[k - 2]
            valid = pos >= k - 1
            slots = np.full(seq.size, -1, dtype=np.int64)
            slots[valid] = index.find(keys[k - 1][valid])
            found = slots >= 0
            p = np.where(found, logp[slots], np.where(valid, ctx_bow + p, p))
            nxt = np.where(found, bow[slots], 0.0)
            ctx_bow[1:] = nxt[:-1]
        p[seq == BOS] = 0.0
        return p

    def sentence_logprobs(self, seq: np.ndarray) -> np.ndarray:
        """Total ln p of each sentence of a framed sequence (``</s>`` included)."""
        lp = self.token_logprobs(seq)
        ends = np.flatnonzero(seq == EOS)
        cum = np.concatenate([[0.0], np.cumsum(lp)[ends]])
        return np.diff(cum)

    # -- storage: one .npy per array, memory-mapped by every worker -------------------
    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "uni_logp.npy", self.uni_logp)
        np.save(directory / "uni_bow.npy", self.uni_bow)
        for k, (index, logp, bow) in enumerate(self.tables, start=2):
            np.save(directory / f"table{k}.npy", index.table)
            np.save(directory / f"logp{k}.npy", logp)
            np.save(directory / f"bow{k}.npy", bow)
        meta = {
            "order": self.order,
            "vocab_size": self.vocab_size,
            "max_probe": [index.max_probe for index, _, _ in self.tables],
            "ngrams": [int((index.table != EMPTY).sum()) for index, _, _ in self.tables],
        }
        (directory / "lm.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> NgramLM:
        meta = json.loads((directory / "lm.json").read_text(encoding="utf-8"))

        def arr(name: str) -> np.ndarray:
            mapped: np.ndarray = np.load(directory / f"{name}.npy", mmap_mode="r")
            return mapped

        tables = [
            (HashIndex(arr(f"table{k}"), None, probe), arr(f"logp{k}"), arr(f"bow{k}"))
            for k, probe in zip(range(2, meta["order"] + 1), meta["max_probe"])
        ]
        return cls(meta["order"], meta["vocab_size"], np.asarray(arr("uni_logp")), np.asarray(arr("uni_bow")), tables)
