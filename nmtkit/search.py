"""Beam search over ``Seq2Seq.step``, batched across sentences and beams.

All B·k hypotheses advance together as rows of one tensor: each step is one
model call, one top-k over (k × K) candidates per sentence, and one gather
that reorders the states; words and parent pointers are kept per step and
followed back once at the end. No Python loop runs over hypotheses.
A finished hypothesis keeps its slot and extends only by padding at no cost,
so with raw scores the search stops exactly when k finished hypotheses
outscore every open one. Greedy search is the case k = 1.

Scores are sums of log-probabilities of the emitted tokens, ``</s>``
included: the quantity ``score`` recomputes as NLL. The final beam is ranked
by that raw score (the paper), by score / length (``average``, GroundHog's
normalisation) or by score / ((5 + length) / 6)^α (``gnmt``, Wu et al.
2016). Works on ids only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .data.vocab import BOS, EOS, PAD, UNK
from .models.base import EncoderOut, Seq2Seq

LENGTH_PENALTIES = ("none", "average", "gnmt")


@dataclass(frozen=True)
class SearchConfig:
    beam: int = 12                 # the paper's width (arXiv v1)
    length_penalty: str = "none"   # none | average | gnmt
    alpha: float = 0.6             # GNMT's exponent
    max_ratio: float = 2.0         # output limit: max_ratio × source length + max_extra
    max_extra: int = 10
    nbest: int = 1
    no_unk: bool = False           # never emit <unk> (Table 1's RNNsearch-50* rows)

    def normalise(self, scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        n = lengths.clamp(min=1).float()
        if self.length_penalty == "average":
            return scores / n
        if self.length_penalty == "gnmt":
            return scores / ((5 + n) / 6) ** self.alpha
        return scores


@dataclass
class Hypotheses:
    """``nbest`` hypotheses per sentence, best first: row i·nbest + j is sentence i's j-th."""

    tokens: list[list[int]]                     # without </s>
    scores: list[float]                         # summed log-probability, </s> included
    ranking: list[float]                        # the score after length normalisation
    nbest: int = 1
    attention: list[np.ndarray] | None = None   # (len(tokens) + 1, source length) per row


_Step = tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None"]   # words, parent rows, α of the parents


@torch.no_grad()
def beam_search(model: Seq2Seq, enc: EncoderOut, cfg: SearchConfig = SearchConfig(),
                attention: bool = False) -> Hypotheses:
    B, k = enc.mask.shape[0], cfg.beam
    n_best = min(cfg.nbest, k)
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
    banned = [PAD, UNK] if cfg.no_unk else [PAD]
    steps: list[_Step] = []
    for t in range(int(limit.max())):
        logp, state, alpha = model.step(y, state, enc)
        logp[:, banned] = float("-inf")
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
    final = cfg.normalise(scores, lengths.view(B, k))
    ranking, order = final.topk(n_best, dim=1)
    chosen = (rows + order).view(-1)
    return _backtrack(steps, chosen, lengths.index_select(0, chosen), scores.view(-1).index_select(0, chosen),
                      ranking.view(-1), src_len.repeat_interleave(n_best), n_best)


def _backtrack(steps: list[_Step], chosen: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor,
               ranking: torch.Tensor, src_len: torch.Tensor, n_best: int) -> Hypotheses:
    """Follow parent pointers from the chosen rows back to the first step (one loop over time)."""
    ys = torch.stack([s[0] for s in steps]).cpu().numpy()          # (T, B·k)
    parents = torch.stack([s[1] for s in steps]).cpu().numpy()
    with_attention = steps[0][2] is not None
    cur = chosen.cpu().numpy()
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
    result = Hypotheses(tokens, scores.tolist(), ranking.tolist(), n_best)
    if with_attention:
        stacked = np.stack(maps[::-1], 1)                              # (rows, T, Tx)
        result.attention = [stacked[i, :n, :int(m)] for i, (n, m) in enumerate(zip(n_out, src_len.tolist()))]
    return result


def greedy(model: Seq2Seq, enc: EncoderOut, max_ratio: float = 2.0, max_extra: int = 10) -> Hypotheses:
    """The most probable next word at each step: beam search with k = 1."""
    return beam_search(model, enc, SearchConfig(beam=1, max_ratio=max_ratio, max_extra=max_extra))


@torch.no_grad()
def force(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Walk the decoder along given targets (B, Ty; </s>-terminated, <pad> after) with the
    same ``step`` the search uses: per-sentence log-probabilities (B,) and attention (B, Ty, Tx)."""
    B, T = tgt_out.shape
    state = model.init_state(enc)
    y = torch.full((B,), BOS, dtype=torch.long, device=tgt_out.device)
    total = torch.zeros(B, device=tgt_out.device)
    maps = []
    for t in range(T):
        logp, state, alpha = model.step(y, state, enc)
        y = tgt_out[:, t]
        total += logp.gather(1, y.unsqueeze(1)).squeeze(1).masked_fill(y == PAD, 0.0)
        maps.append(alpha if alpha is not None else torch.zeros_like(enc.mask, dtype=torch.float))
    return total, torch.stack(maps, 1).float()
