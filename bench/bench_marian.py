"""nmtkit beside Marian on the demo's data and this CPU, in one run: training and decoding.

    bin/bench-marian [--minutes 20] [--threads 2] [--beams 5,12] [--marian-total 60]

Marian 1.12 (PyPI's pymarian, installed by `bench/peers/install.sh marian` into
$BENCH_DIR/marian/venv) trains its Nematus-style RNN (`--type s2s`: bidirectional
GRU encoder, conditional GRU decoder with Bahdanau attention) on the very units
nmtkit's demo trains on: the demo's data-bin (`make data`) written out as text,
its two vocabularies as Marian's .yml lists. Settings as close to the demo's
`--schedule cpu` as Marian allows (docs/benchmarks.md lists each difference).

Stages, each kept under $BENCH_DIR/marian-demo; a rerun goes on where it stopped:

1. data: the training and dev pairs in BPE units, the test verses in Moses tokens
   (nmtkit's input) and in BPE units (Marian's);
2. train: the demo's `nmtkit train` for --minutes, then Marian for the same wall
   time (`timeout -s TERM`: Marian saves and exits), each alone on the cores;
   target tokens/s, peak RSS, test sacreBLEU against Segond at beam 5;
3. more (--marian-total M, or --marian-more M for one chunk a call): Marian trained on
   from its 20-minute model, for decoding at a BLEU comparable with nmtkit's;
4. decode: the 567 test verses at each beam on 1 and --threads threads, each
   toolkit's fp32 path and its fast paths (nmtkit: --int8 --shortlist, bf16 where
   the CPU has it; Marian: its intgemm8 model from `convert`, with and without a
   lexical shortlist from eflomal's alignments), each a process
   of its own: search time (model loading apart), sentences/s, generated tokens/s
   (</s> included), peak RSS, sacreBLEU;
5. a table on stdout and $BENCH_DIR/marian-demo/results.json.

Without Marian's venv it says in one line how to get it and exits 0.

This module holds the stages' order, nmtkit's side (its training with the demo's own flags,
:func:`bench.demo.train_flags`, and its decoding), the choice of the models decoded
beside each other, and the table; Marian's side is :mod:`bench.peer_marian`, fairseq's
:mod:`bench.peer_fairseq`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtkit.core.machine import describe, machine
from nmtkit.evaluate.score import read_cleaned, sacre_bleu
from nmtkit.text.clean import apply_rules
from nmtkit.text.tokenize import MosesText
from nmtkit.train.runlog import run_facts

from .bench_common import (
    CHECKOUT,
    Site,
    bench_dir,
    fail,
    json_of,
    native_bf16,
    threads_env,
    timed,
    write_lines,
    write_text,
)
from .demo import train_flags
from .peer_fairseq import fairseq_decode, last_interval, train_fairseq, train_fairseq_constant
from .peer_joeynmt import joey_decode
from .peer_marian import (
    MARIAN_CONSTANT,
    MARIAN_PATHS,
    chunks,
    detokenized,
    marian_decode,
    marian_models,
    marian_shortlist,
    marian_speed,
    prepare,
    train_marian,
    train_more,
    train_to_total,
)
from .peer_opennmt import onmt_decode

CLEAN = ("verse-markers",)  # the demo's scoring: `nmtkit score --clean verse-markers`
NMTKIT_PATHS = {
    "fp32": [],
    "int8 + shortlist": ["int8", "shortlist"],
    "bf16": ["bf16"],
    "bf16 + shortlist": ["bf16", "shortlist"],
}


def sacrebleu(hyps: list[str], data: Path) -> float:
    refs = read_cleaned(data / "raw" / "test.fr", CLEAN)
    return float(sacre_bleu().corpus_score([apply_rules(h, CLEAN)[0] for h in hyps], [refs]).score)


# -- nmtkit's side ----------------------------------------------------------------------------------


def train_nmtkit(
    site: Site, minutes: float, threads: int, name: str = "nmtkit", extra: Sequence[str] = ()
) -> dict[str, Any]:
    """The demo's own `nmtkit train` for ``minutes`` (with ``extra`` flags over its own) into
    ``name``: its run, speed and best update (kept)."""
    save, result = site.work / name, site.work / f"train-{name}.json"
    if (done := site.kept(result, minutes, threads)) is not None:
        return done
    save.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "nmtkit", "train", site.data_bin, "--save-dir", save, "--threads", threads]
    cmd += [*train_flags(minutes), *extra]
    ran = site.work / f"train-{name}.run.json"  # the run itself, kept apart from what is read of it
    if not ran.exists():
        first = timed(cmd, log := site.work / f"train-{name}.log")
        if first["rc"] != 0:
            fail("bench-marian", f"nmtkit train failed (rc {first['rc']}): see {log}")
        write_text(ran, json.dumps(first))
    run: dict[str, Any] = json_of(ran)
    run.update(nmtkit_speed(save), settings=" ".join(map(str, cmd[3:])), minutes=minutes, threads=threads)
    write_text(result, json.dumps(run, indent=1))
    return run


def nmtkit_speed(save: Path) -> dict[str, Any]:
    """Updates, training seconds and target tokens/s (</s> included), as `nmtkit info` reads them."""
    facts = run_facts(save)
    return {
        "updates": facts["updates"],
        "train_s": facts["minutes"] * 60,
        "tgt_tok_per_s": facts["tgt_tokens_per_s"],
        "best_step": facts.get("best", {}).get("step"),
    }


def nmtkit_decode(site: Site, model: Path, beam: int, threads: int, flags: list[str]) -> dict[str, Any]:
    """One nmtkit variant in a process of its own (bin/bench-translate's --one)."""
    spec = {"model": str(model), "source": str(site.units / "test.tok.en"), "beam": beam, "threads": threads}
    done = subprocess.run(
        [sys.executable, CHECKOUT / "bin" / "bench-translate", "--one", json.dumps({**spec, "flags": flags})],
        capture_output=True,
        text=True,
        env=threads_env(threads, PYTHONWARNINGS="ignore"),
    )
    if done.returncode != 0:
        fail("bench-marian", f"nmtkit decoding failed: {done.stderr.strip().splitlines()[-1:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# -- decoding ---------------------------------------------------------------------------------------


def decode_row(site: Site, toolkit: str, path: str, beam: int, threads: int, model: str) -> dict[str, Any]:
    """One decoding of the test verses (kept: a rerun reads it back). ``model``: nmtkit's or
    fairseq's checkpoint, or Marian's training directory, relative to the work directory."""
    name = f"{toolkit}-{model.replace('/', '-')}-{path.replace(' + ', '+')}-b{beam}-t{threads}"
    out = site.work / "decode" / f"{name}.json"
    if out.exists():
        kept: dict[str, Any] = json_of(out)
        return kept
    if toolkit == "nmtkit":
        found = nmtkit_decode(site, site.work / model, beam, threads, NMTKIT_PATHS[path])
        moses = MosesText("fr")
        hyps = [moses.detokenize(h.split()) for h in found.pop("hyps")]
    elif toolkit == "fairseq":
        found = fairseq_decode(site, site.work / model, beam, threads)
        hyps = detokenized(found.pop("hyps"), site.data_bin)
    elif toolkit in ("joeynmt", "opennmt"):  # bin/bench-sweep's picks (Joey NMT's: BLEU alone, no speed)
        decode = joey_decode if toolkit == "joeynmt" else onmt_decode
        found = decode(site, site.work / model, beam, threads)
        hyps = detokenized(found.pop("hyps"), site.data_bin)
    else:
        kind, shortlist = MARIAN_PATHS[path]
        models = marian_models(site, model)
        found = marian_decode(site, models[kind], beam, threads, marian_shortlist(site) if shortlist else None)
        hyps = detokenized(found.pop("hyps"), site.data_bin)
    row: dict[str, Any] = {"toolkit": toolkit, "model": model, "path": path, "beam": beam, "threads": threads}
    row |= {"bleu": sacrebleu(hyps, site.data), **found}
    if "seconds" in row:
        row["sent_per_s"], row["tok_per_s"] = row["sentences"] / row["seconds"], row["tokens"] / row["seconds"]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, json.dumps(row, indent=1))
    write_lines(out.with_suffix(".hyp"), hyps)
    return row


def bleu5(site: Site, toolkit: str, model: str, threads: int) -> float:
    """Test BLEU of ``model``'s fp32 path at beam 5."""
    return float(decode_row(site, toolkit, "fp32", 5, threads, model)["bleu"])


def comparable_nmtkit(site: Site, bleu: float, threads: int, run: str = "nmtkit") -> str:
    """nmtkit's kept validation checkpoint (--keep-validations) of ``run`` whose test BLEU (beam 5,
    fp32) is nearest ``bleu``: nmtkit's side of decoding at a peer's quality, with no training of
    its own. The checkpoints are tried in order of updates until one passes ``bleu``."""
    from nmtkit.checkpoint.average import kept_validations  # here: the rest of the script needs no torch

    kept = kept_validations(site.work / run)
    scored: list[tuple[float, str]] = []
    for ckpt in kept:
        name = f"{run}/{ckpt.name}"
        scored.append((bleu5(site, "nmtkit", name, threads), name))
        if scored[-1][0] >= bleu:
            break
    return min(scored, key=lambda s: abs(s[0] - bleu))[1] if scored else f"{run}/best.pt"


def comparable_fairseq(site: Site, bleu: float, threads: int) -> str:
    """fairseq's saved checkpoint (every 200 updates, the 20-minute run's and those trained on)
    whose test BLEU (beam 5) is nearest ``bleu``, tried from the last back until one falls short
    of it (the last alone when fairseq never reached it)."""
    # the constant-rate run, made for this, where there is one; else the budgeted run and its sequel
    saved = list((site.work / "fairseq-constant").glob("checkpoint_*_*.pt")) or [
        p for name in ("fairseq", "fairseq-more") for p in (site.work / name).glob("checkpoint_*_*.pt")
    ]
    scored: list[tuple[float, str]] = []
    for ckpt in sorted(saved, key=lambda p: -int(p.stem.split("_")[-1])):
        name = f"{ckpt.parent.name}/{ckpt.name}"
        scored.append((bleu5(site, "fairseq", name, threads), name))
        if scored[-1][0] < bleu:
            break
    return min(scored, key=lambda s: abs(s[0] - bleu))[1] if scored else "fairseq/checkpoint_best.pt"


def fairseq_pair(site: Site, bleu: float, threads: int) -> dict[str, str]:
    """fairseq's model nearest ``bleu`` (Marian's), and beside it nmtkit's kept checkpoint nearest
    fairseq's own BLEU where fairseq is more than 1 BLEU away from it."""
    model = comparable_fairseq(site, bleu, threads)
    reached = bleu5(site, "fairseq", model, threads)
    if abs(reached - bleu) <= 1:
        return {"fairseq": model}
    return {"nmtkit": comparable_nmtkit(site, reached, threads), "fairseq": model}


def fastest_path(rows: list[dict[str, Any]], keep_bleu: float = 1.0) -> str:
    """The fastest of a toolkit's paths (rows[0] is its fp32 path) among those within ``keep_bleu``
    of fp32's BLEU: a path that breaks the translations (Marian's intgemm8 on this s2s model) is
    no fast path."""
    kept = [r for r in rows[1:] if r["bleu"] >= rows[0]["bleu"] - keep_bleu] or rows[:1]
    return str(max(kept, key=lambda r: r["tok_per_s"])["path"])


def paths(site: Site, toolkit: str, model: str) -> list[str]:
    """A toolkit's paths on this machine: nmtkit's bf16 ones where the CPU has it, Marian's whose
    int8 model converted; fairseq has no int8 or shortlist for its LSTM on CPUs."""
    if toolkit == "nmtkit":
        return [p for p in NMTKIT_PATHS if native_bf16() or "bf16" not in p]
    if toolkit == "marian":
        have = marian_models(site, model)
        return [p for p in MARIAN_PATHS if MARIAN_PATHS[p][0] in have]
    return ["fp32"]


def decoding(site: Site, beams: list[int], threads: int, models: dict[str, str]) -> list[dict[str, Any]]:
    """Every path of each toolkit in ``models`` (toolkit → model) on ``threads`` threads; the fp32
    path and the fastest on 1 thread."""
    rows = []
    for beam in beams:
        for toolkit, model in models.items():
            mine = [decode_row(site, toolkit, p, beam, threads, model) for p in paths(site, toolkit, model)]
            fastest = fastest_path(mine)
            rows += mine
            if threads != 1:
                rows += [decode_row(site, toolkit, p, beam, 1, model) for p in dict.fromkeys(("fp32", fastest))]
    return rows


def table(results: dict[str, Any]) -> str:
    out = [
        f"Machine: {results['machine']}",
        "",
        "| toolkit | minutes | updates | target tok/s | vs Marian | peak RSS | test BLEU (Segond), beam 5 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    marian_speed_ = results["train"]["marian"]["tgt_tok_per_s"]
    for name, run in results["train"].items():
        speed = run["tgt_tok_per_s"]
        out.append(
            f"| {name} | {run.get('minutes', results['minutes']):g} | {run['updates']:,} | "
            + (f"{speed:,.0f} | {speed / marian_speed_:.2f}x | " if speed else "– | – | ")
            + f"{run['peak_rss_mb']:,.0f} MB | {run['bleu']:.2f} |"
        )
    return "\n".join([*out, "", decode_table(results["decode"])])


def decode_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| toolkit | model | path | beam | threads | sent/s | gen tok/s | peak RSS | BLEU |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['toolkit']} | {r['model']} | {r['path']} | {r['beam']} | {r['threads']} | "
            f"{r['sent_per_s']:.1f} | {r['tok_per_s']:,.0f} | {r['peak_rss_mb']:,.0f} MB | {r['bleu']:.2f} |"
        )
    return "\n".join(out)


# -- the stages -------------------------------------------------------------------------------------


def budget_runs(site: Site, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Stage 2: each toolkit trained for the budget (fairseq where its venv is), and each run's
    test BLEU."""
    train = {
        "nmtkit": train_nmtkit(site, args.minutes, args.threads),
        "marian": train_marian(site, args.minutes, args.threads),
    }
    if args.marian_constant:
        train["marian, constant rate"] = train_marian(
            site, args.minutes, args.threads, "marian-constant", settings=MARIAN_CONSTANT
        )
    if (site.fairseq_bin / "fairseq-train").exists():
        train["fairseq"] = train_fairseq(site, args.minutes, args.threads)
    else:
        print(
            f"bench-marian: no fairseq in {site.fairseq_bin.parent}; its rows are left out (get it with "
            "`bench/peers/install.sh fairseq`)",
            file=sys.stderr,
        )
    for row, model in (
        ("nmtkit", "nmtkit/best.pt"),
        ("marian", "marian"),
        ("fairseq", "fairseq/checkpoint_best.pt"),
        ("marian, constant rate", "marian-constant"),
    ):
        if row in train:
            train[row]["bleu"] = bleu5(site, row.split(",")[0], model, args.threads)
    return train


def trained_on(site: Site, args: argparse.Namespace, train: dict[str, dict[str, Any]]) -> str:
    """Stage 3: the peers trained on past the budget, for decoding at comparable BLEU; their rows
    show no speed (they may share the machine: their point is the BLEU). Marian's model to decode."""
    if args.marian_more:
        train_more(site, args.marian_more, args.threads)
    train_to_total(site, args.marian_total, args.minutes, args.threads)
    marian_model = "marian"
    if done := chunks(site):
        marian_model = "marian-more"
        train["marian, trained on"] = {
            **marian_speed(site.work / "marian-more"),
            "tgt_tok_per_s": None,
            "minutes": args.minutes + sum(c["minutes"] for c in done),
            "peak_rss_mb": max(c["peak_rss_mb"] for c in done),
            "bleu": bleu5(site, "marian", "marian-more", args.threads),
        }
    if "fairseq" in train and args.fairseq_total > args.minutes + 0.5:
        more = train_fairseq(site, args.minutes, args.threads, "fairseq-more", total=args.fairseq_total)
        best = bleu5(site, "fairseq", "fairseq-more/checkpoint_best.pt", args.threads)
        train["fairseq, trained on"] = {**more, "tgt_tok_per_s": None, "bleu": best}
    if "fairseq" in train and args.fairseq_updates:
        constant = train_fairseq_constant(site, args.fairseq_updates, args.threads)
        last = bleu5(site, "fairseq", last_interval(site, "fairseq-constant"), args.threads)
        train["fairseq, constant rate"] = {**constant, "tgt_tok_per_s": None, "bleu": last}
    return marian_model


def decodings(site: Site, args: argparse.Namespace, marian_model: str, fairseq: bool) -> list[dict[str, Any]]:
    """Stage 4: nmtkit's and fairseq's models nearest Marian's BLEU decoded beside Marian's, and
    nmtkit's model of the whole budget."""
    beams = [int(b) for b in args.beams.split(",")]
    marian_bleu = bleu5(site, "marian", marian_model, args.threads)
    models = {"nmtkit": comparable_nmtkit(site, marian_bleu, args.threads), "marian": marian_model}
    rows = decoding(site, beams, args.threads, models)
    if fairseq:
        pair = fairseq_pair(site, marian_bleu, args.threads)
        if pair.get("nmtkit") == models["nmtkit"]:  # decoded above already
            del pair["nmtkit"]
        rows += decoding(site, beams, args.threads, pair)
    if models["nmtkit"] != "nmtkit/best.pt":  # and nmtkit's model of the whole budget
        rows += decoding(site, beams, args.threads, {"nmtkit": "nmtkit/best.pt"})
    return rows


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=CHECKOUT / "data" / "bible")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beams", default="5,12")
    ap.add_argument("--marian-more", type=float, default=0.0, help="minutes of more Marian training per call")
    ap.add_argument(
        "--marian-total",
        type=float,
        default=0.0,
        help="train Marian on, in chunks of --minutes, until it has trained this many minutes in all "
        "(for decoding at a BLEU comparable with nmtkit's; a rerun does only what is left)",
    )
    ap.add_argument(
        "--fairseq-total",
        type=float,
        default=0.0,
        help="the same for fairseq (its rows run where bench/peers/install.sh fairseq made its venv)",
    )
    ap.add_argument(
        "--marian-constant",
        action="store_true",
        help="Marian's budget again at a constant rate after the warm-up (no inverse square root)",
    )
    ap.add_argument(
        "--fairseq-updates",
        type=int,
        default=0,
        help="train fairseq from scratch at a constant rate for this many updates, for decoding "
        "at a BLEU comparable with Marian's (a rerun goes on where it stopped)",
    )
    ap.add_argument("--stage", default="all", help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    site = Site(bench_dir(), args.data)
    if not site.marian_py.exists():
        print(
            f"bench-marian: no Marian in {site.marian_py.parent.parent}; get it with "
            "`bench/peers/install.sh marian` (pymarian 1.12.42 from PyPI, a 600 MB wheel)",
            file=sys.stderr,
        )
        return
    if not (site.data_bin / "manifest.json").exists():
        fail("bench-marian", f"{args.data}/data-bin-bpe8000: no demo data-bin; run `make data` first")
    info = prepare(site.data_bin, args.data / "raw" / "test.en", site.units)
    if args.stage == "data":
        return
    train = budget_runs(site, args)
    results: dict[str, Any] = {
        "machine": describe(machine()),
        "data": info,
        "threads": args.threads,
        "minutes": args.minutes,
        "train": train,
    }
    marian_model = trained_on(site, args, train)
    if args.stage == "train":
        print(table({**results, "decode": []}))
        return
    results["decode"] = decodings(site, args, marian_model, "fairseq" in train)
    write_text(site.work / "results.json", json.dumps(results, indent=1))
    print(table(results))
