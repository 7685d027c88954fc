"""The command that installs one of nmtkit's extras into the Python that runs it.

"pip install '.[serve]' in nmtkit's checkout" installed into whichever environment was active, not
always the one nmtkit runs in (pipx's, another venv's), and meant nothing without the checkout: the
packages an extra names are read from nmtkit's own metadata, and installed by this very Python.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata


def requirements(extra: str) -> list[str]:
    """The requirements nmtkit's metadata lists for ``extra`` (none where nmtkit runs uninstalled)."""
    try:
        listed = metadata.requires("nmtkit") or []
    except metadata.PackageNotFoundError:
        return []
    # the marker dropped: nmtkit's name an extra alone (a test holds them to it)
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [r.split(";")[0].strip() for r in listed if ";" in r and marker.search(r.split(";", 1)[1])]


def install_command(extra: str) -> str:
    """A shell command that installs ``extra`` where this nmtkit runs; uninstalled (a checkout on
    PYTHONPATH), from the checkout."""
    wanted = requirements(extra)
    where = "" if wanted else " in nmtkit's checkout"
    return (
        " ".join(shlex.quote(w) for w in [sys.executable, "-m", "pip", "install", *(wanted or [f".[{extra}]"])]) + where
    )
