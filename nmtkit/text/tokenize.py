"""Moses punctuation normalisation, tokenisation and detokenisation (sacremoses).

The paper tokenised with the Moses scripts (Bahdanau et al. 2015, footnote
6); sacremoses is their Python port. XML escaping is off: the models see
``l'`` rather than ``l&apos;``, and translate's output needs no unescaping.
"""

from __future__ import annotations

import re

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer


def moses_language(code: str) -> str:
    """The language whose Moses rules ``code`` takes: its primary subtag, lowercased (en-US, EN and
    en_GB are all en), since sacremoses knows only bare codes and gives anything else generic rules."""
    return re.split(r"[-_]", code, maxsplit=1)[0].lower()


class MosesText:
    """Tokeniser and detokeniser for one language; build once per process (regex compilation is slow)."""

    def __init__(self, lang: str, normalize_punct: bool = True, aggressive_dash: bool = False):
        self.lang = lang
        self.aggressive_dash = aggressive_dash
        rules = moses_language(lang)
        self._norm = MosesPunctNormalizer(rules) if normalize_punct else None
        self._tok = MosesTokenizer(rules)
        self._detok = MosesDetokenizer(rules)

    def tokenize(self, text: str, protected: list[str] | None = None) -> list[str]:
        """Moses tokens; a match of a ``protected`` regular expression stays one token."""
        if self._norm is not None:
            text = self._norm.normalize(text)
        return list(
            self._tok.tokenize(
                text, escape=False, aggressive_dash_splits=self.aggressive_dash, protected_patterns=protected
            )
        )

    def detokenize(self, tokens: list[str]) -> str:
        text = str(self._detok.detokenize(tokens, unescape=False))
        return text.replace(" @-@ ", "-") if self.aggressive_dash else text
