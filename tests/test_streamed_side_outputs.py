"""A line streamed into translate gets its side outputs (--print-alignment, --alignments) with its
translation, not at the end of the input: a reader of a FIFO or of >(…) beside stdout (a
coprocess that takes each translation with its links) waited for the input's end, and hung where
it waited for the links before sending the next line."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EN

ROOT = Path(__file__).resolve().parent.parent


def _line_within(fd: int, seconds: float) -> bytes:
    """What the FIFO gives up to its first newline, waiting ``seconds`` at most in all."""
    got = b""
    while b"\n" not in got:
        ready, _, _ = select.select([fd], [], [], seconds)
        if not ready:
            break
        block = os.read(fd, 4096)
        if not block:
            break
        got += block
    return got


@pytest.mark.parametrize("option", ["--print-alignment", "--alignments"])
def test_a_streamed_line_gets_its_side_output_before_the_input_ends(overfit, tmp_path, option):
    fifo = tmp_path / "side"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # there first: translate's open does not wait
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    model = overfit / "run" / "best.pt"
    cmd = [sys.executable, "-m", "nmtkit", "translate", "-m", str(model), "--beam", "2", "--threads", "1", "-q"]
    proc = subprocess.Popen(
        [*cmd, option, str(fifo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((EN[0] + "\n").encode())
        proc.stdin.flush()
        translation = proc.stdout.readline()  # the translation comes while stdin stays open
        side = _line_within(reader, 120)
        assert translation and side.endswith(b"\n"), (translation, side)
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        with contextlib.suppress(BlockingIOError):
            while os.read(reader, 4096):  # the rest of the side output, which the writer may wait to put
                pass
        proc.wait(timeout=120)
        err = proc.stderr.read().decode("utf-8", "replace")
        os.close(reader)
    assert (proc.returncode, err) == (0, "")
