"""WMT'14 English–French as the paper used it: where each file lives on statmt.org and inside its archive.

Paths are relative to http://www.statmt.org/, so a mirror (a directory or a
URL) only has to keep the same layout. The training corpora are the five of
Bahdanau et al. §4.1; the dev set is newstest2012 + newstest2013; the test
set is newstest2014 ("full", 3,003 sentences), which comes only as SGML.
"""

from __future__ import annotations

import gzip
import html
import io
import re
import shutil
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..core.errors import UserError
from ..core.files import atomic_write
from ..core.line_counts import count_lines
from .download import Checksum

STATMT = "http://www.statmt.org"
SCHWENK = "http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper"


@dataclass(frozen=True)
class Part:
    """One text file (``name.LANG``) taken from a member of an archive."""

    name: str
    archive: str  # path under the source's base URL
    member: str  # member path with {lang}
    sgml: bool = False


TRAIN = [
    Part("europarl-v7", "wmt13/training-parallel-europarl-v7.tgz", "training/europarl-v7.fr-en.{lang}"),
    Part("commoncrawl", "wmt13/training-parallel-commoncrawl.tgz", "commoncrawl.fr-en.{lang}"),
    Part("un", "wmt13/training-parallel-un.tgz", "un/undoc.2000.fr-en.{lang}"),
    Part("news-commentary-v9", "wmt14/training-parallel-nc-v9.tgz", "training/news-commentary-v9.fr-en.{lang}"),
    Part("giga-fren", "wmt10/training-giga-fren.tar", "giga-fren.release2.fixed.{lang}.gz"),
]
DEV = [
    Part("newstest2012", "wmt14/dev.tgz", "dev/newstest2012.{lang}"),
    Part("newstest2013", "wmt14/dev.tgz", "dev/newstest2013.{lang}"),
]
TEST = Part("newstest2014", "wmt14/test-full.tgz", "test-full/newstest2014-fren-{role}.{lang}.sgm", sgml=True)
TEST_SIZE = 3003

# Published digests (the rest are recorded at first download, see download.py).
KNOWN = {
    "wmt13/training-parallel-commoncrawl.tgz": Checksum("sha1", "1c0ad85f0ebaf1d543acb009607205f5dae6627d", 918311367),
    "wmt14/training-parallel-nc-v9.tgz": Checksum("sha1", "c7ae7f50cd45c2f3014d78ddba25a4a8a851e27a", 80418416),
    "wmt14/test-full.tgz": Checksum("md5", "a8cd784e006feb32ac6f3d9ec7eb389a"),
}


def archives() -> list[str]:
    return sorted({p.archive for p in TRAIN + DEV + [TEST]})


def member_name(part: Part, lang: str, src_lang: str = "en") -> str:
    role = "src" if lang == src_lang else "ref"
    return part.member.format(lang=lang, role=role)


# ---- unpacking ------------------------------------------------------------------------


def _copy_member(stream: IO[bytes], name: str, out: Path) -> None:
    with atomic_write(out, "wb") as fh:
        if name.endswith(".gz"):
            with gzip.GzipFile(fileobj=stream) as gz:
                shutil.copyfileobj(gz, fh, 1 << 20)
        else:
            shutil.copyfileobj(stream, fh, 1 << 20)


class DamagedArchive(UserError):
    """An archive that does not read to its end, or not as an archive: a download to make again."""

    def __init__(self, archive: Path, why: str):
        super().__init__(f"{archive}: {why}")
        self.archive = archive


def extract(archive: Path, wanted: dict[str, Path]) -> None:
    """Copy members of a tar archive to files in one streaming pass (``.gz`` members are unpacked),
    a gzip-compressed one read through gzip's own check first: damaged data may inflate, into
    garbage that the streamed tar would copy, or end it early as if all its members were read."""
    if damage := _damage(archive):
        raise DamagedArchive(archive, damage)
    left = dict(wanted)
    try:
        with tarfile.open(archive, mode="r|*") as tar:
            for info in tar:
                name = info.name.removeprefix("./")
                if name in left and info.isfile():
                    stream = tar.extractfile(info)
                    assert stream is not None
                    _copy_member(stream, name, left.pop(name))
                    if not left:
                        break
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:  # zlib's: a .gz member's damage
        raise DamagedArchive(archive, f"not a readable archive ({err})") from None
    if left:
        for name, out in wanted.items():
            if name not in left:  # half a corpus that a run would take for one
                out.unlink(missing_ok=True)
        missing = f"has no member {', '.join(sorted(left))}"
        if _cut_tar(archive):  # cut at a block's edge, it reads as a whole archive without them
            raise DamagedArchive(archive, f"{missing}, and ends without a tar's end (cut short)")
        raise UserError(f"{archive}: {missing}")


def _cut_tar(archive: Path) -> bool:
    """Whether a plain tar lacks the two zero blocks that end every whole one (a compressed one
    was read to its end with its checksum already)."""
    with open(archive, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            return False
        fh.seek(max(0, archive.stat().st_size - 1024))
        return fh.read() != bytes(1024)


def _damage(archive: Path) -> str:
    """Why a gzip-compressed archive does not read to its end with its checksum, or nothing."""
    try:
        with open(archive, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return ""
        with gzip.open(archive) as gz:
            while gz.read(1 << 20):
                pass
    except FileNotFoundError:
        raise UserError(f"{archive}: no such file") from None
    except (OSError, EOFError, zlib.error) as err:
        return f"its gzip data is damaged ({err})"
    return ""


# Not sacrebleu's reader: its one SGML reader is private (FakeSGMLDataset._convert_format), takes
# only a line that starts with "<seg ", keeps entities ("&amp;" stays) and works in its own cache.
_SEG = re.compile(r"<seg\b[^>]*>(.*?)</seg>", re.S | re.I)
_OPEN = re.compile(r"<seg\b", re.I)


def unwrap_sgml(data: bytes, where: str = "SGML") -> list[str]:
    """The text of every ``<seg>`` in document order, entities decoded, whitespace collapsed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{where}: not valid UTF-8 at byte {err.start}") from None
    segs = [" ".join(html.unescape(m).split()) for m in _SEG.findall(text)]
    if not segs:
        raise UserError(f"{where}: no <seg> elements")
    opened = len(_OPEN.findall(text))
    if opened != len(segs):  # an unclosed <seg> would swallow the next one's text and tag
        raise UserError(f"{where}: {opened:,} <seg> tags but {len(segs):,} closed by </seg>")
    return segs


_TAG = re.compile(r"<(doc|seg)\b([^>]*)>", re.I)


def _attribute(tag: str, name: str) -> str:
    found = re.search(rf"\b{name}\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", tag, re.I)
    return next((g for g in found.groups() if g is not None), "") if found else ""


def sgml_keys(data: bytes) -> list[tuple[str, str]]:
    """Each ``<seg>``'s document and segment id (``docid``, ``id``; '' where absent), in order."""
    keys, doc = [], ""
    for kind, attributes in _TAG.findall(data.decode("utf-8", "replace")):
        if kind.lower() == "doc":
            doc = _attribute(attributes, "docid")
        else:
            keys.append((doc, _attribute(attributes, "id")))
    return keys


def _refuse_unpaired(where: str, langs: tuple[str, str], keys: list[list[tuple[str, str]]]) -> None:
    """Refuse a source and a reference whose documents or segments stand in another order: read
    in file order, their lines would pair one sentence with another's translation."""
    for n, (a, b) in enumerate(zip(*keys), 1):
        if a != b:
            raise UserError(
                f"{where}: segment {n:,} is document {a[0]!r} segment {a[1]!r} in the {langs[0]} file but "
                f"{b[0]!r} {b[1]!r} in the {langs[1]} one: its pairs would not match"
            )


def write_part(archive: Path, part: Part, langs: tuple[str, str], out_prefix: Path) -> int:
    """``out_prefix.LANG`` for both languages from ``archive``; returns the line count."""
    members = {
        member_name(part, lang, langs[0]): out_prefix.with_name(
            f"{out_prefix.name}.{lang}.raw" if part.sgml else f"{out_prefix.name}.{lang}"
        )
        for lang in langs
    }
    extract(archive, members)
    if not part.sgml:
        counts = [count_lines(tmp) for tmp in members.values()]
        _refuse_uneven(archive, part, langs, counts)
        return counts[0]
    try:  # both sides read and held against each other before either is written
        datas = [tmp.read_bytes() for tmp in members.values()]
    finally:
        for tmp in members.values():
            tmp.unlink(missing_ok=True)
    segs = [unwrap_sgml(d, f"{archive}:{member_name(part, lang, langs[0])}") for d, lang in zip(datas, langs)]
    _refuse_uneven(archive, part, langs, [len(s) for s in segs])
    _refuse_unpaired(f"{archive}: {part.name}", langs, [sgml_keys(d) for d in datas])
    for lang, lines in zip(langs, segs):
        with atomic_write(out_prefix.with_name(f"{out_prefix.name}.{lang}")) as fh:
            fh.write("".join(s + "\n" for s in lines))
    return len(segs[0])


def _refuse_uneven(archive: Path, part: Part, langs: tuple[str, str], counts: list[int]) -> None:
    if counts[0] != counts[1]:
        raise UserError(f"{archive}: {part.name} has {counts[0]:,} {langs[0]} and {counts[1]:,} {langs[1]} lines")


def concat(parts: list[Path], out: Path) -> None:
    """The files ``parts`` one after the other, each ending its last line: a file without a final
    newline would otherwise join its last line to the next file's first."""
    with atomic_write(out, "wb") as fh:
        for p in parts:
            with open(p, "rb") as src:
                _copy_lines(src, fh)


def _copy_lines(src: io.BufferedIOBase, dest: IO[bytes]) -> None:
    """Copy ``src`` to ``dest``, its last line ended: one without a final newline would be joined
    to the next file's first."""
    last = b"\n"
    while chunk := src.read(1 << 20):
        dest.write(chunk)
        last = chunk[-1:]
    if last != b"\n":
        dest.write(b"\n")


# ---- Schwenk's pre-selected release (the paper's footnote 5) ---------------------------

SCHWENK_BITEXTS = "data/bitexts.tgz"


def extract_schwenk(archive: Path, out_prefix: Path, langs: tuple[str, str]) -> int:
    """Concatenate ``bitexts.selected/*.{en,fr}.gz`` (in name order, pairs matched by name)."""
    outs = {lang: out_prefix.with_name(f"{out_prefix.name}.{lang}") for lang in langs}
    if damage := _damage(archive):
        raise DamagedArchive(archive, damage)
    try:
        na, nb = _concatenated(archive, outs, langs)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise DamagedArchive(archive, f"not a readable archive ({err})") from None
    if na != nb:
        raise UserError(f"{archive}: {na:,} {langs[0]} lines but {nb:,} {langs[1]} lines")
    return na


def _concatenated(archive: Path, outs: dict[str, Path], langs: tuple[str, str]) -> tuple[int, int]:
    with tarfile.open(archive, mode="r:*") as tar:
        names = sorted(m.name.removeprefix("./") for m in tar.getmembers() if m.isfile())
        stems = sorted({n[: -len(f".{langs[0]}.gz")] for n in names if n.endswith(f".{langs[0]}.gz")})
        if not stems:
            raise UserError(f"{archive}: no bitexts.selected/*.{langs[0]}.gz members")
        for lang in langs:
            with atomic_write(outs[lang], "wb") as fh:
                for stem in stems:
                    member = tar.extractfile(f"{stem}.{lang}.gz") if f"{stem}.{lang}.gz" in names else None
                    if member is None:
                        raise UserError(f"{archive}: {stem}.{langs[0]}.gz has no {lang} partner")
                    with gzip.GzipFile(fileobj=io.BufferedReader(member)) as gz:  # type: ignore[type-var]
                        _copy_lines(gz, fh)
    with open(outs[langs[0]], "rb") as a, open(outs[langs[1]], "rb") as b:
        return sum(1 for _ in a), sum(1 for _ in b)
