"""The shortlist vocabulary (Bahdanau et al. 2015, §4.1: the 30,000 most frequent words).

File format (``vocab.<lang>.txt``): one ``token count`` per line, special
symbols first with fixed ids (``<pad>``=0, ``<unk>``=1, ``<s>``=2,
``</s>``=3), then tokens by descending count. The fingerprint is the sha256
of the token list alone: two vocabularies with the same ids for the same
tokens are interchangeable whatever their counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ..core.errors import FormatError, UserError
from ..core.files import atomic_write, sha256_text
from .manifest import VOCAB_META, read_vocab_meta

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
PAD, UNK, BOS, EOS = range(4)
NOT_WORDS = (SPECIALS[PAD], SPECIALS[BOS], SPECIALS[EOS])  # the symbols no text holds (<unk> is a word)


class Vocab:
    def __init__(self, tokens: list[str], counts: list[int] | None = None):
        if tuple(tokens[:4]) != SPECIALS:
            raise FormatError(f"vocabulary must start with {' '.join(SPECIALS)}")
        self.tokens = tokens
        self.counts = counts if counts is not None else [0] * len(tokens)
        self.index = {t: i for i, t in enumerate(tokens)}
        if len(self.index) != len(tokens):
            raise FormatError("vocabulary lists a token twice")
        for symbol in NOT_WORDS:  # typed in text, a word no vocabulary holds: it never ends or pads a sentence
            del self.index[symbol]
        self.fingerprint = sha256_text("\n".join(tokens))

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_counts(cls, counts: Counter[str], size: int, min_count: int = 1) -> Vocab:
        """The ``size`` most frequent tokens (specials included in ``size``; 0 = all); ties by token."""
        ranked = sorted(
            ((c, t) for t, c in counts.items() if c >= min_count and t not in SPECIALS), key=lambda ct: (-ct[0], ct[1])
        )
        if size > 0:
            ranked = ranked[: max(size - len(SPECIALS), 0)]
        return cls(list(SPECIALS) + [t for _, t in ranked], [0] * 4 + [c for c, _ in ranked])

    def encode(self, tokens: Iterable[str]) -> list[int]:
        get = self.index.get
        return [get(t, UNK) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]

    def save(self, path: str | Path) -> None:
        with atomic_write(path) as fh:
            for t, c in zip(self.tokens, self.counts):
                fh.write(f"{t} {c}\n")

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        tokens, counts = [], []
        try:
            with open(path, encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    parts = line.rstrip("\n").split(" ")
                    if len(parts) != 2 or not parts[1].isdigit():
                        raise FormatError(f"{path}: line {lineno} is not 'token count'")
                    tokens.append(parts[0])
                    counts.append(int(parts[1]))
        except FileNotFoundError:
            raise UserError(f"{path}: no such vocabulary file") from None
        except UnicodeDecodeError:
            raise FormatError(f"{path}: vocabulary is not valid UTF-8") from None
        try:
            return cls(tokens, counts)
        except FormatError as err:
            raise FormatError(f"{path}: {err}") from None


class VocabDir:
    """What ``build-vocab`` writes: ``vocab.<lang>.txt`` per language, BPE codes, ``vocab.json``.

    ``vocab.json`` records the vocabulary settings and the text settings of
    the corpus it was counted on, so binarization can refuse text made
    differently.
    """

    META = VOCAB_META

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise UserError(f"{self.path}: no such vocabulary directory (made by nmtkit build-vocab)")
        self.meta = read_vocab_meta(self.path)
        self.langs, self.text_sha256, self.codes_files = self.meta.langs, self.meta.text_sha256, self.meta.bpe_codes
        self.vocabs = {lang: Vocab.load(self.path / f"vocab.{lang}.txt") for lang in self.langs}

    def codes(self, lang: str) -> str | None:
        name = self.codes_files.get(lang)
        if not name:
            return None
        from ..text.bpe import read_codes  # subword-nmt, for the corpora that have codes

        try:
            return read_codes(self.path / name)
        except FileNotFoundError:
            raise FormatError(f"{self.path / name}: BPE codes named in {self.META} are missing") from None

    def require(self, langs: tuple[str, ...]) -> None:
        missing = [lang for lang in langs if lang not in self.vocabs]
        if missing:
            raise UserError(f"{self.path}: has no vocabulary for {', '.join(missing)} (has {', '.join(self.langs)})")
