"""RNNsearch (Bahdanau et al. 2015, Appendix A.2) and RNNencdec (Cho et al. 2014a).

Both share one decoder: a paper-GRU whose gates all see [E y_{i-1}; c_i],
s_0 = tanh(W_s ←h_1) (RNNencdec: tanh(W_s c)), and the deep output
t̃_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i, maxout over pairs, softmax over
W_o t_i (W_o W_r t_i with ``output_rank``: the factored output of the paper's
code, GroundHog). RNNsearch recomputes c_i by attention on s_{i-1}; RNNencdec
fixes c_i to the encoder's last forward state →h_{T_x} (the paper's remark in
A.2.2), with a unidirectional encoder of n units as in Cho et al.

``_recur`` (context + GRU update) and ``deep_output`` are the decoder step.
Teacher forcing (``teacher_forced``) loops ``_recur`` and applies
``deep_output`` to all positions at once; search calls ``step``, which
chains the same two. The
readout sees s_{i-1} (``readout="prev"``, the equation for t̃_i) or s_i
(``readout="next"``).
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from . import fused
from .alignment_head import AlignmentHead
from .attention import AdditiveAttention
from .base import EncoderOut, Seq2Seq
from .config import CoverageConfig, GRUConfig, RNNSearchConfig
from .coverage import coverage_model
from .layers import BiEncoder, BlockNorm, CudnnEncoder, PaperGRU, init_appendix_b1


class RNNSearch(Seq2Seq):
    attentive = True
    cfg: GRUConfig

    def __init__(self, cfg: GRUConfig):
        super().__init__()
        if isinstance(cfg, RNNSearchConfig) != self.attentive:
            raise ValueError(f"{type(self).__name__} is made from its own family's config, not a {type(cfg).__name__}")
        self.cfg = cfg
        n, m, ctx = cfg.hidden, cfg.emb, (2 if self.attentive else 1) * cfg.hidden
        # what reads or trains the attention: RNNsearch's config has it, RNNencdec has no attention
        searching = cfg if isinstance(cfg, RNNSearchConfig) else None
        coverage = coverage_model(CoverageConfig() if searching is None else searching.coverage, ctx, n)
        p, wd = cfg.dropout, cfg.weight_drop
        if cfg.layer_norm:
            self.encoder: nn.Module = BiEncoder(
                cfg.src_vocab, m, n, bidirectional=self.attentive, layer_norm=True, dropout=p, weight_drop=wd
            )
        else:
            encoder = {"paper": BiEncoder, "cudnn": CudnnEncoder}[cfg.encoder]
            self.encoder = encoder(cfg.src_vocab, m, n, bidirectional=self.attentive, dropout=p, weight_drop=wd)
        self.drop = nn.Dropout(p)  # on the target embeddings and the deep output (identity in search)
        self.coverage_dim = 0 if coverage is None else coverage.dim
        self.attention = AdditiveAttention(n, ctx, cfg.align, self.coverage_dim) if self.attentive else None
        self.coverage = coverage  # registered after the attention, as 1.1 did: the same initial weights
        self.W_s = nn.Linear(n if self.attentive else ctx, n)
        self.embed = nn.Embedding(cfg.tgt_vocab, m, padding_idx=0)
        self.gru = PaperGRU(m, n, cfg.layer_norm, wd)  # W, U on E y_{i-1} and s_{i-1}
        self.C = nn.Linear(ctx, 3 * n, bias=False)  # [C_z; C_r; C] on c_i
        self.ln_c = BlockNorm(3, n) if cfg.layer_norm else None
        self.U_o = nn.Linear(n, 2 * cfg.maxout)
        self.V_o = nn.Linear(m, 2 * cfg.maxout, bias=False)
        self.C_o = nn.Linear(ctx, 2 * cfg.maxout, bias=False)
        width = cfg.output_rank or cfg.maxout  # what W_o reads: t, or W_r t (GroundHog's factored output)
        self.W_r = nn.Linear(cfg.maxout, width, bias=False) if cfg.output_rank else None
        self.W_o = nn.Linear(width, cfg.tgt_vocab)
        head = searching is not None and searching.alignment_head
        self.align_head = AlignmentHead(width, m, ctx, cfg.align) if head else None
        init_appendix_b1(self)
        if self.align_head is not None:
            self.align_head.reset_parameters()
        if cfg.tie_embeddings and width != m:
            raise ValueError(
                f"tied embeddings need {'output_rank' if cfg.output_rank else 'maxout'} = emb (got {width} and {m})"
            )
        self.tie_weights()

    def tie_weights(self) -> None:
        if self.cfg.tie_embeddings:  # one K × m matrix reads the target words in and scores them out
            self.W_o.weight = self.embed.weight

    # -- encoder -------------------------------------------------------------
    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> EncoderOut:
        h, back_first = self.encoder(src, mask)
        if self.attention is not None:
            return EncoderOut(
                h,
                mask,
                keys=self.attention.precompute(h),
                summary=back_first,
                coverage=None if self.coverage is None else self.coverage.precompute(h),
            )
        last = (mask.sum(1) - 1).clamp(min=0)
        c = h[torch.arange(h.shape[0], device=h.device), last]
        return EncoderOut(h, mask, keys=self._gates(c), summary=c)  # c is fixed: C c once per sentence

    def init_state(self, enc: EncoderOut) -> torch.Tensor:
        """s_0; with a coverage model [s_0; C_0], C_0 = 0 (B, Tx·d): one tensor, so that search
        reorders and drops the coverage of each hypothesis with its state (and an ensemble splits
        its members' states by width). That tensor is float32 under bfloat16 too: C sums a
        step's small share at a time, which bfloat16's 8 bits would round away."""
        assert enc.summary is not None
        s = torch.tanh(self.W_s(enc.summary))
        if not self.coverage_dim:
            return s
        return torch.cat(
            [s.float(), s.new_zeros(s.shape[0], enc.mask.shape[1] * self.coverage_dim, dtype=torch.float32)], 1
        )

    def _split(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """s (B, n), in the weights' dtype, and the coverage C (B, Tx, d) (None without a
        coverage model) of a state."""
        if not self.coverage_dim:
            return state, None
        s = state[:, : self.cfg.hidden].to(self.embed.weight.dtype)  # never int8's
        return s, state[:, self.cfg.hidden :].reshape(len(state), -1, self.coverage_dim)

    def _join(
        self,
        s: torch.Tensor,
        s_prev: torch.Tensor,
        coverage: torch.Tensor | None,
        alpha: torch.Tensor | None,
        enc: EncoderOut,
    ) -> torch.Tensor:
        """The next state: s_i, and with a coverage model C_i (:mod:`.coverage`)."""
        if coverage is None:
            return s
        assert alpha is not None and self.coverage is not None and enc.coverage is not None
        new = self.coverage(coverage, alpha, s_prev, enc.coverage)
        return torch.cat([s.float(), new.flatten(1).float()], 1)

    # -- the decoder step ------------------------------------------------------
    def _context(
        self, s_prev: torch.Tensor, enc: EncoderOut, coverage: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.attention is None:
            assert enc.summary is not None
            return enc.summary, None
        assert enc.keys is not None
        return cast(tuple[torch.Tensor, torch.Tensor], self.attention(s_prev, enc.keys, enc.h, enc.mask, coverage))

    def _recur(
        self,
        w_y: torch.Tensor,
        s_prev: torch.Tensor,
        enc: EncoderOut,
        coverage: torch.Tensor | None = None,
        rec: fused.Recurrence | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """c_i from s_{i-1} (and C_{i-1}), then s_i. ``w_y`` is W E y_{i-1} for all three gates (B, 3n);
        ``rec`` the GRU's dropped recurrent matrices in a training pass (:meth:`PaperGRU.recurrence`)."""
        c, alpha = self._context(s_prev, enc, coverage)
        gates = self._gates(c) if self.attention is not None else enc.keys  # RNNencdec: C c, precomputed
        assert gates is not None
        return self.gru.cell(w_y + gates, s_prev, rec), c, alpha

    def _gates(self, c: torch.Tensor) -> torch.Tensor:
        """C c_i for the three gates (layer-normalised with the GRU)."""
        gates = cast(torch.Tensor, self.C(c))
        return gates if self.ln_c is None else cast(torch.Tensor, self.ln_c(gates))

    def deep_output(self, s: torch.Tensor, e_y: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """What W_o scores: t = maxout over pairs of U_o s + V_o E y + C_o c, dropped out in
        training, then W_r t where the output is factored (``output_rank``; GroundHog dropped t
        too, before its factored softmax); works on (..., ·)."""
        t = cast(torch.Tensor, self.U_o(s) + self.V_o(e_y) + self.C_o(c))
        t = self.drop(t.reshape(*t.shape[:-1], -1, 2).amax(-1))
        return t if self.W_r is None else cast(torch.Tensor, self.W_r(t))

    def step(
        self, y_prev: torch.Tensor, state: torch.Tensor, enc: EncoderOut
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One target position: log-probabilities (B, K), the next state (s_i (B, n), with C_i
        for a coverage model), α_i (B, Tx) or None."""
        e_y = self.drop(self.embed(y_prev))
        s_prev, coverage = self._split(state)
        s, c, alpha = self._recur(self.gru.inputs(e_y), s_prev, enc, coverage)
        t = self.deep_output(s_prev if self.cfg.readout == "prev" else s, e_y, c)
        return self.next_word_logp(t), self._join(s, s_prev, coverage, alpha, enc), alpha

    def teacher_forced(self, enc: EncoderOut, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Readout features t (B, Ty, l) for the target prefix ``tgt_in`` (B, Ty), and the
        attention weights α (B, Ty, Tx) of every position (None for RNNencdec), through which
        a loss can take a gradient (guided alignment) on either path."""
        state = self.init_state(enc)
        e_y = self.drop(self.embed(tgt_in))
        rec = self.gru.recurrence()  # one mask for every target position
        if fused.wanted(self, e_y):  # the whole recurrence by hand (models.fused.use_fused)
            seen, c_all, alpha = self._fused(state, self.gru.inputs(e_y), enc, rec)
            return self.deep_output(seen, e_y, c_all), alpha
        states, contexts, alphas = [], [], []
        for w_y in self.gru.inputs(e_y).unbind(1):  # unbind: one backward op, not one per slice
            s_prev, coverage = self._split(state)
            s, c, alpha = self._recur(w_y, s_prev, enc, coverage, rec)
            state = self._join(s, s_prev, coverage, alpha, enc)
            states.append(s_prev if self.cfg.readout == "prev" else s)
            contexts.append(c)
            alphas.append(alpha)
        t = self.deep_output(torch.stack(states, 1), e_y, torch.stack(contexts, 1))
        return t, None if self.attention is None else torch.stack(cast(list[torch.Tensor], alphas), 1)

    def _fused(
        self, s0: torch.Tensor, wy: torch.Tensor, enc: EncoderOut, rec: fused.Recurrence | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Teacher forcing's recurrence through models.fused: the states the readout sees, the
        contexts and α."""
        gru = rec or fused.Recurrence(self.gru.U_zr.weight, self.gru.U.weight)
        assert enc.keys is not None
        if self.attention is None:
            assert enc.summary is not None
            states = fused.fixed_decode(gru, s0, wy, enc.keys)
            contexts, alpha = enc.summary.unsqueeze(1).expand(-1, wy.shape[1], -1), None
        else:
            att = fused.Attention(self.attention.W_a.weight, self.attention.v_a.weight[0], self.C.weight)
            states, contexts, alpha = fused.attentive_decode(gru, att, s0, wy, enc.keys, enc.h, enc.mask)
        return (states[:, :-1] if self.cfg.readout == "prev" else states[:, 1:]), contexts, alpha

    def output_layer(self) -> nn.Linear:
        return self.W_o

    def unfused_because(self) -> str | None:
        if self.coverage is not None:
            return "the coverage model's decoder has no hand-written pass: it trains through the reference loop"
        return super().unfused_because()

    def head_alignment_logp(
        self, enc: EncoderOut, t: torch.Tensor, tgt_out: torch.Tensor, alpha: torch.Tensor | None
    ) -> torch.Tensor | None:
        if self.align_head is None:
            return None
        assert alpha is not None
        return cast(torch.Tensor, self.align_head(t, self.embed(tgt_out), enc.h, enc.mask, alpha))

    def step_functions(self) -> list[tuple[nn.Module, str]]:
        found: list[tuple[nn.Module, str]] = [(self, "_recur")]
        if isinstance(self.encoder, BiEncoder):
            found += [(rnn, "masked_cell") for rnn in (self.encoder.fwd, self.encoder.bwd) if rnn is not None]
        return found


class RNNEncDec(RNNSearch):
    attentive = False
