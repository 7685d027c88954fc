"""Alignment error rate of a model's attention beside eflomal's, on the gold set in examples/bible_aer.

    bin/bench-aer --model runs/demo/best.pt [--model runs/x/best.pt ...] [--data data/bible] [--threads 2]
    bin/bench-aer --pair runs/en-fr/best.pt runs/fr-en/best.pt [--link-thresholds 0.3,0.5]

The attention's links come from `nmtkit align` (forced decoding of the gold
set's reference translations; each French word linked to the English word
it attends to most, BPE pieces merged to words, as Luong et al. 2015 did).
A ``--pair`` of models of both directions gives their links combined (``nmtkit align -m FWD -m
BWD``): by grow-diag-final-and, and by the harmonic mean of their probabilities at each of
``--link-thresholds``.
eflomal (Östling & Tiedemann 2016; from PyPI into $BENCH_DIR/eflomal/venv on
first use) is trained on the same training pairs as the model ($DATA/clean/
train.*, lowercased) with the gold verses appended, as is usual for an
unsupervised aligner; it is scored in each direction and symmetrized
(intersection, grow-diag-final-and). Prints a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtkit import checkpoint
from nmtkit.align.aer import alignment_error
from nmtkit.align.links import pharaoh, read_pharaoh
from nmtkit.align.settings import LinkConfig
from nmtkit.align.symmetrize import grow_diag_final_and
from nmtkit.core.errors import UserError
from nmtkit.core.files import read_lines
from nmtkit.core.settings import RuntimeConfig
from nmtkit.models.config import RNNSearchConfig
from nmtkit.translate.forced import align_file

from .bench_common import CHECKOUT, bench_dir, call, fail, write_text

GOLD = CHECKOUT / "examples" / "bible_aer"
# the linked verses: the test set (reported), and the held-out set that thresholds are chosen on
VERSES = {"test": "gold.links", "dev": "dev.links"}
EFLOMAL = "eflomal==2.0.0"


def lines(path: Path) -> list[str]:
    return list(read_lines(path, allow_empty=True))


def eflomal_venv() -> Path:
    """eflomal's venv in the benchmarks' cache, made on first use (bin/bench-marian's too)."""
    venv = bench_dir() / "eflomal" / "venv"
    if not (venv / "bin" / "eflomal-align").exists():
        if not (shutil.which("cc") or shutil.which("gcc")):
            fail("bench-aer", "error: eflomal is built from source on install: it needs a C compiler (apt install gcc)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        # An sdist: pip builds its C sampler with Cython and the system's C compiler.
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", EFLOMAL]
        if subprocess.run(pip).returncode:  # no network, no compiler headers: pip said why above
            shutil.rmtree(venv)
            fail("bench-aer", f"error: could not install {EFLOMAL} from PyPI into {venv} (pip's lines above)")
    return venv


def lowercased_corpus(train: Path, gold: list[str], out: Path) -> int:
    """``out``: the training side lowercased, then the gold verses; the training lines counted."""
    count = 0
    with open(train, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            dst.write(line.lower())
            count += 1
        dst.write("".join(line.lower() + "\n" for line in gold))
    return count


def run_eflomal(data: Path, work: Path, verses: str = "test") -> tuple[list[str], list[str], float, int]:
    """Forward and reverse links of the gold verses, the aligner's wall time, the pairs it aligned.
    The links of one corpus are kept (eflomal's minutes, and its sampler's other links each run):
    the same training text and verses read them again, and say so."""
    gold_en, gold_fr = lines(GOLD / f"{verses}.tok.en"), lines(GOLD / f"{verses}.tok.fr")
    corpus, pairs = {}, 0
    for lang, gold in (("en", gold_en), ("fr", gold_fr)):
        corpus[lang] = work / f"corpus.{lang}"
        pairs = lowercased_corpus(data / "clean" / f"train.{lang}", gold, corpus[lang])
    key = hashlib.sha256(EFLOMAL.encode())
    for lang in ("en", "fr"):
        key.update(corpus[lang].read_bytes() + b"\0")
    kept = work / f"eflomal-{key.hexdigest()[:16]}"
    n = len(gold_en)
    if (kept / "made.json").is_file():
        made = json.loads((kept / "made.json").read_text(encoding="utf-8"))
        print(
            f"eflomal's links of these pairs from {kept}, aligned {made['when']} (remove it to align again)",
            file=sys.stderr,
        )
        return lines(kept / "forward")[-n:], lines(kept / "reverse")[-n:], made["seconds"], pairs + n
    venv = eflomal_venv()
    start = time.perf_counter()
    align = [venv / "bin" / "eflomal-align", "--overwrite", "-s", corpus["en"], "-t", corpus["fr"]]
    call([*align, "-f", work / "forward", "-r", work / "reverse"], check=True)
    seconds = time.perf_counter() - start
    kept.mkdir(exist_ok=True)
    for name in ("forward", "reverse"):
        (work / name).replace(kept / name)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_text(kept / "made.json", json.dumps({"seconds": seconds, "when": when}) + "\n")
    return lines(kept / "forward")[-n:], lines(kept / "reverse")[-n:], seconds, pairs + n


def symmetrized(forward: list[str], reverse: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"intersection": [], "grow-diag-final-and": []}
    for k, (f, r) in enumerate(zip(forward, reverse), 1):
        fw, rv = set(read_pharaoh(f, f"forward {k}")), set(read_pharaoh(r, f"reverse {k}"))
        out["intersection"].append(pharaoh(sorted(fw & rv)))
        out["grow-diag-final-and"].append(pharaoh(sorted(grow_diag_final_and(fw, rv))))
    return out


def attention_links(
    models: list[Path], work: Path, threads: int, links: LinkConfig = LinkConfig(), verses: str = "test"
) -> list[str]:
    """``nmtkit align``'s links of the gold verses, run in this process: a command per combination of
    a pair would import torch again each time."""
    out = work / "attention"
    # a French→English model alone aligns the verses from French; its links are turned back
    backward = checkpoint.load(models[0]).text.langs["src"] == "fr"
    sides = [GOLD / f"{verses}.tok.{lang}" for lang in (("fr", "en") if backward else ("en", "fr"))]
    runtime = RuntimeConfig(threads=threads)
    align_file([str(m) for m in models], str(sides[0]), str(sides[1]), str(out), True, runtime, links)
    if not backward:
        return lines(out)
    return [
        pharaoh(sorted((i, j) for j, i in read_pharaoh(line, f"{out}, line {k}")))
        for k, line in enumerate(lines(out), 1)
    ]


def combinations(thresholds: list[float], nulls: Sequence[float] = ()) -> dict[str, LinkConfig]:
    """The ways of combining a pair's links that bench-aer scores: name, then align's settings."""
    out = {"grow-diag-final-and": LinkConfig(combine="grow-diag-final-and")}
    for t in nulls:
        out[f"grow-diag-final-and, NULL ≥ {t:g} unlinked"] = LinkConfig(combine="grow-diag-final-and", null_threshold=t)
    for t in thresholds:
        out[f"soft, harmonic mean ≥ {t:g}"] = LinkConfig(combine="soft", threshold=t)
    for t in thresholds:
        out[f"soft, geometric mean ≥ {t:g}"] = LinkConfig(combine="geometric", threshold=t)
    return out


def reader(model: Path) -> str:
    """What nmtkit align reads the links from: the model's alignment head, or its attention."""
    config = checkpoint.load(model).model
    return "alignment head" if isinstance(config, RNNSearchConfig) and config.alignment_head else "attention"


def table(results: dict[str, dict[str, Any]]) -> str:
    rows = ["| alignment | links | precision | recall | AER |", "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        rows.append(f"| {name} | {r['links']:,} | {r['precision']:.1f} | {r['recall']:.1f} | **{r['aer']:.1f}** |")
    return "\n".join(rows)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model",
        type=Path,
        action="append",
        default=[],
        help="nmtkit checkpoint with attention (RNNsearch or Luong); repeat to compare",
    )
    ap.add_argument(
        "--pair",
        type=Path,
        nargs=2,
        action="append",
        default=[],
        metavar=("FORWARD", "BACKWARD"),
        help="checkpoints of both directions (English→French, French→English), their links combined",
    )
    ap.add_argument(
        "--link-thresholds",
        default="0.3,0.5",
        help="the harmonic means a soft link of a --pair needs, comma-separated: a row each",
    )
    ap.add_argument(
        "--null-thresholds",
        default="",
        help="the NULL probabilities at which a --pair's grow-diag-final-and leaves a word unlinked, "
        "comma-separated: a row each (none: a word is unlinked when NULL is its likeliest)",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=CHECKOUT / "data" / "bible",
        help="the corpus the model was trained on ('clean/train.{en,fr}' inside)",
    )
    ap.add_argument(
        "--verses",
        choices=VERSES,
        default="test",
        help="the 100 linked test verses (the figures to report), or the 90 held-out ones (to choose thresholds on)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-eflomal", action="store_true", help="score the models' attention only")
    ap.add_argument("--json", type=Path, default=bench_dir() / "aer.json")
    return ap


def numbers(text: str, flag: str) -> list[float]:
    """``0.3,0.5`` → [0.3, 0.5], each in (0, 1]; else one line and exit 2."""
    try:
        found = [float(t) for t in text.split(",") if t]
    except ValueError:
        found = [-1.0]
    if any(not 0 < t <= 1 for t in found):
        fail("bench-aer", f"error: {flag} {text!r}: numbers in (0, 1] separated by commas")
    return found


def main(argv: list[str] | None = None) -> None:
    try:
        score(parser().parse_args(argv))
    except UserError as err:  # align's own refusals: a model without attention, or of another pair
        fail("bench-aer", f"error: {err}")


def score(args: argparse.Namespace) -> None:
    if not args.model and not args.pair:
        fail("bench-aer", "error: give a --model or a --pair of models to score")
    thresholds, nulls = (
        numbers(args.link_thresholds, "--link-thresholds"),
        numbers(args.null_thresholds, "--null-thresholds"),
    )
    missing = [str(m) for m in [*args.model, *(m for p in args.pair for m in p)] if not m.is_file()]
    if not args.no_eflomal:
        train = (args.data / "clean" / "train.en", args.data / "clean" / "train.fr")
        missing += [str(f) for f in train if not f.is_file()]
    if missing:
        fail("bench-aer", f"error: no {', '.join(missing)} (make demo trains the model and makes the data)")
    gold = lines(GOLD / VERSES[args.verses])
    work = bench_dir() / "aer"
    work.mkdir(parents=True, exist_ok=True)
    results = {
        f"nmtkit {reader(model)} ({model.parent.name}/{model.name})": alignment_error(
            attention_links([model], work, args.threads, verses=args.verses), gold
        )
        for model in args.model
    }
    for forward, backward in args.pair:
        for name, combine in combinations(thresholds, nulls).items():
            links = attention_links([forward, backward], work, args.threads, combine, args.verses)
            results[f"nmtkit, both directions, {name} ({forward.parent.name}, {backward.parent.name})"] = (
                alignment_error(links, gold)
            )
    seconds, pairs = None, 0
    if not args.no_eflomal:
        forward, reverse, seconds, pairs = run_eflomal(args.data, work, args.verses)
        results["eflomal, English→French"] = alignment_error(forward, gold)
        results["eflomal, French→English"] = alignment_error(reverse, gold)
        for name, links in symmetrized(forward, reverse).items():
            results[f"eflomal, {name}"] = alignment_error(links, gold)
    first = next(iter(results.values()))
    print(
        f"{first['sentences']} verses, {first['sure']:,} sure and {first['possible']:,} possible links "
        f"(possible includes sure)"
        + (f"; eflomal aligned {pairs:,} pairs in {seconds:.0f} s" if seconds is not None else "")
        + "\n"
    )
    print(table(results))
    write_text(args.json, json.dumps({"results": results, "eflomal_seconds": seconds}, indent=1) + "\n")
