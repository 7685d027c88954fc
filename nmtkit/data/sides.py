"""Both languages' text pipelines and vocabularies, from a checkpoint's text or a vocabulary directory.

translate, score (``--no-unk``) and align-plot all need the same pair:
how a raw line becomes model tokens on each side, and which of those tokens
the model knows. A checkpoint carries both; so does a ``build-vocab``
directory (its ``vocab.json`` records the text settings it was counted on).
No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.console import log
from ..core.errors import UserError
from ..text.pipeline import Preprocessor
from ..text.settings import TextConfig
from .vocab import UNK, Vocab, VocabDir


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
    def of(cls, text: dict[str, TextConfig], bpe_codes: dict[str, str | None], vocab: dict[str, list[str]]) -> Sides:
        """From text settings, BPE codes and vocabularies by side ("src", "tgt"): what a
        checkpoint's text section holds."""
        return cls(*(Side(Preprocessor(text[side], bpe_codes[side]), Vocab(vocab[side])) for side in ("src", "tgt")))

    @classmethod
    def from_vocab_dir(cls, path: str | Path) -> Sides:
        """From a build-vocab directory (source language first in its vocab.json)."""
        path = Path(path)
        vdir = VocabDir(path)
        if len(vdir.langs) != 2:
            raise UserError(f"{path}: expected two languages in vocab.json, found {vdir.langs}")
        return cls(
            *(
                Side(Preprocessor(vdir.meta.text_config(lang), vdir.codes(lang)), vdir.vocabs[lang])
                for lang in vdir.langs
            )
        )

    def signature(self) -> tuple[Any, ...]:
        """What must agree between ensemble members: vocabularies, text settings, BPE codes."""
        return tuple((s.vocab.fingerprint, s.text.cfg.to_dict(), s.text.codes) for s in (self.src, self.tgt))


def warn_named_otherwise(
    path: str | Path, side: str, langs: dict[str, str], whose: str | Path, what: str = "model", hint: str = ""
) -> None:
    """A warning line for a file named as the other language than ``whose`` (``what``: a model, a
    vocabulary; its languages by side, ``langs``) reads on ``side`` (``test.en`` into a fr→en
    model): most likely the other direction's, or the files swapped; ``hint``: the command's own
    way out, said after."""
    named, other = Path(path).suffix.lstrip("."), langs["tgt" if side == "src" else "src"]
    if named and named == other != langs[side]:
        log(
            f"warning: {path} is named as {named} text, but {whose} reads {langs[side]} there "
            f"({langs['src']}→{langs['tgt']}): the other direction's {what}, or the files swapped?"
            + (f" ({hint})" if hint else "")
        )
