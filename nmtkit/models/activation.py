"""Where tanh goes through σ, and where it must not.

On a CPU in float32, torch's tanh is several times slower than its sigmoid, so the attention's
B×Tx×n' energies (the largest elementwise work of a decoder step) take tanh(x) as 2σ(2x) − 1, or
read σ itself (v·tanh(x) = 2v·σ(2x) − Σv, and a softmax drops the constant). Both lose nothing
where σ keeps 24 bits. In bfloat16 σ keeps 8: near ½ its distance from ½ (which is tanh/2) moves
in steps of 2⁻⁸, so a small tanh, as every one is at Appendix B.1's start (its small weights keep
the states near 0), comes out as noise; tanh itself keeps its 8 bits relative to its own size.
On a GPU tanh is one kernel, as σ is, and TF32 products, which round their inputs to 10 bits,
would round σ's distance from ½ the same way.
"""

from __future__ import annotations

from torch import Tensor


def through_sigmoid(x: Tensor) -> bool:
    """Whether tanh on ``x`` goes through σ (a CPU's float32 or float64): the one place this is
    decided, for the reference loops, the search's energies and the hand-written passes alike."""
    return x.device.type == "cpu" and x.is_floating_point() and x.element_size() >= 4


def tanh_(x: Tensor) -> Tensor:
    """tanh in place: 2σ(2x) − 1 (error < 2e-7) where :func:`through_sigmoid`, else torch's."""
    return x.mul_(2).sigmoid_().mul_(2).sub_(1) if through_sigmoid(x) else x.tanh_()
