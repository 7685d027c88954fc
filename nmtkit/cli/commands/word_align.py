"""``nmtkit word-align``: a statistical aligner's links of a training corpus, for guided alignment."""

from __future__ import annotations

from pathlib import Path

import click

from ...align.symmetrize import SYMMETRIZATIONS
from ...core.command import Command
from ...core.console import log
from ...core.errors import UserError
from .. import options


@click.command(
    "word-align",
    cls=Command,
    epilog="""\b
Example (the links that guided alignment training learns from):
  nmtkit word-align -s en -t fr --train clean/train     # writes clean/train.links
then binarize with 'preprocess --vocab VOCAB --align-suffix links' and train with
'--guided-alignment-weight 0.5' (make demo-guided runs the three).""",
)
@click.option("-s", "--source-lang", required=True, help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@click.option("--train", "train", required=True, help="Prefix of clean tokenized text from 'preprocess'.")
@click.option(
    "--align-suffix",
    default="links",
    show_default=True,
    metavar="SUFFIX",
    help="The links go to PREFIX.SUFFIX (preprocess --align-suffix then reads them).",
)
@options.renamed("--suffix", "--align-suffix", "align_suffix")
@click.option(
    "--symmetrize",
    type=click.Choice(SYMMETRIZATIONS),
    default="grow-diag-final-and",
    show_default=True,
    help="How the two directions' links become one set.",
)
@options.verbosity
def word_align(source_lang: str, target_lang: str, train: str, align_suffix: str, symmetrize: str) -> None:
    """Word-align a tokenized parallel corpus with eflomal (the align extra): Pharaoh i-j pairs over
    its Moses tokens, one line per sentence pair, for 'preprocess --align-suffix' and
    'train --guided-alignment-weight'."""
    options.refuse_two_spellings(click.get_current_context())
    from ...align.statistical import word_align as run
    from ...core.files import refuse_overwriting
    from ...core.line_counts import check_parallel_prefix
    from ...text.preprocess import read_report
    from ...text.settings import check_languages

    check_languages(source_lang, target_lang)
    if not align_suffix or "/" in align_suffix:  # ../x would write beside another directory's files
        raise UserError(f"--align-suffix '{align_suffix}': a file name's suffix, without '/' (links)")
    out = Path(f"{train}.{align_suffix}")
    # preprocess's line map (PREFIX.lines) too: binarizing reads it
    refuse_overwriting(
        [("--align-suffix", str(out))], [("--train", f"{train}.{x}") for x in (source_lang, target_lang, "lines")]
    )
    check_parallel_prefix(train, (source_lang, target_lang))  # first: a mistyped --train names its files
    if out.is_dir():  # before eflomal's minutes, not at the write after them
        raise UserError(f"{out}: is a directory, where the links would be written: give another --align-suffix")
    # raw text would be aligned over words that preprocess --align-suffix, tokenizing, does not count
    read_report(Path(train).parent, "word-align reads the Moses tokens of 'nmtkit preprocess', which its links count")
    done = run(Path(f"{train}.{source_lang}"), Path(f"{train}.{target_lang}"), out, symmetrize)
    log(f"{out}: {done['links']:,} links over {done['pairs']:,} pairs ({symmetrize}) in {done['seconds']:.0f} s")
