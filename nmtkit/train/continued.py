"""The settings of a run that goes on from a checkpoint, resumed from ``SAVE_DIR/last.pt`` or
started from ``--init-from``'s weights: the checkpoint's model, which the command must describe
but for the dropouts, and the command's training settings but for the batches' when it resumes;
and the lines that say what the command changes or does not take."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from ..checkpoint import Checkpoint
from ..core.console import log
from ..core.errors import UserError
from ..core.settings import declared, declared_names, flag_of
from ..models.config import ModelConfig, RNNSearchConfig
from .config import BUDGETED, TrainConfig

# Fields a training command derives from its corpus and --max-len, rather than from model flags.
_DERIVED = ("src_vocab", "tgt_vocab", "max_src")
# Settings a resumed run keeps from its checkpoint, whatever the flags say: they fix the batches.
_KEPT_ON_RESUME = ("seed", "batch_size", "pool", "max_len", "max_tokens", "update_freq")


def started_from(
    init: Checkpoint, model_cfg: ModelConfig, cfg: TrainConfig, says: bool, typed: Collection[str] | None
) -> ModelConfig:
    """The model of a run from --init-from's weights: the checkpoint's (with a head for
    --head-only), which the command must describe, and the dropouts typed."""
    found = with_head(init.model) if cfg.head_only else init.model
    where = str(cfg.init_from)
    remedy = f"give the model flags it was trained with, or none ('nmtkit info {where}' lists them)"
    model = _described(found, model_cfg, where, remedy, typed)
    if says and model != found:
        log(f"fine-tuning with {_changes(found, model)}")
    return model


def resumed(
    ckpt: Checkpoint, model_cfg: ModelConfig, cfg: TrainConfig, last: Path, says: bool, typed: Collection[str] | None
) -> tuple[ModelConfig, TrainConfig, list[str]]:
    """The model and training settings of the run resumed from ``last``: its model, which the
    command must describe, and the command's training settings but for the batches' (its own);
    with ``says``, the lines that name what this command changes or does not take."""
    remedy = "give the model flags it was trained with, or none, --reset to start over, or another --save-dir"
    model = _described(ckpt.model, model_cfg, str(last), remedy, typed)
    old = ckpt.training.config
    if cfg.optimizer != old.optimizer:  # its saved state is another optimizer's
        raise UserError(
            f"--optimizer {cfg.optimizer}: the run in {last} trained with {old.optimizer} and holds its state; "
            f"give --optimizer {old.optimizer} (or the --schedule it trained with), or start {cfg.optimizer} "
            f"from its weights with --init-from {last} and another --save-dir"
        )
    if cfg.head_only != old.head_only:  # the optimizer's parameters would be others
        raise UserError(
            f"--head-only: the run in {last} trained {'its head alone' if old.head_only else 'the whole model'}; "
            f"start the other from its weights with --init-from {last} and another --save-dir"
        )
    said = (_batches_kept(cfg, old, last, typed), _changed(cfg, old, last, ckpt.model, model)) if says else ()
    kept = TrainConfig(**{**cfg.to_dict(), **{k: getattr(old, k) for k in _KEPT_ON_RESUME}})
    return model, kept, [line for line in said if line]


def _batches_kept(cfg: TrainConfig, old: TrainConfig, last: Path, typed: Collection[str] | None) -> str | None:
    """Name the batch settings chosen for this run (``typed``; None: those other than the default)
    that the resumed run does not take."""
    default = TrainConfig()
    chosen = typed if typed is not None else [k for k in _KEPT_ON_RESUME if getattr(cfg, k) != getattr(default, k)]
    ignored = [k for k in _KEPT_ON_RESUME if k in chosen and getattr(cfg, k) != getattr(old, k)]
    if not ignored:
        return None
    flag = {k: flag_of(k, declared(TrainConfig, k)[1]) for k in ignored}
    return (
        f"{', '.join(f'{flag[k]} {getattr(cfg, k)}' for k in ignored)} not used: the run in {last} keeps "
        f"its batches ({', '.join(f'{flag[k]} {getattr(old, k)}' for k in ignored)}; --reset starts over)"
    )


def _changed(cfg: TrainConfig, old: TrainConfig, last: Path, was: ModelConfig, model: ModelConfig) -> str | None:
    """Name the training settings (and the model's dropouts) in which this command differs from the
    run it resumes, which it goes on with (all but the batches'): a rate, a schedule or a budget
    changed on purpose reads the same in the log as one changed by a mistyped command."""
    changed = [
        f"{_setting(TrainConfig, k, getattr(cfg, k))} (was {_shown(getattr(old, k))})"
        for k in declared_names(TrainConfig)
        if k not in _KEPT_ON_RESUME and getattr(cfg, k) != getattr(old, k)
    ]
    if model != was:
        changed.append(_changes(was, model))
    if not changed:
        return None
    said = f"resuming {last} with this command's {', '.join(changed)}"
    if cfg.lr_decay in BUDGETED and any(getattr(cfg, k) != getattr(old, k) for k in _BUDGETS):
        # the schedule reads the budget, not the rate the last run ended at: a longer one raises it again
        said += f"; --lr-decay {cfg.lr_decay} falls over the new budget, so the rate is that budget's at this point"
    return said


_BUDGETS = ("max_updates", "max_epochs", "max_minutes")


def _changes(was: ModelConfig, model: ModelConfig) -> str:
    """The training-only settings (:data:`ModelConfig.TRAINING_ONLY`) ``model`` changes from ``was``."""
    return ", ".join(
        f"{_setting(type(model), k, getattr(model, k))} (was {_shown(getattr(was, k))})"
        for k in model.TRAINING_ONLY
        if hasattr(model, k) and getattr(model, k) != getattr(was, k)
    )


def _described(
    found: ModelConfig, asked: ModelConfig, where: str, remedy: str, typed: Collection[str] | None
) -> ModelConfig:
    """The model of a run that goes on from the checkpoint model ``found``: the settings of
    ``asked`` named in ``typed`` (every one when None) must be the checkpoint's, or the run is
    refused saying what to do instead, but for the training-only ones (the dropouts), which this
    run may change as they shape training and not the weights; the rest is the checkpoint's. A
    setting named that the checkpoint's family lacks is refused."""
    theirs, ours = found.flat(), asked.flat()
    named = ours.keys() if typed is None else ours.keys() & set(typed)
    if "arch" in named and found.arch != asked.arch:  # not the other family's first setting it lacks
        raise UserError(f"{where} holds a model with --arch {found.arch}, not {asked.arch}: {remedy}")
    foreign = sorted(named - theirs.keys())
    if foreign:
        raise UserError(
            f"--{_flag(foreign[0])}: {where} holds a model with --arch {found.arch}, which has none: {remedy}"
        )
    idle = found.idle().keys() | asked.idle().keys()  # never read: a run from before they were refused
    changes = {k for k in found.TRAINING_ONLY if k in named} if typed is not None else set()
    diff = [k for k in ours if k in named and k not in _DERIVED and k not in idle | changes and theirs[k] != ours[k]]
    if diff:
        k = diff[0]
        raise UserError(
            f"{where} holds a model with --{_flag(k)} {_shown(theirs[k])}, not {_shown(ours[k])}"
            + (f" (and {len(diff) - 1} other difference(s): {', '.join(map(_flag, diff[1:]))})" if diff[1:] else "")
            + f": {remedy}"
        )
    return replace(found, **{k: getattr(asked, k) for k in changes})


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _setting(cls: type, name: str, value: object) -> str:
    flag = flag_of(name, declared(cls, name)[1]).partition("/")[0]
    return f"{flag} {_shown(value)}"


def _shown(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def with_head(model: ModelConfig) -> ModelConfig:
    """``model`` with an alignment head (--head-only may give one to a model trained without)."""
    return replace(model, alignment_head=True) if isinstance(model, RNNSearchConfig) else model
