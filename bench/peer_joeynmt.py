"""Joey NMT's side of ``bin/bench-sweep`` (:mod:`.bench_sweep`): its configuration on the demo's
units (written as JSON, which YAML reads as it is), its runs (a sweep point of so many updates, a
pick of so many minutes), their dev cross-entropy and speed read from its logs, and its decoding
of the test verses. Joey NMT 2.3.0 is in $BENCH_DIR/joeynmt/venv (bench/peers/install.sh joeynmt).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from nmtkit.data.binarized import Corpus
from nmtkit.data.vocab import SPECIALS

from .bench_common import Site, fail, json_of, timed, write_lines, write_text
from .peer_marian import finite
from .peer_recipes import Point

# Joey NMT 2.3.0's RNN configuration on the demo's units, at the demo's size: a bidirectional GRU
# encoder, a GRU decoder with Bahdanau attention and input feeding (Joey NMT's RNN), tied target
# embeddings, no dropout; batches of 80 verses of at most 50 units. The training section is the
# point's: JOEY_TRAINING below, then the point's settings over it. Embeddings drawn from N(0, 0.1²)
# rather than Joey NMT's default N(0, 0.01²): at 0.01 the GRUs' inputs (and, tied, the output
# layer's rows) are too small for the model to leave the unigram level in the bench's budget, as
# one batch trained alone shows (bench/peers/joey_probe.py one-batch; docs/benchmarks.md).
JOEY_MODEL = {
    "initializer": "xavier_uniform",
    "embed_initializer": "normal",
    "embed_init_weight": 0.1,
    "tied_softmax": True,
    "encoder": {
        "type": "recurrent",
        "rnn_type": "gru",
        "embeddings": {"embedding_dim": 256, "scale": False, "dropout": 0.0},
        "hidden_size": 256,
        "bidirectional": True,
        "dropout": 0.0,
        "num_layers": 1,
    },
    "decoder": {
        "type": "recurrent",
        "rnn_type": "gru",
        "embeddings": {"embedding_dim": 256, "scale": False, "dropout": 0.0},
        "hidden_size": 256,
        "dropout": 0.0,
        "hidden_dropout": 0.0,
        "num_layers": 1,
        "input_feeding": True,
        "init_hidden": "bridge",
        "attention": "bahdanau",
    },
}
JOEY_TRAINING = {
    "random_seed": 42,
    "batch_size": 80,
    "batch_type": "sentence",
    "normalization": "tokens",
    "epochs": 100,
    "logging_freq": 50,
    "eval_metrics": ["bleu"],
    "early_stopping_metric": "ppl",
    "keep_best_ckpts": 1,
    "shuffle": True,
    "overwrite": True,
    "print_valid_sents": [],
}
JOEY_ENV = {"PYTHONWARNINGS": "ignore"}


def joey_venv(site: Site) -> Path:
    return site.bench / "joeynmt" / "venv"


def vocab_files(site: Site, folder: str) -> dict[str, Path]:
    """nmtkit's two vocabularies as a peer's files under ``folder`` of the work directory: one
    unit a line, nmtkit's specials left out (Joey NMT and OpenNMT-py put their own first)."""
    out, corpus = site.work / folder, Corpus(site.data_bin)
    files = {lang: out / f"vocab.{lang}" for lang in ("en", "fr")}
    if all(f.exists() for f in files.values()):
        return files
    out.mkdir(parents=True, exist_ok=True)
    for lang, path in files.items():
        write_lines(path, [t for t in corpus.vocab(lang).tokens if t not in SPECIALS])
    return files


def settle(config: dict[str, Any], settings: list[str]) -> dict[str, Any]:
    """``config`` with ``section.key=value`` settings over it (values read as JSON where they are)."""
    for setting in settings:
        path, value = setting.split("=", 1)
        *sections, key = path.split(".")
        node = config
        for s in sections:
            node = node.setdefault(s, {})
        try:
            node[key] = json.loads(value)
        except json.JSONDecodeError:
            node[key] = value
    return config


def joey_config(site: Site, run_dir: Path, point: Point, more: list[str]) -> Path:
    """The configuration of one run into ``run_dir``/config.yaml."""
    vocab, d = vocab_files(site, "joeynmt-data"), site.units
    side = {"level": "word", "lowercase": False, "max_length": 50}
    config: dict[str, Any] = {
        "name": run_dir.name,
        "joeynmt_version": "2.3.0",
        "model_dir": str(run_dir / "model"),
        "use_cuda": False,
        "fp16": False,
        "random_seed": 42,
        "data": {
            "train": str(d / "train"),
            "dev": str(d / "valid"),
            "dataset_type": "plain",
            "src": {"lang": "en", "voc_file": str(vocab["en"]), **side},
            "trg": {"lang": "fr", "voc_file": str(vocab["fr"]), **side},
        },
        "testing": {
            "n_best": 1,
            "beam_size": 5,
            "beam_alpha": -1,  # no length penalty, as the others rank
            "batch_size": 32,
            "batch_type": "sentence",
            "max_output_length": 110,  # 2 x 50 + 10: nmtkit's limit at the longest source
        },
        "training": copy.deepcopy(JOEY_TRAINING),  # the point's settings go over these
        "model": copy.deepcopy(JOEY_MODEL),
    }
    path = run_dir / "config.yaml"
    write_text(path, as_yaml(settle(config, [*point.flags, *more])))
    return path


def as_yaml(config: dict[str, Any]) -> str:
    """``config`` as JSON that PyYAML reads back as written: YAML 1.1 takes ``1e-08`` for a string
    (its floats need a point), so each float is written with one (``1.0e-08``)."""

    def marked(node: Any) -> Any:  # floats as marked strings, unmarked after the dump
        if isinstance(node, dict):
            return {k: marked(v) for k, v in node.items()}
        if isinstance(node, list):
            return [marked(v) for v in node]
        return f"@float {node:.8e}@" if isinstance(node, float) else node

    return re.sub(r'"@float ([^@]+)@"', r"\1", json.dumps(marked(config), indent=1))


def validating(every: int) -> list[str]:
    """Validation every ``every`` updates, and the logging Joey NMT then requires (below the
    validation's interval and dividing it): every 50 updates where that fits, else every one."""
    log = 50 if every > 50 and every % 50 == 0 else 1
    return [f"training.validation_freq={every}", f"training.logging_freq={log}"]


def joey(site: Site, *args: object) -> list[object]:
    return [joey_venv(site) / "bin" / "python", "-m", "joeynmt", *args]


def joey_env(threads: int) -> dict[str, str]:
    return {**os.environ, **JOEY_ENV, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def joey_dev_ce(model_dir: Path) -> float | None:
    """The last dev cross-entropy per target unit in Joey NMT's validations.txt: the log of its
    perplexity (None: no validation, or not finite)."""
    path = model_dir / "validations.txt"
    found = re.findall(r"\bppl: ([-\w.+]+)", path.read_text(errors="replace") if path.exists() else "")
    ppl = finite(found[-1]) if found else None
    return math.log(ppl) if ppl is not None and ppl > 0 else None


def joey_speed(model_dir: Path) -> dict[str, Any]:
    """Updates and target tokens/s: the mean of its logged windows (``Tokens per Sec``). Its log
    names an update every ``logging_freq`` only; the checkpoint it saves as it stops (``<update>.ckpt``) names
    the last."""
    log = (model_dir / "train.log").read_text(errors="replace") if (model_dir / "train.log").exists() else ""
    rates = [float(r) for r in re.findall(r"Tokens per Sec:\s*([\d.]+)", log)]
    steps = [int(s) for s in re.findall(r"Step:\s*(\d+)", log)]
    steps += [int(p.stem) for p in model_dir.glob("*.ckpt") if p.stem.isdigit()]
    return {"updates": max(steps, default=0), "tgt_tok_per_s": sum(rates) / len(rates) if rates else None}


def joeynmt_sweep_point(site: Site, point: Point, run_dir: Path, updates: int, threads: int) -> dict[str, Any]:
    """Joey NMT trained ``updates`` updates with ``point``'s settings, validated at the last: its dev
    cross-entropy per target unit (the log of its dev perplexity)."""
    stop = [f"training.updates={updates}", *validating(updates)]
    log = run_dir.parent / f"{run_dir.name}.log"  # a name may hold a dot (lr 1.0)
    run = timed(joey(site, "train", joey_config(site, run_dir, point, stop), "--skip-test"), log, env=joey_env(threads))
    if run["rc"] != 0:
        fail("bench-sweep", f"joeynmt train failed (rc {run['rc']}): see {log}")
    return {
        "updates": joey_speed(run_dir / "model")["updates"],
        "dev_ce": joey_dev_ce(run_dir / "model"),
        "wall_s": run["wall_s"],
        "peak_rss_mb": run["peak_rss_mb"],
    }


def train_joeynmt(
    site: Site, minutes: float, threads: int, name: str, point: Point, valid_every: int = 200
) -> dict[str, Any]:
    """Joey NMT trained for ``minutes`` of wall time (`timeout -s INT`: it saves latest.ckpt as it
    stops; best.ckpt is its best validation's, every ``valid_every`` updates), its run and speed
    (kept)."""
    result = site.work / f"train-{name}.json"
    if (done := site.kept(result, minutes, threads)) is not None:
        return done
    run_dir = site.work / name
    run_dir.mkdir(parents=True, exist_ok=True)
    config = joey_config(site, run_dir, point, validating(valid_every))
    log = site.work / f"train-{name}.stdout"
    run = timed(
        joey(site, "train", config, "--skip-test"), log, timeout_s=minutes * 60, env=joey_env(threads), signal="INT"
    )
    if run["rc"] not in (0, 124):
        fail("bench-sweep", f"joeynmt train failed (rc {run['rc']}): see {log}")
    run.update(joey_speed(run_dir / "model"), settings=" ".join(point.flags), minutes=minutes, threads=threads)
    write_text(result, json.dumps(run, indent=1))
    return run


def joey_decode(site: Site, model: Path, beam: int, threads: int) -> dict[str, Any]:
    """The test verses in units through `joeynmt translate` (stdin to stdout) with ``model``'s run
    configuration at ``beam``: its outputs in units and the process's peak RSS (no speed: its
    time includes loading)."""
    run_dir = model.parent.parent if model.parent.name == "model" else model.parent
    config = json_of(run_dir / "config.yaml")
    config["testing"] |= {"beam_size": beam, "load_model": str(model)}
    decode_config = run_dir / f"decode-b{beam}.yaml"
    write_text(decode_config, as_yaml(config))
    with open(site.units / "test.bpe.en", encoding="utf-8") as source:
        done = subprocess.run(
            list(map(str, joey(site, "translate", decode_config))),
            stdin=source,
            capture_output=True,
            text=True,
            env=joey_env(threads),
        )
    hyps = done.stdout.splitlines()
    if done.returncode != 0 or not hyps:
        fail("bench-sweep", f"joeynmt translate failed: {done.stderr.strip()[-400:]}")
    return {"hyps": hyps}
