"""``make demo``'s steps that are not nmtkit commands: a few translations to read.

``python -m nmtkit.recipes.demo samples SOURCE HYPOTHESES REFERENCE [-n 5]`` prints ``n``
lines drawn with a fixed seed, each source beside its translation and reference, as a
Markdown table: what a reader looks at before any BLEU.
"""

from __future__ import annotations

import random

import click

from ..core.command import Command, Group
from ..core.errors import UserError
from ..core.files import read_lines


def sample_lines(source: str, hypotheses: str, reference: str, n: int = 5, seed: int = 1) -> str:
    """``n`` lines drawn at random (fixed seed) of three parallel files, as a Markdown table."""
    rows = [list(read_lines(p)) for p in (source, hypotheses, reference)]
    if len({len(r) for r in rows}) != 1:
        raise UserError(f"{source}, {hypotheses} and {reference} differ in line count")
    picked = sorted(random.Random(seed).sample(range(len(rows[0])), min(n, len(rows[0]))))
    lines = ["| line | source | nmtkit | reference |", "|---:|---|---|---|"]
    for i in picked:
        cells = (r[i].replace("|", "\\|") for r in rows)
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@click.command("samples", cls=Command)
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("hypotheses", type=click.Path(dir_okay=False))
@click.argument("reference", type=click.Path(dir_okay=False))
@click.option("-n", "count", type=click.IntRange(1), default=5, show_default=True, help="Lines to show.")
@click.option("--seed", type=int, default=1, show_default=True, help="Which lines (the same for the same seed).")
def samples(source: str, hypotheses: str, reference: str, count: int, seed: int) -> None:
    """Print COUNT lines of SOURCE beside their HYPOTHESES and REFERENCE."""
    click.echo(sample_lines(source, hypotheses, reference, count, seed))


@click.group("demo", cls=Group)
def main() -> None:
    """Steps of make demo that are not nmtkit commands."""


main.add_command(samples)

if __name__ == "__main__":
    main()
