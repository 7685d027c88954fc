"""fairseq's side of ``bin/bench-marian`` (:mod:`bench.bench_marian`), the peer of
docs/benchmarks.md's earlier rows on the same units: its binarized copy of the demo's pairs, its
training runs (the budgeted one, trained on, and at a constant rate), their speed read from its
logs, and its decoding. fairseq 0.12.2 is in $BENCH_DIR/fairseq/venv (bench/peers/install.sh).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtkit.core.files import atomic_write
from nmtkit.data.binarized import Corpus
from nmtkit.data.vocab import SPECIALS

from .bench_common import Site, fail, json_of, timed, write_lines, write_text
from .peer_marian import finite, preprocessor
from .peer_recipes import Point, over

# fairseq 0.12.2's RNN with attention is an LSTM (`--arch lstm`: bidirectional LSTM encoder, LSTM
# decoder with Luong-style attention), the nearest it has to the demo's GRUs. Differences from
# `--schedule cpu`, each forced by fairseq: LSTM cells; no cosine decay to a time budget (its cosine
# needs --max-update): warm-up 50 updates, then the inverse square root, as Marian's; best checkpoint
# by dev loss. Checkpoints of fairseq 0.12 pickle their settings: torch >= 2.6 loads them only with
# TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 (the benchmark's own files).
FAIRSEQ_TRAIN = (
    "--task translation --source-lang en --target-lang fr --arch lstm --encoder-bidirectional "
    "--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 256 --encoder-hidden-size 256 "
    "--decoder-embed-dim 256 --decoder-hidden-size 256 --decoder-out-embed-dim 256 --decoder-attention 1 "
    "--share-decoder-input-output-embed --dropout 0 --encoder-dropout-in 0 --encoder-dropout-out 0 "
    "--decoder-dropout-in 0 --decoder-dropout-out 0 --optimizer adam --adam-betas (0.9,0.999) --lr 5e-3 "
    "--lr-scheduler inverse_sqrt --warmup-updates 50 --criterion label_smoothed_cross_entropy "
    "--label-smoothing 0.1 --clip-norm 1 --batch-size 80 --max-source-positions 50 --max-target-positions 50 "
    "--skip-invalid-size-inputs-valid-test --validate-interval-updates 200 --save-interval-updates 200 "
    "--no-epoch-checkpoints --best-checkpoint-metric loss --num-workers 0 --seed 42 --cpu --log-format simple "
    "--log-interval 50"
).split()
FAIRSEQ_ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "PYTHONWARNINGS": "ignore"}
# fairseq's LSTM under the inverse square root learns slowly on these units (dev perplexity 62 after
# 1,869 updates, where nmtkit's is 75 after 400): its rate is a sixth of 5e-3 by then. A constant
# 5e-3 after the same warm-up learns faster per update (perplexity 179 at update 289 against 207 at
# 400), so the model trained on to a BLEU comparable with Marian's keeps the rate constant.
FAIRSEQ_CONSTANT = ["--lr-scheduler", "fixed", "--keep-interval-updates", "10"]
# fairseq-generate at beam BEAM with the output limit and ranking of nmtkit's defaults (2 × source
# + 10, raw log-probability)
FAIRSEQ_GENERATE = (
    "--gen-subset test --source-lang en --target-lang fr --beam BEAM --batch-size 32 --lenpen 0 --max-len-a 2 "
    "--max-len-b 10 --num-workers 0 --cpu --model-overrides {'max_source_positions':1024,'max_target_positions':1024}"
).split()


def fairseq_env(threads: int) -> dict[str, str]:
    return {**os.environ, **FAIRSEQ_ENV, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def fairseq_data(site: Site) -> Path:
    """fairseq's binarized copy of the same pairs, with nmtkit's vocabularies as its dictionaries;
    the test pairs in units too (fairseq-generate reads both sides)."""
    out = site.work / "fairseq-data"
    if (out / "done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    d, corpus = site.units, Corpus(site.data_bin)
    for lang in ("en", "fr"):  # fairseq puts its own <s> <pad> </s> <unk> first
        write_lines(out / f"dict.{lang}.txt", [f"{t} 1" for t in corpus.vocab(lang).tokens if t not in SPECIALS])
    tgt = preprocessor(site.data_bin, "fr")
    refs = (site.data / "raw" / "test.fr").read_text(encoding="utf-8").splitlines()
    write_lines(out / "test.fr", [" ".join(tgt.segment(tgt.tokenize(tgt.clean(r)))) for r in refs])
    write_text(out / "test.en", (d / "test.bpe.en").read_text(encoding="utf-8"))
    cmd = [site.fairseq_bin / "fairseq-preprocess", "--source-lang", "en", "--target-lang", "fr"]
    cmd += ["--trainpref", d / "train", "--validpref", d / "valid", "--testpref", out / "test"]
    cmd += ["--srcdict", out / "dict.en.txt", "--tgtdict", out / "dict.fr.txt", "--destdir", out, "--workers", "2"]
    run = timed(cmd, site.work / "fairseq-preprocess.log", env=fairseq_env(2))
    if run["rc"] != 0:
        fail("bench-marian", f"fairseq-preprocess failed: see {site.work / 'fairseq-preprocess.log'}")
    (out / "done").touch()  # a preprocessing killed midway is done again
    return out


def train_fairseq(
    site: Site,
    minutes: float,
    threads: int,
    name: str = "fairseq",
    total: float | None = None,
    settings: Sequence[str] = FAIRSEQ_TRAIN,
) -> dict[str, Any]:
    """fairseq trained for ``minutes`` (its --stop-time-hours; it validates, saves and stops), or
    ``name`` trained on from the 20-minute model until ``total`` minutes in all (a rerun goes on
    from its last checkpoint)."""
    result = site.work / f"train-{name}.json"
    if (done := site.kept(result, total or minutes, threads)) is not None:
        return done
    save = site.work / name
    save.mkdir(parents=True, exist_ok=True)
    if total and not (save / "checkpoint_last.pt").exists():
        with atomic_write(save / "checkpoint_last.pt", "wb") as fh:
            fh.write((site.work / "fairseq" / "checkpoint_last.pt").read_bytes())
    hours = f"{(total or minutes) / 60:.6f}"
    cmd = [site.fairseq_bin / "fairseq-train", fairseq_data(site), "--save-dir", save, "--stop-time-hours", hours]
    log = site.work / f"train-{name}.log"
    run = timed([*cmd, *settings], log, timeout_s=(total or minutes) * 60 + 600, env=fairseq_env(threads))
    if run["rc"] != 0:
        fail("bench-marian", f"fairseq-train failed (rc {run['rc']}): see {log}")
    run.update(fairseq_speed(log), settings=" ".join(settings), minutes=total or minutes, threads=threads)
    write_lines(result, [json.dumps(run, indent=1)])
    return run


def fairseq_sweep_point(site: Site, point: Point, run_dir: Path, updates: int, threads: int) -> dict[str, Any]:
    """fairseq trained ``updates`` updates with ``point``'s settings, validated at the last: its dev
    NLL per target unit (its ``nll_loss``, in bits, turned into nats)."""
    stop = ["--max-update", str(updates), "--validate-interval-updates", str(updates)]
    stop += ["--save-interval-updates", str(updates), "--no-last-checkpoints"]
    log = run_dir.parent / f"{run_dir.name}.log"  # a name may hold a dot (lr 1.0)
    cmd = [site.fairseq_bin / "fairseq-train", fairseq_data(site), "--save-dir", run_dir]
    run = timed([*cmd, *over(point.flags, stop)], log, env=fairseq_env(threads))
    if run["rc"] != 0:
        fail("bench-sweep", f"fairseq-train failed (rc {run['rc']}): see {log}")
    return {
        "updates": fairseq_speed(log)["updates"],
        "dev_ce": fairseq_dev_ce(log.read_text(errors="replace")),
        "wall_s": run["wall_s"],
        "peak_rss_mb": run["peak_rss_mb"],
    }


def fairseq_pace(site: Site, point: Point, threads: int, updates: int = 60, every: int = 10) -> float:
    """Updates a second of ``point``'s run, measured by a short run just before its pick, alone on
    the cores (kept: a rerun reads it back): the pace between its first and last logged windows,
    its start-up and first window left out. A schedule that must know where the budget ends (its
    cosine) gets that pace times the budget: a few updates too many (the start and the
    validations are not counted), never too few."""
    out = site.work / "pace-fairseq.json"
    if out.exists():
        return float(json_of(out)["updates_per_s"])
    run_dir = site.work / "pace-fairseq"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    stop = ["--max-update", str(updates), "--log-interval", str(every), "--disable-validation", "--no-save"]
    log = run_dir.parent / f"{run_dir.name}.log"
    cmd = [site.fairseq_bin / "fairseq-train", fairseq_data(site), "--save-dir", run_dir]
    run = timed([*cmd, *over(point.flags, stop)], log, env=fairseq_env(threads))
    windows = [(int(n), int(w)) for n, w in re.findall(r"num_updates=(\d+).*?\bwall=(\d+)", log.read_text())]
    if run["rc"] != 0 or len(windows) < 2 or windows[-1][1] <= windows[0][1]:
        fail("bench-sweep", f"fairseq-train's pace run failed (rc {run['rc']}): see {log}")
    (n0, w0), (n1, w1) = windows[0], windows[-1]
    pace = (n1 - n0) / (w1 - w0)
    write_text(out, json.dumps({"point": point.name, "updates_per_s": pace, "windows": windows}, indent=1))
    return pace


def fairseq_dev_ce(log: str) -> float | None:
    """The last dev NLL per target unit in nats in a fairseq-train log (its losses are in bits):
    its plain cross-entropy logs the loss alone, a label-smoothed one the NLL beside it."""
    found = re.findall(r"valid on 'valid' subset \| loss ([-\w.+]+)(?: \| nll_loss ([-\w.+]+))?", log)
    if not found:
        return None
    bits = finite(found[-1][1] or found[-1][0])
    return bits * math.log(2) if bits is not None else None


def _by_updates(checkpoint: Path) -> int:
    return int(checkpoint.stem.split("_")[-1])


def last_interval(site: Site, name: str) -> str:
    """The checkpoint of the most updates in a fairseq save directory (its ``checkpoint_last.pt``
    changes as a run goes on; a decoding is kept under its model's name)."""
    saved = sorted((site.work / name).glob("checkpoint_*_*.pt"), key=_by_updates)
    return f"{name}/{saved[-1].name}" if saved else f"{name}/checkpoint_last.pt"


def call_seconds(log: Path) -> float:
    """The wall time of one fairseq-train call: its own total, or for a call stopped by hand the
    last reading of its wall meter (which restarts with each epoch: its largest)."""
    text = log.read_text(errors="replace")
    if done := re.findall(r"done training in ([\d.]+) seconds", text):
        return float(done[-1])
    return max((float(w) for w in re.findall(r"train_inner.*\bwall=([\d.]+)", text)), default=0.0)


def train_fairseq_constant(site: Site, updates: int, threads: int) -> dict[str, Any]:
    """fairseq trained from scratch at a constant rate for ``updates`` updates ("fairseq-constant";
    a rerun goes on from its last checkpoint). It may share the machine: its point is the BLEU."""
    name, result = "fairseq-constant", site.work / "train-fairseq-constant.json"
    if result.exists() and json_of(result)["target_updates"] == updates:
        found: dict[str, Any] = json_of(result)
        return found
    settings = list(FAIRSEQ_TRAIN)
    at = settings.index("--lr-scheduler")
    settings[at : at + 2] = [*FAIRSEQ_CONSTANT, "--max-update", str(updates)]
    logs = sorted(site.work.glob(f"train-{name}-*.log"), key=lambda p: int(p.stem.split("-")[-1]))
    log = site.work / f"train-{name}-{len(logs)}.log"  # a log per call: a rerun goes on from the last
    cmd = [site.fairseq_bin / "fairseq-train", fairseq_data(site), "--save-dir", site.work / name, *settings]
    run = timed(cmd, log, env=fairseq_env(threads))
    if run["rc"] != 0:
        fail("bench-marian", f"fairseq-train failed (rc {run['rc']}): see {log}")
    run.update(
        fairseq_speed(log),
        settings=" ".join(settings),
        target_updates=updates,
        threads=threads,
        minutes=round(sum(call_seconds(p) for p in (*logs, log)) / 60, 1),
    )
    run["updates"] = max(fairseq_speed(p)["updates"] for p in (*logs, log))
    write_lines(result, [json.dumps(run, indent=1)])
    return run


def fairseq_speed(log: Path) -> dict[str, Any]:
    """Updates and target tokens/s (</s> included) as nmtkit counts its own: the mean of fairseq's
    logged ``wps`` windows (every 50 updates; validation is logged apart)."""
    text = log.read_text(errors="replace")
    rates = [float(x) for x in re.findall(r"\bwps=([\d.]+)", text)]
    updates = re.findall(r"\bnum_updates[= ](\d+)", text)  # its windows' and its validations
    wall = re.findall(r"done training in ([\d.]+) seconds", text)
    return {
        "updates": int(updates[-1]) if updates else 0,
        "tgt_tok_per_s": sum(rates) / len(rates) if rates else None,
        "train_s": float(wall[-1]) if wall else None,
    }


def fairseq_decode(site: Site, model: Path, beam: int, threads: int) -> dict[str, Any]:
    """fairseq-generate on the binarized test pairs: its own search time (model and data loading
    apart), sentences, generated tokens, peak RSS and its outputs in units."""
    settings = [str(beam) if a == "BEAM" else a for a in FAIRSEQ_GENERATE]
    log = site.work / "decode" / "fairseq-generate.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [site.fairseq_bin / "fairseq-generate", fairseq_data(site), "--path", model, *settings]
    run = timed(cmd, log, env=fairseq_env(threads))
    text = log.read_text(errors="replace")
    done = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in [\d.]+s \(([\d.]+) sentences/s", text)
    if run["rc"] != 0 or not done:
        fail("bench-marian", f"fairseq-generate failed (rc {run['rc']}): see {log}")
    hyps = sorted((int(m.group(1)), m.group(2)) for m in re.finditer(r"^H-(\d+)\t[^\t]*\t(.*)$", text, re.M))
    sentences = int(done.group(1).replace(",", ""))
    return {
        "seconds": sentences / float(done.group(3)),
        "sentences": sentences,
        "tokens": int(done.group(2).replace(",", "")),
        "hyps": [h for _, h in hyps],
        "peak_rss_mb": run["peak_rss_mb"],
    }
