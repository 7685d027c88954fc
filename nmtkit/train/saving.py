"""What a run keeps on disk at a validation: ``last.pt`` (the whole training state),
``best.pt`` (what translation needs), and the models of ``--keep-validations``,
``--keep-last`` and ``--keep-best``."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from .. import checkpoint
from ..checkpoint import Checkpoint, Progress, TrainingState
from ..data.lexicon import lexicon_of
from . import runlog
from .state import TrainState
from .validate import dev_score


def save(state: TrainState, name: str, rng: list[dict[str, torch.Tensor]], resumable: bool = True) -> None:
    """A resumable file holds the optimizer, batch position and RNGs as well (last.pt); the
    others hold what translation needs (plus the run's settings and progress)."""
    if state.parallel.rank != 0:
        return
    if state.lexicon is None:
        state.lexicon = lexicon_of(state.corpus)        # seconds, once a run
    run = TrainingState(state.cfg, Progress(**vars(state.progress)))
    if resumable:
        run.optimizer, run.batches, run.rng = state.opt.state_dict(), state.batches.state_dict(), rng
    checkpoint.save(state.save_dir / name, Checkpoint(state.model_cfg, state.model.state_dict(), state.sides, run,
                                                      lexicon=state.lexicon))


def save_validated(state: TrainState, improved: bool, rng: list[dict[str, torch.Tensor]]) -> None:
    """The files of one validation, then the pruning of those no longer kept."""
    cfg, step = state.cfg, state.progress.step
    if improved:
        save(state, "best.pt", rng, resumable=False)
    save(state, "last.pt", rng)
    if cfg.keep_validations or cfg.keep_last:
        save(state, f"update-{step}.pt", rng, resumable=False)
    if cfg.keep_best:
        save(state, f"best-{step}.pt", rng, resumable=False)
    _prune(state)


def _step_of(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _prune(state: TrainState) -> None:
    """Keep the ``keep_last`` latest update-N.pt and the ``keep_best`` best best-N.pt."""
    cfg, save_dir = state.cfg, state.save_dir
    if cfg.keep_last:
        for old in sorted(save_dir.glob("update-*.pt"), key=_step_of)[:-cfg.keep_last]:
            old.unlink()
    if cfg.keep_best:
        scores = {e["step"]: dev_score(e, cfg.best_by) for e in runlog.entries(save_dir) if "dev_nll" in e}
        ranked = sorted(save_dir.glob("best-*.pt"), key=lambda p: scores.get(_step_of(p), -math.inf), reverse=True)
        for worse in ranked[cfg.keep_best:]:
            worse.unlink()
