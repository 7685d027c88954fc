"""What translating a line gives (:class:`Translation`) and what forcing a given translation
through the models gives (:class:`Forced`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..text.bpe import GUESSED, UnitKinds


@dataclass
class Translation:
    """One input line's translation, as :meth:`Translator.translate` gives it.

    Attributes:
        text: The output, detokenised (Moses tokens with ``tokenized=True``).
        tokens: The output's tokens as the model wrote them (subword units, ``<unk>`` replaced).
        source_tokens: The input's tokens as the model read them.
        score: The log-probability, ``</s>`` included.
        ranking: The score after length normalisation, by which the search ranked it.
        attention: The attention weights, (len(tokens) + 1) × (len(source_tokens) + 1), where
            they were asked for and the model has attention; else None, and None for an empty
            line, which is not searched (``translate --alignments`` and serve write ``[]``).
        nbest: The n best, best first, where more than one was asked for (``nbest``).
        links: Pharaoh links made otherwise than from ``attention`` (by linking both ways).
        token_scores: The log-probability of each of ``tokens``, then of ``</s>`` (their sum is
            ``score``), where they were asked for (``token_scores``); else None.
        unheld: Whether the line's constraints (phrases, glossary terms) were asked and no output
            within the output limit could hold them all: it is translated without them.
        sentencepiece: Whether the source's and the output's units are SentencePiece's, as the
            models' codes say (where a word begins, for links and word attention).
    """

    text: str
    tokens: list[str]
    source_tokens: list[str]
    score: float
    ranking: float
    attention: np.ndarray | None = None
    nbest: list[Translation] = field(default_factory=list)
    links: str | None = None
    token_scores: list[float] | None = None
    unheld: bool = False
    sentencepiece: UnitKinds = GUESSED


@dataclass
class Forced:
    """A given target walked through the model: its log-probability and attention."""

    source_tokens: list[str]
    target_tokens: list[str]
    score: float
    attention: np.ndarray  # (len(target_tokens) + 1, len(source_tokens) + 1)
    token_scores: list[float] | None = None  # each target token's log-probability, </s>'s last
    sentencepiece: UnitKinds = GUESSED  # the two sides' kinds of units, as Translation's
