"""The padded shapes of ``train --cuda-graphs`` (nmtkit.train.shapes): fitted to the first
epoch's batches, they hold every batch of every epoch, merge where it adds least work, give a rare
kind of batch to a shape that holds it, and pad less than even steps of length or power-of-two
sentence counts did."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from nmtkit.data.batching import Batches
from nmtkit.train import shapes as shapes_module
from nmtkit.train.shapes import FITTED_SHAPES, ROWS_MULTIPLE, fit_shapes

EVEN = (11, 22, 33, 44, 55)  # what a graph padded lengths to before: five even steps a side


def _sizes(pairs: int = 6000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sentence lengths as a parallel corpus has them: targets near their sources' lengths."""
    rng = np.random.default_rng(seed)
    src = np.clip(rng.gamma(4.0, 6.0, pairs).astype(np.int64), 1, 50)
    tgt = np.clip((src * rng.normal(1.1, 0.15, pairs)).astype(np.int64) + rng.integers(-2, 3, pairs), 1, 50)
    return src, tgt


def _padded(shapes, batches, src, tgt) -> tuple[float, Counter, int]:
    """Real target positions over those the padded batches compute, the uses of each shape, and
    the batches no shape holds."""
    real = computed = unheld = 0
    used: Counter = Counter()
    for b in batches:
        shape = shapes.of(len(b), int(src[b].max()) + 1, int(tgt[b].max()) + 1)
        if shape is None:
            unheld += 1
            continue
        rows, s, t = shape
        assert rows >= len(b) and s > src[b].max() and t > tgt[b].max() and shape in shapes.shapes
        real, computed = real + int(tgt[b].sum()) + len(b), computed + rows * t
        used[shape] += 1
    return real / computed, used, unheld


def _real_share(batches, tgt, rows) -> float:
    """The share of real target positions with even steps of length and ``rows(batch)`` sentences."""
    computed = sum(rows(b) * next(r for r in EVEN if r > tgt[b].max()) for b in batches)
    return sum(int(tgt[b].sum()) + len(b) for b in batches) / computed


def test_every_batch_of_every_epoch_has_a_shape_fitted_to_the_first():
    src, tgt = _sizes()
    batches = Batches(src, tgt, 32, 8, 50, 7)
    first = batches.epoch_batches(0)
    shapes = fit_shapes(first, src, tgt, (51, 51), 32)
    assert len(shapes.shapes) <= FITTED_SHAPES and (32, 51, 51) in shapes.shapes  # the longest pair's
    share, used, unheld = _padded(shapes, first, src, tgt)
    assert unheld == 0 and share == pytest.approx(shapes.real_share)
    assert min(used[shape] for shape in shapes.shapes) >= 0.01 * len(first)  # rare kinds joined frequent shapes
    for epoch in range(1, 4):
        assert _padded(shapes, batches.epoch_batches(epoch), src, tgt)[2] == 0
    assert fit_shapes(batches.epoch_batches(0), src, tgt, (51, 51), 32) == shapes  # a resumed run's
    assert shapes.real_share > _real_share(first, tgt, lambda b: 32) + 0.05


def test_the_merge_that_adds_least_work_goes_first_and_a_rare_batch_joins_a_shape_that_holds_it():
    # one-sentence batches: ten whose longest target (with </s>) is 10, ten of 11, one of 30
    tgt = np.array([9] * 10 + [10] * 10 + [29])
    src = np.full(len(tgt), 4)
    batches = [np.array([i]) for i in range(len(tgt))]
    two = fit_shapes(batches, src, tgt, (5, 30), 1, most=2)
    assert two.shapes == ((1, 5, 11), (1, 5, 30))  # ten batches one longer, not ten 19 longer
    assert two.real_share == pytest.approx((10 * 10 + 10 * 11 + 30) / (20 * 11 + 30))
    assert fit_shapes(batches, src, tgt, (5, 30), 1, most=1).shapes == ((1, 5, 30),)
    assert fit_shapes(batches, src, tgt, (5, 30), 1, most=3).shapes == ((1, 5, 10), (1, 5, 11), (1, 5, 30))
    # one batch of a long source and a short target among fifty short ones: it is padded to the
    # longest pair's shape, rather than every short batch to its source
    src, tgt = np.array([4] * 50 + [19] + [20] * 50), np.array([9] * 50 + [9] + [29] * 50)
    batches = [np.array([i]) for i in range(len(tgt))]
    assert fit_shapes(batches, src, tgt, (21, 30), 1, most=2).shapes == ((1, 5, 10), (1, 21, 30))
    assert fit_shapes([], src, tgt, (21, 30), 1).of(1, 21, 30) == (1, 21, 30)  # no batch: the limits'
    assert two.of(1, 6, 3) is None and two.of(1, 5, 31) is None  # past the longest there can be


def test_token_batches_are_padded_to_shapes_of_their_own_sentence_counts():
    src, tgt = _sizes(seed=1)
    batches = Batches(src, tgt, 0, 8, 50, 7, max_tokens=600)
    first = batches.epoch_batches(0)
    shapes = fit_shapes(first, src, tgt, (51, 51), 0)
    assert len(shapes.shapes) <= FITTED_SHAPES and all(rows % ROWS_MULTIPLE == 0 for rows, _, _ in shapes.shapes)
    share, _, unheld = _padded(shapes, first, src, tgt)
    assert unheld == 0 and share == pytest.approx(shapes.real_share)
    later = [b for e in range(1, 4) for b in batches.epoch_batches(e)]
    assert _padded(shapes, later, src, tgt)[2] <= 0.01 * len(later)  # these run eagerly
    # the sentences went up to a power of two before: a batch of 33 computed 64 rows
    assert shapes.real_share > _real_share(first, tgt, lambda b: 1 << (len(b) - 1).bit_length()) + 0.1
    most = max(rows for rows, _, _ in shapes.shapes)
    assert shapes.of(most + 1, 2, 2) is None  # more sentences than any shape holds


def test_many_kinds_of_batch_are_merged_from_coarser_lengths_and_still_every_batch_has_a_shape(monkeypatch):
    monkeypatch.setattr(shapes_module, "MAX_MERGED_KINDS", 20)  # far fewer than the batches' kinds
    src, tgt = _sizes(seed=2)
    batches = Batches(src, tgt, 16, 8, 0, 7)  # no length limit: the corpus's longest
    limits = (int(src.max()) + 1, int(tgt.max()) + 1)
    shapes = fit_shapes(batches.epoch_batches(0), src, tgt, limits, 16)
    assert len(shapes.shapes) <= FITTED_SHAPES and (16, *limits) in shapes.shapes
    for epoch in range(3):
        share, _, unheld = _padded(shapes, batches.epoch_batches(epoch), src, tgt)
        assert unheld == 0 and share > 0.5
    with pytest.raises(ValueError, match="longer than the limits"):  # a caller's limits too short
        fit_shapes(batches.epoch_batches(0), src, tgt, (limits[0] - 1, limits[1]), 16)
