"""What training logs at each validation is what the saved model of that update gives when a
user asks for it afresh: dev BLEU through ``nmtkit translate --beam 1`` and ``nmtkit score``,
dev NLL through ``nmtkit score -m``, local-p's window watch through a new validation.

A model trained from scratch in this process must report the same figures as the file it
saves; the cache of search's output weights once kept the first validation's copy while the
optimizer moved on, and every later dev BLEU was that of a half-stale model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.runtime import resolve_device
from nmtkit.data.binarized import Corpus
from nmtkit.models.config import model_config
from nmtkit.train.config import TrainConfig
from nmtkit.train.loop import train
from nmtkit.train.validate import validate
from tests.conftest import EN, FR, TINY_RNNSEARCH, needs_native_bf16, sized, write_pair
from tests.test_corpus import make_corpus

UPDATES, EVERY = 120, 20

MODELS = {
    "rnnsearch": model_config(**TINY_RNNSEARCH),
    "rnnencdec": model_config(arch="rnnencdec", **TINY_RNNSEARCH),
    # local-p with the paper's window (the watch reports where it sits) and input feeding
    "luong": sized("luong", TINY_RNNSEARCH, attention="local-p", score="general", input_feed=True, window_renorm=False),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Six training pairs; the five non-empty ones again as the dev set, so that models learn
    them and dev BLEU moves a long way between validations."""
    tmp = tmp_path_factory.mktemp("figures")
    write_pair(tmp / "raw" / "train", EN, FR)
    write_pair(tmp / "raw" / "valid", EN[:5], FR[:5])
    write_pair(tmp / "raw" / "test", EN[:2], FR[:2])
    make_corpus(tmp / "raw", tmp)
    return tmp


def _logged(run: Path) -> dict[int, dict[str, float]]:
    entries = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {e["step"]: e for e in entries if "dev_nll" in e}


def _user_bleu(model: Path, corpus: Path, out: Path) -> float:
    """Greedy translation of the dev source, then tokenized BLEU against the dev references:
    the commands a user runs, in Moses tokens as validation counts them."""
    runner = CliRunner()
    hyp = out / f"{model.stem}.hyp"
    done = runner.invoke(
        main,
        [
            "translate",
            "-m",
            str(model),
            str(corpus / "clean" / "valid.en"),
            "--tokenized",
            "--beam",
            "1",
            "-o",
            str(hyp),
            "--threads",
            "1",
            "-q",
        ],
    )
    assert done.exit_code == 0, done.output
    scored = runner.invoke(
        main, ["score", str(hyp), "-r", str(corpus / "bin" / "valid.fr.ref"), "--tokenized", "--output-format", "json"]
    )
    assert scored.exit_code == 0, scored.output
    return float(json.loads(scored.stdout)["systems"][0]["bleu_tok"])


def _user_nll(model: Path, corpus: Path) -> float:
    scored = CliRunner().invoke(
        main,
        [
            "score",
            "-m",
            str(model),
            "--data",
            str(corpus / "bin"),
            "--split",
            "valid",
            "--output-format",
            "json",
            "--threads",
            "1",
        ],
    )
    assert scored.exit_code == 0, scored.output
    return float(json.loads(scored.stdout)["corpus_nll"]["nll"])


@pytest.mark.parametrize("bf16", [False, pytest.param(True, marks=needs_native_bf16)], ids=["fp32", "bf16"])
@pytest.mark.parametrize("arch", list(MODELS))
def test_every_logged_dev_figure_is_that_of_the_saved_model(corpus, tmp_path, arch, bf16):
    run = tmp_path / "run"
    cfg = TrainConfig(
        optimizer="adam",
        lr=0.02,
        batch_size=6,
        pool=1,
        max_updates=UPDATES,
        valid_every=EVERY,
        log_every=EVERY,
        threads=1,
        patience=0,
        best_by="bleu",
        keep_validations=True,
        bf16=bf16,
    )
    train(corpus / "bin", run, MODELS[arch], cfg)
    logged = _logged(run)
    assert sorted(logged) == list(range(EVERY, UPDATES + 1, EVERY))
    bleus = {step: _user_bleu(run / f"update-{step}.pt", corpus, tmp_path) for step in logged}
    assert max(bleus.values()) - min(bleus.values()) > 10, bleus  # the models differ: a real check
    for step, entry in logged.items():
        saved = run / f"update-{step}.pt"
        assert entry["dev_bleu_tok"] == pytest.approx(bleus[step], abs=0.01), (step, entry, bleus)
        assert entry["dev_nll"] == pytest.approx(_user_nll(saved, corpus), rel=1e-5, abs=1e-4), step
        fresh = validate(
            checkpoint.model_of(checkpoint.load(saved), saved, resolve_device(cfg.device)),
            Corpus(corpus / "bin"),
            cfg,
            resolve_device(cfg.device),  # where training validated: a GPU's TF32 is not a CPU's float32
            checkpoint.load(saved).text.vocab["tgt"],
        )
        for key in ("dev_nll_token", "dev_pt_mean", "dev_pt_edge"):
            assert (key in entry) == (key in fresh), key
            if key in entry:
                assert entry[key] == pytest.approx(fresh[key], rel=1e-5, abs=1e-5), (step, key)
    if arch == "luong":
        assert "dev_pt_mean" in logged[EVERY]  # the watch was checked


def test_bf16_on_a_cpu_that_would_emulate_it_is_refused_in_one_line(corpus, tmp_path, monkeypatch):
    from nmtkit.core import runtime
    from nmtkit.core.machine import CPU

    monkeypatch.setattr(runtime, "this_cpu", lambda: CPU("an AVX2 part", flags=("avx2", "fma"), cores=2))
    done = CliRunner().invoke(
        main,
        [
            "train",
            str(corpus / "bin"),
            "--save-dir",
            str(tmp_path / "r"),
            "--arch",
            "luong",
            "--max-updates",
            "1",
            "--device",
            "cpu",
            "--bf16",
        ],
    )
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.strip().splitlines() == [
        "nmtkit train: error: --bf16 needs a CPU with native bfloat16 (AVX512-BF16 or AMX), which this one "
        "lacks; leave --bf16 off"
    ]
    assert not (tmp_path / "r").exists()
