"""``make demo-curve``: the CPU trials behind the demo's recipe, their table and learning curve.

Every trial trains the small RNNsearch for the same wall-clock budget on
this machine, keeping the model of each validation (``--keep-validations``).
Each kept model and ``best.pt`` then translates the Bible test set (beam 5),
scored against Segond and against all three French versions. The table
(dev BLEU after 5, 10 and 20 minutes, updates, speed, test BLEU) goes
between the ``<!-- trials:begin -->`` and ``<!-- trials:end -->`` lines of a
Markdown file, with the machine each trial ran on (recorded when it
started, ``machine.json``); the picture is test BLEU against minutes, and dev NLL. The
demo's own run (``--demo-run``) comes last, with its own flags.

Every step is skipped when its output exists, so an interrupted run goes on
where it stopped; a trial half trained resumes (``nmtkit train`` does).

    python -m bench.cpu_trials --runs runs/trials --data all=data/bible \\
        --data k-l=data/bible-kl --demo-run runs/demo --doc docs/cpu-training.md --plot docs/img/demo-curve.png
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from nmtkit import checkpoint
from nmtkit.checkpoint.average import kept_validations
from nmtkit.core.command import Command
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write
from nmtkit.core.machine import describe
from nmtkit.core.plot import pyplot
from nmtkit.evaluate.metrics import PAPER, Metrics
from nmtkit.evaluate.score import evaluate
from nmtkit.train.runlog import RunLog

COMMON = ("--preset", "small", "--optimizer", "adam", "--valid-every", "200", "--patience", "0", "--keep-validations")
SEGOND = ("test.fr",)
ALL_REFS = ("test.fr", "test.ref-ostervald.fr", "test.ref-darby.fr")


@dataclass(frozen=True)
class Trial:
    name: str
    label: str
    pairs: str  # a --data key: which pairings of the Bible it trains on
    vocab: str  # the data-bin's vocabulary tag (the Makefile's VOCAB_TAG)
    flags: tuple[str, ...]


# What make demo trains with (the Makefile's demo rule), for the demo's row
DEMO_RECIPE = "joint BPE 8k, `--schedule cpu`"

TRIALS = (
    Trial("words-adam1e-3", "30,000 words, Adam 1e-3 (the demo before)", "all", "words30000", ("--lr", "1e-3")),
    Trial("bpe-adam1e-3", "joint BPE 8k, Adam 1e-3", "all", "bpe8000", ("--lr", "1e-3")),
    Trial("bpe-adam3e-3", "joint BPE 8k, Adam 3e-3", "all", "bpe8000", ("--lr", "3e-3")),
    Trial("bpe-adam5e-3", "joint BPE 8k, Adam 5e-3", "all", "bpe8000", ("--lr", "5e-3")),
    Trial(
        "kl-bpe-adam3e-3",
        "King James → Segond only, joint BPE 8k, Adam 3e-3",
        "k-l",
        "bpe8000",
        ("--lr", "3e-3", "--best-by", "nll"),
    ),
    Trial(
        "bpe-adam5e-3-shortlist",
        "joint BPE 8k, Adam 5e-3, `--sampled-softmax 2000`",
        "all",
        "bpe8000",
        ("--lr", "5e-3", "--sampled-softmax", "2000", "--best-by", "nll"),
    ),
)


# The levers of issue 33, each alone on top of the demo's recipe, then together. They run to a
# count of updates (about what the demo makes in 20 minutes on a 2-core AVX2 EPYC) rather than to
# the clock, so that a lever that learns more per update is seen as such on a shared machine and
# the budgeted schedule is exact; speed is measured on its own (bin/profile-train, make bench).
LEVER_UPDATES = 1140
DEMO = ("--lr", "5e-3", "--best-by", "nll", "--fused-steps")  # fused: the same learning, sooner
LEVERS = (
    Trial("lever-base", "the demo's recipe (joint BPE 8k, Adam 5e-3, dev NLL)", "all", "bpe8000", DEMO),
    Trial(
        "lever-cosine",
        "+ `--lr-decay cosine --warmup 50`",
        "all",
        "bpe8000",
        (*DEMO, "--lr-decay", "cosine", "--warmup", "50"),
    ),
    Trial("lever-smooth", "+ `--label-smoothing 0.1`", "all", "bpe8000", (*DEMO, "--label-smoothing", "0.1")),
    Trial("lever-tied", "+ `--tie-embeddings`", "all", "bpe8000", (*DEMO, "--tie-embeddings")),
    Trial("lever-layernorm", "+ `--layer-norm`", "all", "bpe8000", (*DEMO, "--layer-norm")),
    Trial(
        "lever-three",
        "the schedule, smoothing and tied embeddings",
        "all",
        "bpe8000",
        (*DEMO, "--lr-decay", "cosine", "--warmup", "50", "--label-smoothing", "0.1", "--tie-embeddings"),
    ),
    Trial(
        "lever-all",
        "all four",
        "all",
        "bpe8000",
        (
            *DEMO,
            "--lr-decay",
            "cosine",
            "--warmup",
            "50",
            "--label-smoothing",
            "0.1",
            "--tie-embeddings",
            "--layer-norm",
        ),
    ),
)
SETS = ("recipe", "levers")  # the trials of each, and the markers of its table


def _write(path: Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)


def _nmtkit(*args: Any) -> None:
    cmd = [sys.executable, "-m", "nmtkit", *map(str, args)]
    if subprocess.run(cmd).returncode != 0:
        raise UserError(f"failed: nmtkit {' '.join(map(str, args))}")


def train(trial: Trial, run: Path, data: dict[str, Path], minutes: float, threads: int) -> None:
    if (run / "done").exists():
        return
    run.mkdir(parents=True, exist_ok=True)
    budget = ("--max-updates", LEVER_UPDATES) if trial in LEVERS else ("--max-minutes", minutes)
    _nmtkit(
        "train",
        data[trial.pairs] / f"data-bin-{trial.vocab}",
        "--save-dir",
        run,
        *COMMON,
        *trial.flags,
        *budget,
        "--threads",
        threads,
    )
    (run / "done").touch()


def models(run: Path) -> list[Path]:
    """best.pt, then the kept models in the order of their updates."""
    kept = kept_validations(run)
    return [run / "best.pt", *kept]


def test_bleu(model: Path, raw: Path, threads: int) -> dict[str, float]:
    """Beam-5 test BLEU of one model (cached next to it as ``test-<model>.json``)."""
    cache = model.with_name(f"test-{model.stem}.json")
    if cache.exists():
        cached: dict[str, float] = json.loads(cache.read_text())
        return cached
    hyp = model.with_name(f"test-{model.stem}.hyp.fr")
    if not hyp.exists():
        _nmtkit("translate", "-m", model, raw / "test.en", "-o", hyp, "--beam", 5, "--threads", threads)
    scores: dict[str, float] = {}
    for key, refs in (("segond", SEGOND), ("three", ALL_REFS)):
        system = evaluate([str(hyp)], [str(raw / r) for r in refs], clean=("verse-markers",), metrics=Metrics(PAPER))[
            "systems"
        ][0]
        scores |= {key: system["bleu"], f"{key}_tok": system["bleu_tok"]}
    _write(cache, json.dumps(scores) + "\n")
    return scores


def summarize(trial: Trial, run: Path, raw: Path, threads: int) -> dict[str, Any]:
    log = RunLog.read(run)
    curve: list[dict[str, Any]] = []
    for model in models(run):
        progress = checkpoint.load(model).training.progress
        curve.append(
            {
                "model": model.name,
                "step": progress.step,
                "minutes": progress.seconds / 60,
                **test_bleu(model, raw, threads),
            }
        )
    best, kept = curve[0], sorted(curve[1:], key=lambda c: c["step"])
    config = checkpoint.load(run / "best.pt").training.config.to_dict()
    return {"trial": trial, "log": log, "best": best, "curve": kept, "config": config, "machine": log.machine}


def _at(log: RunLog, minutes: float) -> str:
    v = log.last_before(minutes)
    return "–" if v is None or "dev_bleu_tok" not in v else f"{v['dev_bleu_tok']:.2f}"


def table(rows: list[dict[str, Any]], minutes: float) -> str:
    machines = sorted({describe(r["machine"]) for r in rows if r["machine"]})
    lines = [
        f"Made by `make demo-curve` on: {'; '.join(machines) or 'unrecorded'}. Every trial: "
        f"`nmtkit train DATA_BIN --save-dir RUN {' '.join(COMMON)} --max-minutes {minutes:g} --threads N` and "
        "its flags (`bench.cpu_trials.TRIALS`; the demo's row is `make demo`'s run, with its own flags); "
        "the columns are read from each run's checkpoint and log. Validation time counts. "
        "Dev BLEU: greedy, tokenized, at the last validation before 5, 10 "
        "and 20 minutes. Test: `best.pt`, beam 5, sacreBLEU on detokenized text against Segond "
        "(and against Segond, Ostervald and Darby), then tokenized BLEU.",
        "",
        "| trial | lr | updates | target tok/s | dev BLEU 5 / 10 / 20 min | best.pt: update (by) "
        "| test sacreBLEU (3 refs) | test tokenized BLEU (3 refs) |",
        "|---|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in rows:
        t, log, best, cfg = r["trial"], r["log"], r["best"], r["config"]
        lines.append(
            f"| {t.label} | {cfg['lr']:g} | {log.updates:,} | {log.tokens_per_s:,.0f} | "
            f"{_at(log, 5)} / {_at(log, 10)} / {_at(log, minutes)} | {best['step']:,} "
            f"({cfg.get('best_by', 'bleu')}) | {best['segond']:.2f} ({best['three']:.2f}) | "
            f"{best['segond_tok']:.2f} ({best['three_tok']:.2f}) |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path, by_updates: bool = False) -> None:
    """Test BLEU and dev NLL against minutes (the recipe trials, run to the clock) or against
    updates (the levers, run to a count, whose minutes a shared machine stretches)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in rows:
        label = r["trial"].label.replace("*", "").replace("`", "")  # Markdown in the table only
        if r["curve"]:
            left.plot(
                [c["step"] if by_updates else c["minutes"] for c in r["curve"]],
                [c["segond"] for c in r["curve"]],
                "o-",
                label=label,
            )
        valid = [v for v in r["log"].validations if not math.isnan(v["seconds"])]
        if r["trial"].vocab.startswith("bpe"):  # NLL per sentence: comparable across BPE runs
            right.plot(
                [v["step"] if by_updates else v["seconds"] / 60 for v in valid],
                [v["dev_nll"] for v in valid],
                ".-",
                label=label,
            )
    x = "updates" if by_updates else "minutes of training"
    left.set(xlabel=x, ylabel="test sacreBLEU (Segond, beam 5)", title="Test BLEU of the model at each validation")
    right.set(xlabel=x, ylabel="dev NLL per sentence", title="Dev NLL (joint BPE runs)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    machines = sorted({describe(r["machine"]) for r in rows if r["machine"]})
    fig.suptitle("; ".join(machines), fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def lever_table(rows: list[dict[str, Any]]) -> str:
    """The levers' table: each row to the same count of updates, dev BLEU at three of them."""
    machines = sorted({describe(r["machine"]) for r in rows if r["machine"]})

    def dev_at(log: RunLog, step: int | None) -> str:
        v = next((v for v in log.validations if v["step"] == step), log.validations[-1] if step is None else None)
        return "–" if v is None or "dev_bleu_tok" not in v else f"{v['dev_bleu_tok']:.2f}"

    lines = [
        f"Made by `make demo-curve TRIAL_SET=levers` on: {'; '.join(machines) or 'unrecorded'}. Every "
        f"trial: `nmtkit train DATA_BIN --save-dir RUN {' '.join(COMMON)} --max-updates {LEVER_UPDATES} "
        "--threads N` and its flags (`bench.cpu_trials.LEVERS`; the demo's row is `make demo`'s run). "
        "Minutes are wall time with validations, on a machine that "
        "may have been shared: compare the updates' learning here, speed in bin/profile-train. Dev BLEU: "
        "greedy, tokenized. Test: `best.pt` (by dev NLL), beam 5, sacreBLEU against Segond (and the three "
        "versions), then tokenized BLEU.",
        "",
        "| trial | minutes | target tok/s | dev BLEU at 400 / 800 / last | best.pt | test sacreBLEU (3 refs) "
        "| test tokenized BLEU (3 refs) |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        log, best = r["log"], r["best"]
        lines.append(
            f"| {r['trial'].label} | {log.seconds / 60:.1f} | {log.tokens_per_s:,.0f} | "
            f"{dev_at(log, 400)} / {dev_at(log, 800)} / {dev_at(log, None)} | {best['step']:,} | "
            f"{best['segond']:.2f} ({best['three']:.2f}) | {best['segond_tok']:.2f} ({best['three_tok']:.2f}) |"
        )
    return "\n".join(lines)


def write_block(doc: Path, block: str, marker: str = "trials") -> None:
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    text = doc.read_text(encoding="utf-8") if doc.exists() else f"{begin}\n{end}\n"
    if begin not in text or end not in text:
        raise UserError(f"{doc}: no {begin} … {end} lines to write the table between")
    head, rest = text.split(begin, 1)
    doc.parent.mkdir(parents=True, exist_ok=True)
    _write(doc, f"{head}{begin}\n{block}\n{end}{rest.split(end, 1)[1]}")


@click.command("cpu-trials", cls=Command)
@click.option("--runs", type=click.Path(path_type=Path), required=True, help="One directory per trial goes here.")
@click.option(
    "--data",
    "data_dirs",
    multiple=True,
    required=True,
    metavar="PAIRS=DIR",
    help="Where the corpus of a pairing lies (DIR/raw, DIR/data-bin-TAG), e.g. all=data/bible.",
)
@click.option("--doc", type=click.Path(path_type=Path), required=True, help="Markdown file with the table markers.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), required=True)
@click.option("--minutes", type=float, default=20.0, show_default=True)
@click.option("--threads", type=int, default=2, show_default=True)
@click.option(
    "--demo-run",
    type=click.Path(path_type=Path),
    help="The demo's own run (`make demo`): its row comes last, and its kept models give the learning curve.",
)
@click.option("--only", multiple=True, help="Run these trials only (names); the table still lists all trained.")
@click.option(
    "--set",
    "trial_set",
    type=click.Choice(SETS),
    default="recipe",
    show_default=True,
    help="recipe: the trials behind the demo's recipe, to the clock; levers: issue 33's levers, to "
    "a count of updates (their own table, between the levers markers).",
)
def main(
    runs: Path,
    data_dirs: tuple[str, ...],
    doc: Path,
    plot_path: Path,
    minutes: float,
    threads: int,
    demo_run: Path | None,
    only: tuple[str, ...],
    trial_set: str,
) -> None:
    data = {k: Path(v) for k, _, v in (d.partition("=") for d in data_dirs)}
    chosen, marker = (TRIALS, "trials") if trial_set == "recipe" else (LEVERS, "levers")
    trials = [(t, runs / t.name) for t in chosen]
    if demo_run is not None:
        trials.append((Trial("demo", f"**the demo** (`make demo`: {DEMO_RECIPE})", "all", "bpe8000", ()), demo_run))
    rows = []
    raw = next(iter(data.values())) / "raw"
    for trial, run in trials:
        if trial.name == "demo":
            if not (run / "best.pt").exists():
                raise UserError(f"{run}: no best.pt; run make demo first")
            rows.append(summarize(trial, run, raw, threads))
            continue
        if trial.pairs not in data:
            raise UserError(f"trial {trial.name} needs --data {trial.pairs}=DIR")
        if not only or trial.name in only:
            train(trial, run, data, minutes, threads)
        if (run / "done").exists():
            rows.append(summarize(trial, run, raw, threads))
    block = table(rows, minutes) if trial_set == "recipe" else lever_table(rows)
    write_block(doc, block, marker)
    plot(rows, plot_path, by_updates=trial_set == "levers")
    print(block)


if __name__ == "__main__":
    main()
