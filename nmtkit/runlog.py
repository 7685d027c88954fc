"""A training run as its ``metrics.jsonl`` tells it: updates, wall time, speed, validations,
and the machine it ran on (``machine.json``, written by ``train`` when the run starts).

``train`` appends one line per log window (with the wall seconds since the
start, validation time included) and one per validation (dev NLL and BLEU).
:class:`RunLog` joins them, so a validation knows the minute it was made at:
what the demo's summary and the learning curves need.
"""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


MACHINE = "machine.json"


def machine() -> dict[str, Any]:
    """What the speed of a run depends on: the CPU, its vector units, the cores, torch."""
    import torch
    info: dict[str, Any] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "flags": [],
            "torch": torch.__version__, "threads": torch.get_num_threads()}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    if name := re.search(r"^model name\s*:\s*(.+)$", text, re.M):
        info["cpu"] = name.group(1).strip()
    found = re.search(r"^flags\s*:(.*)$", text, re.M)
    flags = set(found.group(1).split()) if found else set()
    info["flags"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return info


def describe(m: dict[str, Any]) -> str:
    flags = ", ".join(m.get("flags") or ["none of avx2/avx512"])
    return f"{m['cpu']}, {m['cores']} cores ({flags}), torch {m['torch']}"


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
    best = Path(save_dir) / "best.pt"
    if best.exists():
        run = checkpoint.load(best).training
        by, step = run.config.best_by, run.progress.step
        dev = next((v for v in log.validations if v["step"] == step), None)
        score = f", dev NLL {dev['dev_nll']:.1f} per sentence" if dev else ""
        line += f"; best.pt is update {step:,} (chosen by dev {by.upper()}{score})"
    return line
