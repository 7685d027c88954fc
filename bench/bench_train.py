"""Training speed and peak memory of nmtkit beside Joey NMT and fairseq, measured in one run.

    bin/bench-train [--updates 60] [--threads 2] [--peers joeynmt,fairseq] [--peers-dir bench/peers]

The peers come from bench/peers (installed under $BENCH_DIR on first use, which needs
PyPI): the same data ($BENCH_DIR/data: King James → Segond, the book
split of make data, Moses tokens), embeddings 256, one bidirectional encoder layer of 256
per direction, a decoder of 256, batches of 80 sentences, length limit 50,
Adam 1e-3, the same number of updates and threads. nmtkit binarizes the same
token files with its own 30,000-word vocabularies and trains its `bench`
preset (RNNsearch, paper GRU, maxout readout), first in float32 like the
peers, then with bf16 autocast where the CPU supports it.

With --demo-bin (make bench gives the demo's data-bin), it also times the demo's own update on
the demo's data, 1.0's recipe (--preset small --optimizer adam --lr 5e-3) against --schedule cpu
(tied embeddings, label smoothing, the hand-written recurrences), in the same run.

Speed is target tokens per second (</s> included, as the peers count it),
the mean of the logged windows after the first 20 updates (the peers'
scripts skip the same warm-up); memory is the peak resident set of the whole
training process from /usr/bin/time -v. Results: a table on stdout and
$BENCH_DIR/nmtkit/bench.json.

This module also holds the peers' settings as nmtkit's flags (:data:`PEER_RECIPE`), which
``bin/bench-translate`` trains its model with.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from .bench_common import (
    CHECKOUT,
    NMTKIT,
    bench_dir,
    echoed,
    load_before,
    mean,
    native_bf16,
    peak_rss_mb,
    threads_env,
    windows_after,
    write_text,
)
from .demo import CPU_RECIPE, STUDY_RECIPE

# the peers' model and batches as nmtkit's flags (the `bench` preset: RNNsearch at their sizes)
PEER_RECIPE = ["--preset", "bench", "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "80", "--max-len", "50"]
DEMO_RECIPES = {"demo 1.0 recipe": list(STUDY_RECIPE), "demo --schedule cpu": list(CPU_RECIPE)}
PEER_SCRIPTS = {"joeynmt": "run_joeynmt.sh", "fairseq": "run_fairseq.sh"}
PEER_NAMES = {"joeynmt": "Joey NMT 2.3.0", "fairseq": "fairseq 0.12.2 (LSTM)"}
WARMUP = 20  # updates left out of the speed, as the peers' scripts do


def timing_flags(threads: int, updates: int) -> list[object]:
    """A timed run's flags: ``updates`` updates logged every 10, no validation, seed 42."""
    flags: list[object] = ["--threads", threads, "--max-updates", updates, "--log-every", "10"]
    return flags + ["--valid-every", 10**9, "--no-valid-bleu", "--seed", "42"]


def ensure_peers(peers_dir: Path, peers: list[str]) -> None:
    bench = bench_dir()
    if not (bench / "data" / "train.fr").exists():
        if not (bench / "prep" / "bin" / "python").exists():
            echoed([sys.executable, "-m", "venv", bench / "prep"], check=True)
            echoed([bench / "prep" / "bin" / "pip", "install", "-q", "sacremoses", "sacrebleu"], check=True)
        echoed([bench / "prep" / "bin" / "python", peers_dir / "prep_data.py"], check=True)
    for peer in peers:
        if not (bench / peer / "venv" / "bin" / "python").exists():
            echoed([peers_dir / "install.sh", peer], check=True)


def nmtkit_data(work: Path) -> Path:
    """The peers' token files binarized by nmtkit with its own 30,000-word vocabularies."""
    data, bin_dir = bench_dir() / "data", work / "data-bin"
    if (bin_dir / "manifest.json").exists():
        return bin_dir
    splits = ["--train", data / "train", "--valid", data / "valid", "--test", data / "test"]
    as_is = ["--clean", "none", "--no-normalize-punct", "--max-len", "0", "--max-ratio", "0", "--no-dedup"]
    echoed([*NMTKIT, "preprocess", "-s", "en", "-t", "fr", *splits, "-d", work / "clean", *as_is], check=True)
    vocab = ["--train", work / "clean" / "train", "-d", work / "vocab", "--size", "30000"]
    echoed([*NMTKIT, "build-vocab", "-s", "en", "-t", "fr", *vocab], check=True)
    clean = [a if not isinstance(a, Path) else work / "clean" / a.name for a in splits]
    pair = ["-s", "en", "-t", "fr", *clean]
    echoed([*NMTKIT, "preprocess", *pair, "--vocab", work / "vocab", "-d", bin_dir, "--quiet"], check=True)
    return bin_dir


def bench_nmtkit(bin_dir: Path, work: Path, updates: int, threads: int, bf16: bool) -> dict[str, Any]:
    save = work / ("run-bf16" if bf16 else "run-fp32")
    cmd = ["/usr/bin/time", "-v", *NMTKIT, "train", bin_dir, "--save-dir", save, "--reset", *PEER_RECIPE]
    cmd += timing_flags(threads, updates) + (["--bf16"] if bf16 else [])
    done = echoed(cmd, capture_output=True, text=True, env=threads_env(threads), check=True)
    speeds = [w["tgt_tokens_per_s"] for w in windows_after(save, WARMUP)]
    return {
        "toolkit": "nmtkit" + (" bf16" if bf16 else ""),
        "tok_per_s": mean(speeds),
        "peak_rss_mb": peak_rss_mb(done.stderr),
        "windows": len(speeds),
    }


def bench_demo(bin_dir: Path, work: Path, updates: int, threads: int, name: str) -> dict[str, Any]:
    """The demo's update on its own data: ``name`` is a row of DEMO_RECIPES."""
    save = work / ("demo-" + name.split()[-1])
    cmd = [*NMTKIT, "train", bin_dir, "--save-dir", save, "--reset", *DEMO_RECIPES[name]]
    echoed(cmd + timing_flags(threads, updates), capture_output=True, text=True, env=threads_env(threads), check=True)
    windows = windows_after(save, WARMUP)
    ups = [w["updates_per_s"] for w in windows if "updates_per_s" in w]
    return {
        "toolkit": name,
        "tok_per_s": mean([w["tgt_tokens_per_s"] for w in windows]),
        "windows": len(windows),
        "updates_per_s": mean(ups) if ups else None,
    }


def bench_peer(peers_dir: Path, peer: str, updates: int, threads: int) -> dict[str, Any]:
    env = {**os.environ, "THREADS": str(threads), "TRAIN_ONLY": "1", "BENCH_DIR": str(bench_dir())}
    echoed(
        [peers_dir / PEER_SCRIPTS[peer], updates, "nmtkit-bench"], env=env, capture_output=True, text=True, check=True
    )
    summary = (bench_dir() / peer / "nmtkit-bench" / "summary.txt").read_text()
    speed = re.search(r"_mean\([^)]*\) (\d+) over (\d+) windows", summary)
    rss = re.search(r"train\s+Maximum resident set size \(kbytes\): (\d+)", summary)
    if not speed or not rss:
        raise SystemExit(f"bench-train: {peer}'s summary has no speed or memory: {summary[-400:]}")
    return {
        "toolkit": PEER_NAMES[peer],
        "tok_per_s": float(speed.group(1)),
        "windows": int(speed.group(2)),
        "peak_rss_mb": int(rss.group(1)) / 1024,
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peers", default="joeynmt,fairseq", help="comma-separated; '' for nmtkit alone")
    ap.add_argument("--peers-dir", dest="peers_dir", type=Path, default=CHECKOUT / "bench" / "peers")
    ap.add_argument(
        "--demo-bin",
        dest="demo_bin",
        type=Path,
        default=None,
        help="the demo's data-bin: also time its update, 1.0's recipe against --schedule cpu",
    )
    ap.add_argument(
        "--demo-only",
        dest="demo_only",
        action="store_true",
        help="with --demo-bin: time the demo's update alone (no peers, no data to prepare)",
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    if args.updates < WARMUP + 10:  # the speed is the mean of the windows logged after the warm-up
        ap.error(f"--updates {args.updates}: at least {WARMUP + 10}, the first {WARMUP} being left out of the speed")
    if args.demo_only and args.demo_bin:
        print_demo(args, bench_dir() / "nmtkit", [])
        return
    peers = [p for p in args.peers.split(",") if p]
    if peers and not args.peers_dir.is_dir():
        print(f"bench-train: {args.peers_dir} not found; measuring nmtkit alone", file=sys.stderr)
        peers = []
    ensure_peers(args.peers_dir, peers)
    work = bench_dir() / "nmtkit"
    work.mkdir(parents=True, exist_ok=True)
    bin_dir = nmtkit_data(work)
    load = load_before()
    rows = [bench_nmtkit(bin_dir, work, args.updates, args.threads, bf16=False)]
    rows += [bench_peer(args.peers_dir, p, args.updates, args.threads) for p in peers]
    if native_bf16():
        rows.append(bench_nmtkit(bin_dir, work, args.updates, args.threads, bf16=True))
    joey = next((r["tok_per_s"] for r in rows if r["toolkit"].startswith("Joey")), None)
    print(f"\ntraining, {args.updates} updates, {args.threads} threads, load before {load}")
    print(f"{'toolkit':<24}{'target tok/s':>14}{'vs Joey':>9}{'peak RSS':>11}")
    for r in rows:
        rel = f"{r['tok_per_s'] / joey:.2f}x" if joey else "-"
        print(f"{r['toolkit']:<24}{r['tok_per_s']:>14,.0f}{rel:>9}{r['peak_rss_mb'] / 1024:>9.2f} GB")
    print_demo(args, work, rows)


def print_demo(args: argparse.Namespace, work: Path, rows: list[dict[str, Any]]) -> None:
    """The demo's update before and after (with --demo-bin), then bench.json with every row."""
    demo = []
    if args.demo_bin:
        work.mkdir(parents=True, exist_ok=True)
        load = load_before()
        demo = [bench_demo(args.demo_bin, work, args.updates, args.threads, name) for name in DEMO_RECIPES]
        print(
            f"\nthe demo's update on its data ({args.demo_bin}), {args.updates} updates, {args.threads} threads, "
            f"load before {load}"
        )
        print(f"{'recipe':<24}{'target tok/s':>14}{'updates/s':>11}")
        for r in demo:
            print(f"{r['toolkit']:<24}{r['tok_per_s']:>14,.0f}{r['updates_per_s'] or float('nan'):>11.2f}")
    write_text(
        work / "bench.json",
        json.dumps({"updates": args.updates, "threads": args.threads, "rows": rows, "demo": demo}, indent=1),
    )
