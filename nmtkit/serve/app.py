"""The HTTP API: ``POST /translate``, ``GET /health``, ``GET /info`` and the page at ``/``.

``POST /translate`` takes ``{"sentences": [...], "beam": 5, "nbest": 1,
"alignment": true, "attention": false}`` (all but ``sentences`` optional)
and answers ``{"translations": [{"text", "score", "ranking", "alignment",
"nbest"?, "source_tokens"?, "target_tokens"?, "attention"?, "source_words"?,
"target_words"?, "word_attention"?}]}``, one per sentence, in order; with
``"attention": true``, the subword tokens and their attention, and the same
merged into words (:func:`~nmtkit.align.words.word_attention`). OpenNMT-py's
request shape, a list of ``{"src": ..., "id": N}``, is answered in its
shape (``[[{"src", "tgt", "pred_score", "n_best", "id"}]]``), at
``/translate`` and at OpenNMT-py's own ``/translator/translate``, so its
clients work unchanged.

Every bad request gets a 4xx JSON ``{"error": "..."}`` and the server goes
on: a body over ``max_body`` bytes (413), not UTF-8 or not JSON (400),
wrong shapes or types (422), more than ``max_sentences`` sentences or a
sentence longer than ``max_length`` subword units, as the model reads it
(413), a beam over ``max_beam`` (422).
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, AsyncIterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from .. import checkpoint
from ..align.files import EOS_LABEL
from ..align.words import word_attention
from ..core.console import log
from ..core.errors import UserError
from ..core.settings import RuntimeConfig
from ..translate.io import json_record
from ..translate.settings import SearchConfig, TranslateOptions
from ..translate.translator import Translation, Translator
from .batching import Batcher
from .settings import Limits, ServerConfig

# Characters a sentence may have per subword unit of the limit, checked before tokenizing it.
CHARS_PER_UNIT = 16


def too_long(translator: Translator, sentences: list[str], limit: int) -> BadRequest | None:
    """The refusal of the first sentence the model would read as more than ``limit`` units."""
    for k, s in enumerate(sentences):
        n = translator.source_length(s)
        if n > limit:
            return BadRequest(413, f"sentence {k} has {n:,} subword units; at most {limit:,}")
    return None


class BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Job:
    """What a request asks beside its sentences; requests with equal jobs share batches."""

    beam: int
    nbest: int
    attention: bool


@dataclass(frozen=True)
class Parsed:
    sentences: list[str]
    job: Job
    ids: list[Any] | None          # OpenNMT-py's ids; None for the native shape
    matrix: bool                   # the attention matrices asked for


def parse(body: bytes, limits: Limits, default_beam: int) -> Parsed:
    """What a request body (already within ``limits.max_body``) asks for; :class:`BadRequest`
    naming the first thing wrong with it."""
    if not body.strip():
        raise BadRequest(400, "the body is empty: send JSON, {\"sentences\": [\"...\"]}")
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise BadRequest(400, f"the body is not valid UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise BadRequest(400, f"the body is not JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    ids: list[Any] | None = None
    sentences: Any
    options: dict[str, Any]
    if isinstance(data, list):             # OpenNMT-py: [{"src": "...", "id": N}, ...]
        if not all(isinstance(x, dict) and isinstance(x.get("src"), str) for x in data):
            raise BadRequest(422, "a list body must hold objects with a string 'src' (OpenNMT-py's shape)")
        sentences, ids, options = [x["src"] for x in data], [x.get("id") for x in data], {}
    elif isinstance(data, dict):
        sentences, options = data.get("sentences"), data
        unknown = sorted(set(data) - {"sentences", "beam", "nbest", "alignment", "attention"})
        if unknown:
            raise BadRequest(422, f"unknown field '{unknown[0]}' (sentences, beam, nbest, alignment, attention)")
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise BadRequest(422, "'sentences' must be a list of strings")
    else:
        raise BadRequest(422, "the body must be an object {\"sentences\": [...]} or a list of {\"src\": ...}")
    if not sentences:
        raise BadRequest(422, "no sentences to translate")
    if len(sentences) > limits.max_sentences:
        raise BadRequest(413, f"{len(sentences)} sentences; at most {limits.max_sentences} a request")
    for k, s in enumerate(sentences):
        # a unit has a character or more: this bounds the tokenizer's work before it is asked
        if len(s) > CHARS_PER_UNIT * limits.max_length:
            raise BadRequest(413, f"sentence {k} has {len(s):,} characters; at most "
                                  f"{CHARS_PER_UNIT * limits.max_length:,}")
    beam, nbest = options.get("beam", default_beam), options.get("nbest", 1)
    for name, value, top in (("beam", beam, limits.max_beam), ("nbest", nbest, limits.max_nbest)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise BadRequest(422, f"'{name}' must be a whole number from 1 to {top}")
    try:
        SearchConfig(beam=beam, nbest=nbest).check(("'nbest'", "'beam'"))
    except UserError as err:
        raise BadRequest(422, str(err)) from None
    for name in ("alignment", "attention"):
        if not isinstance(options.get(name, False), bool):
            raise BadRequest(422, f"'{name}' must be true or false")
    matrix = bool(options.get("attention", False))
    return Parsed(sentences, Job(beam, nbest, matrix or bool(options.get("alignment", True))), ids, matrix)


def native(t: Translation, attention: bool) -> dict[str, Any]:
    record = json_record(0, t)
    del record["line"]
    if attention and t.attention is not None:
        source, target = t.source_tokens + [EOS_LABEL], t.tokens + [EOS_LABEL]
        words = word_attention(source, target, t.attention)
        record |= {"source_tokens": source, "target_tokens": target, "attention": _rounded(t.attention),
                   "source_words": words.source, "target_words": words.target,
                   "word_attention": _rounded(words.attention)}
    return record


def _rounded(matrix: Any) -> list[list[float]]:
    return [[round(float(a), 4) for a in row] for row in matrix]


def opennmt(t: Translation, src: str, id_: Any, nbest: int) -> dict[str, Any]:
    return {"src": src, "tgt": t.text, "pred_score": t.score, "n_best": nbest, "id": id_}


def create_app(translator: Translator, cfg: ServerConfig = ServerConfig(),
               info: dict[str, Any] | None = None) -> FastAPI:
    """The application around one loaded translator."""
    limits, default_beam, shortlist = cfg.limits, cfg.beam, cfg.shortlist
    base = TranslateOptions(shortlist=shortlist)

    def translate(lines: list[str], job: Any) -> list[Translation]:
        options = replace(base, search=SearchConfig(beam=job.beam, nbest=job.nbest), attention=job.attention,
                          max_length=0)       # refused above
        return translator.translate_block(lines, options)

    batcher = Batcher(translate, limits.max_sentences, cfg.batch_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="nmtkit", lifespan=lifespan, docs_url=None, redoc_url=None)

    async def answer(request: Request) -> JSONResponse:
        body = bytearray()
        async for chunk in request.stream():       # declared or chunked: cut off at the limit
            body += chunk
            if len(body) > limits.max_body:
                return JSONResponse({"error": f"the body has over {limits.max_body:,} bytes; at most "
                                              f"{limits.max_body:,}"}, 413)
        try:
            asked = parse(bytes(body), limits, default_beam)
        except BadRequest as bad:
            return JSONResponse({"error": bad.message}, bad.status)
        refused = too_long(translator, asked.sentences, limits.max_length)
        if refused is not None:
            return JSONResponse({"error": refused.message}, refused.status)
        out = await batcher.submit(asked.sentences, asked.job)
        if asked.ids is not None:
            return JSONResponse([[opennmt(t, s, i, asked.job.nbest)
                                  for t, s, i in zip(out, asked.sentences, asked.ids)]])
        return JSONResponse({"translations": [native(t, asked.matrix) for t in out]})

    app.add_api_route("/translate", answer, methods=["POST"])
    app.add_api_route("/translator/translate", answer, methods=["POST"])

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/info")
    async def describe() -> dict[str, Any]:
        return {**(info or {}), "limits": vars(limits), "default_beam": default_beam,
                "shortlist": shortlist, "served": {"batches": batcher.batches, "sentences": batcher.sentences}}

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return resources.files("nmtkit.serve").joinpath("page.html").read_text(encoding="utf-8")

    return app


def serve(model_paths: list[str], cfg: ServerConfig, runtime: RuntimeConfig) -> None:
    """Load the models once and serve them until SIGINT or SIGTERM (requests in flight finish)."""
    cfg.check()
    translator = Translator.from_checkpoints(list[str | Path](model_paths), runtime, cfg.int8)
    first = checkpoint.load(model_paths[0])
    info = {"models": model_paths, "arch": first.model.arch, "model": first.model.to_dict(),
            "languages": first.text.langs, "vocabulary": {k: len(v) for k, v in first.text.vocab.items()},
            "device": str(translator.device), "int8": cfg.int8}
    if cfg.shortlist and translator.lexicon is None:
        raise UserError(f"--shortlist: {model_paths[0]} holds no lexicon; add one with 'nmtkit lexicon'")
    app = create_app(translator, cfg, info)
    log(f"serving {', '.join(model_paths)} on http://{cfg.host}:{cfg.port}/ (POST /translate, GET /health, /info)")
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level="warning", timeout_graceful_shutdown=30)
