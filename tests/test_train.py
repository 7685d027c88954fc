"""Training on a tiny corpus: it learns, it resumes exactly, its checkpoints are safe."""

import json

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.config import ModelConfig, TrainConfig
from nmtkit.errors import UserError
from nmtkit.train import train
from tests.test_corpus import make_corpus

class Evil:
    """Stands for any object a pickle would rebuild (and could run code while doing so)."""


TINY = ModelConfig(emb=16, hidden=16, align=16, maxout=16)


def cfg(**kw):
    base = dict(optimizer="adam", lr=0.01, batch_size=2, pool=2, valid_every=1000, log_every=1,
                valid_bleu=True, threads=1, patience=0)
    return TrainConfig(**{**base, **kw})


@pytest.fixture
def corpus(raw, tmp_path):
    make_corpus(raw, tmp_path)
    return tmp_path / "bin"


def losses(save_dir):
    return [json.loads(line)["train_nll"] for line in (save_dir / "metrics.jsonl").read_text().splitlines()
            if "train_nll" in line]


def test_exact_resume(corpus, tmp_path):
    train(corpus, tmp_path / "a", TINY, cfg(max_updates=8))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=4))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=8))
    assert len(losses(tmp_path / "a")) == 8
    assert losses(tmp_path / "a") == losses(tmp_path / "b")          # exactly, not approximately
    a = checkpoint.load(tmp_path / "a" / "last.pt")["weights"]
    b = checkpoint.load(tmp_path / "b" / "last.pt")["weights"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_overfits_a_small_corpus(corpus, tmp_path):
    state = train(corpus, tmp_path / "o", TINY, cfg(max_updates=300, batch_size=6, lr=0.02, log_every=50))
    assert state.step == 300
    assert losses(tmp_path / "o")[-1] < 0.05 * losses(tmp_path / "o")[0]


def test_checkpoint_is_self_contained_and_weights_only(corpus, tmp_path):
    train(corpus, tmp_path / "c", TINY, cfg(max_updates=2))
    ckpt = torch.load(tmp_path / "c" / "best.pt", weights_only=True)
    assert ckpt["format"] == "nmtkit-checkpoint"
    assert ckpt["corpus"]["vocab"]["tgt"][:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert ckpt["corpus"]["text"]["src"]["lang"] == "en" and ckpt["corpus"]["text"]["tgt"]["lang"] == "fr"
    assert ckpt["model"]["arch"] == "rnnsearch" and ckpt["train"]["progress"]["step"] == 2


def test_truncated_corrupt_and_pickled_checkpoints_are_refused(corpus, tmp_path):
    train(corpus, tmp_path / "c", TINY, cfg(max_updates=1))
    good = (tmp_path / "c" / "last.pt").read_bytes()
    (tmp_path / "t.pt").write_bytes(good[: len(good) // 2])
    with pytest.raises(UserError, match="truncated or corrupt"):
        checkpoint.load(tmp_path / "t.pt")
    (tmp_path / "g.pt").write_bytes(b"garbage" * 10)
    with pytest.raises(UserError, match="truncated or corrupt|not an nmtkit"):
        checkpoint.load(tmp_path / "g.pt")
    torch.save({"format": "nmtkit-checkpoint", "evil": Evil()}, tmp_path / "p.pt")
    with pytest.raises(UserError, match="holds objects other than tensors"):
        checkpoint.load(tmp_path / "p.pt")


def test_resuming_with_another_vocabulary_is_refused(raw, tmp_path):
    from nmtkit.binarize import binarize_corpus
    from nmtkit.build_vocab import build_vocab
    from nmtkit.config import VocabConfig
    make_corpus(raw, tmp_path)
    train(tmp_path / "bin", tmp_path / "run", TINY, cfg(max_updates=1))
    build_vocab(tmp_path / "clean" / "train", ("en", "fr"), tmp_path / "v2", VocabConfig(size=9))
    binarize_corpus({s: tmp_path / "clean" / s for s in ("train", "valid")}, ("en", "fr"),
                    tmp_path / "v2", tmp_path / "bin2")
    with pytest.raises(UserError, match="is not the one the checkpoint .* uses"):
        train(tmp_path / "bin2", tmp_path / "run", TINY, cfg(max_updates=2))


@pytest.mark.parametrize("encoder", ["paper", "cudnn"])
def test_train_cli(corpus, tmp_path, encoder):
    r = CliRunner().invoke(main, ["train", str(corpus), "--save-dir", str(tmp_path / "r"), "--preset", "tiny",
                                  "--max-updates", "2", "--batch-size", "2", "--threads", "1", "--encoder", encoder])
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "r" / "last.pt")["model"]["encoder"] == encoder
    assert (tmp_path / "r" / "last.pt").exists() and (tmp_path / "r" / "best.pt").exists()


def test_nan_loss_stops_naming_the_update_and_keeps_the_last_good_checkpoint(corpus, tmp_path, monkeypatch):
    from nmtkit.models.rnnsearch import RNNSearch
    real, updates = RNNSearch.output_nll, []

    def poisoned(model, t, tgt_out):
        loss = real(model, t, tgt_out)
        if model.training:
            updates.append(1)
            if len(updates) == 3:
                return loss * float("nan")
        return loss

    monkeypatch.setattr(RNNSearch, "output_nll", poisoned)
    with pytest.raises(UserError, match="loss became nan at update 3; .*last.pt holds the last good state"):
        train(corpus, tmp_path / "n", TINY, cfg(max_updates=5, valid_every=1))
    assert checkpoint.load(tmp_path / "n" / "last.pt")["train"]["progress"]["step"] == 2
