"""Log-probabilities of given translations under the models: ``nmtkit rescore``.

The models walk each translation with the search's own decoder step (:func:`.search.log_probs`),
so that a translation ``translate`` wrote gets the score ``translate`` gave it. A parallel text
gets a score per line, for filtering it (Marian's scorer, Sockeye's score); a Moses n-best list
gets each hypothesis' score added to its features, for reranking it (Nematus' rescore). With
``backward``, models of the other direction score each source given its translation: the channel
model of noisy-channel reranking.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..core.console import progress
from ..core.errors import UserError
from ..core.files import display_name, read_lines, refuse_two_on_stdin, results_to
from ..core.line_counts import count_lines
from ..core.parallel import chunked
from ..core.settings import RuntimeConfig
from ..core.streams import is_stream
from ..core.wording import counted
from .both_ways import directions, warn_named_otherwise
from .forced import CHUNK
from .io import json_score
from .nbest import NbestLine, read_nbest
from .search import ranking
from .settings import RescoreConfig
from .translator import Translator


@dataclass
class Rescored:
    """What ``nmtkit rescore`` scored: the pairs, their scored units (``</s>`` counted) and the
    sum of their log-probabilities."""

    pairs: int = 0
    units: int = 0
    log_prob: float = 0.0

    def add(self, scores: list[Scored]) -> None:
        self.pairs += len(scores)
        self.units += sum(len(s.tokens) + 1 for s in scores)
        self.log_prob += sum(s.score for s in scores)

    @property
    def perplexity(self) -> float:
        return math.exp(-self.log_prob / max(self.units, 1))

    def summary(self) -> str:
        per_pair, per_unit = self.log_prob / max(self.pairs, 1), -self.log_prob / max(self.units, 1)
        pairs = f"{self.pairs:,} pair{'' if self.pairs == 1 else 's'}"
        return (
            f"rescore: {pairs}, {self.units:,} units (</s> counted): log p {per_pair:.4f} a pair, "
            f"NLL {per_unit:.4f} a unit, perplexity {self.perplexity:.2f}"
        )


@dataclass(frozen=True)
class Scored:
    """A translation's log-probability, its ranking under the length penalty, and its subword
    units with each one's log-probability (``</s>``'s last)."""

    score: float
    ranking: float
    tokens: list[str]
    token_scores: list[float]

    def record(self, line: int, cfg: RescoreConfig, nbest: NbestLine | None) -> dict[str, Any]:
        """Its line of ``--output-format jsonl``: ``line`` counts the input's lines from 1, ``i``
        is an n-best line's own number of its source line, from 0."""
        record: dict[str, Any] = {"line": line, **({"i": nbest.index} if nbest else {})}
        record |= {"score": json_score(self.score), "ranking": json_score(self.ranking), "units": len(self.tokens) + 1}
        if cfg.token_scores:
            record |= {"tokens": self.tokens, "token_scores": [json_score(x) for x in self.token_scores]}
        return record


@dataclass(frozen=True)
class Scorer:
    """Models of one direction (an ensemble) that score given pairs as ``cfg`` says."""

    translator: Translator
    tokenized: bool
    cfg: RescoreConfig

    def scores(self, pairs: list[tuple[str, str]], first: int = 1) -> list[Scored]:
        """The scores of each (source, translation) pair, of the input's lines from ``first``."""
        given, scored = [s for s, _ in pairs], [t for _, t in pairs]
        if self.cfg.backward:
            given, scored = scored, given
        forced = self.translator.force(given, scored, self.tokenized, aligned=False, crop=(self.cfg.crop, first))
        log_p = torch.tensor([f.score for f in forced], dtype=torch.float64)
        units = torch.tensor([len(f.target_tokens) + 1 for f in forced])
        ranked = ranking(self.cfg.penalty, log_p, units).tolist()
        return [Scored(f.score, r, f.target_tokens, f.token_scores or []) for f, r in zip(forced, ranked)]


def lines(scored: list[tuple[Scored, NbestLine | None]], cfg: RescoreConfig, first: int = 1) -> Iterator[str]:
    """What rescore writes of each scored line, numbered from ``first``: its ranking, its n-best
    line with the ranking added as a feature, or its JSON object."""
    for k, (s, h) in enumerate(scored, first):
        if cfg.jsonl:
            yield json.dumps(s.record(k, cfg, h), ensure_ascii=False)
        else:
            yield f"{s.ranking:.4f}" if h is None else h.with_feature(cfg.feature, s.ranking)


Pair = tuple[str, str, NbestLine | None]  # a source, a translation of it, and its n-best line if any


def _pairs(source: str, target: str | None, nbest: str | None, feature: str) -> tuple[Iterator[Pair], int | None]:
    """The pairs to score, as they are read, and how many there are, where the files can be read
    twice: counted then, and their lines and text checked before any is scored (None: a stream)."""
    if nbest is not None:
        sources = list(read_lines(source))
        total = None if is_stream(nbest) else sum(1 for _ in read_nbest(nbest, len(sources), source, feature))
        return ((sources[h.index], h.text, h) for h in read_nbest(nbest, len(sources), source, feature)), total
    assert target is not None
    in_source, in_target = (None if is_stream(path) else count_lines(path, utf8=True) for path in (source, target))
    if in_source is not None and in_target is not None and in_source != in_target:
        raise UserError(
            f"{display_name(source)} has {counted(in_source, 'line')} but {display_name(target)} {in_target:,}"
        )
    return _zipped(source, target), in_source if in_source is not None else in_target


def _zipped(source: str, target: str) -> Iterator[Pair]:
    """The pairs of two streams of lines, one each; the line counts told apart at the end."""
    n = 0
    for n, (s, t) in enumerate(itertools.zip_longest(read_lines(source), read_lines(target)), 1):
        if s is None or t is None:
            short, long = (source, target) if s is None else (target, source)
            raise UserError(f"{display_name(short)} has {counted(n - 1, 'line')} but {display_name(long)} has more")
        yield s, t, None


def rescore_file(
    model_paths: Sequence[str],
    source: str,
    target: str | None = None,
    nbest: str | None = None,
    output: str | None = None,
    tokenized: bool = False,
    cfg: RescoreConfig = RescoreConfig(),
    runtime: RuntimeConfig | None = None,
) -> Rescored:
    """``nmtkit rescore``: the score of each line of ``target`` given the same line of ``source``, a
    line each; or ``nbest``'s lines, each with its score added as the feature ``cfg.feature``."""
    given = nbest if target is None else target
    if given is None or None not in (target, nbest):
        raise UserError("rescore scores --target's translations or --nbest-list's: give one of them")
    refuse_two_on_stdin([("--source", source), ("--target" if nbest is None else "--nbest-list", given)])
    forward, other = directions(list(model_paths))
    if other:
        raise UserError(
            f"{other[0]} translates the other way from {forward[0]}: rescore with one direction's models, "
            "and with the other's in a run of its own (--backward)"
        )
    pairs, total = _pairs(source, target, nbest, cfg.feature if nbest is not None and not cfg.jsonl else "")
    sides = ("tgt", "src") if cfg.backward else ("src", "tgt")
    hint = "--backward: models that read --target's language" if cfg.backward else "the other way's: --backward"
    warn_named_otherwise(source, sides[0], forward[0], hint)
    warn_named_otherwise(given, sides[1], forward[0], hint)
    # one process, with torch's threads (docs/translating.md says why)
    scorer = Scorer(Translator.from_checkpoints(forward, runtime), tokenized, cfg)
    done = Rescored()
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(results_to(output))
        bar = stack.enter_context(progress("pairs"))
        task = bar.add_task("rescore", total=total)
        for chunk in chunked(pairs, CHUNK):
            scores = scorer.scores([(s, t) for s, t, _ in chunk], done.pairs + 1)
            out.write(
                "".join(line + "\n" for line in lines(list(zip(scores, (h for _, _, h in chunk))), cfg, done.pairs + 1))
            )
            done.add(scores)
            bar.advance(task, len(chunk))
    return done
