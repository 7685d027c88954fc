"""A missing extra is named with the command that installs it where this nmtkit runs."""

import re
import shlex
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.core.extras import install_command, requirements

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _parsed(requirements):
    """Each requirement's name and its set of version clauses (metadata reorders them)."""
    named = (re.match(r"([^<>=!~ ]+)(.*)", r.replace(" ", "")).groups() for r in requirements)
    return {name: frozenset(filter(None, clauses.split(","))) for name, clauses in named}


def _installed() -> bool:
    try:
        metadata.version("nmtkit")
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(
    not _installed(),
    reason="nmtkit runs uninstalled here (a checkout on PYTHONPATH): no metadata to hold to pyproject.toml",
)
def test_each_extra_is_installed_by_this_python_from_the_metadata():
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    python = shlex.quote(sys.executable)
    for extra, wanted in extras.items():
        listed = requirements(extra)
        assert _parsed(listed) == _parsed(wanted), extra
        assert install_command(extra).startswith(f"{python} -m pip install ")
    assert install_command("nothing") == f"{python} -m pip install '.[nothing]' in nmtkit's checkout"
    # requirements() drops a requirement's marker, right while each names its extra alone
    markers = [r.split(";", 1)[1].strip() for r in metadata.requires("nmtkit") or [] if ";" in r]
    assert all(re.fullmatch(r"""extra\s*==\s*["'][a-z]+["']""", m) for m in markers), markers


def test_an_uninstalled_nmtkit_installs_an_extra_from_its_checkout(monkeypatch):
    """A checkout run on PYTHONPATH (a GPU job's) has no metadata to read the extras from."""

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr("nmtkit.core.extras.metadata.requires", absent)
    python = shlex.quote(sys.executable)
    assert requirements("serve") == []
    assert install_command("serve") == f"{python} -m pip install '.[serve]' in nmtkit's checkout"


def test_serve_without_its_extra_says_the_command_in_one_line(overfit, monkeypatch):
    monkeypatch.delitem(sys.modules, "nmtkit.serve.app", raising=False)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if not installed
    out = CliRunner().invoke(main, ["serve", "-m", str(overfit / "run" / "last.pt")])
    assert out.exit_code == 2
    assert out.output.strip() == (
        f"nmtkit serve: error: nmtkit serve needs FastAPI and uvicorn (fastapi is missing): {install_command('serve')}"
    )
