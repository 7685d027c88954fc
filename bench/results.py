"""Measured figures as files, and the pages' tables rendered from them.

A result is one JSON file under ``results/`` (:func:`record` writes it): what was measured, the
command that measured it, the machine, the date, the commit, and its figures, each a label and a
number. A page quotes results in a block it does not write by hand::

    <!-- results: demo paper -->
    | result | figures | command | machine | date |
    ...
    <!-- /results -->

``python -m bench.results render PAGE...`` (``make results``) rewrites each block from the files it
names; tests/test_results.py fails when a block differs from its files, so a page never quotes a
figure its file does not hold, and a superseded figure leaves the page when its file is rewritten.

    python -m bench.results record NAME --title T --command C [--figure LABEL=NUMBER]...
        [--json-figure LABEL=FILE:KEY.KEY]... [--machine-of RUN_DIR] [--note TEXT]
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import click

from nmtkit.core.command import Command, Group
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write
from nmtkit.core.machine import describe, machine

CHECKOUT = Path(__file__).resolve().parents[1]
RESULTS = CHECKOUT / "results"
BLOCK = re.compile(r"(<!-- results: (?P<names>[\w\- ]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)
HEADER = "| result | figures | command | machine | date, commit |\n|---|---|---|---|---|\n"


def number(value: float) -> str:
    """A figure as the pages print it: thousands separated, a float's own digits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"a figure must be a number, not {value!r}")
    return f"{value:,}"


def load(name: str, where: Path = RESULTS) -> dict[str, Any]:
    path = where / f"{name}.json"
    try:
        result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such result (python -m bench.results record {name} ...)") from None
    except json.JSONDecodeError as bad:
        raise UserError(f"{path}: not a result file ({bad.msg})") from None
    return result


def row(result: dict[str, Any]) -> str:
    """One table row: the figures in their recorded order."""
    figures = "; ".join(f"{label}: {number(value)}" for label, value in result["figures"].items())
    cells = [
        result["title"],
        figures,
        f"`{result['command']}`",
        result["machine"],
        f"{result['date']}, {result['commit']}",
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"


def table(names: list[str], where: Path = RESULTS) -> str:
    return HEADER + "".join(row(load(n, where)) for n in names)


def rendered(text: str, where: Path = RESULTS) -> str:
    """``text`` with every results block rewritten from its files."""
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("names").split(), where) + m.group(4), text)


def stale_blocks(text: str, where: Path = RESULTS) -> list[str]:
    """The blocks of ``text`` that differ from their files (their names)."""
    return [m.group("names") for m in BLOCK.finditer(text) if m.group("body") != table(m.group("names").split(), where)]


def commit() -> str:
    """The checkout's commit, ``-dirty`` when the tree has uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=CHECKOUT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=CHECKOUT, capture_output=True
        )
    except FileNotFoundError:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else "unknown"


def json_figure(spec: str) -> tuple[str, float]:
    """``LABEL=FILE:KEY.KEY`` → (LABEL, the number at that key of that JSON file)."""
    label, _, where = spec.partition("=")
    path, _, keys = where.rpartition(":")
    if not label or not path or not keys:
        raise UserError(f"--json-figure {spec!r}: give LABEL=FILE:KEY.KEY")
    try:
        value: Any = json.loads(Path(path).read_text(encoding="utf-8"))
        for key in keys.split("."):
            value = value[int(key)] if isinstance(value, list) else value[key]
    except (OSError, json.JSONDecodeError, KeyError, IndexError, ValueError) as bad:
        raise UserError(f"--json-figure {spec!r}: {bad}") from None
    return label, value


def record(
    name: str,
    title: str,
    command: str,
    figures: dict[str, float],
    machine_text: str,
    note: str | None = None,
    into: Path = RESULTS,
) -> dict[str, Any]:
    """Write ``results/NAME.json`` (replacing an older run's: one current figure per claim). A float
    is kept to two decimals, or whole from 1,000 up (a speed)."""
    for value in figures.values():
        number(value)
    figures = {k: v if isinstance(v, int) else round(v) if abs(v) >= 1000 else round(v, 2) for k, v in figures.items()}
    result = {
        "title": title,
        "command": command,
        "machine": machine_text,
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "figures": figures,
    } | ({"note": note} if note else {})
    into.mkdir(parents=True, exist_ok=True)
    with atomic_write(into / f"{name}.json") as out:
        out.write(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return result


@click.command("record", cls=Command)
@click.argument("name")
@click.option("--title", required=True, help="What was measured, as the table names it.")
@click.option("--command", "command_", required=True, help="The command that measured it.")
@click.option("--figure", "given", multiple=True, help="LABEL=NUMBER.")
@click.option("--json-figure", "from_json", multiple=True, help="LABEL=FILE:KEY.KEY, a number in a JSON file.")
@click.option("--machine-of", type=click.Path(exists=True, path_type=Path), help="A run whose machine.json to name.")
@click.option("--note", help="One line on how the figures were made, where the command does not say.")
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), default=RESULTS, help="The results folder.")
def record_command(
    name: str,
    title: str,
    command_: str,
    given: tuple[str, ...],
    from_json: tuple[str, ...],
    machine_of: Path | None,
    note: str | None,
    into: Path,
) -> None:
    """Write results/NAME.json from the figures given."""
    figures: dict[str, float] = {}
    for spec in given:
        label, _, value = spec.partition("=")
        try:
            figures[label] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            raise UserError(f"--figure {spec!r}: give LABEL=NUMBER") from None
    figures |= dict(json_figure(spec) for spec in from_json)
    seen = json.loads((machine_of / "machine.json").read_text()) if machine_of else machine()
    record(name, title, command_, figures, describe(seen), note, into)


@click.command("render", cls=Command)
@click.argument("pages", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def render_command(pages: tuple[Path, ...]) -> None:
    """Rewrite the results blocks of PAGES from results/."""
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if (new := rendered(text)) != text:
            with atomic_write(page) as out:
                out.write(new)


@click.group("results", cls=Group)
def main() -> None:
    """Measured figures as files, and the pages' tables rendered from them."""


main.add_command(record_command)
main.add_command(render_command)

if __name__ == "__main__":
    main()
