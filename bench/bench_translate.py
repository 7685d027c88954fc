"""Translation speed of trained models: nmtkit's variants beside Joey NMT and fairseq, in one run.

    bin/bench-translate [--updates 1000] [--beams 5,12] [--threads 2] [--joey-tag nmtkit-bench]

The 567-verse Bible test set in the peers' Moses tokens ($BENCH_DIR/data/test.en),
beams 5 and 12, batches of 80 sentences for the peers and nmtkit's default
(32; it drops finished sentences from the batch as it goes), the same
threads for all. Models must be trained (an untrained model's outputs run
to the length limit and make speeds meaningless): nmtkit's `bench` preset
and fairseq's LSTM, both trained for --updates updates on the same data
(each trained here on first use, nmtkit with bf16 where the CPU has it);
Joey NMT's model is whatever `--joey-tag` run of bench/peers exists
(its training does not converge on this data; see the bench README).
Model loading is timed apart: the speeds count search only (nmtkit: tokens
in, tokens out, its BPE/vocabulary lookups included; fairseq: its own
"Translated ..." line on pre-binarized input; Joey NMT: its "Generation
took" line). Generated tokens include </s>, as fairseq counts them.

nmtkit runs as each of its variants (VARIANTS: fp32, --shortlist, --int8,
both, and with bf16 where the CPU has native bfloat16), each in a process of
its own, which reports its peak resident memory, and the tokenized BLEU of its
output against the test set's references, the same model for all. Results:
a table on stdout and $BENCH_DIR/nmtkit/bench-translate.json.

One variant's process (``--one``, :func:`translate_once`) is ``bin/bench-marian``'s too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nmtkit import checkpoint
from nmtkit.core.settings import RuntimeConfig
from nmtkit.evaluate.score import multi_bleu
from nmtkit.translate.settings import SearchConfig, TranslateOptions
from nmtkit.translate.translator import Translator

from .bench_common import CHECKOUT, NMTKIT, bench_dir, call, fail, load_before, native_bf16, threads_env, write_text
from .bench_train import PEER_RECIPE

# nmtkit's variants, each a process of its own (so that its peak memory is its own): flags of
# translate, and whether the CPU must have native bfloat16 for it to count
VARIANTS = {
    "fp32": ([], False),
    "bf16": (["bf16"], True),
    "shortlist": (["shortlist"], False),
    "int8": (["int8"], False),
    "int8 + shortlist": (["int8", "shortlist"], False),
    "bf16 + shortlist": (["bf16", "shortlist"], True),
}
# fairseq-generate at beam BEAM, on batches of 80 sentences
FAIRSEQ_GENERATE = (
    "--gen-subset test --source-lang en --target-lang fr --beam BEAM --batch-size 80 --max-len-a 0 --max-len-b 100 "
    "--cpu --model-overrides {'max_source_positions':1024,'max_target_positions':1024}"
).split()


def train_nmtkit(updates: int, threads: int) -> Path:
    save = bench_dir() / "nmtkit" / f"run-{updates}"
    if not (save / "last.pt").exists():
        cmd = [*NMTKIT, "train", str(bench_dir() / "nmtkit" / "data-bin"), "--save-dir", str(save), "--reset"]
        cmd += [*PEER_RECIPE, "--threads", str(threads), "--max-updates", str(updates)]
        cmd += ["--valid-every", str(updates), "--seed", "42"] + (["--bf16"] if native_bf16() else [])
        subprocess.run(cmd, check=True)
    return save / "last.pt"


def train_fairseq(peers_dir: Path, updates: int, threads: int) -> str:
    tag = f"anchor{updates}"
    if not (bench_dir() / "fairseq" / tag / "ckpt" / "checkpoint_last.pt").exists():
        env = {**os.environ, "THREADS": str(threads), "TRAIN_ONLY": "1", "BENCH_DIR": str(bench_dir())}
        subprocess.run([peers_dir / "run_fairseq.sh", str(updates), tag], env=env, check=True)
    return tag


def ensure_lexicon(model: Path) -> None:
    """Models trained by an nmtkit older than vocabulary selection get their lexicon here."""
    if checkpoint.load(model).lexicon is None:
        data = bench_dir() / "nmtkit" / "data-bin"
        subprocess.run([*NMTKIT, "lexicon", str(model), "--data", str(data)], check=True)


def translate_once(spec: dict[str, Any]) -> dict[str, Any]:
    """One variant in this process: load, translate, and report times, peak RSS and the output."""
    flags = spec["flags"]
    t0 = time.perf_counter()
    translator = Translator.from_checkpoints(
        spec["model"], RuntimeConfig("cpu", spec["threads"], "bf16" in flags, int8="int8" in flags)
    )
    loaded = time.perf_counter() - t0
    lines = Path(spec["source"]).read_text(encoding="utf-8").splitlines()
    options = TranslateOptions(SearchConfig(beam=spec["beam"]), tokenized=True, shortlist="shortlist" in flags)
    t0 = time.perf_counter()
    out = list(translator.translate(lines, options))
    seconds = time.perf_counter() - t0
    return {
        "load_s": loaded,
        "seconds": seconds,
        "sentences": len(out),
        "tokens": sum(len(t.tokens) + 1 for t in out),
        "hyps": [t.text for t in out],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def bench_nmtkit(model: Path, source: Path, beam: int, threads: int, variant: str) -> dict[str, Any]:
    spec = {"model": str(model), "source": str(source), "beam": beam, "threads": threads, "flags": VARIANTS[variant][0]}
    done = subprocess.run(
        [sys.executable, CHECKOUT / "bin" / "bench-translate", "--one", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=threads_env(threads, PYTHONWARNINGS="ignore"),
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    refs = (bench_dir() / "data" / "test.fr").read_text(encoding="utf-8").splitlines()
    bleu = multi_bleu().corpus_score(found.pop("hyps"), [refs]).score
    return {"toolkit": "nmtkit " + variant, "beam": beam, "bleu": bleu, **found}


def bench_fairseq(tag: str, beam: int, threads: int) -> dict[str, Any]:
    work = bench_dir() / "fairseq" / tag
    env = threads_env(threads, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", PYTHONWARNINGS="ignore")
    generate: list[object] = [bench_dir() / "fairseq" / "venv" / "bin" / "fairseq-generate", work / "bin"]
    generate += ["--path", work / "ckpt" / "checkpoint_last.pt"]
    settings = [str(beam) if a == "BEAM" else a for a in FAIRSEQ_GENERATE]
    t0 = time.perf_counter()
    done = call([*generate, *settings], capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - t0
    m = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s", done.stdout + done.stderr)
    if not m:
        raise SystemExit(f"bench-translate: fairseq-generate said no 'Translated ...' line: {done.stderr[-400:]}")
    n, tokens, seconds = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")), float(m.group(3))
    return {
        "toolkit": "fairseq 0.12.2 (LSTM)",
        "beam": beam,
        "load_s": wall - seconds,
        "seconds": seconds,
        "sentences": n,
        "tokens": tokens,
    }


def joey_config(peers_dir: Path, work: Path, beam: int) -> Path:
    """bench/peers' Joey NMT config for translating at ``beam`` with the model in ``work``."""
    cfg = work / f"cfg_beam{beam}.yaml"
    template = (peers_dir / "configs" / "joeynmt_rnnsearch.yaml").read_text()
    for key, value in {
        "@UPDATES@": "1",
        "@BENCH_DIR@": str(bench_dir()),
        "@MODEL_DIR@": str(work / "model"),
        "@VALID_FREQ@": "100000",
        "@BEAM@": str(beam),
    }.items():
        template = template.replace(key, value)
    cfg.write_text(template)
    return cfg


def bench_joey(peers_dir: Path, tag: str, beam: int, threads: int) -> dict[str, Any]:
    work = bench_dir() / "joeynmt" / tag
    cfg = joey_config(peers_dir, work, beam)
    env = threads_env(threads, PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    with open(bench_dir() / "data" / "test.en", "rb") as src:
        done = subprocess.run(
            [bench_dir() / "joeynmt" / "venv" / "bin" / "python", "-m", "joeynmt", "translate", cfg],
            stdin=src,
            capture_output=True,
            env=env,
            check=True,
        )
    wall = time.perf_counter() - t0
    log = (work / "model" / "translate.log").read_text()
    seconds = float(re.findall(r"Generation took ([\d.]+)", log)[-1])
    outputs = done.stdout.decode("utf-8").splitlines()
    return {
        "toolkit": "Joey NMT 2.3.0",
        "beam": beam,
        "load_s": wall - seconds,
        "seconds": seconds,
        "sentences": len(outputs),
        "tokens": sum(len(o.split()) + 1 for o in outputs),
    }


def rows_of(args: argparse.Namespace, model: Path, source: Path, fairseq: str | None) -> list[dict[str, Any]]:
    """Every variant of nmtkit, then Joey NMT's and fairseq's where they are, at each beam."""
    bf16 = native_bf16()
    rows = []
    for beam in [int(b) for b in args.beams.split(",")]:
        for variant, (_, needs_bf16) in VARIANTS.items():
            if bf16 or not needs_bf16:
                rows.append(bench_nmtkit(model, source, beam, args.threads, variant))
        if (bench_dir() / "joeynmt" / args.joey_tag / "model").is_dir():
            rows.append(bench_joey(args.peers_dir, args.joey_tag, beam, args.threads))
        if fairseq:
            rows.append(bench_fairseq(fairseq, beam, args.threads))
    for r in rows:
        r["sent_per_s"], r["tok_per_s"] = r["sentences"] / r["seconds"], r["tokens"] / r["seconds"]
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'toolkit':<26}{'beam':>5}{'sent/s':>9}{'gen tok/s':>11}{'tok/sent':>10}{'load s':>8}"
        f"{'peak RSS':>10}{'BLEU':>7}{'vs fairseq':>12}"
    )
    for r in rows:
        peer = next((j for j in rows if j["toolkit"].startswith("fairseq") and j["beam"] == r["beam"]), None)
        rel = f"{r['tok_per_s'] / peer['tok_per_s']:.2f}x" if peer else "-"
        rss = f"{r['peak_rss_mb']:,.0f} MB" if "peak_rss_mb" in r else "-"
        bleu = f"{r['bleu']:.2f}" if "bleu" in r else "-"
        print(
            f"{r['toolkit']:<26}{r['beam']:>5}{r['sent_per_s']:>9.1f}{r['tok_per_s']:>11,.0f}"
            f"{r['tokens'] / r['sentences']:>10.1f}{r['load_s']:>8.1f}{rss:>10}{bleu:>7}{rel:>12}"
        )


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, default=1000, help="training updates of the nmtkit and fairseq models")
    ap.add_argument("--beams", default="5,12")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--joey-tag", default="nmtkit-bench")
    ap.add_argument("--peers-dir", dest="peers_dir", type=Path, default=CHECKOUT / "bench" / "peers")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one variant, as JSON
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.one:
        print(json.dumps(translate_once(json.loads(args.one))))
        return
    source = bench_dir() / "data" / "test.en"
    if not source.exists() or not (bench_dir() / "nmtkit" / "data-bin").exists():
        fail("bench-translate", "run bin/bench-train first (it prepares the peers' data and installs them)")
    model = train_nmtkit(args.updates, args.threads)
    ensure_lexicon(model)
    fairseq = train_fairseq(args.peers_dir, args.updates, args.threads) if args.peers_dir.is_dir() else None
    load = load_before()
    rows = rows_of(args, model, source, fairseq)
    print(
        f"\ntranslation of {source}, models trained {args.updates} updates, {args.threads} threads, load before {load}"
    )
    print_table(rows)
    out = bench_dir() / "nmtkit" / "bench-translate.json"
    write_text(out, json.dumps({"threads": args.threads, "updates": args.updates, "rows": rows}, indent=1))
