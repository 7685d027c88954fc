"""``nmtkit average``: a checkpoint whose weights are the mean of others'."""

from __future__ import annotations

import click

from ...core.command import Command
from ...core.console import log
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Example (the last three validations of a run trained with --keep-last 3):
  nmtkit average runs/x/update-*.pt -o runs/x/avg.pt""",
)
@click.argument("model_paths", metavar="CKPT...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The averaged checkpoint.")
@options.verbosity
def average(model_paths: tuple[str, ...], output: str) -> None:
    """Average the weights of checkpoints of one model into a checkpoint that translate takes."""
    from ...checkpoint.average import write_average

    write_average(list(model_paths), output)
    log(f"averaged {len(model_paths)} checkpoints into {output}")
