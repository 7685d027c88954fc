"""``train --ema-decay``: the average is torch's EMA of the weights after each update, it never
changes the training itself, validation scores it, every checkpoint translates with it while
``last.pt`` keeps the training weights beside it, and a run resumes exactly with it (or turns it
on or off)."""

from __future__ import annotations

import json
from dataclasses import replace

import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.data.binarized import Corpus
from nmtkit.models.build import build_model
from nmtkit.train.ema import Average
from nmtkit.train.loop import train
from nmtkit.train.validate import validate
from tests.test_train import TINY, cfg, losses


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _dev_nll(run, step):
    return next(
        e["dev_nll"]
        for e in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
        if e.get("step") == step and "dev_nll" in e
    )


def test_the_average_is_decay_times_itself_plus_the_rest_times_the_weights_after_each_update():
    """D = 0.75 with its warm-up: min(D, (1 + t) / (10 + t)) after update t, 0.18, 0.25, 0.31 …, then D."""
    torch.manual_seed(0)
    model = build_model(replace(TINY, src_vocab=20, tgt_vocab=20, tie_embeddings=True))  # one tied weight
    average = Average(model, 0.75)
    want = {k: v.clone() for k, v in model.named_parameters()}
    for step in range(1, 30):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        average.prepare(step)
        average.update()
        d = min(0.75, (1 + step) / (10 + step))
        want = {k: d * want[k] + (1 - d) * p.detach() for k, p in model.named_parameters()}
    got = dict(average.model.named_parameters())
    assert all(torch.allclose(got[k], want[k], atol=1e-6) for k in want)
    assert not any(p.requires_grad for p in average.model.parameters())


def test_the_average_trains_nothing_validation_scores_it_and_last_pt_keeps_the_weights_beside_it(corpus, tmp_path):
    # on the CPU: the logged figure is held equal to a CPU recomputation
    common = dict(max_updates=6, valid_every=3, keep_validations=True, valid_bleu=False, device="cpu")
    train(corpus, tmp_path / "p", TINY, cfg(**common))
    train(corpus, tmp_path / "e", TINY, cfg(**common, ema_decay=0.5))
    assert losses(tmp_path / "e") == losses(tmp_path / "p")  # the average never feeds back
    plain, averaged = (checkpoint.load(tmp_path / r / "last.pt") for r in "pe")
    assert averaged.training.raw_weights is not None and plain.training.raw_weights is None
    assert _same(averaged.training.raw_weights, plain.weights)  # the training weights, to resume
    assert not _same(averaged.weights, plain.weights)  # the file's own: the average
    kept = checkpoint.load(tmp_path / "e" / "update-6.pt")
    assert _same(kept.weights, averaged.weights) and kept.training.raw_weights is None
    # the figure logged at update 6 is the average's, which a user scoring update-6.pt gets
    fresh = validate(checkpoint.model_of(kept, "update-6.pt"), Corpus(corpus), cfg(**common), torch.device("cpu"), [])
    assert fresh["dev_nll"] == _dev_nll(tmp_path / "e", 6) != _dev_nll(tmp_path / "p", 6)


def test_a_run_with_an_average_resumes_exactly(corpus, tmp_path, deterministic):
    common = dict(valid_every=3, valid_bleu=False, ema_decay=0.5)
    train(corpus, tmp_path / "a", TINY, cfg(max_updates=8, **common))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=4, **common))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=8, **common))
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    a, b = (checkpoint.load(tmp_path / r / "last.pt") for r in "ab")
    assert _same(a.weights, b.weights)
    assert a.training.raw_weights is not None and b.training.raw_weights is not None
    assert _same(a.training.raw_weights, b.training.raw_weights)


def test_an_average_turned_on_or_off_on_resume_starts_from_the_training_weights_or_leaves_them(
    corpus, tmp_path, deterministic, capfd
):
    common = dict(valid_every=3, valid_bleu=False)
    train(corpus, tmp_path / "p", TINY, cfg(max_updates=6, **common))
    # off after 4 updates: the training weights go on, not the average
    train(corpus, tmp_path / "off", TINY, cfg(max_updates=4, ema_decay=0.5, **common))
    train(corpus, tmp_path / "off", TINY, cfg(max_updates=6, **common))
    off, plain = (checkpoint.load(tmp_path / r / "last.pt") for r in ("off", "p"))
    assert _same(off.weights, plain.weights) and off.training.raw_weights is None
    # on after 4 updates: an average of the training weights from there, named in the log
    train(corpus, tmp_path / "on", TINY, cfg(max_updates=4, **common))
    capfd.readouterr()
    train(corpus, tmp_path / "on", TINY, cfg(max_updates=6, ema_decay=0.5, **common))
    assert "--ema-decay 0.5 (was 0.0)" in capfd.readouterr().err
    on = checkpoint.load(tmp_path / "on" / "last.pt")
    assert on.training.raw_weights is not None and _same(on.training.raw_weights, plain.weights)
    assert not _same(on.weights, plain.weights)


def test_the_decay_is_bounded(tmp_path):
    for decay in ("1", "-0.1"):
        done = CliRunner().invoke(
            main, ["train", str(tmp_path), "--save-dir", str(tmp_path / "x"), "--ema-decay", decay]
        )
        assert done.exit_code == 2 and "--ema-decay" in done.output, done.output
