"""DistributedDataParallel on the CPU: two gloo processes under torchrun train as one process
does, since --batch-size is the total over all processes."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
import torch

from nmtkit import checkpoint
from tests.conftest import TINY_ADAM

# a CPU test even on a GPU machine (two processes cannot share one GPU through NCCL)
ENV = {
    "OMP_NUM_THREADS": "1",
    "PATH": "/usr/bin:/bin",
    "CUDA_VISIBLE_DEVICES": "",
    **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
}


@pytest.mark.slow
@pytest.mark.parametrize("guided", [None, "attention", "head"])
def test_ddp_gloo_two_processes(raw, tmp_path, guided):
    """With guided alignment too, on the attention or on an alignment head: its loss, summed over
    both processes, is a single one's."""
    from tests.test_guided_alignment import linked_corpus

    linked_corpus(raw, tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",
        "-m",
        "nmtkit",
        "train",
        str(tmp_path / ("linked" if guided else "bin")),
        "--save-dir",
        str(tmp_path / "ddp"),
        *TINY_ADAM,
        "--batch-size",
        "4",
        "--pool",
        "2",
        "--max-updates",
        "3",
        "--log-every",
        "1",
        "--threads",
        "1",
        "--device",
        "cpu",
    ]
    if guided:
        # plain SGD: the additive attention's biases get gradients that are sums of nearly cancelling
        # terms (the softmax ignores what every position shares), and Adam's first updates, divided
        # by their own root, would turn their rounding into steps of 2e-4
        cmd[cmd.index("adam")], cmd[cmd.index("0.01")] = "sgd", "0.5"
        cmd += ["--guided-alignment-weight", "0.5"] + (["--alignment-head"] if guided == "head" else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=ENV)
    assert done.returncode == 0, done.stderr[-6000:]  # torchrun's own report takes 2,000
    logged = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in logged if "train_nll" in e] == [1, 2, 3]  # rank 0 alone writes
    assert (tmp_path / "ddp" / "last.pt").exists()

    assert "minibatches of 4 sentences in total per update (2 processes taking 1/2 each" in done.stderr
    single = [sys.executable, "-m", "nmtkit", *cmd[cmd.index("train") :]]
    single[single.index("--save-dir") + 1] = str(tmp_path / "one")
    alone = subprocess.run(single, capture_output=True, text=True, timeout=240, env=ENV)
    assert alone.returncode == 0, alone.stderr[-2000:]
    two = checkpoint.load(tmp_path / "ddp" / "last.pt")
    one = checkpoint.load(tmp_path / "one" / "last.pt")
    assert two.training.batches == one.training.batches  # the same minibatches
    assert all(torch.allclose(two.weights[k], one.weights[k], atol=1e-5) for k in one.weights)
    assert len(two.training.rng) == 2  # every process's RNG state
    logs = [
        [json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        for run in ("ddp", "one")
    ]
    for key in ("train_nll", "train_align_ce") if guided else ("train_nll",):
        got = [[e[key] for e in log if key in e] for log in logs]
        assert len(got[0]) == 3 and got[0] == pytest.approx(got[1], rel=1e-5)
    if guided is None:  # the single run resumed by two processes: what each would say, rank 0 says once
        resumed = [*cmd[: cmd.index("--save-dir") + 1], str(tmp_path / "one"), *cmd[cmd.index("--save-dir") + 2 :]]
        resumed[resumed.index("--max-updates") + 1] = "4"
        done = subprocess.run(resumed, capture_output=True, text=True, timeout=240, env=ENV)
        assert done.returncode == 0, done.stderr[-6000:]
        assert done.stderr.count("the checkpoint holds the RNG states of 1 process(es), not 2") == 1, done.stderr


def _torchrun(data, save_dir, *extra):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone", "-m", "nmtkit"]
    cmd += ["train", str(data), "--save-dir", str(save_dir), *TINY_ADAM, "--batch-size", "4", "--threads", "1"]
    cmd += ["--device", "cpu", "--log-every", "100000", "--valid-every", "100000", "--no-valid-bleu", *extra]
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)


@contextlib.contextmanager
def _ended(job):
    """The job and its workers killed on the way out, whatever a failed assertion left running."""
    try:
        yield job
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, 9)
        job.wait()


def _rank_of(parent, rank):
    """The pid of the child of ``parent`` whose environment says RANK=``rank``."""
    import pathlib
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for proc in pathlib.Path("/proc").glob("[0-9]*"):
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) != parent:
                    continue
                if f"RANK={rank}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                    return int(proc.name)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.2)
    raise AssertionError(f"no rank {rank} under {parent}")


@pytest.mark.slow
def test_a_signal_to_any_rank_stops_the_job_within_updates_not_at_the_next_report(raw, tmp_path):
    """Ranks agreed on a stop only at reports (--log-every): SIGTERM waited for it, past a queue's
    30 s grace, and a SIGTERM to rank 1 alone was ignored; --max-minutes ran on to the next report."""
    import signal
    import time

    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    with _ended(_torchrun(tmp_path / "bin", tmp_path / "sig", "--max-updates", "200000")) as job:
        other = _rank_of(job.pid, 1)
        while not (tmp_path / "sig" / "machine.json").exists() and job.poll() is None:
            time.sleep(0.2)
        time.sleep(3)  # training, far from any report
        os.kill(other, signal.SIGTERM)
        sent = time.monotonic()
        _, err = job.communicate(timeout=120)
        assert time.monotonic() - sent < 25 and job.returncode != 0, err[-3000:]
    saved = checkpoint.load(tmp_path / "sig" / "last.pt").training.progress
    assert 0 < saved.step < 100000 and "interrupted: saved" in err, err[-3000:]
    with _ended(
        _torchrun(tmp_path / "bin", tmp_path / "min", "--max-minutes", "0.05", "--max-updates", "200000")
    ) as budget:
        _, err = budget.communicate(timeout=240)
    assert budget.returncode == 0, err[-3000:]
    assert checkpoint.load(tmp_path / "min" / "last.pt").training.progress.seconds < 3 + 5  # rank 0's clock


@pytest.mark.slow
def test_the_workers_of_a_torchrun_killed_by_sigkill_save_and_stop(raw, tmp_path):
    """torchrun forwards no signal when it is SIGKILLed (an OOM killer, a queue's hard kill): its
    workers trained on, orphaned, holding the save directory's lock and writing its checkpoints."""
    import signal
    import time

    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    with _ended(_torchrun(tmp_path / "bin", tmp_path / "k", "--max-updates", "200000")) as job:
        workers = [_rank_of(job.pid, rank) for rank in (0, 1)]
        while not (tmp_path / "k" / "machine.json").exists() and job.poll() is None:
            time.sleep(0.2)
        time.sleep(3)  # training
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
        deadline = time.monotonic() + 60
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for pid in workers if _running(pid)]
        for pid in left:  # each in a session of its own (torchrun's), out of _ended's reach
            os.kill(pid, signal.SIGKILL)
        err = job.stderr.read()
        assert not left, err[-3000:]
    assert "interrupted: saved" in err, err[-3000:]
    assert 0 < checkpoint.load(tmp_path / "k" / "last.pt").training.progress.step < 200000


def _running(pid):
    """Whether ``pid`` runs (a zombie that no init has reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
