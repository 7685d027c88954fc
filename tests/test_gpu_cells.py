"""The GPU bench's cells, and the fastest path make paper PAPER_SCALE=gpu takes from them."""

import json

import pytest

from bench.gpu_cells import UNMEASURED, cells, fastest_flags, flags, measured
from nmtkit.core.errors import UserError


def _row(arch, batch, precision, path, speed):
    return {"arch": arch, "batch": batch, "precision": precision, "path": path, "tok_per_s": speed}


ROWS = [
    _row("rnnsearch", "80 sentences", "bf16", "compiled", 40_000),
    _row("rnnsearch", "6,000 tokens", "bf16", "graphs", 55_000),
    _row("rnnsearch", "6,000 tokens", "fp32/tf32", "eager", 20_000),
    _row("rnnencdec", "80 sentences", "bf16", "graphs", 90_000),  # fastest of its own, other batch
    _row("rnnencdec", "6,000 tokens", "fp32/tf32", "compiled", 70_000),
    _row("rnnencdec", "6,000 tokens", "bf16", "eager", 60_000),
]


def test_every_arch_of_a_study_takes_its_fastest_path_in_the_batch_of_rnnsearchs_fastest():
    search, why = fastest_flags(ROWS, "rnnsearch")
    assert search == [
        "--max-tokens",
        "6000",
        "--bf16",
        "--compile",
        "--compile-mode",
        "reduce-overhead",
        "--pad-to-multiple",
        "8",
    ]
    assert "graphs, 6,000 tokens, bf16" in why and "55,000" in why
    encdec, _ = fastest_flags(ROWS, "rnnencdec")
    assert encdec == ["--max-tokens", "6000", "--tf32", "--compile"]  # not its 80-sentence cell


def test_an_arch_not_measured_in_the_studys_batch_keeps_that_batch_and_says_so():
    only80 = [_row("rnnencdec", "80 sentences", "bf16", "eager", 1.0)]
    chosen, why = fastest_flags(ROWS[:3] + only80, "rnnencdec")  # RNNsearch chose 6,000 tokens
    assert chosen == ["--max-tokens", "6000", *UNMEASURED] and "no cell of rnnencdec in this batch" in why
    chosen, why = fastest_flags([], "rnnsearch")
    assert chosen == ["--batch-size", "80", *UNMEASURED] and "no cell of rnnsearch" in why
    assert fastest_flags(only80, "rnnencdec")[0] == ["--batch-size", "80", "--bf16"]  # no RNNsearch: 80


def test_measured_reads_a_gpu_check_report_or_bench_gpu_json_and_never_a_cpu_check(tmp_path):
    failed = {"arch": "rnnsearch", "batch": "80 sentences", "precision": "bf16", "path": "graphs", "error": "OOM"}
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"gpu": True, "parts": {"bench": {"rows": ROWS[:2] + [failed]}}}))
    assert measured(report) == ROWS[:2]
    report.write_text(json.dumps({"gpu": False, "parts": {"bench": {"rows": ROWS}}}))  # tiny mode on a CPU
    assert measured(report) == []
    bench = tmp_path / "bench-gpu.json"
    bench.write_text(json.dumps({"device": "NVIDIA H100", "rows": ROWS}))
    assert measured(bench) == ROWS
    bench.write_text(json.dumps({"device": "cpu", "rows": ROWS}))
    assert measured(bench) == []
    assert measured(tmp_path / "absent.json") == [] and measured(None) == []
    bench.write_text("{not json")
    with pytest.raises(UserError, match="bench-gpu.json: not a gpu-check report"):
        measured(bench)


def test_the_matrix_gives_luong_no_compiled_or_fused_step_and_each_cell_its_flags():
    matrix = cells(["rnnsearch", "luong"], ["eager", "compiled", "graphs", "update-graph", "update-graph+fused"])
    assert len([c for c in matrix if c["arch"] == "rnnsearch"]) == 2 * 2 * 5
    assert {c["path"] for c in matrix if c["arch"] == "luong"} == {"eager", "update-graph"}
    assert flags(matrix[3]) == ["--arch", "rnnsearch", "--batch-size", "80", "--tf32", "--cuda-graphs"]
    assert flags(matrix[4])[-2:] == ["--cuda-graphs", "--fused-steps"]
    assert flags(matrix[0]) == ["--arch", "rnnsearch", "--batch-size", "80", "--tf32"]
    cudnn = cells(["rnnsearch+cudnn"], ["update-graph"], ("fp32/tf32",), ("6,000 tokens",))
    assert [flags(c) for c in cudnn] == [
        ["--arch", "rnnsearch", "--encoder", "cudnn", "--max-tokens", "6000", "--tf32", "--cuda-graphs"]
    ]
    assert flags(cudnn[0], arch=False) == ["--max-tokens", "6000", "--tf32", "--cuda-graphs"]


def test_the_fused_whole_update_when_fastest_gives_the_study_its_flags():
    rows = [*ROWS, _row("rnnsearch", "80 sentences", "fp32/tf32", "update-graph+fused", 120_000)]
    search, why = fastest_flags(rows, "rnnsearch")
    assert search == ["--batch-size", "80", "--tf32", "--cuda-graphs", "--fused-steps"]
    assert "update-graph+fused, 80 sentences, fp32/tf32" in why
