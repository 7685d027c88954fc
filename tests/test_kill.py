"""Training killed with SIGKILL at random moments and resumed ends where an uninterrupted run ends
(with guided alignment, label smoothing and a budgeted schedule)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from tests.conftest import TINY_ADAM

ROOT = Path(__file__).resolve().parent.parent
KILLS = 10


def command(data_bin: Path, save_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "nmtkit",
        "train",
        str(data_bin),
        "--save-dir",
        str(save_dir),
        "--device",  # bit for bit: the CPU's deterministic kernels, whatever the machine has
        "cpu",
        *TINY_ADAM,
        "--batch-size",
        "2",
        "--pool",
        "2",
        "--max-updates",
        "150",
        "--valid-every",
        "10",
        "--log-every",
        "1",
        "--no-valid-bleu",
        "--patience",
        "0",
        "--threads",
        "1",
        # the budgeted schedule and label smoothing resume exactly too
        "--lr-decay",
        "cosine",
        "--warmup",
        "10",
        "--label-smoothing",
        "0.1",
    ]


def guided(data_bin: Path, save_dir: Path) -> list[str]:
    """The same with guided alignment, on a corpus with word links."""
    return command(data_bin, save_dir) + ["--guided-alignment-weight", "0.5"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def logged_step(save_dir: Path) -> int:
    try:
        lines = (save_dir / "metrics.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except ValueError:
            continue  # a line being written
    return 0


def step_losses(save_dir: Path, key: str = "train_nll") -> dict[int, float]:
    entries = [json.loads(line) for line in (save_dir / "metrics.jsonl").read_text().splitlines()]
    losses = {e["step"]: e[key] for e in entries if key in e}
    assert len(losses) == sum(key in e for e in entries) > 0  # no update logged twice
    return losses


@pytest.mark.slow
def test_sigkill_at_ten_random_moments_changes_nothing(raw, tmp_path):
    from nmtkit.data.binarize import binarize_corpus
    from tests.test_corpus import make_corpus
    from tests.test_guided_alignment import diagonal_links

    make_corpus(raw, tmp_path)
    diagonal_links(tmp_path / "clean")  # and guided alignment resumes exactly too
    data_bin = tmp_path / "linked"
    binarize_corpus(
        {s: tmp_path / "clean" / s for s in ("train", "valid")},
        ("en", "fr"),
        tmp_path / "vocab",
        data_bin,
        align_suffix="links",
    )
    subprocess.run(guided(data_bin, tmp_path / "whole"), env=env(), check=True, capture_output=True, timeout=300)
    rng = random.Random(20261123)
    killed, seen = 0, []
    # each run is killed once its log passes a random update (at a random moment of the polling),
    # so the kills land all along the run: in updates, validations and checkpoint writes alike
    for target in sorted(rng.sample(range(2, 148), KILLS)):
        proc = subprocess.Popen(
            guided(data_bin, tmp_path / "killed"), env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while proc.poll() is None and logged_step(tmp_path / "killed") < target:
            time.sleep(rng.uniform(0.005, 0.05))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=60)
        last = tmp_path / "killed" / "last.pt"
        if last.exists():
            seen.append(checkpoint.load(last).training.progress.step)  # never unreadable
    finish = subprocess.run(
        guided(data_bin, tmp_path / "killed"), env=env(), capture_output=True, text=True, timeout=300
    )
    assert finish.returncode == 0, finish.stderr[-2000:]
    print(f"killed {killed} times; last.pt after each kill at updates {seen}")
    assert killed == KILLS, f"only {killed} of {KILLS} runs were still training when killed"
    assert len(set(seen)) > 2, seen  # the kills fell at different places
    a = checkpoint.load(tmp_path / "whole" / "last.pt")
    b = checkpoint.load(tmp_path / "killed" / "last.pt")
    assert a.training.progress.step == b.training.progress.step == 150
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert step_losses(tmp_path / "whole") == step_losses(tmp_path / "killed")
    assert step_losses(tmp_path / "whole", "train_align_ce") == step_losses(tmp_path / "killed", "train_align_ce")
    assert not list((tmp_path / "killed").glob(".*.tmp"))  # no temporary file outlives its write


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_saves_last_pt_at_the_update_reached_and_the_same_command_goes_on(raw, tmp_path, sig):
    """A job's time limit sends SIGTERM, a person Ctrl-C, a closed terminal SIGHUP (whose default
    lost every update since the last save): training stops after the update, saves, and exits
    128 + the signal (143, 130, 129), as a shell reports it, so that a Makefile does not go on to
    translate a half-trained model."""
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    cmd = command(tmp_path / "bin", tmp_path / "run")[:-6]  # no schedule: the resumed run gets a new budget
    cmd[cmd.index("--max-updates") + 1] = "100000"
    cmd[cmd.index("--valid-every") + 1] = "100000"  # no save but the one SIGTERM asks for
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while logged_step(tmp_path / "run") < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    signalled = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-1500:]
    assert time.monotonic() - signalled < 30  # a queue's grace period (SLURM's default: 30 s)
    saved = checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step
    assert saved >= 3 and f"interrupted: saved {tmp_path / 'run' / 'last.pt'} at update {saved}" in err
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert not any("dev_nll" in e for e in logged)  # no validation: the resumed run does it
    assert not (tmp_path / "run" / "best.pt").exists()
    cmd[cmd.index("--max-updates") + 1] = str(saved + 2)
    again = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"resuming from {tmp_path / 'run' / 'last.pt'} at update {saved}" in again.stderr


def test_a_run_waits_for_the_process_still_writing_its_save_dir(tmp_path, capsys):
    """The next job's run does not read last.pt while a stopped one still writes it."""
    import threading

    from nmtkit.train.saving import SaveDirLock

    writer = SaveDirLock(tmp_path / "run", writes=True)
    writer.hold()
    writer.stopping()  # a stopped run, still saving
    nxt = SaveDirLock(tmp_path / "run", writes=False)
    waited = threading.Thread(target=nxt.wait)
    waited.start()
    waited.join(timeout=1.0)
    assert waited.is_alive()  # it waits ...
    writer.release()
    waited.join(timeout=10.0)
    assert not waited.is_alive()  # ... until the writer is done
    assert f"waiting for the process still writing {tmp_path / 'run'}" in capsys.readouterr().err
    fresh = SaveDirLock(tmp_path / "new", writes=False)
    fresh.wait()  # nothing to wait for: nothing created either
    assert not (tmp_path / "new").exists()


def test_a_run_into_the_save_dir_of_a_run_still_training_is_refused_not_left_waiting(tmp_path):
    """It waited, saying the other was "a stopped run saving its last.pt", for as long as that
    one trained: hours."""
    import threading

    from nmtkit.core.errors import UserError
    from nmtkit.train.saving import SaveDirLock

    writer = SaveDirLock(tmp_path / "run", writes=True)
    writer.hold()
    said: list[str] = []

    def second() -> None:
        try:
            SaveDirLock(tmp_path / "run", writes=True).wait()
        except UserError as err:
            said.append(str(err))

    try:
        other = threading.Thread(target=second, daemon=True)
        other.start()
        other.join(timeout=10.0)
        assert not other.is_alive(), "it waits for a run that is training"
    finally:
        writer.release()
    assert said and said[0].startswith(f"{tmp_path / 'run'} is being trained by process {os.getpid()} on ")
    SaveDirLock(tmp_path / "run", writes=True).wait()  # its end frees the directory


def test_a_resumed_runs_other_ranks_find_its_own_note_not_the_job_befores(tmp_path, monkeypatch):
    """Rank 0 takes the lock to read last.pt; until it wrote its note there, the one the last job
    left stood, and the other ranks of this job, starting as it read, refused the directory as
    being trained by that long-ended process."""
    from nmtkit.train.saving import SaveDirLock

    (tmp_path / "run").mkdir()
    stale = {"pid": 1, "host": "elsewhere", "job": "10.0.0.1/29500/old", "state": "training"}
    (tmp_path / "run" / SaveDirLock.NAME).write_text(json.dumps(stale) + "\n", encoding="utf-8")
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29511"), ("TORCHELASTIC_RUN_ID", "new")):
        monkeypatch.setenv(key, value)
    rank0 = SaveDirLock(tmp_path / "run", writes=True)
    rank0.wait()  # it reads last.pt now
    try:
        assert json.loads((tmp_path / "run" / SaveDirLock.NAME).read_text())["pid"] == os.getpid()
        SaveDirLock(tmp_path / "run", writes=False).wait()  # rank 1: this job's, not refused
        rank0.hold()
    finally:
        rank0.release()


def test_a_lock_held_for_an_instant_under_a_killed_runs_note_is_waited_for_not_refused(tmp_path):
    """Another rank's look takes the lock for an instant, and rank 0 holds it an instant before
    its note is written: a rank finding it then, under the note of a run killed while training,
    refused the directory as that long-ended run's (a two-process torchrun job resuming, once)."""
    import fcntl
    import threading

    from nmtkit.train.saving import SaveDirLock

    (tmp_path / "run").mkdir()
    killed = {"pid": 1, "host": "elsewhere", "job": None, "state": "training"}
    (tmp_path / "run" / SaveDirLock.NAME).write_text(json.dumps(killed) + "\n", encoding="utf-8")
    looking = open(tmp_path / "run" / SaveDirLock.NAME, encoding="utf-8")
    fcntl.flock(looking, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the other rank's look, ended soon after
    threading.Timer(0.05, looking.close).start()
    rank0 = SaveDirLock(tmp_path / "run", writes=True)
    rank0.wait()
    try:
        assert json.loads((tmp_path / "run" / SaveDirLock.NAME).read_text())["pid"] == os.getpid()
    finally:
        rank0.release()
    assert json.loads((tmp_path / "run" / SaveDirLock.NAME).read_text())["state"] == "ended"


def test_a_lock_whose_last_note_or_close_fails_lets_the_run_end(tmp_path):
    """A full disk, or NFS's error at close: the run had ended, and release() failed it with a
    traceback before the other ranks were let go."""
    from nmtkit.train.saving import SaveDirLock

    class Failing:
        def __init__(self, fh):
            self.fh = fh

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def flush(self):
            raise OSError(28, "No space left on device")

        def close(self):
            self.fh.close()
            raise OSError(28, "No space left on device")

    writer = SaveDirLock(tmp_path / "run", writes=True)
    writer.hold()
    writer.held = Failing(writer.held)
    writer.release()
    assert writer.held is None
    SaveDirLock(tmp_path / "run", writes=True).wait()  # and the lock went with the file


def test_a_rank_that_waited_for_a_stopped_job_wakes_once_its_own_rank_0_holds_the_lock(tmp_path, monkeypatch):
    """Blocked on the lock while the job before saved, a rank that does not write slept on once
    its own rank 0 took the lock for the whole run: the job hung at its first collective."""
    import fcntl
    import threading

    from nmtkit.train import saving
    from nmtkit.train.saving import SaveDirLock

    blocking, real = [], fcntl.flock

    def flock(fh, how):  # which process wakes first from a blocking wait is the kernel's choice
        if how & fcntl.LOCK_EX and not how & fcntl.LOCK_NB:
            blocking.append(how)
        return real(fh, how)

    monkeypatch.setattr(saving.fcntl, "flock", flock)
    before = SaveDirLock(tmp_path / "run", writes=True)
    before.hold()
    before.stopping()  # the job before, still saving
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29512"), ("TORCHELASTIC_RUN_ID", "new")):
        monkeypatch.setenv(key, value)
    rank1 = threading.Thread(target=SaveDirLock(tmp_path / "run", writes=False).wait, daemon=True)
    rank1.start()
    rank1.join(timeout=1.0)
    assert rank1.is_alive()  # it waits for the job before ...
    rank0 = SaveDirLock(tmp_path / "run", writes=True)
    before.release()
    rank0.wait()  # ... whose end this job's rank 0 takes the lock at, for good
    rank0.hold()
    try:
        rank1.join(timeout=10.0)
        assert not rank1.is_alive(), "a rank waits for its own job's rank 0"
    finally:
        rank0.release()
    assert not blocking  # polled: a blocked rank would sleep on if its own rank 0 took the lock first


def _slow_saving(raw: Path, tmp_path: Path, valid_every: int) -> tuple[list[str], subprocess.Popen]:
    """A run whose save at a signal waits 2 s in the middle of writing last.pt, signalled once it
    has logged 3 updates, and left writing; and its command without the slow save."""
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    cmd = command(tmp_path / "bin", tmp_path / "run")[:-6]
    cmd[cmd.index("--max-updates") + 1] = "100000"
    cmd[cmd.index("--valid-every") + 1] = str(valid_every)
    cue = tmp_path / "writing"
    slow = [sys.executable, str(ROOT / "tests" / "slow_save_train.py"), "2", str(cue), *cmd[3:]]
    proc = subprocess.Popen(slow, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while logged_step(tmp_path / "run") < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    while not cue.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return cmd, proc


def test_a_second_signal_while_last_pt_is_written_waits_for_it(raw, tmp_path):
    """The second signal aborts once the save the first asked for is whole, not in its middle
    (which would lose it: here, the run's only checkpoint)."""
    cmd, proc = _slow_saving(raw, tmp_path, valid_every=100000)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-1500:]
    reached = logged_step(tmp_path / "run")
    torch.load(tmp_path / "run" / "last.pt", weights_only=True)  # a stranger's reader, too
    assert checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step == reached >= 3
    assert not list((tmp_path / "run").glob(".*.tmp"))
    assert "stopping once the checkpoints being written are whole" in err
    cmd[cmd.index("--max-updates") + 1] = str(reached + 2)
    again = CliRunner().invoke(main, cmd[3:])  # in this process: no second start-up of torch
    assert again.exit_code == 0 and f"resuming from {tmp_path / 'run' / 'last.pt'} at update {reached}" in again.output


def test_a_signal_of_another_kind_after_the_first_lets_its_save_and_stop_go_on(raw, tmp_path):
    """systemd's stop with SendSIGHUP=yes, SIGTERM then SIGHUP: taken for a second signal, the
    SIGHUP aborted the run (130), and, come outside the save, before its last.pt was written. The
    first decides: saved, stopped, 143."""
    cmd, proc = _slow_saving(raw, tmp_path, valid_every=100000)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-1500:]
    assert checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step == logged_step(tmp_path / "run") >= 3
    assert "stopping once the checkpoints being written are whole" not in err and "Traceback" not in err


def test_a_third_signal_aborts_the_write_and_keeps_the_previous_last_pt(raw, tmp_path):
    _, proc = _slow_saving(raw, tmp_path, valid_every=2)
    for _ in range(2):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # apart: two pending signals of one kind are delivered once
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-1500:]
    saved = checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step
    assert saved % 2 == 0 and saved < logged_step(tmp_path / "run")  # a validation's, not the aborted one
    assert not list((tmp_path / "run").glob(".*.tmp"))


def test_another_rank_of_the_same_job_never_waits_for_its_rank_0_and_a_failed_note_stops_nothing(tmp_path, monkeypatch):
    """torchrun's ranks share MASTER_ADDR, MASTER_PORT and the run id: a rank that reaches wait()
    after its rank 0 took the lock goes on (it waited until the end of training, rank 0 waiting for
    it in a collective). A note the signal handler cannot write must not raise mid-update."""
    import threading

    from nmtkit.train.saving import SaveDirLock

    for k, v in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "none"}.items():
        monkeypatch.setenv(k, v)
    writer = SaveDirLock(tmp_path / "run", writes=True)
    writer.hold()
    try:
        rank1 = threading.Thread(target=SaveDirLock(tmp_path / "run", writes=False).wait, daemon=True)
        rank1.start()
        rank1.join(timeout=10.0)
        assert not rank1.is_alive()

        def full_disk(state: str) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(writer, "_say", full_disk)
        writer.stopping()  # no exception
    finally:
        writer.release()


def test_a_hangup_moves_the_output_off_the_closed_terminal_so_the_save_is_said_and_the_exit_is_129(tmp_path):
    """On a real hangup stderr is the terminal that closed: the save's last line failed (EIO), an
    unhandled OSError made the exit 1. A file on stderr keeps it."""
    script = """
import os, signal, sys
from nmtkit.train.signals import StopFlag
master, slave = os.openpty()
log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.dup2(slave, 1)
os.dup2(log, 2)
with StopFlag() as flag:
    os.close(master)  # the terminal closes
    os.kill(os.getpid(), signal.SIGHUP)
    print("written after the hangup", flush=True)
    print("said after the hangup", file=sys.stderr, flush=True)
sys.exit(0 if flag.requested and flag.signum == signal.SIGHUP else 3)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "err.log")], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "err.log").read_text() == "said after the hangup\n"


def test_a_run_whose_log_reader_is_gone_before_it_starts_saves_and_exits_as_sigpipe_says(raw, tmp_path):
    """train 2>&1 | head -0: the run's first line met the closed pipe before the loop listened for
    it, and every later line went to /dev/null: the run trained on to its budget unheard, or for
    good without one, and exited 0."""
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    cmd = command(tmp_path / "bin", tmp_path / "run")[:-6]
    cmd[cmd.index("--max-updates") + 1] = "5000"
    cmd[cmd.index("--valid-every") + 1] = "100000"
    read, write = os.pipe()
    os.close(read)  # the reader gone before the first line
    try:
        done = subprocess.run(cmd, env=env(), stdout=subprocess.DEVNULL, stderr=write, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 141
    assert checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step < 100


def test_a_run_whose_log_reader_goes_saves_and_exits_as_sigpipe_says(raw, tmp_path):
    """train 2>&1 | head -2: rich's answer to the closed pipe was exit 1, every update since the
    last save lost. It saves last.pt and exits 141, as a writer whose reader left."""
    import shlex

    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    cmd = command(tmp_path / "bin", tmp_path / "run")[:-6]
    cmd[cmd.index("--max-updates") + 1] = "100000"
    cmd[cmd.index("--valid-every") + 1] = "100000"
    script = f'{shlex.join(cmd)} 2>&1 | head -2; echo "status ${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], env=env(), capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "status 141", done.stdout + done.stderr
    assert checkpoint.load(tmp_path / "run" / "last.pt").training.progress.step >= 1
