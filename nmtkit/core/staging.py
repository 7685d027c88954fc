"""A directory of outputs that appears whole or not at all (``preprocess -d``, a data-bin): built
in a hidden sibling and swapped in with two renames, what the destination held and the command
did not write carried over."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError
from .files import USER_PATH_ERRORS, dirs_to_make, fsync_dir, kept_mode, refuse_a_loop, unmake, writing_into
from .temporaries import HOST, alive, stem, temporary_prefix

_KINDS = ("staging", "old")

# Each command that writes a directory of outputs leaves its report there, by which the others know it
REPORTS = {"preprocess.json": "preprocess", "manifest.json": "preprocess --vocab", "vocab.json": "build-vocab"}


def refuse_shared_directory(out_dir: Path, writes: str, own: str | None, inputs: list[tuple[str, Path]]) -> None:
    """Refuse ``-d out_dir`` where it is the directory of one of the ``inputs`` (what names it, as
    ``--train clean/train``; the directory), or holds another command's outputs (its report,
    :data:`REPORTS`; ``own``: this command's, None for one that writes none): ``writes``, what this
    command writes there, would replace their files (a data-bin's vocabularies, raw text of other
    split names) or sit among them, under a report that goes on describing what is no longer there."""
    for said, directory in inputs:
        if directory.resolve() == out_dir.resolve():
            raise UserError(f"-d {out_dir}: the directory of {said}; give {writes} one of its own")
    for report, command in REPORTS.items():
        if report != own and (out_dir / report).exists():
            raise UserError(
                f"-d {out_dir}: holds the outputs of 'nmtkit {command}' ({report}), which {writes} would replace "
                f"or sit among: give it a directory of its own"
            )


class Staging:
    """A directory of outputs that appears whole or not at all.

    A command writes into a hidden sibling of ``dest`` (``.NAME.staging-HOST-PID-…``);
    ``commit()`` fsyncs everything, carries over (as hard links) whatever ``dest``
    already held that this command did not write, and swaps the staging directory in
    with two renames. Leaving the ``with`` block by an exception removes the staging
    directory, so a failed run changes nothing. Staging directories of processes that
    died on this host are removed when the next one starts; a crash between the two
    renames is repaired then too, by putting the old directory back.
    """

    def __init__(self, dest: str | Path, owned: tuple[str, ...] = ()):
        """``owned``: patterns of the names this command writes, whose files in ``dest`` that it did
        not write this time are stale (another run's codes) and not carried over."""
        self.dest = destination(dest)
        self.owned = owned
        self.made = dirs_to_make(self.dest.parent)
        try:
            with writing_into(self.dest):
                self.dest.parent.mkdir(parents=True, exist_ok=True)
                remove_stale(self.dest)
                self.dir = Path(
                    tempfile.mkdtemp(prefix=temporary_prefix(self.dest.name, "staging"), dir=self.dest.parent)
                )
        except BaseException:
            unmake(self.made)
            raise
        os.chmod(self.dir, kept_mode(self.dest, 0o777))

    def path(self, name: str) -> Path:
        return self.dir / name

    def commit(self) -> None:
        for root, _, files in os.walk(self.dir):
            for name in files:
                _fsync_file(Path(root) / name)
            fsync_dir(root)
        if not self.dest.exists():
            os.rename(self.dir, self.dest)
        else:
            for entry in self.dest.iterdir():
                stale = any(fnmatch.fnmatch(entry.name, pattern) for pattern in self.owned)
                if not (self.dir / entry.name).exists() and not entry.name.startswith(".staging-") and not stale:
                    _carry(entry, self.dir / entry.name)
            fsync_dir(self.dir)
            old = Path(tempfile.mkdtemp(prefix=temporary_prefix(self.dest.name, "old"), dir=self.dest.parent))
            os.rename(self.dest, old / "dir")
            os.rename(self.dir, self.dest)
            fsync_dir(self.dest.parent)
            shutil.rmtree(old, ignore_errors=True)
        fsync_dir(self.dest.parent)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, _kind: Any, err: BaseException | None, _tb: Any) -> None:
        if self.dir.exists():  # not committed: a failed command's directories go with it
            shutil.rmtree(self.dir, ignore_errors=True)
            unmake(self.made)
        if isinstance(err, OSError):  # said of dest, not of the hidden directory or of no file at all
            self._said_of_dest(err)

    def _said_of_dest(self, err: OSError) -> None:
        """A full disk met by a write into the staging directory named none (an open file's write)
        or the hidden directory (``.v.staging-…/vocab.fr.txt``); a copy into it, its source
        (shutil names the source first): each now names ``dest``, or the file in it."""
        hidden = str(self.dir)
        if isinstance(err.filename2, str) and err.filename2.startswith(hidden):
            err.filename, err.filename2 = err.filename2, None
        if err.filename is None and err.errno in USER_PATH_ERRORS:
            err.filename = str(self.dest)
        elif isinstance(err.filename, str) and err.filename.startswith(hidden):
            err.filename = str(self.dest) + err.filename[len(hidden) :]


def destination(dest: str | Path) -> Path:
    """The directory ``dest`` names, or one line saying why outputs cannot go there; a command whose
    work comes first (fetch-bible's download) asks before it."""
    found = Path(dest)  # 'link/', as a shell completes it, is the link
    if found.is_symlink():  # written through (data-bin -> /scratch/…), where the renames would replace it
        refuse_a_loop(found)  # said here, not as "not a directory" at the commit
        found = Path(os.path.realpath(found))
    if found.exists() and not found.is_dir():
        raise UserError(f"{found}: exists and is not a directory")
    here = Path.cwd().resolve()
    if found.exists() and (found.resolve() == here or found.resolve() in here.parents):
        raise UserError(
            f"{found}: give the outputs a directory of their own, not the current directory or one above it"
        )
    return found


def remove_stale(dest: Path) -> None:
    """Remove the staging directories of ``dest`` left by dead processes of this host, and put
    back an old ``dest`` that a crash took away between the two renames of a commit."""
    pattern = re.compile(rf"\.{re.escape(stem(dest.name))}\.({'|'.join(_KINDS)})-{HOST}-(\d+)-")
    if not dest.parent.is_dir():
        return
    for entry in sorted(dest.parent.iterdir()):
        match = pattern.match(entry.name)
        if not match or alive(int(match.group(2))):
            continue
        if match.group(1) == "old" and (entry / "dir").is_dir() and not dest.exists():
            os.rename(entry / "dir", dest)
        shutil.rmtree(entry, ignore_errors=True)


def _carry(src: Path, dst: Path) -> None:
    """Hard links of a file or a tree (copies where the filesystem has no hard links)."""

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True, copy_function=link)
    elif src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        link(str(src), str(dst))


def _fsync_file(path: Path) -> None:
    if path.is_symlink():
        return
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
