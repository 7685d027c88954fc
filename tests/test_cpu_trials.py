"""make demo / make demo-curve: the demo's recipe and budget flags, and the trials table and picture."""

import re
import subprocess
from pathlib import Path

import pytest

from bench import cpu_trials
from nmtkit.core.machine import describe
from nmtkit.train.loop import train
from nmtkit.train.runlog import RunLog
from tests.test_train import TINY, cfg

ROOT = Path(__file__).resolve().parent.parent


def make_n(*args):
    return subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def train_line(out):
    return next(line for line in out.splitlines() if " train " in line and "--save-dir" in line)


def test_the_demo_trains_for_minutes_or_for_a_fixed_number_of_updates(tmp_path):
    minutes = train_line(make_n("demo", f"DEMO={tmp_path}/d", f"DATA={tmp_path}/data"))
    assert "--max-minutes 20" in minutes and "--max-updates" not in minutes
    assert re.search(r"data-bin-bpe8000 ", minutes) and "--schedule cpu" in minutes
    fixed = train_line(make_n("demo", f"DEMO={tmp_path}/d", f"DATA={tmp_path}/data", "DEMO_UPDATES=1000"))
    assert "--max-updates 1000" in fixed and "--max-minutes" not in fixed
    words = make_n("data", f"DATA={tmp_path}/data", "BPE=0")
    assert "--size 30000" in words and "--bpe" not in words and "data-bin-words30000" in words


def test_an_interrupted_demo_trains_again_and_a_finished_one_does_not(tmp_path):
    """The first validation writes best.pt: an interrupted run has one, and must still be trained
    (train resumes it); only the done stamp of a run that ended says it is trained."""
    import os

    data, demo = tmp_path / "data", tmp_path / "d"
    chain = ["raw/bible.json", "clean/preprocess.json", "vocab-bpe8000/vocab.json", "data-bin-bpe8000/manifest.json"]
    for k, name in enumerate(chain):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("")
        os.utime(data / name, (1_000_000 + k, 1_000_000 + k))
    demo.mkdir()
    for name in ("best.pt", "last.pt"):
        (demo / name).write_text("")
    args = ("demo", "INSTALLED=", f"DEMO={demo}", f"DATA={data}")
    interrupted = make_n(*args)
    assert " train " in interrupted and f"touch {demo}/done" in interrupted
    # what a run that ended leaves: its options (the run's own make writes them) and its stamp
    subprocess.run(["make", *args[1:], f"{demo}/train-options"], cwd=ROOT, capture_output=True, check=True)
    (demo / "done").write_text("")
    for name in ("test.hyp.fr", "test.align"):
        (demo / name).write_text("")
    finished = make_n(*args)
    assert " train " not in finished and " translate " not in finished


@pytest.mark.parametrize("trial_set", ["recipe", "levers"])
def test_the_trials_rewrite_the_docs_only_when_asked(tmp_path, trial_set):
    """A user's make demo-curve writes its table and picture beside its trials; the checkout's page
    and picture change only with RESULTS_DIR=results, as make demo's and make compare's results."""
    picture = "levers-curve.png" if trial_set == "levers" else "demo-curve.png"
    args = ("demo-curve", f"TRIAL_SET={trial_set}", f"TRIALS_DIR={tmp_path}/t", f"DEMO={tmp_path}/d")
    mine = next(line for line in make_n(*args).splitlines() if "--doc" in line)
    assert f"--doc {tmp_path}/t/{trial_set}.md --plot {tmp_path}/t/{picture}" in mine and "docs/" not in mine
    asked = next(line for line in make_n(*args, "RESULTS_DIR=results").splitlines() if "--doc" in line)
    assert f"--doc docs/cpu-training.md --plot docs/img/{picture}" in asked


def test_the_trials_table_and_picture_come_from_the_runs(corpus, tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    monkeypatch.setattr(cpu_trials, "TRIALS", ())
    monkeypatch.setattr(cpu_trials, "_nmtkit", lambda *a: (_ for _ in ()).throw(AssertionError("trained")))
    demo = tmp_path / "demo"
    train(corpus, demo, TINY, cfg(max_updates=4, valid_every=2, keep_validations=True, best_by="nll"))
    scored = []

    def fake_bleu(model, raw, threads):  # BLEU itself is score's, tested there
        scored.append(model.name)
        step = int(model.stem.split("-")[1]) if model.stem.startswith("update-") else 0
        return {"segond": step, "three": 2 * step, "segond_tok": step + 1, "three_tok": 2 * step + 1}

    monkeypatch.setattr(cpu_trials, "test_bleu", fake_bleu)
    doc = tmp_path / "doc.md"
    doc.write_text("# Trials\n\n<!-- trials:begin -->\nold\n<!-- trials:end -->\n\nafter\n")
    cpu_trials.main.main(
        [
            "--runs",
            str(tmp_path / "trials"),
            "--data",
            f"all={data}",
            "--doc",
            str(doc),
            "--plot",
            str(tmp_path / "curve.png"),
            "--demo-run",
            str(demo),
        ],
        standalone_mode=False,
    )
    text = doc.read_text()
    assert "old" not in text and text.endswith("after\n") and text.startswith("# Trials")
    log = RunLog.read(demo)
    assert log.machine is not None and describe(log.machine) in text  # train recorded it
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("| **the demo** (`make demo`: joint BPE 8k, `--schedule cpu`)")
    )
    assert f"| {log.updates:,} |" in row and "(nll)" in row and "| 0.01 |" in row
    assert scored == ["best.pt", "update-2.pt", "update-4.pt"]
    assert (tmp_path / "curve.png").stat().st_size > 10_000


def test_the_levers_run_to_a_count_of_updates_into_their_own_table(corpus, tmp_path, monkeypatch):
    lever = cpu_trials.Trial("lever-x", "+ `--label-smoothing 0.1`", "all", "bpe8000", ("--label-smoothing", "0.1"))
    monkeypatch.setattr(cpu_trials, "LEVERS", (lever,))
    commands = []

    def fake_nmtkit(*args):  # the command the trial would run, then a tiny stand-in run
        commands.append([str(a) for a in args])
        train(
            corpus,
            Path(args[3]),
            TINY,
            cfg(
                max_updates=4, valid_every=2, keep_validations=True, best_by="nll", valid_bleu=True, label_smoothing=0.1
            ),
        )

    monkeypatch.setattr(cpu_trials, "_nmtkit", fake_nmtkit)
    monkeypatch.setattr(
        cpu_trials,
        "test_bleu",
        lambda model, raw, threads: dict.fromkeys(("segond", "three", "segond_tok", "three_tok"), 1.5),
    )
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- trials:begin -->\nkept\n<!-- trials:end -->\n<!-- levers:begin -->\n<!-- levers:end -->\n")
    cpu_trials.main.main(
        [
            "--set",
            "levers",
            "--runs",
            str(tmp_path / "trials"),
            "--data",
            f"all={data}",
            "--doc",
            str(doc),
            "--plot",
            str(tmp_path / "levers.png"),
        ],
        standalone_mode=False,
    )
    (command,) = commands
    assert command[0] == "train" and "--max-updates" in command and "--max-minutes" not in command
    assert command[command.index("--max-updates") + 1] == str(cpu_trials.LEVER_UPDATES)
    text = doc.read_text()
    assert "kept" in text  # the recipe's table untouched
    row = next(line for line in text.splitlines() if "label-smoothing" in line)
    assert "| 1.50 (1.50) |" in row and "| 4 |" in row  # best.pt: update 4


def test_sample_lines_put_source_translation_and_reference_side_by_side(tmp_path):
    from bench.demo import sample_lines
    from nmtkit.core.errors import UserError

    paths = []
    for name in ("src", "hyp", "ref"):
        paths.append(tmp_path / name)
        paths[-1].write_text("".join(f"{name} {i}|x\n" for i in range(1, 21)))
    table = sample_lines(*map(str, paths), n=5)
    rows = table.splitlines()[2:]
    assert len(rows) == 5 and table == sample_lines(*map(str, paths), n=5)  # fixed seed
    for row in rows:
        i = row.split("|")[1].strip()
        assert f"src {i}\\|x | hyp {i}\\|x | ref {i}\\|x |" in row
    paths[2].write_text("one line\n")
    with pytest.raises(UserError, match="differ in line count"):
        sample_lines(*map(str, paths))
