"""The paper's gated recurrent unit, a masked bidirectional encoder, and B.1 initialisation.

torch's ``nn.GRU`` applies the reset gate after the recurrent product,
r ∘ (U s); the paper (Appendix A.1.1) applies it before, U [r ∘ s]. This
cell follows the paper. The input projections W·x of all time steps are one
matrix product before the loop, so each step does only the recurrent ones.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import _VF, nn

from . import cudnn_autocast, fused, host_free


class BlockNorm(nn.Module):
    """Layer normalisation (Ba et al. 2016) of each of ``blocks`` blocks of ``n`` units (a gate's
    pre-activation each), with a gain and a shift per unit."""

    def __init__(self, blocks: int, n: int):
        super().__init__()
        self.blocks, self.n = blocks, n
        self.gain = nn.Parameter(torch.ones(blocks * n))
        self.shift = nn.Parameter(torch.zeros(blocks * n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = nn.functional.layer_norm(x.reshape(*shape[:-1], self.blocks, self.n), (self.n,))
        return y.reshape(shape) * self.gain + self.shift


def gru_update(
    wx: torch.Tensor,
    s: torch.Tensor,
    u_zr: Callable[[torch.Tensor], torch.Tensor],
    u: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """The paper-GRU's step on (…, 3n) input projections ``wx`` and (…, n) states ``s``, given
    its recurrent products ``u_zr(s)`` (…, 2n) and ``u(r∘s)`` (…, n): apart from
    :class:`PaperGRU`, so that a cell whose weights are cast (the neural coverage's, in float32)
    steps alike."""
    n = s.shape[-1]
    zr = torch.sigmoid(wx[..., : 2 * n] + u_zr(s))
    z, r = zr[..., :n], zr[..., n:]
    candidate = torch.tanh(wx[..., 2 * n :] + u(r * s))
    return s + z * (candidate - s)


class PaperGRU(nn.Module):
    """s_i = (1−z)∘s + z∘tanh(W x + U[r∘s] + b); z, r = σ(W_{z,r} x + U_{z,r} s + b).

    ``x`` is whatever enters the gates: an embedding, or [embedding; context]. With
    ``layer_norm``, each product (W x per gate, U_{z,r} s, U[r∘s]) is layer-normalised
    before it is summed, as Nematus's layer-normalised GRU does. With ``weight_drop`` p, a
    training pass steps with :meth:`recurrence`'s dropped matrices instead of U_zr and U.
    """

    def __init__(self, input_size: int, hidden: int, layer_norm: bool = False, weight_drop: float = 0.0):
        super().__init__()
        self.hidden, self.weight_drop = hidden, weight_drop
        self.W = nn.Linear(input_size, 3 * hidden)  # [W_z; W_r; W] with biases
        self.U_zr = nn.Linear(hidden, 2 * hidden, bias=False)  # recurrent: orthogonal
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.ln_x = BlockNorm(3, hidden) if layer_norm else None
        self.ln_zr = BlockNorm(2, hidden) if layer_norm else None
        self.ln_u = BlockNorm(1, hidden) if layer_norm else None

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """The input projection of every gate, W x (…, 3n): for all time steps at once."""
        wx = cast(torch.Tensor, self.W(x))
        return wx if self.ln_x is None else cast(torch.Tensor, self.ln_x(wx))

    def recurrence(self) -> fused.Recurrence | None:
        """U_zr and U for one training pass over a batch, each weight zeroed with probability
        ``weight_drop`` and the rest scaled up to keep the expectation (DropConnect on the
        recurrent matrices, Merity et al. 2018's weight drop): one mask for every sentence and
        every time step, so that the fused passes and a CUDA graph take the matrices as they take
        U's own. None where nothing is dropped (no weight drop, or not training): the step then
        calls its layers, as search does (an int8 model's too)."""
        if not (self.training and self.weight_drop > 0):
            return None
        return fused.Recurrence(*(self._dropped(w) for w in (self.U_zr.weight, self.U.weight)))

    def _dropped(self, w: torch.Tensor) -> torch.Tensor:
        dropped = nn.functional.dropout(w, self.weight_drop, True)
        device = w.device.type
        if device in ("cpu", "cuda") and torch.is_autocast_enabled(device):  # cast once, not at every step
            dropped = dropped.to(torch.get_autocast_dtype(device))
        return dropped

    def cell(self, wx: torch.Tensor, s: torch.Tensor, rec: fused.Recurrence | None = None) -> torch.Tensor:
        """One step from the precomputed input projection ``wx`` (B, 3n) and state ``s`` (B, n),
        through the recurrent matrices ``rec`` where given (:meth:`recurrence`)."""
        if rec is None:
            return gru_update(wx, s, self._recurrent_zr, self._recurrent)
        linear = nn.functional.linear
        return gru_update(
            wx,
            s,
            lambda s: self._norm(self.ln_zr, linear(s, rec.U_zr)),
            lambda rs: self._norm(self.ln_u, linear(rs, rec.U)),
        )

    @staticmethod
    def _norm(norm: BlockNorm | None, x: torch.Tensor) -> torch.Tensor:
        return x if norm is None else cast(torch.Tensor, norm(x))

    def _recurrent_zr(self, s: torch.Tensor) -> torch.Tensor:
        return self._norm(self.ln_zr, self.U_zr(s))

    def _recurrent(self, rs: torch.Tensor) -> torch.Tensor:
        return self._norm(self.ln_u, self.U(rs))

    def masked_cell(
        self, wx: torch.Tensor, s: torch.Tensor, keep: torch.Tensor, rec: fused.Recurrence | None = None
    ) -> torch.Tensor:
        """:meth:`cell` where ``keep`` (B, 1) is 1, the state unchanged where it is 0 (padding)."""
        return s + keep * (self.cell(wx, s, rec) - s)


class BiEncoder(fused.Fusable):
    """Forward and backward paper-GRUs over one shared source embedding (Appendix A.2.1).

    Padding is handled by masks: a padded position keeps the previous state,
    so the backward RNN starts from zero at each sentence's last word and a
    sentence's annotations do not depend on how much padding follows it.
    """

    def __init__(
        self,
        vocab: int,
        emb: int,
        hidden: int,
        bidirectional: bool = True,
        layer_norm: bool = False,
        dropout: float = 0.0,
        weight_drop: float = 0.0,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        self.drop = nn.Dropout(dropout)  # on the embeddings, the GRUs' inputs
        self.fwd = PaperGRU(emb, hidden, layer_norm, weight_drop)
        self.bwd = PaperGRU(emb, hidden, layer_norm, weight_drop) if bidirectional else None

    @staticmethod
    def _run(rnn: PaperGRU, wx: torch.Tensor, mask: torch.Tensor, reverse: bool) -> torch.Tensor:
        B, T, _ = wx.shape
        s = wx.new_zeros(B, rnn.hidden)
        out = [s] * T
        # unbind once: indexing wx[:, t] in the loop costs a full-size gradient buffer per step
        steps, keep = wx.unbind(1), mask.unsqueeze(-1).to(wx.dtype).unbind(1)
        rec = rnn.recurrence()
        for t in range(T - 1, -1, -1) if reverse else range(T):
            s = rnn.masked_cell(steps[t], s, keep[t], rec)
            out[t] = s
        return torch.stack(out, 1)

    def forward(self, src: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns annotations (B, T, 2n or n) and ←h_1 (B, n) (None when unidirectional)."""
        x = self.drop(self.embed(src))
        rnns = [self.fwd] if self.bwd is None else [self.fwd, self.bwd]
        if fused.wanted(self, x):  # models.fused.use_fused: both directions stepped together
            grus = [rnn.recurrence() or fused.Recurrence(rnn.U_zr.weight, rnn.U.weight) for rnn in rnns]
            states = fused.masked_grus(grus, [rnn.inputs(x) for rnn in rnns], mask)
        else:
            states = [self._run(rnn, rnn.inputs(x), mask, reverse) for rnn, reverse in zip(rnns, (False, True))]
        if self.bwd is None:
            return states[0], None
        return torch.cat(states, -1), states[1][:, 0]


def reversal(mask: torch.Tensor, kept: int = 0) -> torch.Tensor:
    """Index (B, T) that reverses the order of each row's real positions but its last ``kept``,
    and leaves those and padding in place; it is its own inverse."""
    pos = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    n = (mask.sum(1, keepdim=True) - kept).clamp(min=0)
    return torch.where(pos < n, n - 1 - pos, pos)


def in_rows(x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``x`` (B, T, …) with each row's positions taken in ``order`` (B, T)."""
    return x.gather(1, order.view(*order.shape, *[1] * (x.dim() - 2)).expand_as(x))


class CudnnEncoder(nn.Module):
    """The same interface over torch's fused ``nn.GRU`` (cuDNN on GPUs).

    Not the paper's cell: torch's GRU applies the reset gate after the
    recurrent product, r ∘ (U s + b), and has a second bias. It buys speed
    on GPUs, where the paper-GRU loop launches several kernels per word.
    Packed sequences keep padding out, so the backward RNN still starts at
    each sentence's last word. Packing reads the lengths on the host; where
    that is not allowed (:mod:`.host_free`), each direction runs on its own
    over the padded batch, the backward one over each sentence reversed in
    place: padding then follows every sentence in both.
    """

    def __init__(
        self,
        vocab: int,
        emb: int,
        hidden: int,
        bidirectional: bool = True,
        dropout: float = 0.0,
        weight_drop: float = 0.0,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        self.drop = nn.Dropout(dropout)  # on the embeddings, the GRU's inputs
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=bidirectional)
        self.hidden, self.bidirectional, self.weight_drop = hidden, bidirectional, weight_drop

    def forward(self, src: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = self.drop(self.embed(src))  # float32 under autocast too
        dropped = self._dropped()
        with cudnn_autocast.float32(x), warnings.catch_warnings():  # not the float16 autocast would give cuDNN
            if dropped or host_free.active():  # cuDNN copies weights not its own: expected here
                warnings.filterwarnings("ignore", "RNN module weights are not part")
            if host_free.active():
                h = self._unpacked(x, mask, dropped)
            else:
                lengths = mask.sum(1).cpu()
                packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                out, _ = torch.func.functional_call(self.rnn, dropped, (packed,)) if dropped else self.rnn(packed)
                h, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return h, (h[:, 0, self.hidden :] if self.bidirectional else None)

    def _dropped(self) -> dict[str, torch.Tensor]:
        """The recurrent matrices (``weight_hh_l0``, and its reverse) for one training pass, dropped as
        :meth:`PaperGRU.recurrence` drops U_zr and U; empty where nothing is dropped."""
        if not (self.training and self.weight_drop > 0):
            return {}
        names = ["weight_hh_l0", "weight_hh_l0_reverse"] if self.bidirectional else ["weight_hh_l0"]
        return {name: nn.functional.dropout(getattr(self.rnn, name), self.weight_drop, True) for name in names}

    def _unpacked(self, x: torch.Tensor, mask: torch.Tensor, dropped: dict[str, torch.Tensor]) -> torch.Tensor:
        names = self.rnn._flat_weights_names
        weights = [dropped.get(name, w) for name, w in zip(names, cast(list[torch.Tensor], self.rnn._flat_weights))]
        state = x.new_zeros(1, x.shape[0], self.hidden)

        def direction(x: torch.Tensor, k: int) -> torch.Tensor:
            out, _ = _VF.gru(x, state, weights[4 * k : 4 * k + 4], True, 1, 0.0, self.training, False, True)
            return out

        h = direction(x, 0)
        if self.bidirectional:
            order = reversal(mask)
            h = torch.cat([h, in_rows(direction(in_rows(x, order), 1), order)], -1)
        return h * mask.unsqueeze(-1).to(h.dtype)  # zero at padding, as unpacking gives


def init_appendix_b1(model: nn.Module) -> None:
    """B.1: orthogonal recurrent matrices; N(0, 0.001²) for W_a and U_a; zeros for v_a
    and biases; N(0, 0.01²) for every other weight."""
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 2)
        if ".ln_" in name:  # layer normalisation starts as the identity
            nn.init.ones_(p) if name.endswith("gain") else nn.init.zeros_(p)
        elif name.endswith("bias") or ".v_a" in name or name.startswith("v_a") or ".bias_" in name:
            nn.init.zeros_(p)
        elif "U_zr" in name or leaf[-2:] == ["U", "weight"] or ".weight_hh" in name:
            for block in torch.split(p.data, p.shape[1], 0):  # [U_z; U_r] (and nn.GRU's [U_r; U_z; U]): each orthogonal
                nn.init.orthogonal_(block)
        elif "W_a" in name or "U_a" in name:
            nn.init.normal_(p, 0.0, 0.001)
        else:
            nn.init.normal_(p, 0.0, 0.01)
    for module in model.modules():
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()


_ONEDNN_ROWS = 128  # larger products ran 2-4x slower per row (the output outgrows the cache)

# Copies made once per layer, kept beside the layers rather than on them: a model copied or
# quantized (models.int8 deep-copies it) never meets them (oneDNN tensors cannot be copied),
# and an entry goes with its layer.
_OneDNN = tuple[tuple[int, int], torch.Tensor, torch.Tensor | None]  # (version, address), weight, bias
_ONEDNN: weakref.WeakKeyDictionary[nn.Module, _OneDNN] = weakref.WeakKeyDictionary()
_FLOAT_WEIGHTS: weakref.WeakKeyDictionary[nn.Module, tuple[torch.Tensor, torch.Tensor | None]] = (
    weakref.WeakKeyDictionary()
)


def inference_linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` for search: on a CPU without autograd, through oneDNN's float32 kernel in
    blocks of rows, which ran the demo's output layer at search's row counts faster than torch's
    default (MKL) on the CPUs ``make bench-blas`` measured.

    The weights are reordered once, so only weights that nothing trains qualify (a model
    loaded for inference, :func:`nmtkit.checkpoint.model_of`): an optimizer may write a
    parameter without bumping its version counter (torch's fused Adam on CPUs does not), and a
    copy keyed on the version then goes stale unseen, as it did under training's validation."""
    if (
        type(layer) is not nn.Linear  # an int8 layer (models.int8) has a kernel of its own
        or x.device.type != "cpu"
        or x.dtype != torch.float32
        or x.dim() != 2
        or torch.is_grad_enabled()
        or layer.weight.requires_grad
        or not torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]
        or layer.weight.dtype != torch.float32
    ):
        return cast(torch.Tensor, layer(x))
    key = (layer.weight._version, layer.weight.data_ptr())
    cache = _ONEDNN.get(layer)
    if cache is None or cache[0] != key:
        cache = (key, layer.weight.detach().to_mkldnn(), None if layer.bias is None else layer.bias.detach())
        _ONEDNN[layer] = cache
    _, weight, bias = cache
    return torch.cat(
        [
            torch._C._nn.mkldnn_linear(x[i : i + _ONEDNN_ROWS].to_mkldnn(), weight, bias).to_dense()
            for i in range(0, x.shape[0], _ONEDNN_ROWS)
        ]
    )


def restricted_output(layer: nn.Module, rows: torch.Tensor) -> nn.Module:
    """The output layer cut to the target words ``rows`` (a shortlist), for search: a frozen
    float ``nn.Linear`` of its rows, or for an int8 layer (:mod:`nmtkit.models.int8`) an int8
    layer of the whole layer's own int8 rows and scales, so that a shortlisted word scores exactly
    as in the full product. Dequantizing the int8 rows instead left --int8 --shortlist a float
    product, no faster than without the shortlist on the demo's vocabulary."""
    if isinstance(layer, nn.Linear):
        weight, bias = output_weights(layer)
        # skip_init: no random initial weights made only to be replaced
        cut = cast(
            nn.Linear,
            torch.nn.utils.skip_init(  # type: ignore[no-untyped-call]
                nn.Linear, weight.shape[1], len(rows), bias=bias is not None, device=weight.device, dtype=weight.dtype
            ),
        )
        cut.weight = nn.Parameter(weight.index_select(0, rows), requires_grad=False)
        if bias is not None:
            cut.bias = nn.Parameter(bias.index_select(0, rows), requires_grad=False)
        return cut
    quantized: Any = layer  # torch's dynamically quantized Linear
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    q = quantized.weight()
    rows_cpu = rows.to(q.device)
    weight = torch._make_per_channel_quantized_tensor(
        q.int_repr().index_select(0, rows_cpu),
        q.q_per_channel_scales().index_select(0, rows_cpu),
        q.q_per_channel_zero_points().index_select(0, rows_cpu),
        0,
    )
    bias = quantized.bias()
    int8_cut: Any = DynamicLinear(q.shape[1], len(rows), dtype=torch.qint8)  # type: ignore[no-untyped-call]
    int8_cut.set_weight_bias(weight, None if bias is None else bias.index_select(0, rows_cpu))
    return cast(nn.Module, int8_cut)


def output_weights(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A linear layer's weight and bias as float tensors: its own, or an int8 layer's
    (:mod:`nmtkit.models.int8`) dequantized."""
    if isinstance(layer, nn.Linear):
        return layer.weight.detach(), None if layer.bias is None else layer.bias.detach()
    cached = _FLOAT_WEIGHTS.get(layer)  # dequantized once: the weights never change
    if cached is None:
        quantized: Any = layer  # torch's dynamically quantized Linear
        bias = quantized.bias()
        cached = (quantized.weight().dequantize(), None if bias is None else bias.detach())
        _FLOAT_WEIGHTS[layer] = cached
    return cached
