"""Moses punctuation normalisation, tokenisation and detokenisation (sacremoses).

The paper tokenised with the Moses scripts (Bahdanau et al. 2015, footnote
6); sacremoses is their Python port. XML escaping is off: the models see
``l'`` rather than ``l&apos;``, and translate's output needs no unescaping.
"""

from __future__ import annotations

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer


class MosesText:
    """Tokeniser and detokeniser for one language, ``lang`` a code sacremoses knows (see
    :func:`~nmtkit.text.settings.moses_language`); build once per process (regex compilation is slow)."""

    def __init__(self, lang: str, normalize_punct: bool = True, aggressive_dash: bool = False):
        self.lang = lang
        self.aggressive_dash = aggressive_dash
        self._norm = MosesPunctNormalizer(lang) if normalize_punct else None
        self._tok = MosesTokenizer(lang)
        self._detok = MosesDetokenizer(lang)

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
