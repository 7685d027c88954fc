"""``bin/gpu-check``'s paper part: ``make paper PAPER_SCALE=gpu``, the paper's four systems at its
sizes, each trained for the minutes the part's budget leaves it, translated and reported (Table 1,
Fig. 2). make's steps resume, so a part stopped by its budget goes on in the next job on the same
machine (``--parts paper`` again). Its runs stay in ``--work``; the report copies the study's
report.md into its own, and the evidence bundle takes its tables, figures and logs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .bench_common import CHECKOUT
from .gpu_check_train import Check, checkout_env, first_lines, trained_seconds

SYSTEMS = ("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50")
PAPER_MINUTES = 1.2  # the Makefile's, the most a system trains here
# Beside its training, a system's start-up, captures, checkpoints and two beam-12 translations (an
# estimate until a GPU has run the study, whose report times it), and at the end the report, with a
# margin over what it takes on a 2-core CPU (docs/gpu.md)
SYSTEM_OVERHEAD_S, REPORT_S = 50.0, 40.0
TINY_MINUTES = 0.1  # tiny mode: a check of the recipe on a CPU
STOP_WAIT_S = 30.0  # what a training stopped by SIGTERM gets to save last.pt
# the least a system resumed from an earlier job trains on: a margin over the final validation its
# budget keeps back (the dev NLL alone)
RESUMED_MINUTES = 0.2


def minutes_for(left: float, systems: int = len(SYSTEMS), overhead: float = SYSTEM_OVERHEAD_S) -> float:
    """The next system's training minutes, so that it and the ``systems - 1`` after it, each with
    ``overhead`` seconds beside its training, and the report fit the ``left`` seconds, less what a
    study stopped by the budget gets to stop."""
    each = (left - STOP_WAIT_S - REPORT_S) / systems - overhead
    return round(min(PAPER_MINUTES, max(0.2, each / 60)), 2)


def bench_of(check: Check) -> Path | None:
    """The speeds that choose each system's path: this job's bench where it ran, else the newest
    bench of the whole update a GPU job brought back (bench/gpu-runs/*/graphs.json)."""
    if any("tok_per_s" in r for r in check.found.get("bench", {}).get("rows", [])):
        return check.out / "report.json"
    earlier = sorted((CHECKOUT / "bench" / "gpu-runs").glob("*/graphs.json"))
    return earlier[-1] if earlier else None


def command(check: Check, make: str, minutes: float, targets: tuple[str, ...] = ("paper",)) -> list[str]:
    runs = check.work / "paper-gpu"
    bench = bench_of(check)
    data = check.args.test_src.resolve().parent.parent  # DATA/raw/test.en: the Makefile's layout
    return [
        make,
        "-C",
        str(CHECKOUT),
        *targets,
        "PAPER_SCALE=gpu",
        f"ON_GPU={'1' if check.gpu else ''}",
        "INSTALLED=",  # never installing: the checkout runs unbuilt, with this Python
        f"PY={sys.executable}",
        f"NMTKIT={sys.executable} -m nmtkit",  # a step the carried data lacks (no .venv/bin/nmtkit there)
        f"PAPER={runs}",
        *([f"DATA={data}"] if data != (CHECKOUT / "data" / "bible").resolve() else []),
        f"WORDS_BIN={check.args.words.resolve()}",
        f"PAPER_MINUTES={minutes:g}",
        *([f"PAPER_BENCH={bench}"] if bench else []),
        *([] if check.gpu else ["PAPER_BEAM=2", "PAPER_SAMPLES=20", "JOBS=1"]),
    ]


def _timeline(runs: Path, started: float) -> list[str]:
    """When this job wrote each step's output, in seconds from its start (what the next job's
    sizing reads: each system's training, then its two translations, then the report)."""
    steps = [(f"{s} {what}", runs / s / name) for s in SYSTEMS for what, name in _STEPS] + [
        ("report", runs / "report.md")
    ]
    seconds = [(what, path.stat().st_mtime - started) for what, path in steps if path.exists()]
    kept = [f"{what} {t:.0f}" for what, t in seconds if t >= 0]  # not an earlier job's
    return [f"written at (s from the start): {', '.join(kept)}"] if kept else []


_STEPS = (("trained", "done"), ("test", "test.hyp.fr"), ("test-long", "test-long.hyp.fr"))


def _own_make() -> dict[str, str]:
    """The checkout's environment without a make's above this one (make gpu-check PARTS=paper):
    its command line's variables would reach make paper's, and its record of the command."""
    return {k: v for k, v in checkout_env().items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def stop(job: subprocess.Popen[bytes]) -> None:
    """make and the training under it stopped as `timeout -s TERM` stops them: SIGTERM to the whole
    group, so that the training saves last.pt and the next job resumes it; SIGKILL if it lingers."""
    try:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    except ProcessLookupError:
        pass


def translations(runs: Path, system: str) -> tuple[str, ...]:
    """make's targets of one system: both test sets translated (its training is their prerequisite)."""
    return tuple(str(runs / system / name) for _, name in _STEPS[1:])


def _run_make(cmd: list[str], log: Path, deadline: float) -> int | None:
    """make's status, or None when ``deadline`` came first and it was stopped as `timeout` stops it."""
    print("+", shlex.join(cmd), file=sys.stderr, flush=True)
    with open(log, "ab") as fh:
        job = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_own_make(), start_new_session=True)
        try:
            return job.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        finally:
            if job.poll() is None:  # out of time, or gpu-check itself stopped
                stop(job)


def _systems(
    check: Check, make: str, planned: float, log: Path, deadline: float
) -> tuple[int | None, dict[str, float]]:
    """Each system trained and translated, make's status (None: out of time) and the minutes each
    system was given."""
    runs = check.work / "paper-gpu"
    # one make a system: the first trains the planned minutes, and once its start-up and translations
    # are timed the others train as long, or less where the time left needs it, so that an estimate
    # wrong for the first never cuts the report; the minutes never grow, so that the systems compared
    # train alike wherever the time allows
    given: dict[str, float] = {}
    overheads: list[float] = []
    status: int | None = 0
    minutes, ran = planned, False
    for i, system in enumerate(SYSTEMS):
        if all(Path(t).exists() for t in translations(runs, system)):
            continue
        if ran and time.monotonic() >= deadline:  # the first make runs, a second would only be stopped
            return None, given
        ran, trained = True, 0.0
        if not (runs / system / "done").exists():  # else trained already: make translates it alone
            left = deadline + STOP_WAIT_S - time.monotonic()
            if check.gpu:
                minutes = min(minutes, minutes_for(left, len(SYSTEMS) - i, max(overheads, default=SYSTEM_OVERHEAD_S)))
            # stopped part-way by an earlier job: a budget it has spent would end it unvalidated, no best.pt
            if trained := trained_seconds(runs / system):
                minutes = max(minutes, round(trained / 60 + RESUMED_MINUTES, 2))
            given[system] = minutes
        began = time.monotonic()
        status = _run_make(command(check, make, minutes, translations(runs, system)), log, deadline)
        if status != 0:
            break
        if system in given and not trained:  # a whole training and its translations, timed
            overheads.append(max(0.0, time.monotonic() - began - 60 * minutes))
    return status, given


def paper(check: Check, budget: float) -> dict[str, Any]:
    make = shutil.which(check.args.make)
    if make is None:
        return {
            "status": "failed",
            "lines": [
                f"no `{check.args.make}` on this machine: make gpu-data carries GNU make as wheels/bin/make "
                "(PATH=$PWD/wheels/bin:$PATH)"
            ],
        }
    runs = check.work / "paper-gpu"
    planned = minutes_for(budget) if check.gpu else TINY_MINUTES
    log = check.work / "paper-gpu.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"`make {shlex.join(command(check, make, planned)[3:])}`", ""]
    check.partial = {"lines": lines}
    t0, started = time.monotonic(), time.time()
    deadline = t0 + budget - STOP_WAIT_S
    status, given = _systems(check, make, planned, log, deadline)
    if status == 0:  # the report, the systems all translated
        status = _run_make(command(check, make, planned), log, deadline)
    done = [s for s in SYSTEMS if (runs / s / "done").exists()]
    minutes_given = ", ".join(f"{s} {m:g}" for s, m in given.items()) or "none"
    lines.extend(
        [
            f"minutes of training given: {minutes_given}; {len(done)} of {len(SYSTEMS)} systems trained "
            f"({', '.join(done) or 'none'}); {time.monotonic() - t0:.0f} s",
            *_timeline(runs, started),
        ]
    )
    report = runs / "report.md"
    if status == 0 and report.exists():
        return {"status": "ok", "minutes": given, "lines": [*lines, "", *report.read_text().splitlines()]}
    if status is None:
        return {
            "status": "out of time",
            "minutes": given,
            "lines": [*lines, "stopped by its budget: run --parts paper again on this machine, it goes on"],
        }
    tail = first_lines("\n".join(log.read_text(errors="replace").splitlines()[-15:]), 15)
    return {"status": "failed", "lines": [*lines, f"make exited {status}:", "```", tail, "```"]}
