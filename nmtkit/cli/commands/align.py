"""``nmtkit align``: the attention's word alignments of given translations (forced decoding)."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Example (the attention's alignment of reference translations, for score-align):
  nmtkit align -m runs/demo/best.pt --source test.en --target test.fr -o test.links
Both directions' models, their links combined:
  nmtkit align -m en-fr/best.pt -m fr-en/best.pt --source test.en --target test.fr
The references' attention too, for heatmaps:
  nmtkit align -m runs/demo/best.pt --source test.en --target test.fr --alignments ref.align -o ref.links""",
)
@options.models(
    "Checkpoint; repeat for an ensemble (attention averaged), or give the models of both directions "
    "(their links combined by --combine; the direction that reads --source is the one its file's name, "
    "PREFIX.LANG, says, else --target's, else the first model's)."
)
@config_options()
@click.option("--source", required=True, type=options.FilePath(), help="Source sentences, one a line.")
@click.option("--target", required=True, type=options.FilePath(), help="Their translations, one a line.")
@click.option("-o", "--output", type=options.FilePath(allow_dash=True), help="Pharaoh file [default: stdout].")
@click.option(
    "--alignments",
    type=options.FilePath(),
    help="Also write each pair's attention matrix with its tokens and log p (the models that read --source), "
    "as translate --alignments does (JSON lines, for align-plot).",
)
@click.option("--tokenized", is_flag=True, help="The files are Moses tokens (the links count them as they are).")
@options.links
@options.workers
@options.runtime
@options.verbosity
def align(
    model_paths: tuple[str, ...],
    source: str,
    target: str,
    output: str | None,
    alignments: str | None,
    tokenized: bool,
    workers: int,
    **values: Any,
) -> None:
    """Word alignments of given translations from the model's attention (forced decoding): each target
    word linked to the source word it attends to most, as Pharaoh i-j pairs over Moses tokens. Given
    models of both directions (-m en-fr.pt -m fr-en.pt), the two directions' links combined."""
    from ...core.files import output_named, refuse_overwriting, refuse_two_on_stdout
    from ...core.streams import STDIO
    from ...translate.forced import align_file

    refuse_two_on_stdout([("links", output or STDIO), ("alignments", alignments)], "-o, --alignments")
    refuse_overwriting(
        [output_named("-o", output), ("--alignments", alignments)],
        [("--source", source), ("--target", target), *(("-m", m) for m in model_paths)],
    )
    links = options.link_config(values, model_paths)
    runtime = options.runtime_config(values)
    align_file(list(model_paths), source, target, output, tokenized, runtime, links, workers, alignments)
