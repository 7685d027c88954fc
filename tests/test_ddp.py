"""DistributedDataParallel on the CPU: two gloo processes under torchrun train and save once."""

import json
import subprocess
import sys

from tests.test_corpus import make_corpus


def test_ddp_gloo_two_processes(raw, tmp_path):
    make_corpus(raw, tmp_path)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
           "-m", "nmtkit", "train", str(tmp_path / "bin"), "--save-dir", str(tmp_path / "ddp"),
           "--preset", "tiny", "--optimizer", "adam", "--lr", "0.01", "--batch-size", "2", "--pool", "2",
           "--max-updates", "3", "--log-every", "1", "--threads", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    logged = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in logged if "train_nll" in e] == [1, 2, 3]      # rank 0 alone writes
    assert (tmp_path / "ddp" / "last.pt").exists()
