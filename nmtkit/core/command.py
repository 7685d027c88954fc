"""The one place where an error becomes a line on stderr and an exit status.

Every nmtkit command line (``nmtkit`` and the recipes' helpers) is a click
:class:`Group` or :class:`Command` from here, so they all answer alike:
a :class:`~nmtkit.core.errors.UserError` or a usage error gives one line naming
the command and exit status 2, Ctrl-C exits 130 (SIGTERM 143), a closed pipe 141, and
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, NoReturn

import click

from .console import set_verbosity
from .errors import Interrupted, UserError

USAGE = 2
INTERRUPTED = 130
BROKEN_PIPE = 141


class _Where(UserError):
    """A UserError tagged with the command it came from (``nmtkit train``)."""

    def __init__(self, where: str, err: UserError):
        super().__init__(str(err))
        self.where = where


class _ClosedPipe(Exception):
    """The reader of stdout went away (``| head -1``): not an OSError, which click would turn
    into exit status 1 before :meth:`_OneLine.main` saw it."""


class _OneLine:
    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[misc,no-any-return]
        except BrokenPipeError:  # --help and --version write while the arguments are read
            raise _ClosedPipe() from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except BrokenPipeError:
            raise _ClosedPipe() from None
        except _Where:
            raise
        except UserError as err:
            raise _Where(ctx.command_path, err) from None

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prog_name = prog_name or self.name  # type: ignore[attr-defined]   # "nmtkit", not "python -m nmtkit"
        set_verbosity()  # -q and -v hold for this invocation only
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)  # type: ignore[misc]
        _buffer_stdout()
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)  # type: ignore[misc]
        except _Where as err:
            _fail(f"{err.where}: error: {err}", USAGE)
        except UserError as err:
            _fail(f"{prog_name}: error: {err}", USAGE)
        except click.UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else prog_name
            _fail(f"{where}: error: {err.format_message()} (see --help)", USAGE)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except Interrupted as err:  # the command has said what it saved
            sys.exit(128 + err.signum)
        except (click.Abort, KeyboardInterrupt):
            _fail("interrupted", INTERRUPTED)
        except (BrokenPipeError, _ClosedPipe):
            _quiet_exit_on_closed_pipe()
        try:
            sys.stdout.flush()  # what is still buffered: the reader may be gone by now
        except BrokenPipeError:
            _quiet_exit_on_closed_pipe()
        sys.exit(rv if isinstance(rv, int) else 0)


class Command(_OneLine, click.Command):
    pass


class Group(_OneLine, click.Group):
    command_class = Command
    group_class = type


def _buffer_stdout() -> None:
    """Under PYTHONUNBUFFERED (``python -u``, many containers) stdout writes straight to its file,
    and a write cut short (the reader of a pipe leaving in its middle) loses the rest without an
    error: the command ended 0 as if it had written everything. A buffered writer writes the rest,
    and meets the closed pipe; flushed at every line, output still appears as it is written."""
    stdout = sys.stdout
    raw, encoding, errors = getattr(stdout, "buffer", None), stdout.encoding, stdout.errors
    if stdout is sys.__stdout__ and isinstance(raw, io.RawIOBase):  # kept alive there: raw stays open
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding, errors, line_buffering=True)


def _quiet_exit_on_closed_pipe() -> NoReturn:
    """Exit 141 (128 + SIGPIPE) without a word, as a filter killed by SIGPIPE does: what stdout
    still buffers goes to /dev/null, so that flushing it at exit cannot fail again (Python would
    then print an 'Exception ignored' line and exit 120)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(BROKEN_PIPE)


def _fail(line: str, status: int) -> NoReturn:
    click.echo(line, err=True)
    sys.exit(status)
