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
    cmd = [sys.executable, ROOT / "bin" / "bench-gpu", tmp_path / "bin", "--device", "cpu", "--preset", "tiny"]
    cmd += ["--updates", "2", "--graph-updates", "4", "--warmup", "0", "--archs", "rnnsearch,rnnencdec+cudnn"]
    cmd += ["--paths", "eager,update-graph", "--batches", "80,6000", "--precisions", "fp32/tf32,bf16"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "bench-gpu.json").read_text())
    bf16 = this_cpu().native_bf16  # elsewhere nmtkit refuses --bf16, and the bench leaves it out
    assert len(report["rows"]) == (16 if bf16 else 8)  # 2 archs × 2 batches × 2 (or 1) precisions × 2 paths
    assert all(r["tok_per_s"] > 0 and r["wmt14_hours"] > 0 for r in report["rows"])
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["rnnencdec+cudnn", "6,000", "tokens", "fp32/tf32", "update-graph"] in [r[:5] for r in rows]
    assert (["rnnsearch", "6,000", "tokens", "bf16", "eager"] in [r[:5] for r in rows]) == bf16
    assert {r["path"] for r in report["rows"]} == {"eager", "update-graph"}
    commands = [line for line in done.stderr.splitlines() if line.startswith("+ ")]
    assert sum("--encoder cudnn" in c for c in commands) == len(commands) // 2
    assert all(("--max-updates 4" in c) == ("--cuda-graphs" in c) for c in commands)


def test_a_graph_cells_speed_is_read_from_its_replayed_windows_and_its_captures_apart(capsys):
    from bench.bench_gpu import UNSTEADY, print_table, speed_of

    windows = [
        {"step": 10, "tgt_tokens_per_s": 5_000, "graphs_captured": 3, "capture_s": 0.6, "gpu_peak_mb": 900},
        # a shape captured, then replayed with the others: every update replayed, its capture's seconds in it
        {"step": 20, "tgt_tokens_per_s": 20_000, "graphs_captured": 1, "capture_s": 0.2, "gpu_busy_share": 0.3},
        {"step": 30, "tgt_tokens_per_s": 90_000, "gpu_busy_share": 0.8},
        {"step": 40, "tgt_tokens_per_s": 50_000},  # a shape met late, warming up: not every update replayed
        {"step": 50, "tgt_tokens_per_s": 110_000, "gpu_busy_share": 0.9, "gpu_peak_mb": 1_000},
    ]
    got = speed_of(windows, warmup=15)
    assert got["tok_per_s"] == 100_000 and got["windows"] == 2 and got["steady"]
    assert got["run_tok_per_s"] == pytest.approx(270_000 / 4)  # steps 20 to 50: what the run got
    assert got["captures"] == 4 and got["capture_s"] == pytest.approx(0.8) and got["gpu_peak_mb"] == 1_000
    assert got["gpu_busy_share"] == pytest.approx(0.85)
    eager = speed_of(
        [{k: v for k, v in w.items() if k not in ("graphs_captured", "gpu_busy_share")} for w in windows], 15
    )
    assert eager["tok_per_s"] == pytest.approx(270_000 / 4) and eager["steady"]  # steps 20 to 50
    assert not {"captures", "capture_s", "gpu_busy_share", "run_tok_per_s"} & eager.keys()
    late = speed_of(windows[:2], warmup=15)  # captured to the end: the last window, said unsteady
    assert late["tok_per_s"] == 20_000 and not late["steady"]
    cell = {"arch": "rnnsearch", "batch": "80 sentences", "precision": "fp32/tf32", "path": "update-graph"}
    print_table([{**cell, **got}, {**cell, **late}])
    rows = capsys.readouterr().out.splitlines()
    assert "100,000 " in rows[1] and "67,500" in rows[1] and "85%" in rows[1]  # steady, whole run, busy
    assert "20,000?" in rows[2] and rows[3] == UNSTEADY
    refused = speed_of([{"step": 10, "tgt_tokens_per_s": 5_000, "graphs_refused": 2}, *windows[2:]], 15)
    assert refused["refused"] == 2 and "captures" not in refused


@pytest.mark.parametrize("path", ["update-graph", "update-graph+fused"])
def test_a_graph_cell_on_a_gpu_that_never_captured_is_an_error_not_an_eager_speed(tmp_path, monkeypatch, path):
    from bench import bench_gpu

    ran = []

    def trained(cmd, **kwargs):  # a run whose every shape was refused: its windows name no capture
        ran.append(cmd)
        save = Path(cmd[cmd.index("--save-dir") + 1])
        save.mkdir(parents=True)
        lines = [
            {"step": 10, "seconds": 1.0, "tgt_tokens_per_s": 9_000, "graphs_refused": 3},
            {"step": 20, "seconds": 2.0, "tgt_tokens_per_s": 9_500},
        ]
        (save / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(bench_gpu.subprocess, "run", trained)
    cell = {"arch": "rnnsearch", "batch": "80 sentences", "precision": "fp32/tf32", "path": path}
    row = bench_gpu.measure(tmp_path / "bin", cell, bench_gpu.CellRun("paper", 40, 5, "cuda", 20), tmp_path)
    assert "never captured (3 shapes refused as waiting for the host" in row["error"] and "tok_per_s" not in row
    assert ran[0][ran[0].index("--max-updates") + 1] == "20"  # the graph cell's own count of updates
    eager = bench_gpu.measure(
        tmp_path / "bin", {**cell, "path": "eager"}, bench_gpu.CellRun("paper", 40, 5, "cuda"), tmp_path
    )
    assert eager["tok_per_s"] == 9_250  # an eager cell: every window after the warm-up


def test_a_wrong_data_bin_is_one_line_and_a_run_that_measured_nothing_writes_no_report(raw, tmp_path):
    bench = [sys.executable, str(ROOT / "bin" / "bench-gpu")]
    tiny = ["--device", "cpu", "--preset", "tiny", "--archs", "rnnsearch", "--paths", "eager", "--batches", "80"]
    tiny += ["--precisions", "fp32/tf32", "--updates", "2", "--warmup", "0"]
    missing = subprocess.run([*bench, str(tmp_path / "no-bin"), *tiny], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        f"bench-gpu: {tmp_path / 'no-bin'}: not a binarized corpus (no manifest.json; make gpu-data builds one)"
    ]
    make_corpus(raw, tmp_path)
    (tmp_path / "bench-gpu.json").write_text("measured before")
    # a corpus whose training split the cells cannot read: every cell fails
    for f in (tmp_path / "bin").glob("train.*.bin"):
        f.write_bytes(b"")
    failed = subprocess.run([*bench, str(tmp_path / "bin"), *tiny], capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and "failed:" in failed.stdout
    assert (tmp_path / "bench-gpu.json").read_text() == "measured before"


def test_sigterm_stops_the_cell_it_runs_and_leaves_no_temporary_directory(raw, tmp_path):
    import os
    import signal
    import time

    make_corpus(raw, tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cmd = [sys.executable, str(ROOT / "bin" / "bench-gpu"), str(tmp_path / "bin"), "--device", "cpu"]
    cmd += ["--preset", "tiny", "--archs", "rnnsearch", "--paths", "eager", "--batches", "80"]
    cmd += ["--precisions", "fp32/tf32", "--updates", "100000", "--warmup", "0"]
    bench = subprocess.Popen(cmd, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(scratch.rglob("metrics.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(scratch.rglob("metrics.jsonl")), "the cell's training never logged"
    bench.send_signal(signal.SIGTERM)
    assert bench.wait(timeout=60) == 143
    time.sleep(1)
    left = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True).stdout.split()
    # no training left running, no directory of the bench's left behind (torch keeps its compile cache there)
    assert not left and not [p for p in scratch.iterdir() if p.name.startswith("tmp")]
