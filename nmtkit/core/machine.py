"""What this machine is, as far as training speed goes: the CPU (name, family and model, the vector
units torch's kernels use), its cores, torch and its threads (``machine.json`` of a run).

Machines that report the same name ("AMD EPYC") can train 2x apart: an AVX2-only part, a
Zen 4 with AVX512-BF16, a Zen 5. The family and model number tell them apart, and the flags
say which kernels run (bfloat16 needs AVX512-BF16 or AMX to be faster than float32).
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The flags whose presence changes which kernels torch (oneDNN, MKL) runs, in this order.
SPEED_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class CPU:
    name: str  # the model name /proc/cpuinfo gives ("AMD EPYC 9B14")
    vendor: str = ""  # AuthenticAMD, GenuineIntel, ...
    family: int | None = None
    model: int | None = None
    flags: tuple[str, ...] = field(default_factory=tuple)  # those of SPEED_FLAGS it has
    cores: int = 0

    @property
    def native_bf16(self) -> bool:
        """Whether bfloat16 arithmetic runs in hardware (else torch emulates it, slower than float32)."""
        return any(f in self.flags for f in BF16_FLAGS)


def _field(text: str, key: str) -> str | None:
    found = re.search(rf"^{key}\s*:\s*(.*)$", text, re.M)
    return found.group(1).strip() if found else None


def this_cpu(cpuinfo: str | None = None) -> CPU:
    """This machine's CPU, read from /proc/cpuinfo (or the text given); the platform's name
    alone where there is none."""
    cores = os.cpu_count() or 0
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return CPU(platform.processor() or platform.machine(), cores=cores)
    family, model = _field(cpuinfo, "cpu family"), _field(cpuinfo, "model")
    flags = set((_field(cpuinfo, "flags") or "").split())
    return CPU(
        _field(cpuinfo, "model name") or platform.processor() or platform.machine(),
        _field(cpuinfo, "vendor_id") or "",
        int(family) if family and family.isdigit() else None,
        int(model) if model and model.isdigit() else None,
        tuple(f for f in SPEED_FLAGS if f in flags),
        cores,
    )


MACHINE = "machine.json"


def machine() -> dict[str, Any]:
    """What the speed of a run depends on: the CPU (name, family and model, the vector units
    torch uses), the cores, torch and its threads, and the GPU where there is one."""
    import torch

    cpu = this_cpu()
    found = {
        "cpu": cpu.name,
        "vendor": cpu.vendor,
        "family": cpu.family,
        "model": cpu.model,
        "cores": cpu.cores,
        "flags": list(cpu.flags),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def describe(m: dict[str, Any]) -> str:
    """'AMD EPYC (family 25, model 1), 2 cores (avx2, fma), torch 2.13.0+cpu'; files written
    before the family was recorded give the name alone."""
    flags = ", ".join(m.get("flags") or ["none of avx2/avx512"])
    which = f" (family {m['family']}, model {m['model']})" if m.get("family") is not None else ""
    gpu = f"{m['gpu']}, " if m.get("gpu") else ""
    return f"{gpu}{m['cpu']}{which}, {m['cores']} cores ({flags}), torch {m['torch']}"
