"""The cells of the GPU bench (``bin/bench-gpu``, ``make gpu-check``) and the fastest path they found.

A cell is an architecture (``rnnsearch+cudnn``: with ``--encoder cudnn``), a batch (80
sentences, the paper's, or 6,000 target tokens), a
precision (float32 with TF32 products, or bf16 autocast) and a step (eager, compiled, compiled
and replayed as CUDA graphs word by word, or the whole update replayed as one graph, with the
recurrences through autograd or through their hand-written passes).
:func:`flags` turns a cell into ``nmtkit train``'s flags; :func:`fastest_flags` reads the
measured cells and gives each architecture of a study its fastest path under one batch, so that
``make paper PAPER_SCALE=gpu`` trains with what this GPU ran fastest rather than with a guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nmtkit.core.errors import UserError

PATHS = {
    "eager": [],
    "compiled": ["--compile"],
    "graphs": ["--compile", "--compile-mode", "reduce-overhead", "--pad-to-multiple", "8"],
    "update-graph": ["--cuda-graphs"],  # the whole update, one graph per padded shape
    "update-graph+fused": ["--cuda-graphs", "--fused-steps"],  # the same, fewer kernels to replay
}
WHOLE_UPDATE = ("update-graph", "update-graph+fused")  # each padded shape captured as it comes
LUONG_PATHS = ("eager", "update-graph")  # its stacked LSTM is cuDNN's: not compiled, no hand-written pass
BATCHES = ("80 sentences", "6,000 tokens")
WMT14_TARGET_TOKENS = 580e6  # 288,000 updates × 80 pairs × ~25 target tokens (</s> included)
# Where a cell was not measured on this GPU: the whole update as one graph in TF32, the path built
# to be fastest (docs/gpu.md says why), said to be unmeasured wherever it is used; the paper's batch
# when none chose one.
UNMEASURED = ["--tf32", "--cuda-graphs"]
DEFAULT_BATCH = BATCHES[0]


def cells(
    archs: list[str],
    paths: list[str],
    precisions: tuple[str, ...] = ("fp32/tf32", "bf16"),
    batches: tuple[str, ...] = BATCHES,
) -> list[dict[str, str]]:
    """The bench's matrix, in the order it runs (Luong's stacked LSTM is cuDNN's: neither compiled
    nor fused)."""
    out = []
    for arch in archs:
        for batch in batches:
            for precision in precisions:
                for path in paths if arch != "luong" else [p for p in paths if p in LUONG_PATHS]:
                    out.append({"arch": arch, "batch": batch, "precision": precision, "path": path})
    return out


def batch_flags(batch: str) -> list[str]:
    return ["--batch-size", "80"] if batch == BATCHES[0] else ["--max-tokens", "6000"]


def flags(cell: dict[str, Any], arch: bool = True) -> list[str]:
    """``nmtkit train``'s flags for a cell (``arch=False``: without ``--arch`` and its encoder)."""
    family, _, encoder = cell["arch"].partition("+")
    out = ["--arch", family, *(["--encoder", encoder] if encoder else [])] if arch else []
    out += batch_flags(cell["batch"])
    out += ["--bf16"] if cell["precision"] == "bf16" else ["--tf32"]
    out += PATHS[cell["path"]]
    return out


def measured(bench: Path | None) -> list[dict[str, Any]]:
    """The measured cells of a gpu-check report (``report.json``) or of ``bin/bench-gpu``'s JSON;
    none when there is no such file or it was a CPU's tiny mode."""
    if bench is None or not bench.is_file():
        return []
    try:
        found = json.loads(bench.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UserError(f"{bench}: not a gpu-check report or bench-gpu JSON ({err})") from None
    if "parts" in found:  # bin/gpu-check's report.json
        if not found.get("gpu"):
            return []
        rows = found["parts"].get("bench", {}).get("rows", [])
    else:  # bin/bench-gpu's JSON
        if found.get("device") == "cpu":
            return []
        rows = found.get("rows", [])
    return [r for r in rows if "tok_per_s" in r]


def fastest_flags(rows: list[dict[str, Any]], arch: str) -> tuple[list[str], str]:
    """The flags of ``arch``'s fastest cell in the batch of RNNsearch's fastest (the paper's batch
    when RNNsearch was not measured): one batch for a whole study, so that its systems differ in
    their architecture alone; and a line saying what chose them."""
    search = [r for r in rows if r["arch"] == "rnnsearch"]
    batch = max(search, key=lambda r: r["tok_per_s"])["batch"] if search else DEFAULT_BATCH
    mine = [r for r in rows if r["arch"] == arch and r["batch"] == batch]
    if not mine:
        return batch_flags(batch) + UNMEASURED, (
            f"the whole update as CUDA graphs, TF32, {batch}: no cell of {arch} in this batch measured"
        )
    best = max(mine, key=lambda r: r["tok_per_s"])
    return flags(best, arch=False), (
        f"{best['path']}, {best['batch']}, {best['precision']}: the fastest "
        f"measured ({best['tok_per_s']:,.0f} target tok/s)"
    )
