"""The one place where an error becomes a line on stderr and an exit status.

Every nmtkit command line (``nmtkit`` and the recipes' helpers) is a click
:class:`Group` or :class:`Command` from here, so they all answer alike:
a :class:`~nmtkit.core.errors.UserError`, a usage error or a path the system refuses (a file
where a directory must be, no permission, a full disk) gives one line naming the command and exit
status 2, Ctrl-C exits 130 (SIGTERM 143), a closed pipe 141, and
anything else is a bug and keeps its traceback.

A :class:`LazyGroup` imports each of its commands from a module of its own, only when that command
runs or shows its help: the group's --help and the completion of a command's name read a table of
names and summaries instead, and load no command's libraries.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import re
import sys
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from gettext import gettext as _
from pathlib import Path
from typing import Any, NoReturn, cast

import click
from click.shell_completion import CompletionItem

from .console import discard, forget_speaker, set_verbosity, signed, speaking_as, stderr_as_found
from .errors import Interrupted, JobFailed, UserError
from .files import USER_PATH_ERRORS
from .stops import Terminated, decided_in_own_process, ended_by, stop_decided, stops_raise
from .wording import one_line

FAILED = 1
USAGE = 2
INTERRUPTED = 130
BROKEN_PIPE = 141


class _Where(UserError):
    """A UserError tagged with the command it came from (``nmtkit train``)."""

    def __init__(self, where: str, err: UserError):
        super().__init__(str(err))
        self.where = where


class _CtrlC(BaseException):
    """Ctrl-C in a command: not a KeyboardInterrupt, on which click writes an empty line to stderr
    before :meth:`_OneLine.main` says its one."""


_ALLOCATE = re.compile(r"[Tt]ried to allocate (\d+) bytes|[Tt]ried to allocate ([\d.]+ [KMGT]iB)")


def _out_of_memory(err: RuntimeError) -> UserError | None:
    """The line for torch's failure to allocate a tensor, on a GPU or a CPU, whose size a command's
    options choose (None: another error, whose traceback a defect needs)."""
    text = str(err)
    if type(err).__name__ != "OutOfMemoryError" and "DefaultCPUAllocator: can't allocate memory" not in text:
        return None
    found = _ALLOCATE.search(text)
    size = "" if found is None else f" ({found[2] or f'{int(found[1]) / 2**30:.2f} GiB'} more asked)"
    where = "GPU memory" if "CUDA" in text else "memory"
    return UserError(f"out of {where}{size}: ask for less at once (a smaller batch, beam or model)")


class _ClosedPipe(Exception):
    """The reader of stdout went away (``| head -1``): not an OSError, which click would turn
    into exit status 1 before :meth:`_OneLine.main` saw it."""


def _path_error(err: OSError) -> UserError:
    what = (err.strerror or str(err)).lower()
    return UserError(f"{err.filename}: {what}" if err.filename is not None else what)


_ONE_DASH_WORD = re.compile(r"-[A-Za-z][A-Za-z_]{2,}")


def _one_dash_word(command: click.Command, args: list[str]) -> str | None:
    """Why an argument such as OpenNMT-py's ``-model`` or ``-beam_size`` is refused: click would
    read it as ``-m odel``, or as an unknown ``-b``. A short option with its value attached
    (``-len``, ``-l en``) and the value of an option (``--name -base``) stay as they are."""
    opts = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    valued = {o for p in command.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
    after_option = False
    for arg in args:
        if arg == "--":
            break
        if after_option or not isinstance(arg, str):  # a caller's list may hold numbers
            after_option = False
            continue
        after_option = arg in valued
        if _ONE_DASH_WORD.fullmatch(arg):
            long = "--" + arg[1:].replace("_", "-")
            if long in opts:
                return f"{arg}: a word option takes two dashes: {long}"
            if arg[:2] not in opts:
                return f"{arg}: a word option takes two dashes"
    return None


class _OneLine:
    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        command = cast(click.Command, self)
        if not isinstance(command, click.Group) and (why := _one_dash_word(command, args)):
            raise click.UsageError(why, click.Context(command, info_name=info_name, parent=parent))
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[misc,no-any-return]
        except BrokenPipeError:  # --help and --version write while the arguments are read
            raise _ClosedPipe() from None
        except OSError as err:  # the same, to a full disk (a help longer than stdout's buffer)
            if err.errno not in USER_PATH_ERRORS:
                raise
            raise _path_error(err) from None
        except click.UsageError as err:
            if err.ctx is None:  # click's parser gives none for an option without its value: name the command
                err.ctx = click.Context(command, info_name=info_name, parent=parent)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            if isinstance(self, click.Group):
                return super().invoke(ctx)  # type: ignore[misc]
            with speaking_as(ctx.command_path):
                return super().invoke(ctx)  # type: ignore[misc]
        except BrokenPipeError:
            raise _ClosedPipe() from None
        except _Where:
            raise
        except UserError as err:
            raise _Where(ctx.command_path, err) from None
        except JobFailed as err:
            err.where = err.where or ctx.command_path
            raise
        except OSError as err:
            if err.errno not in USER_PATH_ERRORS:
                raise
            raise _Where(ctx.command_path, _path_error(err)) from None
        except KeyboardInterrupt:
            raise _CtrlC() from None
        except RuntimeError as err:
            if (oom := _out_of_memory(err)) is None:
                raise
            raise _Where(ctx.command_path, oom) from None

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prog_name = prog_name or self.name  # type: ignore[attr-defined]   # "nmtkit", not "python -m nmtkit"
        stderr_as_found()
        forget_speaker()
        if not standalone_mode:
            with _verbosity_of_this_invocation():
                return super().main(args, prog_name, complete_var, standalone_mode, **extra)  # type: ignore[misc]
        _buffer_stdout()
        with _verbosity_of_this_invocation(), stops_raise():
            try:
                rv = super().main(args, prog_name, complete_var, False, **extra)  # type: ignore[misc]
            except _Where as err:
                _fail(f"{err.where}: error: {err}", USAGE)
            except UserError as err:
                _fail(f"{prog_name}: error: {err}", USAGE)
            except JobFailed as err:
                _fail(f"{err.where or prog_name}: error: {err}", FAILED)
            except click.exceptions.NoArgsIsHelpError as err:  # plain 'nmtkit': its help, not an error line
                click.echo(err.format_message(), err=True)
                _exit(USAGE)
            except click.UsageError as err:
                where = err.ctx.command_path if err.ctx is not None else prog_name
                _fail(f"{where}: error: {_from_a_file(err) or err.format_message()} (see --help)", USAGE)
            except click.ClickException as err:
                err.show()
                _exit(err.exit_code)
            except Interrupted as err:  # the command has said what it saved
                stop_decided()
                _exit(128 + err.signum, err.abandon)
            except (click.Abort, KeyboardInterrupt, _CtrlC):
                stop_decided()
                _fail(signed("interrupted"), INTERRUPTED)
            except Terminated as err:
                _stopped(err.signum)
            except (BrokenPipeError, _ClosedPipe):
                _quiet_exit_on_closed_pipe()
            _flush_results(prog_name)
            _exit(rv if isinstance(rv, int) else 0)


GIVEN_IN = "nmtkit.given_in"  # ctx.meta's key: each option a --config file gave, and where (cli.config_file)


@contextlib.contextmanager
def _verbosity_of_this_invocation() -> Iterator[None]:
    """-q and -v hold for this invocation only: a library call after a command run in the same
    process (a test's, a notebook's) logged nothing after a -q."""
    set_verbosity()
    try:
        yield
    finally:
        set_verbosity()


def _from_a_file(err: click.UsageError) -> str | None:
    """A value a --config file gave, refused by click's own check (a bound), said of the file and
    its key as the file's other refusals are (cli.config_file); None for the command line's."""
    param, ctx = getattr(err, "param", None), err.ctx
    if param is None or ctx is None or ctx.get_parameter_source(param.name) != click.core.ParameterSource.DEFAULT_MAP:
        return None
    given = ctx.meta.get(GIVEN_IN, {}).get(param.name)
    return None if given is None else f"{given}: {err.message}"


class Command(_OneLine, click.Command):
    pass


class Group(_OneLine, click.Group):
    command_class = Command
    group_class = type


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, each imported the first time it is asked for: from the module
    ``package.NAME`` (``-`` in the name as ``_``), whose attribute of that name it is. Listing the
    names, or asking whether one is there, imports nothing."""

    def __init__(self, package: str, names: Iterable[str]):
        self.package = package
        self._commands: dict[str, click.Command | None] = dict.fromkeys(names)

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]
        if command is None:
            command = self._commands[name] = self.load(name)
        return command

    def load(self, name: str) -> click.Command:
        attribute = name.replace("-", "_")
        module = importlib.import_module(f"{self.package}.{attribute}")
        command = getattr(module, attribute, None)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module.__name__} has no click command {attribute}")
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


class LazyGroup(Group):
    """A :class:`Group` of :class:`LazyCommands` from ``package``, in the order of ``names``. Its
    --help and the completion of command names show each command's short help read from the
    docstring of the command's function in its source file, without importing it: the docstring
    stays the one text of the command's help. Read when the list is shown, not on every run;
    where the source is not on disk (a zipped install), the command is imported instead. Commands
    added later (:meth:`add_command`) show their own."""

    def __init__(self, name: str | None = None, *, package: str, names: Sequence[str], **attrs: Any):
        super().__init__(name, commands=LazyCommands(package, names), **attrs)
        self.package = package
        self.listed = tuple(names)

    def summary(self, name: str) -> str:
        """The help of the command ``name``: its function's docstring, from its source."""
        doc = _docstring(self.package, name)
        return doc if doc is not None else inspect.cleandoc(self.commands[name].help or "")

    def summary_of(self, name: str, limit: int = 45) -> str:
        """What the command's own ``get_short_help_str(limit)`` says, read from its summary."""
        if name in self.listed:
            return click.Command(name, help=self.summary(name)).get_short_help_str(limit)
        return self.commands[name].get_short_help_str(limit)

    def _shown(self, ctx: click.Context, start: str = "") -> list[str]:
        return [
            n
            for n in self.list_commands(ctx)
            if n.startswith(start) and (n in self.listed or not self.commands[n].hidden)
        ]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of commands, from the summaries."""
        names = self._shown(ctx)
        if names:
            limit = formatter.width - 6 - max(len(n) for n in names)
            with formatter.section(_("Commands")):
                formatter.write_dl([(n, self.summary_of(n, limit)) for n in names])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """click's completions of a command's name (with its summary) or of the group's options."""
        names = [CompletionItem(n, help=self.summary_of(n)) for n in self._shown(ctx, incomplete)]
        return names + click.Command.shell_complete(self, ctx, incomplete)


def _buffer_stdout() -> None:
    """Under PYTHONUNBUFFERED (``python -u``, many containers) stdout writes straight to its file,
    and a write cut short (the reader of a pipe leaving in its middle) loses the rest without an
    error: the command ended 0 as if it had written everything. A buffered writer writes the rest,
    and meets the closed pipe; flushed at every line, output still appears as it is written.

    stdout is UTF-8 whatever the locale says, as every input is read and every -o file written:
    under a Latin-1 or ASCII locale (or PYTHONIOENCODING) it would write another encoding than
    -o's, and fail with a traceback at the first character that encoding lacks (French's œ)."""
    stdout = sys.stdout
    if stdout is None:  # started with stdout closed (>&-): what is written there fails as it is written
        sys.stdout = _ClosedStdout()
        return
    buffer, errors = getattr(stdout, "buffer", None), stdout.errors
    if stdout is not sys.__stdout__:  # a caller's stream (a test's, a notebook's): theirs to set
        return
    raw = buffer if isinstance(buffer, io.RawIOBase) else getattr(buffer, "raw", None)
    if isinstance(stdout, io.TextIOWrapper) and isinstance(raw, io.RawIOBase):
        lines = stdout.line_buffering or raw is buffer
        named = io.BufferedWriter(_NamedStdout(raw))
        sys.stdout = io.TextIOWrapper(named, "utf-8", errors, line_buffering=lines)
        sys.stdout.mode = stdout.mode  # type: ignore[misc]  # as open() sets it ('w'); name is raw's


class _NamedStdout(io.RawIOBase):
    """stdout's file, whose errors name it: a full disk (``> /dev/full``) says "stdout: no space
    left on device", where the system's error names no file and the line could be an -o file's.
    Closing it leaves the file open: sys.__stdout__ still holds it."""

    def __init__(self, raw: io.RawIOBase) -> None:
        super().__init__()
        self._raw = raw

    def write(self, b: Any) -> int | None:
        try:
            return self._raw.write(b)
        except OSError as err:
            if err.filename is None:
                err.filename = "stdout"
            raise

    @property
    def name(self) -> Any:
        return self._raw.name  # type: ignore[attr-defined]  # '<stdout>'

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def isatty(self) -> bool:
        return self._raw.isatty()


def _quiet_exit_on_closed_pipe() -> NoReturn:
    """Exit 141 (128 + SIGPIPE) without a word, as a filter killed by SIGPIPE does: what stdout
    still buffers goes to /dev/null, so that flushing it at exit cannot fail again (Python would
    then print an 'Exception ignored' line and exit 120)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(BROKEN_PIPE)


def _flush_results(prog_name: str) -> None:
    """What stdout still buffers, at the end: its reader may be gone by now, or its disk full."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit_on_closed_pipe()
    except OSError as err:  # /dev/full, met by the last of a buffered output
        if err.errno not in USER_PATH_ERRORS:
            raise
        _fail(f"{prog_name}: error: {_path_error(err)}", USAGE)


def _stopped(signum: int) -> NoReturn:
    _fail(signed(ended_by(signum)), 128 + signum)


def _fail(line: str, status: int) -> NoReturn:
    try:
        click.echo(one_line(line), err=True)
    except OSError:  # stderr's reader gone (2>&1 | true): the status still says it
        discard(2)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a full disk (/dev/full): the exit's own flush would say it again
        discard(1)
    _exit(status)


class _ClosedStdout(io.TextIOBase):
    """stdout where the command was started without one: a write is an error of the command's."""

    def write(self, s: str) -> int:
        raise UserError("stdout is closed (>&-): give the results a file, or let them go to /dev/null")


def _exit(status: int, abandon: bool = False) -> NoReturn:
    """Exit with ``status``; a process that has joined a process group (one of torchrun's) leaves at
    once, its streams flushed, before the interpreter's teardown. DDP keeps the gloo group alive past
    ``destroy_process_group`` (torch 2.13: its worker threads and, on rank 0, the store's), and their
    destruction while the interpreter ends can abort the process ("terminate called without an
    active exception", SIGABRT) after it has said how it ended. So does one asked to ``abandon``
    the work its threads still do (serve's model thread, stopped in a search): the interpreter would
    wait for them. So does the process of a command that a stop signal ended (:func:`stop_decided`)."""
    distributed = sys.modules.get("nmtkit.core.distributed")
    if abandon or (distributed is not None and distributed.joined()) or decided_in_own_process():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a reader gone: nothing more to say to it
                stream.flush()
        os._exit(status)
    sys.exit(status)


def _docstring(package: str, name: str) -> str | None:
    """The docstring of the function ``name`` (``-`` as ``_``) in the module ``package.name``,
    read from its source (a millisecond or two: the module's imports are not run); None where
    the source cannot be read."""
    attribute = name.replace("-", "_")
    spec = importlib.util.find_spec(f"{package}.{attribute}")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except OSError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attribute), None)
    return None if fn is None else ast.get_docstring(fn) or ""
