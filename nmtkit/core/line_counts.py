"""Line counts of text files, and parallel files checked to have the same: before any work,
so that a command fails before its first result, naming the lines without a partner."""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
from pathlib import Path

from .errors import UserError
from .files import display_name, open_binary, read_lines
from .streams import STDIO, is_stream
from .wording import counted


def count_lines(path: str | Path, *, utf8: bool = False) -> int:
    """Number of lines, counting a last line without a newline; with ``utf8``, the text checked
    too, so that a command streaming its results to stdout fails before the first of them."""
    stream = open_binary(path)
    decoder = codecs.getincrementaldecoder("utf-8")() if utf8 else None
    with contextlib.nullcontext(stream) if str(path) == STDIO else stream:  # stdin is read again
        n, last = 0, b"\n"
        while block := stream.read(1 << 20):
            if decoder is not None:
                _decoded(decoder, block, path)
            n += block.count(b"\n")
            last = block[-1:]
        if decoder is not None:
            _decoded(decoder, b"", path, final=True)
        return n + (last != b"\n")


def _decoded(decoder: codecs.IncrementalDecoder, block: bytes, path: str | Path, final: bool = False) -> None:
    try:
        decoder.decode(block, final=final)
    except UnicodeDecodeError:
        if is_stream(path):  # a stream cannot be read again for the line
            raise UserError(f"{display_name(path)}: not valid UTF-8") from None
        for _ in read_lines(path, allow_empty=True):  # names the line and the byte
            pass


def check_parallel(paths: list[Path]) -> int:
    """Line count shared by parallel files; names the first line without a partner. A pipe is
    refused (:func:`refuse_streams`): counting its lines reads it."""
    refuse_streams(paths)
    counts = [count_lines(p) for p in paths]
    for k, p in enumerate(paths):  # a link made for the other side: a corpus of each line paired with itself
        if same := next((q for q in paths[:k] if _identity(p) == _identity(q)), None):
            raise UserError(f"{p} and {same} are one file: the sides of a parallel corpus are two")
    for p, n in zip(paths, counts):
        if n == 0:
            raise UserError(f"{p}: is empty")
    if len(set(counts)) > 1:
        detail = ", ".join(f"{p} has {counted(n, 'line')}" for p, n in zip(paths, counts))
        short, long = min(counts), max(counts)
        which = f"line {long} has" if long == short + 1 else f"lines {short + 1}-{long} have"
        raise UserError(f"parallel files differ in length ({detail}): {which} no partner")
    return counts[0]


def _identity(path: Path) -> tuple[int, int]:
    """The device and inode of a file, of stdin's for '-'."""
    found = os.fstat(sys.stdin.fileno()) if str(path) == STDIO else os.stat(path)
    return found.st_dev, found.st_ino


def refuse_streams(paths: list[Path]) -> None:
    """Refuse, in one line, a pipe or a device among files a command reads more than once: its second
    reading would wait for ever on a pipe no one writes again."""
    for p in paths:
        if is_stream(p):
            raise UserError(
                f"{display_name(p)}: a pipe or a device, which this command would read more than once: write it to "
                "a file first (zcat train.en.gz > train.en)"
            )


def check_parallel_prefix(prefix: str | Path, langs: tuple[str, str] | list[str]) -> int:
    """:func:`check_parallel` of ``prefix.<lang>`` for each language; a prefix given with a
    language's suffix (``--valid raw/dev.fr`` for ``raw/dev``) is named as such, not as a
    missing ``raw/dev.fr.fr``."""
    paths = [Path(f"{prefix}.{lang}") for lang in langs]
    missing = next((p for p in paths if not p.exists()), None)
    if missing is not None and Path(prefix).is_file():
        bare = next((str(prefix)[: -len(lang) - 1] for lang in langs if str(prefix).endswith(f".{lang}")), None)
        if bare:
            raise UserError(
                f"{missing}: no such file ({prefix} is a file: give the prefix {bare}, "
                f"which reads {' and '.join(f'{bare}.{lang}' for lang in langs)})"
            )
    return check_parallel(paths)


def check_line_map(prefix: str | Path, n: int) -> None:
    """preprocess's raw line numbers (``prefix.lines``), where it wrote them, one a sentence of the
    ``n``: text changed after preprocess (another command's output written over it, an edit) is
    said before a vocabulary or a data-bin is built on it."""
    src = Path(f"{prefix}.lines")
    if src.exists() and (have := count_lines(src)) != n:
        raise UserError(f"{src}: has {have:,} lines for {n:,} sentences; re-run preprocess")
