"""``train --tensorboard DIR``: metrics.jsonl's entries as TensorBoard scalars, read back by
TensorBoard's own reader; without the extra, one line before any work."""

import json
import math
import sys

import pytest

from nmtkit import checkpoint
from nmtkit.core.extras import install_command
from tests.conftest import train_tiny
from tests.test_corpus import make_corpus

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError:
    EventAccumulator = None

needs_tensorboard = pytest.mark.skipif(
    EventAccumulator is None,
    reason="the tensorboard package is not installed (pip install '.[tensorboard]' in nmtkit's checkout)",
)


def scalars(log_dir):
    """{(tag, update): value} of every scalar in an event directory."""
    events = EventAccumulator(str(log_dir))
    events.Reload()
    return {(tag, e.step): e.value for tag in events.Tags()["scalars"] for e in events.Scalars(tag)}


def train(tmp_path, *options):
    """The tiny model on tmp_path/bin into tmp_path/run, an update a log line."""
    return train_tiny(tmp_path / "bin", tmp_path / "run", "--log-every", 1, *options)


def logged(save_dir):
    """{(key, update): value} of every number metrics.jsonl holds."""
    entries = [json.loads(line) for line in (save_dir / "metrics.jsonl").read_text().splitlines()]
    return {(k, e["step"]): v for e in entries for k, v in e.items() if k != "step" and isinstance(v, (int, float))}


def same(a, b):
    """Equal to float32's precision (TensorBoard stores scalars in 32 bits)."""
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-30) for k in a
    )


@needs_tensorboard
def test_every_entry_of_metrics_jsonl_is_a_scalar_at_its_update(raw, tmp_path):
    make_corpus(raw, tmp_path)
    r = train(tmp_path, "--max-updates", "4", "--valid-every", "2", "--tensorboard", str(tmp_path / "tb"))
    assert r.exit_code == 0, r.output
    found, expected = scalars(tmp_path / "tb"), logged(tmp_path / "run")
    assert {k for k, _ in expected} >= {"train_nll", "lr", "seconds", "dev_nll"}
    assert same(found, expected)
    # a run setting: the checkpoint keeps none, and the run resumes without it
    assert "tensorboard" not in checkpoint.load(tmp_path / "run" / "last.pt").training.config.to_dict()
    r = train(tmp_path, "--max-updates", "6", "--valid-every", "2")
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step == 6


@needs_tensorboard
def test_a_resumed_run_hides_the_scalars_logged_after_its_checkpoint(tmp_path):
    from nmtkit.train.board import Board

    with Board(tmp_path / "tb") as board:  # a run killed at update 4, its last.pt of update 2
        for step in range(1, 5):
            board.add({"step": step, "train_nll": 10.0 + step})
    with Board(tmp_path / "tb", step=2) as board:  # resumed from update 2: 3 and 4 again
        for step in range(3, 5):
            board.add({"step": step, "train_nll": 20.0 + step})
    assert scalars(tmp_path / "tb") == {
        ("train_nll", 1): 11.0,
        ("train_nll", 2): 12.0,
        ("train_nll", 3): 23.0,
        ("train_nll", 4): 24.0,
    }


def test_without_the_package_it_says_which_extra_before_any_work(raw, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if not installed
    make_corpus(raw, tmp_path)
    r = train(tmp_path, "--tensorboard", str(tmp_path / "tb"))
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"nmtkit train: error: --tensorboard needs the tensorboard package: {install_command('tensorboard')}"
    )
    assert not (tmp_path / "run").exists() and not (tmp_path / "tb").exists()


@needs_tensorboard
def test_a_directory_that_cannot_be_made_is_one_line_before_any_work(raw, tmp_path):
    """It was met at the first log line, the save directory already taken."""
    make_corpus(raw, tmp_path)
    (tmp_path / "file").write_text("")
    r = train(tmp_path, "--tensorboard", str(tmp_path / "file" / "tb"))
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"{tmp_path / 'file'} is a file, not a directory" in r.output
    assert not (tmp_path / "run").exists()
