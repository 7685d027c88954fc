"""A glossary of names on the test verses (``translate --glossary``): what a terminology list
mined from the training pairs does to the names of the outputs and to BLEU.

    bin/bench-glossary --model runs/demo/best.pt [--data data/bible] [--beams 5,10]
        [--min-count 3] [--min-dice 0.7] [--threads 2]

The glossary: each capitalized English word that is not a verse's first (a name, mostly) seen
in at least ``--min-count`` training pairs, with the capitalized French word (not a verse's
first either) that co-occurs with it most by Dice's coefficient over the pairs (to a tenth;
ties, as the names of a list have, go to the closer spelling), where that is at least
``--min-dice`` and the two spellings are alike (:data:`MIN_SIMILARITY`). The test English is
then translated at each beam with and without it. Reported: sacreBLEU against the references
(verse markers removed), the terms found in the test sources (as whole words), the share of
those whose translation the output holds (as a whole word) and the share the reference holds,
and the seconds. Writes
$BENCH_DIR/glossary/names.tsv, glossary.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import sacrebleu

from nmtkit.core.files import read_lines
from nmtkit.text.clean import verse_markers

from .bench_common import NMTKIT, bench_dir, call, fail, write_lines, write_text

_WORD = re.compile(r"\w+(?:['’-]\w+)*")


def names(line: str) -> set[str]:
    """The capitalized words of a line but its first."""
    return {w for w in _WORD.findall(line)[1:] if w[0].isupper()}


def mine(english: list[str], french: list[str], min_count: int, min_dice: float) -> list[tuple[str, str]]:
    """(English name, French name) pairs of the training verses, as the module says; sorted."""
    ce: Counter[str] = Counter()
    cf: Counter[str] = Counter()
    both: Counter[tuple[str, str]] = Counter()
    for e_line, f_line in zip(english, french, strict=True):
        e, f = names(e_line), names(f_line)
        ce.update(e)
        cf.update(f)
        both.update((a, b) for a in e for b in f)
    best: dict[str, tuple[float, float, str]] = {}
    for (a, b), n in both.items():
        dice, alike = 2 * n / (ce[a] + cf[b]), similarity(a, b)
        if ce[a] >= min_count and dice >= min_dice and alike >= MIN_SIMILARITY:
            best[a] = max(best.get(a, (0.0, 0.0, "")), (round(dice, 1), alike, b))
    return sorted((a, b) for a, (_, _, b) in best.items())


# Names of a list co-occur as often as one another (Dice ties); a name and its translation
# share letters ("Jordan", "Jourdain"): at least this much of SequenceMatcher's ratio.
MIN_SIMILARITY = 0.5


def similarity(a: str, b: str) -> float:
    """SequenceMatcher's ratio of two words, lowercased and without accents."""

    def plain(w: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFD", w.lower()) if not unicodedata.combining(c))

    return difflib.SequenceMatcher(None, plain(a), plain(b)).ratio()


def holds(text: str, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text) is not None


def found(sources: list[str], glossary: list[tuple[str, str]]) -> list[list[str]]:
    """Each source's terms' translations, as translate --glossary finds them (whole words)."""
    return [sorted({b for a, b in glossary if holds(s, a)}) for s in sources]


def run(args: argparse.Namespace) -> dict[str, Any]:
    raw = args.data / "raw"
    paths = [raw / f"{split}.{lang}" for split in ("train", "test") for lang in ("en", "fr")]
    missing = [str(p) for p in (args.model, *paths) if not p.is_file()]
    if missing:
        fail("bench-glossary", f"error: no {', '.join(missing)}")
    work = bench_dir() / "glossary"
    work.mkdir(parents=True, exist_ok=True)
    english, french = ([verse_markers(line) for line in read_lines(p, allow_empty=True)] for p in paths[:2])
    glossary = mine(english, french, args.min_count, args.min_dice)
    if not glossary:
        fail("bench-glossary", "error: no name passes --min-count and --min-dice")
    names_path = work / "names.tsv"
    write_lines(names_path, (f"{a}\t{b}" for a, b in glossary))
    sources = list(read_lines(paths[2], allow_empty=True))
    refs = [" ".join(verse_markers(line).split()) for line in read_lines(paths[3], allow_empty=True)]
    terms = found(sources, glossary)
    count = sum(map(len, terms))
    rows: list[dict[str, Any]] = []
    for beam in args.beams:
        for given in (False, True):
            out = work / f"test.beam{beam}.{'glossary' if given else 'free'}.fr"
            cmd = [*NMTKIT, "translate", "-m", args.model, paths[2], "--beam", beam, "-o", out, "-q"]
            cmd += ["--threads", args.threads, *(["--glossary", names_path] if given else [])]
            started = time.perf_counter()
            call(cmd, check=True)
            seconds = time.perf_counter() - started
            hyps = list(read_lines(out, allow_empty=True))
            held = sum(holds(h, t) for h, ts in zip(hyps, terms, strict=True) for t in ts)
            rows.append(
                {
                    "beam": beam,
                    "glossary": given,
                    "bleu": float(sacrebleu.corpus_bleu(hyps, [refs]).score),
                    "held": held / max(count, 1),
                    "seconds": seconds,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    in_refs = sum(holds(r, t) for r, ts in zip(refs, terms, strict=True) for t in ts)
    result = {
        "model": str(args.model),
        "entries": len(glossary),
        "terms": count,
        "verses_with_terms": sum(map(bool, terms)),
        "held_by_references": in_refs / max(count, 1),
        "rows": rows,
        "date": time.strftime("%Y-%m-%d"),
    }
    write_text(work / "glossary.json", json.dumps(result, indent=1) + "\n")
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['entries']} names; {result['terms']} found in {result['verses_with_terms']} test verses; "
        f"the references hold {100 * result['held_by_references']:.1f}% of their translations",
        "",
        "| beam | glossary | test BLEU | names' translations held | seconds |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in result["rows"]:
        given = "yes" if r["glossary"] else "no"
        lines.append(f"| {r['beam']} | {given} | {r['bleu']:.2f} | {100 * r['held']:.1f}% | {r['seconds']:.1f} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench-glossary", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the English→French checkpoint")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the data directory [data/bible]")
    p.add_argument("--beams", type=_ints, default=[5, 10], help="the beams, comma-separated [5,10]")
    p.add_argument("--min-count", type=int, default=3, help="training pairs a name is seen in, at least [3]")
    p.add_argument("--min-dice", type=float, default=0.7, help="Dice's coefficient of a pair, at least [0.7]")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default) [0]")
    return p


def main(argv: list[str] | None = None) -> None:
    print(table(run(parser().parse_args(argv))))
