"""``nmtkit info``: what a checkpoint, a training run or a binarized corpus holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ...core.command import Command
from ...core.console import Results
from ...core.errors import UserError
from ...data.manifest import MANIFEST
from ...data.summary import corpus_summary
from .. import options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit info runs/demo/best.pt                  # a checkpoint
  nmtkit info runs/demo                          # a training run: how far, how fast, which best.pt
  nmtkit info data-bin                           # a binarized corpus: splits, vocabularies, drops
  nmtkit info runs/demo/best.pt --output-format json | python -m json.tool""",
)
@click.argument("path", metavar="PATH", type=click.Path())
@options.json_output
@options.verbosity
def info(path: str, output_format: str) -> None:
    """What a checkpoint holds (architecture and sizes, languages and vocabularies, training
    progress and best dev score, the resolved training settings); what a training run's
    SAVE_DIR says (updates, minutes, speed, machine, best.pt); or a binarized corpus's summary."""
    found: dict[str, Any]
    as_json = output_format == "json"
    if not Path(path).exists():  # not "no such checkpoint": it may have meant a run or a corpus
        raise UserError(f"{path}: no such checkpoint, training run or corpus")
    if Path(path).is_dir() and (Path(path) / MANIFEST).exists():
        from ...data.binarized import Corpus  # numpy: the files checked against the manifest

        corpus = Corpus(path)
        corpus.check()
        manifest = corpus.manifest
        if not as_json:
            Results().print(corpus_summary(manifest))
            return
        found = manifest.to_dict()
    elif Path(path).is_dir():
        from ...train.runlog import run_facts, run_summary

        if not as_json:
            click.echo(run_summary(path))
            return
        found = run_facts(path)
    else:
        from ...checkpoint.info import describe, format_info  # torch: a checkpoint's tensors

        found = describe(path)
        if not as_json:
            click.echo(format_info(found))
            return
    click.echo(json.dumps(found))
