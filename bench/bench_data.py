"""Data-pipeline benchmark on the Bible corpus (run by `make bench` after `make data`).

Prints preprocess throughput on the raw train set with 1 and 2 workers, and
the peak memory of binarizing the clean train set and a 10x concatenation
of it (each run in its own process; memory must not grow with the corpus).
Then data selection (nmtkit select): scoring throughput in words/s
(both sides, four 4-gram LMs) and peak memory on 10M- and 20M-word inputs, the kept words
counted in the selection's tokens and, at 20M, in Moses tokens (--count-words moses, the default).

    bin/bench-data data/bible data/bible/vocab-bpe8000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nmtkit.data.manifest import read_manifest

from .bench_common import NMTKIT

PAIR = ["-s", "en", "-t", "fr"]
# Wall seconds, peak RSS (KB) of the largest child and status of the command in argv, printed by a
# Python of its own (so that the peak is the command's, not this script's)
PROBE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
)


def run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB) of the largest process the command ran."""
    out = subprocess.run([sys.executable, "-c", PROBE, *cmd], capture_output=True, text=True, check=True)
    wall, rss, rc = out.stdout.split()
    if rc != "0":
        sys.exit(f"bench-data: {' '.join(cmd)} failed with status {rc}")
    return float(wall), int(rss) // 1024


def preprocess_bench(raw: Path, tmp: str) -> None:
    with open(raw / "train.en", encoding="utf-8") as fh:
        lines = sum(1 for _ in fh)
    print(f"preprocess (text mode) of {lines:,} raw train pairs = {2 * lines:,} lines:")
    for jobs in (1, 2):
        wall, rss = run(
            [*NMTKIT, "preprocess", *PAIR, "--train", str(raw / "train"), "-d", f"{tmp}/j{jobs}", "-j", str(jobs)]
        )
        print(
            f"  -j {jobs}: {wall:6.1f} s  {lines / wall:8,.0f} pairs/s  {2 * lines / wall:8,.0f} lines/s"
            f"  main-process peak {rss} MB"
        )


def binarize_bench(clean: Path, vocab: Path, tmp: str) -> None:
    big = Path(tmp) / "x10"
    big.mkdir()
    shutil.copy(clean / "preprocess.json", big)
    for lang in ("en", "fr"):
        with open(big / f"train.{lang}", "wb") as out:
            for _ in range(10):
                out.write((clean / f"train.{lang}").read_bytes())
    print("binarize (-j 1) peak memory:")
    for label, prefix in (("1x", clean / "train"), ("10x", big / "train")):
        dest = Path(tmp) / f"bin-{label}"
        wall, rss = run(
            [*NMTKIT, "preprocess", *PAIR, "--train", str(prefix), "--vocab", str(vocab), "-d", str(dest), "-j", "1"]
        )
        n = read_manifest(dest).splits["train"].sentences
        print(f"  {label:>3}: {n:>10,} pairs  {wall:6.1f} s  peak RSS {rss} MB")


def main(data: Path, vocab: Path) -> None:
    raw, clean = data / "raw", data / "clean"
    with tempfile.TemporaryDirectory() as tmp:
        preprocess_bench(raw, tmp)
        binarize_bench(clean, vocab, tmp)
    select_bench(raw)


def tiled(src: Path, dest: Path, words: int) -> int:
    """Write ``dest.{en,fr}``: the pairs of ``src`` repeated until ``words`` words (both sides)."""
    with open(f"{src}.en", "rb") as en_in, open(f"{src}.fr", "rb") as fr_in:
        pairs = list(zip(en_in, fr_in))
    n = total = 0
    with open(f"{dest}.en", "wb") as out_en, open(f"{dest}.fr", "wb") as out_fr:
        while total < words:
            en, fr = pairs[n % len(pairs)]
            out_en.write(en)
            out_fr.write(fr)
            total += len(en.split()) + len(fr.split())
            n += 1
    return n


def select_bench(raw: Path) -> None:
    # In-domain: the first 30,154 pairs (one Bible pairing, ~1.6M words); general: the train set tiled.
    print("data selection, 4-gram LMs, in-domain = 30,154 Bible pairs, general = the train set tiled:")
    with tempfile.TemporaryDirectory() as tmp:
        for lang in ("en", "fr"):
            with open(raw / f"train.{lang}", "rb") as src, open(f"{tmp}/ind.{lang}", "wb") as ind:
                for _, line in zip(range(30154), src):
                    ind.write(line)
        for millions, jobs, count in (
            (10, 1, "selection"),
            (10, 2, "selection"),
            (20, 2, "selection"),
            (20, 2, "moses"),
        ):
            pairs = tiled(raw / "train", Path(tmp) / "gen", millions * 10**6)
            out = Path(tmp) / f"sel-{millions}-{jobs}-{count}"
            corpora = ["--in-domain", f"{tmp}/ind", "--general", f"{tmp}/gen"]
            keep = ["--keep-words", str(millions * 10**6 // 5), "--count-words", count]
            wall, rss = run([*NMTKIT, "select", *PAIR, *corpora, *keep, "-d", str(out), "-j", str(jobs)])
            r = json.loads((out / "select.json").read_text())
            words = r["scored_words"]
            print(
                f"  {millions}M words ({pairs:,} pairs) -j {jobs} --count-words {count}: scoring "
                f"{r['score_words_per_s']:,} words/s, whole run {wall:.1f} s ({words / wall:,.0f} words/s), "
                f"peak RSS {rss} MB"
            )


def from_argv(argv: list[str]) -> None:
    """``bin/bench-data [DATA [VOCAB]]``: data/bible and DATA/vocab-bpe8000 where not given."""
    ap = argparse.ArgumentParser(prog="bench-data", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=Path("data/bible"), help="holds raw/ and clean/ (make data)")
    ap.add_argument("vocab", nargs="?", type=Path, default=None, help="build-vocab's directory (DATA/vocab-bpe8000)")
    args = ap.parse_args(argv)
    vocab = args.vocab or args.data / "vocab-bpe8000"
    for needed in (args.data / "raw" / "train.en", vocab):
        if not needed.exists():
            ap.error(f"{needed} not found (make data builds it)")
    main(args.data, vocab)
