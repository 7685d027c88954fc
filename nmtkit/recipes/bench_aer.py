"""Alignment error rate of a model's attention beside eflomal's, on the gold set in examples/bible_aer.

    bin/bench-aer --model runs/demo/best.pt [--model runs/x/best.pt ...] [--data data/bible] [--threads 2]

The attention's links come from `nmtkit align` (forced decoding of the gold
set's reference translations; each French word linked to the English word
it attends to most, BPE pieces merged to words, as Luong et al. 2015 did).
eflomal (Östling & Tiedemann 2016; from PyPI into $BENCH_DIR/eflomal/venv on
first use) is trained on the same training pairs as the model ($DATA/clean/
train.*, lowercased) with the gold verses appended, as is usual for an
unsupervised aligner; it is scored in each direction and symmetrized
(intersection, grow-diag-final-and). Prints a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .. import checkpoint
from ..align.aer import alignment_error
from ..align.links import pharaoh, read_pharaoh
from ..align.symmetrize import grow_diag_final_and
from ..core.files import read_lines
from ..models.config import RNNSearchConfig
from .bench_common import CHECKOUT, NMTKIT, bench_dir, call, fail, write_text

GOLD = CHECKOUT / "examples" / "bible_aer"
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
        subprocess.run([venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", EFLOMAL], check=True)
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


def run_eflomal(data: Path, work: Path) -> tuple[list[str], list[str], float, int]:
    """Forward and reverse links of the gold verses, the aligner's wall time, the pairs it aligned."""
    gold_en, gold_fr = lines(GOLD / "test.tok.en"), lines(GOLD / "test.tok.fr")
    corpus, pairs = {}, 0
    for lang, gold in (("en", gold_en), ("fr", gold_fr)):
        corpus[lang] = work / f"corpus.{lang}"
        pairs = lowercased_corpus(data / "clean" / f"train.{lang}", gold, corpus[lang])
    venv = eflomal_venv()
    start = time.perf_counter()
    align = [venv / "bin" / "eflomal-align", "--overwrite", "-s", corpus["en"], "-t", corpus["fr"]]
    call([*align, "-f", work / "forward", "-r", work / "reverse"], check=True)
    seconds = time.perf_counter() - start
    n = len(gold_en)
    return lines(work / "forward")[-n:], lines(work / "reverse")[-n:], seconds, pairs + n


def symmetrized(forward: list[str], reverse: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"intersection": [], "grow-diag-final-and": []}
    for k, (f, r) in enumerate(zip(forward, reverse), 1):
        fw, rv = set(read_pharaoh(f, f"forward {k}")), set(read_pharaoh(r, f"reverse {k}"))
        out["intersection"].append(pharaoh(sorted(fw & rv)))
        out["grow-diag-final-and"].append(pharaoh(sorted(grow_diag_final_and(fw, rv))))
    return out


def attention_links(model: Path, work: Path, threads: int) -> list[str]:
    out = work / "attention"
    pair = ["--source", GOLD / "test.tok.en", "--target", GOLD / "test.tok.fr"]
    cmd = [*NMTKIT, "align", "-m", model, "--tokenized", *pair, "-o", out, "--threads", str(threads)]
    call(cmd, check=True, cwd=CHECKOUT)
    return lines(out)


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
        required=True,
        help="nmtkit checkpoint with attention (RNNsearch or Luong); repeat to compare",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=CHECKOUT / "data" / "bible",
        help="the corpus the model was trained on ('clean/train.{en,fr}' inside)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-eflomal", action="store_true", help="score the models' attention only")
    ap.add_argument("--json", type=Path, default=bench_dir() / "aer.json")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    missing = [str(m) for m in args.model if not m.is_file()]
    if not args.no_eflomal:
        train = (args.data / "clean" / "train.en", args.data / "clean" / "train.fr")
        missing += [str(f) for f in train if not f.is_file()]
    if missing:
        fail("bench-aer", f"error: no {', '.join(missing)} (make demo trains the model and makes the data)")
    gold = lines(GOLD / "gold.links")
    work = bench_dir() / "aer"
    work.mkdir(parents=True, exist_ok=True)
    results = {
        f"nmtkit {reader(model)} ({model.parent.name}/{model.name})": alignment_error(
            attention_links(model, work, args.threads), gold
        )
        for model in args.model
    }
    seconds, pairs = None, 0
    if not args.no_eflomal:
        forward, reverse, seconds, pairs = run_eflomal(args.data, work)
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
