"""``nmtkit train`` with one process's loss made NaN at one update, as a diverging process's
would be: ``python tests/poisoned_train.py RANK:STEP train ARGS...`` (RANK from torchrun's
environment; a STEP past the run's end poisons nothing); ``RANK:STEP:kill`` SIGKILLs that
process after the update instead, as the kernel's out-of-memory killer would. The hook lives
here, not in nmtkit."""

import atexit
import os
import signal
import sys

import torch

import nmtkit.train.graphs as graphs  # the eager update, as the loop gets it (graphs.updater)
from nmtkit.cli import main


def poison(rank: int, step: int, kill: bool = False) -> None:
    real = graphs.update

    def update(state, net, steps, idx):
        real(state, net, steps, idx)
        if int(os.environ.get("RANK", "0")) == rank and state.progress.step + 1 == step:
            if kill:
                os.kill(os.getpid(), signal.SIGKILL)
            state.window.losses[-1] = state.window.losses[-1] * torch.tensor(float("nan"))

    graphs.update = update


if __name__ == "__main__":
    # the test asserts this is never printed: a process of a group leaves before the teardown
    atexit.register(lambda: print("poisoned_train: the interpreter's teardown", file=sys.stderr))
    rank, step, *how = sys.argv[1].split(":")
    poison(int(rank), int(step), how == ["kill"])
    main(sys.argv[2:], prog_name="nmtkit")
