"""An ordered, bounded parallel map over chunks of lines.

``multiprocessing.Pool.imap`` reads its whole input ahead of the workers,
so memory would grow with the corpus; here at most ``2 × workers`` chunks
are in flight. Workers are spawned (not forked) so that no thread of the
parent (rich's progress refresher) is copied into them. With one worker
everything runs in-process, which is also what tests use.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from multiprocessing import resource_tracker
from typing import Any, TypeVar

from .held_signals import HELD

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def needed(workers: int, lines: int, chunk: int) -> int:
    """Of ``workers`` processes, those that ``lines`` in chunks of ``chunk`` can keep busy: ``-j 16``
    on a test set of one chunk started 16 processes, each loading its tables, for one to work."""
    return max(1, min(workers, -(-lines // chunk)))


class Workers:
    """A pool of ``n`` initialised processes (or none for n ≤ 1) with an ordered, bounded map."""

    def __init__(self, n: int, initializer: Callable[..., None], initargs: tuple[Any, ...] = ()):
        self.n = n
        if n <= 1:
            initializer(*initargs)
            self.pool = None
        else:
            self.pool = _spawned(n, initializer, initargs)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        if self.pool is None:
            yield from map(fn, items)
            return
        pending: deque[Any] = deque()
        for item in items:
            pending.append(self.pool.apply_async(_started_then, (fn, item)))
            if len(pending) >= 2 * self.n:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        if self.pool is None:
            return
        if kind is None:  # every chunk done: each worker ends at the end of its queue
            try:
                self.pool.close()
                self.pool.join()
                return
            except BaseException:  # a stop while they end: as any other
                self._kill()
                raise
        self._kill()

    def _kill(self) -> None:
        assert self.pool is not None
        _kill(self.pool)


def _kill(pool: Any) -> None:
    # the pool's terminate waits on a lock of its queue, which a worker killed while it waited for a
    # chunk never gave back: run it aside, where it may wait for good, and kill the workers under it
    ending = threading.Thread(target=pool.terminate, daemon=True)
    ending.start()
    ending.join(0.2)  # by then it has stopped the pool from starting workers again
    for worker in pool._pool:
        worker.kill()
    ending.join(5.0)


_STOPS = set(HELD)
# the resource tracker's warning as it removes the pool's semaphores after a parent killed
# outright: it does what it should, and its two lines would end a log as if something had failed
_TRACKER_QUIET = "ignore:resource_tracker:UserWarning"


def _spawned(n: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> Any:
    """The pool, its workers started with the stops held: a spawned worker imports for a second or
    more before its initializer can ignore them, and a stop then ended it with a traceback (and the
    pool started another). A stop that comes while the pool is built kills the workers it started."""
    before = set(mp.active_children())
    # the pool's locks start multiprocessing's resource tracker, whose start unblocks every signal
    # on its way out: started first, it leaves the block below in place
    if _TRACKER_QUIET not in sys.warnoptions:  # a child interpreter's -W options are the parent's
        sys.warnoptions.append(_TRACKER_QUIET)
    resource_tracker.ensure_running()
    pool = None
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the mask as it is, changed by nothing
    try:
        with _stops_deferred():
            try:
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # inherited by the workers, through exec
                pool = mp.get_context("spawn").Pool(n, _deaf_to_stops, (initializer, *initargs))
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return pool
    except BaseException:
        if pool is not None:
            _kill(pool)
        for worker in set(mp.active_children()) - before:
            worker.kill()
        raise


@contextlib.contextmanager
def _stops_deferred() -> Iterator[None]:
    """The stops' handlers run after the block, not in it: the mask above holds them off this thread
    only, and another (rich's refresher) takes them for the process, whose handler then ran here in
    the middle of a worker's spawn, before it had written the worker's start: that worker read a cut
    pipe and printed a traceback. Off the main thread no handler can be set, and the race stays."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    # a handler set in C (None) could not be put back, and an ignored stop has nothing to defer
    before = [(stop, signal.getsignal(stop)) for stop in _STOPS]
    before = [(stop, handler) for stop, handler in before if handler not in (None, signal.SIG_IGN)]
    for stop, _ in before:
        signal.signal(stop, lambda number, _frame: came.append(number))
    try:
        yield
    finally:
        _restore(before)
        for number in dict.fromkeys(came):
            signal.raise_signal(number)


def _restore(handlers: Sequence[tuple[int, Any]]) -> None:
    """Each handler put back, also where putting one back runs a stop's handler that raises."""
    if handlers:
        try:
            signal.signal(*handlers[0])
        finally:
            _restore(handlers[1:])


def _deaf_to_stops(initializer: Callable[..., None], *initargs: Any) -> None:
    """A worker's start: Ctrl-C, SIGTERM and SIGHUP, sent to the whole process group, are the parent's to
    act on (it kills the workers); a worker they stopped printed a traceback, or, stopped while it
    held its queue's lock, left the parent waiting for good. Held since the spawn, they are dropped."""
    global _START_ERROR
    _die_with_parent()
    for stop in _STOPS:
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    try:
        initializer(*initargs)
    except Exception as err:  # a worker that ended here would be started again, and fail again, for good
        _START_ERROR = err


_START_ERROR: Exception | None = None
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """On Linux, a worker ends with its parent when that is killed outright (SIGKILL, the OOM
    killer), where it went on with its chunk and printed a BrokenPipeError traceback (and
    multiprocessing's leaked semaphore) into the terminal or log once it tried to hand it back."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it died before the call above
        os._exit(0)


def _started_then(fn: Callable[[T], R], item: T) -> R:
    """``fn(item)`` in a worker whose start went well; else its start's error, for the parent to say."""
    if _START_ERROR is not None:
        raise _START_ERROR
    return fn(item)
