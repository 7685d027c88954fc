"""The padded batch shapes of ``train --cuda-graphs``, fitted to the run's own batches.

A CUDA graph holds one shape, so every batch is padded up to one of a few (sentences, source
length, target length). Even steps of length waste the most where most batches are (the Bible's
batches of 80 are sorted by target length, so their longest target sits a few words under the
next step) and spend shapes on pairs of lengths that never meet (a batch of short targets has no
long source). So the shapes are fitted (:func:`fit_shapes`) to the first epoch's batches, drawn as
training will draw them: each distinct (sentences, longest source, longest target) starts as a
shape of its own, and the two shapes whose merging (the larger of each of the three) adds the
least padded work merge, until ``FITTED_SHAPES`` are left. A rare kind of batch thus joins a
frequent shape that holds it rather than keeping one of its own, so that shapes are met, and
captured, early in a run. A batch is padded to the cheapest shape that holds it. The first epoch
decides, so a resumed run fits the same shapes.

Work is counted in positions, a source position weighing ``SOURCE_WEIGHT`` of a target one: at the
paper's sizes the encoder's two GRU steps take about 0.4 of the FLOPs of the decoder's step, its
attention, readout and output layer. Batches of a fixed number of sentences are padded to the
run's batch size, and a shape of the longest pair there can be is always among theirs, so that
every batch has a shape. Batches cut by tokens vary in sentences (rounded up to
``ROWS_MULTIPLE``): a later one that no fitted shape holds, which is rare, runs eagerly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

FITTED_SHAPES = 16
SOURCE_WEIGHT = 0.4
ROWS_MULTIPLE = 8  # sentences of a token batch's shape: tensor cores' tiles
MAX_MERGED_KINDS = 400  # the merging compares every pair: past this, lengths go to coarser steps first

Shape = tuple[int, int, int]  # sentences, source length, target length (</s> or <s> included)
Rows = TypeVar("Rows", int, np.ndarray)


def rounded_rows(sentences: Rows) -> Rows:
    return -(-sentences // ROWS_MULTIPLE) * ROWS_MULTIPLE


def work(shapes: np.ndarray) -> np.ndarray:
    """The positions a padded update of each (sentences, source, target) shape computes."""
    return shapes[..., 0] * (shapes[..., 2] + SOURCE_WEIGHT * shapes[..., 1])


@dataclass(frozen=True)
class FittedShapes:
    """The shapes, of ``batch_size`` sentences each or, for batches cut by tokens (``batch_size``
    0), of as many as their batches had, rounded up."""

    shapes: tuple[Shape, ...]
    batch_size: int
    real_share: float = 1.0  # of the target positions the fitting epoch's padded batches compute

    def of(self, sentences: int, src_len: int, tgt_len: int) -> Shape | None:
        """The cheapest shape that holds the batch; None if none does."""
        rows = max(self.batch_size, sentences) if self.batch_size else rounded_rows(sentences)
        chosen = cheapest(np.array(self.shapes).reshape(-1, 3), np.array([[rows, src_len, tgt_len]]))[0]
        return self.shapes[chosen] if chosen >= 0 else None


def cheapest(shapes: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """For each kind of batch (sentences, longest source, longest target), the index of the
    cheapest of ``shapes`` that holds it, or -1."""
    if not len(shapes):
        return np.full(len(kinds), -1, dtype=np.int64)
    holds: np.ndarray = np.all(shapes[None, :, :] >= kinds[:, None, :], axis=2)
    chosen = np.where(holds, work(shapes)[None, :], np.inf).argmin(axis=1)
    return np.where(holds.any(axis=1), chosen, -1).astype(np.int64)


def _kinds(
    batches: Sequence[np.ndarray], src_sizes: np.ndarray, tgt_sizes: np.ndarray, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (sentences, longest source, longest target) of the batches, and how many
    batches are of each; sentences as padded (the batch size, or rounded up)."""
    ids = np.concatenate(batches)
    starts = np.cumsum([0] + [len(b) for b in batches[:-1]])
    sentences = np.array([len(b) for b in batches])
    rows = np.full(len(batches), batch_size) if batch_size else rounded_rows(sentences)
    longest = np.column_stack(
        [rows, np.maximum.reduceat(src_sizes[ids], starts) + 1, np.maximum.reduceat(tgt_sizes[ids], starts) + 1]
    )
    kinds, counts = np.unique(longest, axis=0, return_counts=True)
    return kinds.astype(np.int64), counts


def _coarser(kinds: np.ndarray, counts: np.ndarray, limits: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Lengths rounded up to steps of 2, 3, … (not past the limits) until few kinds are left."""
    step, coarse = 1, kinds
    while len(np.unique(coarse, axis=0)) > MAX_MERGED_KINDS and step < max(limits):
        step += 1
        coarse = kinds.copy()
        for side, limit in ((1, limits[0]), (2, limits[1])):
            coarse[:, side] = np.minimum(-(-kinds[:, side] // step) * step, limit)
    merged, which = np.unique(coarse, axis=0, return_inverse=True)
    return merged, np.bincount(which.ravel(), weights=counts).astype(np.int64)


def fit_shapes(
    batches: Sequence[np.ndarray],
    src_sizes: np.ndarray,
    tgt_sizes: np.ndarray,
    limits: tuple[int, int],
    batch_size: int,
    most: int = FITTED_SHAPES,
) -> FittedShapes:
    """At most ``most`` shapes for these batches (one epoch's), whose lengths are at most
    ``limits`` (the longest source and target a batch can have, ``</s>`` included);
    ``batch_size`` 0: batches cut by tokens."""
    src_sizes, tgt_sizes = np.asarray(src_sizes), np.asarray(tgt_sizes)
    batches = [b for b in batches if len(b)]
    if not batches:
        return FittedShapes(((batch_size, *limits),) if batch_size else (), batch_size)
    exact, exact_counts = _kinds(batches, src_sizes, tgt_sizes, batch_size)
    if (exact[:, 1:] > np.array(limits)).any():
        raise ValueError(f"a batch is longer than the limits {limits}")
    kinds, counts = _coarser(exact, exact_counts, limits)
    longest = np.array([[batch_size, *limits]]) if batch_size else np.empty((0, 3), dtype=np.int64)
    candidates = np.vstack([kinds, longest]).astype(np.float64)
    weight = np.append(counts, np.zeros(len(longest))).astype(np.float64)
    spent = work(candidates) * weight
    while len(candidates) > max(most, 1):
        both = np.maximum(candidates[:, None, :], candidates[None, :, :])
        added = work(both) * (weight[:, None] + weight[None, :]) - spent[:, None] - spent[None, :]
        np.fill_diagonal(added, np.inf)
        i, j = np.unravel_index(int(np.argmin(added)), added.shape)
        candidates[i], weight[i] = both[i, j], weight[i] + weight[j]
        spent[i] = work(candidates[i]) * weight[i]
        candidates, weight, spent = np.delete(candidates, j, 0), np.delete(weight, j), np.delete(spent, j)
    final = np.unique(candidates.astype(np.int64), axis=0)
    chosen = cheapest(final, exact)
    assert (chosen >= 0).all()  # each kind merged into one of them, which holds it
    ids = np.concatenate(batches)
    real = float(tgt_sizes[ids].sum() + len(ids))  # + </s>
    return FittedShapes(
        tuple((int(r), int(s), int(t)) for r, s, t in final),
        batch_size,
        real / float((exact_counts * final[chosen, 0] * final[chosen, 2]).sum()),
    )
