"""Glossaries (``translate --glossary FILE``): a term's translation held by every output whose
source holds the term.

A glossary is a file of ``source term<TAB>target term`` lines (blank lines skipped). Each input
line's source terms are found among its subword units as the model reads them (the source
side's cleaning, Moses tokenization and BPE applied to the term as to the line), as whole
words: "terre" is not found in "parterre". The target terms of the terms found become that
line's constraints, beside those of ``--constraints`` (:mod:`.constraints`); a target term
is taken once, however many of its source terms the line holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.console import log
from ..core.errors import UserError
from ..core.files import display_name, read_lines
from ..data.vocab import UNK
from ..text.bpe import SEPARATOR, SPM_MARK, word_start

if TYPE_CHECKING:
    from ..data.sides import Sides

Terms = tuple[tuple[str, str], ...]  # (source term, target term), in the file's order


def read_glossary(path: str | Path) -> Terms:
    """The terms of a glossary file, or :class:`UserError` naming its first bad line."""
    terms: dict[str, tuple[int, str]] = {}
    for k, line in enumerate(read_lines(path, allow_empty=True), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.rstrip("\t ").split("\t")]  # a spreadsheet's trailing tabs
        if len(fields) != 2 or not all(fields):
            raise UserError(f"{display_name(path)}: line {k}: a glossary line is a source term, a tab, its translation")
        if fields[0] in terms:
            first, name = terms[fields[0]][0], display_name(path)
            log(f"warning: {name}: line {k}: {fields[0]!r} is line {first}'s term too: line {first}'s translation kept")
            continue
        terms[fields[0]] = (k, fields[1])
    if not terms:
        raise UserError(f"{display_name(path)}: holds no terms")
    return tuple((source, target) for source, (_, target) in terms.items())


class Glossary:
    """The terms of a glossary as a model's source side reads them, looked up by their first
    unit. A term whose translation has a unit out of the target vocabulary is left out with a
    warning, once: no output could hold it."""

    def __init__(self, terms: Terms, sides: Sides, tokenized: bool = False, quiet: bool = False):
        # a term left out is kept without its translation: a glossary under this one
        # (:class:`Overlaid`) gives its words none either
        self.by_first: dict[str, list[tuple[list[str], str | None]]] = {}
        self.left_out: list[str] = []  # why each term left out was, one line each (logged unless quiet)
        tgt, self.kept = sides.tgt, []  # the source terms kept
        self.marks = sides.src.text.sentencepiece  # a word begins with ▁, as the codes say
        for source, target in terms:
            held: str | None = target
            forms = self._forms(source, sides, tokenized)
            units = tgt.tokens(target, tokenized)
            # a translation of invisible characters alone (U+200B) would constrain nothing: said,
            # as one out of the vocabulary is
            wrong = "is no word once tokenized" if not units else "has a unit out of the target vocabulary"
            if not forms:
                self._leave_out(f"glossary: the term {source!r} is no word once tokenized: left out", quiet)
            elif not units or UNK in tgt.ids(units):
                self._leave_out(f"glossary: {source!r}: its translation {target!r} {wrong}: left out", quiet)
                held = None
            for units in forms:
                self.by_first.setdefault(units[0], []).append((units, held))
            if forms and held is not None:
                self.kept.append(source)

    def _leave_out(self, why: str, quiet: bool) -> None:
        self.left_out.append(why)
        if not quiet:
            log(f"warning: {why}")

    @property
    def size(self) -> int:
        """The terms kept."""
        return len(self.kept)

    def _forms(self, source: str, sides: Sides, tokenized: bool) -> list[list[str]]:
        """A term's units at a line's end and within a line, where they differ: Moses splits a
        stop off a line's last word only ("etc." ends a line as "etc .", and stays "etc." before
        a word)."""
        last = sides.src.tokens(source, tokenized)
        if tokenized or not last:
            return [last] if last else []
        within = sides.src.tokens(f"{source} x", tokenized)  # then a lowercase word, whatever its units
        within = within[: word_start(within, len(within) - 1, sides.src.text.sentencepiece)]
        return [last] if not within or within == last else [last, within]

    def targets(self, units: list[str]) -> list[str]:
        """The translations of the terms that ``units`` (a line's source units) hold as whole
        words, in the order they are found, each once: from left to right, the longest term that
        begins at a unit, then on after its end (with "the land" and "land", "the land" alone)."""
        return _once(target for _, _, target in self.spans(units))

    def spans(
        self, units: list[str], taken: frozenset[int] = frozenset(), left_out: bool = False
    ) -> list[tuple[int, int, str | None]]:
        """Where :meth:`targets` finds each term (units i..j-1) and its translation, none over the
        units ``taken``; with the terms ``left_out`` too (their translation None)."""
        found: list[tuple[int, int, str | None]] = []
        i = 0
        while i < len(units):
            fits = [t for t in self.by_first.get(units[i], ()) if units[i : i + len(t[0])] == t[0]]
            fits = [t for t in fits if (left_out or t[1] is not None) and self._word(units, i, i + len(t[0]))]
            fits = [t for t in fits if taken.isdisjoint(range(i, i + len(t[0])))]
            if not fits:
                i += 1
                continue
            term, target = max(fits, key=lambda t: len(t[0]))
            found.append((i, i + len(term), target))
            i += len(term)
        return found

    def _word(self, units: list[str], i: int, j: int) -> bool:
        """Whether units i..j-1 begin and end at word edges."""
        if self.marks:  # a word begins with ▁
            return units[i].startswith(SPM_MARK) and (j == len(units) or units[j].startswith(SPM_MARK))
        return (i == 0 or not units[i - 1].endswith(SEPARATOR)) and not units[j - 1].endswith(SEPARATOR)


class Overlaid:
    """A glossary over another (a request's over a server's): its terms are found first, and the
    other's only where they overlap none of them, its terms left out included: its translation of
    a word is the one held, even where the other has a longer term around it, and none is where
    it left its own out."""

    def __init__(self, top: Glossary, under: Glossary):
        self.top, self.under = top, under

    def targets(self, units: list[str]) -> list[str]:
        first = self.top.spans(units)
        taken = frozenset(k for i, j, _ in [*first, *self.top.spans(units, left_out=True)] for k in range(i, j))
        return _once(t for _, _, t in [*first, *self.under.spans(units, taken)])


def _once(targets: Iterable[str | None]) -> list[str]:
    """The translations found, each once, in order; those left out (None) dropped."""
    return list(dict.fromkeys(t for t in targets if t is not None))


def with_terms(
    constraints: list[list[str]] | None, sources: list[list[str]], glossary: Glossary | Overlaid
) -> list[list[str]]:
    """Each line's constraints (None: none) and the translations of its glossary terms, each
    phrase once."""
    given = constraints or [[] for _ in sources]
    return [musts + [t for t in glossary.targets(units) if t not in musts] for musts, units in zip(given, sources)]


class Glossaries:
    """The glossaries a translator is asked to use, each read as its model's sides read text
    once: a server or a file's blocks use one again and again."""

    def __init__(self, sides: Sides):
        self.sides = sides
        self.built: dict[tuple[Terms, bool], Glossary] = {}

    def of(self, terms: Terms, tokenized: bool) -> Glossary:
        key = (terms, tokenized)
        if key not in self.built:
            self.built[key] = Glossary(terms, self.sides, tokenized)
        return self.built[key]
