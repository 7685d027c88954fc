"""What the benchmark and check scripts of ``bin/`` share: where the checkout and the benchmarks'
cache ($BENCH_DIR) are, a command echoed, run, or timed under ``/usr/bin/time -v``, the speed a
run's log shows after its warm-up (read by :mod:`nmtkit.train.runlog`, the log's only reader),
outputs written whole (:func:`nmtkit.core.files.atomic_write`), and ``bin/bench-marian``'s work
directory (:class:`Site`), which its peers' modules share.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from nmtkit.core.files import atomic_write
from nmtkit.core.machine import this_cpu

# The scripts run from a checkout: its bin/, bench/peers, tests and examples are theirs to call.
CHECKOUT = Path(__file__).resolve().parents[1]
NMTKIT = [sys.executable, "-m", "nmtkit"]
RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


def bench_dir() -> Path:
    """The benchmarks' cache ($BENCH_DIR): the peers' venvs, their data and every run."""
    return Path(os.environ.get("BENCH_DIR", Path.home() / ".cache" / "nmtkit-bench"))


def fail(prog: str, message: str) -> NoReturn:
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(2)


def exit_on_sigterm() -> None:
    """SIGTERM (a job's timeout, a queue) as SystemExit(143): subprocess.run then kills the command it
    runs, and temporary directories go, where the signal's default would leave both behind."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def native_bf16() -> bool:
    """Whether this CPU runs bfloat16 in hardware (where nmtkit's runs take --bf16)."""
    return this_cpu().native_bf16


def threads_env(threads: int, **more: str) -> dict[str, str]:
    """This process's environment with ``threads`` OpenMP and MKL threads (and ``more``)."""
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), **more}


def load_before() -> str:
    """The one-minute load average, said beside a measurement."""
    with open("/proc/loadavg") as fh:
        return fh.read().split()[0]


def call(cmd: Sequence[object], **kw: Any) -> subprocess.CompletedProcess[Any]:
    """``cmd`` run, its arguments (paths, numbers) as strings."""
    return subprocess.run(list(map(str, cmd)), **kw)


def echoed(cmd: Sequence[object], **kw: Any) -> subprocess.CompletedProcess[Any]:
    """``cmd`` said on stderr ("+ ...") and run."""
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    return call(cmd, **kw)


def peak_rss_mb(time_output: str) -> float | None:
    """The peak resident set in MB that ``/usr/bin/time -v`` reported last in ``time_output``."""
    found = RSS.findall(time_output)
    return int(found[-1]) / 1024 if found else None


def timed(
    cmd: Sequence[object],
    log: Path,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    signal: str = "TERM",
) -> dict[str, Any]:
    """Run ``cmd`` under /usr/bin/time -v (and `timeout -s SIGNAL` when given a time), its output
    into ``log``: its status, wall seconds and peak RSS in MB."""
    pre = ["timeout", "-s", signal, f"{int(timeout_s)}"] if timeout_s else []
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.run(
            ["/usr/bin/time", "-v", *pre, *map(str, cmd)], stdout=fh, stderr=subprocess.STDOUT, env=env
        ).returncode
    wall = time.perf_counter() - t0
    return {"rc": rc, "wall_s": wall, "peak_rss_mb": peak_rss_mb(log.read_text(errors="replace"))}


def write_text(path: Path, text: str) -> None:
    """``path`` written whole or not at all."""
    with atomic_write(path) as fh:
        fh.write(text)


def write_lines(path: Path, lines: Iterable[str]) -> None:
    write_text(path, "".join(line + "\n" for line in lines))


def windows_after(save: Path, warmup: int) -> list[dict[str, Any]]:
    """A run's log windows after its first ``warmup`` updates, each with its target tokens/s."""
    from nmtkit.train.runlog import RunLog  # torch: loaded by the scripts that read a run, not by every one

    return [w for w in RunLog.read(save).windows if "tgt_tokens_per_s" in w and w["step"] > warmup]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


@dataclass(frozen=True)
class Site:
    """Where ``bin/bench-marian`` keeps its stages (``work``: a rerun goes on from what they left
    there) and finds the demo's data and the peers' venvs (``bench``: $BENCH_DIR)."""

    bench: Path
    data: Path  # the demo's data directory (make data): raw/, data-bin-bpe8000/

    @property
    def work(self) -> Path:
        return self.bench / "marian-demo"

    @property
    def units(self) -> Path:
        """Marian's text and vocabularies, in the units of the demo's data-bin."""
        return self.work / "data"

    @property
    def data_bin(self) -> Path:
        return self.data / "data-bin-bpe8000"

    @property
    def marian_py(self) -> Path:
        return self.bench / "marian" / "venv" / "bin" / "python"

    @property
    def fairseq_bin(self) -> Path:
        return self.bench / "fairseq" / "venv" / "bin"

    def kept(self, result: Path, minutes: float, threads: int) -> dict[str, Any] | None:
        """A finished stage's result, if it was run with this budget and these threads; a stage run
        otherwise is refused rather than reused (start over in a fresh work directory)."""
        if not result.exists():
            return None
        run: dict[str, Any] = json_of(result)
        if (run.get("minutes"), run.get("threads")) not in ((minutes, threads), (None, None)):
            fail(
                "bench-marian",
                f"{result}: made with --minutes {run.get('minutes')} --threads {run.get('threads')}, not "
                f"{minutes:g} and {threads}; remove {self.work} to start over",
            )
        return run


def json_of(path: Path) -> Any:
    return json.loads(path.read_text())
