"""``nmtkit train`` whose save at a signal takes seconds in the middle of writing last.pt, as a
large model's on a slow disk would: ``python tests/slow_save_train.py SECONDS CUE train ARGS...``.
The file CUE appears once the checkpoint's bytes are in its temporary file, not yet renamed: the
test's moment to signal again. The hook lives here, not in nmtkit."""

import sys
import time
from pathlib import Path

import torch

import nmtkit.train.loop as loop
from nmtkit.cli import main


def slow_signalled_save(seconds: float, cue: Path) -> None:
    real_save, real_torch_save = loop.save, torch.save
    slow = False

    def torch_save(obj, f, *args, **kwargs):
        real_torch_save(obj, f, *args, **kwargs)
        if slow:
            cue.touch()
            time.sleep(seconds)

    def save(*args, **kwargs):  # the loop's save at a signal, not the validations' saves
        nonlocal slow
        slow = True
        try:
            real_save(*args, **kwargs)
        finally:
            slow = False

    loop.save, torch.save = save, torch_save


if __name__ == "__main__":
    slow_signalled_save(float(sys.argv[1]), Path(sys.argv[2]))
    main(sys.argv[3:], prog_name="nmtkit")
