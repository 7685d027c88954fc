"""Beam search over ``Seq2Seq.step``, batched across sentences and beams.

All B·k hypotheses advance together as rows of one tensor: each step is one
model call, one top-k over (k × K) candidates per sentence, and one gather
that reorders the states; words and parent pointers are kept per step and
followed back once at the end. No Python loop runs over hypotheses.
A finished hypothesis keeps its slot and extends only by padding at no cost,
so with raw scores (``alpha`` = 0) the search stops exactly when k finished
hypotheses outscore every open one. Greedy search is the case k = 1.

Scores are sums of log-probabilities of the emitted tokens, ``</s>``
included: the quantity ``score`` recomputes as NLL. ``alpha`` > 0 ranks the
final beam by score / length^alpha (GroundHog's and fairseq's length
normalisation; the paper's equation has none). Works on ids only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .data.vocab import BOS, EOS, PAD
from .models.base import EncoderOut, Seq2Seq


@dataclass(frozen=True)
class SearchConfig:
    beam: int = 5
    alpha: float = 0.0          # length normalisation exponent (0: the paper's raw score)
    max_ratio: float = 2.0      # output limit: max_ratio × source length + max_extra
    max_extra: int = 10


@dataclass
class Hypotheses:
    tokens: list[list[int]]                     # the best hypothesis per sentence, without </s>
    scores: list[float]                         # its summed log-probability, </s> included
    attention: list[np.ndarray] | None = None   # (len(tokens) + 1, source length) per sentence


_Step = tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None"]   # words, parent rows, α of the parents


@torch.no_grad()
def beam_search(model: Seq2Seq, enc: EncoderOut, cfg: SearchConfig = SearchConfig(),
                attention: bool = False) -> Hypotheses:
    B, k = enc.mask.shape[0], cfg.beam
    device = enc.mask.device
    src_len = enc.mask.sum(1)
    enc = enc.repeat(k)
    state = model.init_state(enc)
    limit = ((src_len.float() * cfg.max_ratio).long() + cfg.max_extra).repeat_interleave(k)
    y = torch.full((B * k,), BOS, dtype=torch.long, device=device)
    scores = torch.full((B, k), float("-inf"), device=device)
    scores[:, 0] = 0.0                      # all beams start equal: expand only the first
    done = torch.zeros(B * k, dtype=torch.bool, device=device)
    lengths = torch.zeros(B * k, dtype=torch.long, device=device)
    rows = (torch.arange(B, device=device) * k).unsqueeze(1)
    steps: list[_Step] = []
    for t in range(int(limit.max())):
        logp, state, alpha = model.step(y, state, enc)
        logp[:, PAD] = float("-inf")
        at_limit = (t + 1 >= limit) & ~done
        logp[at_limit] = torch.where(torch.arange(logp.shape[1], device=device) == EOS,
                                     logp[at_limit], float("-inf"))
        logp[done] = float("-inf")
        logp[done, PAD] = 0.0               # a finished hypothesis extends by padding, free
        V = logp.shape[1]
        scores, idx = (scores.view(-1, 1) + logp).view(B, k * V).topk(k, dim=1)
        parent = (rows + torch.div(idx, V, rounding_mode="floor")).view(-1)
        y = (idx % V).view(-1)
        state = state.index_select(0, parent)
        steps.append((y, parent, alpha if attention else None))
        lengths = lengths.index_select(0, parent) + (~done.index_select(0, parent)).long()
        done = done.index_select(0, parent) | (y == EOS)
        if bool(done.all()):
            break
    final = scores / lengths.view(B, k).clamp(min=1).float() ** cfg.alpha if cfg.alpha else scores
    best = rows.squeeze(1) + final.argmax(1)
    return _backtrack(steps, best, lengths.index_select(0, best), scores.view(-1).index_select(0, best),
                      src_len)


def _backtrack(steps: list[_Step], best: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor,
               src_len: torch.Tensor) -> Hypotheses:
    """Follow parent pointers from the chosen rows back to the first step (one loop over time)."""
    ys = torch.stack([s[0] for s in steps]).cpu().numpy()          # (T, B·k)
    parents = torch.stack([s[1] for s in steps]).cpu().numpy()
    with_attention = steps[0][2] is not None
    cur = best.cpu().numpy()
    out = np.empty((len(steps), len(cur)), dtype=np.int64)
    maps = []
    for t in range(len(steps) - 1, -1, -1):
        out[t] = ys[t, cur]
        prev = parents[t, cur]              # the rows whose step-t distribution chose these words
        if with_attention:
            alpha = steps[t][2]
            assert alpha is not None
            maps.append(alpha.index_select(0, torch.from_numpy(prev).to(alpha.device)).float().cpu().numpy())
        cur = prev
    n_out = lengths.tolist()
    tokens = [out[:n, i].tolist() for i, n in enumerate(n_out)]
    tokens = [row[:-1] if row and row[-1] == EOS else row for row in tokens]
    result = Hypotheses(tokens, scores.tolist())
    if with_attention:
        stacked = np.stack(maps[::-1], 1)                              # (B, T, Tx)
        result.attention = [stacked[i, :n, :int(m)] for i, (n, m) in enumerate(zip(n_out, src_len.tolist()))]
    return result


def greedy(model: Seq2Seq, enc: EncoderOut, max_ratio: float = 2.0, max_extra: int = 10) -> Hypotheses:
    """The most probable next word at each step: beam search with k = 1."""
    return beam_search(model, enc, SearchConfig(beam=1, max_ratio=max_ratio, max_extra=max_extra))
