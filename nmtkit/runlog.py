"""A training run as its ``metrics.jsonl`` tells it: updates, wall time, speed, validations,
and the machine it ran on (``machine.json``, written by ``train`` when the run starts).

``train`` appends one line per log window (with the wall seconds since the
start, validation time included) and one per validation (dev NLL and BLEU).
:class:`RunLog` joins them, so a validation knows the minute it was made at:
what the demo's summary and the learning curves need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cpu import this_cpu


MACHINE = "machine.json"


def machine() -> dict[str, Any]:
    """What the speed of a run depends on: the CPU (name, family and model, the vector units
    torch uses), the cores, torch and its threads."""
    import torch
    cpu = this_cpu()
    return {"cpu": cpu.name, "vendor": cpu.vendor, "family": cpu.family, "model": cpu.model,
            "cores": cpu.cores, "flags": list(cpu.flags), "torch": torch.__version__,
            "threads": torch.get_num_threads()}


def describe(m: dict[str, Any]) -> str:
    """'AMD EPYC (family 25, model 1), 2 cores (avx2, fma), torch 2.13.0+cpu'; files written
    before the family was recorded give the name alone."""
    flags = ", ".join(m.get("flags") or ["none of avx2/avx512"])
    which = f" (family {m['family']}, model {m['model']})" if m.get("family") is not None else ""
    return f"{m['cpu']}{which}, {m['cores']} cores ({flags}), torch {m['torch']}"


@dataclass
class RunLog:
    windows: list[dict[str, Any]] = field(default_factory=list)
    validations: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, Any] | None = None

    @classmethod
    def read(cls, save_dir: str | Path) -> "RunLog":
        log = cls()
        seconds: dict[int, float] = {}
        for line in (Path(save_dir) / "metrics.jsonl").read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if "seconds" in entry:
                log.windows.append(entry)
                seconds[entry["step"]] = entry["seconds"]
            elif "dev_nll" in entry:
                log.validations.append(entry)
        for v in log.validations:    # a validation follows the log line of its own update
            v["seconds"] = seconds.get(v["step"], float("nan"))
        if (Path(save_dir) / MACHINE).exists():
            log.machine = json.loads((Path(save_dir) / MACHINE).read_text())
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


def run_summary(save_dir: str | Path) -> str:
    """One line: how far training got, how fast, and which update best.pt holds."""
    from . import checkpoint
    log = RunLog.read(save_dir)
    line = (f"trained {log.updates:,} updates in {log.seconds / 60:.1f} minutes "
            f"({log.tokens_per_s:,.0f} target tokens/s)")
    if log.machine:
        line += f" on {describe(log.machine)}"
    best = Path(save_dir) / "best.pt"
    if best.exists():
        run = checkpoint.load(best).training
        by, step = run.config.best_by, run.progress.step
        dev = next((v for v in log.validations if v["step"] == step), None)
        score = f", dev NLL {dev['dev_nll']:.1f} per sentence" if dev else ""
        line += f"; best.pt is update {step:,} (chosen by dev {by.upper()}{score})"
    return line
