"""The project's own laboratory, beside the toolkit and never installed with it: the paper's
studies and the demo as make targets over nmtkit commands, the benchmarks against the peer
toolkits (``bench_*``, ``peer_*``), the GPU check (``gpu_check*``), the CPU trials, the profiler
and the structure checker. It imports nmtkit; nmtkit never imports it (tests/test_imports.py).
The scripts of bin/ enter it from a checkout."""

import importlib.util
import sys
from pathlib import Path

# bin/'s scripts start with the first python3 on PATH, which on a fresh machine is the system's,
# without nmtkit's libraries: a traceback of torch's import said nothing of the venv to run them with
if missing := [name for name in ("torch", "numpy", "click") if importlib.util.find_spec(name) is None]:
    given = sys.orig_argv  # while a package imports, sys.argv[0] of ``python -m bench.x`` is "-m"
    if "-m" in given[:-1]:
        script = given[given.index("-m") + 1]
        run = f".venv/bin/python -m {script}"
    else:
        script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c") else "bench"
        run = f".venv/bin/python bin/{script}" if script != "bench" else ".venv/bin/python"
    sys.stderr.write(
        f"{script}: this Python ({sys.executable}) has no {', '.join(missing)}: run it with nmtkit's "
        f"environment (make install, then {run}) or through its make target\n"
    )
    sys.exit(2)
