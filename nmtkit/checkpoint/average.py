"""``nmtkit average``: the mean of several checkpoints' weights, as one checkpoint.

Averaging the last few checkpoints of a run (Junczys-Dowmunt et al. 2016;
fairseq's and Marian's checkpoint averaging) smooths the noise of the last
updates. The checkpoints must describe the same model over the same
vocabularies and text settings (their dropouts may differ); the result keeps
the last one's model and training settings and its progress, without
optimizer state (it translates, it does not resume), the shortlist of the last
that has one, and names the files it is the mean of.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from .. import checkpoint
from ..core.console import log
from ..core.errors import UserError
from . import Averaged, Checkpoint, TrainingState
from .file import check_not_train_s, not_finite


def average(paths: list[str | Path]) -> Checkpoint:
    if len(paths) < 2:
        raise UserError("give at least two checkpoints to average")
    first = checkpoint.load(paths[0])
    _refuse_not_finite(first, paths[0])
    total = {k: v.double() for k, v in first.weights.items()}
    read = [first]
    for path in paths[1:]:
        ckpt = checkpoint.load(path)
        if ckpt.model.weights_alike() != first.model.weights_alike():  # dropouts may differ: the last's are kept
            if ckpt.model.arch != first.model.arch:
                raise UserError(f"{path}: a model of --arch {ckpt.model.arch}, {paths[0]} one of {first.model.arch}")
            theirs, ours = ckpt.model.weights_alike().flat(), first.model.weights_alike().flat()
            diff = sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))
            raise UserError(f"{path}: another model than {paths[0]} (differs in {', '.join(diff)})")
        if ckpt.text != first.text:
            raise UserError(f"{path}: other vocabularies or text settings than {paths[0]}")
        if ckpt.classes != first.classes:
            built = ", ".join(ckpt.classes) or "nmtkit's own"
            raise UserError(f"{path}: a model of other classes than {paths[0]}'s ({built})")
        _refuse_other_shapes(ckpt, path, first, paths[0])
        _refuse_not_finite(ckpt, path)
        run, step = ckpt.training.run_id, ckpt.training.progress.step
        # last.pt beside its update-N.pt, or a copy: one model counted twice
        same = next(
            (j for j, c in enumerate(read) if (c.training.run_id, c.training.progress.step) == (run, step)), None
        )
        if run is not None and same is not None:
            raise UserError(f"{path}: update {step:,} of the run of {paths[same]}, the same weights: give it once")
        if ckpt.training.config.seed != first.training.config.seed:  # a fine-tuned run's may differ and be fine
            log(
                f"warning: {path} was trained from seed {ckpt.training.config.seed}, {paths[0]} from seed "
                f"{first.training.config.seed}: independently trained models' weights do not average into a model "
                "(translate -m A -m B ensembles them); one run's checkpoints, or a run and its fine-tuning, do"
            )
        for k, v in ckpt.weights.items():
            total[k] += v.double()
        read.append(ckpt)
    weights = {k: (v / len(paths)).to(first.weights[k].dtype) for k, v in total.items()}
    # a tied weight (--tie-embeddings), one tensor in the files, stays one: not two copies
    held: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for k, v in first.weights.items():
        where = (v.untyped_storage().data_ptr(), int(v.storage_offset()), tuple(v.shape))
        if v.numel() and where in held:
            weights[k] = weights[held[where]]
        held.setdefault(where, k)
    last = read[-1]
    return Checkpoint(
        last.model,
        weights,
        last.text,
        TrainingState(last.training.config, last.training.progress),
        lexicon=next((c.lexicon for c in reversed(read) if c.lexicon is not None), None),
        averaged=tuple(Averaged(name, c.training.progress.step) for name, c in zip(_names(paths), read, strict=True)),
        classes=first.classes,
    )


def _refuse_other_shapes(ckpt: Checkpoint, path: str | Path, first: Checkpoint, first_path: str | Path) -> None:
    """Refuse, naming the weight, a file whose weights are not the first's names and shapes (a
    damaged file): the mean would fail with a traceback."""
    theirs = {k: tuple(v.shape) for k, v in ckpt.weights.items()}
    ours = {k: tuple(v.shape) for k, v in first.weights.items()}
    if theirs != ours:
        k = sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))[0]
        raise UserError(
            f"{path}: weight {k} is {_shape(theirs.get(k))} where {first_path} has {_shape(ours.get(k))} "
            "(a damaged file)"
        )


def _refuse_not_finite(ckpt: Checkpoint, path: str | Path) -> None:
    """Refuse, naming the weight, a file with a weight that is not finite: the mean would be as
    damaged, and translate refuses it."""
    if (bad := not_finite(ckpt)) is not None:
        raise UserError(f"{path}: weight {bad} is not finite (a damaged file, or a run that diverged)")


def _shape(shape: tuple[int, ...] | None) -> str:
    return "missing" if shape is None else "×".join(map(str, shape)) or "a number"


def _names(paths: list[str | Path]) -> list[str]:
    """The files' names where they tell them apart (a run's update-N.pt), else their paths as given
    (two runs' best.pt)."""
    names = [Path(p).name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


_KEPT = re.compile(r"update-(\d+)\.pt")  # a kept validation's name (not update-final.pt, not last.pt)


def kept_validations(run_dir: Path) -> list[Path]:
    """The kept validations (``update-N.pt``, train's --keep-last and --keep-validations) in a run
    directory, in update order."""
    return sorted((p for p in run_dir.glob("update-*.pt") if _KEPT.fullmatch(p.name)), key=update_of)


def update_of(kept: Path) -> int:
    """update-12.pt → 12."""
    return int(kept.stem.removeprefix("update-"))


def _all_own(run_dir: Path) -> tuple[list[Path], list[Path]]:
    return kept_validations(run_dir), []


def inputs(
    paths: list[str | Path], last: int = 0, kept: Callable[[Path], tuple[list[Path], list[Path]]] = _all_own
) -> list[Path]:
    """The checkpoints to average: each file as given, each directory's ``update-N.pt`` (a run's
    kept validations) in update order; with ``last``, the last ``last`` of them. ``kept`` tells a
    run's own from those an earlier run left beside them (the training log knows: train.runlog)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        own, earlier = kept(path)
        if earlier:
            named = ", ".join(p.name for p in earlier[:3]) + (", …" if len(earlier) > 3 else "")
            log(f"{path}: left out {len(earlier)} kept models of an earlier run, not its own ({named})")
        if not own:
            whose = "only an earlier run's update-N.pt" if earlier else "no update-N.pt"
            raise UserError(f"{path}: holds {whose} (train with --keep-last N to keep the last N)")
        found += own
    files = [(p.stat().st_dev, p.stat().st_ino) if p.exists() else os.path.realpath(p) for p in found]  # hard links too
    twice = next((p for k, p in enumerate(found) if files[k] in files[:k]), None)
    if twice is not None:
        raise UserError(f"{twice}: given twice (as itself, a link to it, or in its run directory)")
    if last > len(found):
        raise UserError(f"--last {last}: there are {len(found)} checkpoints")
    return found[-last:] if last else found


def write_average(paths: list[str | Path], out: str | Path) -> Checkpoint:
    check_not_train_s(out, "the average", "average.pt")
    checkpoint.check_destination(out)
    averaged = average(paths)
    checkpoint.save(out, averaged)
    return averaged
