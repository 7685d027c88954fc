"""The order in which a model reads and writes a target sentence: left to right, or right to left
(``train --right-to-left``).

A right-to-left model is trained on y_n … y_1 ``</s>`` and writes its translations that way. Only
the model sees that order: training's batches and forced decoding turn a target around before the
model reads it, and whatever the model gives back per target position (its output units, their
attention rows, their scores) is turned back, ``</s>``'s entry staying last, so that a caller
never asks which way a model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def model_order(ids: np.ndarray, right_to_left: bool) -> np.ndarray:
    """A sentence's target ids (without ``</s>``) in the order the model reads them (a copy where
    turned: torch takes no negative strides, which an empty array's ascontiguousarray keeps)."""
    return ids[::-1].copy() if right_to_left else ids


def mirrored_links(links: np.ndarray, target_length: int) -> np.ndarray:
    """Word links (flat ``s t`` pairs) with each target position counted from the end, as a
    right-to-left model's positions are."""
    pairs = np.asarray(links, dtype=np.int64).reshape(-1, 2).copy()
    pairs[:, 1] = target_length - 1 - pairs[:, 1]
    return pairs.reshape(-1)


def reading_order(rows: Sequence[T], units: int, right_to_left: bool) -> list[T]:
    """Per-position entries of a model's output (a row per unit, then ``</s>``'s and any after)
    in reading order: the first ``units`` turned around, the rest left where they are."""
    rows = list(rows)
    return rows[:units][::-1] + rows[units:] if right_to_left else rows


def reading_order_array(rows: np.ndarray, units: int, right_to_left: bool) -> np.ndarray:
    """:func:`reading_order` for an array's first axis (an attention map, a row per position)."""
    if not right_to_left:
        return rows
    return np.concatenate([rows[:units][::-1], rows[units:]])
