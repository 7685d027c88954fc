"""``nmtkit info``, ``average`` and ``lexicon``: what a checkpoint holds, and checkpoints made
from others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..core.command import Command
from ..core.console import Results, log
from ..data.manifest import MANIFEST, read_manifest
from ..data.settings import LexiconConfig
from . import options

_L = LexiconConfig()


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
    if Path(path).is_dir() and (Path(path) / MANIFEST).exists():
        from ..data.summary import corpus_summary  # here: numpy loads to summarise a corpus only

        manifest = read_manifest(path)
        if not as_json:
            Results().print(corpus_summary(manifest))
            return
        found = manifest.to_dict()
    elif Path(path).is_dir():
        from ..train.runlog import run_facts, run_summary  # here: torch loads to read best.pt

        if not as_json:
            click.echo(run_summary(path))
            return
        found = run_facts(path)
    else:
        from ..checkpoint.info import describe, format_info  # here: torch loads to read a checkpoint

        found = describe(path)
        if not as_json:
            click.echo(format_info(found))
            return
    click.echo(json.dumps(found))


@click.command(
    cls=Command,
    epilog="""\b
Example (the last three validations of a run kept with --keep-validations):
  nmtkit average runs/x/update-8000.pt runs/x/update-9000.pt runs/x/update-10000.pt -o runs/x/avg.pt""",
)
@click.argument("model_paths", metavar="CKPT...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The averaged checkpoint.")
@options.verbosity
def average(model_paths: tuple[str, ...], output: str) -> None:
    """Average the weights of checkpoints of one model into a checkpoint that translate takes."""
    from ..checkpoint.average import write_average  # here: torch loads to read checkpoints

    write_average(list(model_paths), output)
    log(f"averaged {len(model_paths)} checkpoints into {output}")


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit lexicon runs/old/best.pt --data data-bin                 # add one to a checkpoint, in place
  nmtkit lexicon best.pt --data data-bin --frequent 2000 --per-source 100 -o best-wide.pt""",
)
@click.argument("model_path", metavar="CKPT", type=click.Path(dir_okay=False))
@options.data("The binarized corpus the model was trained on (same vocabularies).", required=True)
@options.setting("--frequent", _L, click.IntRange(0), "Target words always in the list: the N most frequent.")
@options.setting(
    "--per-source",
    _L,
    click.IntRange(1),
    "Translations listed per source word (by Dice's coefficient over the training pairs).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here [default: CKPT itself].")
@options.verbosity
def lexicon(model_path: str, data_bin: str, frequent: int, per_source: int, output: str | None) -> None:
    """Build the candidate lists of translate --shortlist from a corpus and store them in a checkpoint
    (training stores one already; this is for older checkpoints or other sizes)."""
    from ..checkpoint.lexicon import add_lexicon  # here: torch loads to read a checkpoint

    add_lexicon(model_path, data_bin, output or model_path, frequent, per_source)
    log(f"{output or model_path}: lexicon of {frequent:,} frequent words and {per_source} per source word")


COMMANDS = (info, average, lexicon)
