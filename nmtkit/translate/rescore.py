"""Log-probabilities of given translations under the models: ``nmtkit rescore``.

The models walk each translation with the search's own decoder step (:func:`.search.log_probs`),
so that a translation ``translate`` wrote gets the score ``translate`` gave it. A parallel text gets a score per line,
for filtering it (Marian's scorer, Sockeye's score); a Moses n-best list gets each hypothesis' score
added to its features, for reranking it (Nematus' rescore). With ``backward``, models of the other
direction score each source given its translation: the channel model of noisy-channel reranking.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import torch

from ..core.console import progress
from ..core.errors import UserError
from ..core.files import STDIO, atomic_write, display_name, read_lines, refuse_two_on_stdin
from ..core.parallel import chunked
from ..core.settings import RuntimeConfig
from .both_ways import directions, warn_named_otherwise
from .forced import CHUNK
from .io import json_score
from .search import ranking
from .settings import RescoreConfig
from .translator import Translator

NBEST_FORM = "'i ||| text ||| features ||| score'"


@dataclass(frozen=True)
class NbestLine:
    """A Moses n-best line: its sentence's number (from 0), its text, its features, and the fields
    after them (the total score, and whatever a tool added), kept as they were."""

    index: int
    text: str
    features: str
    rest: tuple[str, ...]

    def with_feature(self, name: str, score: float) -> str:
        features = f"{self.features} {name}= {score:.4f}".strip()
        return " ||| ".join((str(self.index), self.text, features, *self.rest))


def read_nbest(path: str, sentences: int, source: str) -> list[NbestLine]:
    """The lines of a Moses n-best list, each of one of ``source``'s ``sentences`` lines."""
    lines = []
    for lineno, line in enumerate(read_lines(path), 1):
        fields = [f.strip() for f in line.split("|||")]
        if len(fields) < 3:
            raise UserError(f"{display_name(path)}: line {lineno} is no Moses n-best line {NBEST_FORM}")
        if not fields[0].isdigit():
            raise UserError(f"{display_name(path)}: line {lineno} starts with '{fields[0]}', not a line number from 0")
        index = int(fields[0])
        if index >= sentences:
            raise UserError(
                f"{display_name(path)}: line {lineno} is of source line {index} (from 0), "
                f"but {display_name(source)} has {sentences:,} lines"
            )
        lines.append(NbestLine(index, fields[1], fields[2], tuple(fields[3:])))
    return lines


@dataclass(frozen=True)
class Rescored:
    """What ``nmtkit rescore`` scored: the pairs, their scored units (``</s>`` counted) and the
    sum of their log-probabilities."""

    pairs: int
    units: int
    log_prob: float

    @property
    def perplexity(self) -> float:
        return math.exp(-self.log_prob / max(self.units, 1))

    def summary(self) -> str:
        per_pair, per_unit = self.log_prob / max(self.pairs, 1), -self.log_prob / max(self.units, 1)
        return (
            f"rescore: {self.pairs:,} pairs, {self.units:,} units (</s> counted): log p {per_pair:.4f} a pair, "
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

    def scores(self, pairs: list[tuple[str, str]]) -> list[Scored]:
        """The scores of each (source, translation) pair."""
        given, scored = [s for s, _ in pairs], [t for _, t in pairs]
        if self.cfg.backward:
            given, scored = scored, given
        forced = self.translator.force(given, scored, self.tokenized, aligned=False)
        log_p = torch.tensor([f.score for f in forced], dtype=torch.float64)
        units = torch.tensor([len(f.target_tokens) + 1 for f in forced])
        ranked = ranking(self.cfg.penalty, log_p, units).tolist()
        return [Scored(f.score, r, f.target_tokens, f.token_scores or []) for f, r in zip(forced, ranked)]


def lines(scores: list[Scored], hypotheses: list[NbestLine], cfg: RescoreConfig) -> Iterator[str]:
    """What rescore writes of each scored line: its ranking, its n-best line with the ranking added
    as a feature, or its JSON object."""
    for k, (s, h) in enumerate(itertools.zip_longest(scores, hypotheses), 1):
        if cfg.jsonl:
            yield json.dumps(s.record(k, cfg, h), ensure_ascii=False)
        else:
            yield f"{s.ranking:.4f}" if h is None else h.with_feature(cfg.feature, s.ranking)


def _pairs(source: str, target: str | None, nbest: str | None) -> tuple[list[tuple[str, str]], list[NbestLine]]:
    """The (source, translation) pairs to score, and the n-best lines they come from (none for
    ``target``'s)."""
    sources = list(read_lines(source))
    if nbest is not None:
        hypotheses = read_nbest(nbest, len(sources), source)
        return [(sources[h.index], h.text) for h in hypotheses], hypotheses
    assert target is not None
    targets = list(read_lines(target))
    if len(sources) != len(targets):
        raise UserError(f"{source} has {len(sources):,} lines but {target} {len(targets):,}")
    return list(zip(sources, targets)), []


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
    pairs, hypotheses = _pairs(source, target, nbest)
    forward, other = directions(list(model_paths))
    if other:
        raise UserError(
            f"{other[0]} translates the other way from {forward[0]}: rescore with one direction's models, "
            "and with the other's in a run of its own (--backward)"
        )
    sides = ("tgt", "src") if cfg.backward else ("src", "tgt")
    warn_named_otherwise(source, sides[0], forward[0])
    warn_named_otherwise(given, sides[1], forward[0])
    # one process, with torch's threads: processes of a thread each, as align -j has, were no
    # faster (docs/translating.md)
    scorer = Scorer(Translator.from_checkpoints(forward, runtime), tokenized, cfg)
    scores: list[Scored] = []
    with progress("pairs") as bar:
        task = bar.add_task("rescore", total=len(pairs))
        for chunk in chunked(pairs, CHUNK):
            scores += scorer.scores(chunk)
            bar.advance(task, len(chunk))
    with contextlib.ExitStack() as stack:
        out: IO[str] = stack.enter_context(atomic_write(output)) if output and output != STDIO else sys.stdout
        out.write("".join(line + "\n" for line in lines(scores, hypotheses, cfg)))
    return Rescored(len(pairs), sum(len(s.tokens) + 1 for s in scores), sum(s.score for s in scores))
