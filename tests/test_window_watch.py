"""Validation reports where local-p's window looks, and says when it has pinned to an edge."""

import json

import numpy as np
import pytest
import torch

from nmtkit.data.batching import collate
from nmtkit.models.attention import LuongAttention
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from nmtkit.train.config import TrainConfig
from nmtkit.train.loop import train
from nmtkit.train.window_watch import WindowWatch, stuck_message
from tests.test_corpus import make_corpus

SRC = [np.array([5, 6, 7, 8, 9]), np.array([5, 6]), np.array([7, 8, 9, 10, 11, 12, 13])]
TGT = [np.array([4, 5, 6]), np.array([7, 8, 9, 10, 11]), np.array([4])]


def local_p(**kw):
    return build_model(
        model_config(
            **{
                **dict(
                    arch="luong",
                    src_vocab=20,
                    tgt_vocab=20,
                    emb=8,
                    hidden=10,
                    align=7,
                    layers=1,
                    window=1,
                    attention="local-p",
                    dropout=0.0,
                ),
                **kw,
            }
        )
    ).eval()


def watched(model):
    batch = collate(SRC, TGT, np.arange(3))
    src_len, tgt_len = np.array([len(s) + 1 for s in SRC]), np.array([len(t) + 1 for t in TGT])
    with torch.no_grad(), WindowWatch(model) as window:
        model.teacher_forced(model.encode(batch["src"], batch["src_mask"]), batch["tgt_in"])
        window.take(src_len, tgt_len)
    return window


@pytest.mark.parametrize("input_feed", [True, False])  # one attention call per position, or one for all
def test_every_real_target_position_is_counted_once_and_padding_never(input_feed):
    window = watched(local_p(input_feed=input_feed))
    assert sum(len(r) for r in window.relative) == sum(len(t) + 1 for t in TGT)
    metrics = window.metrics()
    assert 0 <= metrics["dev_pt_mean"] <= 1 and 0 <= metrics["dev_pt_edge"] <= 1
    assert window.attention[0].seen is None  # recording ends with the block


def test_a_pinned_window_is_measured_and_reported(monkeypatch):
    monkeypatch.setattr(LuongAttention, "centre", lambda self, q, t, mask: torch.zeros(q.shape[:2]))
    metrics = watched(local_p()).metrics()
    assert metrics == {"dev_pt_mean": 0.0, "dev_pt_edge": 1.0}
    assert "at the source sentence's start for 100% of dev target words" in stuck_message(metrics)


def test_a_window_that_moves_along_the_sentence_is_not_reported(monkeypatch):
    # p_t = t + 1.5, kept inside the sentence: the middle words are far from both ends
    def along(self, q, t, mask):
        return torch.minimum(t.float() + 1.5, mask.sum(1, keepdim=True).float() - 1.5)

    monkeypatch.setattr(LuongAttention, "centre", along)
    metrics = watched(local_p()).metrics()
    assert metrics["dev_pt_edge"] < 0.5
    assert stuck_message(metrics) is None


def test_models_without_local_p_report_nothing():
    assert watched(local_p(attention="local-m")).metrics() == {}
    assert stuck_message({"dev_nll": 3.0}) is None


def test_validation_records_the_window_and_warns_when_it_is_stuck(raw, tmp_path, monkeypatch, capsys):
    make_corpus(raw, tmp_path)
    cfg = TrainConfig(
        optimizer="adam",
        lr=0.01,
        batch_size=2,
        pool=2,
        valid_every=1,
        log_every=1,
        max_updates=2,
        valid_bleu=True,
        threads=1,
        patience=0,
        device="cpu",
    )
    model_cfg = model_config(
        arch="luong", emb=8, hidden=8, align=8, layers=1, window=2, attention="local-p", dropout=0.0
    )
    train(tmp_path / "bin", tmp_path / "healthy", model_cfg, cfg)
    entries = [json.loads(line) for line in (tmp_path / "healthy" / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in entries if "dev_pt_mean" in e] == [1, 2]
    assert "no longer follows" not in capsys.readouterr().err  # p_t starts near S/2
    monkeypatch.setattr(LuongAttention, "centre", lambda self, q, t, mask: torch.zeros(q.shape[:2]))
    train(tmp_path / "bin", tmp_path / "stuck", model_cfg, cfg)
    assert capsys.readouterr().err.count("its window no longer follows the source") == 2
