"""The WMT'14 En→Fr recipe's steps that are not nmtkit commands: fetch, unpack, mirror, report.

    python -m bench.wmt14 fetch --dest DL wmt14/dev.tgz ...
    python -m bench.wmt14 unpack --downloads DL --out WORK/corpora/un un
    python -m bench.wmt14 report --work WORK ...

examples/wmt14_en_fr/Makefile strings them together with the nmtkit commands.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from nmtkit.align.heatmap import parse_sentences
from nmtkit.core.command import Group
from nmtkit.core.console import log
from nmtkit.core.errors import UserError
from nmtkit.data import wmt14
from nmtkit.data.download import Checksum, fetch, forget_checksum, read_checksums, source_url

from .mirror import build_mirror
from .report import write_report

PARTS = {p.name: p for p in wmt14.TRAIN + wmt14.DEV + [wmt14.TEST]}


@click.group("wmt14", cls=Group)
def main() -> None:
    """Steps of examples/wmt14_en_fr that are not nmtkit commands."""


@main.command("fetch")
@click.argument("archives", nargs=-1, required=True)
@click.option("--dest", required=True, type=click.Path(file_okay=False), help="Downloads directory (same layout).")
@click.option(
    "--mirror", default=wmt14.STATMT, show_default=True, help="Base URL or directory with statmt.org's layout."
)
@click.option("--checksums", type=click.Path(dir_okay=False), help="A mirror's own checksums (PATH ALGO:DIGEST SIZE).")
def fetch_cmd(archives: tuple[str, ...], dest: str, mirror: str, checksums: str | None) -> None:
    """Download ARCHIVES (paths under the base), resuming and verifying each."""
    if "://" not in mirror and not Path(mirror).is_dir():  # each archive was said missing, as one would be
        raise UserError(f"--mirror {mirror}: no such directory")
    own = read_checksums(Path(checksums)) if checksums else {}
    if checksums and not own:
        raise UserError(f"{checksums}: no such checksums file, or it is empty")
    for rel in archives:
        expected: Checksum | None = own.get(rel) if checksums else wmt14.KNOWN.get(rel)
        if checksums and expected is None:
            raise UserError(f"{checksums}: has no entry for {rel}")
        fetch(source_url(mirror, rel), Path(dest) / rel, expected, Path(dest) / "SHA256SUMS", rel)
        log(f"fetched {rel}")


@main.command("unpack")
@click.argument("part", type=click.Choice(sorted(PARTS) + ["dev", "schwenk"]))
@click.option("--downloads", required=True, type=click.Path(file_okay=False))
@click.option("--out", required=True, help="Output prefix: writes OUT.en and OUT.fr.")
def unpack_cmd(part: str, downloads: str, out: str) -> None:
    """Write one corpus (or 'dev' = newstest2012 + newstest2013) as OUT.en / OUT.fr."""
    try:
        _unpack(part, Path(downloads), out)
    except wmt14.DamagedArchive as err:
        raise _set_aside(err, Path(downloads)) from None


def _set_aside(err: wmt14.DamagedArchive, downloads: Path) -> UserError:
    """A damaged download moved out of the way, so that the next run downloads it again, and the
    digest recorded at its download (none is published for it) dropped, which would refuse the
    sound file as another one."""
    bad = err.archive.with_name(err.archive.name + ".bad")
    os.replace(err.archive, bad)
    rel = err.archive.relative_to(downloads).as_posix()
    forgot = (
        " and the digest recorded at its download dropped" if forget_checksum(downloads / "SHA256SUMS", rel) else ""
    )
    return UserError(f"{err}; moved to {bad}{forgot}: run again to download it again")


def _unpack(part: str, downloads: Path, out: str) -> None:
    langs = ("en", "fr")
    out_prefix = Path(out)
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    if part == "schwenk":
        n = wmt14.extract_schwenk(downloads / wmt14.SCHWENK_BITEXTS, out_prefix, langs)
    elif part == "dev":
        n = 0
        pieces = []
        for dev_part in wmt14.DEV:
            piece = out_prefix.with_name(f"{out_prefix.name}.{dev_part.name}")
            n += wmt14.write_part(downloads / dev_part.archive, dev_part, langs, piece)
            pieces.append(piece)
        for lang in langs:
            wmt14.concat([Path(f"{p}.{lang}") for p in pieces], Path(f"{out_prefix}.{lang}"))
            for p in pieces:
                Path(f"{p}.{lang}").unlink()
    else:
        n = wmt14.write_part(downloads / PARTS[part].archive, PARTS[part], langs, out_prefix)
    log(f"{out}.{{en,fr}}: {n:,} pairs")
    if part == wmt14.TEST.name and n != wmt14.TEST_SIZE:
        log(f"warning: {part} has {n:,} segments, not WMT's {wmt14.TEST_SIZE:,}: a mirror's own test set, or another")


@main.command("mirror")
@click.argument("out", type=click.Path(file_okay=False))
@click.option(
    "--bible",
    "bible_raw",
    default="data/bible/raw",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The embedded corpus' raw splits (make data).",
)
@click.option("--pairs", type=click.IntRange(10), default=500, show_default=True, help="Pairs per training corpus.")
@click.option("--dev-lines", type=click.IntRange(2), default=100, show_default=True)
@click.option("--test-lines", type=click.IntRange(1), default=150, show_default=True)
def mirror_cmd(out: str, bible_raw: str, pairs: int, dev_lines: int, test_lines: int) -> None:
    """Build a small offline stand-in for statmt.org (WMT'14 file layout) from the Bible corpus."""
    if not Path(bible_raw).is_dir():
        raise click.BadParameter(
            f"{bible_raw}: no such directory; 'make data' writes data/bible/raw", param_hint="'--bible'"
        )
    sums = build_mirror(Path(bible_raw), Path(out), pairs, dev_lines, test_lines)
    log(f"mirror in {out}; its checksums: {sums}")


@main.command("report")
@click.option("--work", required=True, type=click.Path(file_okay=False))
@click.option("--runs", required=True, type=click.Path(file_okay=False))
@click.option("--data-bin", required=True, type=click.Path(file_okay=False))
@click.option("--models", required=True, help="Run names, e.g. 'rnnencdec-30 rnnsearch-50'.")
@click.option("--figure3", default="1-3", show_default=True, help="Test lines whose alignments to draw.")
@click.option("--device", default="cpu", show_default=True, help="What trained the models (for Table 2).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def report_cmd(work: str, runs: str, data_bin: str, models: str, figure3: str, device: str, output: str) -> None:
    """Write the Markdown report (Tables 1-2, Figures 2-3 beside the paper's)."""
    lines = parse_sentences(figure3, "--figure3")
    write_report(Path(work), Path(runs), models.split(), Path(data_bin), lines, device, Path(output))
    log(f"wrote {output}")


if __name__ == "__main__":
    main()
