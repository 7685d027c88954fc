"""Settings of the evaluation stage that the command line shows without loading the scorers."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings, setting

BUCKET_WIDTH = 10  # words per source-length bucket of BLEU by length (Figure 2's)


@dataclass(frozen=True)
class RerankConfig(Settings):
    """How ``nmtkit rerank`` weighs an n-best list's features."""

    weights: str = setting(
        "",
        "Each feature's weight, written as Moses writes features ('F0= 1 channel= 0.3 words= 0.5'; a "
        "feature of several values takes as many): a hypothesis' rank is the weighted sum of its features, "
        "words= weighing its number of words. A feature not named weighs 0. With --tune: where the search "
        "starts, and what it tunes (every feature named but the first, whose weight sets the scale).",
        default_help="the lists' first feature (translate's F0) at 1; --tune: every feature and words",
    )
    tokenized: bool = setting(
        False,
        "With --tune: the hypotheses and the references are Moses tokens, and the BLEU tuned is that of the tokens "
        "as given (bleu-tok).",
    )
