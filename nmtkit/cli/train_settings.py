"""How ``nmtkit train``'s flags resolve into a model and a training config: the named recipes
(Bahdanau et al.'s Appendix B, Luong et al.'s, the demo's ``cpu``), the preset's sizes, and the
flags typed, with the combinations that make no sense refused in one line. Here, where the flags
are read, so that the settings modules hold plain values only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..models.config import (
    FAMILIES,
    SIZES,
    ModelConfig,
    RNNSearchConfig,
    every_model_flag,
    model_config,
    refuse_foreign,
)
from ..train.config import SCHEDULES, TrainConfig, check_run


def train_settings(
    arch: str, preset: str, schedule_name: str, values: dict[str, Any], given: set[str]
) -> tuple[ModelConfig, TrainConfig]:
    """The model and training configs of ``nmtkit train`` (:func:`resolved_settings`), refused in
    one line where the run they make cannot be trained."""
    model, cfg = resolved_settings(arch, preset, schedule_name, values, given)
    check_run(model, cfg)
    # a head no word link trains is the library's to allow (tests of its graphs), not a command line's
    if isinstance(model, RNNSearchConfig) and model.alignment_head and not cfg.guided_alignment_weight:
        raise UserError(
            "--alignment-head learns from word links: it needs --arch rnnsearch and --guided-alignment-weight"
        )
    return model, cfg


def resolved_settings(
    arch: str, preset: str, schedule_name: str, values: dict[str, Any], given: set[str]
) -> tuple[ModelConfig, TrainConfig]:
    """The model and training configs of these flags: the preset's sizes, the named schedule,
    then ``values`` (every option, by field name; None: not set). Of the schedule's fields, only
    those not in ``given`` (the flags typed) are taken, and of the model's, those of the model's
    own family (a recipe's --tie-embeddings or --fused-steps is left out for Luong et al.'s
    LSTMs); a flag of another family and flags that contradict each other are refused, but not a
    run that lacks something yet (a budget, a model to start from). A schedule's preset stands
    where ``"preset"`` is not in ``given``, as ``--schedule cpu`` takes the small sizes."""
    _refuse_unknown(("--arch", arch, FAMILIES), ("--schedule", schedule_name, SCHEDULES))
    family = FAMILIES[arch]
    own, every = family.flags(), every_model_flag()
    given = set(given)  # a list or tuple from Python: the set operations below take sets
    known = every.keys() | {f.name for f in dataclasses.fields(TrainConfig)}
    if stray := sorted(set(values) - known - {"arch", "preset", "schedule_name"}):
        raise UserError(f"{stray[0]!r} is no option of nmtkit train's (by field name: lr, max_updates, hidden, …)")
    dropout = values.get("dropout")
    if dropout is None:
        dropout = family.default_dropout
    recipe = {
        k: v
        for k, v in SCHEDULES[schedule_name].settings(dropout).items()
        if k not in given
        and not (k == "fused_steps" and ("compile" in given or not family.fusable))
        and not (k in every and k not in own)
    }
    preset = recipe.pop("preset", preset)
    scheduled = "tie_embeddings" in recipe
    if scheduled:
        values = {**values, "tie_embeddings": recipe.pop("tie_embeddings")}
    refuse_foreign(arch, given & every.keys())
    _refuse_unpaired(values, recipe, given)
    _refuse_contradicted(values, recipe, given)
    if values.get("window_renorm") is None and "window_renorm" in own:
        # on for a new local-p model: the paper's unnormalised window does not learn where to look
        values = {**values, "window_renorm": values.get("attention") == "local-p"}
    if values.get("attention") == "none" and "input_feed" not in given:
        # the paper's base feeds no attentional vector back (Table 1: input feeding comes with attention)
        values = {**values, "input_feed": False}
    sizes = family.preset_sizes(preset) | {k: values[k] for k in SIZES if values.get(k) is not None}
    tied = "" if not scheduled else f" (--schedule {schedule_name} ties them: --no-tie-embeddings unties)"
    if values.get("tie_embeddings") and values.get("output_rank"):  # W_o is the embeddings: r = m
        if values["output_rank"] != sizes["emb"]:
            raise UserError(
                f"--tie-embeddings scores W_r t with the embeddings: --output-rank must equal --emb "
                f"({sizes['emb']}){tied}"
            )
    elif values.get("tie_embeddings"):  # the readout's output is scored by the embeddings: l = m
        if values.get("maxout") is not None and values["maxout"] != sizes["emb"]:
            raise UserError(
                f"--tie-embeddings scores the readout with the embeddings: --maxout must equal --emb "
                f"({sizes['emb']}), or be left out{tied}"
            )
        sizes["maxout"] = sizes["emb"]
    if values.get("head_only") and given & set(ModelConfig.TRAINING_ONLY):
        raise UserError("--head-only trains the head alone, which has no dropout: the frozen model draws none")
    if values.get("layer_norm") and values.get("encoder") == "cudnn":
        raise UserError("--layer-norm normalises the appendix's GRU: use --encoder paper")
    mine = {k: v for k, v in values.items() if k in own and k not in SIZES and v is not None}
    model = model_config(arch, **sizes, **mine)
    _refuse_idle(model, given)
    return model, TrainConfig(**{k: v for k, v in values.items() if k not in every and v is not None} | recipe)


def _refuse_unknown(*named: tuple[str, str, Any]) -> None:
    """Refuse a name a caller in Python gave that the command line's choices would have refused."""
    for flag, name, known in named:
        if name not in known:
            raise UserError(f"{flag} {name!r}: not one of {', '.join(known)}")


def family_of_run(arch: str, checkpoint: Path | None, given: set[str]) -> str:
    """The family of a run: a checkpoint's it goes on from (a resume, --init-from) where --arch is
    not typed and the model flags typed are that family's; else ``arch``. A flag the checkpoint's
    family lacks, or a checkpoint that cannot be read, is the run's to refuse, naming it."""
    if "arch" in given or checkpoint is None or not checkpoint.is_file():
        return arch
    from ..checkpoint import load  # torch, for a run from a checkpoint alone

    try:
        theirs = load(checkpoint).model
    except UserError:  # a dump describes the command line all the same
        return arch
    return arch if (given & every_model_flag().keys()) - type(theirs).flags().keys() else theirs.arch


def _refuse_unpaired(values: dict[str, Any], recipe: dict[str, Any], given: set[str]) -> None:
    """A flag typed without the one it works with, or with one it excludes, is refused in a line."""
    if "max_fertility" in given and values.get("coverage") != "linguistic":  # typed, even at its default
        raise UserError("--max-fertility bounds the linguistic coverage: add --coverage linguistic")
    if (values.get("fused_steps") or recipe.get("fused_steps")) and values.get("compile"):
        raise UserError("--fused-steps and --compile are two ways to speed the same loops: give one")
    if values.get("cuda_graphs") and values.get("compile"):
        raise UserError("--cuda-graphs and --compile are two ways to keep the GPU busy: give one")
    if values.get("cuda_graphs") and (values.get("pad_to_multiple") or 1) > 1:
        raise UserError("--pad-to-multiple: --cuda-graphs pads each batch to shapes fitted to the run's batches")
    if "decay_patience" in given and (values.get("lr_decay") or recipe.get("lr_decay")) != "plateau":
        raise UserError("--decay-patience counts the validations of --lr-decay plateau: add that")
    if "compile_mode" in given and not values.get("compile"):
        raise UserError("--compile-mode applies to a compiled step: add --compile")
    if values.get("window_renorm") and values.get("attention") != "local-p":
        raise UserError("--window-renorm applies to --attention local-p")


def _refuse_contradicted(values: dict[str, Any], recipe: dict[str, Any], given: set[str]) -> None:
    """Two flags typed of which the run would follow one, the other silently idle, refused in a line."""
    if values.get("window_renorm") is False and "window_renorm" in given and values.get("attention") != "local-p":
        raise UserError("--no-window-renorm applies to --attention local-p")
    if "decay" in given and (values.get("lr_decay") or recipe.get("lr_decay")) != "plateau":
        if not (values.get("decay_after") or recipe.get("decay_after")):
            raise UserError("--decay scales the rate at --lr-decay plateau or every epoch after --decay-after: add one")
    if {"batch_size", "max_tokens"} <= given and values.get("max_tokens"):
        raise UserError("--batch-size and --max-tokens are two ways to cut batches: give one")
    if "best_by" in given and values.get("best_by") == "bleu" and values.get("valid_bleu") is False:
        raise UserError("--best-by bleu needs the dev BLEU that --no-valid-bleu turns off: give one")
    if values.get("keep_last") and values.get("keep_validations"):
        raise UserError("--keep-last N keeps the last N validations' checkpoints, --keep-validations all: give one")


def _refuse_idle(model: ModelConfig, given: set[str]) -> None:
    """A flag typed that this model never reads (--window for global attention) is refused: a sweep
    over it would train the same model each time."""
    idle = model.idle()
    for name in sorted(given & idle.keys()):
        raise UserError(f"--{name.replace('_', '-')} does nothing here: {idle[name]}")


def described(arch: str, preset: str, schedule_name: str, given: set[str]) -> set[str]:
    """The model settings this command line describes, by flag name (``arch`` among them when
    typed), which a checkpoint the run goes on from must match, the rest of its model being the
    checkpoint's: the model flags typed, the sizes of a typed --preset (or of a typed --schedule's)
    and a typed schedule's own model settings."""
    own, every = FAMILIES[arch].flags(), every_model_flag()
    out = {k for k in given if k in every or k == "arch"}
    schedule = SCHEDULES[schedule_name] if "schedule_name" in given else None
    if "preset" in given or (schedule is not None and "preset" in schedule.model):
        out |= FAMILIES[arch].preset_sizes(preset).keys()
    if schedule is not None:
        out |= {k for k in schedule.model if k in own}
    return out


def recipe_fills(
    arch: str,
    preset: str,
    schedule_name: str,
    model: ModelConfig,
    cfg: TrainConfig,
    from_checkpoint: set[str] | None = None,
) -> dict[str, Any]:
    """What a run of these configs takes for each option, by parameter name (``--dump-config``
    writes it where no value was chosen): the model's and the run's values, the schedule's preset,
    and None for the flags of another family and those of a step not taken or a model part not built
    (which a file that set them would be refused for). ``from_checkpoint``: the run goes on from a
    checkpoint (--init-from, or a resume), whose model is what this set of settings
    (:func:`described`) leaves undescribed: None for those too, the architecture and preset among them."""
    foreign = dict.fromkeys(every_model_flag().keys() - FAMILIES[arch].flags().keys())
    # a None of the run's own (no --device, no --init-from) is the option's unset default, not a fill
    run = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if getattr(cfg, f.name) is not None}
    if not cfg.compile:
        run["compile_mode"] = None
    if cfg.lr_decay != "plateau":
        run["decay_patience"] = None  # typed, it would be refused: it counts plateau's validations
        if not cfg.decay_after:
            run["decay"] = None  # read by neither schedule that decays by it
    if cfg.max_tokens:
        run["batch_size"] = None  # typed beside --max-tokens, it would be refused: a second way to cut
    if not cfg.valid_bleu:
        run["best_by"] = None  # bleu, typed, would be refused: no dev BLEU to choose by
    flat = model.flat()
    if "max_fertility" in flat and flat.get("coverage") != "linguistic":
        flat["max_fertility"] = None  # typed, it would be refused: it bounds the linguistic coverage alone
    if "window_renorm" in flat and flat.get("attention") != "local-p":
        flat["window_renorm"] = None  # likewise: it divides local-p's window alone
    flat |= dict.fromkeys(model.idle())  # likewise
    fills = foreign | run | flat | {"preset": SCHEDULES[schedule_name].settings(0.0).get("preset", preset)}
    if from_checkpoint is not None:  # the family's defaults are not the checkpoint's values
        fills |= dict.fromkeys(k for k in [*flat, "preset", "arch"] if k not in from_checkpoint)
    return fills
