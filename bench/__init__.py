"""The project's own laboratory, beside the toolkit and never installed with it: the paper's
studies and the demo as make targets over nmtkit commands, the benchmarks against the peer
toolkits (``bench_*``, ``peer_*``), the GPU check (``gpu_check*``), the CPU trials, the profiler
and the structure checker. It imports nmtkit; nmtkit never imports it (tests/test_imports.py).
The scripts of bin/ enter it from a checkout."""
