"""N-best reranking with nmtkit rescore and rerank: the search's 1-best beside the best of its n-best
list reranked by the model's score, a model of the other direction's (the noisy channel, ``rescore
--backward``), a right-to-left model's (``train --right-to-left``) and the length, the weights tuned
on the valid verses.

    bin/bench-rerank --forward runs/en-fr/best.pt --backward runs/fr-en/best.pt
        [--right-to-left runs/en-fr-r2l/best.pt] [--data data/bible] [--nbest 8] [--threads 2]

Each split's raw English ($DATA/raw/{valid,test}.en) is translated with ``--beam N --nbest N``;
``rescore --backward`` adds the French→English model's log-probability of the English given each
hypothesis (feature ``channel``), and ``rescore`` with a right-to-left English→French model its
log-probability of the hypothesis (feature ``r2l``). For each set of features, ``rerank --tune``
finds the weights (the model's own ``F0`` held at 1, each feature's and a bonus per word on its grid)
that give the valid verses' best sacreBLEU, and ``rerank --weights`` reranks both splits with them.
Writes $BENCH_DIR/rerank/rerank.json and prints a Markdown table on stdout.
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

from .bench_common import NMTKIT, bench_dir, call, fail, write_text

SPLITS = ("valid", "test")
# the features each model gives, in the order rescore adds them: name, what they are in the table
FEATURES = {"channel": "channel", "r2l": "right-to-left model"}


def bleu(hyps: list[str], refs: list[str]) -> float:
    return float(sacrebleu.corpus_bleu(hyps, [refs]).score)


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
    lists: dict[str, Path] = {}
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
        lists[split] = nbest
    refs = {split: list(read_lines(refs_path(args, split), allow_empty=True)) for split in SPLITS}

    def row(weights: str) -> dict[str, Any]:
        out: dict[str, Any] = {"weights": weights}
        for split in SPLITS:
            hyps = work / f"{split}.reranked"
            call([*NMTKIT, "rerank", lists[split], "--weights", weights, "-o", hyps, "-q"], check=True)
            out[f"{split}_bleu"] = bleu(list(read_lines(hyps, allow_empty=True)), refs[split])
        return out

    rows = {"1-best of the search": row("F0= 1")}
    for k in range(len(models) + 1):
        for used in itertools.combinations(models, k):
            start = " ".join(["F0= 1", *(f"{name}= 0" for name in used), "words= 0"])
            tuned, started = work / "weights", time.perf_counter()
            call([*NMTKIT, "rerank", lists["valid"], "--tune", refs_path(args, "valid"), "--weights", start,
                  "-o", tuned, "-q"], check=True)  # fmt: skip
            seconds[f"tune ({', '.join(used) or 'words'})"] = time.perf_counter() - started
            weights = tuned.read_text(encoding="utf-8").strip()
            named = ", ".join([*(FEATURES[name] for name in used), "length"]).replace(", length", " and length")
            rows[f"reranked: {named if used else 'length alone'} ({weights.removeprefix('F0= 1 ')})"] = row(weights)
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


def refs_path(args: argparse.Namespace, split: str) -> Path:
    return Path(args.data) / "raw" / f"{split}.fr"


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
