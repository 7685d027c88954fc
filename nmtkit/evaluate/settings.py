"""Settings of the evaluation stage that the command line shows without loading the scorers."""

from __future__ import annotations

BUCKET_WIDTH = 10  # words per source-length bucket of BLEU by length (Figure 2's)
