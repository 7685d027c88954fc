"""``nmtkit lexicon``: translate --shortlist's candidate lists, stored in a checkpoint."""

from __future__ import annotations

import click

from ...core.command import Command
from ...core.console import log
from ...data.settings import LexiconConfig
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit lexicon runs/old/best.pt --data data-bin                 # add one to a checkpoint, in place
  nmtkit lexicon best.pt --data data-bin --frequent 2000 --per-source 100 -o best-wide.pt""",
)
@click.argument("model_path", metavar="CKPT", type=options.FilePath(checkpoint=True))
@options.data("The binarized corpus the model was trained on (same vocabularies).", required=True)
@options.option(LexiconConfig, "frequent")
@options.option(LexiconConfig, "per_source")
@click.option("-o", "--output", type=options.FilePath(), help="Write here [default: CKPT itself].")
@options.verbosity
def lexicon(model_path: str, data_bin: str, frequent: int, per_source: int, output: str | None) -> None:
    """Build the candidate lists of translate --shortlist from a corpus and store them in a checkpoint
    (training stores one already; this is for older checkpoints or other sizes)."""
    from ...checkpoint.lexicon import add_lexicon
    from ...core.files import refuse_overwriting

    refuse_overwriting([("-o", output)], [("--data", data_bin)])  # the checkpoint itself it may update
    made = add_lexicon(model_path, data_bin, output or model_path, frequent, per_source)
    listed = made.table.shape[1]
    passes = [
        f"--{name} {asked:,}"
        for name, asked, kept in (("frequent", frequent, made.frequent), ("per-source", per_source, listed))
        if kept < asked
    ]
    whole = (
        f" (every target word: {' and '.join(passes)} {'pass' if len(passes) > 1 else 'passes'} the vocabulary)"
        if passes
        else ""
    )
    log(f"{output or model_path}: lexicon of {made.frequent:,} frequent words and {listed:,} per source word{whole}")
