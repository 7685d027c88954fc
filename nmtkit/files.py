"""Streams, strict UTF-8 line reading, atomic outputs and fingerprints.

Named ``files`` rather than ``io`` so that running a module from inside the
package never shadows the standard library's ``io``.

Every output goes to a temporary name beside its destination and is renamed
only when complete, so an interrupted or failed command never leaves a
half-written file where a later step (or make) would take it for finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from .errors import UserError

STDIO = "-"


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIO else str(path)


def open_binary(path: str | Path) -> IO[bytes]:
    if str(path) == STDIO:
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a text file") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied") from None


def decode_line(raw: bytes, path: str | Path, lineno: int) -> str:
    """Decode one line strictly; the error names the file, line and byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[err.start:err.start + 1].hex()
        raise UserError(
            f"{display_name(path)}: line {lineno} is not valid UTF-8 "
            f"(byte 0x{bad} at byte offset {err.start})"
        ) from None


def read_lines(path: str | Path, *, allow_empty: bool = False) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (or stdin for '-') without their newline.

    Raises :class:`UserError` for a missing file, an empty file (unless
    ``allow_empty``) and invalid UTF-8, naming the line.
    """
    stream = open_binary(path)
    try:
        lineno = 0
        for lineno, raw in enumerate(stream, 1):
            yield decode_line(raw, path, lineno).rstrip("\r\n")
        if lineno == 0 and not allow_empty:
            raise UserError(f"{display_name(path)}: is empty")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def count_lines(path: str | Path) -> int:
    """Number of lines, counting a last line without a newline."""
    stream = open_binary(path)
    with stream:
        n, last = 0, b"\n"
        while block := stream.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
        return n + (last != b"\n")


def check_parallel(paths: list[Path]) -> int:
    """Line count shared by parallel files; names the first line without a partner."""
    counts = [count_lines(p) for p in paths]
    for p, n in zip(paths, counts):
        if n == 0:
            raise UserError(f"{p}: is empty")
    if len(set(counts)) > 1:
        detail = ", ".join(f"{p} has {n}" for p, n in zip(paths, counts))
        short = min(counts)
        raise UserError(
            f"parallel files differ in length ({detail} lines): "
            f"lines {short + 1}-{max(counts)} have no partner"
        )
    return counts[0]


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs should look like any other file
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Staging:
    """A hidden directory inside ``dest`` where a command writes all its outputs.

    ``commit()`` moves every file into ``dest`` (each move is a rename on the
    same filesystem); leaving the ``with`` block by an exception removes the
    staging directory, so a failed run adds nothing to ``dest``.
    """

    def __init__(self, dest: str | Path):
        self.dest = Path(dest)
        if self.dest.exists() and not self.dest.is_dir():
            raise UserError(f"{self.dest}: exists and is not a directory")
        self.dest.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.dest))
        os.chmod(self.dir, 0o777 & ~_umask())

    def path(self, name: str) -> Path:
        return self.dir / name

    def commit(self, last: tuple[str, ...] = ()) -> None:
        """Move staged files into place; names in ``last`` go last (e.g. a manifest)."""
        names = sorted(p.name for p in self.dir.iterdir())
        for name in [n for n in names if n not in last] + [n for n in last if n in names]:
            os.replace(self.dir / name, self.dest / name)
        self.dir.rmdir()

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def fingerprint(obj: Any) -> str:
    """sha256 of a JSON-serialisable value in canonical form."""
    return sha256_text(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def write_json(path: str | Path, obj: Any) -> None:
    with atomic_write(path) as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False, sort_keys=False)
        fh.write("\n")


def read_json(path: str | Path, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file ({what})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not a valid {what} ({err})") from None
