"""``nmtkit reverse``: the binarized corpus of the other direction (sources and targets swapped)."""

from __future__ import annotations

import click

from ...core.command import Command
from ...core.console import log
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Example (the French→English model beside the English→French one, e.g. for align -m … -m …):
  nmtkit reverse data-bin data-bin-fr-en
  nmtkit train data-bin-fr-en --save-dir runs/fr-en --schedule cpu""",
)
@click.argument("data_bin", metavar="DATA_BIN", type=options.DirPath())
@click.argument("out_dir", metavar="OUT_DIR", type=options.DirPath())
@options.verbosity
def reverse(data_bin: str, out_dir: str) -> None:
    """Write DATA_BIN's corpus with its sides swapped to OUT_DIR: the same token files (hard-linked
    where the file system allows) and vocabularies, source and target exchanged, word links
    transposed (s-t becomes t-s), the clean source text of valid and test the new references."""
    from ...data.reverse import reverse_corpus

    corpus = reverse_corpus(data_bin, out_dir)
    log(f"{out_dir}: {corpus.src_lang}→{corpus.tgt_lang}, the sides of {data_bin} swapped")
