"""Training speed on a GPU at the paper's sizes, in one run: every architecture, batch, precision and path.

    bin/bench-gpu DATA_BIN [--updates 60] [--warmup 20] [--graph-updates 250]
                  [--archs rnnsearch,rnnencdec,luong]
                  [--paths eager,compiled,graphs,update-graph,update-graph+fused]
                  [--precisions fp32/tf32,bf16] [--batches 80,6000] [--device cuda]

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
happen there); memory is the GPU's peak allocation. The whole update as one
graph (update-graph; update-graph+fused with the recurrences' hand-written
passes, --fused-steps) runs --graph-updates updates, since each padded shape is
captured the third time it is met: its speed is the mean of the windows (of
10 updates) in which every update replayed a graph and none was captured,
beside the mean of all its windows after the first --warmup updates (the
whole run's, shapes met late still warming up and being captured); its
capture seconds are a column of their own, and its GPU busy share is the
time the GPU spent replaying over the wall time of the replayed windows.
An architecture written ``rnnsearch+cudnn`` trains with ``--encoder cudnn``.
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
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmtkit.core.machine import this_cpu
from nmtkit.train.runlog import RunLog

from .bench_common import NMTKIT, exit_on_sigterm, fail, mean, write_text
from .gpu_cells import BATCHES, PATHS, WHOLE_UPDATE, WMT14_TARGET_TOKENS, cells, flags


@dataclass(frozen=True)
class CellRun:
    """How each cell trains: the preset, its updates, those left out of the speed, the device."""

    preset: str
    updates: int
    warmup: int
    device: str
    graph_updates: int = 0  # the whole update as one graph: its shapes are captured as they come (0: updates)


def measure(
    data_bin: Path, cell: dict[str, str], run: CellRun, work: Path, timeout: float | None = None
) -> dict[str, Any]:
    """One cell: a fresh ``nmtkit train``; its speed and peak memory, or the error (also when
    ``timeout`` seconds pass first: bin/gpu-check keeps to its budget)."""
    save = work / "_".join(c.replace(" ", "").replace("/", "").replace(",", "") for c in cell.values())
    updates = (run.graph_updates or run.updates) if cell["path"] in WHOLE_UPDATE else run.updates
    cmd = [*NMTKIT, "train", str(data_bin), "--save-dir", str(save), "--reset", "--preset", run.preset]
    cmd += ["--max-updates", str(updates), "--log-every", "10", "--valid-every", str(10**9), "--no-valid-bleu"]
    cmd += ["--valid-max-sentences", "8", "--seed", "1", "--device", run.device, "--quiet", *flags(cell)]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**cell, "error": f"not measured: out of time ({timeout:.0f} s)"}
    if done.returncode != 0:
        return {**cell, "error": (done.stderr.strip().splitlines() or ["?"])[-1][:160]}
    found = {**cell, **speed_of(RunLog.read(save).windows, run.warmup)}
    if cell["path"] in WHOLE_UPDATE and run.device.startswith("cuda") and "captures" not in found:
        refused = f"{found['refused']} shapes refused as waiting for the host" if "refused" in found else "none met"
        return {**cell, "error": f"the whole update was never captured ({refused}; the run's log says why)"}
    return found


UNSTEADY = (
    "? no window after the warm-up (with graphs, none in which every update replayed): the last "
    "window's speed, not a steady one"
)


def speed_of(windows: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """A cell's figures from its run's log windows: the mean speed of those after ``warmup``
    updates (the last window when none is), and where the run captured CUDA graphs, of those in
    which every update replayed one and none was captured (the steady speed: a shape met late
    still warms up and is captured inside the run) beside that of all of them
    (``run_tok_per_s``); the captures' count and seconds, the shapes refused, the GPU's busy
    share while it replayed, the peak memory."""
    captures = [w for w in windows if "graphs_captured" in w]
    refused = [w for w in windows if "graphs_refused" in w]
    logged = [w for w in windows if "tgt_tokens_per_s" in w and w["step"] > warmup]
    # with graphs: the windows that replayed whole, a capture's seconds in none of them
    timed = [w for w in logged if "gpu_busy_share" in w and "graphs_captured" not in w] if captures else logged
    steady = bool(timed)
    timed = timed or [w for w in windows if "tgt_tokens_per_s" in w][-1:]
    speed = mean([w["tgt_tokens_per_s"] for w in timed])
    busy = [w["gpu_busy_share"] for w in timed if "gpu_busy_share" in w]
    return {
        "tok_per_s": speed,
        "gpu_peak_mb": max((w.get("gpu_peak_mb", 0.0) for w in windows), default=0.0),
        "windows": len(timed),
        "steady": steady,  # False: no window after the warm-up (or, with graphs, none replayed whole)
        "wmt14_hours": WMT14_TARGET_TOKENS / speed / 3600,
        **({"run_tok_per_s": mean([w["tgt_tokens_per_s"] for w in logged])} if captures and logged else {}),
        **({"captures": sum(w["graphs_captured"] for w in captures)} if captures else {}),
        **({"refused": sum(w["graphs_refused"] for w in refused)} if refused else {}),
        **({"capture_s": sum(w["capture_s"] for w in captures)} if captures else {}),
        **({"gpu_busy_share": mean(busy)} if busy and len(busy) == len(timed) else {}),
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("data_bin", type=Path)
    ap.add_argument("--updates", type=int, default=60, help="updates of each cell off the whole-update path")
    ap.add_argument(
        "--graph-updates", dest="graph_updates", type=int, default=250, help="updates of each update-graph cell"
    )
    ap.add_argument("--warmup", type=int, default=20, help="updates left out of each cell's speed")
    ap.add_argument("--archs", default="rnnsearch,rnnencdec,luong", help="ARCH or ARCH+cudnn (--encoder cudnn)")
    ap.add_argument("--paths", default=",".join(PATHS), help="of " + ", ".join(PATHS))
    ap.add_argument("--precisions", default="fp32/tf32,bf16", help="of fp32/tf32, bf16")
    ap.add_argument("--batches", default="80,6000", help="80 (sentences), 6000 (tokens), or both")
    ap.add_argument("--preset", default="paper", help="the model's sizes (nmtkit train --preset)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to check the script (with --preset tiny)")
    return ap


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'arch':<16}{'batch':<14}{'precision':<11}{'step':<14}{'target tok/s':>13}{'GPU peak':>10}"
        f"{'WMT14 h':>9}{'capture s':>10}{'GPU busy':>9}{'whole run':>11}"
    )
    for r in rows:
        cell = f"{r['arch']:<16}{r['batch']:<14}{r['precision']:<11}{r['path']:<14}"
        if "error" in r:
            print(f"{cell}  failed: {r['error']}")
            continue
        capture = f"{r['capture_s']:>10.1f}" if "capture_s" in r else f"{'':>10}"
        busy = f"{100 * r['gpu_busy_share']:>8.0f}%" if "gpu_busy_share" in r else f"{'':>9}"
        run = f"{r['run_tok_per_s']:>11,.0f}" if "run_tok_per_s" in r else ""
        speed = f"{r['tok_per_s']:>12,.0f}{' ' if r.get('steady', True) else '?'}"
        print(f"{cell}{speed}{r['gpu_peak_mb'] / 1024:>8.2f} GB{r['wmt14_hours']:>9.1f}{capture}{busy}{run}")
    if not all(r.get("steady", True) for r in rows):
        print(UNSTEADY)


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    unknown = set(args.paths.split(",")) - set(PATHS)
    if unknown:
        fail("bench-gpu", f"no path {sorted(unknown)[0]!r} (of {', '.join(PATHS)})")
    named = {"80": BATCHES[0], "6000": BATCHES[1]}
    if not set(args.batches.split(",")) <= set(named):
        fail("bench-gpu", f"--batches takes 80, 6000 or both, not {args.batches!r}")
    batches = tuple(named[b] for b in args.batches.split(","))
    if not (args.data_bin / "manifest.json").exists():
        fail("bench-gpu", f"{args.data_bin}: not a binarized corpus (no manifest.json; make gpu-data builds one)")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        fail("bench-gpu", "no CUDA GPU here (--device cpu --preset tiny checks the script on a CPU)")
    device = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    precisions = tuple(args.precisions.split(","))
    if not set(precisions) <= {"fp32/tf32", "bf16"}:
        fail("bench-gpu", f"--precisions takes fp32/tf32, bf16 or both, not {args.precisions!r}")
    if device == "cpu" and not this_cpu().native_bf16 and "bf16" in precisions:
        precisions = tuple(p for p in precisions if p != "bf16")  # nmtkit refuses --bf16 where emulated
        print("bench-gpu: this CPU has no native bfloat16: the bf16 cells are left out", file=sys.stderr)
    run = CellRun(args.preset, args.updates, args.warmup, args.device, args.graph_updates)
    exit_on_sigterm()
    chosen = cells(args.archs.split(","), args.paths.split(","), precisions, batches)
    if not chosen:
        fail("bench-gpu", "no cell to run: these archs, paths, precisions and batches make none")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(args.data_bin, c, run, Path(tmp)) for c in chosen]
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(
        f"\ntraining at preset '{args.preset}', {args.updates} updates (mean after {args.warmup}; the whole "
        f"update as graphs: {args.graph_updates}), on {device}, torch {torch.__version__}"
    )
    print_table(rows)
    found = {
        "device": device,
        "torch": torch.__version__,
        "preset": args.preset,
        "updates": args.updates,
        "graph_updates": args.graph_updates,
        "command": " ".join(sys.argv),
        "rows": rows,
    }
    if all("error" in r for r in rows):  # a file of failures alone would replace one of measured cells
        sys.exit(1)
    write_text(args.data_bin.resolve().parent / "bench-gpu.json", json.dumps(found, indent=1))
    if any("error" in r for r in rows):
        sys.exit(1)
