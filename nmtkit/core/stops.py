"""How a command ends on a stop signal: Ctrl-C (SIGINT), SIGTERM (``timeout``, a job queue,
make's kill) or SIGHUP (a closed terminal), each once, with its line and status, the first of
several deciding."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

from .console import off_the_terminal
from .held_signals import HANGUP


class Terminated(BaseException):
    """SIGTERM (``timeout``, a job queue, make's kill) or SIGHUP (a closed terminal, a dropped ssh
    session) as an exception in the command's own process: a file being written goes as an error
    takes it (:func:`~nmtkit.core.files.atomic_write` removes its temporary name), an aligner's
    process group is killed, where the signal's default would leave them. ``nmtkit train``
    installs a handler of its own, which saves first."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_stop(signum: int, _frame: object) -> None:
    if os.getpid() != _MAIN_PID:  # a forked worker ends as the signal would end it
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _ending:  # systemd's SIGHUP after its SIGTERM, Ctrl-C pressed again: the first has decided
        return
    stop_decided()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    if signum != signal.SIGTERM:  # SIGHUP: off the terminal first, which a progress bar's last
        off_the_terminal()  # frame, drawn as the stack unwinds, would fail on (EIO) in its place
    raise Terminated(signum)


_MAIN_PID = os.getpid()
_STOPS = (signal.SIGINT, signal.SIGTERM, *HANGUP)
_ending = False  # a stop signal has decided how the command ends (stop_decided)
_own_process = False  # the command is the process's (own_process): it may leave without teardown


@contextlib.contextmanager
def stops_raise() -> Iterator[None]:
    """Ctrl-C as KeyboardInterrupt, SIGTERM and SIGHUP as :class:`Terminated`, while a command runs
    (in the main thread: only there can a handler be set); once one has come, those after it are
    not acted on (:func:`stop_decided`). The handlers before them are restored after."""
    global _ending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {stop: signal.getsignal(stop) for stop in _STOPS}
    # SIGINT only under Python's own handler: one a caller set, or SIG_DFL, is theirs
    ours = {signal.SIGINT: (signal.default_int_handler,)}
    set_here = [
        stop
        for stop, handler in before.items()
        if handler not in (signal.SIG_IGN, None) and handler in ours.get(stop, (handler,))
    ]
    _ending = False
    for stop in set_here:
        signal.signal(stop, _on_stop)
    try:
        yield
    finally:
        for stop in set_here:
            signal.signal(stop, before[stop])


def stop_decided() -> None:
    """A stop signal has decided how the command ends (met by :func:`_on_stop`, or by a handler of
    the command's own, as train's): those after it are not acted on while it ends, and a process
    that is the command's own ends without the interpreter's teardown (``command._exit``), which puts
    the default handlers back, under which a late one (systemd's SIGHUP after its SIGTERM) ended
    the process with another status than its line said. A handler set to ignore them instead
    raised an OSError for one already on its way ("ignored due to race condition")."""
    global _ending
    _ending = True


def decided_in_own_process() -> bool:
    """Whether a stop signal has decided how the command ends, in a process that is the command's
    own: it leaves without the interpreter's teardown."""
    return _ending and _own_process


def own_process() -> None:
    """The command about to run is the process's own (``nmtkit``, ``python -m nmtkit``), not one run
    inside another program (a test's CliRunner, a notebook), whose process must outlive it."""
    global _own_process
    _own_process = True


def ended_by(signum: int) -> str:
    """The line of a command that a stop signal ends."""
    said: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
    return said.get(signum, "hung up")
