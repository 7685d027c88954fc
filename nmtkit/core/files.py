"""Streams, strict UTF-8 line reading, atomic outputs and fingerprints.

Named ``files`` rather than ``io``: running a module from inside the package never
shadows the standard library's ``io``.

Every output goes to a temporary name beside its destination and is renamed
only when complete (a directory of outputs likewise, through :class:`Staging`),
so an interrupted or failed command never leaves a half-written file where a
later step (or make) would take it for finished.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import io
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from .console import log
from .errors import UserError
from .streams import STDIO, is_stream, names_descriptor, rewound_stdin
from .temporaries import remove_stale_temporaries, temporary_prefix


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIO else str(path)


_GZIP_MAGIC = b"\x1f\x8b"
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def open_binary(path: str | Path) -> IO[bytes]:
    """The file (or stdin for '-'), opened to be read as bytes; a compressed or UTF-16 file is
    refused by name, rather than as bytes that are not UTF-8."""
    if str(path) == STDIO:
        if sys.stdin is None:  # started with stdin closed (<&-)
            raise UserError("stdin is closed (<&-): give the input as a file, or pipe it in")
        if sys.stdin.isatty():  # else a command typed without its input waits in silence
            log("reading the terminal: a line at a time, Ctrl-D to end (or give the input as a file)")
        stdin = rewound_stdin()
        refuse_other_encodings(stdin, STDIO)
        return stdin
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        packed = f"{path}.gz"
        if os.path.isfile(packed):
            raise UserError(f"{path}: no such file ({packed} is there: zcat {packed} > {path})") from None
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a text file") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied") from None
    try:
        refuse_other_encodings(stream, path)
    except UserError:
        stream.close()
        raise
    return stream


def _utf16_without_mark(start: bytes) -> bool:
    """Whether bytes without a byte-order mark are UTF-16's, which passes for UTF-8 where it holds
    NULs: the high byte of ASCII, of the space and of the newline in any script, all at one byte
    parity, each newline's beside it. A stray NUL in crawled UTF-8 is the cleaning's to drop."""
    even, odd = start[0::2].count(0), start[1::2].count(0)
    if (even == 0) == (odd == 0) or even + odd < 2:
        return False
    # UTF-8 that holds stray NULs: UTF-16 has a NUL every other byte for ASCII, a C0 control byte
    # every other byte for Cyrillic, Greek, Hebrew or Arabic, and is not UTF-8 for CJK
    controls = sum(1 for b in start if b < 32 and b not in (0, 9, 10, 13))
    if 3 * (even + odd) < len(start) and 100 * controls < len(start) and _is_utf8(start):
        return False
    newline = b"\n\x00" if odd else b"\x00\n"  # little-endian: the NUL after the character
    lines = [i for i in range(0, len(start) - 1, 2) if start[i : i + 2] == newline]
    return bool(lines) or b"\n" not in start


def _is_utf8(start: bytes) -> bool:
    """Whether a file's first bytes are UTF-8, the last character perhaps cut by the sample."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(start, final=False)
    except UnicodeDecodeError:
        return False
    return True


def refuse_other_encodings(stream: IO[bytes], path: str | Path) -> None:
    """One line for a stream that starts as gzip or UTF-16 does, or as no text does (NULs alone,
    or a tenth of its start: a file zeroed by a crash), read without consuming it. A stray NUL
    in text is the cleaning's to drop."""
    start = _first_bytes(stream, 4096)
    piped = str(path) == STDIO
    if start[:2] == _GZIP_MAGIC:
        how = "pipe it through zcat" if piped else f"zcat {path} > FILE"
        raise UserError(f"{display_name(path)}: gzip-compressed; nmtkit reads plain UTF-8 text ({how})")
    if start[:2] in _UTF16_MARKS or _utf16_without_mark(start):  # without a mark, iconv needs the byte order
        order = "" if start[:2] in _UTF16_MARKS else "LE" if start[1::2].count(0) > start[::2].count(0) else "BE"
        how = f"iconv -f UTF-16{order} -t UTF-8" + ("" if piped else f" {path} > FILE")
        raise UserError(f"{display_name(path)}: UTF-16 text; nmtkit reads UTF-8 ({how})")
    crs = start.count(b"\r")  # a long first line may hold a few: not 16 in 4 KiB without an LF
    if b"\n" not in start and crs >= 2 and (crs >= 16 or len(start) < 4096):  # else one line, pairs shifted
        how = "tr '\\r' '\\n'" + ("" if piped else f" < {path} > FILE")
        raise UserError(f"{display_name(path)}: its lines end in CR alone (an old Mac's); nmtkit reads LF ({how})")
    nuls = start.count(0)
    if start and (nuls == len(start) or (nuls >= 16 and nuls * 10 >= len(start))):
        raise UserError(
            f"{display_name(path)}: binary data, not text ({nuls:,} of its first {len(start):,} bytes are NUL)"
        )


def _first_bytes(stream: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes from the stream's start, left to be read: a buffered stream's peek, or a
    read and a seek back (an in-memory stream); nothing where neither is offered."""
    if hasattr(stream, "peek"):
        return bytes(stream.peek(n)[:n])
    if stream.seekable():
        at = stream.tell()
        start = stream.read(n)
        stream.seek(at)
        return start
    return b""


def decode_line(raw: bytes, path: str | Path, lineno: int) -> str:
    """Decode one line strictly; the error names the file, line and byte. The first line's byte
    order mark (Windows editors write one) goes: it marks the encoding, and left in it would be
    part of the first word, a hypothesis's that no reference holds."""
    try:
        text = raw.decode("utf-8")  # the mark with it: a bad byte's offset is where a hex editor shows it
    except UnicodeDecodeError as err:
        bad = raw[err.start : err.start + 1].hex()
        raise UserError(
            f"{display_name(path)}: line {lineno} is not valid UTF-8 (byte 0x{bad} at byte offset {err.start})"
        ) from None
    return text.removeprefix(BOM) if lineno == 1 else text


BOM = "\ufeff"  # the byte order mark, as text


def read_lines(path: str | Path, *, allow_empty: bool = False) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (or stdin for '-') without their newline.

    Raises :class:`UserError` for a missing file, an empty file (unless
    ``allow_empty``) and invalid UTF-8, naming the line.
    """
    stream = open_binary(path)
    try:
        lineno = 0
        for lineno, raw in enumerate(stream, 1):
            if lineno == 1 and raw == BOM.encode():  # a mark alone, no newline: an empty file's
                lineno = 0
                break
            yield decode_line(raw, path, lineno).rstrip("\r\n")
        if lineno == 0 and not allow_empty:
            raise UserError(f"{display_name(path)}: is empty")
    finally:
        if str(path) != STDIO:
            stream.close()


def _reads_stdin(path: str | Path) -> bool:
    # a regular file on stdin is opened afresh by any other name (/dev/stdin included): only a
    # stream is read once, by whichever input comes first
    return str(path) == STDIO or (names_descriptor(path, 0) and is_stream(path))


def _writes_stdout(path: str) -> bool:
    # stdout as /dev/null or a terminal may take any number of outputs: nothing is mixed that is kept
    if str(path) == STDIO:
        return True
    try:
        return names_descriptor(path, 1) and not stat.S_ISCHR(os.fstat(1).st_mode)
    except OSError:
        return False


def refuse_two_on_stdin(inputs: Sequence[tuple[str, str | Path | None]]) -> None:
    """One line where two inputs (each its name and path) read stdin ('-', /dev/stdin): the first
    would read it all, and the second find it empty."""
    on_stdin = [name for name, path in inputs if path is not None and _reads_stdin(path)]
    if len(on_stdin) > 1:
        both = f"two {on_stdin[0]}" if on_stdin[0] == on_stdin[1] else " and ".join(on_stdin[:2])
        raise UserError(f"{both} cannot both read stdin ('-'): give one of them a FILE")


def refuse_two_on_stdout(outputs: list[tuple[str, str | None]], flags: str) -> None:
    """One line where two outputs (each what it holds and its path) go to stdout ('-', /dev/stdout,
    the file stdout was redirected to): their lines would run into each other. ``flags``: the
    options that give them files."""
    on_stdout = [what for what, path in outputs if path is not None and _writes_stdout(path)]
    if len(on_stdout) > 1:
        raise UserError(
            f"the {' and the '.join(on_stdout)} cannot both go to stdout ('-'): give all but one a FILE ({flags})"
        )


def output_named(flag: str, path: str | None) -> tuple[str, str]:
    """An output's option and path for :func:`refuse_overwriting`, stdout where none is given: a
    filter appended to its own input (``>> in.en``) reads on, the lines it wrote, until the disk is full."""
    return (flag, path) if path else ("stdout", STDIO)


def refuse_overwriting(outputs: Sequence[tuple[str, str | None]], inputs: Sequence[tuple[str, str | None]]) -> None:
    """One line where an output (its option and path) is an input's file or another output's:
    the input would be replaced by what was made of it, or one output by the other. An input that
    is a directory (a data-bin) stands for each file in it. A path that is no regular file (stdout,
    /dev/null) may serve any number of outputs."""
    taken: dict[tuple[Any, ...], str] = {}

    def files(path: str | None) -> list[str | None]:
        if path and path != STDIO and os.path.isdir(path):
            return [str(inner) for inner in sorted(Path(path).iterdir())]
        return [path]

    inputs = [(name, inner) for name, path in inputs for inner in files(path)]

    def key(path: str, fd: int) -> tuple[Any, ...] | None:
        try:
            found = os.fstat(fd) if path == STDIO else os.stat(path)  # '-': what the shell put there
        except OSError:  # not there yet: two outputs may still name it
            return ("path", os.path.realpath(path))
        return ("file", found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) else None

    read, stdout = set(), key(STDIO, 1)
    for role, paths, fd in (("input", inputs, 0), ("output", outputs, 1)):
        for name, path in paths:
            if not path or (k := key(path, fd)) is None:
                continue
            # two outputs on stdout are refuse_two_on_stdout's to name, by what each holds
            if role == "output" and k in taken and (k in read or k != stdout):
                said = name if name == "stdout" else f"{name} {path}"  # a filter's stdout (tokenize >> its input)
                raise UserError(f"{said}: the same file as {taken[k]}: give another path")
            taken.setdefault(k, name if name == "stdout" else f"{name} {path}")
            if role == "input":
                read.add(k)


# What the system says of a path a user gave that cannot be written (no permission, a read-only or full disk, a
# file where a directory must be): the user's to fix, so one line, not a traceback. Not ENOENT, EEXIST or EISDIR
# in general: the code that knows the user's path says those itself; elsewhere they are a bug's, with its traceback.
USER_PATH_ERRORS = frozenset(  # ELOOP: a link that leads back to itself
    getattr(errno, e) for e in "ENOTDIR EACCES EPERM EROFS ENOSPC EDQUOT EFBIG ENAMETOOLONG ELOOP".split()
)


@contextlib.contextmanager
def writing_into(dest: Path) -> Iterator[None]:
    """The directory that will hold ``dest`` made, or one line saying why it cannot be: a file on
    its path, no permission, a read-only file system."""
    try:
        yield
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in (dest, *dest.parents) if p.exists() and not p.is_dir()), dest.parent)
        raise UserError(f"{dest}: cannot be written: {blocker} is a file, not a directory") from None
    except OSError as err:  # here ENOENT is the user's too: a directory that cannot be made (/proc/x)
        if not isinstance(err, FileNotFoundError) and err.errno not in USER_PATH_ERRORS:
            raise
        where = next((p for p in dest.parents if p.exists()), dest.parent)  # the directory that refused
        raise UserError(f"{dest}: cannot be written in {where} ({(err.strerror or str(err)).lower()})") from None


def refuse_empty_names(**paths: str | Path | None) -> None:
    """A library caller's ``''`` for a path refused, as the command line's options refuse it:
    ``Path('')`` is ``.``, and train(data, '') wrote a run's files into the current directory."""
    for what, given in paths.items():
        if given is not None and str(given) == "":
            raise UserError(f"{what} '' names nothing: give a directory's name ('.' for this one)")


def refuse_a_loop(link: Path) -> None:
    """A link that leads back to itself, said in one line (ELOOP): written through, it was replaced
    by a file, where ``>`` fails. A dangling link is written through."""
    with contextlib.suppress(FileNotFoundError):
        os.stat(link)


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync it, rename it over ``path`` and
    fsync the directory, so that after a crash ``path`` is the old file or the new one, whole.

    A symbolic link is written through: the file it names is the one replaced, the link kept. What
    is no regular file (a FIFO, a terminal, ``/dev/null``) is written as it is, where a rename would
    put a file in its place; ``/dev/stdout`` and the other names of an open descriptor are written
    through that descriptor, where the command's output already goes (a file it appends to, too)."""
    path, encoding = Path(path), None if "b" in mode else "utf-8"
    if (as_it_is := _written_as_it_is(path)) is not None:
        with _named_writes(as_it_is, mode, encoding, path) as fh:
            yield fh
        return
    if path.is_symlink():
        refuse_a_loop(path)
        path = Path(os.path.realpath(path))
    if path.is_dir():  # else the rename's error, naming the temporary file, comes after the work
        raise UserError(f"{path}: is a directory: give a file's name")
    made, tmp = dirs_to_make(path.parent), None
    try:
        with writing_into(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(path.parent, of=path.name)  # a killed run's: nothing else removes them
            fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path.name), suffix=".tmp", dir=path.parent)
        os.chmod(tmp, kept_mode(path, 0o666))  # mkstemp makes 0600
        with _named_writes(fd, mode, encoding, path) as fh:
            yield fh
            fh.flush()
            with _named(path):
                os.fsync(fh.fileno())
        try:
            os.replace(tmp, path)
        except OSError as err:  # said of the temporary file: an immutable or read-only output is the user's
            raise OSError(err.errno, err.strerror, str(path)) from None
        fsync_dir(path.parent)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        unmake(made)
        raise


def kept_mode(path: Path, new: int) -> int:
    """The permission bits of what ``path`` holds, which what replaces it keeps (a file made private
    with chmod 600 stays so); ``new`` less the umask, as any new file, where it holds nothing or is
    another user's: the replacement is ours, and another's 660 would lock its owner out of it."""
    try:
        found = os.stat(path)
    except OSError:
        return new & ~umask()
    return found.st_mode & 0o777 if found.st_uid == os.geteuid() else new & ~umask()


def dirs_to_make(directory: Path) -> list[Path]:
    """``directory`` and those of its parents that are not there yet, deepest first: what a
    ``mkdir -p`` of it makes. A path through ``..`` (``a/../b``) may name one that is there under
    another name: left out, never to be removed."""
    return [d for d in (directory, *directory.parents) if ".." not in d.parts and not _there(d)]


def _there(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name no file can have (too long): never made, so never to remove
        return True


def unmake(made: list[Path]) -> None:
    """The directories a failed command made for its output removed, deepest first, where they
    are still empty (another process may have written into one meanwhile)."""
    for directory in made:
        with contextlib.suppress(OSError):
            directory.rmdir()


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """An error the system names no file for (a full disk, a quota, a size limit) met by what the
    block does to ``path`` alone, said with its name."""
    try:
        yield
    except OSError as err:
        if err.filename is None:
            err.filename = str(path)
        raise


class _NamedFile(io.FileIO):
    """A file written whose write errors name ``shown``: the system's name none, and a command
    writing several outputs would not know which one met a full disk."""

    def __init__(self, target: int | str | Path, mode: str, shown: Path):
        super().__init__(target, mode)
        self.shown = shown

    def write(self, b: Any, /) -> int:
        with _named(self.shown):
            return super().write(b)


def _named_writes(target: int | str | Path, mode: str, encoding: str | None, shown: Path) -> IO[Any]:
    """``target`` (a descriptor, or a path) opened for writing as ``open`` would, its errors said of ``shown``."""
    buffered = io.BufferedWriter(_NamedFile(target, "a" if "a" in mode else "w", shown))
    return buffered if "b" in mode else io.TextIOWrapper(buffered, encoding=encoding)


def results_to(path: str | Path | None) -> contextlib.AbstractContextManager[IO[Any]]:
    """Where a command writes its results: ``path`` whole or not at all (:func:`atomic_write`),
    or stdout where no path or '-' is given."""
    return atomic_write(path) if path and str(path) != STDIO else contextlib.nullcontext(sys.stdout)


_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _written_as_it_is(path: Path) -> int | Path | None:
    """What an output goes to without a temporary file and a rename: a copy of the open descriptor
    a path names, or a path that is no regular file (a FIFO, a terminal, /dev/null); None for a
    file (through any link) or a path not there yet."""
    if (named := _descriptor(path)) is not None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # what the command wrote there before comes first
        return os.dup(named)
    try:
        kind = os.stat(path).st_mode  # through any link
    except OSError:
        return None
    return None if stat.S_ISREG(kind) or stat.S_ISDIR(kind) else path


def _descriptor(path: Path) -> int | None:
    """The open descriptor a path names (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/3``), if it
    names one: opened by its name, a file the shell appends to would be truncated, and renamed over,
    replaced."""
    name = str(path)
    if name in _STANDARD:
        return _STANDARD[name]
    found = re.fullmatch(r"/(?:dev/fd|proc/self/fd)/(\d+)", name)
    return int(found.group(1)) if found else None


def fsync_dir(path: str | Path) -> None:
    """Make a rename or a new entry in ``path`` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
