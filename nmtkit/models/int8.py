"""int8 weights for translation on a CPU: torch's dynamic quantization of the linear layers.

Each linear layer's weights are stored as int8 with one scale per output
row (per channel); its input is quantized on the fly at every call, the
product runs in int8 (fbgemm/oneDNN) and the result comes back in float32.
A quarter of the weight bytes, and faster products on CPUs with AVX2,
AVX512-VNNI or AMX. The attention's v_a stays float32: its weight is read
as a vector, never through the layer's forward.
"""

from __future__ import annotations

import warnings
from typing import cast

import torch
from torch import nn

from .base import Seq2Seq


def quantize_int8(model: Seq2Seq) -> Seq2Seq:
    """``model`` (eval mode, on the CPU) with its linear layers in int8."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    spec = {
        name: per_channel_dynamic_qconfig
        for name, m in model.named_modules()
        # v_a, V_a and the coverage's own layers: their weights are read as tensors, not called
        if type(m) is nn.Linear and not name.endswith(("v_a", "V_a")) and not name.startswith("coverage.")
    }
    with warnings.catch_warnings():
        # torch 2.10+ marks this API for a move to torchao; it is what this torch provides
        warnings.simplefilter("ignore")
        return cast(Seq2Seq, quantize_dynamic(model, spec, dtype=torch.qint8))  # type: ignore[no-untyped-call]
