"""N-best reranking with nmtkit rescore: the search's 1-best beside the best of its n-best list
reranked by the model's score, a model of the other direction's (the noisy channel, ``rescore
--backward``) and the length, the weights chosen on the valid verses.

    bin/bench-rerank --forward runs/en-fr/best.pt --backward runs/fr-en/best.pt [--data data/bible]
        [--nbest 8] [--threads 2]

Each split's raw English ($DATA/raw/{valid,test}.en) is translated with ``--beam N --nbest N``;
``rescore --backward`` adds the French→English model's log-probability of the English given each
hypothesis (feature ``channel``). A hypothesis' rank is its own log p + a·channel + b·words, a and
b the pair of a grid that gives the valid verses' best sacreBLEU; the test verses are reranked with
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

CHANNEL = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)  # the channel's weight, beside the model's 1
WORDS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)  # a bonus per output word (log p favours the short)
SPLITS = ("valid", "test")


def hypotheses(nbest: Path, source: Path, lines: int) -> dict[int, list[tuple[str, float, float]]]:
    """Each source line's hypotheses: (text, its model's log p, the channel's log p)."""
    by_line: dict[int, list[tuple[str, float, float]]] = {}
    for h in read_nbest(str(nbest), lines, str(source)):
        values = h.features.split()  # translate's log p, unnamed, then rescore's "channel= x"
        by_line.setdefault(h.index, []).append((h.text, float(values[0]), float(values[values.index("channel=") + 1])))
    return by_line


def reranked(by_line: dict[int, list[tuple[str, float, float]]], n: int, channel: float, words: float) -> list[str]:
    """The best of each line's hypotheses under the weights (an empty line where it has none)."""
    best = {i: max(h, key=lambda t: t[1] + channel * t[2] + words * len(t[0].split())) for i, h in by_line.items()}
    return [best[i][0] if i in best else "" for i in range(n)]


def bleu(hyps: list[str], refs: list[str]) -> float:
    return float(sacrebleu.corpus_bleu(hyps, [refs]).score)


def run(args: argparse.Namespace) -> dict[str, Any]:
    missing = [str(p) for p in (args.forward, args.backward) if not p.is_file()]
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
        source, nbest, scored = args.data / "raw" / f"{split}.en", work / f"{split}.nbest", work / f"{split}.ch.nbest"
        beam = ["--beam", args.nbest, "--nbest", args.nbest]
        started = time.perf_counter()
        call([*NMTKIT, "translate", "-m", args.forward, source, *beam, "-o", nbest, *runtime], check=True)
        seconds[f"translate {split}"] = time.perf_counter() - started
        started = time.perf_counter()
        rescore = ["rescore", "-m", args.backward, "--backward", "--source", source, "--nbest-list", nbest]
        call([*NMTKIT, *rescore, "--nbest-feature", "channel", "-o", scored, *runtime], check=True)
        seconds[f"rescore {split}"] = time.perf_counter() - started
        refs = list(read_lines(args.data / "raw" / f"{split}.fr", allow_empty=True))
        data[split] = (hypotheses(scored, source, len(refs)), refs)
    grid = {
        (a, b): bleu(reranked(data["valid"][0], len(data["valid"][1]), a, b), data["valid"][1])
        for a, b in itertools.product(CHANNEL, WORDS)
    }
    channel, words = max(grid, key=lambda k: (grid[k], -k[0], -abs(k[1])))
    no_channel = max((k for k in grid if k[0] == 0), key=lambda k: (grid[k], -abs(k[1])))
    test_hyps, test_refs = data["test"]
    systems = {
        "1-best of the search": (0.0, 0.0),
        f"reranked: length alone (b = {no_channel[1]:g})": no_channel,
        f"reranked: channel and length (a = {channel:g}, b = {words:g})": (channel, words),
    }
    rows = {
        name: {
            "weights": {"channel": a, "words": b},
            "valid_bleu": grid[(a, b)] if (a, b) in grid else None,
            "test_bleu": bleu(reranked(test_hyps, len(test_refs), a, b), test_refs),
        }
        for name, (a, b) in systems.items()
    }
    result = {
        "forward": str(args.forward),
        "backward": str(args.backward),
        "nbest": args.nbest,
        "systems": rows,
        "seconds": seconds,
        "date": time.strftime("%Y-%m-%d"),
    }
    write_text(work / "rerank.json", json.dumps(result, indent=1) + "\n")
    return result


def table(result: dict[str, Any]) -> str:
    lines = ["| system | valid BLEU | test BLEU |", "|---|---:|---:|"]
    for name, row in result["systems"].items():
        valid = "" if row["valid_bleu"] is None else f"{row['valid_bleu']:.2f}"
        lines.append(f"| {name} | {valid} | {row['test_bleu']:.2f} |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench-rerank", description=__doc__.split("\n\n")[0])
    p.add_argument("--forward", type=Path, required=True, help="the English→French checkpoint that translates")
    p.add_argument("--backward", type=Path, required=True, help="the French→English checkpoint (the channel)")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the data directory [data/bible]")
    p.add_argument("--nbest", type=int, default=8, help="the beam and the n-best list's size [8]")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default) [0]")
    return p


def main(argv: list[str] | None = None) -> None:
    print(table(run(parser().parse_args(argv))))
