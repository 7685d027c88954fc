"""Lexically constrained search (``translate --constraints``) on the test verses: phrases of the
reference as constraints, Post & Vilar (2018)'s protocol, at several beams.

    bin/bench-constraints --model runs/demo/best.pt [--data data/bible] [--beams 5,10,20]
        [--phrases 0,1,2,3] [--seed 1] [--threads 2] [--ordered] [--no-plain-first]

For each verse of $DATA/raw/test.fr (its verse markers removed, as ``score --clean
verse-markers`` does), N phrases of one to three words are drawn from its reference (seeded;
words: its Moses tokens that hold a letter; a token apart), written as ``--constraints``
lines, and the test English translated with them at each beam. Reported: sacreBLEU against
the references, the share of outputs holding all of their phrases (as runs of Moses tokens),
the share of the free search's outputs at that beam that hold them already, and the
translation's seconds. N = 0 is the free search. ``--ordered``: the phrases in the reference's
order, translated with ``--ordered-constraints`` and held in that order. ``--no-plain-first``:
translated so (the constrained search alone). Writes
$BENCH_DIR/constraints/constraints.json (ordered: ordered.json) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path
from typing import Any

import sacrebleu

from nmtkit.core.files import read_lines
from nmtkit.text.clean import verse_markers
from nmtkit.text.tokenize import MosesText
from nmtkit.translate.constraints import contains_in_order

from .bench_common import NMTKIT, bench_dir, call, fail, write_lines, write_text


def draw_phrases(moses: MosesText, reference: str, n: int, rng: random.Random, ordered: bool = False) -> list[str]:
    """``n`` phrases of one to three words of ``reference``, words being its Moses tokens that
    hold a letter (no punctuation: a verse's final stop is no term), a token apart from each
    other (fewer where the verse is too short), in the order they were drawn (``ordered``: in
    the reference's), detokenized."""
    tokens = moses.tokenize(reference)
    word = [any(ch.isalpha() for ch in t) for t in tokens]
    taken = [False] * len(tokens)
    out: list[tuple[int, str]] = []
    for _ in range(n):
        spans = [
            (i, k)
            for k in (1, 2, 3)
            for i in range(len(tokens) - k + 1)
            if all(word[i : i + k]) and not any(taken[max(0, i - 1) : i + k + 1])
        ]
        if not spans:
            break
        i, k = rng.choice(spans)
        taken[i : i + k] = [True] * k
        out.append((i, moses.detokenize(tokens[i : i + k])))
    return [p for _, p in (sorted(out) if ordered else out)]


def holds(moses: MosesText, output: str, phrases: list[str], ordered: bool = False) -> bool:
    """Whether ``output`` holds each phrase as a run of Moses tokens (the detokenizer writes "vide :"
    where the reference has "vide:"), or as text between word edges (Moses keeps a stop mid-line
    with its word: "plaisir. produit" is one token "plaisir."); ``ordered``: in their order, each
    after the one before, either way."""
    tokens = moses.tokenize(output)
    if ordered:
        return contains_in_order(tokens, [moses.tokenize(p) for p in phrases]) or _text_in_order(output, phrases)
    return all(
        _runs(tokens, moses.tokenize(p)) >= phrases.count(p) or len(_word_edges(p).findall(output)) >= phrases.count(p)
        for p in phrases
    )


def _runs(tokens: list[str], phrase: list[str]) -> int:
    """How many times ``phrase`` occurs in ``tokens`` (a phrase given twice must occur twice)."""
    n = len(phrase)
    return sum(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


def _word_edges(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")


def _text_in_order(output: str, phrases: list[str]) -> bool:
    at = 0
    for p in phrases:
        found = _word_edges(p).search(output, at)
        if found is None:
            return False
        at = found.end()
    return True


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
    free: dict[int, list[str]] = {}  # the free search's outputs, by beam
    order = ["--ordered-constraints"] if args.ordered else []
    order += [] if args.plain_first else ["--no-plain-first"]
    name = ("ordered" if args.ordered else "constraints") + ("" if args.plain_first else "-alone")
    for n in sorted(args.phrases):
        rng = random.Random(args.seed)
        drawn = [draw_phrases(moses, ref, n, rng, args.ordered) for ref in refs]
        terms = work / f"test.{n}.{name}"
        write_lines(terms, ("\t".join(p) for p in drawn))
        for beam in args.beams:
            out = work / f"test.{n}.beam{beam}.{name}.fr"
            cmd = [*NMTKIT, "translate", "-m", args.model, source, "--beam", beam, "-o", out, "-q"]
            cmd += ["--threads", args.threads, *(["--constraints", terms, *order] if n else [])]
            started = time.perf_counter()
            call(cmd, check=True)
            seconds = time.perf_counter() - started
            hyps = list(read_lines(out, allow_empty=True))
            held = sum(holds(moses, h, ps, args.ordered) for h, ps in zip(hyps, drawn, strict=True))
            if not n:
                free[beam] = hyps
            before = (
                None if beam not in free else sum(holds(moses, h, ps, args.ordered) for h, ps in zip(free[beam], drawn))
            )
            rows.append(
                {
                    "phrases": n,
                    "beam": beam,
                    "bleu": float(sacrebleu.corpus_bleu(hyps, [refs]).score),
                    "held": held / len(hyps),
                    "held_free": None if before is None else before / len(hyps),  # without --constraints
                    "drawn": sum(map(len, drawn)),
                    "seconds": seconds,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    result = {"model": str(args.model), "seed": args.seed, "ordered": args.ordered, "rows": rows}
    result["plain_first"] = args.plain_first
    result["date"] = time.strftime("%Y-%m-%d")
    write_text(work / f"{name}.json", json.dumps(result, indent=1) + "\n")
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| phrases a verse | beam | test BLEU | outputs holding all | free outputs holding all | seconds |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        held, before = ("", "") if not r["phrases"] else (f"{100 * r['held']:.1f}%", _share(r["held_free"]))
        lines.append(f"| {r['phrases']} | {r['beam']} | {r['bleu']:.2f} | {held} | {before} | {r['seconds']:.1f} |")
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


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
    p.add_argument("--ordered", action="store_true", help="phrases in the reference's order, held in it")
    p.add_argument("--no-plain-first", dest="plain_first", action="store_false", help="the constrained search alone")
    return p


def main(argv: list[str] | None = None) -> None:
    print(table(run(parser().parse_args(argv))))
