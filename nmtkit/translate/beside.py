"""Lines given beside the input's, one per input line: ``translate --prefix``'s and ``--constraints``'."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Generic, TypeVar

from ..core.errors import UserError

T = TypeVar("T")


class LinesBeside(Generic[T]):
    """Lines given beside the input's (``--prefix``'s, ``--constraints``'; None: none), handed
    out block by block: one per input line, and exactly as many (a shortfall or an excess
    refused in one line naming ``flag``)."""

    def __init__(self, lines: Iterable[T] | None, flag: str = "--prefix"):
        self.lines, self.flag = (None if lines is None else iter(lines)), flag

    def take(self, n: int) -> list[T] | None:
        if self.lines is None:
            return None
        got = list(itertools.islice(self.lines, n))
        if len(got) < n:
            raise UserError(f"{self.flag} has fewer lines than the input")
        return got

    def finish(self) -> None:
        if self.lines is not None and next(self.lines, None) is not None:
            raise UserError(f"{self.flag} has more lines than the input")
