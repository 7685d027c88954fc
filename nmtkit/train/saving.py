"""What a run keeps on disk at a validation: ``last.pt`` (the whole training state),
``best.pt`` (what translation needs), and the models of ``--keep-validations``,
``--keep-last`` and ``--keep-best``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import time
from pathlib import Path
from typing import IO, Any

import torch

from .. import checkpoint
from ..checkpoint import Checkpoint, Progress, TrainingState
from ..core.console import log
from ..core.errors import UserError
from ..core.files import writing_into
from ..models.build import outside_classes
from . import runlog
from .optimizer import saved_optimizer
from .state import TrainState
from .validate import dev_score

LOCK_POLL_S = 0.2
# how long the lock is found held under a training note before a run is refused: another rank of
# the same job holds it for an instant (its look, or rank 0's before its note is written) while
# the note is still the job before's
REFUSE_AFTER_S = 2.0
# how long a lock held under any other note is waited for in silence: a look's instant is shorter
SAY_WAITING_AFTER_S = 1.0
_JITTER = random.Random()  # its own: training's draws are the checkpoint's to restore


def save(
    state: TrainState,
    name: str,
    rng: list[dict[str, torch.Tensor]],
    window: dict[str, Any] | None = None,
    resumable: bool = True,
) -> None:
    """A resumable file holds the optimizer, batch position and RNGs as well (last.pt), and the
    ``window`` of losses since the last report when it is saved between reports; the others hold
    what translation needs (plus the run's settings and progress)."""
    if state.parallel.rank != 0:
        return
    run = TrainingState(state.cfg, Progress(**vars(state.progress)), run_id=state.run_id)
    if resumable:
        run.optimizer, run.batches, run.rng = saved_optimizer(state.opt), state.batches.state_dict(), rng
        run.corpus_sha256, run.valid_sha256, run.window = state.trained_on, state.validated_on, window
        if state.average is not None:
            run.raw_weights = state.model.state_dict()
    checkpoint.save(
        state.save_dir / name,
        Checkpoint(
            state.model_cfg,
            state.scored.state_dict(),
            state.sides,
            run,
            lexicon=state.lexicon,
            classes=outside_classes(state.model),
        ),
    )


def save_validated(state: TrainState, improved: bool, rng: list[dict[str, torch.Tensor]]) -> None:
    """The files of one validation, then the pruning of those no longer kept."""
    cfg, step = state.cfg, state.progress.step
    if improved:
        save(state, "best.pt", rng, resumable=False)
    if cfg.keep_validations or cfg.keep_last:
        save(state, f"update-{step}.pt", rng, resumable=False)
    if cfg.keep_best:
        save(state, f"best-{step}.pt", rng, resumable=False)
    # last: a kill before it resumes from the last.pt before, whose run writes these files again
    save(state, "last.pt", rng)
    _prune(state)


def _step_of(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _prune(state: TrainState) -> None:
    """Keep the ``keep_last`` latest update-N.pt and the ``keep_best`` best best-N.pt of this run
    (:func:`runlog.kept_models`'s, and the validations its log scores). An earlier run's, which
    --reset leaves, are not its to prune."""
    cfg, save_dir = state.cfg, state.save_dir
    scores = {e["step"]: dev_score(e, cfg.chosen_by) for e in runlog.entries(save_dir) if "dev_nll" in e}
    if cfg.keep_last:
        for old in runlog.kept_models(save_dir)[0][: -cfg.keep_last]:
            old.unlink()
    if cfg.keep_best:
        ours = [p for p in save_dir.glob("best-*.pt") if _step_of(p) in scores]
        # a tie goes to the earlier, as best.pt's does (a later one must beat it): not to glob's order
        for worse in sorted(ours, key=lambda p: (-scores[_step_of(p)], _step_of(p)))[cfg.keep_best :]:
            worse.unlink()


class SaveDirLock:
    """One process writes a save directory at a time. A job stopped by SIGTERM may still be
    writing its last.pt when the next job starts (make and ``timeout`` do not wait for it): the
    next run waits for it before reading last.pt. A run still training there is another matter:
    waiting would hang the second command for hours, so it is refused. The holder says which it
    is in the lock file (its process, host, torchrun job and whether it is stopping). The kernel's
    lock (flock) goes with its holder, so a killed process never leaves the directory locked."""

    NAME = ".writer.lock"

    def __init__(self, save_dir: Path, writes: bool):
        self.path, self.writes = save_dir / self.NAME, writes
        self.held: IO[str] | None = None

    def wait(self) -> None:
        """Before reading last.pt: until no other process writes here (the writer keeps the lock)."""
        if self.path.exists():
            self._take()

    def hold(self) -> None:
        """Before the first write (the writing process alone): keep the others out until the end."""
        if self.writes and self.held is None:
            with writing_into(self.path.parent):
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._take()

    def stopping(self) -> None:
        """A signal asked the holder to stop: the next run may wait for its last save. Called from
        the signal handler: a note that cannot be written (a full disk) must not stop the save."""
        if self.held is not None:
            with contextlib.suppress(OSError):
                self._say("stopping")

    def release(self) -> None:
        if self.held is None:
            return
        # a note or a close that fails (a full disk, NFS's late errors) must not fail a run that ended
        with contextlib.suppress(OSError):
            self._say("ended")
        held, self.held = self.held, None
        with contextlib.suppress(OSError):
            held.close()

    def _say(self, state: str) -> None:
        assert self.held is not None
        self.held.seek(0)
        self.held.truncate()
        self.held.write(json.dumps({**_this_process(), "state": state}) + "\n")
        self.held.flush()

    def _take(self) -> None:
        fh = open(self.path, "a+", encoding="utf-8")
        said, began, training_since = False, time.monotonic(), None
        # polled, not waited for: a rank that does not write, blocked while a stopped job saves,
        # would never wake once its own rank 0 took the lock for the whole run
        while not _locked(fh):
            holder = _holder(self.path)
            if holder.get("job") is not None and holder.get("job") == _this_process()["job"]:
                fh.close()  # this job's rank 0 holds it: another rank reads nothing it writes yet
                return
            now = time.monotonic()
            training = holder.get("state") == "training"
            training_since = (training_since or now) if training else None
            if training_since is not None and now - training_since >= REFUSE_AFTER_S:
                fh.close()
                raise UserError(
                    f"{self.path.parent} is being trained by process {holder.get('pid')} on "
                    f"{holder.get('host')}: wait for it to end, stop it (Ctrl-C or kill: it saves last.pt "
                    f"and this command then resumes it), or give another --save-dir"
                ) from None
            if not said and not training and (holder.get("state") == "stopping" or now - began > SAY_WAITING_AFTER_S):
                log(f"waiting for the process still writing {self.path.parent} (a stopped run saving its last.pt)")
                said = True
            time.sleep(LOCK_POLL_S * _JITTER.uniform(0.5, 1.5))  # ranks started together look apart
        if self.writes:
            # at once, before last.pt is read: the note of the job before would otherwise stand, and
            # this job's other ranks, finding it, would take the directory for another job's
            self.held = fh
            self._say("training")
        else:
            fh.close()


def _locked(fh: IO[str]) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _this_process() -> dict[str, Any]:
    # a torchrun job's ranks share its store's address (no two live jobs can) and its run id (which
    # alone may be "none" or reused): another rank of the same job is never refused nor kept waiting
    store = [os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")]
    job = "/".join(map(str, store)) if store[0] and store[1] else None
    return {"pid": os.getpid(), "host": socket.gethostname(), "job": job}


def _holder(path: Path) -> dict[str, Any]:
    """What the lock's holder wrote of itself; nothing (so: wait) where it wrote nothing readable."""
    try:
        said = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) else {}
