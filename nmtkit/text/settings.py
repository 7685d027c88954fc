"""Settings of the text stage: how a language's raw text becomes tokens, and which training pairs
preprocessing drops. Written into ``preprocess.json``, the corpus manifest and the checkpoint, so that
``translate`` processes raw text exactly as the training data was.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..core.errors import UserError
from ..core.settings import Settings, as_written, checking, known_fields, setting

# The cleaning rules of the 'default' preset (text.clean.PRESETS): they suit any corpus.
DEFAULT_RULES = ("unicode", "whitespace")
SPM_KINDS = ("unigram", "bpe")  # the SentencePiece models build-vocab --spm trains


def check_language(code: str) -> str:
    """``code``, or :class:`UserError` where it cannot end a file's name (PREFIX.LANG)."""
    # a dot too: PREFIX.LANG is read back by its last suffix ('train..', 'train.en.x')
    if not code or any(c.isspace() or c in "/\\." for c in code) or not any(c.isalnum() for c in code):
        raise UserError(f"language code {code!r}: give one such as en, fr or pt-BR")
    return code


def moses_language(code: str) -> str:
    """The language whose Moses rules ``code`` takes: its primary subtag, lowercased (en-US, EN and
    en_GB are all en), since sacremoses knows only bare codes and gives anything else generic rules."""
    return re.split(r"[-_]", code, maxsplit=1)[0].lower()


def check_languages(src: str, tgt: str) -> None:
    """Each code checked (:func:`check_language`), and refused where the two sides are one."""
    for code in (src, tgt):
        check_language(code)
    if src == tgt:
        raise UserError(f"source and target language are both '{src}'")


@dataclass(frozen=True)
class TextConfig(Settings):
    """How one language's raw text becomes tokens (the order is the pipeline's).

    clean rules → Moses punctuation normalisation → Moses tokenisation
    (optionally aggressive hyphen splitting) → optional lowercasing →
    optional BPE (the codes travel separately, as a string).
    """

    lang: str
    clean: tuple[str, ...] = DEFAULT_RULES  # the Bible's rules are the "bible" preset
    normalize_punct: bool = setting(True, "Moses punctuation normalization.")
    aggressive_dash: bool = setting(False, "Split hyphens: arc @-@ en @-@ ciel.")
    lowercase: bool = setting(False, "Lowercase tokens (the paper does not).")
    # the language of the Moses rules where it is not the code as written (en-US: en); a stored
    # config without it tokenizes as it did, the code as written (sacremoses's generic rules for en-US)
    rules: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if checking():
            check_language(self.lang)
            if not self.rules and moses_language(self.lang) != self.lang:
                object.__setattr__(self, "rules", moses_language(self.lang))

    @property
    def moses_lang(self) -> str:
        """The language code sacremoses's rules are read for."""
        return self.rules or self.lang

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self) | {"clean": list(self.clean)}
        if not self.rules:  # written only where it says something: the dicts of bare codes stay as they were
            del d["rules"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TextConfig:
        with as_written():  # a stored config is read back as it was written, a code nmtkit once took included
            return cls(**known_fields(cls, d, "TextConfig field") | {"clean": tuple(d.get("clean", ()))})


@dataclass(frozen=True)
class FilterConfig(Settings):
    """Which training pairs preprocessing drops (Moses clean-corpus-n style).

    Lengths are counted in output tokens. ``max_ratio`` bounds
    longer/shorter; 0 disables a limit. Evaluation splits are never filtered.
    """

    max_len: int = setting(50, "Drop training pairs with a side longer than this many tokens (0: no limit).", ge=0)
    min_len: int = setting(1, "Drop training pairs with a side shorter than this.", ge=0)
    max_ratio: float = setting(
        2.5, "Drop training pairs whose longer side exceeds this times the shorter (0: off).", ge=0
    )
    dedup: bool = setting(True, "Drop repeated training pairs.")
