"""Training speed on a GPU at the paper's sizes, in one run: every architecture, batch, precision and path.

    bin/bench-gpu DATA_BIN [--updates 60] [--archs rnnsearch,rnnencdec,luong]
                  [--paths eager,compiled,graphs,update-graph] [--device cuda]

For each of RNNsearch, RNNencdec (emb 620, hidden 1000, maxout 500) and
Luong et al.'s stacked LSTM (4 × 1000): batches of 80 sentences (the
paper's) and of about 6,000 target tokens; float32 (TF32 products) and bf16
autocast; the eager step, the compiled one (--compile) and the compiled one
replayed as CUDA graphs (--compile --compile-mode reduce-overhead
--pad-to-multiple 8: lengths padded so that few shapes are recorded); the
last two for RNNsearch and RNNencdec, whose recurrences are Python loops
(Luong's stacked LSTM is cuDNN's already). Each cell is a fresh `nmtkit
train` of --updates updates with the paper's Adadelta; speed is target
tokens per second (</s> included), the mean of the logged windows after the
first --warmup updates (compilation, graph recording and cuDNN's autotuning
happen there); memory is the GPU's peak allocation.
The last column is the hours the WMT'14 RNNsearch-50 run (288,000 updates of
80 pairs, about 580M target tokens) would take at that speed.

DATA_BIN is any binarized corpus (make data BPE=0 gives the Bible's with the
paper's 30,000-word lists). Results: a table on stdout and
DATA_BIN/../bench-gpu.json. `--device cpu --preset tiny` runs the same
matrix on a CPU in seconds (a check of the script, not a measurement).

One cell's run (:func:`measure`) is ``bin/gpu-check``'s bench part too; the cells themselves
are :mod:`bench.gpu_cells`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmtkit.core.machine import this_cpu
from nmtkit.train.runlog import RunLog

from .bench_common import NMTKIT, mean, windows_after, write_text
from .gpu_cells import PATHS, WMT14_TARGET_TOKENS, cells, flags


@dataclass(frozen=True)
class CellRun:
    """How each cell trains: the preset, its updates, those left out of the speed, the device."""

    preset: str
    updates: int
    warmup: int
    device: str


def measure(
    data_bin: Path, cell: dict[str, str], run: CellRun, work: Path, timeout: float | None = None
) -> dict[str, Any]:
    """One cell: a fresh ``nmtkit train``; its speed and peak memory, or the error (also when
    ``timeout`` seconds pass first: bin/gpu-check keeps to its budget)."""
    save = work / "_".join(c.replace(" ", "").replace("/", "").replace(",", "") for c in cell.values())
    cmd = [*NMTKIT, "train", str(data_bin), "--save-dir", str(save), "--reset", "--preset", run.preset]
    cmd += ["--max-updates", str(run.updates), "--log-every", "10", "--valid-every", str(10**9), "--no-valid-bleu"]
    cmd += ["--valid-max-sentences", "8", "--seed", "1", "--device", run.device, "--quiet", *flags(cell)]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**cell, "error": f"not measured: out of time ({timeout:.0f} s)"}
    if done.returncode != 0:
        return {**cell, "error": (done.stderr.strip().splitlines() or ["?"])[-1][:160]}
    windows = RunLog.read(save).windows
    timed = windows_after(save, run.warmup) or [w for w in windows if "tgt_tokens_per_s" in w][-1:]
    speed = mean([w["tgt_tokens_per_s"] for w in timed])
    return {
        **cell,
        "tok_per_s": speed,
        "gpu_peak_mb": max((w.get("gpu_peak_mb", 0.0) for w in windows), default=0.0),
        "windows": len(timed),
        "wmt14_hours": WMT14_TARGET_TOKENS / speed / 3600,
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_bin", type=Path)
    ap.add_argument("--updates", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--archs", default="rnnsearch,rnnencdec,luong")
    ap.add_argument("--paths", default=",".join(PATHS), help="of " + ", ".join(PATHS))
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--device", default="cuda")
    return ap


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'arch':<11}{'batch':<14}{'precision':<11}{'step':<10}{'target tok/s':>13}{'GPU peak':>10}{'WMT14 h':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['arch']:<11}{r['batch']:<14}{r['precision']:<11}{r['path']:<10}  failed: {r['error']}")
            continue
        print(
            f"{r['arch']:<11}{r['batch']:<14}{r['precision']:<11}{r['path']:<10}{r['tok_per_s']:>13,.0f}"
            f"{r['gpu_peak_mb'] / 1024:>8.2f} GB{r['wmt14_hours']:>9.1f}"
        )


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    unknown = set(args.paths.split(",")) - set(PATHS)
    if unknown:
        sys.exit(f"bench-gpu: no path {sorted(unknown)[0]!r} (of {', '.join(PATHS)})")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("bench-gpu: no CUDA GPU here (--device cpu --preset tiny checks the script on a CPU)")
    device = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    precisions: tuple[str, ...] = ("fp32/tf32", "bf16")
    if device == "cpu" and not this_cpu().native_bf16:
        precisions = ("fp32/tf32",)  # nmtkit refuses --bf16 where the CPU would only emulate it
        print("bench-gpu: this CPU has no native bfloat16: the bf16 cells are left out", file=sys.stderr)
    run = CellRun(args.preset, args.updates, args.warmup, args.device)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            measure(args.data_bin, c, run, Path(tmp))
            for c in cells(args.archs.split(","), args.paths.split(","), precisions)
        ]
    print(
        f"\ntraining at preset '{args.preset}', {args.updates} updates (mean after {args.warmup}), on {device}, "
        f"torch {torch.__version__}"
    )
    print_table(rows)
    found = {
        "device": device,
        "torch": torch.__version__,
        "preset": args.preset,
        "updates": args.updates,
        "command": " ".join(sys.argv),
        "rows": rows,
    }
    write_text(args.data_bin.resolve().parent / "bench-gpu.json", json.dumps(found, indent=1))
    if any("error" in r for r in rows):
        sys.exit(1)
