"""Resumable, verified downloads from a URL or a local mirror directory.

A download goes to ``DEST.part``; a rerun continues it with an HTTP Range
request (or a seek, for a local mirror), and only a file whose size and
digest match is renamed to ``DEST``. A file without a published digest gets
its sha256 recorded at first download (``SHA256SUMS`` beside it) and checked
on every later use, so a corrupted or swapped archive is caught either way.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..core.console import log, progress
from ..core.errors import UserError
from ..core.files import atomic_write, read_lines

BLOCK = 1 << 20


@dataclass(frozen=True)
class Checksum:
    algo: str  # md5, sha1 or sha256
    digest: str
    size: int | None = None

    def matches(self, path: Path) -> bool:
        return not self.mismatch(path)

    def mismatch(self, path: Path) -> str:
        """How ``path`` differs from this checksum ('' where it matches): a size is told apart from
        a digest, as a cut-off file from another one."""
        size = path.stat().st_size
        if self.size is not None and size != self.size:
            return f"{size:,} bytes where its checksum's file has {self.size:,}"
        return "" if file_digest(path, self.algo) == self.digest else f"{self.algo} checksum mismatch"


def file_digest(path: Path, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            h.update(block)
    return h.hexdigest()


# hashlib's, but for the SHAKEs, whose digest has no length of its own
_ALGORITHMS = sorted(a for a in hashlib.algorithms_available if not a.startswith("shake"))


def read_checksums(path: Path) -> dict[str, Checksum]:
    """``PATH ALGO:DIGEST [SIZE]`` lines (``#`` starts a comment) → {relative path: Checksum}."""
    sums: dict[str, Checksum] = {}
    if not path.is_file():
        return sums
    for n, line in enumerate(read_lines(path, allow_empty=True), 1):  # a BOM dropped, bad UTF-8 a line
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        try:
            algo, digest = fields[1].lower().split(":", 1)
            size = int(fields[2]) if len(fields) > 2 else None
        except (IndexError, ValueError):
            raise UserError(f"{path}: line {n}: expected 'PATH ALGO:DIGEST [SIZE]'") from None
        if algo not in _ALGORITHMS:
            raise UserError(f"{path}: line {n}: {algo!r} is not one of {', '.join(_ALGORITHMS)}")
        sums[fields[0]] = Checksum(algo, digest, size)
    return sums


def record_checksum(sums_file: Path, rel: str, path: Path) -> Checksum:
    found = Checksum("sha256", file_digest(path), path.stat().st_size)
    with open(sums_file, "a", encoding="utf-8") as fh:
        fh.write(f"{rel} sha256:{found.digest} {found.size}\n")
    return found


def forget_checksum(sums_file: Path, rel: str) -> bool:
    """Drop the digest recorded for ``rel`` (that of a download found damaged later, which would
    refuse every sound download after it); whether there was one."""
    if rel not in read_checksums(sums_file):
        return False
    kept = [line for line in read_lines(sums_file, allow_empty=True) if line.split()[:1] != [rel]]  # a BOM dropped
    with atomic_write(sums_file) as fh:
        fh.write("".join(f"{line}\n" for line in kept))
    return True


def source_url(base: str, rel: str) -> str:
    """``base`` is an http(s)/file URL or a directory; ``rel`` keeps the origin's layout under it."""
    if "://" in base:
        return base.rstrip("/") + "/" + rel
    return str(Path(base) / rel)


def _open_source(url: str, offset: int) -> tuple[IO[bytes], int, int | None]:
    """A stream from ``offset`` (or from 0 when the server ignores ranges), its start, total size."""
    if "://" not in url or url.startswith("file://"):
        path = Path(url.removeprefix("file://"))
        try:
            fh = open(path, "rb")
        except OSError as err:
            raise UserError(f"{path}: cannot read ({err.strerror.lower() if err.strerror else err})") from None
        size = os.fstat(fh.fileno()).st_size
        fh.seek(min(offset, size))
        return fh, min(offset, size), size
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code == 416:  # the part is already whole
            return open(os.devnull, "rb"), offset, offset
        raise UserError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise UserError(f"{url}: cannot download ({getattr(err, 'reason', err)})") from None
    start = offset if response.status == 206 else 0
    length = response.headers.get("Content-Length")
    return response, start, (start + int(length)) if length else None


def _blocks(stream: IO[bytes]) -> Iterator[bytes]:
    while block := stream.read(BLOCK):
        yield block


def fetch(
    url: str, dest: Path, expected: Checksum | None, sums_file: Path | None = None, rel: str | None = None
) -> Path:
    """Download ``url`` to ``dest`` (resuming ``dest.part``) and verify it; a no-op when done."""
    recorded = read_checksums(sums_file).get(rel or dest.name) if sums_file else None
    check = expected or recorded
    if dest.exists():
        if check and (differs := check.mismatch(dest)):
            raise UserError(f"{dest}: {differs}; delete it to download again")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    stream, start, total = _open_source(url, have)
    if have:
        log(
            f"{dest.name}: resuming at {start:,} bytes"
            if start
            else f"{dest.name}: the source ignores ranges, restarting"
        )
    with stream, open(part, "r+b" if part.exists() else "wb") as out, progress("B") as bar:
        out.seek(start)
        out.truncate()
        task = bar.add_task(dest.name, total=total, completed=start)
        for block in _blocks(stream):
            out.write(block)
            bar.advance(task, len(block))
    if total is not None and part.stat().st_size != total:
        raise UserError(f"{url}: download stopped at {part.stat().st_size:,} of {total:,} bytes; run again to resume")
    bad = part.with_name(dest.name + ".bad")
    if check and (differs := check.mismatch(part)):
        shutil.move(part, bad)
        why = (
            f"the {start:,} bytes resumed from an earlier {part.name} may be at fault: run again to download it whole"
            if start
            else "the source or mirror serves another file"
        )
        raise UserError(f"{url}: {differs} (kept as {bad}); {why}")
    os.replace(part, dest)
    bad.unlink(missing_ok=True)  # an earlier attempt's, kept to look into: gigabytes once this one is sound
    if check is None and sums_file is not None:
        record_checksum(sums_file, rel or dest.name, dest)
    return dest
