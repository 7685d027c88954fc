"""How links of two models, one each way, are combined: the settings of ``align``, ``translate``
and ``serve`` (:mod:`.combine` combines; this module is light, so that a command's --help loads
no numpy)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.settings import Settings, checking, setting

COMBINATIONS = ("grow-diag-final-and", "soft", "geometric")
# the middle of what the first 30 held-out verses chose for five pairs of Bible models (0.25-0.35)
LINK_THRESHOLD = 0.3


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
    threshold: float = setting(
        LINK_THRESHOLD, "--combine soft or geometric: the mean a link needs.", gt=0, le=1, flag="--link-threshold"
    )
    null_threshold: float | None = setting(
        None,
        "With a model each way: a word whose probability of no counterpart (its row's weight on the "
        "source's </s>) reaches this links to nothing.",
        gt=0,
        le=1,
        default_help="none: a word links to nothing when </s> is its likeliest",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if checking():
            self.check()

    def check(self, typed: Collection[str] = ()) -> LinkConfig:
        """Refuse, in one line, a setting the combination asked for does not use. ``typed``: the
        settings a command line typed, refused at their default as at another value, since they
        would change nothing either."""
        if self.combine == "grow-diag-final-and" and (self.threshold != LINK_THRESHOLD or "threshold" in typed):
            raise UserError("--link-threshold thresholds --combine soft or geometric: add one of them, or leave it out")
        if self.combine != "grow-diag-final-and" and self.null_threshold is not None:
            raise UserError(
                f"--null-threshold is grow-diag-final-and's: --combine {self.combine} leaves a word unlinked "
                "where its mean of the two models' probabilities stays under --link-threshold"
            )
        return self
