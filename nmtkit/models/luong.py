"""The stacked-LSTM attention models of Luong, Pham & Manning (2015).

Encoder: L LSTM layers over the source embedding, optionally reading the
sentence backwards (Sutskever et al. 2014; ``</s>`` stays last). Decoder: L
LSTM layers started from the encoder's final (h, c) per layer, fed E y_{t-1},
and with input feeding [E y_{t-1}; h̃_{t-1}] (section 3.3). From the top state
h_t: attention gives c_t (:class:`~nmtkit.models.attention.LuongAttention`),
h̃_t = tanh(W_c[c_t; h_t]) (Eq. 5) and p(y_t) = softmax(W_s h̃_t) (Eq. 6).
Without attention (``attention="none"``), h̃_t = h_t: the paper's "Base".

Dropout (Zaremba et al. 2015) acts on the connections that are not
recurrent: each LSTM layer's input and h̃_t. Parameters start uniform in
[−0.1, 0.1] (section 4.1).

The annotations are kept in the sentence's own order even when it is read
backwards, so attention maps, ``--replace-unk`` and align-plot need nothing
special; local-m's p_t = t and location scores count positions in that order.

``_decode`` is the decoder step, for any number of target positions: search
calls it with one, teacher forcing with all of them at once when there is no
input feeding (one fused LSTM call), else once per position. The search state
is one tensor per row: the decoder's (h, c) of every layer, h̃_{t−1} and t.
"""

from __future__ import annotations

import torch
from torch import nn

from . import host_free
from .attention import LuongAttention
from .base import EncoderOut, Seq2Seq
from .config import LuongConfig
from .layers import in_rows, reversal
from .stacked_lstm import StackedLSTM


class Luong(Seq2Seq):
    cfg: LuongConfig
    # a subclass's own attention (another score) is made here, before the weights' initialisation
    attention_class: type[LuongAttention] = LuongAttention

    def __init__(self, cfg: LuongConfig):
        super().__init__()
        self.cfg = cfg
        n, m, L = cfg.hidden, cfg.emb, cfg.layers
        self.drop = nn.Dropout(cfg.dropout)
        self.src_embed = nn.Embedding(cfg.src_vocab, m, padding_idx=0)
        self.encoder = StackedLSTM(m, n, L, batch_first=True, dropout=cfg.dropout if L > 1 else 0.0)
        self.embed = nn.Embedding(cfg.tgt_vocab, m, padding_idx=0)
        self.decoder = StackedLSTM(
            m + (n if cfg.input_feed else 0), n, L, batch_first=True, dropout=cfg.dropout if L > 1 else 0.0
        )
        self.attention = (
            None
            if cfg.attention == "none"
            else self.attention_class(
                cfg.score,
                cfg.attention,
                n,
                cfg.align,
                cfg.max_src,
                cfg.window,
                renorm=cfg.window_renorm,
                mirrored=cfg.right_to_left,
            )
        )
        self.W_c = nn.Linear(2 * n, n, bias=False) if self.attention is not None else None
        self.W_s = nn.Linear(n, cfg.tgt_vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -0.1, 0.1)
        for emb in (self.src_embed, self.embed):
            emb.weight.data[0].zero_()

    # -- encoder ----------------------------------------------------------------
    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> EncoderOut:
        """Annotations h̄ (B, Tx, n), keys (the h̄ half of the score) and, as ``summary``,
        the final (h, c) of every layer (B, 2·L·n)."""
        # the words reversed, ``</s>`` kept last
        order = reversal(mask, kept=1) if self.cfg.reverse_source else None
        if order is not None:
            src = in_rows(src, order)
        x = self.drop(self.src_embed(src))
        if host_free.active():
            h, (h_n, c_n) = self.encoder.masked(x, mask)
        else:
            lengths = mask.sum(1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
            out, (h_n, c_n) = self.encoder(packed)
            h, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        if order is not None:
            h = in_rows(h, order)
        keys = self.attention.precompute(h) if self.attention is not None else None
        return EncoderOut(h, mask, keys=keys, summary=self._flat(h_n, c_n))

    @staticmethod
    def _flat(h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """(L, B, n) × 2 → (B, 2·L·n), float32 whatever autocast did."""
        return torch.cat([h.transpose(0, 1).flatten(1), c.transpose(0, 1).flatten(1)], 1).float()

    def unfused_because(self) -> str | None:
        return "Luong et al.'s stacked LSTMs have no hand-written passes"

    def _unflat(self, hc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        L, n = self.cfg.layers, self.cfg.hidden
        h, c = hc.view(hc.shape[0], 2, L, n).permute(1, 2, 0, 3).unbind(0)
        return h.contiguous(), c.contiguous()

    def init_state(self, enc: EncoderOut) -> torch.Tensor:
        """[(h, c) of every layer; h̃_0 = 0 (with input feeding); t = 0]."""
        assert enc.summary is not None
        B = enc.summary.shape[0]
        extra = enc.summary.new_zeros(B, (self.cfg.hidden if self.cfg.input_feed else 0) + 1)
        return torch.cat([enc.summary, extra], 1)

    # -- the decoder step ----------------------------------------------------------
    def _decode(
        self,
        e_y: torch.Tensor,
        hc: tuple[torch.Tensor, torch.Tensor],
        fed: torch.Tensor | None,
        t: torch.Tensor,
        enc: EncoderOut,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], torch.Tensor | None]:
        """Target embeddings e_y (B, T, m) at positions t (B, T) from the LSTM state ``hc``, and
        h̃_{t−1} (B, 1, n) when input feeding (then T = 1): h̃ (B, T, n), the new state, a (B, T, Tx)."""
        # h̃_{t−1} was dropped out once already, when it was made (h̃ is a non-recurrent output)
        x = self.drop(e_y) if fed is None else torch.cat([self.drop(e_y), fed.to(e_y.dtype)], -1)
        out, hc = self.decoder(x, hc)
        if self.attention is None:
            return self.drop(out), hc, None
        c, a = self.attention(out, enc.keys, enc.h, enc.mask, t)
        assert self.W_c is not None
        return self.drop(torch.tanh(self.W_c(torch.cat([c.to(out.dtype), out], -1)))), hc, a

    def step(
        self, y_prev: torch.Tensor, state: torch.Tensor, enc: EncoderOut
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        width = 2 * self.cfg.layers * self.cfg.hidden
        hc = self._unflat(state[:, :width])
        fed = state[:, width:-1].unsqueeze(1) if self.cfg.input_feed else None
        t = state[:, -1:]
        h_tilde, (h, c), a = self._decode(self.embed(y_prev).unsqueeze(1), hc, fed, t, enc)
        h_tilde = h_tilde.squeeze(1)
        new = [self._flat(h, c)] + ([h_tilde.float()] if self.cfg.input_feed else []) + [t + 1]
        return self.next_word_logp(h_tilde), torch.cat(new, 1), None if a is None else a.squeeze(1)

    def teacher_forced(self, enc: EncoderOut, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """h̃ (B, Ty, n) for the target prefix ``tgt_in`` (B, Ty), and the attention weights
        a (B, Ty, Tx) of every position (None without attention)."""
        assert enc.summary is not None
        hc = self._unflat(enc.summary)
        e_y = self.embed(tgt_in)
        B, T = tgt_in.shape
        t = torch.arange(T, device=tgt_in.device).expand(B, T)
        if not self.cfg.input_feed:
            h_tilde, _, a = self._decode(e_y, hc, None, t, enc)
            return h_tilde, a
        fed = e_y.new_zeros(B, 1, self.cfg.hidden)
        outputs, weights = [], []
        for i, e in enumerate(e_y.unbind(1)):
            fed, hc, a = self._decode(e.unsqueeze(1), hc, fed, t[:, i : i + 1], enc)
            outputs.append(fed)
            weights.append(a)
        attention = None if self.attention is None else torch.cat(weights, 1)  # type: ignore[arg-type]
        return torch.cat(outputs, 1), attention

    def attention_follows_input(self) -> bool:
        """Footnote 14: a_t aligns y_t for location scores (which never see h̄) and the input
        word y_{t−1} for the content-based ones (dot, general, concat). Not under local-p, whose
        window is placed by p_t, a prediction made for y_t: on the Bible's gold verses
        (examples/bible_aer) each reading aligned best as this says (docs/alignment.md)."""
        return self.attention is not None and self.cfg.score != "location" and self.cfg.attention != "local-p"

    def output_layer(self) -> nn.Linear:
        return self.W_s
