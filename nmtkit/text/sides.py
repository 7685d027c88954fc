"""Both languages' text pipelines and vocabularies, from a checkpoint or a vocabulary directory.

translate, score (``--no-unk``) and align-plot all need the same pair:
how a raw line becomes model tokens on each side, and which of those tokens
the model knows. A checkpoint carries both; so does a ``build-vocab``
directory (its ``vocab.json`` records the text settings it was counted on).
No torch here until a checkpoint is actually read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import TextConfig
from ..data.vocab import UNK, Vocab, VocabDir
from ..errors import UserError
from .pipeline import Preprocessor

if TYPE_CHECKING:
    from ..checkpoint import TextSides


@dataclass
class Side:
    text: Preprocessor
    vocab: Vocab

    def tokens(self, line: str, tokenized: bool = False) -> list[str]:
        return self.text.encode(line, tokenized)

    def ids(self, tokens: list[str]) -> list[int]:
        return self.vocab.encode(tokens)

    def has_unknown(self, line: str, tokenized: bool = False) -> bool:
        return UNK in self.ids(self.tokens(line, tokenized))


@dataclass
class Sides:
    src: Side
    tgt: Side

    @classmethod
    def of(cls, text: "TextSides") -> "Sides":
        """From a checkpoint's text section."""
        return cls(*(Side(Preprocessor(text.text[side], text.bpe_codes[side]), Vocab(text.vocab[side]))
                     for side in ("src", "tgt")))

    @classmethod
    def load(cls, path: str | Path) -> "Sides":
        """From a checkpoint file or a build-vocab directory (source language first in its vocab.json)."""
        path = Path(path)
        if path.is_dir():
            vdir = VocabDir(path)
            if len(vdir.langs) != 2:
                raise UserError(f"{path}: expected two languages in vocab.json, found {vdir.langs}")
            return cls(*(Side(Preprocessor(TextConfig.from_dict(vdir.meta["text"][lang]), vdir.codes(lang)),
                              vdir.vocabs[lang]) for lang in vdir.langs))
        from .. import checkpoint
        return cls.of(checkpoint.load(path).text)

    def signature(self) -> tuple[Any, ...]:
        """What must agree between ensemble members: vocabularies, text settings, BPE codes."""
        return tuple((s.vocab.fingerprint, s.text.cfg.to_dict(), s.text.codes)
                     for s in (self.src, self.tgt))
