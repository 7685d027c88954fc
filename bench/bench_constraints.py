"""Lexically constrained search (``translate --constraints``) on the test verses: phrases of the
reference as constraints, Post & Vilar (2018)'s protocol, at several beams.

    bin/bench-constraints --model runs/demo/best.pt [--data data/bible] [--beams 5,10,20]
        [--phrases 0,1,2,3] [--seed 1] [--threads 2]

For each verse of $DATA/raw/test.fr (its verse markers removed, as ``score --clean
verse-markers`` does), N phrases of one to three words are drawn from its reference (seeded; a
word apart, whitespace words as written, so punctuation stays with its word, none of
punctuation alone), written as ``--constraints`` lines, and the test English translated with them at
each beam. Reported: sacreBLEU against the references, the share of outputs holding all of
their phrases (as runs of Moses tokens), and the translation's seconds. N = 0 is the
free search. Writes $BENCH_DIR/constraints/constraints.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import sacrebleu

from nmtkit.core.files import read_lines
from nmtkit.text.clean import verse_markers
from nmtkit.text.tokenize import MosesText
from nmtkit.translate.constraints import contains

from .bench_common import NMTKIT, bench_dir, call, fail, write_lines, write_text


def draw_phrases(reference: str, n: int, rng: random.Random) -> list[str]:
    """``n`` phrases of one to three words of ``reference``, apart from each other (fewer where
    the verse is too short), in the order they were drawn."""
    words = reference.split()
    free = [True] * len(words)
    out: list[str] = []
    for _ in range(n):
        spans = [
            (i, k)
            for k in (1, 2, 3)
            for i in range(len(words) - k + 1)
            if all(free[max(0, i - 1) : i + k + 1])  # a word apart from the others
            and all(any(ch.isalpha() for ch in w) for w in words[i : i + k])  # no bare punctuation
        ]
        if not spans:
            break
        i, k = rng.choice(spans)
        free[i : i + k] = [False] * k
        out.append(" ".join(words[i : i + k]))
    return out


def holds(moses: MosesText, output: str, phrases: list[str]) -> bool:
    """Whether ``output`` holds each phrase as a run of Moses tokens (the detokenizer writes "vide :"
    where the reference has "vide:")."""
    tokens = moses.tokenize(output)
    return all(contains(tokens, moses.tokenize(p)) for p in phrases)


def run(args: argparse.Namespace) -> dict[str, Any]:
    source, refs_path = args.data / "raw" / "test.en", args.data / "raw" / "test.fr"
    missing = [str(p) for p in (args.model, source, refs_path) if not p.is_file()]
    if missing:
        fail("bench-constraints", f"error: no {', '.join(missing)}")
    work = bench_dir() / "constraints"
    work.mkdir(parents=True, exist_ok=True)
    moses = MosesText("fr")
    refs = [" ".join(verse_markers(line).split()) for line in read_lines(refs_path, allow_empty=True)]
    rows: list[dict[str, Any]] = []
    for n in args.phrases:
        rng = random.Random(args.seed)
        drawn = [draw_phrases(ref, n, rng) for ref in refs]
        terms = work / f"test.{n}.constraints"
        write_lines(terms, ("\t".join(p) for p in drawn))
        for beam in args.beams:
            out = work / f"test.{n}.beam{beam}.fr"
            cmd = [*NMTKIT, "translate", "-m", args.model, source, "--beam", beam, "-o", out, "-q"]
            cmd += ["--threads", args.threads, *(["--constraints", terms] if n else [])]
            started = time.perf_counter()
            call(cmd, check=True)
            seconds = time.perf_counter() - started
            hyps = list(read_lines(out, allow_empty=True))
            held = sum(holds(moses, h, ps) for h, ps in zip(hyps, drawn, strict=True))
            rows.append(
                {
                    "phrases": n,
                    "beam": beam,
                    "bleu": float(sacrebleu.corpus_bleu(hyps, [refs]).score),
                    "held": held / len(hyps),
                    "drawn": sum(map(len, drawn)),
                    "seconds": seconds,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    result = {"model": str(args.model), "seed": args.seed, "rows": rows, "date": time.strftime("%Y-%m-%d")}
    write_text(work / "constraints.json", json.dumps(result, indent=1) + "\n")
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| phrases a verse | beam | test BLEU | outputs holding all | seconds |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        held = "" if not r["phrases"] else f"{100 * r['held']:.1f}%"
        lines.append(f"| {r['phrases']} | {r['beam']} | {r['bleu']:.2f} | {held} | {r['seconds']:.1f} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench-constraints", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the English→French checkpoint")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the data directory [data/bible]")
    p.add_argument("--beams", type=_ints, default=[5, 10, 20], help="the beams, comma-separated [5,10,20]")
    p.add_argument("--phrases", type=_ints, default=[0, 1, 2, 3], help="phrases a verse [0,1,2,3]")
    p.add_argument("--seed", type=int, default=1, help="the draw's seed [1]")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default) [0]")
    return p


def main(argv: list[str] | None = None) -> None:
    print(table(run(parser().parse_args(argv))))
