"""The corpus manifest (``manifest.json``) and the vocabulary directory's description
(``vocab.json``): the only module that knows their layout.

Both are typed, carry a format name and a version, and are checked when read: a file that is
not one, is of another version or lacks a field is refused in one line, naming it. The manifest
records what a binarized corpus holds (languages, id dtype, vocabularies and their fingerprints,
the text and vocabulary settings it was made with, and the statistics of each split); the
vocabulary description records what ``build-vocab`` counted (languages, settings, the text
settings of the corpus it counted, BPE codes and statistics), so that binarization can refuse
text made differently. ``vocab.json`` files written before it had a format name are read as
version 1, which they are.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from ..core.errors import FormatError
from ..core.files import read_json, write_json
from ..text.settings import TextConfig

MANIFEST = "manifest.json"
FORMAT = "nmtkit-corpus"
VERSION = 1
VOCAB_META = "vocab.json"
VOCAB_FORMAT = "nmtkit-vocab"
VOCAB_VERSION = 1
T = TypeVar("T")


@dataclass
class VocabEntry:
    file: str  # vocab.LANG.txt, in the corpus directory
    size: int
    sha256: str  # the vocabulary's fingerprint, which checkpoints record


@dataclass
class SplitStats:
    """What binarizing a split found, and what preprocessing reported of its text."""

    sentences: int
    tokens: dict[str, int]  # by language
    unk: dict[str, int]
    oov_rate: dict[str, float]
    reference: str | None = None  # SPLIT.TGT.ref: the clean target text (not train)
    source_reference: str | None = None  # SPLIT.SRC.ref: the clean source text, reversed corpora's reference
    source: str | None = None  # the raw text's prefix
    lines: int | None = None  # raw lines read
    rules: dict[str, dict[str, int]] = field(default_factory=dict)  # cleaning rules fired, by language
    dropped: dict[str, int] = field(default_factory=dict)  # pairs dropped, by reason
    kept_empty: int | None = None
    links: str | None = None  # SPLIT.links(.bin/.idx): word links over units
    link_count: int | None = None  # unit links in all


@dataclass
class Manifest:
    langs: dict[str, str]  # {"src": "en", "tgt": "fr"}
    dtype: str  # of the ids in the .bin files
    vocab: dict[str, VocabEntry]  # by language
    settings: dict[str, Any]  # text (by language), vocab, bpe_codes (fingerprints)
    settings_sha256: str
    bpe_codes: dict[str, str | None]  # codes file by language
    splits: dict[str, SplitStats] = field(default_factory=dict)
    nmtkit: str = __version__  # the version that wrote it

    @property
    def src_lang(self) -> str:
        return self.langs["src"]

    @property
    def tgt_lang(self) -> str:
        return self.langs["tgt"]

    def text(self, lang: str) -> TextConfig:
        """How the raw text of ``lang`` became the corpus's tokens."""
        return TextConfig.from_dict(self.settings["text"][lang])

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Manifest:
        body = _checked(raw, where, FORMAT, VERSION, "an nmtkit corpus manifest", required=True)
        return _build(
            cls, body, where, vocab=lambda v: _each(VocabEntry, v, where), splits=lambda v: _each(SplitStats, v, where)
        )


def read_manifest(corpus_dir: str | Path) -> Manifest:
    path = Path(corpus_dir) / MANIFEST
    return Manifest.from_dict(read_json(path, "corpus manifest"), str(path))


def write_manifest(path: str | Path, manifest: Manifest) -> None:
    write_json(path, manifest.to_dict())


@dataclass
class VocabMeta:
    """What ``build-vocab`` wrote into a vocabulary directory."""

    langs: list[str]
    config: dict[str, Any]  # VocabConfig's fields
    text: dict[str, dict[str, Any]]  # TextConfig's fields, by language
    text_sha256: str
    bpe_codes: dict[str, str | None]  # codes file by language
    source: str = ""  # the clean text's prefix it counted
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # size, types, tokens, coverage
    nmtkit: str = __version__

    def text_config(self, lang: str) -> TextConfig:
        return TextConfig.from_dict(self.text[lang])

    def to_dict(self) -> dict[str, Any]:
        return {"format": VOCAB_FORMAT, "version": VOCAB_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> VocabMeta:
        return _build(
            cls, _checked(raw, where, VOCAB_FORMAT, VOCAB_VERSION, "a vocabulary description", required=False), where
        )


def read_vocab_meta(vocab_dir: str | Path) -> VocabMeta:
    path = Path(vocab_dir) / VOCAB_META
    return VocabMeta.from_dict(read_json(path, "vocabulary description"), str(path))


def write_vocab_meta(path: str | Path, meta: VocabMeta) -> None:
    write_json(path, meta.to_dict())


def _checked(raw: Any, where: str, name: str, version: int, what: str, required: bool) -> dict[str, Any]:
    """The fields of a file after its format name and version (absent ones allowed when not
    ``required``: files from before they were written)."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: not {what}")
    body = dict(raw)
    found, number = body.pop("format", None), body.pop("version", None)
    if found is None and number is None and not required:
        return body
    if found != name:
        raise FormatError(f"{where}: not {what}")
    if number != version:
        raise FormatError(
            f"{where}: format version {number} is not supported (this nmtkit reads {version}); "
            f"make it again with this nmtkit"
        )
    return body


def _build(cls: type[T], raw: Any, where: str, **convert: Any) -> T:
    """``cls`` from a dict: unknown fields are ignored (a newer writer may add some), missing
    required ones are a format error."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: a {cls.__name__} entry is not an object")
    declared = fields(cls)  # type: ignore[arg-type]   # a dataclass, as every caller's
    known = {f.name for f in declared}
    values = {k: convert[k](v) if k in convert else v for k, v in raw.items() if k in known}
    for f in declared:
        kind = str(f.type).removesuffix(" | None")
        if f.name in values and kind in _PLAIN and not _is(values[f.name], kind, str(f.type).endswith("None")):
            raise FormatError(f"{where}: field '{f.name}' is {values[f.name]!r}, not {_PLAIN[kind]}")
    try:
        return cls(**values)
    except TypeError:
        missing = [
            f.name for f in declared if f.name not in values and f.default is MISSING and f.default_factory is MISSING
        ]
        raise FormatError(f"{where}: missing field '{missing[0] if missing else '?'}'") from None


_PLAIN = {"int": "a whole number", "str": "text", "bool": "true or false"}  # the fields' types a file may get wrong


def _is(value: Any, kind: str, optional: bool) -> bool:
    if value is None:
        return optional
    if kind == "bool":
        return isinstance(value, bool)
    return isinstance(value, int if kind == "int" else str) and not isinstance(value, bool)


def _each(cls: type[T], raw: Any, where: str) -> dict[str, T]:
    """A dict of ``cls`` entries by name."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: {cls.__name__} entries are not an object")
    return {k: _build(cls, v, where) for k, v in raw.items()}
