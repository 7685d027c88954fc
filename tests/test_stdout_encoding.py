"""Results on stdout are UTF-8 whatever the locale, as every input is read and every -o file
written: under a Latin-1 or ASCII locale (or PYTHONIOENCODING) stdout wrote the locale's
encoding, and a character it lacks (French's œ) ended the command in a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "latin-1"},
        {"PYTHONIOENCODING": "ascii", "PYTHONUNBUFFERED": "1"},
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    ],
    ids=["latin-1", "ascii-unbuffered", "C-locale-without-utf8-mode"],
)
def test_tokenize_writes_utf8_to_stdout_under_any_locale(tmp_path, env):
    environ = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LANG")},
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-m", "nmtkit", "tokenize", "-l", "fr", "-j", "1", "-q"],
        input="De tout ton cœur.\n".encode(),
        capture_output=True,
        cwd=tmp_path,
        env=environ,
        timeout=120,
    )
    assert (done.returncode, done.stderr.decode("utf-8", "replace")) == (0, "")
    assert done.stdout == "De tout ton cœur .\n".encode()
