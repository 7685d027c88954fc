"""A small stand-in for statmt.org with WMT'14's file layout, built from the embedded Bible corpus.

Every archive the recipe downloads is here under its real path, with the
real member paths and formats (gzip'd tarballs, a plain tar of .gz files,
SGML test sets with entities and several documents, other language pairs'
members beside the ones we want), so that ``make reproduce MIRROR=DIR``
runs the whole recipe offline. A ``checksums.txt`` lists their sha256.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from html import escape
from pathlib import Path

from nmtkit.core.staging import Staging
from nmtkit.data.download import file_digest
from nmtkit.data.wmt14 import DEV, TEST, TRAIN, member_name

LANGS = ("en", "fr")


def _lines(prefix: Path, lang: str) -> list[bytes]:
    return (prefix.parent / f"{prefix.name}.{lang}").read_bytes().splitlines(keepends=True)


def sgml(lines: list[bytes], setid: str, lang: str, role: str, doc_size: int = 40) -> bytes:
    """WMT's SGML: a set of documents of ``<p><seg id=N>`` lines, text XML-escaped."""
    tag = "srcset" if role == "src" else "refset"
    out = [f'<{tag} setid="{setid}" srclang="any" trglang="{lang}">']
    for d in range(0, len(lines), doc_size):
        out.append(f'<doc sysid="{role}" docid="bible.{d // doc_size + 1}" genre="news" origlang="en">')
        out.append("<p>")
        for i, line in enumerate(lines[d : d + doc_size], start=d + 1):
            out.append(f'<seg id="{i - d}">{escape(line.decode("utf-8").strip(), quote=False)}</seg>')
        out.append("</p>")
        out.append("</doc>")
    out.append(f"</{tag}>")
    return ("\n".join(out) + "\n").encode("utf-8")


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_400_000_000
    tar.addfile(info, io.BytesIO(data))


def build_mirror(bible_raw: Path, out: Path, pairs: int = 500, dev_lines: int = 100, test_lines: int = 150) -> Path:
    """Write the mirror under ``out`` from ``bible_raw/{train,valid,test}.{en,fr}``; returns checksums.txt."""
    train = {lang: _lines(bible_raw / "train", lang) for lang in LANGS}
    dev = {lang: _lines(bible_raw / "valid", lang)[:dev_lines] for lang in LANGS}
    test = {lang: _lines(bible_raw / "test", lang)[:test_lines] for lang in LANGS}
    contents: dict[str, dict[str, bytes]] = {}
    # Consecutive slices, so that each corpus is its own part of the Bible ("domain").
    for i, part in enumerate(TRAIN):
        for lang in LANGS:
            data = b"".join(train[lang][i * pairs : (i + 1) * pairs])
            name = member_name(part, lang)
            if name.endswith(".gz"):
                data = gzip.compress(data, mtime=0)
            contents.setdefault(part.archive, {})[name] = data
            if "fr-en" in name:  # a member of another language pair, as in the real archives
                other = name.replace("fr-en", "de-en")
                contents[part.archive][other.removesuffix(".fr") + ".de" if lang == "fr" else other] = b"x\n"
    half = len(dev["en"]) // 2
    for part, (lo, hi) in zip(DEV, ((0, half), (half, len(dev["en"])))):
        for lang in LANGS:
            contents.setdefault(part.archive, {})[member_name(part, lang)] = b"".join(dev[lang][lo:hi])
    for lang in LANGS:
        role = "src" if lang == "en" else "ref"
        contents.setdefault(TEST.archive, {})[member_name(TEST, lang)] = sgml(test[lang], "newstest2014", lang, role)
        # The other direction's files are in the same archive.
        other = "ref" if lang == "en" else "src"
        contents[TEST.archive][f"test-full/newstest2014-fren-{other}.{lang}.sgm"] = sgml(
            test[lang], "newstest2014", lang, other
        )
    sums = []
    with Staging(out) as stage:
        for archive, members in sorted(contents.items()):
            path = stage.path(archive)
            path.parent.mkdir(parents=True, exist_ok=True)
            with tarfile.open(path, "w:gz" if archive.endswith(".tgz") else "w") as tar:
                for name, data in members.items():
                    _add(tar, name, data)
            sums.append(f"{archive} sha256:{file_digest(path)} {path.stat().st_size}")
        stage.path("checksums.txt").write_text(
            "# the mirror's own files (built by bench.mirror)\n" + "\n".join(sums) + "\n", encoding="utf-8"
        )
        stage.commit()
    return out / "checksums.txt"
