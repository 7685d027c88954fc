"""N-best reranking: ``nmtkit rerank``. Each hypothesis of a Moses n-best list is ranked by a
weighted sum of its features (``translate``'s log-probability ``F0``, what ``rescore`` added) and
a bonus per output word, and the best of each source line is written; ``tune`` finds the weights
that give the best BLEU against references, as MERT does for Moses, by searching a grid.

BLEU is counted from each hypothesis' n-gram statistics, computed once (sacreBLEU's own
statistics, which its significance tests sum the same way), so that a point of the grid costs a
weighted sum and a sum of statistics rather than a BLEU of the whole list.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.console import log
from ..core.errors import UserError
from ..core.files import display_name, read_lines, results_to
from ..translate.nbest import WORDS, features_of, read_nbest, said_features
from .score import multi_bleu, sacre_bleu
from .settings import RerankConfig

# the values a tuned weight takes beside the held feature's (1: the model's own log p): from a
# feature that counts against a hypothesis to one worth three times the model's score, finer
# near 0, where a second model's or a word bonus's weight mostly lies
GRID = (-1.0, -0.5, -0.2, 0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)
# the most points searched all (four tuned weights: a few seconds); beyond, one weight at a time,
# from the start and from points drawn at random (seeded), as MERT restarts its line searches
WHOLE_GRID = 30_000
RESTARTS = 20
PASSES = 20  # one weight at a time: the most rounds over the weights from a start


@dataclass(frozen=True)
class Lists:
    """An n-best list as arrays: each hypothesis' source line, text and feature values (a column
    per value; the features and their numbers of values in ``layout``, the word count last), and
    the number of source lines. A source line without hypotheses gets an empty one."""

    lines: np.ndarray  # (H,) the source line of each hypothesis, from 0, in order of lines
    texts: list[str]
    values: np.ndarray  # (H, columns) float64
    layout: list[tuple[str, int]]
    sentences: int
    given: int  # the hypotheses the list gave (the empty ones of lines without any not counted)

    def best(self, weights: np.ndarray) -> np.ndarray:
        """The index of each line's best hypothesis under ``weights`` (one per column), the first
        listed among equals (the search's order). A score past float64's range (features and
        weights whose products overflow) is refused: the BLAS makes it inf or NaN, and NaN ranks with
        none, which would lose its line."""
        with np.errstate(over="ignore", invalid="ignore"):
            scores = self.values @ weights
        starts = np.flatnonzero(np.r_[True, self.lines[1:] != self.lines[:-1]])
        top = np.maximum.reduceat(scores, starts)  # a NaN, or an inf, of a line's scores reaches its top
        if not np.isfinite(top).all():
            at = int(np.flatnonzero(~np.isfinite(top))[0])
            raise UserError(
                f"the weighted score of a hypothesis of line {self.lines[starts[at]]} (from 0) overflows: its "
                f"features times the weights {self.spec(weights)} pass float64's range; scale the features or the "
                "weights down"
            )
        hits = np.flatnonzero(scores == np.repeat(top, np.diff(np.r_[starts, len(scores)])))
        _, first = np.unique(self.lines[hits], return_index=True)
        return hits[first]

    def firsts(self) -> np.ndarray:
        """The index of each line's first hypothesis: the search's best."""
        return np.unique(self.lines, return_index=True)[1]

    def columns(self, name: str) -> slice:
        """The columns of the feature ``name``."""
        start = 0
        for feature, k in self.layout:
            if feature == name:
                return slice(start, start + k)
            start += k
        raise KeyError(name)

    def weights(self, given: dict[str, list[float]]) -> np.ndarray:
        """A weight per column from ``given`` (a feature's values by name), 0 where not named; a
        name the lists lack, or given another number of values than theirs, is refused."""
        out = np.zeros(self.values.shape[1])
        sizes = dict(self.layout)
        for name, values in given.items():
            if name not in sizes:
                raise UserError(f"--weights: no feature {name}= in the lists (they have {said_features(self.layout)})")
            if len(values) != sizes[name]:
                raise UserError(f"--weights: {name}= takes {sizes[name]} value(s), as the lists give it")
            out[self.columns(name)] = values
        return out

    def spec(self, weights: np.ndarray, names: Sequence[str] | None = None) -> str:
        """The weights as ``--weights`` takes them, of the features ``names`` in their order (all,
        in the lists', by default): a tuning's held feature stays first."""
        return " ".join(
            f"{name}= " + " ".join(f"{w:g}" for w in weights[self.columns(name)])
            for name in (names if names is not None else [name for name, _ in self.layout])
        )


def read_lists(path: str, sentences: int | None = None, references: str = "") -> Lists:
    """``path``'s n-best list, every line of the same features (``sentences``: the number of
    source lines, the ``references``' where they are given; else the last line number's + 1)."""
    where = display_name(path)
    rows: list[tuple[int, str, list[float]]] = []
    layout: list[tuple[str, int]] | None = None
    for h in read_nbest(path, sentences, references):
        found = h.values  # read_nbest refused what it cannot read, and other features than line 1's
        layout = layout if layout is not None else [(name, len(values)) for name, values in found.items()]
        rows.append((h.index, h.text, [v for values in found.values() for v in values]))
    if layout is None:
        raise UserError(f"{where}: no n-best lines")
    if not layout:
        raise UserError(f"{where}: its hypotheses have no features: nothing to rank them by")
    n, given = sentences if sentences is not None else max(i for i, _, _ in rows) + 1, len(rows)
    seen = {i for i, _, _ in rows}
    if sentences is None and n > 2 * len(seen) + 100:  # translate leaves no gaps: an index damaged, or another file's
        raise UserError(
            f"{where}: its indices run to {n - 1:,} but only {len(seen):,} lines have hypotheses: a damaged "
            "index (rerank writes a line for every index up to the last)"
        )
    if len(seen) < n:  # translate leaves none: a list cut, or of another input (which would tune nothing)
        gap = min(set(range(n)) - seen)
        lines = f"the {n:,} lines of {display_name(references)}" if references else f"its lines 0 to {n - 1:,}"
        log(
            f"warning: {where}: no hypotheses for {n - len(seen):,} of {lines} (the first: {gap}): "
            "each gets an empty one"
        )
    rows += [(i, "", [0.0] * sum(k for _, k in layout)) for i in range(n) if i not in seen]
    rows.sort(key=lambda r: r[0])  # stable: each line's hypotheses stay in their order
    values = np.array([[*v, len(t.split())] for _, t, v in rows], dtype=np.float64)
    return Lists(np.array([i for i, _, _ in rows]), [t for _, t, _ in rows], values, [*layout, (WORDS, 1)], n, given)


@dataclass(frozen=True)
class Tuned:
    """What tuning found: the weights, and the BLEU of the lists' first hypotheses and of the
    reranked ones against the references."""

    weights: np.ndarray
    first: float
    bleu: float


def tune(lists: Lists, references: list[str], start: np.ndarray, tuned: list[int], metric: Any) -> Tuned:
    """The weights of the ``tuned`` columns, each from :data:`GRID`, that give the best
    ``metric`` (a sacreBLEU BLEU) of the reranked lists, the others held at ``start``: all the
    grid's points where they are few (:data:`WHOLE_GRID`), else one weight at a time until a
    round changes none, from ``start`` and from :data:`RESTARTS` points of the grid drawn at
    random (seeded: the same lists tune the same). Among equals, the point nearest ``start``."""
    refs = [references[i] for i in lists.lines]
    stats = np.array(metric._extract_corpus_statistics(lists.texts, [refs]), dtype=np.int64)

    def bleu(weights: np.ndarray) -> float:
        return float(metric._compute_score_from_stats(stats[lists.best(weights)].sum(0).tolist()).score)

    def key(weights: np.ndarray) -> tuple[float, float]:
        return round(bleu(weights), 6), -float(np.abs(weights - start).sum())

    def at(point: Sequence[float]) -> np.ndarray:
        w = start.copy()
        w[tuned] = point
        return w

    reach = np.maximum(np.abs(start), max(abs(g) for g in GRID))  # the largest weight a point gives a column
    with np.errstate(over="ignore"):
        if not np.isfinite(np.abs(lists.values) @ reach).all():
            raise UserError(
                f"--tune: the features are too large for its grid (weights up to {max(GRID):g} times the held "
                "feature's): their weighted sums pass float64's range; scale the features down"
            )
    first = np.zeros(len(start))  # every hypothesis equal: the first of each line
    if len(GRID) ** len(tuned) <= WHOLE_GRID:
        points = [start, *(at(p) for p in itertools.product(GRID, repeat=len(tuned)))]  # start: off the grid too
        best = max(points, key=key)
    else:
        draws = np.random.default_rng(0).choice(GRID, (RESTARTS, len(tuned)))
        best = max((_ascent(w, tuned, key) for w in [start, *(at(p) for p in draws)]), key=key)
    return Tuned(best, bleu(first), bleu(best))


def _ascent(best: np.ndarray, tuned: list[int], key: Any) -> np.ndarray:
    """From ``best``, each weight in turn set to its value of the grid that ``key`` ranks first,
    until a round changes none."""
    for _ in range(PASSES):
        before = best.copy()
        for c in tuned:
            best = max((_with(best, c, g) for g in (best[c], *GRID)), key=key)
        if np.array_equal(before, best):
            break
    return best


def _with(weights: np.ndarray, column: int, value: float) -> np.ndarray:
    out = weights.copy()
    out[column] = value
    return out


def rerank_file(nbest: str, output: str | None = None, cfg: RerankConfig = RerankConfig(), tune_on: str = "") -> str:
    """``nmtkit rerank``: the best hypothesis of each source line of ``nbest`` under
    ``cfg.weights``, a line each; or, given references (``tune_on``), the weights that rerank the
    lists best against them, on a line. Returns the summary for stderr."""
    try:
        given = features_of(cfg.weights)
    except ValueError as err:
        raise UserError(f"--weights '{cfg.weights}': {err}") from None
    held = next(iter(given.items()), None)
    if tune_on and held and not any(held[1]):  # the grid's values are the tuned weights' over the held one's
        raise UserError(f"--tune: --weights holds {held[0]}= at 0, whose weight sets the scale: give it another")
    references = list(read_lines(tune_on, allow_empty=True)) if tune_on else None
    if references is not None and not any(line.strip() for line in references):
        said = "holds only empty lines" if references else "is empty"
        raise UserError(f"--tune {display_name(tune_on)}: {said}; give the references, a line each")
    lists = read_lists(nbest, None if references is None else len(references), tune_on)
    first, k = lists.layout[0]
    if references is None:
        weights = lists.weights(given or {first: [1.0] * k})
        chosen = lists.best(weights)
        if not given and (moved := int((chosen != lists.firsts()).sum())):
            log(
                f"rerank: by {first}= alone, {moved:,} of {lists.sentences:,} lines "
                f"{'gets' if moved == 1 else 'get'} another hypothesis than the "
                f"lists' first, which a length or coverage penalty that {first}= leaves out may have ranked first: "
                "weigh words= too (--tune finds its weight)"
            )
        best = [lists.texts[i] for i in chosen]
        with results_to(output) as out:
            out.write("".join(line + "\n" for line in best))
        return f"rerank: {lists.sentences:,} lines from {lists.given:,} hypotheses, by {lists.spec(weights)}"
    start = given or {name: [1.0 if name == first else 0.0] * n for name, n in lists.layout}
    names = list(start)
    weights = lists.weights(start)
    tuned = [c for name in names[1:] for c in range(lists.columns(name).start, lists.columns(name).stop)]
    if not tuned:
        raise UserError(f"--tune: nothing to tune: --weights names {names[0]}= alone, whose weight sets the scale")
    found = tune(lists, references, weights, tuned, multi_bleu() if cfg.tokenized else sacre_bleu())
    with results_to(output) as out:
        out.write(lists.spec(found.weights, names) + "\n")
    return (
        f"rerank: tuned on {lists.sentences:,} lines: BLEU {found.first:.2f} with the lists' first hypotheses, "
        f"{found.bleu:.2f} reranked"
    )
