"""``nmtkit train``: a model trained (or resumed) on a binarized corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ...core.command import Command
from ...train.config import SCHEDULES
from .. import options, train_options
from ..config_file import config_options
from ..train_settings import described, family_of_run, recipe_fills, resolved_settings, train_settings

# train's parameters that are not settings of the model or the run
_NOT_SETTINGS = ("data_bin", "save_dir", "arch", "preset", "schedule_name", "reset", "tensorboard", "dump_config")


def _flags(ctx: click.Context) -> tuple[str, str, str, dict[str, Any], set[str]]:
    """This command line as train_settings takes it: arch, preset, schedule, the settings' values
    and the names of those typed (on the command line or in --config)."""
    typed = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.DEFAULT_MAP)
    given = {k for k in ctx.params if ctx.get_parameter_source(k) in typed}
    values = {k: v for k, v in ctx.params.items() if k not in _NOT_SETTINGS}
    arch = family_of_run(ctx.params["arch"], _from_checkpoint(ctx), given)
    return arch, ctx.params["preset"], ctx.params["schedule_name"], values, given


def _filled(ctx: click.Context) -> dict[str, Any]:
    """--dump-config's commented values: what the run takes, the recipe's and the preset's included
    (of a run that still lacks something, such as a budget, too); of a run from a checkpoint, the
    model settings the command describes alone."""
    arch, preset, schedule, values, given = _flags(ctx)
    kept = described(arch, preset, schedule, given) if _from_checkpoint(ctx) is not None else None
    return recipe_fills(arch, preset, schedule, *resolved_settings(arch, preset, schedule, values, given), kept)


def _from_checkpoint(ctx: click.Context) -> Path | None:
    """The checkpoint this run goes on from: SAVE_DIR/last.pt (a resume), else --init-from's."""
    last = Path(ctx.params["save_dir"]) / "last.pt"
    if not ctx.params["reset"] and last.exists():
        return last
    return Path(ctx.params["init_from"]) if ctx.params.get("init_from") else None


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit train data-bin --arch rnnsearch --save-dir runs/rnnsearch          # the paper's recipe
  nmtkit train data-bin --schedule cpu --max-minutes 20 --save-dir runs/demo            # the demo's, for a CPU
  nmtkit train data-bin --arch luong --attention global --score dot --schedule luong --save-dir runs/luong
  torchrun --nproc-per-node 4 -m nmtkit train data-bin --save-dir runs/x    # several GPUs (DDP)
Running the same command again resumes from SAVE_DIR/last.pt exactly (--reset starts over).""",
)
@options.positional("data_bin", "[DATA_BIN]", type=options.DirPath())
@config_options(_filled, command_line_only=("reset",))
@options.data("The binarized corpus to train on, as score and lexicon take it (or DATA_BIN, fairseq's spelling).")
@click.option("--save-dir", required=True, type=options.DirPath(), help="Where last.pt, best.pt and metrics.jsonl go.")
@train_options.model
@train_options.optimization
@train_options.speed
@train_options.run
@options.train_runtime
@click.option("--reset", is_flag=True, help="Ignore SAVE_DIR/last.pt and start over.")
@options.verbosity
def train(data_bin: str | None, save_dir: str, reset: bool, tensorboard: str | None, **settings: Any) -> None:
    """Train RNNsearch, RNNencdec or a Luong et al. model on a binarized corpus, DATA_BIN or --data
    (Appendix B by default)."""
    from ...train.loop import train as run

    if data_bin is None:
        raise click.UsageError("Missing the corpus to train on: DATA_BIN or --data DATA_BIN.")
    ctx = click.get_current_context()
    flags = _flags(ctx)
    kept = _from_checkpoint(ctx)
    if kept is not None and "dropout" not in flags[-1] and SCHEDULES[flags[2]].with_dropout:
        from ...checkpoint import load  # the budget follows the dropout: the checkpoint's, untyped

        flags[3]["dropout"] = load(kept).model.dropout
    model_cfg, train_cfg = train_settings(*flags)
    run(
        Path(data_bin),
        Path(save_dir),
        model_cfg,
        train_cfg,
        resume=not reset,
        tensorboard=Path(tensorboard) if tensorboard else None,
        typed=flags[-1] | described(*flags[:3], flags[-1]),
    )
