"""What a user installs: the sdist holds the package alone, and the wheel built from it holds every
file of the package that git holds (or would: new, not ignored), no other (py.typed and serve's page included)."""

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build(kind: str, source: Path, out: Path) -> Path:
    code = f"from setuptools import build_meta; print(build_meta.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / done.stdout.split()[-1]


def _in_git() -> bool:
    """Whether the checkout is a git repository of its own (not a copy inside another one)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == ROOT


@pytest.mark.skipif(
    not _in_git(), reason="a copy of the checkout without git (a GPU job's): git names the package's files"
)
def test_the_sdist_holds_no_part_of_the_tests_and_its_wheel_the_tracked_package_alone(tmp_path):
    sdist = _build("sdist", ROOT, tmp_path)
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
        tar.extractall(tmp_path, filter="data")
    assert not [n for n in names if n.startswith("tests")]
    assert "nmtkit/py.typed" in names and "nmtkit/serve/page.html" in names
    wheel = _build("wheel", tmp_path / sdist.name.removesuffix(".tar.gz"), tmp_path / "wheel")
    with zipfile.ZipFile(wheel) as whl:
        shipped = {n for n in whl.namelist() if not n.split("/")[0].endswith(".dist-info")}
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "nmtkit"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    assert shipped == set(tracked.split())
