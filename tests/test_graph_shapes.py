"""The padded shapes of ``train --cuda-graphs`` (nmtkit.train.shapes): the ladder fitted to the
first epoch's batches holds every batch of every epoch, removes the rung that costs least, and
pads less than even rungs or power-of-two sentence counts did."""

from __future__ import annotations

import numpy as np
import pytest

from nmtkit.data.batching import Batches
from nmtkit.train.graphs import MAX_SHAPES
from nmtkit.train.shapes import FITTED_SHAPES, ROWS_MULTIPLE, fitted


def _sizes(pairs: int = 6000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sentence lengths as a parallel corpus has them: targets near their sources' lengths."""
    rng = np.random.default_rng(seed)
    src = np.clip(rng.gamma(4.0, 6.0, pairs).astype(np.int64), 1, 60)
    tgt = np.clip((src * rng.normal(1.1, 0.15, pairs)).astype(np.int64) + rng.integers(-2, 3, pairs), 1, 60)
    return src, tgt


def _computed(ladder, batches, src, tgt) -> tuple[float, set]:
    """Real target positions over those the padded batches compute, and the shapes used."""
    real = computed = 0
    used = set()
    for b in batches:
        shape = ladder.shape(len(b), int(src[b].max()) + 1, int(tgt[b].max()) + 1)
        assert shape is not None
        rows, s, t = shape
        assert rows >= len(b) and s > src[b].max() and t > tgt[b].max()
        real, computed = real + int(tgt[b].sum()) + len(b), computed + rows * t
        used.add(shape)
    return real / computed, used


def test_every_batch_of_every_epoch_fits_a_shape_of_the_ladder_fitted_to_the_first():
    src, tgt = _sizes()
    batches = Batches(src, tgt, 32, 8, 50, 7)
    ladder = fitted(batches.epoch_batches(0), src, tgt, (51, 51), 32)
    assert ladder.src[-1] == ladder.tgt[-1] == 51  # the top rungs hold the longest pair there can be
    share, used = _computed(ladder, batches.epoch_batches(0), src, tgt)
    assert len(used) <= FITTED_SHAPES and share == pytest.approx(ladder.real_share)
    every = set().union(*(_computed(ladder, batches.epoch_batches(e), src, tgt)[1] for e in range(1, 4)))
    assert len(every | used) <= MAX_SHAPES
    assert {rows for rows, _, _ in every} == {32}  # an epoch's last, smaller batch padded to the batch size
    assert fitted(batches.epoch_batches(0), src, tgt, (51, 51), 32) == ladder  # a resumed run's ladder
    even = (11, 22, 33, 44, 55)  # the ladder it replaced: five even rungs a side
    computed = sum(32 * next(r for r in even if r > tgt[b].max()) for b in batches.epoch_batches(0))
    real = sum(int(tgt[b].sum()) + len(b) for b in batches.epoch_batches(0))
    assert ladder.real_share > real / computed + 0.03


def test_the_rung_that_goes_is_the_one_whose_batches_grow_least():
    # one-sentence batches: ten whose longest target (with </s>) is 10, ten of 11, one of 30
    tgt = np.array([9] * 10 + [10] * 10 + [29])
    src = np.full(len(tgt), 4)
    batches = [np.array([i]) for i in range(len(tgt))]
    two = fitted(batches, src, tgt, (5, 30), 1, shapes=2)
    assert (two.src, two.tgt) == ((5,), (11, 30))  # ten batches one longer, not ten 19 longer
    assert two.real_share == pytest.approx((10 * 10 + 10 * 11 + 30) / (20 * 11 + 30))
    assert fitted(batches, src, tgt, (5, 30), 1, shapes=1).tgt == (30,)
    assert fitted(batches, src, tgt, (5, 30), 1, shapes=3).tgt == (10, 11, 30)
    assert fitted([], src, tgt, (5, 30), 1).shape(1, 5, 30) == (1, 5, 30)  # no batch: the limits alone
    assert two.shape(1, 6, 3) is None and two.shape(1, 5, 31) is None  # past the top rungs


def test_token_batches_are_padded_to_the_most_sentences_their_rung_can_hold():
    src, tgt = _sizes(seed=1)
    batches = Batches(src, tgt, 0, 8, 50, 7, max_tokens=600)
    ladder = fitted(batches.epoch_batches(0), src, tgt, (51, 51), 0, 600)
    for e in range(4):
        for b in batches.epoch_batches(e):
            t = int(tgt[b].max()) + 1
            rows, _, rung = ladder.shape(len(b), int(src[b].max()) + 1, t)
            assert rows % ROWS_MULTIPLE == 0 and rows >= len(b)
            if rung > ladder.tgt[0]:  # its longest target is past the rung below: so many sentences fit
                below = ladder.tgt[ladder.tgt.index(rung) - 1]
                assert rows == -(-(600 // (below + 1)) // ROWS_MULTIPLE) * ROWS_MULTIPLE
    share, used = _computed(ladder, batches.epoch_batches(0), src, tgt)
    assert len(used) <= FITTED_SHAPES and share == pytest.approx(ladder.real_share)
    # the sentences went up to a power of two before: a batch of 33 computed 64 rows
    computed = sum(
        (1 << (len(b) - 1).bit_length()) * next(r for r in (11, 22, 33, 44, 55) if r > tgt[b].max())
        for b in batches.epoch_batches(0)
    )
    real = sum(int(tgt[b].sum()) + len(b) for b in batches.epoch_batches(0))
    assert ladder.real_share > real / computed + 0.1
    extra = ladder.shape(ladder.first.get(ladder.src[0], 0) + 1, 1, 1)  # more than the first rung met
    assert extra is not None and extra[0] % ROWS_MULTIPLE == 0 and extra[0] > ladder.first.get(ladder.src[0], 0)
