"""What a training run tells its user at the start: what one update computes on, what will stop
it, and, once the first updates are timed (:class:`Pace`), how long an update and an epoch take
on this machine.

The paper's recipe at the paper's sizes, which is ``nmtkit train``'s default, trains for days
on a CPU with nothing but early stopping to end it; a user should learn that in the first
minute, not the next morning.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..core.console import log
from .config import TrainConfig

if TYPE_CHECKING:
    from .state import TrainState

# Updates timed for the estimate, after the first (which pays for allocation and warm-up).
TIMED_UPDATES = 5


def stopping_rule(cfg: TrainConfig) -> str:
    """What ends the run, in the order the limits are checked."""
    limits = []
    if cfg.max_updates:
        limits.append(f"at update {cfg.max_updates:,}")
    if cfg.max_epochs:
        limits.append(f"after {cfg.max_epochs:,} epoch(s)")
    if cfg.max_minutes:
        limits.append(f"after {cfg.max_minutes:g} minute{'' if cfg.max_minutes == 1 else 's'}")
    if cfg.patience and not cfg.head_only:  # --head-only: the frozen model's dev score never moves
        score = "dev BLEU" if cfg.chosen_by == "bleu" else "dev NLL"
        limits.append(
            f"after {cfg.patience} validations (one every {cfg.valid_every:,} updates) without a better {score}"
        )
    if not limits:
        return (
            "nothing stops this run but Ctrl-C (which saves last.pt): no --max-updates, --max-epochs, "
            "--max-minutes or --patience"
        )
    return "stops " + ", or ".join(limits) + "; Ctrl-C saves last.pt and stops"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def pace_report(
    cfg: TrainConfig, seconds_per_update: float, updates_per_epoch: int, on_cpu: bool, done: int = 0
) -> str:
    """How long an update and an epoch take here, how long the updates left after ``done`` (a
    resumed run's) will, and, for an unbounded run on a CPU, where the CPU recipes are."""
    line = (
        f"an update takes {seconds_per_update:.2f} s here: an epoch of {updates_per_epoch:,} updates "
        f"about {_duration(seconds_per_update * updates_per_epoch)}"
    )
    left = max(0, cfg.max_updates - done)
    if left:  # none left: the line comes with the last update ("update 6 in about 0 s")
        line += f", update {cfg.max_updates:,} in about {_duration(seconds_per_update * left)}"
        line += " (validations and saves aside)"  # a run validates at its last update at least
    bounded = cfg.max_updates or cfg.max_epochs or cfg.max_minutes
    if on_cpu and not bounded:
        line += (
            "; for a CPU, a small model with --max-minutes trains in minutes (the demo's recipe: "
            "--schedule cpu --max-minutes 20)"
        )
    return line


def describe_batches(cfg: TrainConfig, world: int) -> str:
    """What one update computes on, in total and per process: the first line a run logs."""
    unit = f"{cfg.max_tokens:,} target tokens" if cfg.max_tokens else f"{cfg.batch_size} sentences"
    total = (
        f"{cfg.max_tokens * cfg.update_freq:,} target tokens"
        if cfg.max_tokens
        else f"{cfg.batch_size * cfg.update_freq} sentences"
    )
    padded = f"; lengths padded to multiples of {cfg.pad_to_multiple}" if cfg.pad_to_multiple > 1 else ""
    if world == 1 and cfg.update_freq == 1:
        return f"minibatches of {total}{padded}"
    parts = ([f"{world} processes taking 1/{world} each"] if world > 1 else []) + (
        [f"{cfg.update_freq} accumulated passes of {unit}"] if cfg.update_freq > 1 else []
    )
    share = round(cfg.batch_size / world, 1)
    each = "" if cfg.max_tokens or world == 1 else f"; about {share:g} sentences per process and pass"
    return f"minibatches of {total} in total per update ({', '.join(parts)}{each}){padded}"


class Pace:
    """The first update and the next TIMED_UPDATES timed once, to tell the user how long an
    update and an epoch take here."""

    def __init__(self, state: TrainState):
        self.state, self.first, self.started, self.ticked = state, state.progress.step, 0.0, 0.0
        self.per_epoch = len(state.batches.epoch_batches(state.batches.epoch))

    def leave_out_pause(self) -> None:
        """A validation or a save has just run: its seconds, since the last update's tick, are
        left out of the updates' time (a resumed run validates soon)."""
        self.started += time.perf_counter() - self.ticked

    def tick(self) -> None:
        self.ticked = time.perf_counter()
        done = self.state.progress.step - self.first
        if done not in (1, 1 + TIMED_UPDATES) or self.state.parallel.rank != 0:
            return
        self.state.parallel.synchronize()
        if done == 1:
            self.started = time.perf_counter()
        else:
            log(
                pace_report(
                    self.state.cfg,
                    (time.perf_counter() - self.started) / TIMED_UPDATES,
                    self.per_epoch,
                    self.state.device.type == "cpu",
                    self.state.progress.step,
                )
            )
