"""Links from two models, one each way (nmtkit.align.combine), on hand-made probability tables:
hard links with and without the NULL column and its threshold, grow-diag-final-and over both
directions, and the harmonic mean's threshold."""

import numpy as np
import pytest

from nmtkit.align.combine import bidirectional_links, combined_links, hard_links, soft_links
from nmtkit.align.settings import LinkConfig

# "the house" -> "la maison": forward rows are French words over English words (+ NULL)
FORWARD = np.array(
    [
        [0.8, 0.1, 0.1],  # la -> the
        [0.1, 0.7, 0.2],  # maison -> house
    ]
)
# backward rows are English words over French words (+ NULL)
BACKWARD = np.array(
    [
        [0.9, 0.05, 0.05],  # the -> la
        [0.3, 0.4, 0.3],  # house -> maison, unsure
    ]
)


def test_each_row_links_its_likeliest_word_unless_null_reaches_the_threshold():
    assert hard_links(FORWARD, 2) == {(0, 0), (1, 1)}
    table = np.array([[0.2, 0.1, 0.7], [0.1, 0.6, 0.3]])  # the first row: mostly NULL
    assert hard_links(table, 2) == {(1, 1)}  # no threshold: a row links unless NULL is likeliest
    assert hard_links(np.array([[0.4, 0.1, 0.5], [0.1, 0.6, 0.3]]), 2) == {(1, 1)}
    assert hard_links(table, 2, null_threshold=0.5) == {(1, 1)}
    assert hard_links(table, 2, null_threshold=0.8) == {(0, 0), (1, 1)}
    assert hard_links(table[:, :2], 2, null_threshold=0.5) == {(0, 0), (1, 1)}  # no NULL column
    with pytest.raises(ValueError):
        hard_links(table, 3 + 1)


def test_both_directions_are_joined_by_grow_diag_final_and():
    # forward: la->the, maison->house; backward transposed: the->la, house->la (a wrong link)
    backward = np.array([[0.9, 0.1], [0.6, 0.4]])
    # the intersection (the, la), then the union's links beside it that reach an unaligned word:
    # (house, la), then (house, maison)
    assert bidirectional_links(FORWARD[:, :2], backward) == {(0, 0), (1, 0), (1, 1)}
    # with a NULL column in the backward table, "house" links nowhere that way at threshold 0.5,
    # so the wrong link is not in the union; below its NULL probability it is
    backward_null = np.array([[0.9, 0.05, 0.05], [0.2, 0.1, 0.7]])
    assert bidirectional_links(FORWARD, backward_null, null_threshold=0.5) == {(0, 0), (1, 1)}
    assert bidirectional_links(FORWARD, backward_null, null_threshold=0.8) == {(0, 0), (1, 0), (1, 1)}


def test_the_harmonic_mean_links_what_both_directions_find_likely():
    # harmonic means: (the, la) 2*.8*.9/1.7 = 0.847; (house, maison) 2*.7*.4/1.1 = 0.509;
    # (house, la) 2*.1*.3/.4 = 0.15; (the, maison) 2*.1*.05/.15 = 0.067
    assert soft_links(FORWARD, BACKWARD, 0.5) == {(0, 0), (1, 1)}
    assert soft_links(FORWARD, BACKWARD, 0.6) == {(0, 0)}
    assert soft_links(FORWARD, BACKWARD, 0.1) == {(0, 0), (1, 1), (1, 0)}
    # a word whose probability went to NULL one way gets no link, however sure the other way is
    forward_null = np.array([[0.8, 0.1, 0.1], [0.0, 0.05, 0.95]])
    assert soft_links(FORWARD, BACKWARD, 0.2) == {(0, 0), (1, 1)}
    assert soft_links(forward_null, BACKWARD, 0.2) == {(0, 0)}


def test_the_geometric_mean_forgives_a_direction_that_spreads_a_word_more_than_the_harmonic():
    # (house, la): forward 0.1, backward 0.3: harmonic 0.15, geometric sqrt(0.03) = 0.173;
    # (the, maison): 0.1 and 0.05: geometric 0.071
    assert soft_links(FORWARD, BACKWARD, 0.16, "geometric") == {(0, 0), (1, 1), (1, 0)}
    assert soft_links(FORWARD, BACKWARD, 0.16) == {(0, 0), (1, 1)}
    assert soft_links(FORWARD, BACKWARD, 0.07, "geometric") == {(0, 0), (1, 1), (1, 0), (0, 1)}
    # NULL still takes a word's links away
    forward_null = np.array([[0.8, 0.1, 0.1], [0.0, 0.05, 0.95]])
    assert soft_links(forward_null, BACKWARD, 0.2, "geometric") == {(0, 0)}
    cfg = LinkConfig(combine="geometric", threshold=0.16)
    assert combined_links(FORWARD, BACKWARD, cfg) == [(0, 0), (1, 0), (1, 1)]
