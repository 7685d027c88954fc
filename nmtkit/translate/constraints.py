"""Lexically constrained search (``translate --constraints``): phrases each output must contain.

Post & Vilar (2018)'s dynamic beam allocation, as fairseq's ``--constraints`` and Sockeye's
do it, for unordered phrases of one or more target units. An output holds a phrase when the
phrase occurs in it as a run of units, anywhere (in a forced prefix too, and overlapping
another phrase or not). A hypothesis' progress is the number of units of the phrases it holds,
plus the longest end of it that begins one of the others. At each step every open row offers
its k best words, as in the plain search, and besides them, for each phrase it does not hold,
the unit that would take that phrase a step further. The k survivors of a sentence are then
taken bank by bank, a bank being the candidates of one progress: the best of each bank from
the most advanced down, then the second best of each, and so on, so that hypotheses which
have placed more of the phrases are not pushed out by likelier ones that have placed fewer.
A hypothesis may end only when it holds every phrase, and its </s> finishes it if it is among
the k best extensions of the hypotheses that hold them all (the plain search's rule, within
that bank). Besides the phrases' units, a row of subwords is offered the likeliest unit that
makes a word's edge (one that ends a word with BPE, begins one with SentencePiece), which a
phrase may need before it can begin or after it ends; the output limit widens to leave room for
every phrase after a prefix and for one such unit each. Where no hypothesis holds every phrase
within the limit all the same (rare; the tests count it), the sentence has no output here and
the translator searches it again without its phrases, with a warning.

Everything is tensor operations over the rows and their candidates: no Python loop runs over
hypotheses, phrases or a phrase's units.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import torch

from ..core.console import log
from ..core.errors import UserError
from ..data.vocab import BOS, EOS, NOT_WORDS, PAD, UNK
from ..text.bpe import SEPARATOR, SPM_MARK

if TYPE_CHECKING:
    from ..data.sides import Side
    from .search import Hypotheses
    from .settings import SearchConfig

_NEG = float("-inf")
T = TypeVar("T")
SPECIAL_IDS = (PAD, UNK, BOS, EOS)


def phrases(line: str) -> list[str]:
    """The constraints of one ``--constraints`` line: its tab-separated fields, empty ones dropped."""
    return [field.strip() for field in line.rstrip("\r\n").split("\t") if field.strip()]


def refuse_sampling(search: SearchConfig) -> None:
    """Constraints and sampling, refused in a line."""
    if search.sampling:
        raise UserError("--constraints guide the beam search: sampling draws each word and cannot place them")


def constraint_ids(
    lines: list[list[str]],
    side: Side,
    tokenized: bool,
    right_to_left: bool,
    first_line: int,
    warn: Callable[[str], object] = log,
) -> list[list[list[int]]]:
    """Each line's phrases as target ids, through the target pipeline as references go, in the
    order the model writes them (``right_to_left``: last unit first). A phrase with a unit out of
    the vocabulary, or a special one (``</s>`` in --tokenized text), is dropped with a warning: no
    output could hold its text (``warn``: where the warnings go)."""
    out = []
    for k, line in enumerate(lines):
        ids = []
        for phrase in line:
            tokens = side.tokens(phrase, tokenized)
            units = side.ids(tokens)
            if any(t in NOT_WORDS for t in tokens):
                warn(f"line {first_line + k}: constraint {phrase!r} holds <s>, </s> or <pad>: left out")
            elif UNK in units:
                warn(f"line {first_line + k}: constraint {phrase!r} has a unit out of the vocabulary: left out")
            elif units:
                ids.append(units[::-1] if right_to_left else units)
        out.append(ids[::-1] if right_to_left else ids)  # the model writes the last phrase first
    return out


@dataclass
class Phrases:
    """A batch's constraints: (B, C, L) target ids, <pad> after each phrase and in place of a
    sentence's missing ones; and where words begin and end among the target units, as two
    (V,) masks over the vocabulary (None: every unit is a word). A phrase must begin and end at
    word edges: BPE's ``Bo@@ repas`` does not hold "repas", nor SentencePiece's ``▁repas ser``."""

    ids: torch.Tensor
    closes: torch.Tensor | None = None  # the unit ends a word, whatever follows (BPE: no @@)
    opens: torch.Tensor | None = None  # the unit begins a word, whatever precedes (SentencePiece's ▁)
    ordered: bool = False  # held in the order given, each after the last unit of the one before


def word_edges(
    tokens: list[str], right_to_left: bool, device: torch.device, sentencepiece: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``closes`` and ``opens`` masks of :class:`Phrases` for a vocabulary's ``tokens``, units
    of SentencePiece's or not (BPE's, or words: the codes say which); a right-to-left model writes
    a word's units last first, so that each one's end is the other's start."""
    spm = sentencepiece
    closes = torch.tensor([not spm and not t.endswith(SEPARATOR) for t in tokens], dtype=torch.bool)
    opens = torch.tensor([spm and t.startswith(SPM_MARK) for t in tokens], dtype=torch.bool)
    closes[list(SPECIAL_IDS)] = opens[list(SPECIAL_IDS)] = True
    closes, opens = (opens, closes) if right_to_left else (closes, opens)
    return closes.to(device), opens.to(device)


def constraint_batch(
    each: list[list[list[int]]],
    device: torch.device,
    edges: tuple[torch.Tensor, torch.Tensor] | None = None,
    ordered: bool = False,
) -> Phrases | None:
    """The constraints of a batch's sentences (a list of phrases of target ids each) with the
    vocabulary's word ``edges`` (:func:`word_edges`; None: every unit is a word), to be held in
    their order or not; None when no sentence has one."""
    if not any(each):
        return None
    c = max(len(ids) for ids in each)
    n = max(len(p) for ids in each for p in ids)
    out = torch.full((len(each), c, n), PAD, dtype=torch.long)
    for i, ids in enumerate(each):
        for j, p in enumerate(ids):
            out[i, j, : len(p)] = torch.tensor(p, dtype=torch.long)
    closes, opens = edges or (None, None)
    return Phrases(out.to(device), closes, opens, ordered)


def contains(output: list[T], phrase: list[T]) -> bool:
    """Whether ``phrase`` occurs in ``output`` as a contiguous run."""
    n = len(phrase)
    return any(output[i : i + n] == phrase for i in range(len(output) - n + 1))


def contains_in_order(output: list[T], phrases: list[list[T]]) -> bool:
    """Whether ``phrases`` occur in ``output`` as contiguous runs in their order, none
    overlapping the next. The earliest end of each is the best start for the rest."""
    start = 0
    for phrase in phrases:
        n = len(phrase)
        start = next((i + n for i in range(start, len(output) - n + 1) if output[i : i + n] == phrase), -1)
        if start < 0:
            return False
    return True


def unheld(hyps: Hypotheses, phrases: Phrases) -> list[int]:
    """The sentences of a batch that have phrases and an output that does not hold them (as
    the constrained search holds them: at word edges, in their order when ``ordered``)."""
    closes = None if phrases.closes is None else phrases.closes.tolist()
    opens = None if phrases.opens is None else phrases.opens.tolist()

    def ends(out: list[int], phrase: list[int], start: int = 0) -> Iterator[int]:  # of its runs from start on
        n = len(phrase)
        for i in range(start, len(out) - n + 1):
            if out[i : i + n] == phrase and (
                closes is None
                or opens is None
                or (
                    (i == 0 or closes[out[i - 1]] or opens[phrase[0]])
                    and (i + n == len(out) or closes[phrase[-1]] or opens[out[i + n]])
                )
            ):
                yield i + n

    def holds(out: list[int], each: list[list[int]]) -> bool:
        if not phrases.ordered:  # a phrase given twice, by two runs
            return all(sum(1 for _ in ends(out, p)) >= each.count(p) for p in each)
        start = 0
        for phrase in each:
            start = next(ends(out, phrase, start), -1)
            if start < 0:
                return False
        return True

    musts = [[[u for u in p if u != PAD] for p in sentence] for sentence in phrases.ids.tolist()]
    n = hyps.nbest
    return [
        i
        for i, each in enumerate(musts)
        if any(each)
        and not all(
            holds(hyps.tokens[r], [p for p in each if p]) for r in range(i * n, i * n + n) if hyps.scores[r] > _NEG
        )
    ]


def unplaced(hyps: Hypotheses, phrases: Phrases) -> list[int]:
    """The sentences of a batch that have phrases and no output: no hypothesis held them all
    within the output limit."""
    has = (phrases.ids != PAD).flatten(1).any(1).tolist()
    return [i for i, h in enumerate(has) if h and hyps.scores[i * hyps.nbest] == _NEG]


def splice(hyps: Hypotheses, other: Hypotheses, sentences: list[int | None]) -> Hypotheses:
    """``hyps`` with the outputs of ``sentences`` (indices into its batch) those of ``other``,
    which holds theirs in that order and as many a sentence (None: other's sentence not taken)."""
    n, rows = hyps.nbest, list(range(len(hyps.tokens)))
    take = {i * n + j: q * n + j for q, i in enumerate(sentences) if i is not None for j in range(n)}
    if not take:
        return hyps
    pick = [(other, take[r]) if r in take else (hyps, r) for r in rows]
    attention = hyps.attention
    if attention is not None and other.attention is not None:
        t = max(attention.shape[1], other.attention.shape[1])
        attention = torch.nn.functional.pad(attention, (0, 0, 0, t - attention.shape[1]))
        given = torch.nn.functional.pad(other.attention, (0, 0, 0, t - other.attention.shape[1]))
        index = torch.tensor(list(take), device=attention.device)
        attention = attention.index_copy(0, index, given[torch.tensor(list(take.values()), device=given.device)])
    each = None if hyps.token_scores is None else [h.token_scores[r] for h, r in pick]  # type: ignore[index]
    return replace(
        hyps,
        tokens=[h.tokens[r] for h, r in pick],
        scores=[h.scores[r] for h, r in pick],
        ranking=[h.ranking[r] for h, r in pick],
        attention=attention,
        token_scores=each,
    )


class Constraints:
    """The search side of constraints. Each row holds its sentence's phrases as (rows, C, L)
    columns of the output layer (−1 past a phrase), and its progress: which phrases its output
    holds, which it holds but for the edge of its last word (the next unit must begin a word:
    SentencePiece), for each other phrase the longest end of the output that begins it (a
    phrase broken off half-way falls back as far as its units allow, so "a a b" is found in
    "a a a b"), and how many units it has written since it last completed a phrase (a partial
    match counts towards the progress only over those: units two phrases share count once).
    Built from :class:`Phrases` (None: no constraints), mapped to the columns of a restricted
    output ``vocab`` (which must hold them), each sentence repeated for its ``k`` rows."""

    def __init__(self, phrases: Phrases | None, vocab: torch.Tensor | None = None, k: int = 1):
        self.active = phrases is not None and bool((phrases.ids != PAD).any())
        if not self.active:
            return
        assert phrases is not None
        ids = phrases.ids
        cols = ids if vocab is None else torch.searchsorted(vocab, ids)
        self.cols = cols.masked_fill(ids == PAD, -1).repeat_interleave(k, 0)
        self.closes, self.opens, self.ordered = phrases.closes, phrases.opens, phrases.ordered
        if vocab is not None and self.closes is not None and self.opens is not None:
            self.closes, self.opens = self.closes[vocab], self.opens[vocab]
        self.lengths = (self.cols >= 0).sum(2)  # (rows, C), 0 for a missing phrase
        self.need = self.lengths.sum(1)  # (rows,) units to produce in all
        self.most = int(self.need.max())  # once: asking a GPU every step would wait for it
        rows, c, n = self.cols.shape
        self.met = self.lengths == 0  # a missing phrase is held
        self.edge = torch.zeros_like(self.met)  # held if the next unit begins a word
        self.match = torch.zeros((rows, c), dtype=torch.long, device=ids.device)
        self.since = torch.full((rows,), n, dtype=torch.long, device=ids.device)
        self.undo = self.since.clone()  # what since would be, had no phrase been completed last
        self.tail = torch.full((rows, n), -1, dtype=torch.long, device=ids.device)  # the last units
        # a phrase given twice (in any order) is held by two runs: the second once the first is held
        same = (self.cols.unsqueeze(2) == self.cols.unsqueeze(1)).all(3) & (self.lengths > 0).unsqueeze(2)
        same &= torch.ones((c, c), dtype=torch.bool, device=ids.device).tril(-1)  # (rows, C, C): an earlier twin
        self.twins = same if not self.ordered and bool(same.any()) else None  # once, as most
        # the run lengths m = 1..n, and where a run of m ending with the next unit has its first m - 1
        # units in the tail (m, j), j < m - 1 counting: fixed for the search, made once
        self.m = torch.arange(1, n + 1, device=ids.device)
        j = torch.arange(n, device=ids.device)
        self.at = ((n + 1 - self.m).unsqueeze(1) + j).clamp(max=n - 1)
        self.idle = j >= (self.m - 1).unsqueeze(1)

    def room(self, limit: torch.Tensor, prefix: torch.Tensor | None) -> torch.Tensor:
        """The output limit of each sentence (B,), widened to hold its forced ``prefix`` (B,;
        None: none), all of its phrases after it (and a unit a phrase to reach a word's edge,
        where units are subwords), and </s>."""
        if not self.active:
            return limit
        every = len(self.need) // len(limit)
        need = self.need[::every] + 1
        if self.closes is not None:  # a phrase may wait a unit for a word's edge
            need = need + (self.lengths[::every] > 0).sum(1)
        return torch.maximum(limit, need if prefix is None else need + prefix)

    def unmet(self) -> torch.Tensor:
        """Rows (rows,) whose output does not yet hold every phrase: they may not end (</s> is a
        word's edge)."""
        return ~(self.met | self.edge).all(1)

    def extend(
        self, logp: torch.Tensor, scores: torch.Tensor, ended: torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of the search for the open rows (b·k, V) whose scores are ``scores`` (b, k)
        and whose </s> extensions score ``ended`` (b, k; −inf where a row may not end): the k
        survivors' scores (b, k), each one's parent row, column and log-probability (b·k,), and
        ``ended`` with −inf where a </s> is not among the k best extensions of the rows that
        hold every phrase (the plain search's rule within that bank); the rows' progress moved
        to the survivors'."""
        rows, c = self.met.shape
        b = rows // k
        w = min(k, logp.shape[1])
        edges = self.closes is not None and self.opens is not None
        top_logp, top = logp.topk(min(2 * k + 2, logp.shape[1]) if edges else w, dim=1)
        nxt = self.cols.gather(2, self.match.clamp(max=self.cols.shape[2] - 1).unsqueeze(2)).squeeze(2)
        # the unit that takes each unheld phrase a step further (ordered: the first unheld one)
        extra = [nxt.masked_fill(self.met | self.edge | ~self._open(self.met | self.edge), -1)]
        if self.closes is not None and self.opens is not None:  # and the likeliest near the top that makes an edge
            at_edge = (self.closes | self.opens)[top]
            unit = top.gather(1, at_edge.int().argmax(1, keepdim=True))  # a full scan of V would cost as much again
            extra.append(unit.masked_fill(~at_edge.any(1, keepdim=True), -1))
        top_logp, top = top_logp[:, :w], top[:, :w]
        more = torch.cat(extra, 1)
        offered = (more >= 0) & ~(more.unsqueeze(2) == top.unsqueeze(1)).any(2)  # not among the k best already
        earlier = torch.ones((more.shape[1],) * 2, dtype=torch.bool, device=logp.device).tril(-1)
        offered &= ~((more.unsqueeze(2) == more.unsqueeze(1)) & earlier & offered.unsqueeze(1)).any(2)
        cand = torch.cat([top, more.clamp(min=0)], 1)  # (rows, n)
        cand_logp = torch.cat([top_logp, logp.gather(1, more.clamp(min=0)).masked_fill(~offered, _NEG)], 1)
        n = cand.shape[1]
        met, edge, match, since, undo = self._advance(cand)
        held = (self.lengths.unsqueeze(1) * (met | edge)).sum(2)
        progress = (held + torch.minimum(match.amax(2), since)).view(b, k * n)
        total = (scores.view(-1, 1) + cand_logp).view(b, k * n)
        pick = _round_robin(total, progress, self.most, k)
        complete = total.masked_fill(progress < self.need.view(b, k)[:, :1], _NEG)
        kth = torch.cat([complete, ended], 1).topk(k, dim=1).values[:, -1:]
        flat = (torch.arange(b, device=logp.device).unsqueeze(1) * (k * n) + pick).view(-1)
        self.met, self.edge, self.match = met.view(-1, c)[flat], edge.view(-1, c)[flat], match.view(-1, c)[flat]
        self.since, self.undo = since.view(-1)[flat], undo.view(-1)[flat]
        parent = torch.div(flat, n, rounding_mode="floor")  # a row of the same sentence: its phrases
        y = cand.view(-1)[flat]
        self.tail = torch.cat([self.tail[parent], y.unsqueeze(1)], 1)[:, 1:]
        chosen = cand_logp.view(-1)[flat]
        return total.gather(1, pick), parent, y, chosen, ended.masked_fill(ended < kth, _NEG)

    def _advance(self, cand: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """For each row's candidate units (rows, n): which phrases the output holds after it
        (rows, n, C), which it holds but for the next unit's edge, for each other phrase the
        longest end of the output that begins it (its length), the units since a phrase was
        last completed (rows, n), and what that would be had this unit completed none."""
        most = self.cols.shape[2]
        was = (self.met | self.edge).unsqueeze(1)
        since = self.since.unsqueeze(1).expand(-1, cand.shape[1])
        if self.opens is not None:  # a phrase held but for a word's edge that this unit does not make is let go
            lost = self.edge.any(1, keepdim=True) & ~self.opens[cand]
            since = torch.where(lost, self.undo.unsqueeze(1), since)
        grown = (since + 1).clamp(max=most)
        room = self.lengths.unsqueeze(1)
        if self.ordered:  # begun after the last phrase held ended (and only the first unheld one counts, below)
            room = room.minimum(grown.unsqueeze(2))
        # a run of m units ends with the candidate where the phrase's first m - 1 end the output so
        # far (the same for every candidate of a row) and its m-th is the candidate
        ends = self._begun().unsqueeze(1) & (cand[:, :, None, None] == self.cols.unsqueeze(1))  # (rows, n, C, m)
        match = (ends & (self.m <= room.unsqueeze(3))).long().mul(self.m).amax(3)
        if self.ordered:
            match = match.masked_fill(~self._open(was), 0)
        held = self.met.unsqueeze(1)  # before this unit: a phrase whose edge it makes was held before it
        if self.opens is not None:
            held = held | (self.edge.unsqueeze(1) & self.opens[cand].unsqueeze(2))
        if self.twins is not None:  # the later of two twins waits for the earlier to be held
            waits = (self.twins.unsqueeze(1) & ~held.unsqueeze(2)).any(3)
            match = torch.where(waits, match.minimum(self.lengths.unsqueeze(1) - 1), match)
        done = match == self.lengths.unsqueeze(1)
        if self.closes is None or self.opens is None:
            met, edge = held | done, torch.zeros_like(done)
        else:  # held once the word ends: by its last unit, or by the next one beginning a word (held)
            met = held | (done & self.closes[cand].unsqueeze(2))
            edge = done & ~met
        if self.ordered:  # a phrase held but for an edge the next unit did not make lets go of those after it
            after = ~self._open(met | edge)
            met, edge, match = met & ~after, edge & ~after, match.masked_fill(after, 0)
        completed = ((met | edge) & done & ~held).any(2)
        return met, edge, match.masked_fill(met | edge, 0), torch.where(completed, 0, grown), grown

    def _begun(self) -> torch.Tensor:
        """Whether each phrase's first m - 1 units end each row's output (rows, C, m), for m from
        1 to the longest phrase, and where units are subwords, begin a word."""
        window = self.tail[:, self.at]  # (rows, m, j)
        begun = ((window.unsqueeze(1) == self.cols.unsqueeze(2)) | self.idle).all(3)
        if self.closes is not None and self.opens is not None:  # the unit before the run ends a word
            before = self.tail[:, self.cols.shape[2] - self.m]  # (rows, m)
            opens = self.opens[self.cols[:, :, 0].clamp(min=0)].unsqueeze(2)  # or the phrase's first begins one
            begun &= ((before < 0) | self.closes[before.clamp(min=0)]).unsqueeze(1) | opens
        return begun

    def _open(self, held: torch.Tensor) -> torch.Tensor:
        """The phrases (…, C) that may be matched given those ``held``: every one, or when they
        are ordered, those whose predecessors are all held."""
        if not self.ordered:
            return torch.ones_like(held)
        before = torch.cat([torch.ones_like(held[..., :1]), held[..., :-1]], -1)
        return before.int().cummin(-1).values.bool()

    def select(self, rows: torch.Tensor) -> None:
        """The rows that go on (the search drops finished sentences)."""
        if self.active:
            self.cols, self.lengths, self.need = self.cols[rows], self.lengths[rows], self.need[rows]
            self.met, self.edge, self.match = self.met[rows], self.edge[rows], self.match[rows]
            self.since, self.undo, self.tail = self.since[rows], self.undo[rows], self.tail[rows]
            self.twins = None if self.twins is None else self.twins[rows]


def _round_robin(total: torch.Tensor, progress: torch.Tensor, most: int, k: int) -> torch.Tensor:
    """The k candidates (b, k) of each sentence's (b, M) that dynamic beam allocation keeps: the
    best of each progress from the most advanced down, then the second best of each, and so
    on; candidates that cannot be taken (−inf) last."""
    order = total.argsort(1, descending=True)
    sorted_progress = progress.gather(1, order)
    # a comparison rather than one_hot, which checks its values and so waits for a GPU
    banks = (sorted_progress.unsqueeze(2) == torch.arange(most + 1, device=total.device)).long()
    rank = ((banks.cumsum(1) - 1) * banks).sum(2)  # each candidate's place in its bank, in score order
    key = rank * (most + 1) + (most - sorted_progress)
    key = key.masked_fill(total.gather(1, order) == _NEG, torch.iinfo(key.dtype).max)
    return order.gather(1, key.topk(k, dim=1, largest=False).indices)
