"""``nmtkit average``: a checkpoint whose weights are the mean of others'."""

from __future__ import annotations

from pathlib import Path

import click

from ...core.command import Command
from ...core.console import log
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Example (the last five validations of a run trained with --keep-last 5, or more):
  nmtkit average runs/x --last 5 -o runs/x/avg.pt""",
)
@click.argument("model_paths", metavar="CKPT|RUN_DIR...", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=options.FilePath(), help="The averaged checkpoint.")
@click.option(
    "--last",
    type=click.IntRange(min=2),
    help="Only the last N: a run directory's update-N.pt in update order, files in the order given.",
)
@options.verbosity
def average(model_paths: tuple[str, ...], output: str, last: int | None) -> None:
    """Average the weights of checkpoints of one model into a checkpoint that translate takes: the
    files given, and the kept validations (update-N.pt) of each run directory given (those of the
    run its log describes: an earlier run's, which train --reset leaves, are left out)."""
    from ...checkpoint.average import inputs, write_average
    from ...core.files import refuse_overwriting
    from ...train.runlog import kept_models

    found: list[str | Path] = list(inputs(list(model_paths), last or 0, kept_models))
    refuse_overwriting([("-o", output)], [("CHECKPOINT", str(path)) for path in found])
    averaged = write_average(found, output).averaged
    log(f"averaged {len(averaged)} checkpoints ({averaged[0].name} to {averaged[-1].name}) into {output}")
