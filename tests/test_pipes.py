"""A closed pipe ends a command quietly with 141 (128 + SIGPIPE), as a Unix filter killed by
SIGPIPE does: ``nmtkit … | head -1`` is not an error, and a script's ``set -o pipefail``
still sees that the writer did not finish."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EN

ROOT = Path(__file__).resolve().parent.parent
LINES = 20000        # more than a pipe's 64 KiB: the writer meets the closed pipe while it runs


def piped(command: str, cwd: Path) -> tuple[int, str, str]:
    """(the nmtkit side's exit status, what head printed, nmtkit's stderr) of COMMAND | head -1."""
    script = f"{command} 2>nmtkit.err | head -1; echo \"status ${{PIPESTATUS[0]}}\""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout.splitlines()
    return int(out[-1].split()[1]), out[0] if len(out) > 1 else "", (cwd / "nmtkit.err").read_text()


@pytest.mark.parametrize("stdin", [False, True])
def test_tokenize_into_head_exits_141_and_says_nothing(tmp_path, stdin):
    (tmp_path / "in.en").write_text("".join(EN[i % len(EN)] + "\n" for i in range(LINES)), encoding="utf-8")
    nmtkit = f"{sys.executable} -m nmtkit tokenize -l en -j 1"
    status, first, err = piped(f"{nmtkit} < in.en" if stdin else f"{nmtkit} in.en", tmp_path)
    assert (status, err) == (141, "") and first.startswith("In the beginning God created")


def test_translate_into_head_exits_141_and_says_nothing(overfit, tmp_path):
    (tmp_path / "in.en").write_text("".join(EN[i % 4] + "\n" for i in range(LINES // 4)), encoding="utf-8")
    status, first, err = piped(f"{sys.executable} -m nmtkit translate -m {overfit / 'run' / 'best.pt'} "
                               f"--beam 1 --threads 1 -q < in.en", tmp_path)
    assert (status, err) == (141, "") and first


def test_a_short_output_that_head_did_not_need_still_ends_0(tmp_path):
    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    status, first, err = piped(f"{sys.executable} -m nmtkit tokenize -l en -j 1 in.en", tmp_path)
    assert (status, err) == (0, "") and first
