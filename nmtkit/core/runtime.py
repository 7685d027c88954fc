"""Where and how the arithmetic runs: device, CPU threads, bfloat16, the CPU math library.

Every subcommand that computes (train, translate, score with a model,
align-plot with a model) calls :func:`setup` with its ``--device``,
``--threads`` and ``--bf16``, so the three flags mean the same everywhere
and a bad value is refused in one line before any work.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import torch

from . import blas
from .console import debug
from .errors import UserError
from .machine import this_cpu
from .settings import DEVICES, RuntimeConfig

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    bf16: bool

    def autocast(self, cached: bool = True) -> AbstractContextManager[object]:
        """bfloat16 autocast when asked for; nothing otherwise. ``cached`` False while a CUDA graph
        is captured: a weight cast once and cached would be read from outside the graph."""
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16, cache_enabled=cached)


def resolve_device(name: str | None, local_rank: int = 0, local_world: int = 1) -> torch.device:
    """The device a name means on this machine for the process of local rank ``local_rank`` of
    ``local_world`` on this node (torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE); :class:`UserError`
    for one that is unknown or absent, and for more processes than GPUs."""
    if name is None or name == "":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", name)
    if not match:
        raise UserError(f"unknown device '{name}' (use {DEVICES})")
    if not torch.cuda.is_available():
        raise UserError(f"device '{name}': this machine has no CUDA GPU that torch can use (use cpu)")
    count = torch.cuda.device_count()
    if match.group(1) is None and local_world > count:
        # two processes on one GPU would fight over its memory, and NCCL refuses them
        raise UserError(
            f"{local_world} processes on this node but {count} CUDA GPU(s): start at most "
            f"{count} (torchrun --nproc-per-node {count}), or use --device cpu"
        )
    index = int(match.group(1)) if match.group(1) is not None else local_rank
    if index >= count:
        raise UserError(f"device '{name}': this machine has {count} CUDA GPU(s), numbered from 0")
    return torch.device(f"cuda:{index}")


def describe_device() -> str:
    """What a run would compute on by default: 'cuda: NVIDIA H100 80GB HBM3 ×1' or 'cpu: 2 threads'."""
    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)} ×{torch.cuda.device_count()}"
    return f"cpu: {torch.get_num_threads()} threads"


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """What :func:`setup` changes in the process (torch's CPU threads, a GPU's TF32, the logits' BLAS)
    put back as it was at the end of the block: a library call such as ``train(threads=1)`` leaves
    its caller's process as it found it."""
    threads = torch.get_num_threads()
    tf32 = _tf32() if torch.cuda.is_available() else None  # setup sets it on a GPU alone
    try:
        yield
    finally:
        blas.release()
        torch.set_num_threads(threads)
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def _tf32() -> tuple[bool, bool] | None:
    """The legacy TF32 flags setup writes; None where the caller set torch's newer ones
    (``fp32_precision``), which torch refuses to read as the legacy ones."""
    try:
        return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    except RuntimeError:
        return None


def keeping(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside :func:`kept`."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with kept():
            return fn(*args, **kwargs)

    return call


def setup(cfg: RuntimeConfig, local_rank: int = 0, local_world: int = 1) -> Runtime:
    """Apply ``cfg`` to this process and say where to compute."""
    device = resolve_device(cfg.device, local_rank, local_world)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        # fp32 products on tensor cores (10-bit mantissa), as fairseq and Marian do by default;
        # without it an fp32 GEMM of the paper's sizes runs at a fraction of the GPU's speed
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    numpy_logits = device.type == "cpu" and blas.choose(cfg.logits_blas, cfg.threads)
    if cfg.bf16 and device.type == "cpu" and not this_cpu().native_bf16:
        # emulated bfloat16 runs slower than float32, and oneDNN's LSTM (Luong's models) refuses it
        raise UserError(
            "--bf16 needs a CPU with native bfloat16 (AVX512-BF16 or AMX), which this one lacks; leave --bf16 off"
        )
    if cfg.bf16 and device.type == "cpu":
        # oneDNN caches a bf16 primitive per matrix shape (1,024 by default); varying sentence
        # lengths make hundreds of shapes, ~400 MB at the bench size. 64 is as fast.
        os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")
    debug(
        f"device {device}, {torch.get_num_threads()} CPU threads, bf16 {'on' if cfg.bf16 else 'off'}"
        + (", the logits through numpy's BLAS" if numpy_logits else "")
        + (f", tf32 {'on' if cfg.tf32 else 'off'}" if device.type == "cuda" else "")
    )
    return Runtime(device, cfg.bf16)
