"""All human-facing output of nmtkit goes through here, to stderr.

Results go to stdout (written by the commands themselves), so every command
can sit in a pipe; logs, tables and progress bars go to stderr through one
rich Console.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleRenderable
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


def discard(*fds: int) -> None:
    """``fds`` pointed at /dev/null: what is written to them from then on is dropped, where their
    reader (a pipe's, a closed terminal) is gone and a write would fail."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)


def off_the_terminal() -> None:
    """stdout and stderr discarded where they are the terminal that hung up (SIGHUP): a line
    written to it fails (EIO), and the last line would end the command as a failure. A file or a
    pipe keeps them (``2> train.log``, ``nohup``'s nohup.out)."""
    discard(*(fd for fd in (1, 2) if _is_device(fd)))


def _is_device(fd: int) -> bool:
    try:
        return stat.S_ISCHR(os.fstat(fd).st_mode)
    except OSError:
        return False


class _Log(Console):
    """The rich Console onto stderr. A reader of stderr that has gone (``train 2>&1 | head``) ends
    no work by itself (rich's default is to exit with status 1, the work unsaved): stderr is
    discarded from then on, and the work that asked (train's stop flag, :func:`when_stderr_lost`)
    is told, as a writer is by SIGPIPE."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """As rich prints; into a log file or a pipe, a table as wide as it needs: 80 columns, rich's
        width where there is no terminal, cut preprocess's headers (``test.…``)."""
        if self.is_terminal or not any(isinstance(o, ConsoleRenderable) for o in objects):
            super().print(*objects, **kwargs)
            return
        with as_wide_as_needed(self, objects):
            super().print(*objects, **kwargs)

    def on_broken_pipe(self) -> None:
        global _gone
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor (a test's)
            discard(self.file.fileno())
        _gone = True
        for hook in list(_lost):
            hook()


_lost: list[Callable[[], None]] = []  # told when stderr's reader has gone
_gone = False  # a line found it gone: discarded since, so no later line finds it


def stderr_as_found() -> None:
    """A command's start: stderr's reader is taken to be there, whatever an earlier command in this
    process met (a test's, a notebook's)."""
    global _gone
    _gone = False


@contextlib.contextmanager
def when_stderr_lost(hook: Callable[[], None]) -> Iterator[None]:
    """``hook`` called, within the block, once a line to stderr finds its reader gone, or at once
    where one has already (``train 2>&1 | head -0``: its first line, before the block, found it so,
    and the run went on for good, unheard)."""
    _lost.append(hook)
    try:
        if _gone:
            hook()
        yield
    finally:
        _lost.remove(hook)


console = _Log(stderr=True, highlight=False, soft_wrap=True, emoji=False)  # a name's :fire: is no 🔥


_verbose = False


def redraws() -> bool:
    """Whether stderr is a terminal a bar can redraw in place. rich also takes FORCE_COLOR (which
    CI services set for colours) for a terminal, and a bar's redraws, several a second, would
    fill the log file stderr goes to."""
    try:
        return console.is_terminal and os.isatty(console.file.fileno())
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (a test's)
        return False


class Results(Console):
    """A rich Console onto stdout, for results (``nmtkit info``'s tables): a closed pipe raises
    BrokenPipeError, which ends the command quietly with 141 as any other output does, where rich's
    own answer is exit status 1, as if the command had failed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"emoji": False, **kwargs})
        self.fitted = not self.is_terminal and "width" not in kwargs  # a file or a pipe: no width to fit

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """As rich prints; into a file or a pipe, each object as wide as it needs (a table's headers
        were cut to 80 columns: ``valid.…``), without the spaces that pad a line to the width."""
        if not self.fitted:
            super().print(*objects, **kwargs)
            return
        with as_wide_as_needed(self, objects), self.capture() as captured:
            super().print(*objects, **kwargs)
        self.file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))


@contextlib.contextmanager
def as_wide_as_needed(out: Console, objects: tuple[Any, ...]) -> Iterator[None]:
    """``out`` as wide as the widest of ``objects`` needs, within the block (rich caps a print's
    width at the console's, 80 columns where it is no terminal)."""
    wide = out.options.update_width(_UNCUT)
    need = max((Measurement.get(out, wide, o).maximum for o in objects if isinstance(o, ConsoleRenderable)), default=0)
    previous = out._width  # None: the terminal's or $COLUMNS, as rich finds it at each print
    out.width = max(need, out.width)
    try:
        yield
    finally:
        out._width = previous


_UNCUT = 10_000  # columns: what a renderable that would take any width (a rule, a panel) is given


def set_verbosity(quiet: bool = False, verbose: bool = False) -> None:
    """-q: nothing on stderr but errors; -v: also the details (:func:`debug`)."""
    global _verbose
    console.quiet, _verbose = quiet, verbose and not quiet


def verbose() -> bool:
    """Whether -v asked for the details."""
    return _verbose


# The commands running ("nmtkit translate"), the last one's name kept after it stops: in a pipe of
# three, a warning or a stop line ("interrupted") names its stage, as an error line does. A library
# call's warnings are as written.
_speakers: list[str] = []
_last_speaker: list[str] = []


@contextlib.contextmanager
def speaking_as(command_path: str) -> Iterator[None]:
    _speakers.append(command_path)
    _last_speaker[:] = [command_path]
    try:
        yield
    finally:
        _speakers.pop()


def forget_speaker() -> None:
    """A new invocation: no command has run in it yet."""
    _last_speaker.clear()


def signed(line: str) -> str:
    """``line`` after the name of the command that runs, or last ran (its stop line), if any."""
    who = (_speakers or _last_speaker)[-1:]
    return f"{who[0]}: {line}" if who else line


def log(message: str) -> None:
    """``message`` on stderr as it is (a warning after the name of the command that runs): it
    names files, and rich read ``q[/b]avg.pt`` as markup (a traceback after the work) and
    ``corpus[v2].fr`` as ``corpus.fr``."""
    if _speakers and message.startswith("warning: "):
        message = signed(message)
    console.print(message, markup=False)


def debug(message: str) -> None:
    """A detail shown with -v only."""
    if _verbose:
        console.print(message, markup=False, style="dim")


class _Rate(ProgressColumn):
    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} {self.unit}/s" if speed else "")


def progress(unit: str = "lines") -> Progress:
    """A bar with counts, rate, elapsed time and ETA on stderr; drawn only on a terminal,
    so that logs and pipes get the result lines without bar snapshots."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),  # a file's name (a download's)
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not redraws(),
    )


class TrainProgress:
    """Training's live line on a terminal: a bar toward the budget (updates, seconds or none)
    with update, epoch, loss, speed and ETA. Elsewhere (a log file, CI) each report is a
    plain line instead. Validation results are always printed as lines."""

    def __init__(self, total: float | None, unit: str, disable: bool = False):
        self.unit, self.disable = unit, disable
        self.live = not disable and redraws()
        self.bar = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not self.live,
        )
        self.task = self.bar.add_task("train", total=total, stats="")

    def __enter__(self) -> TrainProgress:
        self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.bar.stop()

    def update(self, completed: float) -> None:
        self.bar.update(self.task, completed=completed)

    def show(self, step: int, epoch: int, entry: dict[str, float]) -> None:
        stats = (
            f"update {step:,}  epoch {epoch}  nll/tok {entry['train_nll_token']:.3f}  "
            f"{entry['tgt_tokens_per_s']:,.0f} tok/s  {entry['updates_per_s']:.2f} upd/s"
            + (f"  align ce {entry['train_align_ce']:.3f}" if "train_align_ce" in entry else "")
        )
        if self.live:
            self.bar.update(self.task, stats=stats)
        elif not self.disable:
            log(stats.replace("nll/tok", f"nll/sent {entry['train_nll']:.2f}  nll/tok"))

    def validated(self, step: int, metrics: dict[str, float]) -> None:
        if not self.disable:
            log(f"validation at update {step:,}  " + "  ".join(f"{k} {v:.3f}" for k, v in metrics.items()))


def short_names(paths: list[str]) -> list[str]:
    """The paths as a table's columns or a legend name them: each by its file name, or by as many
    of its last parts as tell it from the others (a/test.hyp.fr and b/test.hyp.fr)."""
    parts = [Path(p).parts or (p,) for p in paths]
    for k in range(1, max((len(x) for x in parts), default=1) + 1):
        names = ["/".join(x[-k:]) for x in parts]
        if len(set(names)) == len(names):
            return names
    return list(paths)
