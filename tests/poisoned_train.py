"""``nmtkit train`` with one process's loss made NaN at one update, as a diverging process's
would be: ``python tests/poisoned_train.py RANK:STEP train ARGS...`` (RANK from torchrun's
environment). The hook lives here, not in nmtkit."""

import os
import sys

import torch

import nmtkit.train.graphs as graphs  # the eager update, as the loop gets it (graphs.updater)
from nmtkit.cli import main


def poison(rank: int, step: int) -> None:
    real = graphs.update

    def update(state, net, steps, idx):
        real(state, net, steps, idx)
        if int(os.environ.get("RANK", "0")) == rank and state.progress.step + 1 == step:
            state.window.losses[-1] = state.window.losses[-1] * torch.tensor(float("nan"))

    graphs.update = update


if __name__ == "__main__":
    rank, step = map(int, sys.argv[1].split(":"))
    poison(rank, step)
    main(sys.argv[2:], prog_name="nmtkit")
