"""The hidden siblings that outputs are written as before their rename (:func:`~.files.atomic_write`,
:class:`~.staging.Staging`): their names, which say the host and process that made them, and the
removal of those whose process has died (a SIGKILL leaves them; nothing else would)."""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import os
import re
import socket
from pathlib import Path

HOST = re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname()) or "host"
_NAME_MAX = 255  # bytes of a file's name, on Linux's file systems
_WHOLE = 120  # bytes of a name kept whole in its temporary's name, which adds the host, the pid and a suffix


def stem(name: str) -> str:
    """``name`` as its temporary sibling's name holds it: whole, or, past ``_WHOLE`` bytes (a name
    of 232 was refused as too long), its start and a hash of the whole."""
    raw = os.fsencode(name)
    if len(raw) > _NAME_MAX:  # said before any work, not by the rename after it
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), name)
    if len(raw) <= _WHOLE:
        return name
    start = name
    while len(os.fsencode(start)) > _WHOLE - 20:
        start = start[:-1]
    return f"{start}-{hashlib.sha256(raw).hexdigest()[:12]}"


def temporary_prefix(name: str, kind: str = "") -> str:
    """The start of a temporary sibling's name for ``name`` (``kind``: staging's ``staging`` or ``old``)."""
    return f".{stem(name)}.{kind + '-' if kind else ''}{HOST}-{os.getpid()}-"


def remove_stale_temporaries(directory: Path, of: str | None = None) -> None:
    """Remove the temporary files of :func:`~.files.atomic_write` left in ``directory`` by dead
    processes: all of them, or those ``of`` one file name."""
    pattern = re.compile(rf"\..+\.{HOST}-(\d+)-[^.]*\.tmp$")
    entries = directory.glob(f".{glob.escape(stem(of))}.{HOST}-*.tmp") if of else directory.iterdir()
    for entry in entries if directory.is_dir() else ():
        match = pattern.match(entry.name)
        if match and not alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
