"""Raw line ⇄ model tokens, the one object that preprocess and translate share.

``Preprocessor(TextConfig, bpe_codes).encode(line)`` runs the cleaning
rules, Moses normalisation and tokenisation, lowercasing and BPE, in that
order; ``.decode(tokens)`` undoes BPE and detokenises. Keeping both
directions in one object means translation cannot drift from how the
training data was made.
"""

from __future__ import annotations

import re
from collections import Counter

from .bpe import UNKNOWN, Segmenter, merge_subwords
from .clean import apply_rules
from .settings import TextConfig
from .tokenize import MosesText


class Preprocessor:
    def __init__(self, cfg: TextConfig, bpe_codes: str | None = None):
        self.cfg, self.codes = cfg, bpe_codes
        self.moses = MosesText(cfg.moses_lang, cfg.normalize_punct, cfg.aggressive_dash)
        self.segmenter = Segmenter(bpe_codes) if bpe_codes else None
        self.fired: Counter[str] = Counter()

    @property
    def sentencepiece(self) -> bool:
        """Whether the units are SentencePiece's (▁ begins a word), by the codes: not BPE's
        (@@ continues one) or words."""
        return self.segmenter is not None and self.segmenter.sentencepiece

    def clean(self, line: str) -> str:
        out, changed = apply_rules(line, self.cfg.clean)
        self.fired.update(changed)
        return out

    def tokenize(self, text: str) -> list[str]:
        """Tokens of already-cleaned text, before BPE."""
        if not text:
            return []
        tokens = self.moses.tokenize(text, [re.escape(UNKNOWN)] if UNKNOWN in text else None)
        return [t.lower() for t in tokens] if self.cfg.lowercase else tokens

    def segment(self, tokens: list[str]) -> list[str]:
        return self.segmenter.segment(tokens) if self.segmenter else tokens

    def encode(self, line: str, tokenized: bool = False) -> list[str]:
        """Model tokens of a raw line, or of a line already in Moses tokens (``tokenized``)."""
        if tokenized:
            tokens = line.split()
            return self.segment([t.lower() for t in tokens] if self.cfg.lowercase else tokens)
        return self.segment(self.tokenize(self.clean(line)))

    def decode(self, tokens: list[str], detokenize: bool = True) -> str:
        """Undo BPE, then detokenise (or join the Moses tokens with spaces). An empty token (the
        further pieces of a word --replace-unk copied once) is no word: it made a double space."""
        tokens = [t for t in tokens if t]
        words = merge_subwords(tokens, self.sentencepiece) if self.segmenter else tokens
        return self.moses.detokenize(words) if detokenize else " ".join(words)
