"""What can be read twice and what only as it comes; standard input that the shell redirected from
a regular file (``nmtkit translate < test.en``) is of the first kind.

Such an input is read as a named file is: counted first, so that its
length is known and its text checked before any result, then read whole in
sorted batches under a progress bar. Each opening starts where the file stood
when the command first looked at it, which is not always its first byte
(``{ head -1; nmtkit translate; } < f`` leaves the rest of ``f``).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import stat
import sys
import weakref
from pathlib import Path
from typing import IO

from .errors import UserError

STDIO = "-"  # stdin or stdout, where a path is asked for

# the offset each stdin object was found at, kept per object: in-process callers (tests, click's
# runner) swap sys.stdin, and a swapped one is not the file the offset was read from
_starts: weakref.WeakKeyDictionary[IO[bytes], int | None] = weakref.WeakKeyDictionary()


def stdin_start() -> int | None:
    """The offset at which a regular file on stdin begins for this command; None when stdin is a
    pipe, a terminal, a device, closed, or an object without a descriptor."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        return None
    try:
        if stdin not in _starts:
            _starts[stdin] = _regular_offset(stdin)
        return _starts[stdin]
    except TypeError:  # an object that takes no weak reference: not a file's
        return None


def rewound_stdin() -> IO[bytes]:
    """stdin's bytes from where they began: read afresh at each opening when stdin is a file."""
    stdin: IO[bytes] = sys.stdin.buffer
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):  # no descriptor: bytes in memory
        if fcntl.fcntl(stdin.fileno(), fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            raise UserError("stdin is open for writing only (0>FILE): give the input as a file, or redirect it with <")
    start = stdin_start()
    if start is not None:
        stdin.seek(start)
    return stdin


def _regular_offset(stdin: IO[bytes]) -> int | None:
    try:
        if not stat.S_ISREG(os.fstat(stdin.fileno()).st_mode) or not stdin.seekable():
            return None
        return stdin.tell()
    except (OSError, ValueError, io.UnsupportedOperation):  # closed, or no descriptor
        return None


def is_stream(path: str | Path) -> bool:
    """Whether ``path`` can be read only once, as it comes: a pipe, a FIFO, ``<(…)``, a terminal,
    stdin ('-') on any of those. A regular file (or a missing one, refused when it is opened) can be
    read twice, on stdin too."""
    if str(path) == STDIO:
        return stdin_start() is None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def names_descriptor(path: str | Path, fd: int) -> bool:
    """Whether ``path`` is '-' or another name of this process's descriptor ``fd`` (/dev/stdin,
    /dev/fd/0, /proc/self/fd/1, or the file the shell redirected it to)."""
    if str(path) == STDIO:
        return True
    try:
        named, opened = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
