"""How links of two models, one each way, are combined: the settings of ``align``, ``translate``
and ``serve`` (:mod:`.combine` combines; this module is light, so that a command's --help loads
no numpy)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings, setting

COMBINATIONS = ("grow-diag-final-and", "soft", "geometric")


@dataclass(frozen=True)
class LinkConfig(Settings):
    """How ``nmtkit align`` makes links of two models, one each way (its options are these)."""

    combine: str = setting(
        "grow-diag-final-and",
        "With a model each way: grow-diag-final-and over each model's links, or 'soft': a link wherever "
        "the harmonic mean of the two models' probabilities of it reaches --link-threshold, or 'geometric': "
        "the same with their geometric mean.",
        choices=COMBINATIONS,
    )
    # 0.3: the middle of what the first 30 held-out verses chose for five pairs of Bible models (0.25-0.35)
    threshold: float = setting(
        0.3, "--combine soft or geometric: the mean a link needs.", gt=0, le=1, flag="--link-threshold"
    )
    null_threshold: float | None = setting(
        None,
        "With a model each way: a word whose probability of no counterpart (its row's weight on the "
        "source's </s>) reaches this links to nothing.",
        gt=0,
        le=1,
        default_help="none: a word links to nothing when </s> is its likeliest",
    )
