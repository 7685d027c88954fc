"""OpenNMT-py's side of ``bin/bench-sweep`` (:mod:`.bench_sweep`): its configuration on the demo's
units (JSON, which its YAML reader reads as it is), its runs (a sweep point of so many updates, a
pick of so many minutes), their dev cross-entropy and speed read from its log, the last and the
best validated of its checkpoints, and its decoding of the test verses. OpenNMT-py 3.5.1 is in
$BENCH_DIR/opennmt/venv (bench/peers/install.sh opennmt).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from .bench_common import Site, fail, timed, write_text
from .peer_joeynmt import as_yaml, settle, vocab_files
from .peer_marian import finite
from .peer_recipes import Point

# OpenNMT-py's RNN at the demo's size: a bidirectional GRU encoder of 256 a direction (its
# enc_hid_size is both directions'), a GRU decoder with input feeding and global attention (the
# point's kind; its default "general"), the decoder started from the encoder's last states (its
# size is then the encoder's two directions'), embeddings 256, the target's tied to the output
# layer, no dropout; batches of 80 verses of at most 50 units.
ONMT_MODEL = {
    "model_type": "text",
    "encoder_type": "brnn",
    "decoder_type": "rnn",
    "rnn_type": "GRU",
    "enc_layers": 1,
    "dec_layers": 1,
    "word_vec_size": 256,
    "enc_hid_size": 512,
    "dec_hid_size": 512,
    "input_feed": 1,
    "bridge": False,
    "share_decoder_embeddings": False,  # tying needs dec_hid_size == word_vec_size
    "dropout": [0.0],
    "attention_dropout": [0.0],
    "batch_size": 80,
    "batch_type": "sents",
    "normalization": "sents",
    "accum_count": [1],
    "src_seq_length": 50,
    "tgt_seq_length": 50,
    "seed": 42,
    "bucket_size": 32768,  # its default, 262,144, holds the whole corpus in memory before a first batch
    "num_workers": 0,  # its data loading in the training process: one process on the cores
    "report_every": 10,
}
ONMT_ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "PYTHONWARNINGS": "ignore"}  # its checkpoints pickle


def onmt_bin(site: Site) -> Path:
    return site.bench / "opennmt" / "venv" / "bin"


def onmt_env(threads: int) -> dict[str, str]:
    return {**os.environ, **ONMT_ENV, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def onmt_config(site: Site, run_dir: Path, point: Point, more: list[str]) -> Path:
    """The configuration of one run into ``run_dir``/config.yaml: the model above, the point's
    settings over it, then ``more`` (steps, validation, saving)."""
    vocab, d = vocab_files(site, "opennmt-data"), site.units
    config: dict[str, Any] = {
        "save_data": str(run_dir / "data"),
        "src_vocab": str(vocab["en"]),
        "tgt_vocab": str(vocab["fr"]),
        "src_vocab_size": 100000,
        "tgt_vocab_size": 100000,
        "overwrite": True,
        "data": {
            "corpus_1": {"path_src": str(d / "train.en"), "path_tgt": str(d / "train.fr")},
            "valid": {"path_src": str(d / "valid.en"), "path_tgt": str(d / "valid.fr")},
        },
        "transforms": ["filtertoolong"],
        "save_model": str(run_dir / "model"),
        "keep_checkpoint": -1,
        **copy.deepcopy(ONMT_MODEL),
    }
    path = run_dir / "config.yaml"
    write_text(path, as_yaml(settle(config, [*point.flags, *more])))
    return path


def stopping(updates: int, valid_every: int, save_every: int) -> list[str]:
    return [f"train_steps={updates}", f"valid_steps={valid_every}", f"save_checkpoint_steps={save_every}"]


def onmt_validations(run_dir: Path, every: int) -> dict[int, float]:
    """Dev cross-entropy per target unit (the log of its perplexity) at each validated update: its
    log names no update beside a validation, which comes every ``every`` updates."""
    log = (run_dir / "train.log").read_text(errors="replace") if (run_dir / "train.log").exists() else ""
    found = [finite(p) for p in re.findall(r"Validation perplexity: ([-\w.+]+)", log)]
    return {every * (k + 1): math.log(p) for k, p in enumerate(found) if p is not None and p > 0}


def onmt_speed(run_dir: Path) -> dict[str, Any]:
    """Updates and target tokens/s (</s> included): the mean of its logged windows' ``tok/s``
    (source/target), the first left out (its warm-up)."""
    log = (run_dir / "train.log").read_text(errors="replace") if (run_dir / "train.log").exists() else ""
    steps = [int(s) for s in re.findall(r"Step\s+(\d+)/", log)]
    rates = [float(t) for t in re.findall(r"\d+/\s*(\d+) tok/s", log)][1:]
    return {"updates": max(steps, default=0), "tgt_tok_per_s": sum(rates) / len(rates) if rates else None}


def checkpoints(run_dir: Path) -> dict[int, Path]:
    return {int(p.stem.rsplit("_", 1)[1]): p for p in run_dir.glob("model_step_*.pt")}


def onmt_models(run_dir: Path, valid_every: int) -> dict[str, Path]:
    """The last checkpoint of a run, and its best validated one (the lowest dev cross-entropy
    among the updates that were both validated and saved)."""
    saved, dev = checkpoints(run_dir), onmt_validations(run_dir, valid_every)
    if not saved:
        fail("bench-sweep", f"{run_dir}: OpenNMT-py saved no checkpoint")
    scored = [s for s in dev if s in saved]
    best = min(scored, key=lambda s: dev[s]) if scored else max(saved)
    return {"last": saved[max(saved)], "best": saved[best]}


def opennmt_sweep_point(site: Site, point: Point, run_dir: Path, updates: int, threads: int) -> dict[str, Any]:
    """OpenNMT-py trained ``updates`` updates with ``point``'s settings, validated at the last: its
    dev cross-entropy per target unit."""
    config = onmt_config(site, run_dir, point, stopping(updates, updates, updates))
    log = run_dir / "train.log"  # its log_file takes only its start: its training logs to stderr
    run = timed([onmt_bin(site) / "onmt_train", "-config", config], log, env=onmt_env(threads))
    if run["rc"] != 0:
        fail("bench-sweep", f"onmt_train failed (rc {run['rc']}): see {log}")
    dev = onmt_validations(run_dir, updates)
    return {
        "updates": onmt_speed(run_dir)["updates"],
        "dev_ce": dev[max(dev)] if dev else None,
        "wall_s": run["wall_s"],
        "peak_rss_mb": run["peak_rss_mb"],
    }


def save_interval(minutes: float, valid_every: int) -> int:
    """Updates between OpenNMT-py's saves in a budget of ``minutes``: 50 in the bench's 20 minutes,
    proportionally fewer in a shorter budget, so that a short budget still saves; always a divisor
    of ``valid_every``, so that every validated update is saved and can be the best model."""
    most = max(1, min(50, int(50 * minutes / 20)))
    return max(d for d in range(1, most + 1) if valid_every % d == 0)


def train_opennmt(
    site: Site, minutes: float, threads: int, name: str, point: Point, valid_every: int = 200
) -> dict[str, Any]:
    """OpenNMT-py trained for ``minutes`` of wall time (`timeout -s TERM`: it saves nothing on a
    signal, so it saves every :func:`save_interval` updates and the last of those is the budget's
    model; it validates every ``valid_every``), its run and speed (kept)."""
    result = site.work / f"train-{name}.json"
    if (done := site.kept(result, minutes, threads)) is not None:
        return done
    save_every = save_interval(minutes, valid_every)
    run_dir = site.work / name
    run_dir.mkdir(parents=True, exist_ok=True)
    config = onmt_config(site, run_dir, point, stopping(10**7, valid_every, save_every))
    log = run_dir / "train.log"
    run = timed([onmt_bin(site) / "onmt_train", "-config", config], log, timeout_s=minutes * 60, env=onmt_env(threads))
    if run["rc"] not in (0, 124):
        fail("bench-sweep", f"onmt_train failed (rc {run['rc']}): see {log}")
    models = onmt_models(run_dir, valid_every)
    run.update(onmt_speed(run_dir), settings=" ".join(point.flags), minutes=minutes, threads=threads)
    run |= {f"{kind}_model": f"{name}/{path.name}" for kind, path in models.items()}
    write_text(result, json.dumps(run, indent=1))
    return run


def onmt_decode(site: Site, model: Path, beam: int, threads: int) -> dict[str, Any]:
    """The test verses in units through `onmt_translate` at ``beam`` (output limit 110 units, as
    nmtkit's at the longest source; no length penalty): its own search time (`-report_time`, model
    loading apart), sentences, generated tokens (</s> included, as the others count), its outputs
    and peak RSS."""
    out = model.with_suffix(f".test-b{beam}.txt")
    cmd = [onmt_bin(site) / "onmt_translate", "-model", model, "-src", site.units / "test.bpe.en", "-output", out]
    cmd += ["-beam_size", beam, "-batch_size", 32, "-batch_type", "sents", "-max_length", 110, "-report_time"]
    log = out.with_suffix(".log")
    run = timed(cmd, log, env=onmt_env(threads))
    hyps = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    text = log.read_text(errors="replace") if log.exists() else ""
    total, rate = (
        re.search(rf"{what}: ([\d.]+)", text) for what in (r"Total translation time \(s\)", "Tokens per second")
    )
    if run["rc"] != 0 or not hyps or not total or not rate:
        fail("bench-sweep", f"onmt_translate failed (rc {run['rc']}): see {log}")
    words = sum(len(h.split()) for h in hyps)  # its rate's count: the units, </s> left out
    return {  # its time to a tenth of a second; from its rate, where it has one, to its digits
        "seconds": words / float(rate.group(1)) if words and float(rate.group(1)) else float(total.group(1)),
        "sentences": len(hyps),
        "tokens": words + len(hyps),
        "hyps": hyps,
        "peak_rss_mb": run["peak_rss_mb"],
    }
