"""``make demo``'s steps that are not nmtkit commands, and the demo's training recipe.

``python -m bench.demo samples SOURCE HYPOTHESES REFERENCE [-n 5]`` prints ``n``
lines drawn with a fixed seed, each source beside its translation and reference, as a
Markdown table: what a reader looks at before any BLEU.

The demo's ``nmtkit train`` flags are written here once (:data:`DEMO_RECIPE`,
:func:`train_flags`): the benchmarks that train the demo's model take them from here, and
``python -m bench.demo flags [--recipe cpu|study|demo]`` prints them for make.
"""

from __future__ import annotations

import random

import click

from nmtkit.core.command import Command, Group
from nmtkit.core.errors import UserError
from nmtkit.core.files import read_lines
from nmtkit.core.machine import this_cpu

# The demo's recipe (docs/cpu-training.md): --schedule cpu; before 1.0, the studies' recipe alone
CPU_RECIPE = ("--schedule", "cpu")
STUDY_RECIPE = ("--preset", "small", "--optimizer", "adam", "--lr", "5e-3", "--best-by", "nll")
# and the demo's validations: every 200 updates, each one's model kept (for the curves and benchmarks)
DEMO_RECIPE = (*CPU_RECIPE, "--valid-every", "200", "--keep-validations")
RECIPES = {"cpu": CPU_RECIPE, "study": STUDY_RECIPE, "demo": DEMO_RECIPE}


def train_flags(minutes: float) -> list[str]:
    """The demo's ``nmtkit train`` flags for a budget of ``minutes``: its recipe, and bf16 where the
    CPU has native bfloat16 (make demo's DEMO_TRAIN)."""
    return [*DEMO_RECIPE, "--max-minutes", str(minutes)] + (["--bf16"] if this_cpu().native_bf16 else [])


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


@click.command("flags", cls=Command)
@click.option(
    "--recipe", type=click.Choice(list(RECIPES)), default="demo", show_default=True, help="Which recipe's flags."
)
def flags(recipe: str) -> None:
    """Print the flags of one of the demo's recipes, for nmtkit train."""
    click.echo(" ".join(RECIPES[recipe]))


@click.group("demo", cls=Group)
def main() -> None:
    """Steps of make demo that are not nmtkit commands."""


main.add_command(samples)
main.add_command(flags)

if __name__ == "__main__":
    main()
