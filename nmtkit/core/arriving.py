"""Lines of a pipe or a terminal as they arrive: whatever complete lines one read returns (a line
typed, or up to 64 KiB of a pipe), so that a filter answers a line typed at once and still takes a
piped file in large batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from .errors import UserError
from .files import STDIO, decode_line, display_name


def arriving_lines(stream: IO[bytes], name: str = STDIO, size: int = 1 << 16) -> Iterator[list[str]]:
    """Complete lines of ``stream`` (named ``name`` in errors) as soon as they are readable: one
    list per read that ends a line. ``read1`` makes at most one system call, so it returns what a
    pipe or terminal has now."""
    pending, lineno = b"", 0
    read = getattr(stream, "read1", stream.read)
    while block := read(size):
        pending += block
        *complete, pending = pending.split(b"\n")
        if complete:
            lines = [decode_line(raw, name, lineno + k).rstrip("\r") for k, raw in enumerate(complete, 1)]
            lineno += len(lines)
            yield lines
    if pending:
        lineno += 1
        yield [decode_line(pending, name, lineno).rstrip("\r")]
    if lineno == 0:
        raise UserError(f"{display_name(name)}: is empty")
