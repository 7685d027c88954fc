"""uvicorn's server as nmtkit serves with it: on a socket bound before the models load, stopped by
the signals as the command line is, and logging in its lines.

SIGTERM or SIGHUP (a service manager's stop, a closed terminal) lets the requests in flight
finish, for up to --shutdown-wait seconds (a request still running then is cancelled, and its client
gets a JSON 503), says so, and ends the server by the signal, as a service manager expects (143,
129); Ctrl-C does the same with status 130, and a second Ctrl-C, or a Ctrl-C after either, stops it
at once.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import click
import uvicorn
from fastapi import FastAPI

from ..core.console import log, off_the_terminal, signed, verbose
from ..core.errors import Interrupted, UserError
from ..core.held_signals import HANGUP
from ..core.stops import ended_by


def run_server(app: FastAPI, sock: socket.socket, shutdown_wait: float) -> None:
    """uvicorn serving ``app`` on ``sock`` until a stop signal (as this module says);
    :class:`Interrupted` once stopped by Ctrl-C, which leaves without waiting for the batch the
    model thread may still compute (a search of minutes)."""
    config = uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=math.ceil(shutdown_wait),
        use_colors=sys.stderr.isatty(),  # uvicorn asks stdout, and the logs go to stderr
    )
    if verbose():  # a line a request, uvicorn's (address, method, path, status), with the logs on stderr
        access = logging.getLogger("uvicorn.access")
        access.setLevel(logging.INFO)
        for handler in access.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(sys.stderr)
    server = _Server(config)
    said = _CancelledSaid()
    logging.getLogger("uvicorn.error").addFilter(said)
    try:
        with _by_default(signal.SIGTERM, *HANGUP):  # raised again by uvicorn once stopped: they end the server
            server.run(sockets=[sock])
    finally:
        logging.getLogger("uvicorn.error").removeFilter(said)
    if server.interrupted:
        click.echo(signed(ended_by(signal.SIGINT)), err=True)  # as any command's Ctrl-C says it, -q or not
        raise Interrupted(signal.SIGINT, abandon=True)


@contextlib.contextmanager
def _by_default(*signums: int) -> Iterator[None]:
    """The signals' default actions while the block runs (those ignored, as SIGHUP under nohup, stay so)."""
    if threading.current_thread() is not threading.main_thread():  # only there can a handler be set
        yield
        return
    before = {s: signal.getsignal(s) for s in signums}
    for s, handler in before.items():
        if handler not in (signal.SIG_IGN, None):
            signal.signal(s, signal.SIG_DFL)
    try:
        yield
    finally:
        for s, handler in before.items():
            if handler not in (signal.SIG_IGN, None):
                signal.signal(s, handler)


class _CancelledSaid(logging.Filter):
    """uvicorn's line for the requests still running when the shutdown wait is over, in nmtkit's
    words: a line of the log, which -q leaves out, not an error's."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "timeout graceful shutdown exceeded" not in str(record.msg):
            return True
        running = record.args[0] if isinstance(record.args, tuple) and record.args else "the"
        log(f"--shutdown-wait over: {running} request(s) still running cancelled, each answered a 503")
        return False


class _Server(uvicorn.Server):
    """uvicorn's server, quiet when a second Ctrl-C stops it at once, and stopped by Ctrl-C the
    same way whatever SIGINT's handler was when it started. uvicorn raises each signal it caught
    again when it has stopped, under the handler it found: a second SIGINT, raised after the first,
    made asyncio's runner raise KeyboardInterrupt inside its shutdown, and under an ignored SIGINT
    (a background job of a shell that is not interactive) the server ended with status 0. Ctrl-C is
    kept out of that list and said by :attr:`interrupted` instead; SIGTERM, and SIGHUP, which it
    catches here as SIGTERM (uvicorn does not), are said and raised again. A stop at once (Ctrl-C
    after any of them) raises none: SIGTERM raised then ended the server before the requests it
    cut short got their 503. Its log leaves out the application's lifespan, which a forced exit
    cancels unfinished (stderr got a traceback of each)."""

    interrupted = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self.force_exit:
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            main = threading.current_thread() is threading.main_thread()  # only there can a handler be set
            hangups = {
                h: signal.signal(h, self.handle_exit) for h in HANGUP if main and signal.getsignal(h) is signal.SIG_DFL
            }
            try:
                yield
            finally:
                for hangup, before in hangups.items():
                    signal.signal(hangup, before)
                caught = getattr(self, "_captured_signals", None)  # uvicorn's own list, raised again at exit
                if isinstance(caught, list):
                    # the first decides (SIGHUP then SIGTERM: hung up); Ctrl-C first is said by `interrupted`
                    self.interrupted = bool(caught) and (caught[0] == signal.SIGINT or self.force_exit)
                    kept = [] if self.interrupted else caught[:1]
                    caught[:] = kept
                    if kept:  # raised again once stopped, which ends the server: said as it
                        if kept[0] != signal.SIGTERM:
                            off_the_terminal()  # a closed terminal would fail the line (EIO)
                        click.echo(signed(ended_by(kept[0])), err=True)


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listening(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening (uvicorn serves on it), as uvicorn's own binding
    makes it: IPv6 for a host with a colon, else IPv4 (``localhost`` is 127.0.0.1 then, where
    /etc/hosts may list ::1 first). A host this machine does not have, or an address in use, is one
    line, where uvicorn logged it and exited 3; a second server started while the first loads its
    models is refused too, since the first already listens."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][4]
    except socket.gaierror as err:
        raise UserError(f"--host {host}: {(err.strerror or str(err)).lower()}") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's: a restart need not wait
    try:
        sock.bind(address)
        sock.listen(2048)  # uvicorn's backlog
    except OSError as err:
        sock.close()
        raise UserError(f"--host {host} --port {port}: {(err.strerror or str(err)).lower()}") from None
    return sock
