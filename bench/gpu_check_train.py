"""``bin/gpu-check``'s run as every part sees it (:class:`Check`: its settings, its deadline, what
each part found, an earlier job's report kept), and its train part: a paper-size RNNsearch on the
fastest path the bench found, killed (SIGKILL) part-way as a preempted job would be, resumed by the
same command, then the test verses translated and scored. The other parts and the report are
:mod:`bench.gpu_check`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nmtkit.train import runlog

from .bench_common import CHECKOUT, NMTKIT
from .gpu_cells import fastest_flags

PARTS = ("machine", "bench", "profile", "paper", "train", "wmt14", "tests")
TRAIN_MINUTES = 3.0
# Tiny mode's run is counted in updates and killed at an update, not at a time: on a CPU that another
# job kept busy, a minute's budget once went to 4 updates before the planned kill, and the resumed run
# had nothing left to do. It saves last.pt every TINY_VALID updates and is killed one update after
# the first save.
TINY_UPDATES, TINY_VALID = 15, 5
# The resumed run's logged training losses are held against an uninterrupted run's over the updates
# after the resume, up to COMPARED of them: equal on a CPU; on a GPU within RESUME_NOISE (relative),
# where atomics in the backward and TF32 part two runs from the same checkpoint by rounding
COMPARED = 200
RESUME_NOISE = 1e-2


def checkout_env() -> dict[str, str]:
    """This environment with the checkout first on PYTHONPATH: the parts run its nmtkit."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{CHECKOUT}{os.pathsep}{path}" if path else str(CHECKOUT)}


def first_lines(text: str, n: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[:n])


class Check:
    """The run's settings, its deadline, and what each part found."""

    def __init__(self, args: argparse.Namespace, gpu: bool):
        self.args, self.gpu = args, gpu
        # the report and the evidence in out (a device job's $OUT brings back a few small files),
        # the runs and their checkpoints in work
        self.out: Path = args.out
        self.work: Path = args.work
        # what the part in progress has found so far, for the report of a job stopped in the middle
        self.partial: dict[str, Any] = {}
        self.started = time.monotonic()
        self.ran: list[str] = []
        self.deadline: float = self.started + 60 * args.minutes
        # an earlier job's report in the same place: its parts stay unless this job runs them again,
        # and its bench cells are not measured twice (a matrix too long for one job is done in several)
        self.found: dict[str, dict[str, Any]] = {}
        earlier = self.out / "report.json"
        if earlier.exists():
            try:
                before = json.loads(earlier.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                before = {}
            if before.get("gpu") == gpu:
                self.found = {p: f for p, f in before.get("parts", {}).items() if p in PARTS}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, cmd: list[Any], timeout: float) -> subprocess.CompletedProcess[str]:
        print("+", shlex.join(map(str, cmd)), file=sys.stderr, flush=True)
        return subprocess.run(
            list(map(str, cmd)),
            capture_output=True,
            text=True,
            env=checkout_env(),
            timeout=max(1.0, timeout),
            cwd=CHECKOUT,
        )


class PartFailed(Exception):
    """A step of the train part failed: what the report says of it."""

    def __init__(self, lines: list[str]):
        super().__init__(lines[0])
        self.lines = lines


def fastest(check: Check) -> tuple[list[str], str]:
    """The bench's fastest RNNsearch cell as train flags, as make paper PAPER_SCALE=gpu chooses."""
    rows = [r for r in check.found.get("bench", {}).get("rows", []) if "tok_per_s" in r]
    if not check.gpu and not rows:  # the GPU's unmeasured default (the update as CUDA graphs) is no CPU's
        return ["--arch", "rnnsearch", "--batch-size", "80"], "eager, 80 sentences (no bench figure to choose by)"
    chosen, why = fastest_flags(rows, "rnnsearch")
    return ["--arch", "rnnsearch", *chosen], why


def logged(save: Path) -> list[dict[str, Any]]:
    """The run's log lines so far (:func:`nmtkit.train.runlog.entries`: a line being written as
    it is read is left out)."""
    try:
        return runlog.entries(save)
    except FileNotFoundError:
        return []


def updates(save: Path) -> int:
    return max((e.get("step", 0) for e in logged(save)), default=0)


def trained_seconds(save: Path) -> float:
    """Seconds of training the run's log has counted so far (0 before its first log line)."""
    return max((float(e.get("seconds", 0.0)) for e in logged(save)), default=0.0)


def kill_plan(check: Check) -> tuple[list[Any], Callable[[Path], bool]]:
    """The train part's budget flags, and when its first run is killed (once a last.pt exists too):
    on a GPU once 40% of its minutes are trained (as the log counts them: start-up and compilation
    aside), so that the resumed run has most of the budget left to go; in tiny mode at an update."""
    if not check.gpu:
        return (
            ["--max-updates", TINY_UPDATES, "--valid-every", TINY_VALID, "--log-every", 1],
            lambda save: updates(save) > TINY_VALID,
        )
    minutes = check.args.train_minutes or TRAIN_MINUTES
    return (
        ["--max-minutes", minutes, "--valid-every", 200, "--log-every", 10],
        lambda save: trained_seconds(save) >= 60 * minutes * 0.4,
    )


def kill_part_way(check: Check, cmd: list[Any], save: Path, budget: float) -> int:
    """The first run, killed part-way once last.pt exists, as a preempted job would be: the update
    its log had reached."""
    _, planned = kill_plan(check)
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    first = subprocess.Popen(
        list(map(str, cmd)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env(),
        cwd=CHECKOUT,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        while first.poll() is None and not (planned(save) and (save / "last.pt").exists()):
            if time.monotonic() - started > budget:
                break
            time.sleep(0.5 if check.gpu else 0.02)  # a tiny run's updates may take milliseconds
    except BaseException:  # gpu-check stopped (SIGTERM): its own session would outlive it
        os.killpg(first.pid, signal.SIGKILL)
        raise
    killed_at = updates(save)
    if first.poll() is not None:
        err = first.stderr.read() if first.stderr else ""
        ended = f"the run ended (status {first.returncode}) before it could be killed part-way:"
        raise PartFailed([ended, "```", err[-1500:], "```"])
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    if not (save / "last.pt").exists():
        err = first.stderr.read() if first.stderr else ""
        raise PartFailed(["no last.pt before the kill:", "```", first_lines(err, 12), "```"])
    return killed_at


def resume(
    check: Check, cmd: list[Any], save: Path, killed_at: int, left: float, found: dict[str, Any], lines: list[str]
) -> None:
    """The same command again, which resumes from last.pt, given ``left`` seconds less 90 for
    translating and scoring; into ``found`` and ``lines``: where it resumed."""
    given = max(60.0, left - 90)
    try:
        again = check.run(cmd, given)
    except subprocess.TimeoutExpired:
        raise PartFailed([f"the resumed run did not end in the {given:.0f} s it was given"]) from None
    resumed = re.search(r"resuming from \S+ at update ([\d,]*\d)", again.stderr)
    if again.returncode != 0 or not resumed:
        raise PartFailed(["the resumed run:", "```", again.stderr[-1500:], "```"])
    summary = runlog.run_summary(save)  # what `nmtkit info` says of the run
    at = int(resumed.group(1).replace(",", ""))
    lines += [f"- killed (SIGKILL) at update {killed_at:,} logged; resumed from last.pt at update {at:,}"]
    if "--cuda-graphs" in map(str, cmd):
        before, after = captures(logged(save), at)
        lines.append(
            f"- the whole update as CUDA graphs: {before} shapes captured before the resume, {after} "
            "captured again after it"
            + ("" if after or not check.gpu else " (none: the resumed run's update ran eagerly, see its log)")
        )
        found |= {"captured_before": before, "captured_after": after}
    lines.append(f"- {summary}")
    found |= {"killed_at": killed_at, "resumed_at": at, "summary": summary, "updates": updates(save)}


def captures(entries: list[dict[str, Any]], resumed_at: int) -> tuple[int, int]:
    """The shapes a --cuda-graphs run logged as captured up to update ``resumed_at`` and after it
    (a resumed run captures its graphs again)."""
    captured = [(e["step"], e["graphs_captured"]) for e in entries if "graphs_captured" in e]
    return sum(n for s, n in captured if s <= resumed_at), sum(n for s, n in captured if s > resumed_at)


def with_flag(cmd: list[Any], flag: str, value: Any) -> list[Any]:
    """``cmd`` with ``flag`` set to ``value``: replaced where it is given, else added."""
    if flag in cmd:
        at = cmd.index(flag)
        return [*cmd[: at + 1], value, *cmd[at + 2 :]]
    return [*cmd, flag, value]


def losses_after(save: Path, first: int, last: int) -> dict[int, float]:
    """The training loss per target token logged by the run in ``save`` at updates first+1..last."""
    return {
        e["step"]: e["train_nll_token"] for e in logged(save) if first < e["step"] <= last and "train_nll_token" in e
    }


def against_uninterrupted(
    check: Check, cmd: list[Any], save: Path, at: int, left: float, lines: list[str]
) -> dict[str, Any]:
    """The same run without the kill, to COMPARED updates past the resume: its logged training
    losses against the resumed run's, update for update."""
    reference = save.parent / "train-uninterrupted"
    shutil.rmtree(reference, ignore_errors=True)
    until = min(updates(save), at + COMPARED)
    again = with_flag(with_flag(cmd, "--save-dir", reference), "--max-updates", until)
    try:
        ran = check.run(again, max(30.0, left))
    except subprocess.TimeoutExpired:
        raise PartFailed([f"- the uninterrupted run to update {until:,}: out of time"]) from None
    if ran.returncode != 0:
        raise PartFailed(["- the uninterrupted run failed:", "```", ran.stderr[-1500:], "```"])
    resumed, straight = losses_after(save, at, until), losses_after(reference, at, until)
    common = sorted(resumed.keys() & straight.keys())
    if not common:
        raise PartFailed([f"- no training loss logged by both runs after update {at:,}"])
    worst = max(abs(resumed[k] - straight[k]) / abs(straight[k]) for k in common)
    bound = RESUME_NOISE if check.gpu else 0.0
    lines.append(
        f"- the training loss after the resume against an uninterrupted run's, at {len(common)} logged updates "
        f"from {common[0]:,} to {common[-1]:,}: at most {worst:.2e} apart (relative; allowed {bound:g})"
    )
    if worst > bound:
        raise PartFailed(["- the resumed run parted from the uninterrupted one"])
    return {"compared_updates": len(common), "resume_difference": worst}


def translate_and_score(check: Check, save: Path, left: float, found: dict[str, Any], lines: list[str]) -> None:
    """The test verses translated by best.pt (beam 12, token batches) and scored by sacreBLEU."""
    hyp = check.work / "train" / "test.hyp"
    translate = [*NMTKIT, "translate", "-m", save / "best.pt", check.args.test_src, "-o", hyp, "--beam", 12]
    if not check.gpu:
        translate += ["--device", "cpu", "--threads", 2, "--max-tokens", 2000]
    t0 = time.monotonic()
    try:
        tr = check.run(translate, max(30.0, left))
    except subprocess.TimeoutExpired:
        raise PartFailed(["- translation: out of time"]) from None
    if tr.returncode != 0:
        raise PartFailed(["- translation failed:", "```", tr.stderr[-1500:], "```"])
    seconds = time.monotonic() - t0
    score = ["score", hyp, "-r", check.args.test_ref, "--clean", "verse-markers", "--output-format", "json"]
    sc = check.run([*NMTKIT, *score], 120)
    if sc.returncode != 0:
        raise PartFailed(["- scoring failed:", "```", sc.stderr[-800:], "```"])
    bleu = round(json.loads(sc.stdout)["systems"][0]["bleu"], 2)
    found |= {"translate_seconds": seconds, "bleu": bleu}
    lines.append(
        f"- test verses translated in {seconds:.0f} s (beam 12, token batches, with loading); "
        f"sacreBLEU against the reference: {bleu}"
    )


def train(check: Check, budget: float) -> dict[str, Any]:
    """The train part: the run killed part-way, resumed, translated and scored."""
    tiny = not check.gpu
    save = check.work / "train"
    flags, why = fastest(check)
    budget_flags, _ = kill_plan(check)
    cmd = [*NMTKIT, "train", check.args.words, "--save-dir", save, "--preset", "tiny" if tiny else "paper"]
    cmd += [*budget_flags, "--valid-max-sentences", 200, "--no-valid-bleu", *flags]
    if tiny:
        cmd += ["--device", "cpu", "--threads", 2]
    lines = [f"`{' '.join(map(str, cmd[2:]))}` (fastest path: {why})", ""]
    found: dict[str, Any] = {}
    check.partial = {"found": found, "lines": lines}
    shutil.rmtree(save, ignore_errors=True)  # a fresh run: the kill and resume are this one's
    # The part's budget, not the job's deadline, bounds its steps: part_budget gives the train part
    # its run's minutes and the start-up of two runs even where the job's deadline is nearer (a
    # 6-minute job on an H100 once left the resumed run 60 s for 54 s of training and its compilation).
    end = time.monotonic() + budget

    def left() -> float:
        return max(check.left(), end - time.monotonic())

    try:
        killed_at = kill_part_way(check, cmd, save, budget)
        resume(check, cmd, save, killed_at, left(), found, lines)
        translate_and_score(check, save, left(), found, lines)
        found |= against_uninterrupted(check, cmd, save, found["resumed_at"], left(), lines)
    except PartFailed as failed:
        return {"status": "failed", **found, "lines": lines + failed.lines}
    return {"status": "ok", **found, "lines": lines}
