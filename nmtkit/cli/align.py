"""``nmtkit align`` and ``nmtkit align-plot``: the attention as word alignments and as pictures;
``nmtkit word-align``: a statistical aligner's links of a training corpus (guided alignment)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..align.symmetrize import SYMMETRIZATIONS
from ..core.command import Command
from ..core.console import log
from ..core.errors import UserError
from . import options
from .config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Example (the attention's alignment of reference translations, for score-align):
  nmtkit align -m runs/demo/best.pt --source test.en --target test.fr -o test.links""",
)
@click.option(
    "-m",
    "--model",
    "model_paths",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Checkpoint; repeat for an ensemble (attention averaged).",
)
@config_options
@click.option("--source", required=True, type=click.Path(dir_okay=False), help="Source sentences, one a line.")
@click.option("--target", required=True, type=click.Path(dir_okay=False), help="Their translations, one a line.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), help="Pharaoh file [default: stdout]."
)
@click.option("--tokenized", is_flag=True, help="The files are Moses tokens (the links count them as they are).")
@options.runtime
@options.verbosity
def align(
    model_paths: tuple[str, ...], source: str, target: str, output: str | None, tokenized: bool, **runtime: Any
) -> None:
    """Word alignments of given translations from the model's attention (forced decoding): each target
    word linked to the source word it attends to most, as Pharaoh i-j pairs over Moses tokens."""
    from ..translate.forced import align_file  # here: torch loads to align, not for --help

    align_file(list(model_paths), source, target, output, tokenized, options.runtime_config(runtime))


@click.command(
    "align-plot",
    cls=Command,
    epilog="""\b
Examples:
  nmtkit translate -m best.pt test.en --alignments test.align > test.hyp.fr
  nmtkit align-plot test.align --sentences 3,10-12 -o figs/align.png    # figs/align-3.png ...
  nmtkit align-plot -m best.pt --source test.en --target test.fr --sentences 7 -o align7.pdf
  nmtkit align-plot test.align -n 3 --pieces -o pieces3.png             # BPE pieces, not words
  # hard links (translate --print-alignment, fast_align) over Moses-token files
  nmtkit align-plot test.links --source test.tok.en --target test.tok.fr -n 7 -o links7.png""",
)
@click.argument("alignments", required=False)
@config_options
@click.option("-n", "--sentences", required=True, help="Line numbers to plot, from 1: '3,10-12'.")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="Picture (.png/.svg/.pdf); several sentences get -LINE before the suffix.",
)
@click.option(
    "-m",
    "--model",
    "model_paths",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Instead of an alignment file: force this checkpoint on --source/--target pairs.",
)
@click.option(
    "--source",
    type=click.Path(dir_okay=False),
    help="With -m: source lines. With a Pharaoh file: its source side, in Moses tokens.",
)
@click.option(
    "--target",
    type=click.Path(dir_okay=False),
    help="With -m: their reference translations. With a Pharaoh file: its target side, in Moses tokens.",
)
@click.option("--tokenized", is_flag=True, help="With -m: the lines are Moses tokens.")
@click.option(
    "--pieces",
    is_flag=True,
    help="Draw the subword pieces (BPE 'P@@ lé@@ iades', SentencePiece) the model attended over, "
    "not the words they make.",
)
@options.runtime
@options.verbosity
def align_plot(
    alignments: str | None,
    sentences: str,
    output: str,
    model_paths: tuple[str, ...],
    source: str | None,
    target: str | None,
    tokenized: bool,
    pieces: bool,
    **runtime: Any,
) -> None:
    """Attention heatmaps (the paper's Figure 3): source words across, generated words down,
    black for 0 and white for 1. Subword pieces are merged into words: a source word's column is
    the sum of its pieces' columns, a target word's row the mean of its pieces' rows."""
    from ..align.heatmap import (
        from_alignment_file,
        from_pharaoh,
        output_paths,  # here: numpy and matplotlib
        parse_sentences,
        plot,
    )  # load to draw only

    lines = parse_sentences(sentences)
    output_paths(output, lines)  # a bad suffix fails before any work
    if bool(alignments) == bool(model_paths):
        raise UserError(
            "give either an alignment file from 'translate --alignments' or -m MODEL with --source and --target"
        )
    if model_paths:
        if not (source and target):
            raise UserError("-m needs --source and --target files")
        from ..translate.forced import from_model  # here: torch loads for a model only

        maps = from_model(model_paths, source, target, lines, tokenized, options.runtime_config(runtime))
    elif source or target:
        assert alignments is not None
        if not (source and target):
            raise UserError("Pharaoh links need both --source and --target (Moses tokens)")
        maps = from_pharaoh(alignments, source, target, lines)
    else:
        assert alignments is not None
        maps = from_alignment_file(alignments, lines)
    for path in plot(maps, output, pieces):
        log(f"wrote {path}")


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
    """Word-align a tokenized parallel corpus with eflomal (pip install 'nmtkit[align]'): Pharaoh
    i-j pairs over its Moses tokens, one line per sentence pair, for 'preprocess --align-suffix'
    and 'train --guided-alignment-weight'."""
    from ..align.statistical import word_align as run  # here: the aligner's code loads to align only

    out = Path(f"{train}.{align_suffix}")
    done = run(Path(f"{train}.{source_lang}"), Path(f"{train}.{target_lang}"), out, symmetrize)
    log(f"{out}: {done['links']:,} links over {done['pairs']:,} pairs ({symmetrize}) in {done['seconds']:.0f} s")


COMMANDS = (align, align_plot, word_align)
