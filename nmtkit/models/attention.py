"""Additive attention of Bahdanau et al. (2015), Appendix A.1.2 and A.2.2.

e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j); α_i = softmax_j(e_i) over real
words only; c_i = Σ_j α_ij h_j. ``keys`` = U_a h is computed once per
sentence (``precompute``), since it does not depend on i.

Training saves, for every target position, what backward needs; for the
energies that would be tanh(U_a h + W_a s) — B×Tx×n' floats a step, most
of the activation memory of a batch. ``_Energy`` keeps only W_a s and
recomputes the tanh in backward: one more elementwise pass per step.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from nmtkit.models import activation


class _Energy(torch.autograd.Function):
    """e = tanh(keys + q) · v: keys (B, Tx, n'), q (B, n'), v (n',) → (B, Tx)."""

    @staticmethod
    def forward(ctx: Any, keys: torch.Tensor, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(keys, q, v)
        return torch.nn.functional.linear(activation.tanh_(keys + q.unsqueeze(1)), v.unsqueeze(0)).squeeze(-1)

    @staticmethod
    def backward(ctx: Any, grad_e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        keys, q, v = ctx.saved_tensors
        a = activation.tanh_(keys + q.unsqueeze(1))
        grad_v = grad_e.reshape(1, -1).mm(a.flatten(0, 1)).squeeze(0)
        grad_pre = torch.ops.aten.tanh_backward(grad_e.unsqueeze(-1) * v, a)  # ∂e ∘ v ∘ (1 − a²)
        return grad_pre, grad_pre.sum(1), grad_v


def _search_energies(keys: torch.Tensor, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The energies without autograd, up to a constant per row. Where tanh goes through σ
    (:func:`~nmtkit.models.activation.through_sigmoid`), v·tanh(x) = 2 v·σ(2x) − Σv and the
    softmax ignores −Σv: three passes over the B×Tx×n' tensor (add, scale, σ) instead of
    _Energy's six, on the tensor that makes a search step's attention cost as much as its
    products (the fused training pass, models.fused, reads the energies the same way)."""
    x = torch.add(keys, q.unsqueeze(1))
    if not activation.through_sigmoid(x):
        return torch.mv(x.tanh_().view(-1, x.shape[-1]), v).view(x.shape[:2])
    return torch.mv(x.mul_(2).sigmoid_().view(-1, x.shape[-1]), v * 2).view(x.shape[:2])


class AdditiveAttention(nn.Module):
    """With a ``coverage`` of d numbers per source word (Tu et al. 2016: 1 for the linguistic
    coverage, d for the neural one; 0: none), the energies read each word's C_{i−1,j} too:
    e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j + V_a C_{i−1,j})."""

    def __init__(self, query: int, annotation: int, align: int, coverage: int = 0):
        super().__init__()
        self.W_a = nn.Linear(query, align, bias=False)
        self.U_a = nn.Linear(annotation, align)
        self.v_a = nn.Linear(align, 1, bias=False)
        self.V_a = nn.Linear(coverage, align, bias=False) if coverage else None

    def precompute(self, h: torch.Tensor) -> torch.Tensor:
        """U_a h: (B, Tx, 2n) → (B, Tx, n')."""
        return cast(torch.Tensor, self.U_a(h))

    def forward(
        self,
        s_prev: torch.Tensor,
        keys: torch.Tensor,
        h: torch.Tensor,
        mask: torch.Tensor,
        coverage: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Context (B, 2n) and weights α (B, Tx) for decoder states ``s_prev`` (B, n), and the
        coverage (B, Tx, d) of a coverage model."""
        q = self.W_a(s_prev)
        if self.V_a is not None:
            assert coverage is not None
            keys = keys + F.linear(coverage.to(keys.dtype), self.V_a.weight.to(keys.dtype))
        if torch.compiler.is_compiling():
            # inductor fuses this and recomputes the tanh in backward by itself (_Energy's trick)
            e = torch.tanh(keys + q.to(keys.dtype).unsqueeze(1)) @ self.v_a.weight[0].to(keys.dtype)
        elif torch.is_grad_enabled():
            v = self.v_a.weight[0].to(keys.dtype)
            e = _Energy.apply(keys, q.to(keys.dtype), v)  # type: ignore[no-untyped-call]
        else:
            e = _search_energies(keys, q.to(keys.dtype), self.v_a.weight[0].to(keys.dtype))
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(alpha.unsqueeze(1), h).squeeze(1), alpha


# -- Luong, Pham & Manning (2015), section 3 ----------------------------------------------------


class LuongAttention(nn.Module):
    """Attention on the current decoder state h_t (not s_{i-1}): a_t, then c_t = Σ_s a_t(s) h̄_s.

    Scores (Eq. 8 and 9): ``dot`` h_tᵀh̄_s; ``general`` h_tᵀW_a h̄_s; ``concat``
    v_aᵀtanh(W_a[h_t; h̄_s]); ``location`` softmax(W_a h_t + b), which never reads h̄.
    The parts that depend on h̄ only (W_a h̄, the h̄ half of concat's W_a) are
    computed once per sentence by ``precompute``.

    Windows (section 3.2): ``global`` attends to every source word; ``local-m``
    to [p_t − D, p_t + D] with p_t = t; ``local-p`` to the window around
    p_t = S·sigmoid(v_pᵀtanh(W_p h_t)), its weights then multiplied by
    exp(−(s − p_t)²/2σ²) with σ = D/2 (Eq. 10, not renormalised; ``renorm``
    divides them by their sum, which the paper does not). Only local-p
    has the Gaussian: the paper's local-m is "the same as the global model
    except that a_t is fixed-length and shorter". Positions outside the
    sentence are ignored; local-m's p_t is clamped to the last source word so
    that an output longer than S + D still sees one. ``mirrored`` (a right-to-left
    model's, whose first target word is the sentence's last): local-m's p_t = S − 2 − t,
    S counting ``</s>``, clamped to the first source word. A window holds the
    positions within D of p_t: 2D + 1 of them where p_t is whole (local-m), 2D
    where it is real (local-p). It is a mask over the whole sentence: at the
    paper's 50 words, gathering the window's annotations costs more than
    scoring them all.

    ``location`` learns ``max_src`` position logits: a shorter sentence uses the
    first of them, a longer one gives its later words no weight (footnote 6),
    unless a local-m window lies wholly past them, whose positions it then
    weighs evenly.
    """

    def __init__(
        self,
        score: str,
        window: str,
        hidden: int,
        align: int,
        max_src: int,
        D: int,
        renorm: bool = False,
        mirrored: bool = False,
    ):
        super().__init__()
        self.score, self.window, self.D, self.renorm, self.mirrored = score, window, D, renorm, mirrored
        self.seen: list[torch.Tensor] | None = None  # p_t of each call, while watched (window_watch)
        if score == "general":
            self.W_a = nn.Linear(hidden, hidden, bias=False)
        elif score == "concat":
            self.W_q = nn.Linear(hidden, align, bias=False)
            self.W_k = nn.Linear(hidden, align, bias=False)
            self.v_a = nn.Linear(align, 1, bias=False)
        elif score == "location":
            self.W_a = nn.Linear(hidden, max_src)
        if window == "local-p":
            self.W_p = nn.Linear(hidden, align, bias=False)
            self.v_p = nn.Linear(align, 1, bias=False)

    def precompute(self, h: torch.Tensor) -> torch.Tensor | None:
        """The h̄-only half of the score: (B, Tx, n) → (B, Tx, ·), or None."""
        if self.score == "general":
            return cast(torch.Tensor, self.W_a(h))
        if self.score == "concat":
            return cast(torch.Tensor, self.W_k(h))
        return None

    def _scores(self, q: torch.Tensor, keys: torch.Tensor | None, h: torch.Tensor) -> torch.Tensor:
        """(B, Tq, Tx) scores for queries q (B, Tq, n)."""
        if self.score == "dot":
            return torch.bmm(q, h.transpose(1, 2))
        if self.score == "general":
            assert keys is not None
            return torch.bmm(q, keys.to(q.dtype).transpose(1, 2))
        if self.score == "concat":
            assert keys is not None  # one query position at a time: no B×Tq×Tx×n' tensor
            wq, v = self.W_q(q).to(keys.dtype), self.v_a.weight[0].to(keys.dtype)
            return torch.stack([_Energy.apply(keys, w, v) for w in wq.unbind(1)], 1)  # type: ignore[no-untyped-call]
        Tx, L = h.shape[1], self.W_a.out_features
        z = self.W_a(q)  # words past the L-th: a score that exp turns into exactly 0 (−inf would
        # make a local window lying wholly past L all −inf, and its softmax NaN)
        return z[..., :Tx] if Tx <= L else torch.cat([z, z.new_full((*z.shape[:2], Tx - L), -1e9)], -1)

    def centre(self, q: torch.Tensor, t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """p_t (B, Tq) for queries q (B, Tq, n) at target positions t (B, Tq): in float32, since
        bfloat16 holds positions past 256 only to even numbers and S·σ to a few tenths."""
        S = mask.sum(1, keepdim=True).float()
        if self.window == "local-m":
            if self.mirrored:  # the last word (</s> at S - 1 ends the source) for t = 0
                return torch.clamp(S - 2 - t.float(), min=0)
            return torch.minimum(t.float(), S - 1)
        return S * torch.sigmoid(self.v_p(torch.tanh(self.W_p(q))).squeeze(-1).float())

    def forward(
        self, q: torch.Tensor, keys: torch.Tensor | None, h: torch.Tensor, mask: torch.Tensor, t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Contexts c (B, Tq, n) and weights a (B, Tq, Tx) for decoder states q (B, Tq, n)
        at target positions t (B, Tq) (0 for the first target word)."""
        e = self._scores(q, keys, h).float()
        allowed = mask.unsqueeze(1)
        if self.window != "global":
            p = self.centre(q, t, mask)
            if self.seen is not None:
                self.seen.append(p.detach())
            distance = torch.arange(h.shape[1], device=h.device).float() - p.unsqueeze(-1)
            allowed = allowed & (distance.abs() <= self.D)
        a = torch.softmax(e.masked_fill(~allowed, float("-inf")), -1)
        if self.window == "local-p":
            a = a * torch.exp(-distance.square() / (2 * (self.D / 2) ** 2))
            if self.renorm:  # the window's softmax adds to 1 and its Gaussian is ≥ e^-2: no division by 0
                a = a / a.sum(-1, keepdim=True)
        return torch.bmm(a.to(h.dtype), h), a
