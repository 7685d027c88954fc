"""Stopping a training run on a signal: Ctrl-C (SIGINT), a job's time limit (SIGTERM, as
``timeout`` and batch queues send it) or a closed terminal (SIGHUP) asks for last.pt and a clean
stop, never a torn checkpoint."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

from ..core.console import log, off_the_terminal, when_stderr_lost
from ..core.stops import stop_decided


class StopFlag:
    """First Ctrl-C (or SIGTERM: a job's time limit, ``timeout``; or SIGHUP) asks the loop to stop after the
    current update and save last.pt; a second one (Ctrl-C, or the first signal again: another kind,
    as systemd's SIGHUP after its SIGTERM, is not acted on) aborts, but not while checkpoints are being
    written (:meth:`writing`): it then aborts once they are. The atomic write alone would keep
    the previous last.pt whole, but would throw away the save the first signal asked for, and
    the resumed run would redo every update since the last validation, or start over; the save
    takes seconds. A third signal aborts at once, the previous files kept whole."""

    def __init__(self, on_request: Callable[[], None] = lambda: None) -> None:
        self.requested, self.signum = False, 0
        self.busy = self.deferred = False
        self.on_request = on_request

    def __enter__(self) -> StopFlag:
        self.previous = signal.signal(signal.SIGINT, self._handle)
        self.previous_term = signal.signal(signal.SIGTERM, self._handle)
        # a closed terminal or a dropped ssh session, as SIGTERM: its default ended the run unsaved;
        # under nohup it stays ignored
        hangup = getattr(signal, "SIGHUP", None)
        self.previous_hup = None
        if hangup is not None and signal.getsignal(hangup) not in (signal.SIG_IGN, None):
            self.previous_hup = signal.signal(hangup, self._handle)
        # stderr's reader gone (train 2>&1 | head): saved and stopped, as SIGPIPE would have it
        self._lost = when_stderr_lost(lambda: self._handle(signal.SIGPIPE) if not self.requested else None)
        self._lost.__enter__()
        return self

    def _handle(self, signum: int, *_: Any) -> None:
        if signum == getattr(signal, "SIGHUP", None):
            off_the_terminal()
        if not self.requested:
            self.requested, self.signum = True, signum
            stop_decided()
            self.on_request()
        elif signum not in (signal.SIGINT, self.signum):
            # another kind (systemd's SIGHUP after its SIGTERM, torchrun's SIGTERM after a Ctrl-C):
            # the stop the first asked for goes on; a repeat, or Ctrl-C, presses it
            return
        elif self.busy and not self.deferred:
            self.deferred = True
            log(
                "stopping once the checkpoints being written are whole (a third signal stops at once, "
                "keeping the previous ones)"
            )
        else:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Checkpoints are written in this block: a second signal waits for its end."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
        if self.deferred:
            raise KeyboardInterrupt

    def __exit__(self, *_: Any) -> None:
        self._lost.__exit__(None, None, None)
        signal.signal(signal.SIGINT, self.previous)
        signal.signal(signal.SIGTERM, self.previous_term)
        if self.previous_hup is not None:
            signal.signal(signal.SIGHUP, self.previous_hup)
