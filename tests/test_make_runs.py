"""A run's done stamp in the Makefile: a finished run is not trained again by the same make, and a
changed budget trains again (it kept the old model without a word)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _demo_maker(tmp_path):
    """make's demo run over a fake data-bin, with an nmtkit that records each command and makes
    nothing: it returns the commands each make ran (and its stdout, with ``said=True``)."""
    data, runs, log = tmp_path / "data", tmp_path / "runs", tmp_path / "trained"
    made = [data / "raw" / "bible.json", data / "clean" / "preprocess.json"]
    made += [data / "vocab" / "vocab.json", data / "data-bin" / "manifest.json"]
    for age, path in enumerate(reversed(made)):  # each input older than what is made of it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (time.time() - 100 * (age + 1),) * 2)
    nmtkit = tmp_path / "nmtkit"  # records each command and makes nothing
    nmtkit.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
    )
    nmtkit.chmod(0o755)

    def demo_run(*settings, said=False):
        cmd = ["make", "-C", str(ROOT), "INSTALLED=", f"NMTKIT={nmtkit}", f"DATA={data}", f"RUNS={runs}"]
        cmd += [f"VOCAB={data / 'vocab'}", f"BIN={data / 'data-bin'}"]
        done = subprocess.run([*cmd, *settings, str(runs / "demo" / "done")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        trained = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return (trained, done.stdout) if said else trained

    return demo_run, data / "data-bin" / "manifest.json", runs / "demo"


def test_a_changed_budget_trains_the_run_again_and_the_same_one_does_not(tmp_path):
    demo_run, _, runs_demo = _demo_maker(tmp_path)
    first = demo_run("DEMO_UPDATES=1000")
    assert len(first) == 1 and first[0].startswith("train ") and "--max-updates 1000" in first[0]
    assert demo_run("DEMO_UPDATES=1000") == []  # finished: nothing to do, not even train's own check
    again = demo_run("DEMO_UPDATES=2000")
    assert len(again) == 1 and "--max-updates 2000" in again[0]
    assert demo_run("DEMO_UPDATES=2000", "JOBS=1") == []  # threads are not the run's options
    assert "--max-updates 2000" in (runs_demo / "train-options").read_text()
    # options holding a comma (which parted a call's arguments), a quote, a percent sign
    for options in ("--a 1", "--a 1,2", "--a 1,2,3", "--name 'a b'", "--x 5%", "--x 5%5"):
        assert len(demo_run(f"DEMO_TRAIN={options}")) == 1, options
        assert demo_run(f"DEMO_TRAIN={options}") == [], options
        assert (runs_demo / "train-options").read_text() == f"{tmp_path / 'data' / 'data-bin'} {options}\n"


def test_a_run_given_another_data_bin_trains_again_where_its_stamp_kept_the_other_s_model(tmp_path):
    """make demo after make demo BPE=0 found the demo done, with the 30,000-word model; train then
    refuses to resume a run on another vocabulary, and an interrupted one resumes on its own."""
    demo_run, manifest, demo = _demo_maker(tmp_path)
    words = manifest.parent.parent / "data-bin-words"
    words.mkdir()
    (words / "manifest.json").write_text("{}")
    os.utime(words / "manifest.json", (time.time() - 100,) * 2)  # made before the run, as by gpu-data
    assert len(demo_run("DEMO_UPDATES=10")) == 1
    assert demo_run("DEMO_UPDATES=10") == []
    again = demo_run("DEMO_UPDATES=10", f"BIN={words}")
    assert len(again) == 1 and again[0].startswith(f"train {words} ")
    assert demo_run("DEMO_UPDATES=10", f"BIN={words}") == []
    assert len(demo_run("DEMO_UPDATES=10")) == 1  # and back


def test_make_j_trains_one_run_at_a_time(tmp_path):
    """make -j2 demo-aligners trained its two models at once, each on a clock of 20 minutes with
    half the cores: half the updates the docs quote."""
    _demo_maker(tmp_path)  # its data, made
    data = tmp_path / "data"
    log = tmp_path / "log"
    nmtkit = tmp_path / "nmtkit"
    nmtkit.write_text(
        f"#!{sys.executable}\nimport sys, time\nlog = open({str(log)!r}, 'a', buffering=1)\n"
        "log.write('start\\n'); time.sleep(0.5); log.write('end\\n')\n"
    )
    nmtkit.chmod(0o755)
    runs = [tmp_path / "compare" / arch / "done" for arch in ("rnnsearch", "rnnencdec")]
    cmd = ["make", "-j2", "-C", str(ROOT), "INSTALLED=", f"NMTKIT={nmtkit}", f"CMP={tmp_path / 'compare'}"]
    cmd += [f"DATA={data}", f"VOCAB={data / 'vocab'}", f"BIN={data / 'data-bin'}"]
    done = subprocess.run([*cmd, *map(str, runs)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert log.read_text().split() == ["start", "end", "start", "end"]


def test_the_demo_s_results_name_the_settings_it_was_made_with(tmp_path):
    """A demo of 50 updates recorded its BLEU as 'make demo', the 20-minute recipe's."""

    def recorded(*settings):
        cmd = ["make", "-n", "-C", str(ROOT), "INSTALLED=", f"DEMO={tmp_path / 'demo'}", *settings, "demo"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return re.search(r'--command "([^"]*)"', out).group(1)

    assert recorded() == "make demo"
    assert recorded("DEMO_UPDATES=50", "BEAM=2") == "make demo DEMO_UPDATES='50' BEAM='2'"
    assert recorded("JOBS=4") == "make demo JOBS='4'"  # a budget in minutes trains more updates on more cores


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("BPE=8k", "BPE is a whole number, not '8k'"),
        ("DEMO_UPDATES=1k", "DEMO_UPDATES is a whole number, not '1k'"),
        ("DEMO_MINUTES=1.2.3", "DEMO_MINUTES is a number, not '1.2.3'"),
        ("JOBS=two", "JOBS is a whole number, not 'two'"),
        ("GPU_MINUTES=ten", "GPU_MINUTES is a number, not 'ten'"),
        ("TEST_JOBS=-n", "TEST_JOBS is a whole number, not '-n'"),
        ("ALIGN_LINES=86,x", "ALIGN_LINES is test lines' numbers and ranges (86,88,110-112), not '86,x'"),
    ],
)
def test_a_size_or_budget_that_is_not_a_number_is_refused_before_any_work(tmp_path, setting, said):
    """BPE=8k fetched and cleaned the corpus, then failed in build-vocab."""
    cmd = ["make", "-n", "-C", str(ROOT), "INSTALLED=", f"DATA={tmp_path / 'data'}", setting, "data"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode != 0 and said in out.stderr and "fetch-bible" not in out.stdout


def _dry(*settings):
    """make -n of the checkout's Makefile with these settings, without installing."""
    return subprocess.run(["make", "-n", "-C", str(ROOT), "INSTALLED=", *settings], capture_output=True, text=True)


def test_sizes_and_budgets_that_are_numbers_pass():
    assert (
        _dry(
            "DEMO_MINUTES=.5",
            "MAX_RATIO=1.5",
            "BPE=0",
            "ALIGN_LINES=1,3-5",
            "GPU_MINUTES=9.3",
            "TEST_JOBS=auto",
            "help",
        ).returncode
        == 0
    )


@pytest.mark.parametrize(
    "target",
    ["demo", "demo-guided", "demo-aligners", "demo-self-training", "compare", "paper", "paper-coverage", "paper-unk"],
)
def test_every_run_s_options_rule_is_there_and_a_dry_run_writes_nothing(tmp_path, target):
    """demo-aligners' French→English run had no rule for its options (made before GUIDED_BACK was set)."""
    done = _dry(f"RUNS={tmp_path / 'runs'}", f"DATA={tmp_path / 'data'}", target)
    assert done.returncode == 0, done.stderr
    assert "train-options" in done.stdout and not list(tmp_path.iterdir())


def test_a_gpu_study_s_run_trains_again_when_its_budget_changes(tmp_path):
    """Its options were an order-only prerequisite: rewritten, they left the done stamp as it was."""
    paper, run = tmp_path / "paper", tmp_path / "paper" / "rnnsearch-50"
    base = ["make", "-C", str(ROOT), "INSTALLED=", "ON_GPU=", f"PAPER={paper}", f"DATA={tmp_path / 'data'}"]
    base += ["PAPER_SCALE=gpu"]
    subprocess.run([*base, f"{run}/train-options"], capture_output=True, text=True, check=True)
    (run / "done").write_text("")  # trained with these options

    def trains(*settings):
        out = subprocess.run([*base, "-n", *settings, f"{run}/done"], capture_output=True, text=True, check=True)
        return [line for line in out.stdout.splitlines() if " train " in line and "--save-dir" in line]

    assert trains() == []
    assert len(trains("PAPER_MINUTES=5")) == 1


def test_gpu_rehearsal_empties_only_a_directory_of_its_own(tmp_path):
    """REHEARSAL= made its copy and venv at the root; REHEARSAL=. would have emptied the checkout."""
    (tmp_path / "mine.txt").write_text("a user's file")
    (tmp_path / "my rehearsal").mkdir()
    for where, said in (
        (str(tmp_path), f"REHEARSAL='{tmp_path}' holds files but no mark of a rehearsal's"),
        (".", "REHEARSAL='.' holds files but no mark"),
        ("", "REHEARSAL is a directory's path without spaces, quotes or wildcards"),
        (f"{tmp_path}/my rehearsal", "without spaces"),  # rm -rf took it for two
        (f"{tmp_path}/m*", "without spaces, quotes or wildcards"),
    ):
        cmd = ["make", "-C", str(ROOT), "INSTALLED=", "PYTHON=false", f"REHEARSAL={where}", "gpu-rehearsal"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr, (where, done.stderr)
        assert "rm -rf" not in done.stdout
    assert (tmp_path / "mine.txt").exists() and (tmp_path / "my rehearsal").exists()
