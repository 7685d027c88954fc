"""Beam search over ``Seq2Seq.step``, batched across sentences and beams.

All B·k hypotheses advance together as rows of one tensor: each step is one
model call, a top-k per row, a top-k over the k × k survivors per sentence,
and one gather that reorders the states; words and parent pointers are kept
per step and followed back once at the end. No Python loop runs over
hypotheses. A finished hypothesis keeps its slot and extends only by padding
at no cost (and skips the output layer), so with raw scores a sentence is
done exactly when k finished hypotheses outscore every open one; it then
leaves the batch. Greedy search is the case k = 1.

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


@dataclass
class _Step:
    y: torch.Tensor                  # the words chosen, one per row of this step's output
    parent: torch.Tensor             # the row of this step's input that each extends
    keep: torch.Tensor | None        # input row → row of the previous step's output (None: the same)
    alpha: torch.Tensor | None       # attention of the input rows


@dataclass
class _Finished:
    step: int                        # the step at whose output these sentences were complete
    sentences: torch.Tensor          # (m,) their indices in the batch
    rows: torch.Tensor               # (m, nbest) the chosen rows of that step's output
    scores: torch.Tensor
    ranking: torch.Tensor
    lengths: torch.Tensor


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
    alive = torch.arange(B, device=device)  # batch index of each sentence still searched
    banned = torch.tensor([PAD, UNK] if cfg.no_unk else [PAD], device=device)
    steps: list[_Step] = []
    finished: list[_Finished] = []
    keep: torch.Tensor | None = None
    t = 0
    while len(alive):
        b = len(alive)
        open_rows = (~done).nonzero().squeeze(1)
        everyone = len(open_rows) == len(done)
        logp, state, alpha = model.step(y, state, enc, None if everyone else open_rows)
        V = logp.shape[1]
        logp.index_fill_(1, banned, float("-inf"))
        at_limit = (t + 1 >= limit) if everyone else (t + 1 >= limit.index_select(0, open_rows))
        if bool(at_limit.any()):            # out of room: only </s> may follow
            eos_logp = logp[:, EOS].clone()
            logp.masked_fill_(at_limit.unsqueeze(1), float("-inf"))
            logp[:, EOS] = eos_logp
        # the w best words of each open row; a finished row extends by padding, free
        w = min(k, V)
        word_logp, words = logp.topk(w, dim=1)
        if not everyone:
            word_logp = torch.full((len(done), w), float("-inf"), device=device).index_copy_(0, open_rows, word_logp)
            word_logp[:, 0].masked_fill_(done, 0.0)
            words = torch.full((len(done), w), PAD, dtype=torch.long, device=device).index_copy_(0, open_rows, words)
        # then the k best of the k × w per sentence
        scores, pick = (scores.view(-1, 1) + word_logp).view(b, k * w).topk(k, dim=1)
        parent = ((torch.arange(b, device=device) * k).unsqueeze(1) + torch.div(pick, w, rounding_mode="floor")).view(-1)
        y = words.view(b, k * w).gather(1, pick).view(-1)
        state = state.index_select(0, parent)
        steps.append(_Step(y, parent, keep, alpha if attention else None))
        lengths = lengths.index_select(0, parent) + (~done.index_select(0, parent)).long()
        done = done.index_select(0, parent) | (y == EOS)
        t += 1
        complete = done.view(b, k).all(1)
        keep = None
        if bool(complete.any()):
            ended = complete.nonzero().squeeze(1)
            ranking, order = cfg.normalise(scores[ended], lengths.view(b, k)[ended]).topk(n_best, dim=1)
            rows = ended.unsqueeze(1) * k + order
            finished.append(_Finished(t - 1, alive[ended], rows, scores.view(-1)[rows], ranking,
                                      lengths[rows]))
            left = (~complete).nonzero().squeeze(1)
            if not len(left):
                break
            keep = (left.unsqueeze(1) * k + torch.arange(k, device=device)).view(-1)
            alive, scores = alive[left], scores[left]
            y, state, done, lengths, limit = (x.index_select(0, keep) for x in (y, state, done, lengths, limit))
            enc = enc.select(keep)
    return _backtrack(steps, finished, B, n_best, src_len)


def _backtrack(steps: list[_Step], finished: list[_Finished], B: int, n_best: int,
               src_len: torch.Tensor) -> Hypotheses:
    """Follow parent pointers from each sentence's chosen rows back to the first step
    (one loop over time for the whole batch, whatever step each sentence ended at)."""
    T, H = len(steps), B * n_best
    ys = [s.y.cpu().numpy() for s in steps]
    parents = [s.parent.cpu().numpy() for s in steps]
    keeps = [None if s.keep is None else s.keep.cpu().numpy() for s in steps]
    with_attention = steps[0].alpha is not None
    start: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    scores, ranking, lengths = np.zeros(H), np.zeros(H), np.zeros(H, dtype=np.int64)
    for f in finished:
        hyp = (f.sentences.unsqueeze(1) * n_best + torch.arange(n_best, device=f.rows.device)).view(-1).cpu().numpy()
        start[f.step] = (hyp, f.rows.view(-1).cpu().numpy())
        scores[hyp], ranking[hyp] = f.scores.view(-1).cpu().numpy(), f.ranking.view(-1).cpu().numpy()
        lengths[hyp] = f.lengths.view(-1).cpu().numpy()
    out = np.full((T, H), PAD, dtype=np.int64)
    cur = np.full(H, -1, dtype=np.int64)
    maps = np.zeros((T, H, int(src_len.max())), dtype=np.float32) if with_attention else None
    for t in range(T - 1, -1, -1):
        if t in start:
            hyp, rows = start[t]
            cur[hyp] = rows
        on = np.nonzero(cur >= 0)[0]
        out[t, on] = ys[t][cur[on]]
        prev = parents[t][cur[on]]          # the input rows whose distribution chose these words
        if maps is not None:
            alpha = steps[t].alpha
            assert alpha is not None
            maps[t, on] = alpha.index_select(0, torch.from_numpy(prev).to(alpha.device)).float().cpu().numpy()
        keep = keeps[t]
        cur[on] = prev if keep is None else keep[prev]
    tokens = [out[:n, h].tolist() for h, n in enumerate(lengths.tolist())]
    tokens = [row[:-1] if row and row[-1] == EOS else row for row in tokens]
    result = Hypotheses(tokens, scores.tolist(), ranking.tolist(), n_best)
    if maps is not None:
        width = src_len.repeat_interleave(n_best).tolist()
        result.attention = [maps[:n, h, :int(m)] for h, (n, m) in enumerate(zip(lengths.tolist(), width))]
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
