"""The parts of a training run that depend on where it runs, asked by the loop rather than
branched on inside it: the processes of a torchrun launch (DDP, collectives, RNG states) and
the compiled steps (CUDA graphs need to be told when a new forward begins)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager

import torch

from ..core import distributed
from ..core.console import log
from ..core.runtime import Runtime
from ..models.base import Seq2Seq
from .config import TrainConfig


class Parallel:
    """This process among the run's processes: one, or several under torchrun (DDP)."""

    def __init__(self, where: distributed.Place, runtime: Runtime):
        self.rank, self.world, self.many = where.rank, where.world, where.distributed
        self.device, self.runtime = runtime.device, runtime
        self.ddp: torch.nn.parallel.DistributedDataParallel | None = None
        # updates between two checks for a stop, set from the pace at each report; until the first,
        # a guess: a GPU's update takes a tenth of a second or less, a CPU's may take seconds
        self.stop_every = 1 if self.device.type == "cpu" else 10

    def wrap(self, model: Seq2Seq) -> torch.nn.Module:
        """What computes the loss: the model, or DDP around it (gradients averaged on backward)."""
        if self.many:
            self.ddp = torch.nn.parallel.DistributedDataParallel(model)
            return self.ddp
        return model

    def quiet(self, piece: int, pieces: int) -> AbstractContextManager[object]:
        """Around the backward of one piece of a minibatch: DDP averages the gradients once,
        after the last piece."""
        if self.ddp is not None and piece < pieces - 1:
            return self.ddp.no_sync()
        return contextlib.nullcontext()

    def agree(self, flag: bool) -> bool:
        """Rank 0's flag on every process (a collective call)."""
        return distributed.agree(flag, self.device) if self.many else flag

    def stopping(self, finish: bool, signalled: bool, step: int, reporting: bool) -> bool:
        """Whether every process stops after update ``step``: rank 0's ``finish`` (its clock decides
        --max-minutes) or a signal that reached any process, asked at each report and every
        :attr:`stop_every` updates between them (a collective, which waits for the GPU)."""
        if not (reporting or step % self.stop_every == 0):
            return False
        return self.anyone((finish if self.rank == 0 else False) or signalled)

    def pace(self, seconds_per_update: float) -> None:
        """At a report (every process): a stop checked about every second, from rank 0's pace, so
        that a signal or the clock ends the run within a second or so, not at the next report
        (--log-every updates: minutes at the paper's sizes, where a queue grants 30 s)."""
        self.stop_every = self.shared(max(1, int(1.0 / max(seconds_per_update, 1e-6))))

    def most(self, number: int) -> int:
        """The largest ``number`` of any process (a collective call): a signal that reached one."""
        return distributed.most(number, self.device) if self.many else number

    def anyone(self, flag: bool) -> bool:
        """Whether ``flag`` is set on any process (a collective call): a signal that reached one."""
        return bool(self.most(int(flag)))

    def shared(self, number: int) -> int:
        """Rank 0's number on every process (a collective call): what the clock decided there."""
        return distributed.shared(number, self.device) if self.many else number

    def rng_states(self) -> list[dict[str, torch.Tensor]]:
        """Every process's RNG states, CPU and CUDA (dropout draws from them), for the checkpoint;
        a collective call when several processes train."""
        mine = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            mine["cuda"] = torch.cuda.get_rng_state(self.device)
        return distributed.gather(mine, self.world)

    def restore_rng(self, ranks: list[dict[str, torch.Tensor]]) -> None:
        if len(ranks) != self.world:
            log(
                f"the checkpoint holds the RNG states of {len(ranks)} process(es), not {self.world}: dropout "
                f"draws will differ from an uninterrupted run"
            )
        mine = ranks[self.rank % len(ranks)]
        torch.set_rng_state(mine["torch"])
        if self.device.type == "cuda" and "cuda" in mine:
            torch.cuda.set_rng_state(mine["cuda"], self.device)

    def synchronize(self) -> None:
        """Wait for the GPU (the clock must see its work)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


class CompiledSteps:
    """The model's per-word steps through torch.compile, when asked; with CUDA graphs, the
    graphs' outputs of the last forward are released before the next one."""

    def __init__(self, model: Seq2Seq, cfg: TrainConfig):
        self.graphs = cfg.compile and cfg.compile_mode == "reduce-overhead"
        if cfg.compile:
            model.compile_steps(cfg.compile_mode)

    def new_forward(self) -> None:
        if self.graphs:
            # a new forward: the CUDA graphs' outputs of the last one (its backward done) may be reused
            torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]


def compiled_note(cfg: TrainConfig) -> str:
    """What the first log line says of the compiled step, if any."""
    if not cfg.compile:
        return ""
    return " (compiled steps)" if cfg.compile_mode == "default" else f" (compiled steps, mode {cfg.compile_mode})"
