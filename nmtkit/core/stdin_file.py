"""Standard input that the shell redirected from a regular file (``nmtkit translate < test.en``).

Such an input can be read twice, as a named file can: counted first, so that its
length is known and its text checked before any result, then read whole in
sorted batches under a progress bar. Each opening starts where the file stood
when the command first looked at it, which is not always its first byte
(``{ head -1; nmtkit translate; } < f`` leaves the rest of ``f``).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import weakref
from typing import IO

# the offset each stdin object was found at, kept per object: in-process callers (tests, click's
# runner) swap sys.stdin, and a swapped one is not the file the offset was read from
_starts: weakref.WeakKeyDictionary[IO[bytes], int | None] = weakref.WeakKeyDictionary()


def stdin_start() -> int | None:
    """The offset at which a regular file on stdin begins for this command; None when stdin is a
    pipe, a terminal, a device, closed, or an object without a descriptor."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        return None
    if stdin not in _starts:
        _starts[stdin] = _regular_offset(stdin)
    return _starts[stdin]


def rewound_stdin() -> IO[bytes]:
    """stdin's bytes from where they began: read afresh at each opening when stdin is a file."""
    stdin: IO[bytes] = sys.stdin.buffer
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
