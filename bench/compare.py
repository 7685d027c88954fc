"""The table of ``make compare``: every architecture at one budget, on the dev set.

``python -m bench.compare RUNS NAME… [--doc docs/luong.md]`` reads,
for each run ``RUNS/NAME``, what the Makefile's steps wrote: ``dev-bleu.json``
(``nmtkit score --output-format json`` of its beam-search output), ``dev-nll.json``
(``nmtkit score -m --data --output-format json``) and ``last.pt`` (updates, time,
parameters). It writes ``RUNS/table.md`` and, with ``--doc``, puts the
table between that page's ``<!-- compare:begin -->`` and
``<!-- compare:end -->`` lines (``make compare RESULTS_DIR=results``: docs/luong.md). The caption names
the machine (the first run's ``machine.json``) and the day the last run ended. A missing file is an
error, never a blank cell.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

import click

from nmtkit import checkpoint
from nmtkit.core.command import Command
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write
from nmtkit.core.machine import MACHINE
from nmtkit.core.machine import describe as machine_text

from .report import _f, _json

BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"


def describe(name: str) -> tuple[str, str, str, str]:
    """(model, attention, score, input feeding) of a run name such as ``luong_local-p_general_feed``."""
    if name == "rnnsearch":
        return "RNNsearch", "additive", "concat", "–"
    if not name.startswith("luong_"):
        return {"rnnencdec": "RNNencdec"}.get(name, name), "none", "–", "–"
    _, window, score, feed = name.split("_")
    return "Luong", window, score, "yes" if feed == "feed" else "no"


def row(run: Path) -> dict[str, Any]:
    bleu = _json(run / "dev-bleu.json", "dev BLEU")["systems"][0]
    nll = _json(run / "dev-nll.json", "dev NLL")["corpus_nll"]
    last = run / "last.pt"
    if not last.is_file():
        raise UserError(f"{last}: missing (the training run)")
    ckpt = checkpoint.load(last)
    progress = ckpt.training.progress
    return {
        "bleu": bleu["bleu"],
        "bleu_tok": bleu.get("bleu_tok"),
        "nll": nll["nll"],
        "ppl": nll["perplexity"],
        "updates": progress.step,
        "minutes": progress.seconds / 60,
        "params": ckpt.parameters / 1e6,
    }


def table(runs: Path, names: list[str]) -> str:
    rows = {name: row(runs / name) for name in names}
    budgets = {r["updates"] for r in rows.values()}
    ended = max((runs / name / "last.pt").stat().st_mtime for name in names)
    seen = runs / names[0] / MACHINE
    where = f" on {machine_text(json.loads(seen.read_text()))}" if seen.is_file() else ""
    lines = [
        f"Dev set (Bible, {len(names)} runs of {', '.join(map(str, sorted(budgets)))} updates each, trained{where}, "
        f"the last ending {datetime.date.fromtimestamp(ended).isoformat()}); "
        "BLEU is sacreBLEU on detokenized beam-search output, tokenized BLEU on Moses tokens; "
        "NLL per sentence under teacher forcing.",
        "",
        "| Model | Attention | Score | Input feeding | Params (M) | Train min | Dev NLL | Dev ppl "
        "| Dev BLEU | Dev BLEU (tok) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        model, window, score, feed = describe(name)
        lines.append(
            f"| {model} | {window} | {score} | {feed} | {r['params']:.1f} | {r['minutes']:.1f} "
            f"| {_f(r['nll'])} | {_f(r['ppl'])} | {_f(r['bleu'])} | {_f(r['bleu_tok'])} |"
        )
    return "\n".join(lines) + "\n"


def into_doc(doc: Path, text: str) -> None:
    """Put ``text`` between the BEGIN and END lines of the Markdown page ``doc``."""
    old = doc.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(old):
        raise UserError(f"{doc}: has no '{BEGIN}' … '{END}' block for the table")
    with atomic_write(doc) as fh:
        fh.write(pattern.sub(lambda _: f"{BEGIN}\n{text}{END}", old))


@click.command("compare", cls=Command)
@click.argument("runs", type=click.Path(file_okay=False, exists=True))
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--doc",
    "--readme",
    "doc",
    type=click.Path(dir_okay=False, exists=True),
    help="Put the table into this Markdown page too, between its compare markers.",
)
def main(runs: str, names: tuple[str, ...], doc: str | None) -> None:
    """Write RUNS/table.md (and the block of the page --doc) from the runs NAMES."""
    text = table(Path(runs), list(names))
    with atomic_write(Path(runs) / "table.md") as fh:
        fh.write(text)
    if doc:
        into_doc(Path(doc), text)
    click.echo(text, nl=False)


if __name__ == "__main__":
    main()
