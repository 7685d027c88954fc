"""Decoding over ``Seq2Seq.step``: greedy, batched across sentences (beam search: issue 4).

Works on ids only. Scores are sums of log-probabilities of the emitted
tokens, ``</s>`` included, the quantity ``score`` recomputes as NLL.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .data.vocab import BOS, EOS, PAD
from .models.base import Seq2Seq


@dataclass
class Hypotheses:
    tokens: list[list[int]]      # without </s>
    scores: list[float]


@torch.no_grad()
def greedy(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, max_ratio: float = 2.0,
           max_extra: int = 10) -> Hypotheses:
    B = src.shape[0]
    enc = model.encode(src, src_mask)
    state = model.init_state(enc)
    limit = (src_mask.sum(1).float() * max_ratio).long() + max_extra
    y = torch.full((B,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    scores = torch.zeros(B, device=src.device)
    out = []
    for t in range(int(limit.max())):
        logp, state, _ = model.step(y, state, enc)
        logp[:, PAD] = float("-inf")
        best, y = logp.max(-1)
        force = (t + 1 >= limit) & ~done          # at the length limit, </s>
        y = torch.where(force, torch.full_like(y, EOS), y)
        best = torch.where(force, logp[:, EOS], best)
        scores += torch.where(done, torch.zeros_like(best), best)
        out.append(torch.where(done, torch.full_like(y, PAD), y))
        done |= y == EOS
        if bool(done.all()):
            break
    ids = torch.stack(out, 1).tolist()
    tokens = [[i for i in row[:row.index(EOS)]] if EOS in row else row for row in ids]
    return Hypotheses(tokens, scores.tolist())
