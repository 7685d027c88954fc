"""N-best reranking with nmtkit rescore: the search's 1-best beside the best of its n-best list
reranked by the model's score, a model of the other direction's (the noisy channel, ``rescore
--backward``), a right-to-left model's (``train --right-to-left``) and the length, the weights
chosen on the valid verses.

    bin/bench-rerank --forward runs/en-fr/best.pt --backward runs/fr-en/best.pt
        [--right-to-left runs/en-fr-r2l/best.pt] [--data data/bible] [--nbest 8] [--threads 2]

Each split's raw English ($DATA/raw/{valid,test}.en) is translated with ``--beam N --nbest N``;
``rescore --backward`` adds the French→English model's log-probability of the English given each
hypothesis (feature ``channel``), and ``rescore`` with a right-to-left English→French model its
log-probability of the hypothesis (feature ``r2l``). A hypothesis' rank is its own log p, plus each
feature's weight times the feature, plus a bonus per word; for each set of features, the weights are
those of a grid that give the valid verses' best sacreBLEU, and the test verses are reranked with
them. Writes $BENCH_DIR/rerank/rerank.json and prints a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

import sacrebleu

from nmtkit.core.files import read_lines
from nmtkit.translate.rescore import read_nbest

from .bench_common import NMTKIT, bench_dir, call, fail, write_text

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)  # a feature's weight, beside the model's 1
WORDS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)  # a bonus per output word (log p favours the short)
SPLITS = ("valid", "test")
# Each hypothesis: its text, its model's log p, then each feature's value in the order of features.
Hypothesis = tuple[str, float, tuple[float, ...]]


def hypotheses(nbest: Path, source: Path, lines: int, features: list[str]) -> dict[int, list[Hypothesis]]:
    """Each source line's hypotheses, with their features' values."""
    by_line: dict[int, list[Hypothesis]] = {}
    for h in read_nbest(str(nbest), lines, str(source)):
        values = h.features.split()  # translate's log p, unnamed, then rescore's "name= x" each
        found = tuple(float(values[values.index(f"{name}=") + 1]) for name in features)
        by_line.setdefault(h.index, []).append((h.text, float(values[0]), found))
    return by_line


def reranked(by_line: dict[int, list[Hypothesis]], n: int, weights: tuple[float, ...], words: float) -> list[str]:
    """The best of each line's hypotheses under the features' ``weights`` and the ``words``
    bonus (an empty line where it has none)."""

    def rank(h: Hypothesis) -> float:
        return h[1] + sum(w * v for w, v in zip(weights, h[2])) + words * len(h[0].split())

    best = {i: max(hs, key=rank) for i, hs in by_line.items()}
    return [best[i][0] if i in best else "" for i in range(n)]


def bleu(hyps: list[str], refs: list[str]) -> float:
    return float(sacrebleu.corpus_bleu(hyps, [refs]).score)


# the features each model gives, in the order rescore adds them: name, what they are in the table
FEATURES = {"channel": "channel", "r2l": "right-to-left model"}


def run(args: argparse.Namespace) -> dict[str, Any]:
    models = {"channel": args.backward, "r2l": args.right_to_left}
    models = {name: path for name, path in models.items() if path is not None}
    if not models:
        fail("bench-rerank", "error: give a model to rerank with: --backward, --right-to-left, or both")
    missing = [str(p) for p in (args.forward, *models.values()) if not p.is_file()]
    missing += [str(args.data / "raw" / f"{s}.{lang}") for s in SPLITS for lang in ("en", "fr")]
    missing = [p for p in missing if not Path(p).is_file()]
    if missing:
        fail("bench-rerank", f"error: no {', '.join(missing)}")
    work = bench_dir() / "rerank"
    work.mkdir(parents=True, exist_ok=True)
    runtime = ["--threads", args.threads, "-q"]
    data: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for split in SPLITS:
        source, nbest = args.data / "raw" / f"{split}.en", work / f"{split}.nbest"
        beam = ["--beam", args.nbest, "--nbest", args.nbest]
        started = time.perf_counter()
        call([*NMTKIT, "translate", "-m", args.forward, source, *beam, "-o", nbest, *runtime], check=True)
        seconds[f"translate {split}"] = time.perf_counter() - started
        for name, path in models.items():  # each run adds its feature to the list the last one wrote
            scored = work / f"{split}.{name}.nbest"
            started = time.perf_counter()
            rescore = ["rescore", "-m", path, *(["--backward"] * (name == "channel")), "--source", source]
            rescore += ["--nbest-list", nbest, "--nbest-feature", name, "-o", scored]
            call([*NMTKIT, *rescore, *runtime], check=True)
            seconds[f"rescore {split} ({name})"] = time.perf_counter() - started
            nbest = scored
        refs = list(read_lines(args.data / "raw" / f"{split}.fr", allow_empty=True))
        data[split] = (hypotheses(nbest, source, len(refs), list(models)), refs)
    valid_hyps, valid_refs = data["valid"]
    grid = {
        (weights, words): bleu(reranked(valid_hyps, len(valid_refs), weights, words), valid_refs)
        for weights in itertools.product(WEIGHTS, repeat=len(models))
        for words in WORDS
    }
    test_hyps, test_refs = data["test"]
    rows = {"1-best of the search": _row(models, grid, ((0.0,) * len(models), 0.0), test_hyps, test_refs)}
    for k in range(len(models) + 1):
        for used in itertools.combinations(models, k):  # the best point with the others' weights at 0
            points = [p for p in grid if all(w == 0 or name in used for name, w in zip(models, p[0]))]
            best = max(points, key=lambda p: (grid[p], -sum(p[0]), -abs(p[1])))
            named = ", ".join([*(FEATURES[name] for name in used), "length"]).replace(", length", " and length")
            said = ", ".join(f"{name} {w:g}" for name, w in zip(models, best[0]) if name in used)
            label = f"reranked: {named if used else 'length alone'} ({said + ', ' if said else ''}words {best[1]:g})"
            rows[label] = _row(models, grid, best, test_hyps, test_refs)
    result = {
        "forward": str(args.forward),
        **{name: str(path) for name, path in models.items()},
        "nbest": args.nbest,
        "systems": rows,
        "seconds": seconds,
        "date": time.strftime("%Y-%m-%d"),
    }
    write_text(work / "rerank.json", json.dumps(result, indent=1) + "\n")
    return result


def _row(
    models: dict[str, Path], grid: dict[Any, float], point: tuple[tuple[float, ...], float], hyps: Any, refs: list[str]
) -> dict[str, Any]:
    """A system's weights, its valid BLEU (the grid's) and its test BLEU."""
    weights, words = point
    return {
        "weights": {**dict(zip(models, weights)), "words": words},
        "valid_bleu": grid[point],
        "test_bleu": bleu(reranked(hyps, len(refs), weights, words), refs),
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| system | valid BLEU | test BLEU |", "|---|---:|---:|"]
    for name, row in result["systems"].items():
        valid = "" if row["valid_bleu"] is None else f"{row['valid_bleu']:.2f}"
        lines.append(f"| {name} | {valid} | {row['test_bleu']:.2f} |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench-rerank", description=__doc__.split("\n\n")[0])
    p.add_argument("--forward", type=Path, required=True, help="the English→French checkpoint that translates")
    p.add_argument("--backward", type=Path, help="a French→English checkpoint: the channel feature")
    p.add_argument("--right-to-left", type=Path, help="a right-to-left English→French checkpoint: the r2l feature")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the data directory [data/bible]")
    p.add_argument("--nbest", type=int, default=8, help="the beam and the n-best list's size [8]")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default) [0]")
    return p


def main(argv: list[str] | None = None) -> None:
    print(table(run(parser().parse_args(argv))))
