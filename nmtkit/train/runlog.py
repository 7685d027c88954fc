"""A training run's log, ``metrics.jsonl``: the only module that writes or reads it.

``train`` appends one line per log window (with the wall seconds since the
start, validation time included) and one per validation (dev NLL and BLEU);
a resumed run first forgets the lines after its checkpoint (:func:`open_log`).
:class:`RunLog` joins them, so a validation knows the minute it was made at,
with the machine it ran on (``machine.json``, written when the run starts):
what the demo's summary, ``nmtkit info SAVE_DIR`` and the learning curves need.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .. import checkpoint
from ..checkpoint.average import kept_validations, update_of
from ..core.console import log
from ..core.errors import FormatError, UserError
from ..core.files import atomic_write
from ..core.machine import MACHINE, describe, machine

METRICS = "metrics.jsonl"


def _entry(line: str) -> dict[str, Any] | None:
    """A log line's entry; None for a line that is not one (torn by a kill, or damaged)."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
        return None
    # every figure a number (or null): a log line is read as figures, summed and compared
    return (
        entry
        if all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in entry.values())
        else None
    )


def entries(save_dir: str | Path) -> list[dict[str, Any]]:
    """Every line of a run's log, in order, but a last line torn by a kill (or being written as it
    is read), which a resumed run drops too. Raises :class:`UserError` for a log damaged elsewhere,
    or for a whole last line that is not the log's: train writes a line with its end in one call,
    so only a line without its end can be torn."""
    path = Path(save_dir) / METRICS
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8, so not a log that nmtkit train wrote") from None
    found = [(n, _entry(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if found and found[-1][1] is None and not text.endswith("\n"):
        found.pop()
    damaged = [n for n, entry in found if entry is None]
    if damaged:
        raise UserError(f"{path}: line {damaged[0]} is not a line of a training log")
    return [entry for _, entry in found if entry is not None]


def kept_models(save_dir: str | Path) -> tuple[list[Path], list[Path]]:
    """The run's kept validations (``update-N.pt``) in update order, and those beside them that
    another run wrote: an earlier run's, which --reset leaves (of the same numbers, where the runs
    validated at the same updates and this one keeps none). A checkpoint that names its run is
    told by that; one written before runs were named, by whether the log holds its update.
    Without a log, all are its own."""
    kept = kept_validations(Path(save_dir))
    if not (Path(save_dir) / METRICS).exists():
        return kept, []
    steps = {e["step"] for e in entries(save_dir) if "dev_nll" in e}
    run = _run_id(Path(save_dir) / MACHINE)
    own = [p for p in kept if _written_by(p, run, update_of(p) in steps)]
    return own, [p for p in kept if p not in own]


def _run_id(path: Path) -> str | None:
    """The run a log is of, as its start record says; None where it does not say (written before
    runs were told apart, or damaged: averaging needs no machine), and the log's steps decide."""
    try:
        return _machine(path).get("run_id") if path.exists() else None
    except UserError:
        return None


def _written_by(path: Path, run: str | None, logged: bool) -> bool:
    """Whether the checkpoint at ``path`` is of ``run``: as its own record says, else (a file or a
    log from before runs were named, a file that cannot be read) as ``logged``, whether the log
    holds its update, says."""
    theirs = _recorded_run(path) if run is not None else None
    return logged if theirs is None else theirs == run


def _recorded_run(path: Path) -> str | None:
    """The run id a checkpoint records, its tensors mapped and never read: a run directory may hold
    many of an earlier run's, and a damaged one is for whoever loads it to refuse."""
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError):
        return None
    training = raw.get("training") if isinstance(raw, dict) else None
    run = training.get("run_id") if isinstance(training, dict) else None
    return run if isinstance(run, str) else None


def best_of(save_dir: str | Path, step: int, score: Any, owed: bool = False) -> tuple[float, int, int | None]:
    """The best ``score`` (a function of a validation's entry, higher is better) of the validations
    a run resumed at update ``step`` keeps of its log (:func:`open_log`'s), the validations since
    it, and its update (None: none)."""
    found = [(score(e), e["step"]) for _, e in _kept(save_dir, step, owed)[0] if "dev_nll" in e]
    if not found:
        return -float("inf"), 0, None
    k = max(range(len(found)), key=lambda i: found[i][0])  # the first of equals, as training keeps it
    return found[k][0], len(found) - 1 - k, found[k][1]


def append(save_dir: str | Path, entry: dict[str, Any]) -> None:
    with open(Path(save_dir) / METRICS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def open_log(save_dir: str | Path, step: int, owed: bool = False, run_id: str | None = None) -> None:
    """A run's log ready at update ``step``: the machine the speed will be measured on recorded
    at the run's start (update 0: a new run, or one started over, whose every window is redone),
    with the run's id, which its checkpoints carry; on resume, the lines logged after the
    checkpoint's update forgotten (they will be redone), and a last line torn by a kill."""
    if not step or not (Path(save_dir) / MACHINE).exists():
        with atomic_write(Path(save_dir) / MACHINE) as fh:
            fh.write(json.dumps(machine() | ({"run_id": run_id} if run_id else {})) + "\n")
    path = Path(save_dir) / METRICS
    if not path.exists():
        return
    kept, damaged = _kept(save_dir, step, owed)
    if step and damaged:  # said: --best-by and --patience go on from what is kept
        log(
            f"warning: {path}: line {damaged} is not a line of a training log: the log is kept up to there, "
            "the lines from there on dropped"
        )
    with atomic_write(path) as fh:
        fh.write("".join(line + "\n" for line, _ in kept))


def _kept(save_dir: str | Path, step: int, owed: bool) -> tuple[list[tuple[str, dict[str, Any]]], int | None]:
    """The lines of the log a run resumed at update ``step`` goes on from, with their entries, and
    the number of the line they stop at where it is damaged (None: the log's end, or a last line
    torn by a kill, which train writes with its end in one call)."""
    path = Path(save_dir) / METRICS
    if not path.is_file():
        return [], None
    keep: list[tuple[str, dict[str, Any]]] = []
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        entry = _entry(line)
        if entry is None:
            torn = n == len(lines) and not text.endswith("\n")
            return keep, None if torn else n
        if entry["step"] < step or (entry["step"] == step and not (owed and "dev_nll" in entry)):
            keep.append((line, entry))  # an owed validation's line, from a run killed before its last.pt, is redone
    return keep, None


def _machine(path: Path) -> dict[str, Any]:
    """The machine a run recorded, or :class:`UserError` for a file nmtkit train did not write."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        found = None
    if not _is_machine(found):
        raise UserError(f"{path}: not the record of a machine that nmtkit train wrote")
    return dict(found)


def _is_machine(found: Any) -> bool:
    """Whether ``found`` has the fields of :func:`~nmtkit.core.machine.machine`, of their types
    (the later ones may be missing or null: files from before they were recorded)."""
    if not isinstance(found, dict) or not all(isinstance(found.get(k), t) for k, t in _MACHINE.items()):
        return False
    if not all(found.get(k) is None or isinstance(found[k], t) for k, t in _MACHINE_LATER.items()):
        return False
    if found.get("family") is not None and found.get("model") is None:
        return False
    return all(isinstance(f, str) for f in found.get("flags") or [])


_MACHINE = {"cpu": str, "cores": int, "torch": str}
_MACHINE_LATER = {"vendor": str, "family": int, "model": int, "flags": list, "threads": int, "gpu": str, "run_id": str}


@dataclass
class RunLog:
    windows: list[dict[str, Any]] = field(default_factory=list)
    validations: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, Any] | None = None

    @classmethod
    def read(cls, save_dir: str | Path) -> RunLog:
        if not (Path(save_dir) / METRICS).exists():
            raise UserError(
                f"{save_dir}: not a training run (no {METRICS}), a binarized corpus (no manifest.json) or a checkpoint"
            )
        log = cls()
        seconds: dict[int, float] = {}
        for entry in entries(save_dir):
            if "seconds" in entry:
                log.windows.append(entry)
                seconds[entry["step"]] = entry["seconds"]
            elif "dev_nll" in entry:
                log.validations.append(entry)
        for v in log.validations:  # a validation follows the log line of its own update
            v["seconds"] = seconds.get(v["step"], float("nan"))
        if (Path(save_dir) / MACHINE).exists():
            log.machine = _machine(Path(save_dir) / MACHINE)
        return log

    @property
    def updates(self) -> int:
        return self.windows[-1]["step"] if self.windows else 0

    @property
    def seconds(self) -> float:
        return self.windows[-1]["seconds"] if self.windows else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Target tokens per second of training, validation excluded: the mean over log windows,
        weighted by their updates."""
        total = weights = 0.0
        previous = 0
        for w in self.windows:
            total += w["tgt_tokens_per_s"] * (w["step"] - previous)
            weights, previous = weights + w["step"] - previous, w["step"]
        return total / weights if weights else 0.0

    def last_before(self, minutes: float) -> dict[str, Any] | None:
        """The last validation made within ``minutes`` of the start (a few seconds' grace)."""
        made = [v for v in self.validations if v["seconds"] <= 60 * minutes + 5]
        return made[-1] if made else None


def run_facts(save_dir: str | Path) -> dict[str, Any]:
    """How far training got, how fast, on what, and which update best.pt holds, chosen how."""
    last = Path(save_dir) / "last.pt"
    if not (Path(save_dir) / METRICS).exists() and last.is_file():  # stopped before its first log line
        machine = Path(save_dir) / MACHINE
        log = RunLog(machine=_machine(machine) if machine.exists() else None)
        updates, seconds, speed = 0, 0.0, None
    else:
        log = RunLog.read(save_dir)
        # a log of no window yet (a run just started, or stopped before its first): no speed, not 0
        updates, seconds, speed = log.updates, log.seconds, log.tokens_per_s if log.windows else None
    if last.is_file():  # a stop between two log lines saved updates the log has not counted
        try:
            progress = checkpoint.load(last).training.progress
        except FormatError:  # a damaged last.pt: the log says what it says (a resume says the rest)
            progress = checkpoint.Progress()
        if progress.step > updates:
            updates, seconds = progress.step, progress.seconds
    facts: dict[str, Any] = {
        "updates": updates,
        "minutes": seconds / 60,
        "tgt_tokens_per_s": speed,
        "machine": log.machine,
    }
    best = Path(save_dir) / "best.pt"
    if best.exists():
        run = checkpoint.load(best).training
        step = run.progress.step
        dev = next((v for v in log.validations if v["step"] == step), None)
        by = run.config.chosen_by
        facts["best"] = {
            "step": step,
            "by": by,
            "dev_nll": dev["dev_nll"] if dev else None,
            "dev_bleu": dev.get("dev_bleu_tok") if dev else None,
        }
    return facts


def run_summary(save_dir: str | Path) -> str:
    """One line: how far training got, how fast, and which update best.pt holds."""
    facts = run_facts(save_dir)
    speed = facts["tgt_tokens_per_s"]
    line = (
        f"trained {facts['updates']:,} update{'' if facts['updates'] == 1 else 's'} in {facts['minutes']:.1f} minutes "
        + (f"({speed:,.0f} target tokens/s)" if speed is not None else "(stopped before its first log line)")
    )
    if facts["machine"]:
        line += f" on {describe(facts['machine'])}"
    if "best" in facts:
        best = facts["best"]
        said = [f"chosen by dev {best['by'].upper()}"]
        if best["by"] == "bleu" and best["dev_bleu"] is not None:  # the figure it was chosen by, first
            said[0] += f" {best['dev_bleu']:.2f}, greedy and tokenized"
        if best["dev_nll"] is not None:
            said.append(f"dev NLL {best['dev_nll']:.1f} per sentence")
        line += f"; best.pt is update {best['step']:,} ({'; '.join(said)})"
    return line
