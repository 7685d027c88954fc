"""The binarized corpus: memory-mapped token ids, their offsets, and a manifest.

Layout of a corpus directory (see docs/design.md):

- ``manifest.json``: format and version, languages, dtype, vocabulary and
  settings fingerprints, per split the sentence and token counts.
- ``<split>.<lang>.bin``: the ids of all sentences concatenated (no
  ``</s>``), in the smallest unsigned dtype that holds the vocabulary.
- ``<split>.<lang>.idx``: int64 offsets, n+1 of them, so sentence i is
  ``bin[idx[i]:idx[i+1]]``.
- ``<split>.lines``: the original (raw text) line number of each sentence.
- ``<split>.links.bin``/``.idx`` (optional, ``preprocess --align-suffix``): word links over
  subword units, each sentence's as uint16 pairs ``s t s t …`` (:meth:`Corpus.links`).

Writing streams (memory does not grow with the corpus); reading maps the
files with ``numpy.memmap``, so a trainer touches only the pages it needs.
Batching and padding belong to the trainer, not here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..core.errors import FormatError, UserError
from ..core.files import read_lines
from ..core.line_counts import count_lines
from ..core.wording import counted
from .manifest import SplitStats, read_manifest
from .vocab import Vocab


def best_dtype(vocab_size: int) -> np.dtype:
    for dt in (np.uint8, np.uint16, np.uint32):
        if vocab_size <= np.iinfo(dt).max + 1:
            return np.dtype(dt)
    return np.dtype(np.uint64)


class TokenArrayWriter:
    """Appends sentences to open ``.bin``/``.idx`` streams."""

    def __init__(self, bin_fh: BinaryIO, idx_fh: BinaryIO, dtype: np.dtype):
        self.bin, self.idx, self.dtype = bin_fh, idx_fh, dtype
        self.offset = 0
        self.sentences = 0
        self.idx.write(np.zeros(1, np.int64).tobytes())

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Append ``len(lengths)`` sentences whose ids are concatenated in ``ids``."""
        self.bin.write(np.asarray(ids, self.dtype).tobytes())
        ends = self.offset + np.cumsum(lengths, dtype=np.int64)
        self.idx.write(ends.tobytes())
        if len(ends):
            self.offset = int(ends[-1])
        self.sentences += len(lengths)


class TokenArray:
    """A read-only, memory-mapped list of sentences (numpy arrays of ids)."""

    def __init__(self, prefix: Path, dtype: np.dtype, sentences: int):
        bin_path, idx_path = prefix.with_suffix(prefix.suffix + ".bin"), prefix.with_suffix(prefix.suffix + ".idx")
        for p in (bin_path, idx_path):
            if not p.exists():
                raise FormatError(f"{p}: missing from the corpus directory")
        if (size := idx_path.stat().st_size) != 8 * (sentences + 1):
            raise FormatError(
                f"{idx_path}: expected {sentences + 1:,} offsets ({8 * (sentences + 1):,} bytes), "
                f"found {size:,} bytes (truncated or not from this manifest)"
            )
        self.offsets = np.memmap(idx_path, dtype=np.int64, mode="r")
        self.sizes = np.diff(self.offsets)
        # before the .bin's size is held against it: a damaged index's last offset is any number
        if self.offsets[0] != 0 or (len(self.sizes) and self.sizes.min() < 0):
            raise FormatError(f"{idx_path}: its offsets do not rise from 0 (a damaged index)")
        n_ids = int(self.offsets[-1])
        if (found := bin_path.stat().st_size) != n_ids * dtype.itemsize:
            raise FormatError(
                f"{bin_path}: {found:,} bytes, where its index ends at {n_ids:,} ids of {dtype} "
                f"({n_ids * dtype.itemsize:,} bytes): truncated, or not this index's"
            )
        # np.memmap refuses empty files; an all-empty split is legal.
        self.ids = np.memmap(bin_path, dtype=dtype, mode="r") if n_ids else np.zeros(0, dtype)
        self.path = bin_path

    def check_ids(self, size: int) -> None:
        """:class:`FormatError` for an id of a vocabulary of ``size`` entries that it lacks."""
        if len(self.ids) and (top := int(self.ids.max())) >= size:
            raise FormatError(f"{self.path}: holds id {top:,}, where its vocabulary has {size:,} (a damaged corpus)")

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, i: int) -> np.ndarray:
        i = range(len(self))[i]  # a negative index from the end, one past it an IndexError
        return np.asarray(self.ids[self.offsets[i] : self.offsets[i + 1]])


class Corpus:
    """A binarized corpus directory, checked against its manifest on opening.

    ``nmtkit preprocess --vocab`` writes it; ``nmtkit train`` reads it. The token ids are
    memory-mapped, so opening a corpus of any size costs next to no memory.

    Args:
        path: The directory (``data-bin/``); a one-line :class:`UserError` if it is missing
            or its manifest cannot be read.

    Attributes:
        path: The directory.
        manifest: Its ``manifest.json``: languages, dtype, per split the sentence and token
            counts, the vocabulary and settings fingerprints.
        src_lang: The source language code.
        tgt_lang: The target language code.
        dtype: The numpy dtype of the token ids.

    Example:
        ```python
        from nmtkit.data.binarized import Corpus
        corpus = Corpus("data-bin")
        src, tgt = corpus.split("train")     # token ids of sentence i: src[i], tgt[i]
        ```
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise UserError(f"{self.path}: no such corpus directory")
        self.manifest = read_manifest(self.path)
        self.src_lang, self.tgt_lang = self.manifest.src_lang, self.manifest.tgt_lang
        try:
            self.dtype = np.dtype(self.manifest.dtype)
        except TypeError:
            self.dtype = np.dtype(np.float64)  # refused below, as any dtype of no ids
        if self.dtype.kind not in "ui":  # ids are integers (best_dtype writes unsigned ones)
            raise FormatError(f"{self.path / 'manifest.json'}: dtype {self.manifest.dtype!r} is no dtype of ids")
        self._checked: set[str] = set()  # the splits whose ids are known to be within the vocabularies

    @property
    def splits(self) -> list[str]:
        """The split names the manifest lists (train, valid, test, ...)."""
        return list(self.manifest.splits)

    def check(self) -> None:
        """The corpus's data checked against its manifest, as training would on reaching it: the
        sizes of each split's token arrays and links, the vocabularies' fingerprints, and that the
        clean texts are there (they and the BPE codes are read, not checked, by the commands that
        use them). For a command that passes the corpus on, or describes it, without reading it."""
        for lang in self.manifest.vocab:
            self.vocab(lang)
        for name in self.manifest.splits:
            self.split(name)
            self.links(name)
            self.check_texts(name)

    def check_texts(self, name: str) -> None:
        """:class:`FormatError` where a clean text of split ``name`` that the manifest names (the
        references validation scores against) is missing or holds another number of lines than
        the split's sentences: a short one would fail at the first validation, a long one score 0."""
        stats = self.manifest.splits[name]
        for text in (stats.reference, stats.source_reference):
            if not text:
                continue
            if not (self.path / text).is_file():
                raise FormatError(f"{self.path / text}: missing, where the manifest names it")
            if (lines := count_lines(self.path / text)) != stats.sentences:
                raise FormatError(
                    f"{self.path / text}: {counted(lines, 'line')}, where the split has "
                    f"{counted(stats.sentences, 'sentence')} "
                    "(a damaged corpus: binarize it again)"
                )

    def vocab(self, lang: str) -> Vocab:
        """The vocabulary of language ``lang``, checked against the manifest's fingerprint."""
        if lang not in self.manifest.vocab:
            raise UserError(f"{self.path}: has no {lang!r} side, only {', '.join(self.manifest.vocab)}")
        entry = self.manifest.vocab[lang]
        vocab = Vocab.load(self.path / entry.file)
        if vocab.fingerprint != entry.sha256:
            raise FormatError(f"{self.path / entry.file}: does not match the manifest's fingerprint")
        return vocab

    def check_vocab(
        self,
        expected: dict[str, str],
        what: str,
        langs: dict[str, str] | None = None,
        remedy: str = "rebuild one of them with the same vocabulary",
    ) -> None:
        """Refuse the corpus if its vocabularies are not the ones ``what`` was made with (the line
        ends with ``remedy``), or, given the ``src`` and ``tgt`` languages of a model, if it runs
        the other way: the fingerprints are by language, and a model of the other direction has
        both vocabularies."""
        if langs is not None and (langs["src"], langs["tgt"]) != (self.src_lang, self.tgt_lang):
            raise UserError(
                f"{self.path}: a {self.src_lang}→{self.tgt_lang} corpus, where {what} translates "
                f"{langs['src']}→{langs['tgt']}; give one of its direction ('nmtkit reverse' swaps a corpus's sides)"
            )
        for lang, sha in expected.items():
            have = self.manifest.vocab[lang].sha256 if lang in self.manifest.vocab else None
            if have != sha:
                raise UserError(
                    f"{self.path}: the {lang} vocabulary (sha256 {str(have)[:12]}) is not the one "
                    f"{what} uses (sha256 {sha[:12]}); {remedy}"
                )

    def split(self, name: str) -> tuple[TokenArray, TokenArray]:
        """The source and target token arrays of split ``name`` (memory-mapped; sentence i is
        ``array[i]``, its ids without ``</s>``); :class:`UserError` for a split it lacks."""
        n = self._stats(name).sentences
        src = TokenArray(self.path / f"{name}.{self.src_lang}", self.dtype, n)
        tgt = TokenArray(self.path / f"{name}.{self.tgt_lang}", self.dtype, n)
        if name not in self._checked:  # one pass over the ids, once: an id past the vocabulary fails far later
            src.check_ids(self.manifest.vocab[self.src_lang].size)
            tgt.check_ids(self.manifest.vocab[self.tgt_lang].size)
            self._checked.add(name)
        return src, tgt

    def fingerprint(self, name: str) -> str:
        """sha256 of split ``name``'s ids (and word links, and the clean texts validation scores
        against): what a resumed run checks that it goes on over the pairs it was trained on, and
        validates on the ones it validated on. A second a few gigabytes (WMT'14's training split)."""
        stats = self._stats(name)
        digest = hashlib.sha256()
        prefixes = [f"{name}.{self.src_lang}", f"{name}.{self.tgt_lang}"] + ([stats.links] if stats.links else [])
        texts = [text for text in (stats.reference, stats.source_reference) if text]  # none in train
        for file in [f"{prefix}.{kind}" for prefix in prefixes for kind in ("bin", "idx")] + texts:
            with open(self.path / file, "rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha256").digest())
        return digest.hexdigest()

    def links(self, name: str) -> TokenArray | None:
        """The word links of a split over its subword units (``preprocess --align-suffix``):
        sentence i's is ``[s0, t0, s1, t1, …]``, source unit s_k linked with target unit t_k
        (positions from 0, without ``</s>``); None for a split binarized without links."""
        stats = self.manifest.splits.get(name)
        if stats is None or not stats.links:
            return None
        return TokenArray(self.path / stats.links, np.dtype(np.uint16), stats.sentences)

    def references(self, name: str) -> list[str] | None:
        """The clean tokenized target text of a split (Moses tokens before BPE, one line per
        sentence), kept for every split but train; None for corpora binarized without it."""
        return self._clean_text(self.manifest.splits[name].reference if name in self.manifest.splits else None)

    def source_references(self, name: str) -> list[str] | None:
        """The same of the source side: the references of the corpus reversed."""
        return self._clean_text(self.manifest.splits[name].source_reference if name in self.manifest.splits else None)

    def _clean_text(self, entry: str | None) -> list[str] | None:
        if not entry:
            return None
        return list(read_lines(self.path / entry, allow_empty=True))

    def lines(self, name: str) -> np.ndarray:
        """Raw-text line number (1-based) of each sentence of a split."""
        self._stats(name)
        return np.loadtxt(self.path / f"{name}.lines", dtype=np.int64, ndmin=1)

    def _stats(self, name: str) -> SplitStats:
        """What the manifest says of split ``name``, or :class:`UserError` for a split it lacks."""
        if name not in self.manifest.splits:
            raise UserError(f"{self.path}: no split '{name}' (has: {', '.join(self.splits)})")
        return self.manifest.splits[name]


def too_long(src_sizes: np.ndarray, tgt_sizes: np.ndarray, max_len: int) -> int:
    """The pairs, neither side empty, with a side over ``max_len`` (0: none), which training leaves out."""
    if not max_len:
        return 0
    src, tgt = np.asarray(src_sizes), np.asarray(tgt_sizes)
    return int(((src > 0) & (tgt > 0) & ((src > max_len) | (tgt > max_len))).sum())
