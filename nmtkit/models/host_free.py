"""Models computed without reading a tensor's value on the host, as an update captured as a CUDA
graph must be (``train --cuda-graphs``).

A graph replays the kernels it recorded: nothing inside may hand the host a number computed on
the device (``.item()``, ``nonzero``, the lengths that packing a batch for cuDNN reads). The few
places where a model reads such a value for speed (the output layer dropping padded rows, the
encoders that pack sentences by length) ask :func:`active` and take a padded, masked way
instead: the same arithmetic, to rounding.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACTIVE: ContextVar[bool] = ContextVar("host_free", default=False)


def active() -> bool:
    """Whether the model being run may not read a tensor's value on the host."""
    return _ACTIVE.get()


@contextmanager
def host_free() -> Iterator[None]:
    """Within: the model reads no tensor's value on the host."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
