"""make bench runs from a clone: the peer scripts it calls are in the repository; bin/ holds thin
entries into bench, and the benchmarks without peers run here."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EN, FR, write_pair
from tests.test_examples import nmtkit_bin

ROOT = Path(__file__).resolve().parent.parent


RECIPES = ROOT / "bench"
BENCHES = [RECIPES / "bench_train.py", RECIPES / "bench_translate.py"]  # bin/bench-train's, bin/bench-translate's


def test_every_peer_script_the_benchmarks_call_is_here_and_runs_through_bash():
    peers = ROOT / "bench" / "peers"
    called = set()
    for script in BENCHES:
        text = script.read_text(encoding="utf-8")
        called |= set(re.findall(r'"([a-z_]+\.(?:sh|py|yaml))"', text))
    assert {"install.sh", "prep_data.py", "run_fairseq.sh", "run_joeynmt.sh"} <= called
    for name in called:
        found = list(peers.rglob(name))
        assert found, f"bench/peers has no {name}"
    for sh in peers.glob("*.sh"):
        assert subprocess.run(["bash", "-n", str(sh)]).returncode == 0, sh  # parses
    for path in [*peers.rglob("*"), *BENCHES, ROOT / "bin" / "bench-train", ROOT / "bin" / "bench-translate"]:
        if path.is_file():
            assert "shared/" not in path.read_text(encoding="utf-8"), path


def test_the_readme_never_points_outside_the_repository():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../" not in text and "shared/" not in text
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


def test_the_command_line_bench_times_every_command_and_completion():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "bench-cli"), "--runs", "1", "--nmtkit", str(nmtkit_bin() / "nmtkit")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    from nmtkit.cli import main

    for name in main.commands:
        assert f"| `nmtkit {name} --help` |" in out
    assert "completion of 'nmtkit translate --be<TAB>'" in out and "target under 0.5 s" in out


def test_every_script_of_bin_is_a_thin_entry_into_the_package():
    """bin/ holds entries alone: each Python script imports its recipe's main and calls it; the
    work (and its lint, types and limits) is the package's."""
    for script in sorted((ROOT / "bin").iterdir()):
        text = script.read_text(encoding="utf-8")
        if not text.startswith("#!/usr/bin/env python3"):
            continue
        assert len(text.splitlines()) <= 40, script
        tree = ast.parse(text)
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert imported & {f"bench.{p.stem}" for p in RECIPES.glob("*.py")}
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)], script


def test_a_script_of_bin_run_by_a_python_without_nmtkit_s_libraries_says_so_in_a_line():
    """bin/gpu-check by the system's python3 (the first on PATH, without the venv's) was a
    traceback of torch's import; -S stands for such a Python: no site-packages."""
    done = subprocess.run(
        [sys.executable, "-S", ROOT / "bin" / "gpu-check", "--help"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("gpu-check: this Python (") and "has no torch" in done.stderr
    assert "make install, then .venv/bin/python bin/gpu-check" in done.stderr
    module = subprocess.run(  # a package's import sees "-m" as sys.argv[0]
        [sys.executable, "-S", "-m", "bench.results", "render"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert module.returncode == 2 and module.stderr.startswith("bench.results: this Python (")
    assert "make install, then .venv/bin/python -m bench.results" in module.stderr


def test_the_serve_bench_loads_the_server_and_reports_latency_memory_and_its_exit(overfit, tmp_path):
    source = tmp_path / "source.en"
    source.write_text("\n".join(EN[:4]) + "\n\n", encoding="utf-8")  # a blank line is not sent
    done = subprocess.run(
        [sys.executable, ROOT / "bin" / "bench-serve", overfit / "run" / "last.pt", source]
        + ["--clients", "2", "--requests", "12", "--seconds", "120", "--beam", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, latency, memory = done.stdout.splitlines()
    assert first.startswith("12 requests of one sentence from 2 clients in ") and "beam 2" in first
    assert re.fullmatch(r"latency ms: p50 \d+, p90 \d+, p99 \d+; errors 0", latency)
    assert re.fullmatch(
        r"server RSS: \d+ MB after warm-up; \d+, \d+, \d+ MB at a quarter, .* SIGTERM: exit -?\d+", memory
    )


def test_the_data_bench_tiles_pairs_to_a_word_count_and_measures_a_commands_peak(tmp_path):
    from bench.bench_data import run, tiled

    (tmp_path / "a.en").write_text("one two\nthree\n")
    (tmp_path / "a.fr").write_text("un deux\ntrois\n")
    assert tiled(tmp_path / "a", tmp_path / "b", 10) == 3  # 4 + 2 + 4 words, both sides
    assert (tmp_path / "b.en").read_text() == "one two\nthree\none two\n"
    wall, peak_mb = run([sys.executable, "-c", "x = bytearray(64 << 20)"])
    assert wall > 0 and peak_mb >= 64


def test_the_profiler_runs_the_training_runs_whole_update_and_says_how_many_shapes_it_captured(tmp_path):
    """bin/profile-train --cuda-graphs on a CPU: nmtkit train's own state and padded update (no
    graph to capture there), its speed and counts in the figures; the GPU's figures need a GPU."""
    from bench import profile_train
    from tests.test_corpus import make_corpus

    write_pair(tmp_path / "raw" / "train", EN, FR)
    write_pair(tmp_path / "raw" / "valid", EN[:3], FR[:3])
    write_pair(tmp_path / "raw" / "test", EN[2:5], FR[2:5])
    make_corpus(tmp_path / "raw", tmp_path)
    out = tmp_path / "figures.json"
    profile_train.main(
        [str(tmp_path / "bin"), "--preset", "tiny", "--updates", "3", "--batch-size", "2", "--threads", "1"]
        + ["--cuda-graphs", "--json", str(out)]
    )
    figures = json.loads(out.read_text())
    assert figures["cuda_graphs"] and figures["warmup_updates"] == 5 and figures["captured"] == 0
    assert figures["tok_per_s"] > 0 and not figures["every_shape_captured"] and "gpu_busy_share" not in figures
    with pytest.raises(SystemExit, match="plain update"):
        profile_train.main([str(tmp_path / "bin"), "--cuda-graphs", "--compile"])


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bin").iterdir()))
def test_every_script_in_bin_answers_help(script):
    path = ROOT / "bin" / script
    shell = "bash" in path.read_text(encoding="utf-8").splitlines()[0]
    r = subprocess.run(
        ["bash" if shell else sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.lower().startswith("usage:") and script in r.stdout.splitlines()[0]


def test_bench_train_refuses_too_few_updates_to_time():
    r = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "bench-train"), "--updates", "5"], capture_output=True, text=True
    )
    assert r.returncode == 2 and "at least 30" in r.stderr.splitlines()[-1]
