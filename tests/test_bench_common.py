"""What the scripts of bin/ share (bench.bench_common): a run's speed read by the run
log's own reader, /usr/bin/time's peak, outputs written whole, and a stage kept only for the
budget it was run with."""

import json

import pytest

from bench import bench_common
from bench.bench_common import Site, peak_rss_mb, windows_after, write_lines


def test_the_speed_after_the_warm_up_is_read_by_the_run_logs_reader(tmp_path):
    entries = [
        {"step": 10, "seconds": 1.0, "tgt_tokens_per_s": 100.0, "updates_per_s": 5.0},
        {"step": 20, "seconds": 2.0, "tgt_tokens_per_s": 200.0, "updates_per_s": 6.0},
        {"step": 20, "dev_nll": 50.0},  # a validation: no window
        {"step": 30, "seconds": 3.0, "tgt_tokens_per_s": 300.0, "updates_per_s": 7.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert [w["step"] for w in windows_after(tmp_path, 10)] == [20, 30]
    assert [w["tgt_tokens_per_s"] for w in windows_after(tmp_path, 20)] == [300.0]
    with pytest.raises(Exception, match="not a training run"):
        windows_after(tmp_path / "none", 0)


def test_the_peak_is_time_v_s_last_reading_and_outputs_are_written_whole(tmp_path):
    text = "\tMaximum resident set size (kbytes): 2048\n\tExit status: 0\n"
    assert peak_rss_mb(text) == 2.0 and peak_rss_mb("no time here") is None
    write_lines(tmp_path / "out" / "lines", ["a", "b"])
    assert (tmp_path / "out" / "lines").read_text() == "a\nb\n" and len(list((tmp_path / "out").iterdir())) == 1


def test_a_stage_is_kept_for_its_own_budget_and_threads_alone(tmp_path, capsys):
    site = Site(tmp_path, tmp_path / "data")
    result = tmp_path / "train-x.json"
    assert site.kept(result, 20.0, 2) is None
    result.write_text(json.dumps({"minutes": 20.0, "threads": 2, "updates": 5}))
    assert site.kept(result, 20.0, 2)["updates"] == 5
    with pytest.raises(SystemExit) as stop:
        site.kept(result, 30.0, 2)
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith(f"bench-marian: {result}: made with --minutes 20.0 --threads 2")
    assert site.work == tmp_path / "marian-demo" and site.data_bin == tmp_path / "data" / "data-bin-bpe8000"


def test_the_cache_is_bench_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_DIR", str(tmp_path))
    assert bench_common.bench_dir() == tmp_path
