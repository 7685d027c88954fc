"""Lines of a pipe or a terminal as they arrive: a filter answers a line typed at once, and takes
a piped file in large blocks, gathered while its writer is ahead of the reading."""

from __future__ import annotations

import io
import select
from collections.abc import Iterator
from typing import IO

from .errors import UserError
from .files import BOM, decode_line, display_name
from .streams import STDIO

_MARK = BOM.encode()


class ArrivingLines:
    """Complete lines of ``stream`` (named ``name`` in errors) as soon as they are readable: what
    one read returns (``read1`` makes at most one system call, so it returns what a pipe or a
    terminal has now), with what further reads return at once, up to :attr:`most` lines, which a
    reader may change as it goes. The lines before one that is not UTF-8 come out before its
    error."""

    def __init__(self, stream: IO[bytes], name: str = STDIO, most: int = 1000, size: int = 1 << 16):
        self.stream, self.name, self.most, self.size = stream, name, most, size

    def __iter__(self) -> Iterator[list[str]]:
        read = getattr(self.stream, "read1", self.stream.read)
        parts: list[bytes] = []  # the line being read, in parts: joined once, however long it is
        lines: list[str] = []
        lineno = 0

        def decoded(raws: list[bytes]) -> Iterator[list[str]]:
            nonlocal lineno
            for raw in raws:
                lineno += 1
                try:
                    lines.append(decode_line(raw, self.name, lineno).rstrip("\r"))
                except UserError:
                    if lines:
                        yield lines
                    raise

        while block := read(self.size):
            *complete, rest = block.split(b"\n")
            if complete:
                complete[0], parts = b"".join([*parts, complete[0]]), []
                yield from decoded(complete)
            if rest:
                parts.append(rest)
            if lines and (len(lines) >= self.most or not _ready(self.stream)):
                yield lines
                lines = []
        last = b"".join(parts)
        if last and not (lineno == 0 and last == _MARK):  # a mark alone, no newline: an empty input's
            yield from decoded([last])
        if lines:
            yield lines
        if lineno == 0:
            raise UserError(f"{display_name(self.name)}: is empty")


def _ready(stream: IO[bytes]) -> bool:
    """Whether a read of ``stream`` would return at once: its writer is ahead, or it has ended."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):  # bytes in memory: always at hand
        return True
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False
