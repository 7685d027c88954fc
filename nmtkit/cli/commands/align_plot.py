"""``nmtkit align-plot``: the attention as pictures (the paper's Figure 3)."""

from __future__ import annotations

import os
from typing import Any

import click

from ...core.command import Command
from ...core.console import log
from ...core.errors import UserError
from .. import options
from ..config_file import config_options


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
@config_options()
@click.option("-n", "--sentences", required=True, help="Line numbers to plot, from 1: '3,10-12'.")
@click.option(
    "-o",
    "--output",
    required=True,
    type=options.FilePath(),
    help="Picture (.png/.svg/.pdf); several sentences get -LINE before the suffix.",
)
@click.option(
    "-m",
    "--model",
    "model_paths",
    multiple=True,
    type=options.FilePath(checkpoint=True),
    help="Instead of an alignment file: force this checkpoint on --source/--target pairs.",
)
@click.option(
    "--source",
    type=options.FilePath(),
    help="With -m: source lines. With a Pharaoh file: its source side, in Moses tokens.",
)
@click.option(
    "--target",
    type=options.FilePath(),
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
    the sum of its pieces' columns, a target word's row the mean of its pieces' rows. ALIGNMENTS is
    a file of translate --alignments or align --alignments, or Pharaoh links (a gold file's
    possible links i?j drawn grey) with --source and --target."""
    from ...align.heatmap import from_alignment_file, from_pharaoh, output_paths, parse_sentences, plot
    from ...core.files import refuse_overwriting, refuse_two_on_stdin
    from ...core.plot import check_format

    lines = parse_sentences(sentences)
    check_format(output)  # a bad suffix fails before any work
    inputs = [("ALIGNMENTS", alignments), ("--source", source), ("--target", target)]
    refuse_two_on_stdin(inputs)
    drawn = [("-o", str(path)) for path in output_paths(output, lines)]
    refuse_overwriting(drawn, [*inputs, *(("-m", m) for m in model_paths)])
    if folder := next((path for _, path in drawn if os.path.isdir(path)), None):  # the pictures before it were left
        raise UserError(f"-o {output}: {folder} is a directory, where a picture would be written")
    if bool(alignments) == bool(model_paths):
        raise UserError(
            "give either an alignment file from 'translate --alignments' or -m MODEL with --source and --target"
        )
    if not model_paths:
        options.refuse_idle_runtime(runtime, "ALIGNMENTS is drawn as it is")
    if model_paths:
        if not (source and target):
            raise UserError("-m needs --source and --target files")
        from ...translate.forced import from_model  # torch, for a model alone

        maps = from_model(model_paths, source, target, lines, tokenized, options.runtime_config(runtime))
    elif tokenized:
        raise UserError("--tokenized says how -m reads --source and --target: add -m, or leave it out")
    elif source or target:
        assert alignments is not None
        if pieces:
            raise UserError("--pieces draws a model's subword pieces: Pharaoh links are between words")
        maps = from_pharaoh(alignments, source, target, lines)
    else:
        assert alignments is not None
        maps = from_alignment_file(alignments, lines)
    for path in plot(maps, output, pieces, asked=lines):
        log(f"wrote {path}")
