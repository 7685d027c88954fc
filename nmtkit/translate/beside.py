"""Lines given beside the input's, one per input line: ``translate --prefix``'s and ``--constraints``'."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from ..core.errors import UserError
from ..core.wording import counted

T = TypeVar("T")
_END = object()


def refuse_non_text(lines: list[Any], first_line: int, what: str = "line") -> None:
    """Refuse, naming the first, a line that is not a str (None, bytes, a number): a caller's
    mistake that would otherwise fail deep in the text pipeline."""
    for k, line in enumerate(lines):
        if not isinstance(line, str):
            raise TypeError(f"{what} {first_line + k} is {type(line).__name__}, not str")


def refuse_non_phrases(lines: list[Any], first_line: int) -> None:
    """Refuse constraints that are not, for each line, a list of phrases (strs): one str would
    otherwise be read as phrases of one character each."""
    for k, phrases in enumerate(lines):
        if isinstance(phrases, str) or not isinstance(phrases, (list, tuple)):
            raise TypeError(
                f"the constraints of line {first_line + k} are {type(phrases).__name__}: give a list of phrases"
            )
        refuse_non_text(list(phrases), 1, f"line {first_line + k}'s constraint")


class LinesBeside(Generic[T]):
    """Lines given beside the input's (``--prefix``'s, ``--constraints``'; None: none), handed
    out block by block: one per input line, and exactly as many (a shortfall or an excess
    refused in one line naming ``flag``)."""

    def __init__(self, lines: Iterable[T] | None, flag: str = "--prefix"):
        if isinstance(lines, str):  # else each of its characters would be a line
            raise TypeError(f"{flag} takes a line per input line (a list or a file), not one str")
        self.lines, self.flag, self.taken = (None if lines is None else iter(lines)), flag, 0

    def take(self, n: int) -> list[T] | None:
        if self.lines is None:
            return None
        got = list(itertools.islice(self.lines, n))
        self.taken += len(got)
        if len(got) < n:
            raise UserError(f"{self.flag} has {counted(self.taken, 'line')}, the input more")
        return got

    def finish(self) -> None:
        if self.lines is not None and next(self.lines, _END) is not _END:
            raise UserError(f"{self.flag} has more lines than the input's {self.taken:,}")
