"""How a command ends on a stop signal: Ctrl-C (SIGINT), SIGTERM (``timeout``, a job queue,
make's kill) or SIGHUP (a closed terminal), each once, with its line and status, the first of
several deciding."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
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


def own_process(parent: int | None = None) -> None:
    """The command about to run is the process's own (``nmtkit``, ``python -m nmtkit``), not one run
    inside another program (a test's CliRunner, a notebook), whose process must outlive it;
    ``parent``: the pid of the process that started it, read as it started."""
    global _own_process
    _own_process = True
    _ends_with_its_launcher(os.getppid() if parent is None else parent)


def ended(code: object) -> None:
    """The process's command has ended with ``code`` (its SystemExit's), its results whole: a stop
    signal in the interpreter's teardown after it (torch's, half a second) leaves at once with that
    status, where the handlers put back ended the process as 130 or 143 without a line."""
    global _ended_with
    _ended_with = code if isinstance(code, int) else int(code is not None)

    def leave(_signum: int, _frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a reader gone: nothing more to say to it
                stream.flush()
        os._exit(_ended_with or 0)

    for stop in _STOPS:
        if signal.getsignal(stop) not in (signal.SIG_IGN, None):  # nohup's SIGHUP stays ignored
            signal.signal(stop, leave)


def last_at_exit() -> None:
    """Registered before any library's exit function, so run after them all: the rest of the
    teardown (modules' cleanup, C++ destructors) runs with Python's handlers gone, back at their
    defaults, under which a stop signal ended a command that had ended (:func:`ended`) as 130 or
    143 without a line. There it is ignored: nothing is left but to end with the status decided."""
    if _ended_with is not None:
        for stop in _STOPS:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(stop, signal.SIG_IGN)


_ended_with: int | None = None  # the status of the command that has ended (ended)


# prctl(2)'s request: the signal this process gets when the process that started it ends
_PR_SET_PDEATHSIG = 1
_LAUNCHER_GONE = getattr(signal, "SIGUSR2", None)
_launcher = 0  # the pid of the process that started this one, where its end is watched


def _ends_with_its_launcher(parent: int) -> None:
    """A torchrun worker gets SIGTERM, which saves and stops a training run, when its torchrun ends,
    even by SIGKILL (an OOM killer, a job queue's hard kill): torchrun forwards no signal then, and
    its workers trained on, holding their GPUs, their save directory's lock and its checkpoints.
    Linux only. ``parent``: the launcher's pid as the process started; one that is pid 1 (torchrun as
    a container's entry point) is a launcher like any other, not a sign of one gone."""
    global _launcher
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux") or _LAUNCHER_GONE is None:
        return
    import ctypes  # for this one call: the standard library has no prctl

    _launcher = parent
    signal.signal(_LAUNCHER_GONE, _on_launcher_gone)
    asked = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(_LAUNCHER_GONE))
    if asked == 0 and os.getppid() != parent:
        _on_launcher_gone(_LAUNCHER_GONE, None)  # gone before the request: the signal will not come


def _on_launcher_gone(signum: int, _frame: object) -> None:
    # The kernel signals at the end of the launcher's thread that started this process, then again
    # at each thread it passes the process on to as the launcher ends: a thread's end alone leaves
    # the parent's pid as it was, and its process's end is told once, as the SIGTERM a user sends.
    if os.getppid() == _launcher:
        return
    signal.signal(signum, signal.SIG_IGN)
    os.kill(os.getpid(), signal.SIGTERM)


def ended_by(signum: int) -> str:
    """The line of a command that a stop signal ends."""
    said: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
    return said.get(signum, "hung up")
