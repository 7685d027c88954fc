"""bin/bench-gpu runs its whole matrix (on the CPU, at the tiny preset: a check of the script, not
a measurement) and reports every cell."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nmtkit.core.machine import this_cpu
from tests.test_corpus import make_corpus

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_bench_gpu_runs_every_cell_on_a_cpu(raw, tmp_path):
    make_corpus(raw, tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            ROOT / "bin" / "bench-gpu",
            tmp_path / "bin",
            "--device",
            "cpu",
            "--preset",
            "tiny",
            "--updates",
            "2",
            "--warmup",
            "0",
            "--archs",
            "rnnsearch",
            "--paths",
            "eager,graphs",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "bench-gpu.json").read_text())
    bf16 = this_cpu().native_bf16  # elsewhere nmtkit refuses --bf16, and the bench leaves it out
    assert len(report["rows"]) == (8 if bf16 else 4)  # 2 batches × 2 (or 1) precisions × 2 paths
    assert all(r["tok_per_s"] > 0 and r["wmt14_hours"] > 0 for r in report["rows"])
    assert ("rnnsearch  6,000 tokens  bf16       graphs" in done.stdout) == bf16
    assert "rnnsearch  6,000 tokens  fp32/tf32  graphs" in done.stdout
    assert {r["path"] for r in report["rows"]} == {"eager", "graphs"}
