"""All human-facing output of nmtkit goes through here, to stderr.

Results go to stdout (written by the commands themselves), so every command
can sit in a pipe; logs, tables and progress bars go to stderr through one
rich Console.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

console = Console(stderr=True, highlight=False, soft_wrap=True)


def log(message: str) -> None:
    console.print(message)


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
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    _Rate(unit), TimeElapsedColumn(), TimeRemainingColumn(), console=console,
                    disable=not console.is_terminal)
