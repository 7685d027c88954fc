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
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "bench"
    sys.stderr.write(
        f"{script}: this Python ({sys.executable}) has no {', '.join(missing)}: run it with nmtkit's "
        f"environment (make install, then .venv/bin/python bin/{script}) or through its make target\n"
    )
    sys.exit(2)
