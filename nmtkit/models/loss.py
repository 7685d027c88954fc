"""The output softmax and its cross-entropy, fused and chunked over positions.

With a 30,000-word shortlist the last layer dominates a step: B·T rows of
K logits, their log-softmax and its gradient are three B×T×K tensors
(about 1.4 GB at 80 sentences × 50 words). Since the loss is a sum, the
gradient of each row is known as soon as its row is computed:
∂L/∂z = softmax(z) − onehot(y). So the forward pass goes over the rows a
chunk at a time, computes logits, loss and that gradient in one buffer, and
keeps only ∂L/∂t (rows × l) and ∂L/∂W_o (K × l); backward merely scales
them. No B×T×K tensor ever exists, and nothing is computed twice.

:func:`shortlist` is Jean et al. (2015)'s training-time approximation: the
softmax of a minibatch runs over a subset V' of the target vocabulary that
holds every word of the minibatch's targets. With a proposal uniform over
V', the importance weights cancel and the loss is the softmax over V' alone.
Where V' is the whole vocabulary it is the full softmax, exactly.
"""

from __future__ import annotations

from typing import Any, cast

import torch

from ..core import blas
from . import host_free


def _minus_targets(p: torch.Tensor, y: torch.Tensor, kept: torch.Tensor | None, eps: float) -> torch.Tensor:
    """∂L/∂z = softmax − q, in place over the softmax ``p``: q is 1−ε on each row's target ``y``
    and ε/K on every word; rows whose ``kept`` weight is 0 (padding) get no gradient."""
    on = torch.ones_like(y, dtype=p.dtype) if kept is None else kept.unsqueeze(1)
    if kept is not None:
        p.mul_(on)
    p.scatter_add_(1, y, -(1 - eps) * on)
    if eps:
        p.sub_(on * (eps / p.shape[1]))
    return p


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        t: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        target: torch.Tensor,
        keep: torch.Tensor | None,
        chunk: int,
        grads: bool,
        mm_dtype: torch.dtype,
        smoothing: float = 0.0,
    ) -> torch.Tensor:
        needs = ctx.needs_input_grad
        want_t, want_w, want_b = grads and needs[0], grads and needs[1], grads and bias is not None and needs[2]
        w = weight.to(mm_dtype)
        acc = torch.promote_types(mm_dtype, torch.float32)  # softmax and sums: float32 at least
        grad_t = torch.empty_like(t) if want_t else None
        grad_w = torch.zeros_like(weight, dtype=acc) if want_w else None
        grad_b = torch.zeros_like(bias, dtype=acc) if want_b and bias is not None else None
        total = t.new_zeros((), dtype=acc)
        smoothed = t.new_zeros((), dtype=acc)
        eps = smoothing
        # One logits buffer for all chunks, kept under glibc's 32 MB mmap ceiling: a fresh
        # 100 MB tensor per chunk costs more in page faults than its softmax.
        chunk = max(1, min(chunk, t.shape[0]))
        z_buf = t.new_empty((chunk, weight.shape[0]), dtype=acc)
        mm_buf = z_buf if mm_dtype == acc else torch.empty_like(z_buf, dtype=mm_dtype)
        with torch.autocast(t.device.type, enabled=False):  # the dtypes here are explicit
            for start in range(0, t.shape[0], chunk):
                rows, y = t[start : start + chunk].to(mm_dtype), target[start : start + chunk].unsqueeze(1)
                n = rows.shape[0]
                z = blas.logits(rows, w, mm_buf[:n])
                if mm_buf is not z_buf:
                    z = z_buf[:n].copy_(z)
                if bias is not None:
                    z += bias
                z_y = z.gather(1, y).squeeze(1)
                # label smoothing: −Σ_k q_k log p_k with q = (1−ε)·onehot(y) + ε/K is nll + ε(z_y − mean z)
                z_mean = z.mean(-1) if eps else None
                # one exp pass, in place: z becomes exp(z − max), then the softmax
                peak = z.amax(-1, keepdim=True)
                denom = z.sub_(peak).exp_().sum(-1, keepdim=True)
                nll = peak.squeeze(1) + denom.squeeze(1).log() - z_y
                kept = None if keep is None else keep[start : start + chunk].to(acc)
                total += (nll if kept is None else nll * kept).sum()
                if z_mean is not None:
                    row = nll + eps * (z_y - z_mean)
                    smoothed += (row if kept is None else row * kept).sum()
                if not (want_t or want_w or want_b):
                    continue
                g = _minus_targets(z.div_(denom), y, kept, eps)
                if grad_b is not None:
                    grad_b += g.sum(0)
                if mm_dtype == acc:
                    if grad_w is not None:
                        grad_w.addmm_(g.t(), rows)
                else:
                    g = mm_buf[:n].copy_(g)
                    if grad_w is not None:
                        grad_w += g.t() @ rows
                if grad_t is not None:
                    grad_t[start : start + chunk] = g @ w
        ctx.save_for_backward(grad_t, grad_w, grad_b)
        ctx.weight_dtype = weight.dtype
        return torch.stack([smoothed, total]) if eps else total

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        grad_t, grad_w, grad_b = ctx.saved_tensors
        if grad_out.dim():  # [smoothed loss, NLL]: the gradient is the first's
            grad_out = grad_out[0]
        scale = grad_out.to(grad_w.dtype if grad_w is not None else grad_out.dtype)
        return (
            None if grad_t is None else grad_t * scale.to(grad_t.dtype),
            None if grad_w is None else (grad_w * scale).to(ctx.weight_dtype),
            None if grad_b is None else (grad_b * scale).to(ctx.weight_dtype),
            None,
            None,
            None,
            None,
            None,
            None,
        )


# Logits computed at a time by the output layer's loss: cache-sized on a CPU, few kernel launches on a GPU.
CPU_CHUNK_ELEMENTS, GPU_CHUNK_ELEMENTS = 1 << 22, 1 << 26


def linear_cross_entropy(
    t: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    target: torch.Tensor,
    ignore_index: int = 0,
    chunk_elements: int = 0,
    drop_padding: bool | None = None,
    smoothing: float = 0.0,
) -> torch.Tensor:
    """Σ over rows of −log softmax(t Wᵀ + b)[target], skipping ``ignore_index`` rows.

    With ``smoothing`` ε > 0 (label smoothing, Szegedy et al. 2016): the pair [Σ −Σ_k q_k log
    p_k, Σ NLL] with q = (1−ε) on the target and ε/K on each of the K words; the gradient is the
    first's, the second is the plain NLL, for the logs.

    ``t`` (N, l), ``weight`` (K, l), ``target`` (N,). Equal to
    ``F.cross_entropy(F.linear(t, weight, bias), target, reduction="sum")``
    in value and gradient, in O(chunk_elements) memory (rows are taken
    ``chunk_elements // K`` at a time). The gradient is computed
    in the forward pass, so call ``backward`` on the result (or a multiple
    of it) at most once. Under autocast the matrix products run in the
    autocast dtype and the softmax in float32, as autocast would do.

    On a CPU the ``ignore_index`` rows are dropped first, so padding costs
    nothing; on a GPU they are computed and weighted 0, since finding them
    (``nonzero``) would make the host wait for the device in every update,
    nor while the model may not read values on the host (:mod:`.host_free`);
    ``drop_padding`` overrides the choice.
    Chunks default to 4M logits on a CPU (cache-sized) and 64M on a GPU
    (few chunks: few kernel launches).
    """
    device = t.device.type
    mm_dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else weight.dtype
    chunk_elements = chunk_elements or (CPU_CHUNK_ELEMENTS if device == "cpu" else GPU_CHUNK_ELEMENTS)
    keep: torch.Tensor | None = None
    drop = (device == "cpu" and not host_free.active()) if drop_padding is None else drop_padding
    if drop:
        real = (target != ignore_index).nonzero().squeeze(1)  # padding rows cost nothing
        t, target = t.index_select(0, real), target.index_select(0, real)
    else:
        keep = target != ignore_index
    return cast(
        torch.Tensor,
        _LinearCrossEntropy.apply(  # type: ignore[no-untyped-call]
            t,
            weight,
            bias,
            target,
            keep,
            max(1, chunk_elements // weight.shape[0]),
            torch.is_grad_enabled(),
            mm_dtype,
            smoothing,
        ),
    )


def shortlist(targets: torch.Tensor, vocab_size: int, size: int, ignore_index: int = 0) -> torch.Tensor:
    """Jean et al.'s V' for one minibatch (CPU tensors, before the batch goes to the device),
    sorted: the distinct words of ``targets``, always ``ignore_index`` (so that it keeps its id),
    topped up to ``size`` with other words drawn uniformly from torch's global generator (so a
    resumed run draws the same ones)."""
    present = torch.zeros(vocab_size, dtype=torch.bool)
    present[targets.flatten()] = True
    present[ignore_index] = True
    missing = size - int(present.sum())
    if missing > 0:
        absent = (~present).nonzero().squeeze(1)
        present[absent[torch.randperm(len(absent))[:missing]]] = True
    return present.nonzero().squeeze(1)


def shortlisted_cross_entropy(
    t: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    target: torch.Tensor,
    words: torch.Tensor,
    ignore_index: int = 0,
    smoothing: float = 0.0,
) -> torch.Tensor:
    """:func:`linear_cross_entropy` over the rows ``words`` of the output layer (a
    :func:`shortlist` of ``target``): gradients reach only those rows."""
    lookup = torch.full((weight.shape[0],), -1, dtype=torch.long, device=target.device)
    lookup[words] = torch.arange(len(words), device=target.device)
    local = lookup[target]  # −1 would be a target missing from ``words``: index_select refuses it
    return linear_cross_entropy(
        t,
        weight.index_select(0, words),
        None if bias is None else bias.index_select(0, words),
        local,
        ignore_index=int(lookup[ignore_index]) if ignore_index else 0,  # sorted: <pad> (0) is first, unread
        smoothing=smoothing,
    )


def alignment_cross_entropy(
    alpha: torch.Tensor, guide: torch.Tensor, fed: torch.Tensor | None = None, eps: float = 1e-6, logp: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Guided alignment's loss (Chen et al. 2016; Marian's ``--guided-alignment-cost ce``): the
    cross-entropy −Σ_j g_ij log(α_ij + ε) of each target position's attention α_i (B, Ty, Tx)
    against its row of the guide (:func:`~nmtkit.data.batching.guide`), summed over the
    positions that have links (float32), and how many they are; with ``logp``, ``alpha`` holds
    log α already (an alignment head's log-softmax). ``fed`` (B, Ty), for models whose
    attention at step i aligns the word fed in, y_{i−1} (Luong et al.'s content scores): whether
    step i's input is a word; step i is then held to guide row i − 1, and a step fed padding
    to nothing."""
    if fed is not None:
        alpha, guide = alpha[:, 1:], guide[:, : alpha.shape[1] - 1] * fed[:, 1:, None].to(guide.device)
    guide = guide[:, : alpha.shape[1], : alpha.shape[2]].to(alpha.device)
    total = -(guide * (alpha.float() if logp else torch.log(alpha.float() + eps))).sum()
    return total, (guide.sum(-1) > 0).sum()


def unlinked_to_end(guide: torch.Tensor, src_mask: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """The guide (B, Ty, Tx) with each real target word the aligner left unlinked (a row of
    zeros) linked to its source's </s> instead, the alignment head's "no link" (the last real
    position of ``src_mask``); padding rows stay empty."""
    guide = guide[:, : tgt_out.shape[1], : src_mask.shape[1]].to(src_mask.device)
    empty = (guide.sum(-1) == 0) & (tgt_out != 0)  # <pad> is 0
    end = (src_mask.sum(1).long() - 1).clamp(min=0)
    # compared, not put by index: a number put by index is copied from the host, which waits for a GPU
    null = (torch.arange(guide.shape[2], device=guide.device) == end[:, None, None]).to(guide.dtype)  # (B, 1, Tx)
    return guide + null * empty.unsqueeze(-1).to(guide.dtype)
