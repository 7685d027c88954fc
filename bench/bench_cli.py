"""How fast the command line answers before any work: `nmtkit --help`, every `COMMAND --help`
and a shell completion, each the median wall time of N fresh processes (torch and the text
libraries must not load for these; tests/test_imports.py checks that they do not).

    bin/bench-cli [--runs 5] [--nmtkit .venv/bin/nmtkit]

The commands to time are the command line's own, which ``bin/bench-cli`` passes in (the command
line is a layer above the recipes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

TARGET_S = 0.5


def wall(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(commands: Callable[[], list[str]], argv: list[str] | None = None) -> None:
    """The table of times; ``commands()``: the names of nmtkit's commands, from the same install."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nmtkit", default=str(Path(sys.executable).with_name("nmtkit")))
    args = parser.parse_args(argv)
    env = dict(os.environ)
    rows = [("nmtkit --help", wall([args.nmtkit, "--help"], env, args.runs))]
    for name in commands():
        rows.append((f"nmtkit {name} --help", wall([args.nmtkit, name, "--help"], env, args.runs)))
    completion = {**env, "_NMTKIT_COMPLETE": "bash_complete", "COMP_WORDS": "nmtkit translate --be", "COMP_CWORD": "2"}
    rows.append(("completion of 'nmtkit translate --be<TAB>'", wall([args.nmtkit], completion, args.runs)))
    print(f"| command (median of {args.runs} fresh processes) | seconds |")
    print("|---|---:|")
    for label, seconds in rows:
        print(f"| `{label}` | {seconds:.2f} |")
    slowest = max(s for _, s in rows)
    print(f"\nslowest {slowest:.2f} s; target under {TARGET_S} s: {'met' if slowest < TARGET_S else 'NOT met'}")
