"""SIGTERM (``timeout``, a job queue, make killing a recipe) ends a command as an error ends it: one
line, status 143 (128 + SIGTERM), and no output half-written, not even under a temporary name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import EN

ROOT = Path(__file__).resolve().parent.parent


def test_sigterm_leaves_no_output_and_no_temporary_file(overfit, tmp_path):
    (tmp_path / "in.en").write_text("".join(EN[i % 4] + "\n" for i in range(20000)), encoding="utf-8")
    out = tmp_path / "out" / "hyp.fr"
    cmd = [sys.executable, "-m", "nmtkit", "translate", "-m", str(overfit / "run" / "best.pt"), "in.en"]
    cmd += ["-o", str(out), "--beam", "2", "--threads", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    translating = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(out.parent.glob(".hyp.fr.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(out.parent.glob(".hyp.fr.*.tmp")), "translate never started writing"
    translating.send_signal(signal.SIGTERM)
    _, err = translating.communicate(timeout=60)
    assert translating.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1] == "terminated"
    assert not out.parent.exists()  # neither the output nor its temporary name, nor the directory made for it
