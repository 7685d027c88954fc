"""The paper-GRU recurrences over whole sequences, forward and backward written by hand.

Teacher forcing through :class:`~nmtkit.models.layers.BiEncoder` and RNNsearch's decoder
loops over time steps of small products; autograd then records a dozen nodes a step, and its
backward does the weight gradients step by step (products over the 80 rows of a batch) and
adds them up. Here each recurrence is one ``torch.autograd.Function``: forward saves, per
step, what backward needs (gates, candidates, attention weights: memory for time), backward
walks the steps in reverse doing only what the recurrence needs (the products with the
recurrent matrices that carry the state's gradient back), and every weight gradient is one
large product over all steps after the loop. The encoder's two directions step together, each
step one batched product for both (the second reads its inputs reversed), so a step of the
encoder costs the kernels of one direction.

The arithmetic is the reference's up to rounding, tanh included where it goes through σ
(:mod:`~nmtkit.models.activation`: a CPU's float32). There the attention energies are computed
without the constant −Σv_a, which the softmax ignores, so σ(2(U_a h + W_a s)) is all an energy
needs, and its derivative 1 − tanh² is 4σ(1 − σ). Elsewhere (bfloat16, a GPU) the energies keep
tanh(U_a h + W_a s) itself, whose small values σ would round away.

:func:`use_fused` switches a model to these passes (the ``fused_steps`` of its
:class:`Fusable` modules); :func:`wanted` says when they apply.

Under autocast to bfloat16 (``--bf16``, a CPU's or a GPU's) the passes run in bfloat16:
autocast's ``custom_fwd`` casts their floating inputs once and runs them with autocast off, so
every product is a bfloat16 product (oneDNN, AMX where the CPU has it) and the saved tensors take
half the memory. The reference loop under autocast keeps its states in bfloat16 too, since its
products hand it bfloat16; ``tests/test_fused.py`` bounds the difference.

On a GPU the same passes cut the kernels of an update (a step's backward is the recurrence's
products and a few element-wise kernels, the weight gradients one product each after the loop),
which is what bounds a replayed CUDA graph (``train --cuda-graphs``): nothing in them reads a
tensor on the host. There tanh is torch's own kernel, one launch rather than four.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple, cast

import torch
from torch import Tensor, nn

from nmtkit.models import activation

KEEP_ENERGIES_BYTES = 512 << 20  # what the decoder may keep of its attention for backward
# a GPU's memory holds a paper-size batch's (about 0.8 GB), and recomputing costs two passes a step
KEEP_ENERGIES_BYTES_GPU = 4 << 30

_sigmoid_grad = torch.ops.aten.sigmoid_backward.grad_input
_tanh_grad = torch.ops.aten.tanh_backward.grad_input


class _Reused:
    """One block of memory handed on from a call whose graph is gone to the next call. The
    decoder keeps B × Tx × n' floats a target position for backward, 100-200 MB a batch of the
    demo: allocated afresh, glibc maps it anew each time and the first writes page-fault, which
    cost as much as recomputing it."""

    def __init__(self) -> None:
        self.free: Tensor | None = None

    def take(self, ctx: Any, numel: int, like: Tensor, most: int) -> Tensor:
        """``numel`` elements like ``like``'s, held until ``ctx`` (the graph's node) is freed. A new
        block has room for ``most``: pages untouched cost nothing, and a block that grew with each
        longer batch would be page-faulted in again each time. A GPU's caching allocator reuses
        its blocks itself (and a CUDA graph's come from its pool): there, a block of its own."""
        if like.device.type != "cpu":
            return like.new_empty(numel)
        block, self.free = self.free, None
        if block is None or block.numel() < numel or block.dtype != like.dtype or block.device != like.device:
            block = like.new_empty(max(numel, most))
        weakref.finalize(ctx, self._give, block)
        return block[:numel]

    def _give(self, block: Tensor) -> None:
        self.free = block


_ENERGIES = _Reused()


def _cell_forward(zr: Tensor, s: Tensor, wc: Tensor, U_t: Tensor, rs: Tensor, cand: Tensor, diff: Tensor) -> Tensor:
    """The GRU update once ``zr`` holds σ of the gates' pre-activations, with ``wc`` the
    candidate's input part: fills ``rs`` = r∘s, ``cand`` = tanh(wc + U rs) and ``diff`` =
    cand − s; returns z. (B, ·) with U_t (n, n), or (D, B, ·) with U_t (D, n, n): D GRUs at once."""
    n = s.shape[-1]
    torch.mul(zr[..., n:], s, out=rs)
    activation.tanh_((torch.baddbmm if s.dim() == 3 else torch.addmm)(wc, rs, U_t, out=cand))
    torch.sub(cand, s, out=diff)
    return zr[..., :n]


def _cell_backward(
    g: Tensor,
    gn: Tensor,
    zr: Tensor,
    cand: Tensor,
    diff: Tensor,
    s: Tensor,
    U: Tensor,
    dz: Tensor,
    dr: Tensor,
    dc: Tensor,
) -> Tensor:
    """Given ∂s' (``g``; ``gn`` is g where the step was kept, 0 where padding carried s), fill
    the gates' pre-activation gradients ``dz``, ``dr``, ``dc`` and return ∂s from every path
    except the product with U_zr (shapes as :func:`_cell_forward`'s)."""
    n = s.shape[-1]
    z, r = zr[..., :n], zr[..., n:]
    gz = gn * z
    _sigmoid_grad(gn * diff, z, grad_input=dz)
    _tanh_grad(gz, cand, grad_input=dc)
    d_rs = torch.matmul(dc, U)
    ds = torch.addcmul(g.sub(gz), d_rs, r)
    _sigmoid_grad(d_rs.mul_(s), r, grad_input=dr)
    return ds


class MaskedGRU(torch.autograd.Function):
    """The states (T, D, B, n) of D paper-GRUs stepped together, each over its inputs ``wx`` =
    W x + b (T, D, B, 3n) in the order it reads them, from ``h0`` (D, B, n), with its own
    recurrent matrices ``U_zr`` (D, 2n, n) and ``U`` (D, n, n): the encoder's two directions
    take one batched product a step, not two. Where ``keep`` (T, D, B) is 0 the state is
    carried unchanged (padding); ``keep`` None keeps every step."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.bfloat16)  # type: ignore[untyped-decorator]
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.bfloat16)  # type: ignore[untyped-decorator]
    def forward(ctx: Any, wx: Tensor, h0: Tensor, keep: Tensor | None, U_zr: Tensor, U: Tensor) -> Tensor:
        T, D, B, _ = wx.shape
        n = h0.shape[-1]
        S, ZR = wx.new_empty(T + 1, D, B, n), wx.new_empty(T, D, B, 2 * n)
        CAND, DIFF, RS = wx.new_empty(T, D, B, n), wx.new_empty(T, D, B, n), wx.new_empty(T, D, B, n)
        S[0] = h0
        Uzr_t, U_t = U_zr.transpose(1, 2), U.transpose(1, 2)
        for t in range(T):
            s = S[t]
            torch.baddbmm(wx[t, ..., : 2 * n], s, Uzr_t, out=ZR[t]).sigmoid_()
            z = _cell_forward(ZR[t], s, wx[t, ..., 2 * n :], U_t, RS[t], CAND[t], DIFF[t])
            torch.addcmul(s, z if keep is None else z * keep[t, ..., None], DIFF[t], out=S[t + 1])
        ctx.save_for_backward(S, ZR, CAND, DIFF, RS, keep, U_zr, U)
        return S[1:]

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")  # type: ignore[untyped-decorator]
    @torch.amp.custom_bwd(device_type="cpu")  # type: ignore[untyped-decorator]
    def backward(ctx: Any, g_out: Tensor) -> tuple[Tensor | None, ...]:
        S, ZR, CAND, DIFF, RS, keep, U_zr, U = ctx.saved_tensors
        g_out = g_out.to(S.dtype)
        T, D, B, n = CAND.shape
        DG = g_out.new_empty(T, D, B, 3 * n)  # ∂ of the gates' pre-activations: ∂(W x)
        carry = g_out.new_zeros(D, B, n)
        for t in range(T - 1, -1, -1):
            g = g_out[t] + carry
            gn = g if keep is None else g * keep[t, ..., None]
            dg = DG[t]
            ds = _cell_backward(
                g, gn, ZR[t], CAND[t], DIFF[t], S[t], U, dg[..., :n], dg[..., n : 2 * n], dg[..., 2 * n :]
            )
            carry = ds.baddbmm_(dg[..., : 2 * n], U_zr)
        # each weight's gradient: one product over all T·B steps of its direction
        per_step = DG.transpose(0, 1).reshape(D, T * B, 3 * n).transpose(1, 2)
        need = ctx.needs_input_grad
        grad_Uzr = per_step[:, : 2 * n].bmm(S[:-1].transpose(0, 1).reshape(D, T * B, n)) if need[3] else None
        grad_U = per_step[:, 2 * n :].bmm(RS.transpose(0, 1).reshape(D, T * B, n)) if need[4] else None
        return DG, carry, None, grad_Uzr, grad_U


def _squash(keys_k: Tensor, q_k: Tensor, k: int, out: Tensor) -> Tensor:
    """What the energies read, from k U_a h (B, Tx, n') and k W_a s (B, 1, n'): with k = 2,
    σ(2(U_a h + W_a s)); with k = 1, tanh(U_a h + W_a s) (see :class:`AttentiveGRU`)."""
    torch.add(keys_k, q_k, out=out)
    return out.sigmoid_() if k == 2 else out.tanh_()


def _attend(
    q_k: Tensor, keys_k: Tensor, v_k: Tensor, k: int, neg: Tensor, h: Tensor, sig: Tensor, alpha: Tensor, c: Tensor
) -> None:
    """Attention of one step from ``q_k`` = k W_a s (B, n') and ``v_k`` = k v_a: fills ``sig`` as
    :func:`_squash` (B, Tx, n'), ``alpha`` (B, Tx) and the context ``c`` (B, m)."""
    B, Tx, na = sig.shape
    _squash(keys_k, q_k.unsqueeze(1), k, sig)
    e = torch.addmv(neg.view(-1), sig.view(-1, na), v_k).view(B, Tx)  # v·tanh(·), + Σv with k = 2
    torch.softmax(e, -1, out=alpha)
    torch.bmm(alpha.unsqueeze(1), h, out=c.unsqueeze(1))


def _attend_backward(  # noqa: PLR0913 (a step's tensors, each filled in place)
    dc: Tensor,
    h: Tensor,
    alpha: Tensor,
    sig: Tensor,
    k: int,
    v_slope: Tensor,
    one: Tensor,
    w: Tensor,
    grad_v: Tensor,
    grad_keys: Tensor,
    dq: Tensor,
    g_alpha: Tensor | None,
) -> None:
    """Backward of :func:`_attend` for ∂c ``dc`` and, when a loss reads the weights themselves
    (guided alignment), ∂α ``g_alpha``, with ``sig`` as :func:`_attend` left it, ``v_slope`` =
    k² v_a and ``one`` a 1 of its dtype (allocated once, not a kernel a step): fills ∂(W_a s)
    ``dq`` (B, n'), adds ∂e·tanh (= 2 ∂e·σ with k = 2, as Σ_j ∂e_j = 0) to ``grad_v`` (1, n') and
    ∂e ∘ tanh'/k² to ``grad_keys`` (∂keys but for the factor ``v_slope``)."""
    B, Tx, na = sig.shape
    d_alpha = torch.bmm(dc.unsqueeze(1), h.transpose(1, 2)).view(B, Tx)  # a batched product: far faster than h @ dc
    if g_alpha is not None:
        d_alpha.add_(g_alpha)
    de = torch._softmax_backward_data(d_alpha, alpha, -1, alpha.dtype)
    if grad_v.dtype == sig.dtype:
        grad_v.addmm_(de.view(1, -1), sig.view(-1, na), alpha=k)
    else:  # bfloat16 products summed in float32
        grad_v.add_(de.view(1, -1).mm(sig.view(-1, na)), alpha=k)
    # tanh' = 4σ(1 − σ) = 1 − tanh²
    torch.addcmul(sig if k == 2 else one, sig, sig, value=-1, out=w)
    torch.mul(torch.bmm(de.unsqueeze(1), w).view(B, na), v_slope, out=dq)
    grad_keys.addcmul_(de.unsqueeze(2), w)


class AttentiveGRU(torch.autograd.Function):
    """RNNsearch's decoder over all target positions: for i = 1..Ty, c_i by additive attention
    on s_{i-1}, then s_i = GRU(w_y[i] + C c_i, s_{i-1}). Inputs s_0 (B, n), w_y = W E y + b
    (B, Ty, 3n), keys = U_a h (B, Tx, n'), h (B, Tx, m), mask (B, Tx), W_a (n', n), v_a (n',),
    C (3n, m), U_zr (2n, n), U (n, n). Returns s_0..s_Ty (B, Ty+1, n), c (B, Ty, m) and the
    attention weights α (B, Ty, Tx), through which a loss may take a gradient too.

    The energies read σ(2x) (k = 2, x = U_a h + W_a s) where tanh goes through σ, else tanh(x)
    (k = 1): the keys, W_a s and v_a enter multiplied by k, and tanh' is k² times what backward
    keeps of it."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.bfloat16)  # type: ignore[untyped-decorator]
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.bfloat16)  # type: ignore[untyped-decorator]
    def forward(  # noqa: PLR0913 (an autograd Function takes its tensors one by one)
        ctx: Any,
        s0: Tensor,
        wy: Tensor,
        keys: Tensor,
        h: Tensor,
        mask: Tensor,
        W_a: Tensor,
        v: Tensor,
        C: Tensor,
        U_zr: Tensor,
        U: Tensor,
    ) -> tuple[Tensor, Tensor, Tensor]:
        B, Ty, _ = wy.shape
        Tx, m, n, na = h.shape[1], h.shape[2], s0.shape[1], W_a.shape[0]
        S, ZR, CTX = wy.new_empty(Ty + 1, B, n), wy.new_empty(Ty, B, 2 * n), wy.new_empty(Ty, B, m)
        CAND, DIFF, RS = wy.new_empty(Ty, B, n), wy.new_empty(Ty, B, n), wy.new_empty(Ty, B, n)
        P, AL = wy.new_empty(Ty, B, 2 * n + na), wy.new_empty(Ty, B, Tx)
        # what each step's energies read (σ or tanh: SIG), kept for backward if small enough, else
        # recomputed there
        most = KEEP_ENERGIES_BYTES if keys.device.type == "cpu" else KEEP_ENERGIES_BYTES_GPU
        kept = Ty * B * Tx * na * keys.element_size() <= most
        ctx.k = k = 2 if activation.through_sigmoid(keys) else 1
        block = (
            _ENERGIES.take(ctx, Ty * B * Tx * na, keys, most // keys.element_size())
            if kept
            else keys.new_empty(B * Tx * na)
        )
        SIG = block.view(-1, B, Tx, na)
        S[0] = s0
        W_s = torch.cat([U_zr, k * W_a]).t()  # s → [U_zr s; k W_a s]: one product a step
        keys_k, v_k = (keys, v) if k == 1 else (k * keys, k * v)
        C_t, U_t = C.t(), U.t()
        neg = torch.zeros_like(AL[0]).masked_fill_(~mask, float("-inf"))
        for i in range(Ty):
            s = S[i]
            torch.mm(s, W_s, out=P[i])
            _attend(P[i, :, 2 * n :], keys_k, v_k, k, neg, h, SIG[i if kept else 0], AL[i], CTX[i])
            G = torch.addmm(wy[:, i], CTX[i], C_t)
            torch.add(G[:, : 2 * n], P[i, :, : 2 * n], out=ZR[i]).sigmoid_()
            z = _cell_forward(ZR[i], s, G[:, 2 * n :], U_t, RS[i], CAND[i], DIFF[i])
            torch.addcmul(s, z, DIFF[i], out=S[i + 1])
        ctx.save_for_backward(S, ZR, CAND, DIFF, RS, P, AL, CTX, keys_k, h, W_a, v, C, U_zr, U, SIG if kept else None)
        ctx.set_materialize_grads(False)  # α's gradient is None unless a loss reads α
        return S.transpose(0, 1), CTX.transpose(0, 1), AL.transpose(0, 1)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")  # type: ignore[untyped-decorator]
    @torch.amp.custom_bwd(device_type="cpu")  # type: ignore[untyped-decorator]
    def backward(ctx: Any, g_S: Tensor | None, g_ctx: Tensor | None, g_al: Tensor | None) -> tuple[Tensor | None, ...]:
        S, ZR, CAND, DIFF, RS, P, AL, CTX, keys_k, h, W_a, v, C, U_zr, U, SIG = ctx.saved_tensors
        k = ctx.k
        g_S = S.new_zeros(S.shape).transpose(0, 1) if g_S is None else g_S.to(S.dtype)
        g_ctx = CTX.new_zeros(CTX.shape).transpose(0, 1) if g_ctx is None else g_ctx.to(S.dtype)
        g_AL = None if g_al is None else g_al.to(S.dtype).transpose(0, 1)
        (Ty, B, _), na = AL.shape, keys_k.shape[2]
        n, m = S.shape[2], h.shape[2]
        # a step's gradients, [∂ candidate | ∂z | ∂r | ∂(W_a s)]: the first three ∂(C c) reordered,
        # the last three what multiplies [U_zr; W_a] back to ∂s
        X, DC = g_S.new_empty(Ty, B, 3 * n + na), g_S.new_empty(Ty, B, m)
        W_s, C_perm = torch.cat([U_zr, W_a]), torch.cat([C[2 * n :], C[: 2 * n]])
        # ∂v_a sums Ty steps: in float32 at least (under bfloat16 too, as autograd sums the reference's)
        summed = torch.promote_types(g_S.dtype, torch.float32)
        grad_v, grad_keys = g_S.new_zeros(1, na, dtype=summed), torch.zeros_like(keys_k)
        w, sig = torch.empty_like(keys_k), torch.empty_like(keys_k) if SIG is None else keys_k
        v_slope, one = k * k * v, keys_k.new_ones(())
        carry = g_S[:, Ty]
        for i in range(Ty - 1, -1, -1):
            x = X[i]
            ds = _cell_backward(
                carry, carry, ZR[i], CAND[i], DIFF[i], S[i], U, x[:, n : 2 * n], x[:, 2 * n : 3 * n], x[:, :n]
            )
            torch.addmm(g_ctx[:, i], x[:, : 3 * n], C_perm, out=DC[i])
            if SIG is not None:
                sig = SIG[i]
            else:
                _squash(keys_k, P[i, :, None, 2 * n :], k, sig)
            g_al = None if g_AL is None else g_AL[i]
            _attend_backward(DC[i], h, AL[i], sig, k, v_slope, one, w, grad_v, grad_keys, x[:, 3 * n :], g_al)
            carry = ds.addmm_(x[:, n:], W_s).add_(g_S[:, i])
        flat = X.view(Ty * B, -1)
        grad_W = flat[:, n:].t().mm(S[:-1].reshape(Ty * B, n))  # [∂U_zr; ∂W_a]
        grad_C = flat[:, : 3 * n].t().mm(CTX.view(Ty * B, m))
        grad_U = flat[:, :n].t().mm(RS.view(Ty * B, n))
        grad_h = torch.bmm(AL.permute(1, 2, 0), DC.transpose(0, 1))
        grad_wy = torch.cat([X[..., n : 3 * n], X[..., :n]], -1).transpose(0, 1)
        return (
            carry,
            grad_wy,
            grad_keys.mul_(v_slope),
            grad_h,
            None,
            grad_W[2 * n :],
            grad_v.view(na),
            torch.cat([grad_C[n:], grad_C[:n]]),
            grad_W[: 2 * n],
            grad_U,
        )


class Fusable(nn.Module):
    """A module whose teacher forcing these passes can run: a
    :class:`~nmtkit.models.layers.BiEncoder`, a :class:`~nmtkit.models.base.Seq2Seq` (RNNsearch
    and RNNencdec use them; the others ignore the switch)."""

    # set by use_fused; a plain bool, no parameter or buffer, so checkpoints never see it
    fused_steps: bool = False

    def unfused_because(self) -> str | None:
        """Why this module keeps its reference loop when the passes are asked for (None: it
        need not). The one place each such case is decided; ``train`` prints it."""
        if any(getattr(m, "ln_zr", None) is not None for m in self.modules()):
            return "layer-normalised GRUs (--layer-norm) have products the hand-written passes do not normalise"
        return None


def wanted(module: Fusable, x: Tensor) -> bool:
    """Whether ``module`` should run the passes here for input ``x``: switched on
    (:func:`use_fused`), on a CPU or a CUDA GPU in float32 or under that device's autocast to
    bfloat16 (``--bf16``), outside torch.compile, with gradients recorded. Anything else keeps the
    reference loop."""
    device = x.device.type
    autocast = device in ("cpu", "cuda") and torch.is_autocast_enabled(device)
    return (
        module.fused_steps
        and device in ("cpu", "cuda")
        and x.dtype in ((torch.float32, torch.bfloat16) if autocast else (torch.float32,))
        and (not autocast or torch.get_autocast_dtype(device) == torch.bfloat16)
        and torch.is_grad_enabled()
        and not torch.compiler.is_compiling()
        and any(p.requires_grad for p in module.parameters())
    )


def use_fused(model: nn.Module, on: bool = True) -> list[str]:
    """Run teacher forcing's recurrences (the paper-GRU encoder, RNNsearch's and RNNencdec's
    decoder) through the hand-written passes of this module, or (``on`` False) through the
    reference loops again: ``fused_steps`` on every :class:`Fusable` module of ``model`` that
    can (:meth:`Fusable.unfused_because`). Returns why the others keep their loops, each once."""
    reasons: list[str] = []
    for module in model.modules():
        if isinstance(module, Fusable):
            why = module.unfused_because() if on else None
            module.fused_steps = on and why is None
            if why is not None and why not in reasons:
                reasons.append(why)
    return reasons


class Recurrence(NamedTuple):
    """A paper-GRU's recurrent matrices: U_zr (2n, n) for the gates, U (n, n) for the candidate."""

    U_zr: Tensor
    U: Tensor


class Attention(NamedTuple):
    """Additive attention's weights (W_a (n', n), v_a (n',)) and the decoder's C (3n, m) on c_i."""

    W_a: Tensor
    v_a: Tensor
    C: Tensor


def _time_first(x: Tensor, reverse: bool) -> Tensor:
    """(B, T, …) as (T, B, …), in the order a direction reads it (``reverse``: right to left)."""
    return (x.flip(1) if reverse else x).transpose(0, 1)


def masked_grus(grus: list[Recurrence], wx: list[Tensor], mask: Tensor) -> list[Tensor]:
    """The encoder's directions (B, T, n) each, from 0, through one :class:`MaskedGRU`: the first
    left to right, a second right to left, over their inputs ``wx`` = W x + b (B, T, 3n),
    carrying the state over padding (``mask`` 0)."""
    keep = mask.to(wx[0].dtype)
    inputs = torch.stack([_time_first(x, reverse=d == 1) for d, x in enumerate(wx)], 1)
    keeps = torch.stack([_time_first(keep, reverse=d == 1) for d in range(len(grus))], 1)
    h0 = inputs.new_zeros(len(grus), wx[0].shape[0], grus[0].U.shape[1])
    U_zr, U = torch.stack([g.U_zr for g in grus]), torch.stack([g.U for g in grus])
    states = MaskedGRU.apply(inputs, h0, keeps, U_zr, U)  # type: ignore[no-untyped-call]
    out = [states[:, 0].transpose(0, 1)]
    return out + [states[:, 1].flip(0).transpose(0, 1)] if len(grus) > 1 else out


def fixed_decode(gru: Recurrence, s0: Tensor, wy: Tensor, gates: Tensor) -> Tensor:
    """RNNencdec's states s_0..s_Ty (B, Ty+1, n), whose context is fixed: :class:`MaskedGRU`
    over w_y + C c (``gates``: C c, (B, 3n))."""
    inputs = (wy + gates.unsqueeze(1)).transpose(0, 1).unsqueeze(1)  # (Ty, 1, B, 3n): one GRU
    h0, U_zr, U = s0.unsqueeze(0), gru.U_zr.unsqueeze(0), gru.U.unsqueeze(0)
    out = MaskedGRU.apply(inputs, h0, None, U_zr, U)  # type: ignore[no-untyped-call]
    return torch.cat([s0.unsqueeze(1), out[:, 0].transpose(0, 1)], 1)


def attentive_decode(
    gru: Recurrence, attention: Attention, s0: Tensor, wy: Tensor, keys: Tensor, h: Tensor, mask: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """RNNsearch's states s_0..s_Ty (B, Ty+1, n), contexts (B, Ty, m) and attention weights
    (B, Ty, Tx) through :class:`AttentiveGRU`, from s_0, w_y = W E y + b (B, Ty, 3n), the keys
    U_a h (B, Tx, n'), the annotations h (B, Tx, m) and the source mask (B, Tx)."""
    out = AttentiveGRU.apply(  # type: ignore[no-untyped-call]
        s0, wy, keys, h, mask, attention.W_a, attention.v_a, attention.C, gru.U_zr, gru.U
    )
    return cast(tuple[Tensor, Tensor, Tensor], out)
