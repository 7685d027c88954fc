"""``nmtkit train --tensorboard DIR``: every entry of ``metrics.jsonl`` as TensorBoard scalars
too, each at its update, under the key it has in the log.

An optional extra: torch writes the event files (:mod:`torch.utils.tensorboard`) but needs the
``tensorboard`` package for their format, which training itself never does. Rank 0 alone writes,
as it alone writes ``metrics.jsonl``. The directory is a run setting, not a model's: it is kept in
no checkpoint, so a resumed run may write elsewhere, or nowhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.extras import install_command
from ..core.files import writing_into


def require(log_dir: Path) -> None:
    """Refuse --tensorboard in one line, before any work, where its package is missing or its
    directory cannot be made (every process checks: either would otherwise stop rank 0 alone, at
    its first log line, the others waiting)."""
    try:
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        raise UserError(f"--tensorboard needs the tensorboard package: {install_command('tensorboard')}") from None
    with writing_into(log_dir):
        log_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(log_dir, os.W_OK | os.X_OK):
        raise UserError(f"--tensorboard {log_dir}: cannot be written (permission denied)")


class Board:
    """The run's event file in ``log_dir`` (None: no --tensorboard, nothing written), closed,
    and so flushed, on leaving the ``with`` block: at the end, at a signal, at an error.

    A run resumed at update ``step`` hides the scalars an earlier run logged after it, as
    ``metrics.jsonl`` forgets their lines: the resumed run logs those updates again."""

    def __init__(self, log_dir: Path | None = None, step: int = 0):
        self.writer: Any = None
        if log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # here: only a run that writes loads it

            self.writer = SummaryWriter(str(log_dir), purge_step=step + 1 if step else None)

    def add(self, entry: dict[str, Any]) -> None:
        """One line of metrics.jsonl: its numbers, at its update."""
        if self.writer is None:
            return
        for key, value in entry.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                self.writer.add_scalar(key, value, entry["step"])

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *_: Any) -> None:
        if self.writer is not None:
            self.writer.close()
