"""Typed settings shared by the command line, the corpus files and the checkpoint.

The click options read their defaults from these dataclasses, and the same
values are written into ``preprocess.json``, the corpus manifest and (later)
the checkpoint, so that ``translate`` processes raw text exactly as the
training data was.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import FormatError
from .text.clean import RULES


@dataclass(frozen=True)
class TextConfig:
    """How one language's raw text becomes tokens (the order is the pipeline's).

    clean rules → Moses punctuation normalisation → Moses tokenisation
    (optionally aggressive hyphen splitting) → optional lowercasing →
    optional BPE (the codes travel separately, as a string).
    """

    lang: str
    clean: tuple[str, ...] = tuple(RULES)
    normalize_punct: bool = True
    aggressive_dash: bool = False
    lowercase: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["clean"] = list(self.clean)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TextConfig":
        return cls(**_known(cls, d, "text settings") | {"clean": tuple(d.get("clean", ()))})


@dataclass(frozen=True)
class FilterConfig:
    """Which training pairs preprocessing drops (Moses clean-corpus-n style).

    Lengths are counted in output tokens. ``max_ratio`` bounds
    longer/shorter; 0 disables a limit. Evaluation splits are never filtered.
    """

    max_len: int = 50
    min_len: int = 1
    max_ratio: float = 2.5
    dedup: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FilterConfig":
        return cls(**_known(cls, d, "filter settings"))


@dataclass(frozen=True)
class VocabConfig:
    """The paper's shortlist: the ``size`` most frequent tokens per language."""

    size: int = 30000
    min_count: int = 1
    bpe_merges: int = 0
    joint_bpe: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _known(cls: type, d: dict[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise FormatError(f"unknown {what}: {', '.join(sorted(unknown))}")
    return {k: v for k, v in d.items() if k in names}


