"""What the server answers, as pydantic models: ``/docs`` and ``/openapi.json`` show them, and the
tests hold each answer the server sends to them, so that the description cannot drift from the
answers. The answers themselves are built as plain JSON (:func:`~nmtkit.serve.app.native`), not
validated on their way out: a request's time is the search's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Output(_Answer):
    """One output for a sentence: the best or an entry of its n-best list."""

    text: str = Field(description="The translation, detokenized.")
    score: float | None = Field(
        description="Its log-probability under the model, </s> included (null where no hypothesis ended)."
    )
    ranking: float | None = Field(
        description="The score the search ranked it by, after the length and coverage penalties."
    )
    alignment: str | None = Field(
        None,
        description="Pharaoh pairs 'i-j' of source and target word positions, from 0; empty for a model without "
        "attention (absent with alignment: false).",
    )
    tokens: list[str] | None = Field(None, description="Its subword units (with token_scores).")
    token_scores: list[float | None] | None = Field(
        None, description="Each unit's log-probability, </s>'s last; they sum to score (with token_scores)."
    )


class Translated(Output):
    """One sentence's answer, in the order of the request's sentences."""

    nbest: list[Output] | None = Field(None, description="The n-best list, best first (with nbest > 1).")
    source_tokens: list[str] | None = Field(None, description="The source's subword units and </s> (with attention).")
    target_tokens: list[str] | None = Field(None, description="The output's subword units and </s> (with attention).")
    attention: list[list[float]] | None = Field(
        None, description="One row per target unit, one column per source unit (with attention)."
    )
    source_words: list[str] | None = Field(None, description="The source's words (with attention).")
    target_words: list[str] | None = Field(None, description="The output's words (with attention).")
    word_attention: list[list[float]] | None = Field(
        None, description="The attention summed over each word's units, one row per target word (with attention)."
    )


class TranslateResponse(_Answer):
    """The answer to nmtkit's request shape."""

    translations: list[Translated]
    warnings: list[str] | None = Field(
        None,
        description="What the server could do only in part, one line each: a phrase, a prefix or a glossary term "
        "with a word out of the vocabulary, a sentence translated without its phrases (absent when none).",
    )


class OpenNMTResult(_Answer):
    """One sentence's answer to OpenNMT-py's request shape, in its server's fields."""

    src: str
    tgt: str
    pred_score: float | None
    n_best: int
    id: Any = None


class ErrorAnswer(_Answer):
    """Every 4xx: FastAPI's ``detail`` (for a 422, pydantic's errors, each naming its field in
    ``loc``) and one line, ``error``, which the page shows."""

    detail: str | list[dict[str, Any]]
    error: str


TRANSLATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "model": TranslateResponse | list[list[OpenNMTResult]],
        "description": "nmtkit's request: {\"translations\": [...]}, one per sentence; OpenNMT-py's: its own shape.",
    },
    400: {"model": ErrorAnswer, "description": "A body that is not UTF-8."},
    413: {"model": ErrorAnswer, "description": "Over the body's size, the sentences' number or a sentence's length."},
    415: {
        "model": ErrorAnswer,
        "description": "A body sent without Content-Type: application/json, or encoded (gzip).",
    },
    422: {"model": ErrorAnswer, "description": "A body that is not JSON or does not fit the request's schema."},
    503: {"model": ErrorAnswer, "description": "The server stopped (SIGTERM) before the request was translated."},
}


class Served(_Answer):
    batches: int = Field(description="Batches the search has run since the server started.")
    sentences: int = Field(description="Sentences translated since the server started.")
    abandoned: int = Field(
        description="Sentences left untranslated since the server started: their clients went away before "
        "their batch began, or before the search reached them in a batch all of whose clients went away."
    )


class ServerInfo(_Answer):
    """``GET /info``: what the server loaded and what it allows."""

    models: list[str] | None = Field(None, description="The checkpoints that translate, an ensemble if several.")
    links_from: list[str] | None = Field(None, description="The other direction's models, that make the links.")
    arch: str | None = Field(None, description="The first model's architecture.")
    model: dict[str, Any] | None = Field(None, description="The first model's settings.")
    languages: dict[str, str] | None = Field(None, description="The source and target languages' codes.")
    vocabulary: dict[str, int] | None = Field(None, description="Each side's vocabulary size.")
    device: str | None = None
    int8: bool | None = Field(None, description="Whether the linear layers run as int8 (a CPU's).")
    limits: dict[str, int] = Field(description="The request limits (serve's --max-* options).")
    default_beam: int
    attention: bool = Field(description='Whether the model attends: else "attention": true is refused.')
    shortlist: bool
    glossary: dict[str, int] | None = Field(
        None,
        description="serve --glossary's terms: those read and those used (the others' translations are out of "
        "the vocabulary); null without one.",
    )
    served: Served
