"""Sampling: outputs drawn word by word from the model's distribution, for back-translation.

Edunov et al. (2018) found synthetic sources sampled from a reverse model better training data
than its beam search's outputs (fairseq's ``--sampling --sampling-topk --temperature``, Marian's
``--output-sampling``). Each step draws one word per row from softmax(log p / T), restricted to
the K most probable words when K > 0, through the same ``step``, output limit, ``min_len``, ``min_ratio``,
``no_unk`` and prefix as :mod:`.search`. All rows draw together, one model call per step, and a
row that draws </s> leaves the batch. ``nbest`` = n gives n independent samples of each
sentence, as n rows (fairseq's beam under ``--sampling``), best first by the search's ranking;
the same sample may come twice. Scores are the model's log-probabilities of the words drawn,
</s> included (neither T nor K changes them): what ``score`` recomputes as NLL.

The draws are counter-based: the uniform number behind a row's word at step t is a hash
(SplitMix64's mixer) of the seed, the sentence's key (``translate``: its line number), the
sample's index and t, inverted through the cumulative distribution. A sentence's uniform numbers
thus depend on the seed and that key alone, not on which sentences share its batch, the batch
size, how stdin arrived or the device's random generator. The distribution they are inverted
through is computed in a batch, whose shape changes the last bits of its matrix products: a
number that falls within that rounding of a boundary can draw the other word.
"""

from __future__ import annotations

import torch

from ..data.vocab import BOS, EOS, PAD, UNK
from ..models.base import EncoderOut, Seq2Seq
from .search import ForcedPrefix, Hypotheses, output_floor, output_limit, ranking, restricted
from .settings import SearchConfig

_NEG = float("-inf")
_U64 = 1 << 64
_GOLDEN, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _int64(x: int) -> int:
    """A 64-bit pattern as the int64 torch holds it (two's complement)."""
    x %= _U64
    return x - _U64 if x >> 63 else x


def _shift(x: torch.Tensor, s: int) -> torch.Tensor:
    """x >> s on the 64-bit pattern (torch shifts int64 arithmetically: mask the sign's copies)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finaliser on int64 tensors (products wrap, as uint64 ones do)."""
    x = (x ^ _shift(x, 30)) * _int64(_MIX1)
    x = (x ^ _shift(x, 27)) * _int64(_MIX2)
    return x ^ _shift(x, 31)


def streams(seed: int, keys: torch.Tensor, n: int) -> torch.Tensor:
    """One random stream per row (B·n,): sample j of the sentence of key ``keys[i]`` is row i·n + j."""
    sentence = mix(mix(torch.full_like(keys, _int64(seed))) ^ keys)
    return mix(sentence.repeat_interleave(n) ^ torch.arange(n, device=keys.device).repeat(len(keys)))


def uniforms(stream: torch.Tensor, t: int) -> torch.Tensor:
    """Each stream's number of step ``t``, uniform in [0, 1) with 53 bits (float64)."""
    return _shift(mix(stream + _int64((t + 1) * _GOLDEN)), 11).double() * 2.0**-53


def draw(logp: torch.Tensor, u: torch.Tensor, temperature: float = 1.0, top_k: int = 0) -> torch.Tensor:
    """The column each row (rows, V) draws at its uniform ``u``: from softmax(logp / T) over its
    ``top_k`` best words (0: all); a column at −inf is never drawn."""
    scaled = logp / temperature
    if 0 < top_k < scaled.shape[1]:
        best, cols = scaled.topk(top_k, dim=1)  # exactly K, ties or not: K = 1 is greedy
        scaled = torch.full_like(scaled, _NEG).scatter_(1, cols, best)
    cdf = torch.softmax(scaled.double(), 1).cumsum(1)
    # the first column whose cumulative mass reaches a target in (0, total]: never one of mass 0
    target = (1.0 - u).unsqueeze(1) * cdf[:, -1:]
    return torch.searchsorted(cdf, target).squeeze(1).clamp(max=cdf.shape[1] - 1)


@torch.no_grad()
def sample(
    model: Seq2Seq,
    enc: EncoderOut,
    cfg: SearchConfig,
    vocab: torch.Tensor | None = None,
    prefix: torch.Tensor | None = None,
    keys: torch.Tensor | None = None,
    token_scores: bool = False,
) -> Hypotheses:
    """``cfg.nbest`` samples of each sentence of ``enc``, best first (``cfg``: ``temperature``,
    ``top_k``, ``seed``, the output limit, ``min_len``, ``min_ratio``, ``no_unk``, the ranking); over the
    target words ``vocab`` only when given, starting with ``prefix`` (as :func:`.search.beam_search`
    takes them). ``keys`` (B,) int64: each sentence's random stream (default: its row).
    ``token_scores``: keep the log-probability of each word drawn (``Hypotheses.token_scores``)."""
    keys = torch.arange(enc.mask.shape[0]) if keys is None else keys
    with restricted(model, vocab):
        forced = ForcedPrefix(prefix, vocab, cfg.nbest)
        return _sample(model, enc, cfg, vocab, forced, keys.to(enc.mask.device).long(), token_scores)


def _sample(
    model: Seq2Seq,
    enc: EncoderOut,
    cfg: SearchConfig,
    vocab: torch.Tensor | None,
    prefix: ForcedPrefix,
    keys: torch.Tensor,
    token_scores: bool = False,
) -> Hypotheses:
    """:func:`sample`'s loop: each step draws a word for every row still open, and the rows that
    drew </s> leave (one look at the device a step, where beam search looks every fourth on a
    GPU: a row left open past its </s> would draw again)."""
    B, n, device = enc.mask.shape[0], cfg.nbest, enc.mask.device
    limit = output_limit(enc.mask, cfg, prefix).repeat_interleave(n)
    floor = output_floor(enc.mask, cfg).repeat_interleave(n)
    out = torch.full((B * n, int(limit.max())), PAD, dtype=torch.long, device=device)
    scores, lengths = torch.zeros(B * n, device=device), torch.zeros(B * n, dtype=torch.long, device=device)
    each = torch.zeros(out.shape, device=device) if token_scores else None  # each word's log-probability
    rows = torch.arange(B * n, device=device)  # the output row of each row still drawing
    stream = streams(cfg.seed, keys, n)
    enc = enc.repeat(n)
    state = model.init_state(enc)
    y = torch.full((B * n,), BOS, dtype=torch.long, device=device)
    banned = torch.tensor([PAD, BOS, UNK] if cfg.no_unk else [PAD, BOS], device=device)
    t = 0
    while len(rows):
        logp, state, _ = model.step(y, state, enc)
        logp = _admissible(prefix.force(logp, t), banned, t < floor, t + 1 >= limit)
        col = draw(logp, uniforms(stream, t), cfg.temperature, cfg.top_k)
        drawn = logp.gather(1, col.unsqueeze(1)).squeeze(1)
        scores.index_add_(0, rows, drawn)
        if each is not None:
            each[rows, t] = drawn
        y = col if vocab is None else vocab[col]
        out[rows, t] = y
        t += 1
        ended = y == EOS
        if bool(ended.any()):
            lengths[rows[ended]] = t
            left = (~ended).nonzero().squeeze(1)
            rows, y, limit, floor, stream = rows[left], y[left], limit[left], floor[left], stream[left]
            state, enc = state.index_select(0, left), enc.select(left)
            prefix.select(left)
    return _best_first(cfg, out, scores, lengths, n, each)


def _admissible(logp: torch.Tensor, banned: torch.Tensor, early: torch.Tensor, at_limit: torch.Tensor) -> torch.Tensor:
    """``logp`` with what the search never emits at −inf, as :func:`.search.beam_search` bans it:
    the ``banned`` words, </s> in the rows ``early`` (short of their floor of words), every word
    but </s> in the rows ``at_limit``. There </s> stays, ``early`` or not, so that every row has a
    word to draw. The specials' columns are their ids, restricted output or not."""
    eos = logp[:, EOS].clone()
    logp.index_fill_(1, banned, _NEG)
    logp[:, EOS] = logp[:, EOS].masked_fill(early, _NEG)
    logp.masked_fill_(at_limit.unsqueeze(1), _NEG)
    logp[:, EOS] = torch.where(at_limit, eos, logp[:, EOS])
    return logp


def _best_first(
    cfg: SearchConfig,
    out: torch.Tensor,
    scores: torch.Tensor,
    lengths: torch.Tensor,
    n: int,
    each: torch.Tensor | None = None,
) -> Hypotheses:
    """The samples (rows i·n + j of sentence i) ordered best first within each sentence, with the
    log-probability of each word drawn (``each``, </s>'s last) where kept."""
    rank = ranking(cfg, scores, lengths)
    order = rank.view(-1, n).argsort(dim=1, descending=True, stable=True)
    order = (order + torch.arange(0, len(rank), n, device=rank.device).unsqueeze(1)).view(-1)
    ends, tokens = lengths[order].tolist(), out[order].tolist()
    drawn = None if each is None else each[order].tolist()
    return Hypotheses(
        [row[: end - 1] for row, end in zip(tokens, ends)],
        scores[order].tolist(),
        rank[order].tolist(),
        n,
        token_scores=None if drawn is None else [row[:end] for row, end in zip(drawn, ends)],
    )
