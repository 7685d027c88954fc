"""``nmtkit score-align``: word alignments against gold links."""

from __future__ import annotations

import json

import click

from ...core.command import Command
from ...core.wording import counted
from .. import options


@click.command(
    "score-align",
    cls=Command,
    epilog="""\b
Example:
  nmtkit align -m best.pt --source test.en --target test.fr -o test.links
  nmtkit score-align test.links -g gold.links""",
)
@click.argument("hypothesis", type=options.FilePath(allow_dash=True))
@click.option(
    "-g",
    "--gold",
    required=True,
    type=options.FilePath(),
    help="Gold alignments: per line, sure links i-j and possible links i?j (from 0).",
)
@options.json_output
@options.verbosity
def score_align(hypothesis: str, gold: str, output_format: str) -> None:
    """Precision, recall and alignment error rate (Och & Ney) of Pharaoh alignments against gold links."""
    from ...align.aer import score_files

    r = score_files(hypothesis, gold)
    click.echo(
        json.dumps(r)
        if output_format == "json"
        else f"AER {r['aer']:.2f}  precision {r['precision']:.2f}  recall {r['recall']:.2f}  "
        f"({counted(r['sentences'], 'sentence')}; {counted(r['links'], 'link')} against "
        f"{r['sure']:,} sure and {r['possible']:,} possible)"
    )
