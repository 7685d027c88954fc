"""What ``POST /translate`` accepts, as pydantic models: FastAPI validates each body against
them (a 422 whose ``detail`` names the field) and ``/docs`` and ``/openapi.json`` show them,
with this server's defaults and limits.

Two shapes: nmtkit's object ``{"sentences": [...], "beam": 5, ...}`` and OpenNMT-py's list of
``{"src": "...", "id": N}``. The body's JSON type picks the shape before any field is read, so
an error names the fields of the shape sent, after the shape's tag: ``["body", "native",
"beam"]``, ``["body", "opennmt", 0, "src"]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields, replace
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
)

from ..core.errors import UserError
from ..core.settings import declared
from ..core.wording import counted
from ..translate.settings import SEARCH_OPTIONS, SearchConfig, TranslateOptions
from .batching import Beside
from .settings import ServerConfig

NATIVE, OPENNMT = "native", "opennmt"  # the shapes, as an error's loc names them
_SEARCH_FIELDS = frozenset(f.name for f in fields(SearchConfig))
MAX_TERMS = 100  # a request's glossary terms: each is tokenized on the event loop, before batching


@dataclass(frozen=True)
class Job:
    """What a request asks beside its sentences; requests with equal jobs share batches."""

    search: SearchConfig
    attention: bool  # the attention computed (for the alignment or the matrices)
    token_scores: bool = False  # each output token's log-probability kept


@dataclass(frozen=True)
class Parsed:
    sentences: list[str]
    job: Job
    ids: list[Any] | None  # OpenNMT-py's ids; None for the native shape
    matrix: bool  # the attention matrices asked for
    beside: Beside = Beside()  # per sentence, the phrases its translation must hold and its start
    glossary: tuple[tuple[str, str], ...] | None = None  # the request's terms, (source, target)
    alignment: bool = True  # the Pharaoh pairs answered


def _unicode(text: str) -> str:
    """``text``, refused where it holds a lone surrogate (JSON's ``"\\ud83d"`` escape alone), which
    is no character: no tokenizer or answer could encode it."""
    if found := _SURROGATE.search(text):
        raise ValueError(f"not Unicode text: a lone surrogate U+{ord(found.group()):04X}")
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _echoable(value: Any) -> Any:
    """An OpenNMT-py ``id``, which the answer echoes: refused where JSON cannot write it back (NaN,
    which Python's JSON reads, or a lone surrogate)."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError) as err:
        raise ValueError(f"cannot be written back in JSON ({err})") from None
    return value


Text = Annotated[str, AfterValidator(_unicode)]


class OpenNMTSentence(BaseModel):
    """One sentence of OpenNMT-py's request. Its other keys are OpenNMT-py's own options, which
    its clients may send: ignored, not refused."""

    model_config = ConfigDict(strict=True)

    src: Text
    id: Annotated[Any, AfterValidator(_echoable)] = None


_TYPES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str}


def _declared(name: str, default: Any, **tighter: float) -> tuple[Any, Any]:
    """The request field of the search setting ``name``, from its one declaration
    (:class:`SearchConfig`): type or choices, bounds (``tighter`` ones from the server's limits),
    help as its description, and the server's value as its default."""
    f, d = declared(SearchConfig, name)
    spelled = str(f.type)
    base = spelled.removesuffix(" | None")  # a setting that may be unset (int | None): null in a request too
    kind = Literal[d.choices] if d.choices else _TYPES[base]
    bounds: dict[str, Any] = {k: getattr(d, k) for k in ("ge", "gt", "le", "lt") if getattr(d, k) is not None}
    extra: dict[str, Any] = bounds | tighter | ({"allow_inf_nan": False} if kind is float else {})
    return (kind | None if base != spelled else kind), Field(default, description=d.help, **extra)


class _Request(BaseModel):
    """Sentences to translate and the search settings of ``nmtkit translate`` a request may
    choose; one it names none of is the server's (its ``nmtkit serve`` options)."""

    # strict: "5" is no beam and 1 no boolean; an unknown key is refused, so that a misspelt
    # setting is never silently the default
    model_config = ConfigDict(strict=True, extra="forbid")

    @field_validator("constraints", "prefixes", check_fields=False)
    @classmethod
    def _one_a_sentence(cls, given: list[Any] | None, info: ValidationInfo) -> list[Any] | None:
        if given is not None and "sentences" in info.data and len(given) != len(info.data["sentences"]):
            one, many = (
                ("list of phrases", "lists of phrases") if info.field_name == "constraints" else ("prefix", "prefixes")
            )
            sentences = counted(len(info.data["sentences"]), "sentence")
            raise ValueError(f"{counted(len(given), one, many)} for {sentences}: give one a sentence")
        return given

    @field_validator("glossary", check_fields=False)
    @classmethod
    def _terms(cls, given: dict[str, str] | None) -> dict[str, str] | None:
        if given is None:
            return given
        if not all(k.strip() and v.strip() for k, v in given.items()):
            raise ValueError("a term and its translation hold a word each")
        seen: set[str] = set()
        for term in (k.strip() for k in given):
            if term in seen:
                raise ValueError(f"the term {term!r} is given twice (spaces around a term do not count)")
            seen.add(term)
        return given

    @field_validator("nbest", check_fields=False)
    @classmethod
    def _within_beam(cls, nbest: int, info: ValidationInfo) -> int:
        if "beam" in info.data:  # else the beam's own error is the one to read
            try:
                SearchConfig(beam=info.data["beam"], nbest=nbest).check()
            except UserError as err:
                raise ValueError(str(err)) from None
        return nbest


def native_request(cfg: ServerConfig) -> type[BaseModel]:
    """nmtkit's request shape, its defaults the server's options and its bounds the server's limits."""
    s, limits = cfg.search, cfg.limits
    sentences = Field(
        min_length=1,
        description=f"At most {limits.max_sentences}, each read as at most {limits.max_length} "
        f"subword units (413 beyond).",
    )
    fields_: dict[str, Any] = {
        "sentences": (list[Text], sentences),
        "beam": _declared("beam", s.beam, le=limits.max_beam),
        "nbest": (int, Field(1, ge=1, le=limits.max_nbest, description="Hypotheses per sentence, best first.")),
    }
    for name in SEARCH_OPTIONS[1:]:
        # the output limit bounds a request's work: a request may lower the server's, not raise it
        tighter = {"le": s.max_ratio} if name == "max_ratio" else {}
        fields_[name] = _declared(name, getattr(s, name), **tighter)
    fields_["alignment"] = (bool, Field(True, description="Pharaoh word pairs from the attention."))
    fields_["attention"] = (bool, Field(False, description="The attention matrices, over subword units and words."))
    fields_["token_scores"] = (bool, Field(False, description=declared(TranslateOptions, "token_scores")[1].help))
    fields_["constraints"] = (
        list[list[Text]] | None,
        Field(
            None,
            description="For each sentence, the phrases (raw target text) its translation must hold: "
            "lexically constrained beam search, as translate --constraints; [] constrains nothing.",
        ),
    )
    fields_["prefixes"] = (
        list[Text] | None,
        Field(
            None,
            description="For each sentence, the start its translation must have (raw target text), the rest "
            'searched: as translate --prefix, for interactive translation; "" forces nothing.',
        ),
    )
    fields_["glossary"] = (
        dict[Text, Text] | None,
        Field(
            None,
            max_length=MAX_TERMS,
            description="Terms for this request, source term to its translation (raw text): each translation "
            "whose sentence holds a term, as whole words, holds its translation, as translate --glossary; "
            "over the server's --glossary: these terms are found first, and the server's only where they "
            "overlap none of them.",
        ),
    )
    model: type[BaseModel] = create_model("TranslateRequest", __base__=_Request, **fields_)
    return model


def request_body(cfg: ServerConfig) -> Any:
    """The type of ``/translate``'s body: either shape, picked by its JSON type."""
    opennmt = Annotated[list[OpenNMTSentence], Field(min_length=1), Tag(OPENNMT)]
    return Annotated[Annotated[native_request(cfg), Tag(NATIVE)] | opennmt, Discriminator(_shape)]


def _shape(body: Any) -> str:
    return OPENNMT if isinstance(body, list) else NATIVE


def parsed(body: BaseModel | list[OpenNMTSentence], defaults: SearchConfig) -> Parsed:
    """The sentences and job of a validated body; OpenNMT-py's shape gets the server's search."""
    if isinstance(body, list):
        # the attention a native request computes by default (its alignment): the two shapes share batches
        return Parsed([x.src for x in body], Job(defaults, attention=True), [x.id for x in body], False)
    asked = body.model_dump()
    search = replace(defaults, **{k: v for k, v in asked.items() if k in _SEARCH_FIELDS})
    if asked["glossary"] and "ordered_constraints" not in body.model_fields_set:
        search = replace(search, ordered_constraints=False)  # a glossary's terms have no order: not the server's
    job = Job(search, asked["attention"] or asked["alignment"], asked["token_scores"])
    beside = Beside(asked["constraints"], asked["prefixes"])
    terms = None if asked["glossary"] is None else tuple((k.strip(), v.strip()) for k, v in asked["glossary"].items())
    return Parsed(asked["sentences"], job, None, asked["attention"], beside, terms or None, asked["alignment"])
