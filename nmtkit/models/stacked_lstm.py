"""A multi-layer LSTM whose dropout between layers draws from torch's generator.

cuDNN applies an LSTM's dropout between layers itself, from a random state
of its own, seeded once per process and kept inside the library: a resumed
run cannot restore it, so its dropout masks differ from an uninterrupted
run's. :class:`StackedLSTM` is ``nn.LSTM`` (same parameters, same state-dict
keys) that, when training with that dropout on a GPU, runs one layer at a
time with torch's dropout in between, whose generator the checkpoint saves.
Elsewhere it is ``nn.LSTM`` unchanged (on CPUs torch's own loop already
draws from that generator).

:meth:`StackedLSTM.masked` is the same network over a padded batch without
packing it (packing reads the lengths on the host, which an update captured
as a CUDA graph may not do): one cell step at a time, each row's state
kept as it was past its length.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import torch
from torch import _VF, nn
from torch.nn.utils.rnn import PackedSequence

from . import cudnn_autocast


class StackedLSTM(nn.LSTM):
    def forward(self, input: torch.Tensor | PackedSequence, hx: tuple[torch.Tensor, torch.Tensor] | None = None) -> Any:
        data = input.data if isinstance(input, PackedSequence) else input
        if cudnn_autocast.halves(data):  # in float32, not the float16 autocast would give cuDNN
            with cudnn_autocast.float32(data):
                return self.forward(input.float(), None if hx is None else (hx[0].float(), hx[1].float()))
        if not (self.training and self.dropout > 0 and self.num_layers > 1 and data.is_cuda):
            return super().forward(input, hx)
        packed = input if isinstance(input, PackedSequence) else None
        batch = int(packed.batch_sizes[0]) if packed is not None else data.shape[0 if self.batch_first else 1]
        if hx is None:
            zeros = data.new_zeros(self.num_layers, batch, self.hidden_size)
            hx = (zeros, zeros)
        elif packed is not None and packed.sorted_indices is not None:
            hx = (hx[0].index_select(1, packed.sorted_indices), hx[1].index_select(1, packed.sorted_indices))
        out, hs, cs = data, [], []
        for k in range(self.num_layers):
            if k:
                out = nn.functional.dropout(out, self.dropout, True)
            weights = cast(list[torch.Tensor], self._flat_weights[4 * k : 4 * k + 4])
            state = (hx[0][k : k + 1].contiguous(), hx[1][k : k + 1].contiguous())
            with warnings.catch_warnings():  # cuDNN copies one layer's weights: expected here
                warnings.filterwarnings("ignore", "RNN module weights are not part")
                if packed is not None:
                    out, h, c = _VF.lstm(out, packed.batch_sizes, state, weights, True, 1, 0.0, True, False)
                else:
                    out, h, c = _VF.lstm(out, state, weights, True, 1, 0.0, True, False, self.batch_first)
            hs.append(h)
            cs.append(c)
        h_n, c_n = torch.cat(hs), torch.cat(cs)
        if packed is None:
            return out, (h_n, c_n)
        if packed.unsorted_indices is not None:
            h_n, c_n = h_n.index_select(1, packed.unsorted_indices), c_n.index_select(1, packed.unsorted_indices)
        return PackedSequence(out, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), (h_n, c_n)

    def masked(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Outputs (B, T, n), zero at padding, and each layer's (h, c) (L, B, n) at each row's
        last real position, from zero states, over the batch-first ``x`` (B, T, m) and its
        ``mask`` (B, T): what the packed batch gives, in float32 (under CUDA autocast all in
        float32, as :meth:`forward` runs cuDNN there)."""
        if cudnn_autocast.halves(x):
            with cudnn_autocast.float32(x):
                return self.masked(x.float(), mask)
        keep = mask.unsqueeze(-1).float().unbind(1)
        out, hs, cs = x, [], []
        for k in range(self.num_layers):
            if k and self.training and self.dropout > 0:
                out = nn.functional.dropout(out, self.dropout, True)
            w_ih, w_hh, b_ih, b_hh = cast(list[torch.Tensor], self._flat_weights[4 * k : 4 * k + 4])
            # unbind once: indexing in the loop costs a full-size gradient buffer per step
            steps = nn.functional.linear(out, w_ih, b_ih).unbind(1)
            h = c = x.new_zeros(x.shape[0], self.hidden_size, dtype=torch.float32)
            seq = []
            for t, wx in enumerate(steps):
                # summed in float32 (a CPU's bfloat16 products too); torch's gate order
                i, f, g, o = (wx.float() + nn.functional.linear(h, w_hh, b_hh).float()).chunk(4, 1)
                c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h_new = torch.sigmoid(o) * torch.tanh(c_new)
                c, h = c + keep[t] * (c_new - c), h + keep[t] * (h_new - h)
                seq.append(h * keep[t])
            out = torch.stack(seq, 1)
            hs.append(h)
            cs.append(c)
        return out, (torch.stack(hs), torch.stack(cs))
