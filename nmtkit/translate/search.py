"""Beam search over ``Seq2Seq.step``, batched across sentences and beams.

All B·k open hypotheses advance together as rows of one tensor: each step is
one model call, a top-k per row and a top-k over the k × k survivors per
sentence, then one gather that reorders the states; words and parent
pointers are kept per step and followed back once at the end. No Python
loop runs over hypotheses.

Finished hypotheses are kept aside, as GroundHog's shrinking beam and
fairseq's finalized list do, never in a beam slot where open ones could
push them out later. As there, a ``</s>`` extension is finished when it is
among the k best extensions of its sentence at that step, and goes to a
pool of the ``nbest`` best finished hypotheses per sentence; the k best
other extensions stay open. A sentence stops exactly when no open
hypothesis can still beat the last of its pool under the chosen ranking,
and then leaves the batch:

- raw score (the paper): extending a hypothesis only lowers its score, so
  an open one can still win only while its score is above the pool's;
- ``average`` (score / length, GroundHog's normalisation), ``power``
  (score / length^α, fairseq's and Marian's) and ``gnmt``
  (score / ((5 + length) / 6)^α, Wu et al. 2016): an open score s ≤ 0 can
  still end as high as s / penalty(L) for the longest length L the output
  limit allows, since its score cannot rise and the penalty grows with the
  length. That bound is exact, so a normalised search returns what an
  exhaustive one would among the hypotheses the beam kept; the price is
  that it runs longer than a heuristic stop would (a long open hypothesis
  stays a candidate until its score falls far enough).

A coverage penalty (Wu et al. 2016, ``coverage_penalty`` β > 0) adds
β Σ_i log min(c_i, 1) to a finished hypothesis' ranking, c_i the attention
source unit i received over its steps. The term is never positive, and
extending a hypothesis can only raise it towards 0, so the stop above uses
an open hypothesis' best case, a penalty of 0: the rule stays a bound (a
finished hypothesis is never passed over), no longer exact in the other
direction (a sentence may be searched longer than it needed to be).

Outputs have at least ``min_len`` words (fairseq's default of 1: no empty
translation of a sentence), or ``min_ratio`` × the source length where that
is more (GroundHog's sampler asked for half), and at most ``max_ratio`` × the
source length + ``max_extra`` tokens, ``</s>`` included. Scores are sums of
log-probabilities of the emitted tokens, ``</s>`` included (``min_len`` gives
way to the limit, as in sampling): the quantity
``score`` recomputes as NLL. Greedy search is the case k = 1. Works on ids
only.

A prefix (:class:`ForcedPrefix`, ``translate --prefix``) forces each sentence's first target
units: at step t < its length, every word but the forced one is masked to −inf in that
sentence's rows, so the beam holds the prefix alone until it ends and then searches on from its
states. Its log-probabilities count in the scores, and the output limit leaves room for it and
</s>. Sampling (:mod:`.sampling`) forces prefixes the same way.

Constraints (:mod:`.constraints`, ``translate --constraints``) replace the top-k over the k × k
survivors with dynamic beam allocation over the banks of each hypothesis' progress, and let a row
end only once it holds every phrase.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from ..core.errors import UserError
from ..data.vocab import BOS, EOS, PAD, UNK
from ..models.base import EncoderOut, Seq2Seq
from ..models.ensemble import Ensemble, EnsembleEncoderOut
from .constraints import Constraints, Phrases
from .settings import SearchConfig

_NEG = float("-inf")


def coverage_penalty(coverage: torch.Tensor, mask: torch.Tensor, beta: float, eps: float = 1e-6) -> torch.Tensor:
    """Wu et al. (2016)'s cp = β Σ_i log min(c_i, 1) of each row of ``coverage`` (rows, Tx), the
    attention each source position received summed over the output, over the real positions of
    ``mask``; a position never attended counts as ``eps`` rather than −inf."""
    covered = coverage.clamp(min=eps, max=1.0).log().masked_fill(~mask, 0.0)
    return beta * covered.sum(-1)


class _Coverage:
    """The attention each source position has received along each open hypothesis, for the
    coverage penalty (nothing when β is 0)."""

    def __init__(self, mask: torch.Tensor, beta: float):
        self.beta = beta
        self.received = mask.new_zeros(mask.shape, dtype=torch.float) if beta else None

    def penalty(self, alpha: torch.Tensor | None, mask: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor | float:
        """The penalty (b, k) of ending each row here: this step's attention counts for the word
        it chooses, </s> too."""
        if self.received is None:
            return 0.0
        if alpha is None:
            raise UserError("a coverage penalty reads the attention: this model has none")
        self.received = self.received + alpha.float()
        return coverage_penalty(self.received, mask, self.beta).view(shape)

    def follow(self, rows: torch.Tensor) -> None:
        """The rows that go on (each extension's parent, or the sentences still searched)."""
        if self.received is not None:
            self.received = self.received.index_select(0, rows)


def ranking(cfg: SearchConfig, scores: torch.Tensor, lengths: torch.Tensor | int) -> torch.Tensor:
    """The ranking of hypotheses of these scores and lengths (tokens, </s> included) under
    ``cfg``'s length penalty."""
    if cfg.length_penalty == "none":
        return scores
    # a step's length filled in on the device: one from the host would wait for a GPU at every step
    n = lengths.to(scores.device) if isinstance(lengths, torch.Tensor) else torch.full_like(scores, lengths)
    n = n.clamp(min=1).float()
    if cfg.length_penalty == "average":
        return scores / n
    base = n if cfg.length_penalty == "power" else (5 + n) / 6
    penalty = base**cfg.alpha
    # past float32's range (9,000 ** 10), in float64: an inf penalty ranks every long output 0,
    # and a dead row's -inf NaN, which topk ranks first
    wide = (scores.double() / base.double() ** cfg.alpha).to(scores.dtype)
    return torch.where(penalty.isinf(), wide, scores / penalty)


def output_floor(mask: torch.Tensor, cfg: SearchConfig) -> torch.Tensor:
    """Words each sentence (B,) has before its </s> at least: ``min_len``, or ``min_ratio`` × its
    source length where that is more. The output limit overrides it."""
    return (mask.sum(1).float() * cfg.min_ratio).long().clamp(min=cfg.min_len)


def output_limit(mask: torch.Tensor, cfg: SearchConfig, prefix: ForcedPrefix) -> torch.Tensor:
    """The longest output of each sentence (B,), </s> included (at that length only </s> may
    follow): ``max_ratio`` × its source length + ``max_extra``, and room for its prefix and </s>
    whatever those say. ``min_len`` gives way to it: the limit bounds a request's work."""
    limit = ((mask.sum(1).float() * cfg.max_ratio).long() + cfg.max_extra).clamp(min=1)
    return limit if prefix.lengths is None else torch.maximum(limit, prefix.lengths + 1)


class ForcedPrefix:
    """Each row's forced first target words: (rows, P) columns of the output layer, −1 past a
    row's prefix. Built from (B, P) target ids, <pad> after each sentence's prefix (None: none),
    mapped to the columns of a restricted output ``vocab`` (which must hold them), each sentence
    repeated for its ``k`` rows."""

    def __init__(self, ids: torch.Tensor | None, vocab: torch.Tensor | None = None, k: int = 1):
        self.lengths = None if ids is None else (ids != PAD).sum(1)  # per sentence
        self.cols: torch.Tensor | None = None
        if ids is not None and ids.shape[1]:
            cols = ids if vocab is None else torch.searchsorted(vocab, ids)
            self.cols = cols.masked_fill(ids == PAD, -1).repeat_interleave(k, 0)

    def force(self, logp: torch.Tensor, t: int) -> torch.Tensor:
        """``logp`` (rows, V) with every word but the forced one at −inf in the rows forced at
        step ``t``; the forced word keeps its log-probability, for the score."""
        if self.cols is None or t >= self.cols.shape[1]:
            return logp
        col = self.cols[:, t].unsqueeze(1)
        only = torch.full_like(logp, _NEG).scatter_(1, col.clamp(min=0), logp.gather(1, col.clamp(min=0)))
        return torch.where(col >= 0, only, logp)

    def select(self, rows: torch.Tensor) -> None:
        """The rows that go on (the search drops finished sentences or samples)."""
        if self.cols is not None:
            self.cols = self.cols.index_select(0, rows)


NO_PREFIX = ForcedPrefix(None)  # forces nothing, and holds nothing that a search could change
NO_CONSTRAINTS = Constraints(None)


@contextlib.contextmanager
def restricted(model: Seq2Seq, vocab: torch.Tensor | None) -> Iterator[None]:
    """``model`` scoring only the target words ``vocab`` (sorted ids) meanwhile, when given."""
    if vocab is None:
        yield
        return
    model.restrict_output(vocab)
    try:
        yield
    finally:
        model.restrict_output(None)


@dataclass
class Hypotheses:
    """``nbest`` hypotheses per sentence, best first: row i·nbest + j is sentence i's j-th.
    A row that no hypothesis filled (a tiny vocabulary or output limit) has score -inf."""

    tokens: list[list[int]]  # without </s>
    scores: list[float]  # summed log-probability, </s> included
    ranking: list[float]  # the score after length normalisation
    nbest: int = 1
    attention: torch.Tensor | None = None  # (rows, T, Tx): each step's α, </s>'s included
    token_scores: list[list[float]] | None = None  # each token's log-probability, </s>'s last
    unheld: list[int] = field(default_factory=list)  # sentences searched without their phrases, none holding them


@dataclass
class _Step:
    y: torch.Tensor  # the words chosen, one per row of this step's output
    parent: torch.Tensor  # the row of this step's input that each extends
    keep: torch.Tensor | None  # input row → row of the previous step's output (None: the same)
    alpha: torch.Tensor | None = None  # the attention of each row of this step's input
    logp: torch.Tensor | None = None  # the log-probability of each row's word (kept when asked)
    eos: torch.Tensor | None = None  # ... and of </s> after each row of this step's input


class _Pool:
    """The ``n`` best finished hypotheses of each sentence still searched: their ranking,
    score, and where they ended (the step, and the input row of that step that chose </s>)."""

    def __init__(self, b: int, n: int, device: torch.device):
        self.ranking = torch.full((b, n), _NEG, device=device)
        self.scores = torch.full((b, n), _NEG, device=device)
        self.step = torch.zeros((b, n), dtype=torch.long, device=device)
        self.row = torch.zeros((b, n), dtype=torch.long, device=device)

    def offer(self, scores: torch.Tensor, ranking: torch.Tensor, step: int) -> None:
        """</s> extensions of the open rows (b, k; -inf where not admitted) compete for the pool."""
        b, k = scores.shape
        rows = torch.arange(b * k, device=scores.device).view(b, k)
        ranking = torch.cat([self.ranking, ranking], 1)
        self.ranking, best = ranking.topk(self.ranking.shape[1], dim=1)
        self.scores = torch.cat([self.scores, scores], 1).gather(1, best)
        self.step = torch.cat([self.step, torch.full_like(rows, step)], 1).gather(1, best)
        self.row = torch.cat([self.row, rows], 1).gather(1, best)

    def select(self, sentences: torch.Tensor) -> _Pool:
        out = object.__new__(_Pool)
        for name in ("ranking", "scores", "step", "row"):
            setattr(out, name, getattr(self, name).index_select(0, sentences))
        return out


@torch.no_grad()
def beam_search(
    model: Seq2Seq,
    enc: EncoderOut,
    cfg: SearchConfig = SearchConfig(),
    vocab: torch.Tensor | None = None,
    attention: bool = False,
    prefix: torch.Tensor | None = None,
    token_scores: bool = False,
    constraints: Phrases | None = None,
) -> Hypotheses:
    """The ``cfg.nbest`` best outputs of each sentence; over the target words ``vocab`` only
    (sorted ids that hold the specials, :mod:`nmtkit.data.lexicon`) when given. ``attention``:
    keep each step's attention weights and return each output's (``Hypotheses.attention``):
    the α the search itself computed, which aligns each output word for models whose attention
    at a step aligns the word it predicts (not Luong et al.'s content scores, see
    :func:`force`). ``prefix``: (B, P) target ids each output must start with, <pad> after
    each sentence's (:class:`ForcedPrefix`; ``vocab`` must hold them, and a banned word such
    as <unk> under ``no_unk`` can never be forced). ``token_scores``: keep each step's
    log-probabilities and return each output's per token (``Hypotheses.token_scores``).
    ``constraints``: the phrases each output must contain, and where words begin and end
    (:class:`.constraints.Phrases`; ``vocab`` must hold them)."""
    with restricted(model, vocab):
        return _beam_search(
            model,
            enc,
            cfg,
            vocab,
            attention=attention,
            prefix=ForcedPrefix(prefix, vocab, cfg.beam),
            token_scores=token_scores,
            constraints=Constraints(constraints, vocab, cfg.beam),
        )


def _beam_search(  # noqa: PLR0915 (the beam's loop in one place)
    model: Seq2Seq,
    enc: EncoderOut,
    cfg: SearchConfig,
    vocab: torch.Tensor | None,
    check_every: int = 0,
    attention: bool = False,
    prefix: ForcedPrefix = NO_PREFIX,
    token_scores: bool = False,
    constraints: Constraints = NO_CONSTRAINTS,
) -> Hypotheses:
    """``check_every``: steps between looks for finished sentences (0: 1 on a CPU, 4 on a GPU,
    where each look waits for the device). A sentence found late has not changed meanwhile: no
    hypothesis it could still extend can enter its pool, by the bound that stopped it."""
    (B, k), n_best, device = (enc.mask.shape[0], cfg.beam), min(cfg.nbest, cfg.beam), enc.mask.device
    check_every = check_every or (1 if device.type == "cpu" else 4)
    limit, floor = constraints.room(output_limit(enc.mask, cfg, prefix), prefix.lengths), output_floor(enc.mask, cfg)
    floor_max = int(floor.max()) if cfg.min_ratio else cfg.min_len  # the steps before which a row may not end
    enc = enc.repeat(k)
    state = model.init_state(enc)
    y = torch.full((B * k,), BOS, dtype=torch.long, device=device)
    scores = torch.full((B, k), _NEG, device=device)
    scores[:, 0] = 0.0  # all beams start equal: expand only the first
    banned = torch.tensor([PAD, BOS, EOS, UNK] if cfg.no_unk else [PAD, BOS, EOS], device=device)
    alive = torch.arange(B, device=device)  # batch index of each sentence still searched
    pool = _Pool(B, n_best, device)
    steps: list[_Step] = []
    finished: list[tuple[torch.Tensor, _Pool]] = []
    keep: torch.Tensor | None = None
    coverage, t = _Coverage(enc.mask, cfg.coverage_penalty), 0
    while len(alive):
        b = len(alive)
        logp, state, alpha = model.step(y, state, enc)
        logp = prefix.force(logp, t)  # before </s> is read: a forced row cannot end
        eos = logp[:, EOS].clone() if token_scores else None
        at_limit = t + 1 >= limit  # out of room: nothing stays open, and </s> ends it, min_len or not
        if t >= floor_max:  # every row may end: no mask to build
            ending = logp[:, EOS]
        else:
            ending = logp[:, EOS].masked_fill(((t < floor) & ~at_limit).repeat_interleave(k), _NEG)
        if constraints.active:  # a row ends with all its phrases, at its limit too
            ending = ending.masked_fill(constraints.unmet(), _NEG)
        ended = scores + ending.view(b, k)
        cp = coverage.penalty(alpha, enc.mask, (b, k))
        logp.index_fill_(1, banned, _NEG)
        # on a GPU, asking whether any row is at its limit would wait for it: fill always
        if device.type != "cpu" or bool(at_limit.any()):
            logp.masked_fill_(at_limit.repeat_interleave(k).unsqueeze(1), _NEG)
        chosen: torch.Tensor | None
        if constraints.active:
            scores, parent, y, chosen, ended = constraints.extend(logp, scores, ended, k)
        else:
            w = min(k, logp.shape[1])
            word_logp, words = logp.topk(w, dim=1)
            scores, pick = (scores.view(-1, 1) + word_logp).view(b, k * w).topk(k, dim=1)
            chosen = word_logp.view(b, k * w).gather(1, pick).view(-1) if token_scores else None
            parent = (torch.arange(b, device=device) * k).unsqueeze(1) + torch.div(pick, w, rounding_mode="floor")
            parent, y = parent.view(-1), words.view(b, k * w).gather(1, pick).view(-1)
            # a </s> extension finishes if it is among the k best extensions of all, </s> included
            kth = torch.cat([scores, ended], 1).topk(k, dim=1).values[:, -1:]
            ended = ended.masked_fill(ended < kth, _NEG)
        pool.offer(ended, ranking(cfg, ended, t + 1) + cp, t)
        if vocab is not None:  # a column of the restricted output → its word
            y = vocab[y]
        state = state.index_select(0, parent)
        coverage.follow(parent)
        steps.append(_Step(y, parent, keep, alpha if attention else None, chosen if token_scores else None, eos))
        t += 1
        best_open = ranking(cfg, scores.max(1).values, limit)
        # (an open score of -inf: nothing is open; past its limit a row is done whatever its scores)
        stop = (best_open <= pool.ranking[:, -1]) | (t >= limit)
        keep = None
        if t % check_every == 0 and bool(stop.any()):
            done = stop.nonzero().squeeze(1)
            finished.append((alive[done], pool.select(done)))
            left = (~stop).nonzero().squeeze(1)
            if not len(left):
                break
            keep = (left.unsqueeze(1) * k + torch.arange(k, device=device)).view(-1)
            alive, scores, limit, floor, pool = alive[left], scores[left], limit[left], floor[left], pool.select(left)
            y, state, enc = y.index_select(0, keep), state.index_select(0, keep), enc.select(keep)
            coverage.follow(keep)
            prefix.select(keep)
            constraints.select(keep)
    return _backtrack(steps, finished, B, n_best)


def _backtrack(steps: list[_Step], finished: list[tuple[torch.Tensor, _Pool]], B: int, n_best: int) -> Hypotheses:
    """Follow parent pointers from each hypothesis' last word back to the first step (one
    loop over time for the whole batch, whatever step each hypothesis ended at)."""
    T, H = len(steps), B * n_best
    ending, end_row = np.full(H, -1, dtype=np.int64), np.zeros(H, dtype=np.int64)
    scores, ranking = np.full(H, _NEG), np.full(H, _NEG)
    for sentences, pool in finished:
        hyp = (sentences.unsqueeze(1) * n_best + torch.arange(n_best, device=sentences.device)).view(-1).cpu().numpy()
        ending[hyp], end_row[hyp] = pool.step.view(-1).cpu().numpy(), pool.row.view(-1).cpu().numpy()
        scores[hyp], ranking[hyp] = pool.scores.view(-1).cpu().numpy(), pool.ranking.view(-1).cpu().numpy()
    out = np.full((T, H), PAD, dtype=np.int64)
    per_token = np.zeros((T, H)) if steps and steps[0].logp is not None else None
    cur = np.full(H, -1, dtype=np.int64)  # each hypothesis' row in step t's output
    first = steps[0].alpha if steps else None
    maps = None if first is None else first.new_zeros(H, T, first.shape[1], dtype=torch.float)
    for t in range(T - 1, -1, -1):
        step = steps[t]
        on = np.nonzero(cur >= 0)[0]
        prev = np.full(H, -1, dtype=np.int64)  # ... and in step t's input
        out[t, on] = step.y.cpu().numpy()[cur[on]]
        prev[on] = step.parent.cpu().numpy()[cur[on]]
        now = ending == t
        prev[now] = end_row[now]
        if per_token is not None:  # every step kept them, as the first did
            assert step.logp is not None and step.eos is not None
            per_token[t, on] = step.logp.cpu().numpy()[cur[on]]
            per_token[t, now] = step.eos.cpu().numpy()[end_row[now]]
        live = prev >= 0
        if maps is not None and step.alpha is not None and live.any():
            rows = torch.from_numpy(np.nonzero(live)[0]).to(maps.device)
            maps[rows, t] = step.alpha.float().index_select(0, torch.from_numpy(prev[live]).to(maps.device))
        cur[:] = -1
        cur[live] = prev[live] if step.keep is None else step.keep.cpu().numpy()[prev[live]]
    found = np.isfinite(scores)
    tokens = [out[: int(ending[h]), h].tolist() if found[h] else [] for h in range(H)]
    each = (
        None
        if per_token is None
        else [per_token[: int(ending[h]) + 1, h].tolist() if found[h] else [] for h in range(H)]
    )
    return Hypotheses(tokens, scores.tolist(), ranking.tolist(), n_best, maps, each)


def greedy(model: Seq2Seq, enc: EncoderOut, max_ratio: float = 2.0, max_extra: int = 10) -> Hypotheses:
    """Beam search with k = 1: the path of the most probable non-final word at each step,
    ended (</s>) where that scores best."""
    return beam_search(model, enc, SearchConfig(beam=1, max_ratio=max_ratio, max_extra=max_extra))


def aligns_as_it_searches(model: Seq2Seq) -> bool:
    """Whether the attention of each search step aligns the word chosen there, for every member
    of an ensemble: then the search's own α is each output's alignment, and nothing needs to
    walk the outputs again (:func:`force`). Not so where the attention aligns the word fed in,
    nor for a model with an alignment head, which reads each word once it is chosen."""
    return not any(m.attention_follows_input() or m.has_alignment_head() for m in _members(model))


def _members(model: Seq2Seq) -> list[Seq2Seq]:
    return model.models if isinstance(model, Ensemble) else [model]


@torch.no_grad()
def force(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Walk the decoder along given targets (B, Ty; </s>-terminated, <pad> after) with the
    same ``step`` the search uses: per-sentence log-probabilities (B,), each token's (B, Ty; 0 at
    padding), and the alignment of each target token (B, Ty, Tx): an alignment head's where a
    model has one, else its attention, read as each model reads it
    (:meth:`~nmtkit.models.base.Seq2Seq.attention_follows_input`)."""
    members = _members(model)
    if len({m.attention_follows_input() for m in members}) == 1 and not any(m.has_alignment_head() for m in members):
        total, words, maps = _walk(model, enc, tgt_out, model.attention_follows_input())
        return total, words, _no_attention(enc, tgt_out) if maps is None else maps
    # members that read their alignments differently: align with each, average
    total, words, _ = _walk(model, enc, tgt_out, False, aligned=False)
    return total, words, _each_aligned(model, enc, tgt_out)


def log_probs(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`force`'s scores without its alignments: each sentence's (B,) and each of its tokens'
    (B, Ty; 0 at padding); the walk keeps no attention."""
    total, words, _ = _walk(model, enc, tgt_out, False, aligned=False)
    return total, words


def alignment(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> torch.Tensor:
    """:func:`force`'s alignments without its scores: models with an alignment head read it in one
    teacher-forced pass, with no walk of the decoder over the vocabulary."""
    if not all(m.has_alignment_head() for m in _members(model)):
        return force(model, enc, tgt_out)[2]
    return _each_aligned(model, enc, tgt_out)


def _each_aligned(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> torch.Tensor:
    """The mean of each member's own alignment of ``tgt_out`` (none: all zeros)."""
    parts = cast(EnsembleEncoderOut, enc).parts if isinstance(model, Ensemble) else [enc]
    each = [_alignment(m, e, tgt_out) for m, e in zip(_members(model), parts)]
    found = [a for a in each if a is not None]
    return torch.stack(found).mean(0) if found else _no_attention(enc, tgt_out)


def _alignment(model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor) -> torch.Tensor | None:
    """One model's alignment of ``tgt_out``: its head's, else its attention's along a walk."""
    tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], BOS), tgt_out[:, :-1]], 1)
    head = model.head_alignment(enc, tgt_in, tgt_out)
    return head if head is not None else _walk(model, enc, tgt_out, model.attention_follows_input())[2]


def _walk(
    model: Seq2Seq, enc: EncoderOut, tgt_out: torch.Tensor, follows_input: bool, aligned: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Scores along ``tgt_out``: each sentence's, summed word by word as the search sums them, and
    each word's (B, Ty); and α aligned to its tokens: α of step t, or with ``follows_input`` of step
    t + 1 (whose input is the token; one more step for </s>); not ``aligned``: no α (None)."""
    B, T = tgt_out.shape
    state = model.init_state(enc)
    y = torch.full((B,), BOS, dtype=torch.long, device=tgt_out.device)
    total = torch.zeros(B, device=tgt_out.device)
    words, maps = [], []
    for t in range(T + follows_input):
        logp, state, alpha = model.step(y, state, enc)
        if t < T:
            y = tgt_out[:, t]
            words.append(logp.gather(1, y.unsqueeze(1)).squeeze(1).masked_fill(y == PAD, 0.0))
            total += words[-1]
        if alpha is not None and aligned:
            maps.append(alpha.float())
    return total, torch.stack(words, 1), torch.stack(maps[follows_input:], 1) if maps else None


def _no_attention(enc: EncoderOut, tgt_out: torch.Tensor) -> torch.Tensor:
    return torch.zeros(*tgt_out.shape, enc.mask.shape[1], device=tgt_out.device)
