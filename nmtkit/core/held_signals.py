"""Ctrl-C and SIGTERM held over work that an exception raised at any line would break instead of
stopping, then acted on as soon as that work is over.

Python raises a signal's exception at whatever line runs when it arrives. Inside an import that
runs compiled code it can be lost or turned into another error: pydantic-core, building
FastAPI's schemas, wraps a KeyboardInterrupt in a ``SchemaError`` (a traceback, or, where
pydantic catches that error, nothing: the server started as if no Ctrl-C had come), and a
C++ callback that gets one calls ``std::terminate`` (SIGABRT). Held, the signal waits for the end
of that work and is then raised again under the handler it would have met, which does what it
always does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

# a closed terminal, where the platform has one; under nohup it is ignored, and stays so
HANGUP = (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()
HELD = (signal.SIGINT, signal.SIGTERM, *HANGUP)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held while the block runs (those the process ignores stay ignored), each
    one that came raised once the block is over, in the order they came, under the handler it had
    before: the first whose handler raises ends it (a command's Ctrl-C or SIGTERM)."""
    if threading.current_thread() is not threading.main_thread():  # only there can a handler be set
        yield
        return
    came: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if signum not in came:
            came.append(signum)

    previous = {sig: signal.getsignal(sig) for sig in HELD}
    # an ignored signal stays ignored; None: a handler not set from Python, which cannot be put back
    held = [sig for sig, handler in previous.items() if handler not in (signal.SIG_IGN, None)]
    with _blocked():
        for sig in held:
            signal.signal(sig, hold)
    try:
        yield
    finally:
        with _blocked():  # a signal between two of these would leave the other on ``hold``
            for sig in held:
                signal.signal(sig, previous[sig])
    for signum in came:
        signal.raise_signal(signum)


@contextlib.contextmanager
def ctrl_c_heard() -> Iterator[None]:
    """Ctrl-C raised in the block (and held where :func:`signals_held` holds it) though the process
    started with it ignored, as a script's background job does (``nmtkit serve &``): a server runs
    until stopped, and Ctrl-C is how a terminal stops it. Ignored again after the block."""
    ignored = (
        threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    )
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:  # as the caller had it
            signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _blocked() -> Iterator[None]:
    """SIGINT and SIGTERM kept pending by the kernel meanwhile: no Python handler runs between two
    lines of the block (where the platform can block them)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
