"""Which BLAS computes the output layer's logits on a CPU (``--logits-blas``).

torch's x86 CPU builds do their float32 matrix products through oneMKL, which on AMD CPUs takes a
slow path for one product of a training update: the output layer's logits, a wide product (745 ×
256 × 5,628 with the demo's units, a chunk of the loss) that MKL runs at about half the speed
OpenBLAS reaches on the same core (``make bench-blas``; docs/benchmarks.md). numpy's wheels bundle
OpenBLAS, which picks its kernels by the CPU it finds, and ``numpy.matmul`` can write into torch's
own memory: that product alone is handed to it, without a copy. The other products of an update
are as fast through MKL and stay there.

OpenBLAS's own threads would meet torch's on the same cores: after a product they spin, waiting
for the next, while torch's threads run the next operation (a product through OpenBLAS's two
threads then one through MKL ran at 57 GFLOPS a product, two through MKL at 85, on the Zen 3). So
OpenBLAS is held to one thread (threadpoolctl) and the product is split by rows over as many
Python threads as torch has (numpy releases the GIL inside BLAS): 152 GFLOPS alone, and the
next MKL product as fast as after MKL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from .errors import UserError
from .machine import CPU, this_cpu

_workers: ThreadPoolExecutor | None = None  # set: logits() hands float32 CPU products to numpy's BLAS
_count = 0  # its threads
_limits: Any = None  # threadpoolctl's hold on OpenBLAS's threads, which release() lifts


def wants_numpy(choice: str, cpu: CPU) -> bool:
    """Whether ``choice`` means numpy's BLAS on ``cpu``: auto takes it on AMD CPUs without
    AVX-512 (Zen 3 and before), where it measured faster; Intel's keep MKL, which is tuned for
    them, and AMD's with AVX-512 (Zen 4, 5), where it is not measured yet."""
    return choice == "numpy" or (choice == "auto" and cpu.vendor == "AuthenticAMD" and "avx512f" not in cpu.flags)


def choose(choice: str, threads: int) -> bool:
    """Apply ``--logits-blas`` to this process; whether numpy's BLAS now computes the logits."""
    global _workers, _count, _limits
    release()
    if not wants_numpy(choice, this_cpu()):
        return False
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if choice == "numpy":
            raise UserError("--logits-blas numpy needs threadpoolctl (pip install threadpoolctl)") from None
        return False  # auto: torch's BLAS, as before
    _limits = threadpool_limits(limits=1, user_api="blas")
    _count = threads or torch.get_num_threads()
    _workers = ThreadPoolExecutor(_count, thread_name_prefix="nmtkit-blas")
    return True


def release() -> None:
    """torch's BLAS for the logits again, and OpenBLAS's threads as they were before :func:`choose`."""
    global _workers, _count, _limits
    if _workers is not None:
        _workers.shutdown()
    if _limits is not None:
        _limits.restore_original_limits()
    _workers, _count, _limits = None, 0, None


def workers() -> int:
    """The threads that run numpy's products (0: torch's BLAS runs them)."""
    return _count


def logits(rows: torch.Tensor, weight: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``rows @ weight.T`` written into ``out`` (a contiguous buffer of the right shape)."""
    pool, count = _workers, _count  # together: a run that ends in another thread releases them
    if pool is None or not (rows.dtype == weight.dtype == out.dtype == torch.float32 and rows.device.type == "cpu"):
        return torch.mm(rows, weight.t(), out=out)
    r, w, o = rows.detach().numpy(), weight.detach().numpy().T, out.numpy()
    step = -(-len(r) // count)
    parts = [pool.submit(_product, r[i : i + step], w, o[i : i + step]) for i in range(0, len(r), step)]
    for part in parts:
        part.result()
    return out


def _product(rows: np.ndarray, weight: np.ndarray, out: np.ndarray) -> None:
    # a diverging run's overflow is the loss's NaN, which training names in one line: no warning
    # of numpy's before it (errstate is this thread's own, hence set here and not by the caller)
    with np.errstate(over="ignore", invalid="ignore"):
        np.matmul(rows, weight, out=out)
