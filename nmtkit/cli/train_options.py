"""``nmtkit train``'s options, in families: the model, its optimisation, speed, and the run
(budget, validation, what is kept). Defaults come from the model families' configs
(:mod:`nmtkit.models.config`) and :class:`TrainConfig`."""

from __future__ import annotations

import click

from ..core.settings import declared_names
from ..models.config import ARCH_HELP, ARCHS, DEFAULT_ARCH, DEFAULT_PRESET, MODEL_PRESETS, every_model_flag
from ..train.config import DEFAULT_SCHEDULE, SCHEDULES, TrainConfig
from .options import DirPath, FilePath, option, options

model = options(
    click.option("--arch", type=click.Choice(ARCHS), default=DEFAULT_ARCH, show_default=True, help=ARCH_HELP),
    click.option(
        "--preset",
        type=click.Choice(list(MODEL_PRESETS)),
        default=DEFAULT_PRESET,
        show_default=True,
        help="Model sizes, emb/hidden/align/maxout (luong: and layers): "
        + "; ".join(
            f"{name} {'/'.join(str(sizes[k]) for k in ('emb', 'hidden', 'align', 'maxout'))} ({sizes['layers']})"
            for name, sizes in MODEL_PRESETS.items()
        )
        + " (bench: the benchmarks' peer comparison); --emb/--hidden/--align/--maxout/--layers override.",
    ),
    click.option("--emb", type=click.IntRange(1), help="Word embedding size m [paper: 620; luong: 1000]."),
    click.option("--hidden", type=click.IntRange(1), help="Hidden units n [paper: 1000]."),
    click.option(
        "--align", type=click.IntRange(1), help="Alignment model units n' (luong: concat and local-p) [paper: 1000]."
    ),
    click.option("--maxout", type=click.IntRange(1), help="Maxout units l [paper: 500]."),
    click.option("--layers", type=click.IntRange(1), help="luong: LSTM layers in encoder and decoder [paper: 4]."),
    click.option(
        "--window-renorm/--no-window-renorm",
        default=None,
        help="luong, local-p: divide the Gaussian-scaled weights by their sum [default: on for local-p]. "
        "--no-window-renorm is the paper's exact form, whose weights are left unnormalised "
        "(docs/luong.md).",
    ),
    # every other declared setting of every family, in declaration order: a new one is an option at once
    *(option(cls, name, dest=flag) for flag, (cls, name) in every_model_flag().items() if name in declared_names(cls)),
)


optimization = options(
    click.option(
        "--schedule",
        "schedule_name",
        type=click.Choice(list(SCHEDULES)),
        default=DEFAULT_SCHEDULE,
        show_default=True,
        help="Training recipe; flags override it. "
        # the flags for each family's default dropout (Luong et al.'s 0.2; the GRU models have none)
        + "; ".join(f"{k}: {s.summary}" + (f" ({s.flags(0.2)})" if s.flags() else "") for k, s in SCHEDULES.items())
        + ".",
    ),
    option(TrainConfig, "optimizer"),
    option(TrainConfig, "lr"),
    option(TrainConfig, "decay_after"),
    option(TrainConfig, "lr_decay"),
    option(TrainConfig, "decay_patience"),
    option(TrainConfig, "warmup"),
    option(TrainConfig, "label_smoothing"),
    option(TrainConfig, "ema_decay"),
    option(TrainConfig, "guided_alignment_weight"),
    option(TrainConfig, "head_only"),
    option(TrainConfig, "decay"),
    option(TrainConfig, "clip"),
    option(TrainConfig, "batch_size"),
    option(TrainConfig, "max_tokens"),
    option(TrainConfig, "update_freq"),
    option(TrainConfig, "shortlist"),
    option(TrainConfig, "pool"),
    option(TrainConfig, "max_len"),
)


speed = options(
    option(TrainConfig, "compile"),
    option(TrainConfig, "compile_mode"),
    option(TrainConfig, "cuda_graphs"),
    option(TrainConfig, "fused_steps"),
    option(TrainConfig, "pad_to_multiple"),
)


run = options(
    option(TrainConfig, "max_updates"),
    option(TrainConfig, "max_epochs"),
    option(TrainConfig, "max_minutes"),
    option(TrainConfig, "valid_every"),
    option(TrainConfig, "save_every"),
    option(TrainConfig, "valid_max_sentences"),
    option(TrainConfig, "valid_bleu"),
    option(TrainConfig, "best_by"),
    option(TrainConfig, "patience"),
    option(TrainConfig, "keep_validations"),
    option(TrainConfig, "keep_last"),
    option(TrainConfig, "keep_best"),
    option(TrainConfig, "log_every"),
    # a run setting, as --save-dir: never in the checkpoint's TrainConfig, so a resumed run may log elsewhere
    click.option(
        "--tensorboard",
        type=DirPath(),
        metavar="DIR",
        help="Also write every entry of metrics.jsonl as TensorBoard scalars into DIR, at its update "
        "(needs the tensorboard extra).",
    ),
    option(TrainConfig, "seed"),
    click.option(
        "--init-from",
        type=FilePath(checkpoint=True),
        help="Start from this checkpoint's weights with a fresh optimizer (fine-tuning): its model (model "
        "flags given must describe it; --dropout and --weight-drop may differ), its vocabularies. Ignored "
        "when SAVE_DIR/last.pt exists (that run resumes).",
    ),
)
