"""The HTTP API: ``POST /translate``, ``GET /health``, ``GET /info``, the page at ``/``, and
FastAPI's own ``/docs`` (Swagger UI) and ``/openapi.json``, which describe the API.

``POST /translate`` takes ``{"sentences": [...], "beam": 5, "nbest": 1, "coverage_penalty": 0.2,
"alignment": true, "attention": false, ...}`` (all but ``sentences`` optional; :mod:`.schema`
declares every field, its default and its bounds) and answers ``{"translations": [{"text",
"score", "ranking", "alignment"?, "nbest"?, "source_tokens"?, "target_tokens"?, "attention"?,
"source_words"?, "target_words"?, "word_attention"?}]}`` (:mod:`.answers` declares each answer), one
per sentence, in order; with
``"attention": true``, the subword tokens and their attention, and the same merged into words
(:func:`~nmtkit.align.words.word_attention`). OpenNMT-py's request shape, a list of ``{"src":
..., "id": N}``, is answered in its shape (``[[{"src", "tgt", "pred_score", "n_best", "id"}]]``),
at ``/translate`` and at OpenNMT-py's own ``/translator/translate``, so its clients work unchanged.

Every bad request gets a 4xx JSON answer and the server goes on: a body that is not JSON or
does not fit the schema, FastAPI's 422 (``detail``: pydantic's errors, each ``loc`` naming the
field); not UTF-8, FastAPI's 400; a body over ``max_body`` bytes, more than ``max_sentences``
sentences or a sentence longer than ``max_length`` subword units, as the model reads it, 413.
Each answer also has a one-line ``error``, which the page shows.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the endpoint's annotation, a type
# made at run time from the server's limits, as an object.

import asyncio
import math
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__, checkpoint
from ..align.files import EOS_LABEL
from ..align.settings import LinkConfig
from ..align.words import word_attention
from ..core.console import log
from ..core.errors import UserError
from ..core.held_signals import ctrl_c_heard, signals_held
from ..core.settings import RuntimeConfig
from ..translate.both_ways import BothWays, directions, refuse_idle_links
from ..translate.io import json_record, json_score
from ..translate.settings import TranslateOptions
from ..translate.translation import Translation
from ..translate.translator import Translator
from .answers import TRANSLATE_RESPONSES, ServerInfo
from .batching import Batcher, Beside
from .checks import check_beside, check_size, with_glossary
from .schema import NATIVE, OPENNMT, parsed, request_body
from .server import listening, run_server, url_host
from .settings import ServerConfig

# the warning of a sentence translated without its phrases (Translation.unheld)
UNHELD = "no output within the output limit holds all its phrases: translated without them"
# FastAPI's 400 for a body it could not decode as text or parse (not a JSON syntax error: 422).
FASTAPI_UNREADABLE = "There was an error parsing the body"


def error(status: int, message: str) -> JSONResponse:
    """An error answer: FastAPI's ``detail``, and the one line ``error`` that the page shows."""
    return JSONResponse({"detail": message, "error": message}, status)


def invalid(errors: list[dict[str, Any]]) -> JSONResponse:
    """FastAPI's 422 (pydantic's errors, each naming its field in ``loc``), with one line beside it."""
    line = "; ".join(_said(e) for e in errors)
    # an input echoed back may be NaN or Infinity, which Python's JSON reads and JSON cannot write,
    # or hold a lone surrogate, which UTF-8 cannot
    encoders: dict[Any, Callable[[Any], Any]] = {float: _finite, str: _encodable}
    return JSONResponse({"detail": jsonable_encoder(errors, custom_encoder=encoders), "error": line}, 422)


def _said(e: dict[str, Any]) -> str:
    if e.get("type") == "json_invalid" and _says(e):  # its loc's number is a character's place, not a field
        return f"the body is not JSON: {e['ctx']['error']} at character {e['loc'][-1]}"
    return f"{_where(e['loc'])}: {e['msg']}" + (f" ({e['ctx']['error']})" if _says(e) else "")


def _where(loc: tuple[Any, ...]) -> str:
    """``body.beam`` for ``("body", "native", "beam")``: the shape's tag tells a reader nothing
    that the body they sent does not."""
    return ".".join(str(p) for p in loc if p not in (NATIVE, OPENNMT))


def _says(e: dict[str, Any]) -> bool:
    """Whether the error's context has a message of its own (a JSON parser's)."""
    return isinstance(e.get("ctx", {}).get("error"), str)


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def _encodable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _not_utf8_json(body: bytearray) -> int | None:
    """Where ``body`` stops being JSON's UTF-8, or None: a byte UTF-8 has not, or a NUL, which JSON
    never holds raw but UTF-16 and UTF-32 hold in every ASCII character."""
    nul = body.find(0)
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start if nul < 0 else min(nul, err.start)
    return nul if nul >= 0 else None


class BodyLimit:
    """ASGI middleware: a body over ``limit`` bytes, declared or chunked, is refused (413) once
    it passes the limit, before FastAPI reads it whole; one within it that is not UTF-8 is refused
    (400) whatever its charset says, as JSON is UTF-8 (RFC 8259) where Python's reader also takes
    UTF-16 and UTF-32; any other goes on as it came."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_long = error(413, f"the body has over {self.limit:,} bytes; at most {self.limit:,}")
        headers = dict(scope.get("headers", []))
        coding = headers.get(b"content-encoding", b"identity").decode("latin-1").strip().lower()
        if coding not in ("", "identity"):  # its bytes, read as text, were "not UTF-8 (byte 1)"
            said = f"Content-Encoding {coding} is not taken: send the JSON as it is"
            return await error(415, said)(scope, receive, send)
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:  # said at once: the client may never send it all
            return await too_long(scope, receive, send)
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                return await too_long(scope, receive, send)
        if (at := _not_utf8_json(body)) is not None:
            said = (
                f"the body holds a NUL byte (byte {at:,}), which JSON never holds raw (UTF-16 has many: JSON is UTF-8)"
                if body[at] == 0
                else f"the body is not UTF-8 (byte {at:,}); JSON is UTF-8, whatever the charset says"
            )
            return await error(400, said)(scope, receive, send)
        first: Message | None = {"type": "http.request", "body": bytes(body), "more_body": False}

        async def replay() -> Message:
            nonlocal first
            message, first = first, None
            return message if message is not None else await receive()  # then, a disconnect

        await self.app(scope, replay, send)


async def _translated(
    batcher: Batcher, sentences: list[str], job: Any, beside: Beside, request: Request
) -> list[Translation]:
    try:
        out = await batcher.submit(sentences, job, beside, gone=lambda: _gone(request))
    except UserError as err:  # a setting this model cannot search with (coverage: no attention)
        raise HTTPException(422, str(err)) from None
    if out is None:  # nobody to answer: nginx's 499 for its log
        raise HTTPException(499, "the client went away before its sentences were translated")
    return out


async def _gone(request: Request) -> None:
    """Returns when the client has gone away: its body read, what the server receives next."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _json_type(kind: str) -> bool:
    """Whether a Content-Type is one FastAPI parses as JSON (application/json, application/*+json)."""
    main, _, sub = kind.split(";")[0].strip().lower().partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


class CutShort:
    """ASGI middleware: a request still running when SIGTERM's ``--shutdown-wait`` is over, which
    uvicorn then cancels, is answered 503 in JSON like any other error, not with uvicorn's
    plain-text 500 and a traceback on stderr."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            if started:  # half an answer is out: nothing whole can follow it
                raise
            said = (
                "the server stopped before this request was translated (--shutdown-wait was over, or a second Ctrl-C)"
            )
            await error(503, said)(scope, receive, send)


def _errors_as_json(app: FastAPI) -> None:
    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        said = str(exc.detail)
        if exc.status_code == 400 and said == FASTAPI_UNREADABLE:  # FastAPI's, for any body it cannot decode
            said += ": it is not UTF-8, its JSON nests too deep, or it holds a number of over 4,300 digits"
        return error(exc.status_code, said)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        kind = request.headers.get("content-type", "")
        if not _json_type(kind):  # FastAPI read the body as bytes: not "a valid dictionary"
            sent = f"not {kind}" if kind else "which the request lacks"
            return error(415, f"the body is read as JSON: send it with Content-Type: application/json, {sent}")
        return invalid(list(exc.errors()))

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)


def native(t: Translation, attention: bool, alignment: bool = True) -> dict[str, Any]:
    record = json_record(0, t)
    del record["line"]
    if not alignment:  # absent: "" answers a model without attention, or an empty sentence
        for each in [record, *record.get("nbest", [])]:
            del each["alignment"]
    if attention and t.attention is not None:
        source, target = t.source_tokens + [EOS_LABEL], t.tokens + [EOS_LABEL]
        words = word_attention(source, target, t.attention, t.sentencepiece)
        record |= {
            "source_tokens": source,
            "target_tokens": target,
            "attention": _rounded(t.attention),
            "source_words": words.source,
            "target_words": words.target,
            "word_attention": _rounded(words.attention),
        }
    elif attention:  # an empty sentence, which no model reads: the fields translate --alignments writes of it
        ends = ("source_tokens", "target_tokens", "source_words", "target_words")
        record |= {name: [EOS_LABEL] for name in ends} | {"attention": [], "word_attention": []}
    return record


def _rounded(matrix: Any) -> list[list[float]]:
    return [[round(float(a), 4) for a in row] for row in matrix]


def opennmt(t: Translation, src: str, id_: Any, nbest: int) -> dict[str, Any]:
    return {"src": src, "tgt": t.text, "pred_score": json_score(t.score, digits=None), "n_best": nbest, "id": id_}


def create_app(
    translator: Translator,
    cfg: ServerConfig = ServerConfig(),
    info: dict[str, Any] | None = None,
    both: BothWays | None = None,
) -> FastAPI:
    """The application around one loaded translator (and the other direction's models, ``both``,
    that make its answers' links with it)."""
    limits, shortlist = cfg.limits, cfg.shortlist
    base = TranslateOptions(shortlist=shortlist)  # the glossaries' terms join a request's constraints
    terms, glossary = None, None
    if cfg.glossary:  # read now: its warnings at startup, not at the first request
        glossary = translator.glossaries.of(cfg.glossary, base.tokenized)
        terms = {"terms": len(cfg.glossary), "used": glossary.size}

    def translate(lines: list[str], job: Any, beside: Beside, done: Callable[[int], object]) -> list[Translation]:
        options = replace(
            base, search=job.search, attention=job.attention, token_scores=job.token_scores, max_length=0
        )  # max_length: refused above
        # the answer's warnings say what a line's would (checks.py): "line 3" of a batch names nothing to a reader
        # both ways, a sentence is done once linked (forcing the other way back is most of the work): the
        # search's batches tell nothing done, and so that a batch its clients have left stops there too
        searched = done if both is None else lambda _: done(0)
        out = translator.translate_block(
            lines, options, prefixes=beside.prefixes, constraints=beside.constraints, done=searched, warn=lambda _: None
        )
        return both.linked_block(out, done) if both else out  # on the model's thread, as the search

    batcher = Batcher(translate, limits.max_sentences, cfg.batch_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="nmtkit", version=__version__, lifespan=lifespan)
    app.add_middleware(BodyLimit, limit=limits.max_body)
    app.add_middleware(CutShort)
    _errors_as_json(app)
    Body = request_body(cfg)

    async def answer(body: Body, request: Request) -> JSONResponse:  # type: ignore[valid-type]
        """Translate sentences: nmtkit's request, answered {"translations": [...]}, or OpenNMT-py's
        list of {"src", "id"}, answered in its own shape."""
        asked = parsed(body, cfg.search)
        if asked.matrix and not translator.attends:
            raise HTTPException(422, "attention: this model has none")
        check_size(translator, asked.sentences, limits)
        beside, warnings = check_beside(translator, asked.beside, limits, asked.job.search.no_unk)
        beside, terms_said = with_glossary(
            translator, asked.sentences, beside, asked.glossary, glossary, asked.job.search, limits
        )
        warnings += terms_said
        out = await _translated(batcher, asked.sentences, asked.job, beside, request)
        warnings += [f"sentence {k}: {UNHELD}" for k, t in enumerate(out) if t.unheld]
        if asked.ids is not None:
            return JSONResponse(
                [[opennmt(t, s, i, asked.job.search.nbest) for t, s, i in zip(out, asked.sentences, asked.ids)]]
            )
        answered: dict[str, Any] = {"translations": [native(t, asked.matrix, asked.alignment) for t in out]}
        return JSONResponse(answered | ({"warnings": warnings} if warnings else {}))

    for path in ("/translate", "/translator/translate"):
        app.add_api_route(path, answer, methods=["POST"], summary="Translate", responses=TRANSLATE_RESPONSES)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    # HEAD too: a load balancer's or curl -I's check of the same, under an operationId of its own
    # (one route for both gave them one, which OpenAPI forbids and generated clients trip on)
    app.add_api_route("/health", health, methods=["HEAD"], operation_id="health_head")

    @app.get("/info", response_model=ServerInfo)
    async def describe() -> dict[str, Any]:
        return {
            **(info or {}),
            "limits": vars(limits),
            "default_beam": cfg.search.beam,
            "attention": translator.attends,  # else "attention": true is refused (the page asks by it)
            "shortlist": shortlist,
            "glossary": terms,
            "served": {"batches": batcher.batches, "sentences": batcher.sentences, "abandoned": batcher.abandoned},
        }

    # the page the server was written for stays at /; FastAPI's /docs describes the API beside it
    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return resources.files("nmtkit.serve").joinpath("page.html").read_text(encoding="utf-8")

    return app


def serve(model_paths: list[str], cfg: ServerConfig, runtime: RuntimeConfig, links: LinkConfig = LinkConfig()) -> None:
    """Load the models once and serve them until SIGINT, SIGTERM or SIGHUP (requests in flight finish).
    Models of the other direction than the first's make the answers' links with it (:class:`BothWays`).
    A signal while the models load and the application is built is acted on once they are."""
    with ctrl_c_heard():  # served, it stops on Ctrl-C all the same (uvicorn's handler): loading, too
        with signals_held():
            app, sock = _ready(model_paths, cfg, runtime, links)
        log(
            f"serving {', '.join(model_paths)} on http://{url_host(cfg.host)}:{sock.getsockname()[1]}/ "
            f"(POST /translate, GET /health, /info, /docs)"
        )
        run_server(app, sock, cfg.shutdown_wait)


def _ready(
    model_paths: list[str], cfg: ServerConfig, runtime: RuntimeConfig, links: LinkConfig
) -> tuple[FastAPI, socket.socket]:
    """The application on the loaded models, and the socket it will serve on."""
    cfg.check()
    sock = listening(cfg.host, cfg.port)  # before the models load: an address in use is said at once
    forward, backward = directions(model_paths) if len(model_paths) > 1 else (list[str | Path](model_paths), [])
    refuse_idle_links(backward, links)
    translator = Translator.from_checkpoints(forward, runtime)
    first = checkpoint.load(model_paths[0])
    info = {
        "models": [p for p in model_paths if p not in backward],
        "links_from": [str(p) for p in backward],  # the other direction's models
        "arch": first.model.arch,
        "model": first.model.to_dict(),
        "languages": first.text.langs,
        "vocabulary": {k: len(v) for k, v in first.text.vocab.items()},
        "device": str(translator.device),
        "int8": runtime.int8,
    }
    if cfg.shortlist and translator.lexicon is None:
        raise UserError(f"--shortlist: {model_paths[0]} holds no lexicon; add one with 'nmtkit lexicon'")
    if cfg.search.coverage_penalty and not translator.attends:  # else every request would be refused
        raise UserError(
            f"--coverage-penalty reads the attention: {model_paths[0]} holds a model with --arch "
            f"{first.model.arch}, which has none"
        )
    units = len(first.text.vocab["tgt"])
    if cfg.search.beam > units:  # else every request would be refused
        raise UserError(f"--beam {cfg.search.beam}: {model_paths[0]} has {units:,} target units, no more")
    # a wider beam holds no more: refused at the request's field, as one over --max-beam is
    cfg = replace(cfg, limits=replace(cfg.limits, max_beam=min(cfg.limits.max_beam, units)))
    return create_app(translator, cfg, info, BothWays.load(backward, links, runtime)), sock
