"""The padded batch shapes of ``train --cuda-graphs``, fitted to the run's own batches.

A CUDA graph holds one shape, so every batch is padded up to one of a few: its source and target
lengths up to rungs of a ladder, its sentences up to a fixed number. Even rungs waste the most where
most batches are (the Bible's batches of 80 are sorted by target length, so their longest target
sits a few words under the next even rung) and spend shapes on pairs of lengths that never meet
(a batch of short targets has no long source). So the ladder is fitted (:func:`fitted`): the
first epoch's batches, drawn as training will draw them, give each batch's longest source and
target; every such length starts as a rung, and the rung whose removal adds the least padded work
goes, one at a time, until the batches fall into ``FITTED_SHAPES`` (source, target) pairs. The
first epoch decides, so a resumed run fits the same ladder.

Work is counted in positions, a source position weighing ``SOURCE_WEIGHT`` of a target one: at the
paper's sizes the encoder's two GRU steps take about 0.4 of the FLOPs of the decoder's step, its
attention, readout and output layer. Batches of a fixed number of sentences are padded to the
run's batch size; batches cut by tokens to the most sentences a batch of their target rung can
hold (the token budget over the shortest its longest target can be there), rounded up to
``ROWS_MULTIPLE``. The first target rung has no such bound: its shapes take the most sentences a
first-epoch batch of theirs held, and a later batch with more gets a shape of its own.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

FITTED_SHAPES = 20  # the first epoch's; MAX_SHAPES (graphs.py) leaves room for pairs met later
SOURCE_WEIGHT = 0.4
ROWS_MULTIPLE = 8  # sentences of a token batch's shape: tensor cores' tiles
START_RUNGS = 64  # a side: past this many distinct lengths the fit starts from quantiles


Rows = TypeVar("Rows", int, np.ndarray)


def rounded_rows(sentences: Rows) -> Rows:
    return -(-sentences // ROWS_MULTIPLE) * ROWS_MULTIPLE


def most_rows(tgt: np.ndarray, j: np.ndarray, max_tokens: int) -> np.ndarray:
    """The most sentences a token batch of target rung ``j`` can hold (0 for the first rung, which
    has no shortest longest target): ``max_tokens`` over the shortest its longest target can be."""
    below = np.maximum(j - 1, 0)
    return np.where(j > 0, rounded_rows(max_tokens // (tgt[below] + 1)), 0)


@dataclass(frozen=True)
class Ladder:
    """The rungs of each side, and the sentences of a padded batch: ``batch_size``, or for batches
    cut by tokens (``batch_size`` 0), the most a batch of the target rung can hold, or in the
    first rung the most a first-epoch batch of the shape held (``first``)."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    batch_size: int
    max_tokens: int = 0
    first: dict[int, int] = field(default_factory=dict)  # source rung → sentences, first target rung
    real_share: float = 1.0  # of the target positions the first epoch's padded batches compute

    def shape(self, sentences: int, src_len: int, tgt_len: int) -> tuple[int, int, int] | None:
        """The padded shape (sentences, source, target) of a batch; None past the top rungs."""
        i, j = bisect_left(self.src, src_len), bisect_left(self.tgt, tgt_len)
        if i == len(self.src) or j == len(self.tgt):
            return None
        s, t = self.src[i], self.tgt[j]
        if self.batch_size:
            return max(self.batch_size, sentences), s, t
        held = int(most_rows(np.asarray(self.tgt), np.asarray(j), self.max_tokens)) or self.first.get(s, 0)
        return max(held, rounded_rows(sentences)), s, t


def _longest(batches: Sequence[np.ndarray], src_sizes: np.ndarray, tgt_sizes: np.ndarray) -> np.ndarray:
    """Each batch's longest source and target with ``</s>`` (or ``<s>``), and its sentences."""
    ids = np.concatenate(batches)
    starts = np.cumsum([0] + [len(b) for b in batches[:-1]])
    return np.column_stack(
        [
            np.maximum.reduceat(src_sizes[ids], starts) + 1,
            np.maximum.reduceat(tgt_sizes[ids], starts) + 1,
            [len(b) for b in batches],
        ]
    ).astype(np.int64)


def _work(points: np.ndarray, src: np.ndarray, tgt: np.ndarray, max_tokens: int) -> tuple[float, int, np.ndarray]:
    """The padded work of ``points`` (longest source, target, sentences, batches) on these rungs,
    the shapes they use, and each point's padded sentences."""
    i, j = np.searchsorted(src, points[:, 0]), np.searchsorted(tgt, points[:, 1])
    used, which = np.unique(i * len(tgt) + j, return_inverse=True)
    rows = most_rows(tgt, used % len(tgt), max_tokens) if max_tokens else np.zeros(len(used), dtype=np.int64)
    np.maximum.at(rows, which, points[:, 2])
    per_batch = rows[which] * (tgt[j] + SOURCE_WEIGHT * src[i])
    return float((points[:, 3] * per_batch).sum()), len(used), rows[which]


def _start(lengths: np.ndarray, limit: int) -> np.ndarray:
    rungs = np.unique(lengths)
    if len(rungs) > START_RUNGS:
        rungs = np.unique(np.quantile(lengths, np.linspace(0, 1, START_RUNGS), method="higher"))
    return np.union1d(rungs[rungs < limit], [limit])


def fitted(
    batches: Sequence[np.ndarray],
    src_sizes: np.ndarray,
    tgt_sizes: np.ndarray,
    limits: tuple[int, int],
    batch_size: int,
    max_tokens: int = 0,
    shapes: int = FITTED_SHAPES,
) -> Ladder:
    """The ladder for these batches (one epoch's), whose top rungs are ``limits`` (the longest
    source and target a batch can have, ``</s>`` included); with ``max_tokens``, batches cut by
    tokens."""
    if not len(batches):
        return Ladder((limits[0],), (limits[1],), 0 if max_tokens else batch_size, max_tokens)
    src_sizes, tgt_sizes = np.asarray(src_sizes), np.asarray(tgt_sizes)
    longest = _longest(batches, src_sizes, tgt_sizes)
    rows = rounded_rows(longest[:, 2]) if max_tokens else np.full(len(longest), batch_size)
    kinds, counts = np.unique(np.column_stack([longest[:, :2], rows]), axis=0, return_counts=True)
    points = np.column_stack([kinds, counts])
    sides = [_start(points[:, 0], limits[0]), _start(points[:, 1], limits[1])]
    used = _work(points, sides[0], sides[1], max_tokens)[1]
    while used > shapes:
        options = []
        for side in (0, 1):
            for k in range(len(sides[side]) - 1):  # the top rung stays: it holds every batch
                fewer = list(sides)
                fewer[side] = np.delete(sides[side], k)
                options.append((*_work(points, fewer[0], fewer[1], max_tokens)[:2], side, k))
        _, used, side, k = min(options, key=lambda o: o[0])
        sides[side] = np.delete(sides[side], k)
    src, tgt = sides
    rows = _work(points, src, tgt, max_tokens)[2]
    s, j = src[np.searchsorted(src, points[:, 0])], np.searchsorted(tgt, points[:, 1])
    first: dict[int, int] = {}
    for a, n in zip(s[(j == 0) & bool(max_tokens)], rows[(j == 0) & bool(max_tokens)]):
        first[int(a)] = max(first.get(int(a), 0), int(n))
    ids = np.concatenate(batches)
    real = float(tgt_sizes[ids].sum() + len(ids))  # + </s>
    return Ladder(
        tuple(int(r) for r in src),
        tuple(int(r) for r in tgt),
        0 if max_tokens else batch_size,
        max_tokens,
        first,
        real / float((points[:, 3] * rows * tgt[j]).sum()),
    )
