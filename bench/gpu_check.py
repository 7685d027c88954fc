"""One unattended command that proves nmtkit's GPU path and leaves its evidence: a report.

    bin/gpu-check [--words DATA_BIN] [--bpe DATA_BIN] [--test-src F --test-ref F] [--out DIR]
                  [--work DIR] [--minutes 10] [--parts machine,bench,profile,paper,train,wmt14,tests]
                  [--paper-minutes M] [--train-minutes M] [--tests-marks EXPR] [--tiny]

Made for one machine with one CUDA GPU, no network and jobs of at most 10 minutes: it runs from a
checkout with PYTHONPATH=. and the installed torch, and writes OUT/report.md, OUT/report.json and
OUT/evidence.tar.gz (the runs' logs, tables, figures and translations, never a checkpoint) after
every part, and for the part in progress when SIGTERM stops it; the runs themselves stay in --work.
Each part has a share of --minutes; a part that fails is reported with its first
lines and the others still run; a part the time did not reach says so, and `--parts` runs it in
a job of its own. The parts, in the order they run:

- machine: the GPU, its driver, torch, CUDA and cuDNN.
- bench: bin/bench-gpu's matrix at the paper's sizes on the words data-bin (RNNsearch first,
  then RNNencdec, then Luong's LSTM; batches of 80 sentences and of 6,000 tokens; fp32/TF32 and
  bf16; eager, compiled and CUDA graphs), target tokens/s and peak GPU memory of each cell.
- profile: bin/profile-train --device cuda, eager and compiled (bf16) and the whole update as CUDA
  graphs (TF32): kernels per update and the share of wall time the GPU was busy (for the graphs,
  by the profiler's kernels and by the replays' CUDA events, as training logs it).
- paper: `make paper PAPER_SCALE=gpu`, the paper's four systems at its sizes, each trained for what
  --paper-minutes leaves it (:mod:`bench.gpu_check_paper`), Table 1 and Fig. 2.
- train: a paper-size RNNsearch on the words data-bin with the fastest path the bench found,
  a 3-minute budget, killed (SIGKILL) at 40% of it and resumed by the same command; then the test
  verses translated (beam 12, token batches) and scored; then the same run without the kill, to 200
  updates past the resume, whose logged training losses the resumed run's must match.
- wmt14: the hours one WMT'14 RNNsearch-50 run (288,000 updates of 80 pairs, about 580M target
  tokens) would take at the measured speed of its batch.
- tests: the test suite with the GPU visible, slow tests included (--tests-marks: a part of it);
  each failure's first lines.

Without a GPU (or with --tiny) every part that can runs in a tiny mode on the CPU (the tiny
preset, a few updates, the GPU-ready tests alone) and the report says which parts need a GPU;
the exit status is then 0 unless a part failed. That is a check of this script, not a
measurement: no GPU figure is ever estimated.

This module holds the parts but train (:mod:`bench.gpu_check_train`) and paper, their order and
shares of the time, and the report.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from nmtkit.core.files import atomic_write
from nmtkit.core.machine import describe
from nmtkit.core.machine import machine as this_machine

from .bench_common import CHECKOUT, exit_on_sigterm, fail, write_text
from .bench_gpu import CellRun, measure
from .gpu_cells import PATHS, WHOLE_UPDATE, WMT14_TARGET_TOKENS, cells
from .gpu_check_paper import paper
from .gpu_check_train import PARTS, TINY_UPDATES, TRAIN_MINUTES, Check, first_lines, train

REPORT_MARGIN_S = 20.0  # the report and the evidence bundle, after a part given its minutes outright
SHARE = {"machine": 0.02, "bench": 0.30, "profile": 0.08, "paper": 0.5, "train": 0.35, "wmt14": 0.0, "tests": 0.25}
PY = [sys.executable]
# The evidence a device job brings back in one file (it returns a few files of at most 16 MiB):
# every file of the runs but checkpoints, up to these sizes
EVIDENCE_FILE_MAX, EVIDENCE_MAX = 2 * 2**20, 12 * 2**20

# ---- the parts: each returns {"status": ok|failed|needs a GPU|…, "lines": [markdown], …} ------------


def machine(check: Check, budget: float) -> dict[str, Any]:
    found: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "machine": describe(this_machine()),  # the GPU's name too, where there is one
        "cpu_cores": os.cpu_count(),
    }
    if check.gpu:
        props = torch.cuda.get_device_properties(0)
        found |= {
            "gpu": props.name,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
            "cudnn": torch.backends.cudnn.version(),  # type: ignore[no-untyped-call]
            "gpus": torch.cuda.device_count(),
        }
        try:
            smi = check.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], 20)
            found["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            found["driver"] = None
    else:
        found["gpu"] = None
    lines = [f"| {k} | {v} |" for k, v in found.items()]
    return {"status": "ok", "machine": found, "lines": ["| what | value |", "|---|---|", *lines]}


def _cell_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row.get(k)) for k in ("arch", "batch", "precision", "path"))


def _bench_line(r: dict[str, Any], gpu: bool) -> str:
    if "error" in r:
        return f"| {r['arch']} | {r['batch']} | {r['precision']} | {r['path']} | {r['error']} | | | | | |"
    hours = f"{r['wmt14_hours']:.1f}" if gpu else "needs a GPU"
    mark = " (earlier job)" if r.get("earlier") else ""
    capture = f"{r['capture_s']:.1f} ({r['captures']} shapes)" if "capture_s" in r else ""
    busy = f"{100 * r['gpu_busy_share']:.0f}%" if "gpu_busy_share" in r else ""
    run = f"{r['run_tok_per_s']:,.0f}" if "run_tok_per_s" in r else ""
    unsteady = "" if r.get("steady", True) else " (the last window: none steady)"
    return (
        f"| {r['arch']} | {r['batch']} | {r['precision']} | {r['path']}{mark} | {r['tok_per_s']:,.0f}{unsteady} | "
        f"{r['gpu_peak_mb'] / 1024:.2f} GB | {hours} | {capture} | {busy} | {run} |"
    )


def bench(check: Check, budget: float) -> dict[str, Any]:
    tiny = not check.gpu
    device = "cuda" if check.gpu else "cpu"
    run = CellRun("tiny" if tiny else "paper", 12 if tiny else 40, 4 if tiny else 15, device, 0 if tiny else 250)
    precisions = ("fp32/tf32", "bf16") if check.gpu else ("fp32/tf32",)
    archs = ["rnnsearch"] if tiny else ["rnnsearch", "rnnsearch+cudnn", "rnnencdec", "luong"]
    # the whole update as one graph first, in each architecture's batch and precision: the figure
    # a short job must not miss; tiny: one cell (6,000-token batches of a tiny model take minutes on
    # a CPU, and prove nothing more)
    paths = [*WHOLE_UPDATE, *(p for p in PATHS if p not in WHOLE_UPDATE)]
    todo = cells(archs, ["eager"] if tiny else paths, precisions)[: 1 if tiny else None]
    end = time.monotonic() + budget
    done_before = {_cell_key(r): r for r in check.found.get("bench", {}).get("rows", []) if "tok_per_s" in r}
    rows = []
    work = check.work / "bench"
    work.mkdir(parents=True, exist_ok=True)
    for cell in todo:
        if _cell_key(cell) in done_before:
            rows.append({**done_before[_cell_key(cell)], "earlier": True})
        elif time.monotonic() > end:
            rows.append({**cell, "error": "not measured: out of time (run --parts bench again: it goes on)"})
        else:
            rows.append(measure(check.args.words, cell, run, work, timeout=max(10.0, end - time.monotonic())))
    lines = [
        "| arch | batch | precision | step | target tok/s | GPU peak | WMT'14 hours | capture s | GPU replaying "
        "| whole run tok/s |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
        *(_bench_line(r, check.gpu) for r in rows),
    ]
    failed = [r for r in rows if "error" in r and not r["error"].startswith("not measured")]
    head = [
        f"preset {run.preset}, {run.updates} updates a cell (mean after {run.warmup}), on {run.device}"
        + (
            f"; the whole update as one graph: {run.graph_updates}, the mean of the windows that replayed "
            "whole, beside the whole run's"
            if not tiny
            else ""
        )
    ]
    if tiny:
        head.append(
            "tiny mode on a CPU: a check of the matrix, not a measurement; the bf16, compiled and "
            "graph cells need a GPU"
        )
    return {"status": "failed" if failed else "ok", "rows": rows, "lines": head + [""] + lines}


def _profile_one(check: Check, name: str, extra: list[str], budget: float) -> tuple[str, dict[str, Any] | None]:
    """One step profiled by bin/profile-train: its row of the table, and its figures or error."""
    tiny = not check.gpu
    out = check.work / f"profile-{name}.json"
    cmd = [*PY, CHECKOUT / "bin" / "profile-train", check.args.words, "--preset", "tiny" if tiny else "paper"]
    cmd += ["--updates", 3 if tiny else 10, "--device", "cuda" if check.gpu else "cpu", "--json", out]
    cmd += [flag for flag in extra if not (tiny and flag == "--bf16")]  # a CPU may emulate bf16
    try:
        done = check.run(cmd, max(90.0, budget / 2))
    except subprocess.TimeoutExpired:
        return f"| {name} | out of time | | | |", None
    if done.returncode != 0:
        return f"| {name} | failed: {first_lines(done.stderr, 1)[-160:]} | | | |", {
            "step": name,
            "error": done.stderr[-2000:],
        }
    fig = json.loads(out.read_text())
    busy = f"{100 * fig['gpu_busy_share']:.0f}%" if "gpu_busy_share" in fig else "needs a GPU"
    if "replay_busy_share" in fig:  # the training log's measure beside the profiler's
        busy += f" (replays' events: {100 * fig['replay_busy_share']:.0f}%)"
    line = (
        f"| {name} | {fig['updates_per_s']:.2f} | {fig['tok_per_s']:,.0f} | {fig['kernels_per_update']:,.0f} | {busy} |"
    )
    return line, {"step": name, **fig}


def profile(check: Check, budget: float) -> dict[str, Any]:
    tiny = not check.gpu
    lines = ["| step | updates/s | target tok/s | kernels per update | GPU busy |", "|---|---:|---:|---:|---:|"]
    found = []
    steps = (
        ("eager", ["--bf16"]),
        ("compiled", ["--compile", "--bf16"]),
        ("update-graph", ["--cuda-graphs"]),
        ("update-graph+fused", ["--cuda-graphs", "--fused-steps"]),
    )
    for name, extra in steps:
        if tiny and name == "compiled":
            lines.append("| compiled | needs a GPU (tiny mode runs the eager steps alone) | | | |")
            continue
        line, figures = _profile_one(check, name, extra, budget)
        lines.append(line)
        found += [figures] if figures else []
    failed = any("error" in f for f in found)
    head = [
        "RNNsearch, "
        + (
            "tiny preset on a CPU (a check, not a measurement)"
            if tiny
            else "paper sizes, 80 sentences; eager and compiled in bf16, the whole update as graphs in TF32"
        )
    ]
    return {"status": "failed" if failed else "ok", "runs": found, "lines": head + [""] + lines}


def wmt14(check: Check, budget: float) -> dict[str, Any]:
    rows = [
        r
        for r in check.found.get("bench", {}).get("rows", [])
        if r["arch"] == "rnnsearch" and r["batch"] == "80 sentences" and "tok_per_s" in r
    ]
    if not check.gpu:
        return {"status": "needs a GPU", "lines": ["a CPU's figure would say nothing of a GPU's: not computed"]}
    if not rows:  # a job without the bench: nothing failed, the figure waits for it
        return {
            "status": "not measured",
            "lines": ["no RNNsearch cell of 80 sentences measured yet: run --parts bench,wmt14"],
        }
    best = max(rows, key=lambda r: r["tok_per_s"])
    hours = WMT14_TARGET_TOKENS / best["tok_per_s"] / 3600
    return {
        "status": "ok",
        "hours": hours,
        "cell": best,
        "lines": [
            f"{hours:.1f} hours: 288,000 updates of 80 pairs (about {WMT14_TARGET_TOKENS / 1e6:.0f}M target "
            f"tokens) at {best['tok_per_s']:,.0f} target tokens/s ({best['path']}, {best['precision']}), "
            f"the paper's batch of 80 sentences, RNNsearch at the paper's sizes"
        ],
    }


OUTCOMES = ("PASSED", "FAILED", "SKIPPED", "ERROR")


def _pytest_outcome(text: str) -> tuple[dict[str, int], dict[str, str], list[tuple[str, str]]]:
    """pytest -v -rfEs's output: its counts, each failure's first lines, each skip's reason. The
    counts are the final summary's; a run stopped before it is counted by its verbose lines, as
    pytest writes them (``tests/a.py::t PASSED``) and as xdist does (``[gw0] [ 3%] PASSED tests/a.py::t``)."""
    summary = re.findall(r"^=+ (.*\d+ (?:passed|failed|skipped|errors?)\b.*) in [\d.]+s", text, re.M)
    if summary:
        said = {
            kind.upper().rstrip("S"): int(n)
            for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary[-1])
        }
        counts = {k: said.get(k, 0) for k in OUTCOMES}
    else:
        plain = re.findall(r"^(tests/\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR)", text, re.M)
        spread = [
            (t, k)
            for k, t in re.findall(r"^\[gw\d+\] \[\s*\d+%\] (PASSED|FAILED|SKIPPED|ERROR) (tests/\S+)", text, re.M)
        ]
        outcome = dict(plain + spread)
        counts = {k: sum(1 for v in outcome.values() if v == k) for k in OUTCOMES}
    blocks = (
        re.split(r"^_{3,} (\S+) _{3,}$", text.split("= FAILURES =")[-1], flags=re.M) if "= FAILURES =" in text else []
    )
    failures = {blocks[i]: first_lines(blocks[i + 1], 12) for i in range(1, len(blocks) - 1, 2)}
    return counts, failures, re.findall(r"^SKIPPED \[\d+\] (\S+): (.*)$", text, re.M)


def tests(check: Check, budget: float) -> dict[str, Any]:
    tiny = not check.gpu
    # tiny: the GPU path's tests and their CPU stand-ins
    which = check.args.tests_marks or ("gpu" if tiny else "slow or not slow")
    cmd = [*PY, "-m", "pytest", "tests", "-m", which, "-v", "-rfEs", "--tb=short", "--color=no"]
    cmd += ["-p", "no:cacheprovider"]
    if not tiny and importlib.util.find_spec("xdist") is not None:  # the whole suite, on the machine's cores
        cmd += ["-n", str(max(1, (os.cpu_count() or 2) - 2))]
    status: int | None = None  # None: stopped by the budget
    try:
        done = check.run(cmd, budget)
        text, status = done.stdout, done.returncode
    except subprocess.TimeoutExpired as out:
        text = out.stdout.decode() if isinstance(out.stdout, bytes) else (out.stdout or "")
    write_text(check.out / "tests.log", text)  # the whole output, which a GPU job brings back
    counts, failures, skipped = _pytest_outcome(text)
    stopped = f": stopped after {budget / 60:.1f} minutes, the rest not reached (run --parts tests alone)"
    lines = [f"`{shlex.join(map(str, cmd[1:]))}`" + ("" if status is not None else stopped), ""]
    lines.append(", ".join(f"{v} {k.lower()}" for k, v in counts.items()))
    if tiny and not check.args.tests_marks:
        lines.append(
            "tiny mode on a CPU: the tests marked gpu alone (the GPU path and its CPU stand-ins); "
            "the skipped ones need a GPU"
        )
    for name, first in failures.items():
        lines += ["", f"**{name}**", "```", first, "```"]
    if skipped:
        lines += ["", "skipped, and what each would prove:"] + [f"- {where}: {why}" for where, why in skipped]
    bad = counts["FAILED"] or counts["ERROR"] or status not in (None, 0, 5)
    return {
        "status": "failed" if bad else ("ok" if status is not None else "out of time"),
        "counts": counts,
        "failures": failures,
        "lines": lines,
    }


RUNS: dict[str, Callable[[Check, float], dict[str, Any]]] = {
    "machine": machine,
    "bench": bench,
    "profile": profile,
    "paper": paper,
    "train": train,
    "wmt14": wmt14,
    "tests": tests,
}


def report(check: Check) -> None:
    mode = "GPU" if check.gpu else "tiny mode on a CPU (no CUDA GPU): a check of the script, not a measurement"
    md = [
        "# nmtkit gpu-check",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {mode}; "
        f"{(time.monotonic() - check.started) / 60:.1f} minutes. Command: `{' '.join(sys.argv)}`",
        "",
    ]
    md += ["| part | status | seconds |", "|---|---|---:|"]
    ordered = {p: check.found[p] for p in PARTS if p in check.found}
    md += [
        f"| {p} | {f['status']}{' (earlier job)' if p not in check.ran else ''} | {f.get('seconds', 0):.0f} |"
        for p, f in ordered.items()
    ]
    for part, found in ordered.items():
        md += ["", f"## {part}", "", *found.get("lines", [])]
    write_text(check.out / "report.md", "\n".join(md) + "\n")
    write_text(check.out / "report.json", json.dumps({"gpu": check.gpu, "parts": ordered}, indent=1, default=str))
    bundle(check)


def bundle(check: Check) -> None:
    """OUT/evidence.tar.gz: the work directory's files but checkpoints, for a device job that brings
    back only a few files; a file over EVIDENCE_FILE_MAX bytes, or past EVIDENCE_MAX in all (in
    path order), is left out and named in its left-out.txt."""
    kept, left = 0, []
    with atomic_write(check.out / "evidence.tar.gz", "wb") as fh, tarfile.open(fileobj=fh, mode="w:gz") as tar:
        for path in sorted(check.work.rglob("*")) if check.work.is_dir() else []:
            if not path.is_file() or path.suffix in (".pt", ".tmp") or path.name.startswith("."):
                continue
            size, name = path.stat().st_size, str(path.relative_to(check.work))
            if size <= EVIDENCE_FILE_MAX and kept + size <= EVIDENCE_MAX:
                tar.add(path, arcname=name)
                kept += size
            else:
                left.append(f"{name}\t{size}")
        if left:
            listed = ("\n".join(left) + "\n").encode()
            info = tarfile.TarInfo("left-out.txt")
            info.size, info.mtime = len(listed), int(time.time())
            tar.addfile(info, io.BytesIO(listed))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument(
        "--words",
        type=Path,
        default=CHECKOUT / "data/bible/data-bin-words30000",
        help="the paper's 30,000-word data-bin (make data BPE=0); tiny mode takes any",
    )
    ap.add_argument(
        "--bpe",
        type=Path,
        default=CHECKOUT / "data/bible/data-bin-bpe8000",
        help="the demo's BPE data-bin (used where --words is missing)",
    )
    ap.add_argument(
        "--test-src", dest="test_src", type=Path, default=CHECKOUT / "data/bible/raw/test.en", help="test source"
    )
    ap.add_argument("--test-ref", dest="test_ref", type=Path, default=CHECKOUT / "data/bible/raw/test.fr")
    ap.add_argument(
        "--out",
        type=Path,
        default=CHECKOUT / "runs" / "gpu-check",
        help="where report.md, report.json and evidence.tar.gz go",
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=CHECKOUT / "runs" / "gpu-check-work",
        help="where the parts' runs and checkpoints go (a second job on the same machine goes on from them)",
    )
    ap.add_argument("--make", default="make", help="GNU make, for the paper part")
    ap.add_argument("--minutes", type=float, default=10.0, help="the whole run's budget")
    ap.add_argument(
        "--parts",
        default=",".join(p for p in PARTS if p != "paper"),  # a study, not a check: asked for by name
        help="of " + ", ".join(PARTS),
    )
    ap.add_argument("--tiny", action="store_true", help="the CPU's tiny mode even where a GPU is")
    ap.add_argument(
        "--train-minutes",
        dest="train_minutes",
        type=float,
        default=0.0,
        help=f"the train part's budget on a GPU in minutes (0: {TRAIN_MINUTES:g}); tiny mode's is "
        f"{TINY_UPDATES} updates, whatever the machine's load",
    )
    ap.add_argument(
        "--paper-minutes",
        dest="paper_minutes",
        type=float,
        default=0.0,
        help="the paper part's budget in minutes, its four systems' training and translation and its "
        "report (0: its share of --minutes)",
    )
    ap.add_argument(
        "--tests-marks",
        dest="tests_marks",
        default="",
        help='the tests part\'s pytest -m expression (default: the whole suite on a GPU, "gpu" in tiny mode)',
    )
    return ap


def part_budget(check: Check, part: str, weight: float) -> float:
    """Seconds for ``part``: its share of what is left (``weight``: the shares of the parts to
    run); the tests get what is left, and the train part at least its run's minutes."""
    share = SHARE[part] / weight if weight > 0 else 1.0
    budget = max(20.0, check.left() * share) if part != "tests" else max(20.0, check.left() - 15)
    if part == "paper" and check.args.paper_minutes:  # what the report and the bundle after it need kept back
        budget = max(20.0, min(60 * check.args.paper_minutes, check.left() - REPORT_MARGIN_S))
    if part == "train":  # its run is minutes long whatever the share: the tests get what is left
        # the killed run and the resumed one (the run's minutes), the uninterrupted one to 200 updates
        # past the resume (about two fifths of them), and the start-ups and captures of the three
        budget = max(budget, 60 * 1.5 * ((check.args.train_minutes or TRAIN_MINUTES) if check.gpu else 1.0) + 330)
    return budget


def run_part(check: Check, part: str, budget: float) -> dict[str, Any]:
    if check.left() < 10 and SHARE[part] > 0:  # a part of no share (wmt14) is arithmetic: always run
        return {"status": "out of time", "lines": [f"not reached: run --parts {part} alone"]}
    try:
        return RUNS[part](check, budget)
    except Exception as err:  # a part's failure is reported; the others still run
        return {"status": "failed", "lines": ["```", f"{type(err).__name__}: {err}", "```"]}


def stopped(partial: dict[str, Any], seconds: float) -> dict[str, Any]:
    """A part SIGTERM stopped after ``seconds``, with what it had found (:attr:`Check.partial`)."""
    return {
        **partial.get("found", {}),
        "status": "stopped (SIGTERM)",
        "seconds": seconds,
        "lines": [*partial.get("lines", []), f"stopped by SIGTERM after {seconds:.0f} s"],
    }


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        fail("gpu-check", f"no part {sorted(unknown)[0]!r} (of {', '.join(PARTS)})")
    gpu = torch.cuda.is_available() and not args.tiny
    if not (args.words / "manifest.json").exists():
        if not gpu and (args.bpe / "manifest.json").exists():
            args.words = args.bpe  # tiny mode: any corpus checks the script
        elif set(parts) - {"machine", "tests"}:  # the others read it
            fail("gpu-check", f"no data-bin at {args.words} (make data BPE=0 builds it; carry it to the GPU machine)")
    args.out, args.work = args.out.resolve(), args.work.resolve()  # the parts' commands run in the checkout
    check = Check(args, gpu)
    check.out.mkdir(parents=True, exist_ok=True)
    exit_on_sigterm()  # the report keeps the parts done
    weight = sum(SHARE[p] for p in parts) or 1.0
    for part in [p for p in PARTS if p in parts]:
        budget = part_budget(check, part, weight)
        weight -= SHARE[part]
        t0 = time.monotonic()
        check.partial = {}
        try:
            found = run_part(check, part, budget)
        except SystemExit:  # SIGTERM: what the part had found, then the report
            seconds = time.monotonic() - t0
            check.found[part] = stopped(check.partial, seconds)
            check.ran.append(part)
            report(check)
            raise
        found["seconds"] = time.monotonic() - t0
        check.found[part] = found
        check.ran.append(part)
        report(check)  # after every part: a killed job still leaves what it found
        print(f"gpu-check: {part}: {found['status']} ({found['seconds']:.0f} s)", file=sys.stderr, flush=True)
    print(f"gpu-check: report in {check.out / 'report.md'} and report.json", file=sys.stderr)
    sys.exit(1 if any(check.found[p]["status"] == "failed" for p in check.ran) else 0)
