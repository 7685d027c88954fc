"""bin/gpu-check, the unattended GPU proof: on a CPU its tiny mode runs every part that can,
says which need a GPU, keeps its report whatever a part does, and exits 0."""

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import gpu_check_paper as script_paper
from bench import gpu_check_train as script
from tests.test_corpus import make_corpus

ROOT = Path(__file__).resolve().parent.parent
# the CPU's tiny mode even on a GPU machine: these tests check the script, not a GPU
ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def gpu_check(raw, out, *args, timeout=600, env=None):
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "bin" / "gpu-check"),
            "--words",
            str(raw.parent / "bin"),
            "--test-src",
            str(raw / "test.en"),
            "--test-ref",
            str(raw / "test.fr"),
            "--out",
            str(out),
            "--work",
            str(out.parent / f"{out.name}-work"),
            *args,
        ],
        capture_output=True,
        text=True,
        env=ENV | (env or {}),
        timeout=timeout,
    )


def test_without_a_gpu_it_reports_the_machine_and_what_needs_a_gpu(raw, tmp_path):
    make_corpus(raw, tmp_path)
    done = gpu_check(raw, tmp_path / "check", "--parts", "machine,wmt14")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "check" / "report.json").read_text())
    assert report["gpu"] is False
    assert report["parts"]["machine"]["machine"]["gpu"] is None
    assert report["parts"]["machine"]["machine"]["torch"]
    assert report["parts"]["wmt14"]["status"] == "needs a GPU"  # no GPU figure from a CPU
    md = (tmp_path / "check" / "report.md").read_text()
    assert "tiny mode on a CPU" in md and "| wmt14 | needs a GPU |" in md
    assert not list((tmp_path / "check").glob("*.tmp"))


def test_an_unknown_part_or_a_missing_data_bin_is_one_line(raw, tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "gpu-check"), "--parts", "bench,warp"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert (
        done.returncode == 2
        and done.stderr.strip() == "gpu-check: no part 'warp' (of machine, bench, profile, paper, train, wmt14, tests)"
    )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bin" / "gpu-check"),
            "--words",
            str(tmp_path / "none"),
            "--bpe",
            str(tmp_path / "none"),
            "--parts",
            "bench",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 2 and "no data-bin at" in done.stderr and "Traceback" not in done.stderr


def test_the_tests_part_needs_no_data_bin_and_says_the_marks_it_ran(tmp_path):
    """make gpu-rehearsal runs it in a bare copy of the checkout: it stopped at the missing
    data-bin, which only the other parts read."""
    out = tmp_path / "check"
    cmd = [sys.executable, str(ROOT / "bin" / "gpu-check"), "--words", str(tmp_path / "none"), "--bpe"]
    cmd += [
        str(tmp_path / "none"),
        "--parts",
        "machine,tests",
        "--tests-marks",
        "gpu and no_such_mark",
        "--out",
        str(out),
    ]
    done = subprocess.run([*cmd, "--work", str(tmp_path / "work")], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["parts"]["tests"]["status"] == "ok"
    md = (out / "report.md").read_text()
    assert "-m 'gpu and no_such_mark' -v" in md and "the tests marked gpu alone" not in md


def test_sigterm_stops_the_part_s_command_and_keeps_the_report(raw, tmp_path):
    import signal
    import time

    make_corpus(raw, tmp_path)
    out, work = tmp_path / "check", tmp_path / "work"
    cmd = [sys.executable, str(ROOT / "bin" / "gpu-check"), "--words", str(raw.parent / "bin"), "--out", str(out)]
    cmd += ["--work", str(work)]
    check = subprocess.Popen([*cmd, "--parts", "machine,profile"], env=ENV, stderr=subprocess.PIPE, text=True)

    def children() -> list[str]:  # the profile part's commands write into WORK (--json WORK/profile-….json)
        found = subprocess.run(["pgrep", "-f", "--", f"--json {work}"], capture_output=True, text=True).stdout.split()
        return [pid for pid in found if int(pid) != check.pid]

    deadline = time.monotonic() + 120
    while not children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children(), "the profile part never started"
    check.send_signal(signal.SIGTERM)
    assert check.wait(timeout=60) == 143
    time.sleep(1)
    assert not children()  # no profiling left running
    parts = json.loads((out / "report.json").read_text())["parts"]
    assert parts["machine"]["status"] == "ok"  # the part done is kept, and the one stopped says so
    assert parts["profile"]["status"] == "stopped (SIGTERM)"


@pytest.mark.slow
def test_the_tiny_mode_benches_profiles_trains_kills_resumes_translates_and_tests(raw, tmp_path):
    make_corpus(raw, tmp_path)
    # the tests part's pytest narrowed to a few of the gpu tests, some passing, some skipped: the
    # suite runs them all anyway
    few = {"PYTEST_ADDOPTS": "-k 'test_best_pt_holds or test_padding_to_a_multiple or test_fused'"}
    done = gpu_check(raw, tmp_path / "check", "--minutes", "8", env=few)
    assert done.returncode == 0, done.stderr[-3000:]
    parts = json.loads((tmp_path / "check" / "report.json").read_text())["parts"]
    assert [p for p in parts] == ["machine", "bench", "profile", "train", "wmt14", "tests"]  # paper: by name
    bench = parts["bench"]["rows"]
    assert len(bench) == 1 and bench[0]["tok_per_s"] > 0 and bench[0]["arch"] == "rnnsearch"
    profiled = {r["step"]: r for r in parts["profile"]["runs"]}
    assert list(profiled) == ["eager", "update-graph", "update-graph+fused"]
    assert profiled["eager"]["kernels_per_update"] > 0
    assert profiled["update-graph"]["cuda_graphs"] and profiled["update-graph"]["tok_per_s"] > 0
    fused = profiled["update-graph+fused"]
    assert fused["fused_steps"] and fused["kernels_per_update"] < profiled["update-graph"]["kernels_per_update"]
    train = parts["train"]
    # killed after the first save at its planned update, whatever the clock (the budget of a minute a
    # loaded machine once spent on 4 updates left the resumed run nothing to do), resumed from a save
    every, updates = script.TINY_VALID, script.TINY_UPDATES
    assert train["status"] == "ok" and train["updates"] == updates
    assert every < train["killed_at"] < updates and train["resumed_at"] % every == 0 and train["resumed_at"] > 0
    # the uninterrupted run's losses: every update logged after the resume, equal on a CPU
    assert train["compared_updates"] == train["updates"] - train["resumed_at"] and train["resume_difference"] == 0
    assert "bleu" in train and (tmp_path / "check-work" / "train" / "test.hyp").read_text().count("\n") == 4
    # what a device job brings back: four files, the runs' evidence without a checkpoint, pytest's output
    brought = sorted(p.name for p in (tmp_path / "check").iterdir())
    assert brought == ["evidence.tar.gz", "report.json", "report.md", "tests.log"]
    with tarfile.open(tmp_path / "check" / "evidence.tar.gz") as tar:
        names = tar.getnames()
    assert "train/metrics.jsonl" in names and "train/test.hyp" in names and "profile-eager.json" in names
    assert not [n for n in names if n.endswith(".pt")] and (tmp_path / "check-work" / "train" / "last.pt").exists()
    assert parts["tests"]["counts"]["PASSED"] > 0 and parts["tests"]["counts"]["FAILED"] == 0
    md = (tmp_path / "check" / "report.md").read_text()
    assert "killed (SIGKILL) at update" in md and "skipped, and what each would prove:" in md


def test_the_tiny_runs_budget_and_kill_are_updates_whatever_the_clock_says(tmp_path):
    flags, planned = script.kill_plan(SimpleNamespace(gpu=False, args=SimpleNamespace(train_minutes=0.5)))
    assert flags[:2] == ["--max-updates", script.TINY_UPDATES] and "--max-minutes" not in flags
    log = tmp_path / "metrics.jsonl"
    log.write_text(json.dumps({"step": script.TINY_VALID, "seconds": 600.0}) + "\n")  # a slow machine's
    assert not planned(tmp_path)
    log.write_text(json.dumps({"step": script.TINY_VALID + 1, "seconds": 0.5}) + "\n")  # a fast one's
    assert planned(tmp_path)
    flags, _ = script.kill_plan(SimpleNamespace(gpu=True, args=SimpleNamespace(train_minutes=0.0)))
    assert flags[:2] == ["--max-minutes", script.TRAIN_MINUTES]  # a GPU's run is timed: its speed is the point


def test_a_second_job_in_the_same_place_keeps_the_first_jobs_parts(raw, tmp_path):
    make_corpus(raw, tmp_path)
    assert gpu_check(raw, tmp_path / "check", "--parts", "machine").returncode == 0
    assert gpu_check(raw, tmp_path / "check", "--parts", "wmt14").returncode == 0
    parts = json.loads((tmp_path / "check" / "report.json").read_text())["parts"]
    assert list(parts) == ["machine", "wmt14"] and parts["machine"]["machine"]["gpu"] is None
    md = (tmp_path / "check" / "report.md").read_text()
    assert "| machine | ok (earlier job) |" in md and "| wmt14 | needs a GPU |" in md


PYTEST_OUT = """\
tests/test_a.py::test_one PASSED
tests/test_a.py::test_two FAILED
tests/test_b.py::test_three SKIPPED (needs a CUDA GPU)

=================================== FAILURES ===================================
___________________________________ test_two ___________________________________
tests/test_a.py:9: in test_two
    assert 1 == 2
E   assert 1 == 2
=========================== short test summary info ============================
SKIPPED [1] tests/test_b.py:4: needs a CUDA GPU: the exact resume on a GPU
FAILED tests/test_a.py::test_two - assert 1 == 2
"""


def test_the_tests_part_counts_names_each_failure_and_says_what_each_skip_would_prove(tmp_path):
    from bench import gpu_check

    ran = []

    def run(cmd, timeout):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, stdout=PYTEST_OUT, stderr="")

    marks = SimpleNamespace(tests_marks="")
    found = gpu_check.tests(SimpleNamespace(gpu=False, run=run, args=marks, out=tmp_path), 60.0)
    assert (tmp_path / "tests.log").read_text() == PYTEST_OUT  # the whole of it, beside the report
    assert ran[0][1:5] == ["-m", "pytest", "tests", "-m"] and ran[0][5] == "gpu"  # tiny: the GPU path's tests
    assert found["status"] == "failed" and found["counts"] == {"PASSED": 1, "FAILED": 1, "SKIPPED": 1, "ERROR": 0}
    assert list(found["failures"]) == ["test_two"] and "assert 1 == 2" in found["failures"]["test_two"]
    assert "1 passed, 1 failed, 1 skipped, 0 error" in found["lines"]
    assert "- tests/test_b.py:4: needs a CUDA GPU: the exact resume on a GPU" in found["lines"]

    def stopped(cmd, timeout):
        ran.append(cmd)
        raise subprocess.TimeoutExpired(cmd, timeout, output=PYTEST_OUT.split("\n\n")[0].replace("FAILED", "PASSED"))

    found = gpu_check.tests(SimpleNamespace(gpu=True, run=stopped, args=marks, out=tmp_path), 60.0)
    assert found["status"] == "out of time" and found["counts"]["PASSED"] == 2
    assert "stopped after 1.0 minutes, the rest not reached (run --parts tests alone)" in found["lines"][0]
    assert ran[-1][5] == "slow or not slow"  # on a GPU: the whole suite
    some = SimpleNamespace(tests_marks="gpu and not slow")
    gpu_check.tests(SimpleNamespace(gpu=True, run=run, args=some, out=tmp_path), 60.0)
    assert ran[-1][5] == "gpu and not slow"  # --tests-marks: a part of it


def test_the_live_log_is_read_by_the_run_logs_reader_a_half_written_line_left_out(tmp_path):
    assert script.updates(tmp_path) == 0  # no log yet
    log = tmp_path / "metrics.jsonl"
    log.write_text(json.dumps({"step": 3, "seconds": 1.5}) + '\n{"step": 4, "sec')
    assert script.updates(tmp_path) == 3 and script.trained_seconds(tmp_path) == 1.5
    log.write_text(json.dumps({"step": 3, "seconds": 1.5}) + "\n" + json.dumps({"step": 4, "seconds": 2.0}) + "\n")
    assert script.updates(tmp_path) == 4 and script.trained_seconds(tmp_path) == 2.0


def test_the_train_parts_steps_are_bounded_by_its_budget_not_the_jobs_nearer_deadline(tmp_path, monkeypatch):
    """part_budget gives the train part its run's minutes even where the job's deadline is nearer:
    its resumed run and translation get that budget (a 6-minute job on an H100 once left the
    resumed run 60 s, less than its training and compilation)."""
    given = {}
    monkeypatch.setattr(script, "kill_part_way", lambda check, cmd, save, budget: 7)

    def resume(check, cmd, save, killed_at, left, found, lines):
        given["resume"], found["resumed_at"] = left, 5

    def translate(check, save, left, found, lines):
        given["translate"] = left

    def reference(check, cmd, save, at, left, lines):
        given["reference"] = left
        return {}

    monkeypatch.setattr(script, "resume", resume)
    monkeypatch.setattr(script, "translate_and_score", translate)
    monkeypatch.setattr(script, "against_uninterrupted", reference)
    args = SimpleNamespace(words=tmp_path, train_minutes=1.5, test_src=tmp_path, test_ref=tmp_path)
    check = SimpleNamespace(gpu=True, out=tmp_path, work=tmp_path, args=args, found={}, left=lambda: 20.0)
    monkeypatch.setattr(script, "fastest", lambda check: (["--arch", "rnnsearch"], "chosen"))
    assert script.train(check, 330.0)["status"] == "ok"
    assert all(320 < given[step] <= 330 for step in ("resume", "translate", "reference"))
    given.clear()
    check.left = lambda: 900.0  # a later deadline than the part's budget: the job's
    script.train(check, 330.0)
    assert given["resume"] == given["translate"] == given["reference"] == 900.0


def test_the_resumed_run_says_how_long_it_was_given_when_it_runs_out(tmp_path):
    def too_long(cmd, timeout):
        raise subprocess.TimeoutExpired(cmd, timeout)

    with pytest.raises(script.PartFailed) as failed:
        script.resume(SimpleNamespace(run=too_long), ["train"], tmp_path, 3, 250.0, {}, [])
    assert failed.value.lines == ["the resumed run did not end in the 160 s it was given"]


def test_wmt14_without_a_bench_is_not_measured_rather_than_failed_and_runs_even_with_no_time_left():
    """On an H100 (2026-11-27) a job of --parts machine,profile,train,wmt14 reported wmt14 as failed
    (exit 1), and a bench that used the whole job left it 'out of time': it is arithmetic alone."""
    from bench import gpu_check

    waiting = gpu_check.wmt14(SimpleNamespace(gpu=True, found={}), 0.0)
    assert waiting["status"] == "not measured" and "--parts bench,wmt14" in waiting["lines"][0]
    row = {"arch": "rnnsearch", "batch": "80 sentences", "precision": "fp32/tf32", "path": "compiled"}
    bench = {"rows": [row | {"tok_per_s": 23_265.0}, row | {"path": "eager", "tok_per_s": 16_300.0}]}
    late = SimpleNamespace(gpu=True, found={"bench": bench}, left=lambda: 0.0)
    found = gpu_check.run_part(late, "wmt14", 0.0)
    assert found["status"] == "ok" and found["cell"]["path"] == "compiled"
    assert round(found["hours"], 1) == round(580e6 / 23_265 / 3600, 1) == 6.9
    assert gpu_check.run_part(late, "profile", 0.0)["status"] == "out of time"


def test_the_train_part_counts_the_graphs_captured_before_the_resume_and_after_it():
    logged = [
        {"step": 10, "graphs_captured": 3, "capture_s": 0.5},
        {"step": 20},
        {"step": 30, "graphs_captured": 2, "capture_s": 0.3},  # the resume was at update 20
        {"step": 40, "graphs_captured": 1, "capture_s": 0.1},
    ]
    assert script.captures(logged, 20) == (3, 3)
    assert script.captures(logged, 40) == (6, 0) and script.captures([], 5) == (0, 0)


def test_the_resumed_runs_losses_are_held_against_an_uninterrupted_runs(tmp_path):
    """The same command without the kill, to COMPARED updates past the resume, in a directory of its
    own: its logged losses after the resume equal the resumed run's on a CPU, within RESUME_NOISE
    on a GPU."""
    logged = {10: 4.0, 20: 3.5, 30: 3.2, 40: 3.0, 50: 2.9}

    def log(save, losses):
        save.mkdir(exist_ok=True)
        lines = [json.dumps({"step": s, "train_nll_token": v}) for s, v in losses.items()]
        (save / "metrics.jsonl").write_text("\n".join(lines) + "\n")

    save, ran = tmp_path / "train", []
    log(save, logged)

    def check(gpu, apart):
        def run(cmd, timeout):
            ran.append(cmd)
            log(Path(cmd[cmd.index("--save-dir") + 1]), {s: v * (1 + apart * (s > 30)) for s, v in logged.items()})
            return subprocess.CompletedProcess(cmd, 0, "", "")

        return SimpleNamespace(gpu=gpu, run=run)

    cmd = ["nmtkit", "train", "bin", "--save-dir", save, "--max-updates", 50, "--log-every", 10]
    lines = []
    found = script.against_uninterrupted(check(False, 0.0), cmd, save, 20, 60.0, lines)
    assert (
        found == {"compared_updates": 3, "resume_difference": 0.0} and "at 3 logged updates from 30 to 50" in lines[0]
    )
    assert ran[0][ran[0].index("--save-dir") + 1] == tmp_path / "train-uninterrupted" and save in cmd
    assert ran[0][ran[0].index("--max-updates") + 1] == 50 and ran[0].count("--max-updates") == 1
    with pytest.raises(script.PartFailed, match="parted"):
        script.against_uninterrupted(check(False, 1e-7), cmd, save, 20, 60.0, [])
    assert script.against_uninterrupted(check(True, 1e-3), cmd, save, 20, 60.0, [])["resume_difference"] > 0
    with pytest.raises(script.PartFailed, match="parted"):
        script.against_uninterrupted(check(True, 2 * script.RESUME_NOISE), cmd, save, 20, 60.0, [])
    ran.clear()
    script.against_uninterrupted(check(False, 0.0), cmd[:5], save, 0, 60.0, [])  # a GPU's run: timed
    assert ran[0][-2:] == ["--max-updates", min(50, script.COMPARED)]


FAKE_MAKE = """\
import os, signal, sys, time
from pathlib import Path

args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
os.chdir(sys.argv[sys.argv.index("-C") + 1])  # as make -C: a relative path is the checkout's
runs = Path(args["PAPER"])
runs.mkdir(parents=True, exist_ok=True)
(runs / "argv").write_text("\\n".join(sys.argv[1:]))
if os.environ.get("FAKE_MAKE_SLEEP"):  # a study longer than its budget: SIGTERM stops it, as training's
    signal.signal(signal.SIGTERM, lambda *_: ((runs / "stopped").write_text("SIGTERM"), sys.exit(2)))
    (runs / "rnnencdec-30").mkdir(exist_ok=True)
    (runs / "rnnencdec-30" / "done").write_text("")
    (runs / "started").write_text("")
    time.sleep(600)
for system in ("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50"):
    (runs / system).mkdir(exist_ok=True)
    (runs / system / "done").write_text("")
    (runs / system / "last.pt").write_bytes(b"weights")
(runs / "report.md").write_text("## Table 1\\n\\n| system | BLEU |\\n")
"""


def fake_make(tmp_path):
    make = tmp_path / "fake-make"
    make.write_text(f"#!{sys.executable}\n" + FAKE_MAKE)
    make.chmod(0o755)
    return make


def test_the_paper_part_runs_make_paper_at_the_gpu_scale_and_brings_back_its_report_without_checkpoints(raw, tmp_path):
    """--parts paper: make paper PAPER_SCALE=gpu, its runs in --work, the speeds of the newest GPU bench
    the repository holds choosing each system's path (no bench in this job), the study's report.md in
    gpu-check's and its files in the evidence, never a checkpoint."""
    make_corpus(raw, tmp_path)
    done = gpu_check(raw, tmp_path / "check", "--parts", "paper", "--make", fake_make(tmp_path))
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "check-work" / "paper-gpu"
    argv = (runs / "argv").read_text().splitlines()
    assert argv[:2] == ["-C", str(ROOT)] and "paper" in argv and "PAPER_SCALE=gpu" in argv and "ON_GPU=" in argv
    assert f"PAPER_MINUTES={script_paper.TINY_MINUTES:g}" in argv and f"WORDS_BIN={raw.parent / 'bin'}" in argv
    newest = sorted((ROOT / "bench" / "gpu-runs").glob("*/graphs.json"))[-1]
    assert f"PAPER_BENCH={newest}" in argv and f"DATA={raw.parent}" in argv
    paper = json.loads((tmp_path / "check" / "report.json").read_text())["parts"]["paper"]
    assert paper["status"] == "ok" and "## Table 1" in paper["lines"] and "4 of 4 systems trained" in paper["lines"][2]
    # when each step's output was written, for the next job's sizing
    assert paper["lines"][3].startswith("written at (s from the start): rnnencdec-30 trained ")
    written = dict(step.rsplit(" ", 1) for step in paper["lines"][3].split(": ", 1)[1].split(", "))
    assert list(written)[-1] == "report" and "rnnsearch-50 trained" in written
    # seconds from the part's start: the stand-in make writes all at once, in what a loaded machine allows
    assert 0 <= int(written["rnnencdec-30 trained"]) <= int(written["report"]) <= 60
    with tarfile.open(tmp_path / "check" / "evidence.tar.gz") as tar:
        names = tar.getnames()
    assert "paper-gpu/report.md" in names and "paper-gpu.log" in names and not [n for n in names if ".pt" in n]


def test_the_paper_part_out_of_its_budget_stops_the_study_as_timeout_does_and_says_it_goes_on(raw, tmp_path):
    make_corpus(raw, tmp_path)
    make = fake_make(tmp_path)
    budget = ("--paper-minutes", "0.05")
    done = gpu_check(raw, tmp_path / "check", "--parts", "paper", *budget, "--make", make, env={"FAKE_MAKE_SLEEP": "1"})
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "check-work" / "paper-gpu"
    assert (runs / "stopped").read_text() == "SIGTERM"  # the whole group got SIGTERM: training saves last.pt
    paper = json.loads((tmp_path / "check" / "report.json").read_text())["parts"]["paper"]
    assert paper["status"] == "out of time" and "1 of 4 systems trained (rnnencdec-30)" in paper["lines"][2]
    assert "run --parts paper again on this machine, it goes on" in paper["lines"][-1]


def test_the_paper_part_without_make_says_what_to_carry(raw, tmp_path):
    make_corpus(raw, tmp_path)
    done = gpu_check(raw, tmp_path / "check", "--parts", "paper", "--make", str(tmp_path / "no-make"))
    assert done.returncode == 1
    paper = json.loads((tmp_path / "check" / "report.json").read_text())["parts"]["paper"]
    assert paper["status"] == "failed" and "wheels/bin/make" in paper["lines"][0]


def test_sigterm_in_the_paper_part_stops_make_and_reports_the_part_as_stopped(raw, tmp_path):
    import signal
    import time

    make_corpus(raw, tmp_path)
    out, work = tmp_path / "check", tmp_path / "work"
    cmd = [sys.executable, str(ROOT / "bin" / "gpu-check"), "--words", str(raw.parent / "bin"), "--out", str(out)]
    cmd += ["--work", str(work), "--parts", "machine,paper", "--make", str(fake_make(tmp_path))]
    check = subprocess.Popen(cmd, env={**ENV, "FAKE_MAKE_SLEEP": "1"}, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (work / "paper-gpu" / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    check.send_signal(signal.SIGTERM)
    assert check.wait(timeout=90) == 143
    assert (work / "paper-gpu" / "stopped").read_text() == "SIGTERM"
    parts = json.loads((out / "report.json").read_text())["parts"]
    assert parts["paper"]["status"] == "stopped (SIGTERM)" and parts["paper"]["lines"][0].startswith(
        "`make paper PAPER_SCALE=gpu"
    )


def test_the_evidence_leaves_out_checkpoints_and_names_the_files_too_large_for_it(tmp_path):
    from bench import gpu_check

    work, out = tmp_path / "work", tmp_path / "out"
    (work / "run").mkdir(parents=True)
    (work / "run" / "metrics.jsonl").write_text("{}\n")
    (work / "run" / "last.pt").write_bytes(b"w" * 100)
    (work / "run" / "test.align").write_bytes(b"0-0 " * (gpu_check.EVIDENCE_FILE_MAX // 4 + 1))
    out.mkdir()
    gpu_check.bundle(SimpleNamespace(out=out, work=work))
    with tarfile.open(out / "evidence.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["left-out.txt", "run/metrics.jsonl"]
        listed = tar.extractfile("left-out.txt").read().decode()
    assert listed == f"run/test.align\t{gpu_check.EVIDENCE_FILE_MAX + 4}\n"


def test_relative_out_and_work_are_the_callers_not_the_checkouts(raw, tmp_path):
    """The parts run their commands in the checkout: --out and --work as typed in another directory
    name that directory's folders (the paper part once found none of make's runs)."""
    make_corpus(raw, tmp_path)
    cmd = [sys.executable, str(ROOT / "bin" / "gpu-check"), "--words", str(raw.parent / "bin")]
    cmd += ["--test-src", str(raw / "test.en"), "--test-ref", str(raw / "test.fr")]
    cmd += ["--out", "o", "--work", "w", "--parts", "paper", "--make", str(fake_make(tmp_path))]
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "w" / "paper-gpu" / "report.md").exists() and (tmp_path / "o" / "report.md").exists()
    assert json.loads((tmp_path / "o" / "report.json").read_text())["parts"]["paper"]["status"] == "ok"


def test_the_paper_parts_minutes_keep_back_the_reports_time_from_the_jobs_deadline():
    """--paper-minutes 9 in a 9.3-minute job after a machine part: the part stops early enough for
    the report and the bundle; with time to spare, it gets its minutes."""
    from bench import gpu_check

    args = SimpleNamespace(paper_minutes=9.0, train_minutes=0.0)
    near = SimpleNamespace(args=args, gpu=True, left=lambda: 543.0)
    assert gpu_check.part_budget(near, "paper", 0.5) == 543.0 - gpu_check.REPORT_MARGIN_S
    far = SimpleNamespace(args=args, gpu=True, left=lambda: 900.0)
    assert gpu_check.part_budget(far, "paper", 0.5) == 540.0


def _paper_part_on_a_fake_clock(tmp_path, monkeypatch, overhead, report_s=19.0, budget=540.0):
    """The paper part as a GPU job runs it, make replaced by one that spends, on a fake clock, each
    system's minutes (none for a system trained already) and ``overhead`` seconds beside them, then
    ``report_s`` for the report."""
    now, given = [0.0], []
    runs = tmp_path / "work" / "paper-gpu"
    monkeypatch.setattr(script_paper, "time", SimpleNamespace(monotonic=lambda: now[0], time=time.time))

    def fake_make(cmd, log, deadline):
        if now[0] >= deadline:
            return None
        targets = [Path(a) for a in cmd[3:] if "=" not in a]
        if targets == [Path("paper")]:
            now[0] += report_s
            (runs / "report.md").write_text("## Table 1\n")
        else:
            minutes = float(next(a for a in cmd if a.startswith("PAPER_MINUTES=")).split("=")[1])
            system = targets[0].parent
            trains = not (system / "done").exists()
            given.append((system.name, minutes if trains else None))
            system.mkdir(parents=True, exist_ok=True)
            for target in [*targets, system / "done"]:
                target.write_text("")
            now[0] += 60 * minutes * trains + overhead
        return 0 if now[0] <= deadline else None

    monkeypatch.setattr(script_paper, "_run_make", fake_make)
    args = SimpleNamespace(make=sys.executable, words=tmp_path / "bin", test_src=tmp_path / "data" / "raw" / "test.en")
    check = SimpleNamespace(gpu=True, work=tmp_path / "work", out=tmp_path / "out", found={}, partial=None, args=args)
    return script_paper.paper(check, budget), given, now[0]


@pytest.mark.parametrize("overhead", [30.0, 70.0])
def test_the_paper_systems_train_alike_and_less_only_where_the_time_left_needs_it(tmp_path, monkeypatch, overhead):
    """Start-ups and translations of 30 s a system, or of 70 where 50 were estimated: the first system
    trains the planned minutes and the three after it as long, or (70 s) all three alike for less, so
    that the report still comes before the part's deadline, where the planned minutes for all four
    would have run past it."""
    budget, report_s = 540.0, 19.0
    found, given, ended = _paper_part_on_a_fake_clock(tmp_path, monkeypatch, overhead, report_s, budget)
    assert found["status"] == "ok", found["lines"]
    minutes = [m for _, m in given]
    assert [s for s, _ in given] == list(script_paper.SYSTEMS) and minutes[0] == script_paper.minutes_for(budget)
    assert minutes[1] == minutes[2] == minutes[3] and (minutes[1] == minutes[0]) == (overhead < 50)
    assert ended <= budget - script_paper.STOP_WAIT_S
    planned_alone = 4 * (60 * minutes[0] + overhead) + report_s
    assert (planned_alone > budget - script_paper.STOP_WAIT_S) == (overhead > 50)  # the plan alone: cut
    assert found["lines"][2].startswith(f"minutes of training given: rnnencdec-30 {minutes[0]:g}, rnnencdec-50 ")


def test_a_paper_system_an_earlier_job_trained_or_stopped_is_translated_or_resumed_not_cut(tmp_path, monkeypatch):
    """A system trained but not translated is translated, given no minutes and not timed as a
    training; one stopped part-way is given more than it has trained, where fewer would end it at
    once, unvalidated, with no best.pt to translate."""
    runs = tmp_path / "work" / "paper-gpu"
    for system, seconds in (("rnnencdec-30", 70.0), ("rnnencdec-50", 100.0)):
        (runs / system).mkdir(parents=True)
        (runs / system / "metrics.jsonl").write_text(json.dumps({"step": 900, "seconds": seconds}) + "\n")
    (runs / "rnnencdec-30" / "done").write_text("")
    found, given, _ = _paper_part_on_a_fake_clock(tmp_path, monkeypatch, overhead=40.0)
    assert found["status"] == "ok", found["lines"]
    assert given[0] == ("rnnencdec-30", None) and "given: rnnencdec-50 " in found["lines"][2]
    assert given[1] == ("rnnencdec-50", round(100.0 / 60 + script_paper.RESUMED_MINUTES, 2))
    assert given[1][1] > script_paper.PAPER_MINUTES


def test_the_tests_part_counts_pytest_s_summary_and_else_its_lines_plain_or_from_xdist():
    """On the GPU machine the suite runs under xdist, whose verbose lines lead with the worker:
    the report counted 0 passed, 0 failed of a whole suite."""
    from bench.gpu_check import _pytest_outcome

    spread = "[gw0] [ 50%] PASSED tests/test_a.py::test_one \n[gw1] [100%] FAILED tests/test_b.py::test_two \n"
    plain = "tests/test_a.py::test_one PASSED\ntests/test_b.py::test_two SKIPPED (no GPU)\n"
    summary = "==== 1 failed, 1,796 passed, 45 skipped, 14 warnings in 1400.52s (0:23:20) ===="
    assert _pytest_outcome(spread)[0] == {"PASSED": 1, "FAILED": 1, "SKIPPED": 0, "ERROR": 0}
    assert _pytest_outcome(plain)[0] == {"PASSED": 1, "FAILED": 0, "SKIPPED": 1, "ERROR": 0}
    counts = _pytest_outcome(spread + summary.replace("1,796", "1796") + "\n")[0]
    assert counts == {"PASSED": 1796, "FAILED": 1, "SKIPPED": 45, "ERROR": 0}
    assert _pytest_outcome("=== 2 errors in 3.10s ===\n")[0]["ERROR"] == 2
