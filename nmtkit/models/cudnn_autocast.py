"""cuDNN's GRUs and LSTMs under CUDA autocast run in float16, whatever autocast's dtype.

torch's autocast wrapper of ``_cudnn_rnn`` (``aten/src/ATen/cudnn/AutocastRNN.cpp``) casts the
input, the weights and the states to half and never reads the dtype autocast was given, so under
``--bf16`` an ``nn.GRU`` or ``nn.LSTM`` on a GPU would train in float16, without the loss scaling
float16 needs: gradients below its range are lost. Where that would happen, nmtkit's recurrences
run with autocast off, in float32 (TF32 products where those are allowed), as the hand-written
passes sum their states; the products around them keep autocast's bfloat16.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch
from torch import Tensor


def halves(x: Tensor) -> bool:
    """Whether autocast would run a cuDNN recurrence over ``x`` in float16: a CUDA tensor under
    CUDA autocast. The one place this is decided (tests force it on a CPU)."""
    return x.is_cuda and torch.is_autocast_enabled("cuda")


def float32(x: Tensor) -> AbstractContextManager[object]:
    """Autocast off where :func:`halves` (the recurrence's inputs and states then go in as
    float32, as its weights are); elsewhere nothing."""
    return torch.autocast(x.device.type, enabled=False) if halves(x) else nullcontext()
