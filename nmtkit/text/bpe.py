"""Subword units: byte-pair encoding through subword-nmt (Sennrich et al. 2016), or
SentencePiece (Kudo and Richardson 2018; unigram or BPE) through ``sentencepiece``.

Either way the "codes" are one string, so that the vocabulary directory, the
corpus directory and the checkpoint carry them alike: subword-nmt's codes
file, or a SentencePiece model behind a one-line header (base64). Both run on
Moses tokens: BPE marks a word that continues with ``@@``, SentencePiece
marks a word's start with ``▁``. :func:`learn_codes` takes token counts
(subword-nmt's dictionary input) so that learning needs no second pass over
the corpus; :func:`learn_sentencepiece` reads the lines.
"""

from __future__ import annotations

import base64
import io
import itertools
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sized
from pathlib import Path
from typing import Any

import subword_nmt.learn_bpe as _learn
from subword_nmt.apply_bpe import BPE

from ..core.console import log, progress
from ..core.errors import UserError
from .settings import SPM_KINDS

SEPARATOR = "@@"
_JOIN = re.compile(re.escape(SEPARATOR) + r"( |$)")
SPM_MARK = "\u2581"  # SentencePiece's word-start mark
# The word a model writes for one outside its vocabulary, as translate writes it: read back (rescore,
# a --prefix, a source), it stays one token, the unknown word's, not Moses' '< unk >' or BPE's pieces.
UNKNOWN = "<unk>"
SPM_HEADER = "#nmtkit-sentencepiece"


def learn_codes(counts: Counter[str], merges: int, min_frequency: int = 2, name: str = "") -> str:
    """Learn ``merges`` BPE operations from token counts; return the codes file's text. ``name``:
    the language the log names, where each has its own codes."""
    if not any(len(w) > 1 for w in counts):  # subword-nmt's max() of no pair: a traceback
        raise UserError(
            f"--bpe {merges}: every word of the training text{f' of {name}' if name else ''} is one symbol, so no "
            "merge to learn: leave --bpe out (words)"
        )
    vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in counts.most_common()))
    out = io.StringIO()
    # subword-nmt's own bar is tqdm's, drawn even into pipes and logs, and its API has no switch or
    # callback for it (verbose only adds a line a merge): ours takes the module's name (tests/test_text.py)
    _learn.tqdm = _merges_bar
    _learn.sys = _Quiet()  # its own line when it stops early went past -q: ours below
    _learn.learn_bpe(vocab, out, merges, min_frequency=min_frequency, is_dict=True)
    codes = out.getvalue()
    learned = codes.count("\n") - codes.startswith("#version")
    if not learned:  # subword-nmt stops at codes without a merge, with its own message and status 1
        raise UserError(
            f"--bpe {merges}: no pair of symbols occurs {min_frequency} times in the training text"
            f"{f' of {name}' if name else ''}, so no merge to learn: give more text, or leave --bpe out (words)"
        )
    if learned < merges:
        log(
            f"learned {learned:,} BPE merges{f' for {name}' if name else ''} of the {merges:,} asked: "
            f"no pair is left {min_frequency} times or more"
        )
    return codes


class _Quiet:
    """subword-nmt's learn_bpe module's ``sys``: the process's, but for a stderr that drops what it
    writes (not the process's own, which our progress bar draws on: redirecting that hid it)."""

    @property
    def stderr(self) -> io.StringIO:
        return io.StringIO()  # a fresh one each write: kept nowhere

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


def _merges_bar(steps: Iterable[int], *_: Any, **__: Any) -> Iterator[int]:
    # subword-nmt hands range(--bpe) over: counted, never listed, as --bpe may be past what memory holds
    try:
        total: int | None = len(steps) if isinstance(steps, Sized) else None
    except OverflowError:  # range(2**63) and past: no length Python can hold
        total = None
    with progress("merges") as bar:
        task = bar.add_task("learning BPE", total=total)
        for step in steps:
            yield step
            bar.advance(task)


def learn_sentencepiece(lines: Iterable[str], size: int, kind: str) -> str:
    """A SentencePiece model of ``size`` pieces (fewer if the text has fewer) over Moses-token
    lines, as a codes string."""
    import sentencepiece as spm

    if kind not in SPM_KINDS:
        raise ValueError(f"unknown SentencePiece model type '{kind}'")
    model = io.BytesIO()
    stopped: list[BaseException] = []

    def read() -> Iterator[str]:  # what stopped the reading (Ctrl-C, SIGTERM), which SentencePiece wraps
        try:
            yield from lines
        except BaseException as err:
            stopped.append(err)
            raise

    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=read(),
            model_writer=model,
            vocab_size=size,
            model_type=kind,
            character_coverage=1.0,
            hard_vocab_limit=False,
            minloglevel=2,
            num_threads=1,
        )
    except RuntimeError as err:  # its own checks of the settings against the text: the reason follows its C++ place
        if stopped:  # a RuntimeError that names the line the signal met: the signal's own end instead
            raise stopped[0] from None
        why = ". ".join(str(err).strip().splitlines()[-1].rsplit("] ", 1)[-1].split(". ")[:2])  # not its own flags
        raise UserError(f"--spm-size {size}: SentencePiece refuses it ({why[:160]})") from None
    return f"{SPM_HEADER} {kind}\n" + base64.b64encode(model.getvalue()).decode("ascii") + "\n"


def is_sentencepiece(codes: str) -> bool:
    return codes.startswith(SPM_HEADER)


def read_codes(path: Path) -> str:
    """The subword codes in the file ``path``, or :class:`UserError` (one line) for one that is
    not UTF-8 or a BPE line subword-nmt would stop at with its own message and status 1."""
    try:
        codes = path.read_text(encoding="utf-8").removeprefix("\ufeff")  # an editor's mark, else a merge
    except UnicodeDecodeError:
        raise UserError(f"{path}: not subword codes (not UTF-8 text)") from None
    if is_sentencepiece(codes):
        return codes
    if not codes.strip():
        raise UserError(f"{path}: is empty, where BPE codes were expected")
    lines = codes.rstrip("\n").split("\n")
    if found := _not_a_merge(lines):
        n, line = found
        raise UserError(f"{path}: line {n} is not a BPE merge, two subword units with a space between ({line[:40]!r})")
    if not _merges(lines):
        raise UserError(f"{path}: BPE codes without a merge (subword-nmt stops at them)")
    # a vocabulary's 'unit count' lines read as merges too, and segmented every word into letters
    if not lines[0].startswith("#version") and all(line.split(" ")[1].strip().isdigit() for line in lines):
        raise UserError(f"{path}: a vocabulary ('unit count' lines), not BPE codes: give build-vocab's bpe.codes")
    return codes


def _merges(lines: list[str]) -> int:
    return sum(1 for n, line in enumerate(lines, 1) if line.strip() and not (n == 1 and line.startswith("#version")))


def _not_a_merge(lines: list[str]) -> tuple[int, str] | None:
    """The first line (numbered from 1) that subword-nmt would stop at with its own message and
    status 1, as it reads them."""
    for n, line in enumerate(lines, 1):
        if not (n == 1 and line.startswith("#version")) and len(line.strip("\r\n ").split(" ")) != 2:
            return n, line
    return None


class Segmenter:
    """Applies subword codes (BPE or SentencePiece) to token lists."""

    def __init__(self, codes: str):
        self._bpe: Any = None
        self._spm: Any = None
        if is_sentencepiece(codes):
            import sentencepiece as spm

            try:
                proto = base64.b64decode(codes.split("\n", 1)[1].strip(), validate=True)
                self._spm = spm.SentencePieceProcessor(model_proto=proto)
            except (IndexError, ValueError, RuntimeError) as err:  # binascii.Error is a ValueError
                raise UserError(f"SentencePiece codes that are damaged ({str(err).splitlines()[0][:120]})") from None
        else:  # a checkpoint's or a data-bin's, which read_codes never saw
            lines = codes.rstrip("\n").split("\n")
            if found := _not_a_merge(lines):
                n, line = found
                raise UserError(f"the BPE codes it carries are damaged (line {n}: {line[:40]!r} is not a merge)")
            if not _merges(lines):
                raise UserError("the BPE codes it carries hold no merge (damaged)")
            self._bpe = BPE(io.StringIO(codes), separator=SEPARATOR)

    @property
    def sentencepiece(self) -> bool:
        return self._spm is not None

    def segment(self, tokens: list[str]) -> list[str]:
        """The units of Moses tokens, the unknown word's token (:data:`UNKNOWN`) kept whole: read
        back from a translation, it is the word the model wrote, wherever the text is segmented
        (translation, a data-bin, ``tokenize --bpe-codes``)."""
        if UNKNOWN not in tokens:
            return self._units(tokens)
        out: list[str] = []
        for unknown, group in itertools.groupby(tokens, key=lambda t: t == UNKNOWN):
            run = list(group)
            out += run if unknown else self._units(run)
        return out

    def _units(self, tokens: list[str]) -> list[str]:
        if self._spm is not None:
            return [str(p) for p in self._spm.encode(" ".join(tokens), out_type=str)] if tokens else []
        return list(self._bpe.segment_tokens(tokens))


UnitKinds = tuple[bool | None, bool | None]
"""Whether a pair's source and target units are SentencePiece's (True) or not (False: BPE's, or
whole words), as their codes say; None where unknown: guessed from the units."""

GUESSED: UnitKinds = (None, None)


def merge_subwords(tokens: list[str], sentencepiece: bool | None = None) -> list[str]:
    """Undo the subwords: ``['Éter@@', 'nel']`` or ``['▁Éter', 'nel']`` → ``['Éternel']`` (a
    dangling BPE separator is dropped). ``sentencepiece``: which units they are, where the codes
    say it; None: SentencePiece's where a unit starts with ``▁`` (which a BPE unit of text that
    holds one does too: its sentence's words then ran together)."""
    if is_spm_units(tokens, sentencepiece):
        return "".join(tokens).replace(SPM_MARK, " ").split()
    return _JOIN.sub("", " ".join(tokens)).split()


def word_of(units: list[str], i: int, sentencepiece: bool | None = None) -> str:
    """The whole word that unit ``i`` is part of, its subwords merged: ``['Beth@@', 'lehem']``, 1 →
    ``'Bethlehem'`` (the unit itself where nothing is left of it merged: a lone ``▁`` or ``@@``).
    ``sentencepiece``: which units they are, as :func:`merge_subwords` takes it."""
    spm = is_spm_units(units, sentencepiece)
    word = units[word_start(units, i, spm) : word_end(units, i, spm) + 1]
    return "".join(merge_subwords(word, spm)) or units[i]


def word_end(units: list[str], i: int, sentencepiece: bool | None = None) -> int:
    """Where the word of unit ``i`` ends among ``units``: the index of its last unit."""
    if is_spm_units(units, sentencepiece):
        while i + 1 < len(units) and not _spm_starts_word(units, i + 1):
            i += 1
        return i
    while i + 1 < len(units) and units[i].endswith(SEPARATOR):
        i += 1
    return i


def word_start(units: list[str], i: int, sentencepiece: bool | None = None) -> int:
    """Where the word of unit ``i`` begins among ``units`` (BPE's ``@@``, or SentencePiece's ``▁``)."""
    if is_spm_units(units, sentencepiece):
        while i > 0 and not _spm_starts_word(units, i):
            i -= 1
        return i
    while i > 0 and units[i - 1].endswith(SEPARATOR):
        i -= 1
    return i


def is_spm_units(units: list[str], sentencepiece: bool | None = None) -> bool:
    """The units' kind as the codes say it; where unknown, guessed: SentencePiece's where a unit
    starts with ``▁`` (a BPE unit of text that holds one does too)."""
    return any(u.startswith(SPM_MARK) for u in units) if sentencepiece is None else sentencepiece


def _spm_starts_word(units: list[str], i: int) -> bool:
    # the unknown word is kept one unit, without a mark (text.pipeline): a word of its own
    return units[i].startswith(SPM_MARK) or units[i] == UNKNOWN or (i > 0 and units[i - 1] == UNKNOWN)
