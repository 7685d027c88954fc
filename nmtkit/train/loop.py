"""``nmtkit train``: Appendix B's recipe, read top to bottom.

:func:`train` sets up where the run computes and its state (:mod:`.state`: new,
from ``--init-from``, or resumed exactly), then :func:`run` loops over the
minibatches of :mod:`nmtkit.data.batching`, calling its steps in order:

- the update (:func:`.step.update`): forward and backward over each piece of
  the minibatch (``update_freq`` pieces accumulate), the gradient L2 norm
  clipped, one optimizer step (Adadelta ρ=0.95 ε=1e-6, Adam, or SGD with
  Luong et al.'s halving per epoch); with ``--cuda-graphs``, the same update
  captured once per batch shape and replayed (:mod:`.graphs`).
- :func:`report`: every ``log_every`` updates and before a checkpoint, the
  losses of the window read at once (a GPU waits only then), a line of
  ``metrics.jsonl``, the progress bar.
- :func:`validate_and_save`: every ``valid_every`` updates, dev NLL and greedy
  dev BLEU (:mod:`.validate`), ``best.pt`` when the dev score improves,
  ``last.pt`` always (:mod:`.saving`), and the patience count.

It stops when a budget (updates, epochs, minutes) is spent, after ``patience``
validations without improvement, or at Ctrl-C (after the current update,
``last.pt`` saved). Several processes (torchrun) train with
DistributedDataParallel, each on its share of every minibatch: the loop asks
:class:`~.parts.Parallel`, never branches on the launch itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import Progress
from ..core import distributed
from ..core.console import TrainProgress, debug, log, set_verbosity
from ..core.errors import Interrupted, JobFailed, UserError
from ..core.files import refuse_empty_names
from ..core.plot import training_curves
from ..core.runtime import keeping, setup
from ..core.settings import RuntimeConfig
from ..models.config import ModelConfig
from ..models.fused import use_fused
from . import board, runlog
from .config import BUDGETED, TrainConfig, check_run, ended_in_warmup, warmup_outlasts
from .graphs import updater
from .optimizer import rate_of
from .pace import Pace, describe_batches, stopping_rule
from .parts import CompiledSteps, Parallel, compiled_note
from .saving import SaveDirLock, save, save_validated
from .signals import StopFlag
from .state import TrainState, open_save_dir, start
from .step import lower_on_plateau
from .validate import dev_score, validate
from .window import Diverged, LossWindow
from .window_watch import stuck_message


@keeping
def train(
    data_dir: str | Path,
    save_dir: str | Path,
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    resume: bool = True,
    tensorboard: str | Path | None = None,
    typed: Collection[str] | None = None,
) -> Progress:
    """Train (or resume) a model; with torchrun, as one of its processes.

    What ``nmtkit train DATA_BIN --save-dir SAVE_DIR`` runs once its flags are resolved into
    the two configs (:func:`nmtkit.cli.train_settings.train_settings`).

    Args:
        data_dir: A binarized corpus (:class:`~nmtkit.data.binarized.Corpus`) with train and
            valid splits.
        save_dir: Where ``last.pt``, ``best.pt``, ``metrics.jsonl`` and ``curves.png`` go.
        model_cfg: Architecture and sizes; the vocabulary sizes are taken from the corpus.
        cfg: Optimizer, batches, budgets (``max_updates``, ``max_epochs``, ``max_minutes``),
            validation and where to compute.
        resume: Go on from ``save_dir/last.pt`` when there is one (False: ``--reset``).
        tensorboard: Also write metrics.jsonl's entries there as TensorBoard scalars
            (:mod:`.board`; the ``tensorboard`` extra).
        typed: The settings the caller chose (the command line's flags, by field name), with the
            model settings its command describes (:func:`nmtkit.cli.train_settings.described`). A
            resumed run keeps its batch settings and names those of them it does not take; a run
            from a checkpoint must match the model settings named, and takes the rest from it.
            None: those of ``cfg`` other than the default, and every model setting.

    Returns:
        Where training stopped: updates done, the best dev score, seconds spent.

    Raises:
        UserError: a run the settings cannot make (:func:`~nmtkit.train.config.check_run`), a
            corpus or a ``last.pt`` that does not fit them, a loss that became NaN.
        Interrupted: Ctrl-C or SIGTERM, after ``last.pt`` was saved.
    """
    refuse_empty_names(data_dir=data_dir, save_dir=save_dir, tensorboard=tensorboard)  # as the options do
    data_dir, save_dir = Path(data_dir), Path(save_dir)
    tensorboard = None if tensorboard is None else Path(tensorboard)
    check_run(model_cfg, cfg)
    if tensorboard is not None:
        board.require(tensorboard)
    where = distributed.place()
    if where.rank != 0:  # its logs are rank 0's again; errors still come from every process
        set_verbosity(quiet=True)
    runtime = setup(
        RuntimeConfig(cfg.device, cfg.threads, cfg.bf16, cfg.tf32, logits_blas=cfg.logits_blas),
        where.local_rank,
        where.local_world,
    )
    distributed.start(where, runtime.device)
    ended_well, stopped_by, state = False, 0, None
    lock = SaveDirLock(save_dir, writes=where.rank == 0)
    try:
        lock.wait()
        state = start(data_dir, save_dir, model_cfg, cfg, resume, Parallel(where, runtime), typed)
        says = where.rank == 0
        owed = state.progress.validation_owed
        if (state.finished() or state.patience_spent()) and not owed:  # the same command again changes nothing
            if says:
                log(_nothing_to_do(state))
            progress = state.progress
        else:
            lock.hold()
            for note in state.notes:
                log(note)
            if state.progress.step and says:
                log(
                    f"resuming from {save_dir / 'last.pt'} at update {state.progress.step}, "
                    f"epoch {state.batches.epoch + 1}"
                )
            progress, stopped_by = run(state, tensorboard, on_stop=lock.stopping)
            if says and not stopped_by and (late := ended_in_warmup(state.cfg, progress.step)):
                log(late)
        ended_well = True
    except RuntimeError as err:
        if not distributed.peer_gone(err):
            raise
        raise _peer_gone(where.world, state, resume) from None
    finally:
        lock.release()
        distributed.stop(together=ended_well)
    if stopped_by:  # saved, but not done: what follows in a script or a Makefile must not run
        raise Interrupted(stopped_by)
    return progress


def _past(done: int, limit: int | None) -> str:
    """A budget lowered below what the run has done (--max-updates 60 at update 600)."""
    return f" (it is past it, at {done:,})" if limit and done > limit else ""


def _nothing_to_do(state: TrainState) -> str:
    """What a finished run says when run again: each limit it reached, and what would go on from it."""
    cfg, progress = state.cfg, state.progress
    minutes = (progress.seconds + progress.validation_seconds) / 60
    limits = (
        (
            f"--max-updates {cfg.max_updates}{_past(progress.step, cfg.max_updates)}",
            f"a --max-updates over {progress.step}",
        ),
        (
            f"--max-epochs {cfg.max_epochs}{_past(state.batches.epoch, cfg.max_epochs)}",
            f"a --max-epochs over {state.batches.epoch}",
        ),
        (
            f"--max-minutes {cfg.max_minutes:g} ({progress.seconds / 60:.2f} trained, "
            f"{progress.validation_seconds / 60:.2f} kept for the final validation)",
            f"a --max-minutes over {minutes:.2f}",
        ),
    )
    reached = [limit for limit, spent in zip(limits, state.spent(), strict=True) if spent]
    if state.patience_spent():
        n = progress.bad_evals
        reached.append(
            (
                f"--patience {cfg.patience} ({n} validation{'s' * (n != 1)} without a better dev score)",
                f"a --patience over {n}, or 0",
            )
        )
    return (
        f"{state.save_dir / 'last.pt'} is a finished run, at update {progress.step:,}: it reached "
        f"{' and '.join(r for r, _ in reached)}; to go on from it, {' and '.join(b for _, b in reached)} "
        f"(--reset starts over)"
    )


def run(
    state: TrainState, tensorboard: Path | None = None, on_stop: Callable[[], None] = lambda: None
) -> tuple[Progress, int]:
    """The loop: an update per minibatch, reports, validations, until something stops it.
    Returns where it stopped, and the signal that stopped it (0: a budget or the patience);
    ``on_stop`` is called when a signal asks it to stop."""
    steps, net = CompiledSteps(state.model, state.cfg), state.parallel.wrap(state.model)
    update = updater(state, net, steps)
    for why in use_fused(state.model, state.cfg.fused_steps):
        log(f"warning: --fused-steps does not apply to every recurrence: {why}")
    announce(state)
    open_save_dir(state)
    state.clock = time.perf_counter() - state.progress.seconds
    state.window = LossWindow(state.progress.step + 1)
    if state.carried is not None:  # the losses since the last report, saved with last.pt
        state.window = LossWindow.carried_over(state.carried, state.parallel.rank, state.device)
    pace = Pace(state)
    total, unit = _budget(state.cfg, pace.per_epoch)
    if state.cfg.max_updates or state.cfg.max_epochs:  # counted: the schedule's budget is known
        state.progress.budget = int(total or 0)
    if state.cfg.max_minutes and not state.progress.validation_seconds:
        state.progress.validation_seconds = _validation_estimate(state)  # rank 0's clock decides
    state.model.train()
    writes = tensorboard if state.parallel.rank == 0 else None
    with (
        StopFlag(on_stop) as stop,
        TrainProgress(total, unit, disable=state.parallel.rank != 0) as bar,
        board.Board(writes, state.progress.step) as state.board,
    ):
        bar.update(state.progress.step if unit == "updates" else state.progress.seconds)
        done = state.progress.validation_owed and (
            state.parallel.anyone(stop.requested)  # a stop before it: last.pt still owes it
            or _owed_validation(state, bar, stop)
            or state.parallel.anyone(stop.requested)
        )
        for idx in () if done else state.batches:
            update(idx)
            state.tick()
            pace.tick()
            bar.update(state.progress.step if unit == "updates" else state.progress.seconds)
            if _after_update(state, bar, stop, pace):
                break
    return state.progress, state.parallel.most(stop.signum)  # a signal to any process stopped them all


def _after_update(state: TrainState, bar: TrainProgress, stop: StopFlag, pace: Pace) -> bool:
    """The report, validation and saves an update is due, in order; whether the run stops there."""
    step, cfg = state.progress.step, state.cfg
    reporting, due = step % cfg.log_every == 0, step % cfg.valid_every == 0
    finish = _should_stop(state, stop.requested, reporting)
    saving = not (due or finish) and cfg.save_every and step % cfg.save_every == 0
    rng = state.parallel.rng_states() if due or finish or saving else []  # every rank, the same updates
    # a signal (a job's time limit, Ctrl-C): last.pt at once, the validation left to the resumed
    # run, which a queue's grace period (SLURM: 30 s) would not wait for
    signalled = finish and state.parallel.anyone(stop.requested)  # every rank: a signal to any of them
    # whether a budget is spent too, as rank 0's clock says: each rank's own would part their collectives
    ended = signalled and (state.counted_out() or state.parallel.agree(state.finished()))
    window = None
    if reporting or due or (finish and (not signalled or ended)):  # every rank: a collective
        report(state, bar)
    elif signalled or saving:  # a save between reports: the window goes with it, read as a report reads it
        window = _carried(state)
    if signalled:  # an update that was to validate leaves it to the resumed run, first
        state.progress.validation_owed = due or ended
        if state.parallel.rank == 0:
            with stop.writing():
                save(state, "last.pt", rng, window)
    elif due or finish:
        finish = _validated(state, bar, rng, stop, finish)
    elif saving:
        with stop.writing():
            save(state, "last.pt", rng, window)  # rank 0's; the next validation comes when it would have
        state.last_kept = True
    if due or finish or saving:
        state.window.restart_clock()  # the validation's and the save's seconds are no update's
        pace.leave_out_pause()
    if signalled:
        then = "goes on from there"
        if state.progress.validation_owed:
            then = "validates it, and ends" if ended else "validates it, then goes on"
        log(
            f"interrupted: saved {state.save_dir / 'last.pt'} at update {step} without validating it; "
            f"the same command {then}"
        )
    return finish


def _carried(state: TrainState) -> dict[str, Any] | None:
    try:
        return state.window.carry(state.parallel.world)
    except Diverged as bad:  # no last.pt of a diverged run
        raise diverged(state, bad.what, bad.value, bad.step) from None


def _validated(
    state: TrainState, bar: TrainProgress, rng: list[dict[str, torch.Tensor]], stop: StopFlag, finish: bool
) -> bool:
    """A validation and its saves (rank 0's); whether the run ends there, every process agreeing."""
    finish = state.parallel.agree(validate_and_save(state, bar, rng, stop) or finish)
    state.progress.decays = state.parallel.shared(state.progress.decays)  # rank 0's plateau
    state.last_kept = True  # rank 0 saved last.pt; every process names it alike
    return finish


def _owed_validation(state: TrainState, bar: TrainProgress, stop: StopFlag) -> bool:
    """The validation a signal put off, done as the interrupted run would have done it (the RNG
    states are those it saved); whether the run ends with it (a budget, the patience)."""
    finish = _validated(state, bar, state.parallel.rng_states(), stop, state.finished())
    state.window.restart_clock()
    return finish


def announce(state: TrainState) -> None:
    """What trains, on what, on which batches, and what will stop it."""
    if state.parallel.rank != 0:
        return
    debug(f"model {state.model_cfg.to_dict()}")
    debug(f"training {state.cfg.to_dict()}")
    log(
        f"training {state.model_cfg.arch} ({sum(p.numel() for p in state.model.parameters()):,} parameters) on "
        f"{state.device.type}{compiled_note(state.cfg)}; {describe_batches(state.cfg, state.parallel.world)}"
    )
    if state.batches.too_long:  # preprocess counted words; a BPE data-bin's lengths are subword units
        unit = "subword units" if any(state.corpus.manifest.bpe_codes.values()) else "tokens"
        log(
            f"{state.batches.too_long:,} of {len(state.batches.src_sizes):,} training pairs are longer than "
            f"--max-len {state.cfg.max_len} {unit} on a side: left out (--max-len 0 keeps them)"
        )
    if said := warmup_outlasts(state.cfg):
        log(said)
    log(stopping_rule(state.cfg))  # the start's last line (docs/training.md)


def _peer_gone(world: int, state: TrainState | None, resume: bool) -> JobFailed:
    """The line a process ends with when another of its job has gone, naming what to do next."""
    if state is not None and state.last_kept:
        without = "" if resume else " without --reset"
        then = f"the same command{without} resumes from {state.save_dir / 'last.pt'}"
    else:
        then = "nothing of this run was saved: the same command starts it over"
    return JobFailed(
        f"another process of this {world}-process job has gone (its connection closed under a collective): "
        f"killed, failed or ended early (its own output says why); {then}"
    )


def diverged(state: TrainState, what: str, value: float, step: int) -> UserError:
    last = state.save_dir / "last.pt"
    kept = f"{last} holds the last good state" if state.last_kept else "no checkpoint was saved before it"
    return UserError(f"{what} became {value} at update {step}; {kept} (try a smaller --lr or --clip)")


def report(state: TrainState, bar: TrainProgress) -> None:
    """The window's averages over every process, as a line of metrics.jsonl and on the bar; a
    loss that is not finite stops the run in one line, naming its update."""
    try:
        entry: dict[str, Any] = state.window.close(state.parallel.world)
    except Diverged as bad:
        raise diverged(state, bad.what, bad.value, bad.step) from None
    entry |= {"seconds": state.progress.seconds, "lr": rate_of(state.opt)}
    _estimate_budget(state)
    if state.parallel.many:
        state.parallel.pace(state.progress.seconds / max(state.progress.step, 1))
    if state.device.type == "cuda":  # the allocator's own count: no wait for the GPU
        entry["gpu_peak_mb"] = torch.cuda.max_memory_allocated(state.device) / 2**20
    state.window = LossWindow(state.progress.step + 1)
    _record(state, entry)
    bar.show(state.progress.step, state.batches.drawn_epoch + 1, entry)


def validate_and_save(
    state: TrainState, bar: TrainProgress, rng: list[dict[str, torch.Tensor]], stop: StopFlag
) -> bool:
    """Validate, save, and say whether patience has run out (rank 0 decides; the others wait)."""
    if state.parallel.rank != 0:
        return False
    progress, started, final = state.progress, time.perf_counter(), state.finished()
    metrics = validate(state.scored, state.corpus, state.cfg, state.device, state.sides.vocab["tgt"])
    if not math.isfinite(metrics["dev_nll"]):  # no score is better than it: the run would go on, saving no best
        raise diverged(state, "the dev NLL", metrics["dev_nll"], progress.step)
    _record(state, metrics)
    training_curves(runlog.entries(state.save_dir), state.save_dir / "curves.png")
    took = time.perf_counter() - started  # what the final one will take, about
    # after the final one, the estimate that ended the run stays: a shorter one would leave the
    # budget unspent, and the same command run again would go on
    progress.validation_seconds = max(progress.validation_seconds, took) if final else took
    bar.validated(progress.step, metrics)
    if stuck := stuck_message(metrics):
        log(stuck)
    score = dev_score(metrics, state.cfg.chosen_by)
    # --head-only: the translation model, all the dev score sees, is frozen; the head learns on
    improved = score > progress.best or state.cfg.head_only
    progress.best, progress.bad_evals = (score, 0) if improved else (progress.best, progress.bad_evals + 1)
    progress.validation_owed = False
    lower_on_plateau(state)
    with stop.writing():
        save_validated(state, improved, rng)
    if state.patience_spent():
        log(f"no improvement in {state.cfg.patience} validations: stopping")
        return True
    return False


PROBE_SENTENCES = 16


def _validation_estimate(state: TrainState) -> float:
    """Seconds a validation will take, before any has run (rank 0; 0 elsewhere): one on the
    first PROBE_SENTENCES dev pairs, timed and scaled to the split. The model is untrained, so its
    greedy outputs run to the length limit: an estimate on the long side, corrected by the first
    real validation. Its own time counts toward --max-minutes, as every validation's does."""
    if state.parallel.rank != 0:
        return 0.0
    dev = len(state.corpus.split("valid")[0].sizes)
    wanted = min(dev, state.cfg.valid_max_sentences or dev)
    probe = replace(state.cfg, valid_max_sentences=min(PROBE_SENTENCES, wanted))
    started = time.perf_counter()
    validate(state.scored, state.corpus, probe, state.device, state.sides.vocab["tgt"])
    return (time.perf_counter() - started) * wanted / max(probe.valid_max_sentences, 1)


def _record(state: TrainState, entry: dict[str, Any]) -> None:
    if state.parallel.rank == 0:
        entry = {"step": state.progress.step, "epoch": state.batches.drawn_epoch + 1, **entry}
        runlog.append(state.save_dir, entry)
        state.board.add(entry)


def _should_stop(state: TrainState, interrupted: bool, reporting: bool) -> bool:
    """Whether this update is the last: a budget spent or Ctrl-C. The clock and a signal may differ
    between processes: rank 0's clock decides, a signal to any process stops them all, checked
    about every second (:meth:`Parallel.stopping`); counted budgets agree by themselves."""
    finish = state.finished() or interrupted
    if not state.parallel.many:
        return finish
    return state.counted_out() or state.parallel.stopping(finish, interrupted, state.progress.step, reporting)


def _estimate_budget(state: TrainState) -> None:
    """Under --max-minutes alone, the updates that fit in it at the pace so far (validations
    included), re-estimated at each report and saved with the run: the schedule then reads a
    count, and a resumed run goes on with the estimate it saved. Rank 0's clock decides."""
    cfg, progress = state.cfg, state.progress
    if cfg.lr_decay not in BUDGETED or not cfg.max_minutes or cfg.max_updates or cfg.max_epochs:
        return
    if progress.step >= max(cfg.warmup, 1) and progress.seconds > 0:
        progress.budget = state.parallel.shared(int(progress.step * 60 * cfg.max_minutes / progress.seconds))


def _budget(cfg: TrainConfig, batches_per_epoch: int) -> tuple[float | None, str]:
    """What the progress bar counts toward: updates, minutes or epochs (None: no limit)."""
    if cfg.max_updates:
        return cfg.max_updates, "updates"
    if cfg.max_minutes:
        return cfg.max_minutes * 60, "seconds"
    if cfg.max_epochs:
        return cfg.max_epochs * batches_per_epoch, "updates"
    return None, "updates"
