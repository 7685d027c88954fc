"""Spreading preprocessing over processes changes nothing in the output."""

import os
from pathlib import Path

from nmtkit.text.clean import PRESETS
from nmtkit.text.preprocess import preprocess_corpus
from nmtkit.text.settings import FilterConfig, TextConfig
from tests.conftest import EN, FR, write_pair


def test_two_workers_give_the_same_output_as_one(tmp_path, monkeypatch):
    monkeypatch.setattr("nmtkit.text.preprocess.CHUNK", 3)  # several chunks in flight
    write_pair(tmp_path / "raw" / "train", EN * 4, FR * 4)
    texts = (TextConfig("en", clean=PRESETS["bible"]), TextConfig("fr", clean=PRESETS["bible"]))
    outs = []
    for workers in (1, 2):
        rep = preprocess_corpus(
            {"train": tmp_path / "raw" / "train"},
            tmp_path / f"j{workers}",
            texts,
            FilterConfig(dedup=False),
            workers=workers,
        )
        outs.append(
            (
                [(tmp_path / f"j{workers}" / f"train.{x}").read_text() for x in ("en", "fr", "lines")],
                rep["splits"]["train"]["rules"],
            )
        )
    assert outs[0] == outs[1]
    assert outs[0][1]["fr"]["hash"] == 4


def test_no_more_workers_start_than_the_chunks_of_the_longest_split(tmp_path, monkeypatch):
    """-j 16 on a few lines started 16 processes, each loading its tables, for one to work."""
    from nmtkit.core import parallel

    started = []
    monkeypatch.setattr(parallel, "_spawned", lambda n, *_: started.append(n) or (_ for _ in ()).throw(OSError))
    write_pair(tmp_path / "raw" / "train", EN, FR)
    texts = (TextConfig("en"), TextConfig("fr"))
    preprocess_corpus({"train": tmp_path / "raw" / "train"}, tmp_path / "one", texts, FilterConfig(), workers=16)
    assert started == [] and (tmp_path / "one" / "train.en").exists()  # one chunk: worked in this process
    assert parallel.needed(16, 4_001, 2_000) == 3 and parallel.needed(2, 10**6, 2_000) == 2
    assert parallel.needed(8, 0, 2_000) == 1


def _sleep_then(x):
    import time

    time.sleep(0.2)
    return x


def test_workers_leave_a_stop_to_the_parent_which_kills_them_when_it_stops(tmp_path):
    """Ctrl-C and SIGTERM reach a whole process group: a worker they stopped printed a traceback,
    or, stopped holding its queue's lock, left the parent's pool waiting for good (preprocess -j 2
    hung in a third of the walk's tries)."""
    import os
    import signal
    import time

    import pytest

    from nmtkit.core.parallel import Workers

    with Workers(2, print, ()) as pool:
        assert list(pool.map(_sleep_then, range(4))) == list(range(4))  # each worker started
        workers = list(pool.pool._pool)
        for w in workers:
            os.kill(w.pid, signal.SIGTERM)  # as the group's signal would: ignored there
        assert list(pool.map(_sleep_then, range(6))) == list(range(6))
        assert list(pool.pool._pool) == workers  # none died, none replaced
    assert all(w.exitcode == 0 for w in workers)  # ended at the end of their queue
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with Workers(2, print, ()) as pool:
            workers = list(pool.pool._pool)
            next(pool.map(_sleep_then, range(100)))
            raise KeyboardInterrupt  # the parent's own handling of the stop
    assert time.monotonic() - started < 15 and not any(w.is_alive() for w in workers)


def test_a_stop_while_workers_import_leaves_them_to_their_start(tmp_path):
    """A spawned worker imports for a second or more before it can ignore a stop: one sent to the
    process group then ended it with a traceback, and the pool started another. In a process of
    its own, as a command's first pool is (whose locks start the resource tracker, which unblocked
    every signal)."""
    import subprocess
    import sys

    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(1.5)\n\ndef start():\n    pass\n")
    script = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import slow_to_import
from nmtkit.core.parallel import Workers
from tests.test_parallel import _sleep_then

with Workers(2, slow_to_import.start, ()) as pool:
    workers = list(pool.pool._pool)
    for w in workers:
        os.kill(w.pid, signal.SIGTERM)  # still importing
    assert list(pool.map(_sleep_then, range(4))) == list(range(4))
    assert list(pool.pool._pool) == workers and all(w.is_alive() for w in workers), "replaced"
assert all(w.exitcode == 0 for w in workers), [w.exitcode for w in workers]
print("kept")
"""
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "kept", r.stderr[-2000:]


def test_a_stop_while_the_pool_is_built_kills_the_workers_it_started(monkeypatch):
    import multiprocessing as mp
    import multiprocessing.pool

    import pytest

    from nmtkit.core.parallel import Workers

    started, pools = [], []
    fill = multiprocessing.pool.Pool._repopulate_pool

    def fill_then_stop(self):
        fill(self)
        started.extend(self._pool)
        pools.append(self)  # held, as the stop's traceback holds it till the process ends
        raise KeyboardInterrupt

    monkeypatch.setattr(multiprocessing.pool.Pool, "_repopulate_pool", fill_then_stop)
    with pytest.raises(KeyboardInterrupt):
        Workers(2, print, ())
    assert len(started) == 2
    for w in started:
        w.join(5)
    assert not any(w.is_alive() for w in started) and not mp.active_children()


def test_a_stop_another_thread_takes_while_the_pool_is_built_is_acted_on_once_it_is_built(monkeypatch):
    """A stop that another thread takes (rich's refresher) ran its handler here in the middle of a
    worker's spawn: that worker read a cut pipe and printed a traceback. It waits for the pool."""
    import multiprocessing.pool
    import signal
    import threading
    import time

    import pytest

    from nmtkit.core.parallel import Workers

    class Stopped(Exception):
        pass

    def stop(*_):
        raise Stopped

    go, sent = threading.Event(), threading.Event()

    def sender():  # started before the pool holds the stops off this thread: it takes them
        go.wait(10)
        os.kill(os.getpid(), signal.SIGTERM)
        sent.set()

    fill, filled = multiprocessing.pool.Pool._repopulate_pool, []

    def stopped_then_filled(self):
        go.set()
        sent.wait(10)
        time.sleep(0.2)  # where the handler ran
        fill(self)
        filled.extend(self._pool)

    monkeypatch.setattr(multiprocessing.pool.Pool, "_repopulate_pool", stopped_then_filled)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        threading.Thread(target=sender, daemon=True).start()
        with pytest.raises(Stopped):
            Workers(2, print, ())
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sent.is_set() and len(filled) == 2
    for w in filled:
        w.join(5)
    assert not any(w.is_alive() for w in filled)


def test_a_deferred_stop_is_acted_on_after_the_block_and_the_handlers_are_put_back():
    """A stop raised in the block reaches its handler once the block ends; an ignored one stays
    ignored; both handlers are the ones set before."""
    import signal

    import pytest

    from nmtkit.core.parallel import _stops_deferred

    class Stopped(Exception):
        pass

    def stop(*_):
        raise Stopped

    old, reached = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}, []
    try:
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with pytest.raises(Stopped), _stops_deferred():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
            reached.append(True)
        assert reached
        assert signal.getsignal(signal.SIGINT) is stop and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def test_a_parent_killed_outright_takes_its_workers_with_it_silently(tmp_path):
    """SIGKILL (the OOM killer) of preprocess -j 2: its workers finished their chunks, then printed
    BrokenPipeError tracebacks and the resource tracker's leaked semaphores into the log."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import time\nfrom nmtkit.core.parallel import Workers\n"
        "with Workers(2, int, ()) as pool:\n"
        "    results = pool.map(time.sleep, [0.1] + [4] * 8)\n"
        "    next(results)\n"
        "    print('started', flush=True)\n"
        "    list(results)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout.readline() == b"started\n"
    os.kill(proc.pid, signal.SIGKILL)
    started = time.monotonic()
    said = proc.stderr.read().decode()  # to its end: when the last process holding the pipe is gone
    proc.wait()
    assert time.monotonic() - started < 3, "the workers went on with their chunks"
    assert "Traceback" not in said and "leaked" not in said, said
