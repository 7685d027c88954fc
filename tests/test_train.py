"""Training on a tiny corpus: it learns, it resumes exactly, its checkpoints are safe."""

import json
import math
import os
import time
from dataclasses import replace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.errors import UserError
from nmtkit.data.binarized import Corpus
from nmtkit.models.config import model_config
from nmtkit.train import runlog
from nmtkit.train.config import TrainConfig
from nmtkit.train.loop import train
from tests.conftest import train_tiny
from tests.test_corpus import make_corpus


class Evil:
    """Stands for any object a pickle would rebuild (and could run code while doing so)."""


TINY = model_config(emb=16, hidden=16, align=16, maxout=16)


def cfg(**kw):
    base = dict(
        optimizer="adam",
        lr=0.01,
        batch_size=2,
        pool=2,
        valid_every=1000,
        log_every=1,
        valid_bleu=True,
        threads=1,
        patience=0,
    )
    return TrainConfig(**{**base, **kw})


def losses(save_dir):
    return [
        json.loads(line)["train_nll"]
        for line in (save_dir / "metrics.jsonl").read_text().splitlines()
        if "train_nll" in line
    ]


def test_exact_resume(corpus, tmp_path, deterministic):
    train(corpus, tmp_path / "a", TINY, cfg(max_updates=8))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=4))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=8))
    assert len(losses(tmp_path / "a")) == 8
    assert losses(tmp_path / "a") == losses(tmp_path / "b")  # exactly, not approximately
    a = checkpoint.load(tmp_path / "a" / "last.pt").weights
    b = checkpoint.load(tmp_path / "b" / "last.pt").weights
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_leaves_its_callers_threads_and_blas_as_they_were(corpus, tmp_path):
    """train(threads=1) from Python left torch at one thread after it returned (a GPU's TF32,
    which it sets there alone, is put back the same way)."""
    from nmtkit.core import blas

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        train(corpus, tmp_path / "t", TINY, cfg(max_updates=1, threads=1, logits_blas="numpy", device="cpu"))
        assert torch.get_num_threads() == 2 and blas.workers() == 0
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_overfits_a_small_corpus(corpus, tmp_path):
    state = train(corpus, tmp_path / "o", TINY, cfg(max_updates=300, batch_size=6, lr=0.02, log_every=50))
    assert state.step == 300
    assert losses(tmp_path / "o")[-1] < 0.05 * losses(tmp_path / "o")[0]


@pytest.mark.slow
def test_a_tiny_model_learns_with_a_shortlist_and_resumes_exactly(corpus, tmp_path, deterministic):
    vocab = len(Corpus(corpus).vocab("fr"))
    state = train(
        corpus,
        tmp_path / "s",
        TINY,
        cfg(max_updates=300, lr=0.02, log_every=50, valid_every=150, valid_bleu=False, shortlist=12),
    )
    assert state.step == 300
    assert losses(tmp_path / "s")[-1] < 0.1 * losses(tmp_path / "s")[0]
    dev = [
        json.loads(line)["dev_nll_token"]
        for line in (tmp_path / "s" / "metrics.jsonl").read_text().splitlines()
        if "dev_nll" in line
    ]
    assert vocab > 2 * 12 and dev[-1] < 0.1 * math.log(vocab)  # the full softmax learned too
    train(corpus, tmp_path / "a", TINY, cfg(max_updates=6, shortlist=12))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=3, shortlist=12))
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=6, shortlist=12))
    assert losses(tmp_path / "a") == losses(tmp_path / "b")


def test_kept_validations_are_weights_only_models_and_the_log_reads_back(corpus, tmp_path):
    from nmtkit.train.runlog import RunLog, run_summary

    train(corpus, tmp_path / "k", TINY, cfg(max_updates=5, valid_every=2, keep_validations=True, best_by="nll"))
    kept = sorted(p.name for p in (tmp_path / "k").glob("update-*.pt"))
    assert kept == ["update-2.pt", "update-4.pt", "update-5.pt"]  # every validation, and the last
    snap = checkpoint.load(tmp_path / "k" / "update-5.pt")
    last = checkpoint.load(tmp_path / "k" / "last.pt")
    assert not snap.training.resumable and last.training.resumable
    assert "optimizer" not in torch.load(tmp_path / "k" / "update-5.pt", weights_only=True)["training"]
    assert all(torch.equal(snap.weights[k], last.weights[k]) for k in last.weights)
    log = RunLog.read(tmp_path / "k")
    assert log.updates == 5 and [v["step"] for v in log.validations] == [2, 4, 5]
    assert all(0 < v["seconds"] <= log.seconds for v in log.validations)
    nll = {v["step"]: v["dev_nll"] for v in log.validations}
    best = checkpoint.load(tmp_path / "k" / "best.pt").training.progress.step
    assert nll[best] == min(nll.values())  # --best-by nll
    assert run_summary(tmp_path / "k").startswith("trained 5 updates in ")
    from nmtkit.core.machine import describe, machine

    assert f" on {describe(machine())}; best.pt" in run_summary(tmp_path / "k")  # the machine it ran on
    assert f"best.pt is update {best} (chosen by dev NLL" in run_summary(tmp_path / "k")
    # a stop between two log lines (Ctrl-C at update 7 of a run logging every 5th): last.pt's count
    stopped = checkpoint.load(tmp_path / "k" / "last.pt", lazy=False)
    stopped.training.progress.step, stopped.training.progress.seconds = 7, 90.0
    checkpoint.save(tmp_path / "k" / "last.pt", stopped)
    assert run_summary(tmp_path / "k").startswith("trained 7 updates in 1.5 minutes ")
    (tmp_path / "k" / "last.pt").write_bytes(b"damaged")  # the log's count, as before it was read
    assert run_summary(tmp_path / "k").startswith("trained 5 updates in ")
    # a run started over records the machine it runs on, not the earlier run's (its --threads, say)
    (tmp_path / "k" / "machine.json").write_text('{"cpu": "an earlier one", "cores": 999, "torch": "1.0"}\n')
    train(corpus, tmp_path / "k", TINY, cfg(max_updates=1, valid_every=1000), resume=False)
    assert f" on {describe(machine())}; best.pt" in run_summary(tmp_path / "k")


def _killed_at_first(monkeypatch, name: str):
    """checkpoint.save made to stop the process, as a kill would, at its first file ``name``;
    the real one, returned to be put back."""
    real, killed = checkpoint.save, []

    def save(path, ckpt):
        if path.name == name and not killed:
            killed.append(path)
            raise SystemExit("killed")
        real(path, ckpt)

    monkeypatch.setattr(checkpoint, "save", save)
    return real


def test_a_kept_model_a_crash_kept_from_the_disk_is_written_by_the_resumed_run(corpus, tmp_path, monkeypatch):
    """last.pt is written after a validation's other files: written before them, a kill between
    the two resumed after that validation, and its update-N.pt was never written."""
    _killed_at_first(monkeypatch, "update-4.pt")
    settings = cfg(max_updates=6, valid_every=2, keep_validations=True, best_by="nll")
    with pytest.raises(SystemExit):
        train(corpus, tmp_path / "k", TINY, settings)
    assert checkpoint.load(tmp_path / "k" / "last.pt").training.progress.step == 2
    train(corpus, tmp_path / "k", TINY, settings)
    kept = sorted(p.name for p in (tmp_path / "k").glob("update-*.pt"))
    assert kept == ["update-2.pt", "update-4.pt", "update-6.pt"]


@pytest.mark.parametrize("at", [4, 7], ids=["a-validation", "the-last-update"])
def test_a_signal_at_an_update_that_was_to_validate_leaves_the_validation_to_the_resumed_run(
    corpus, tmp_path, monkeypatch, deterministic, at
):
    """The resumed run validated at the next multiple of --valid-every: the stopped update's dev
    score, best.pt, the patience count and a plateau's rate were never what the uninterrupted
    run's were; stopped at the last update, the run was finished and never validated it at all."""
    import signal

    from nmtkit.core.errors import Interrupted
    from nmtkit.train.state import TrainState

    settings = cfg(
        max_updates=7, valid_every=2, best_by="nll", lr_decay="plateau", decay_patience=0, lr=0.05, warmup=20
    )
    train(corpus, tmp_path / "a", TINY, settings)
    tick = TrainState.tick

    def tick_then_signal(state):
        tick(state)
        if state.progress.step == at:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(TrainState, "tick", tick_then_signal)
    with pytest.raises(Interrupted):
        train(corpus, tmp_path / "b", TINY, settings)
    monkeypatch.setattr(TrainState, "tick", tick)
    assert checkpoint.load(tmp_path / "b" / "last.pt").training.progress.validation_owed
    # the resumed run killed after its owed validation's log line, before its last.pt: the next
    # resume validates again, and the line must not be there twice
    real = _killed_at_first(monkeypatch, "last.pt")
    with pytest.raises(SystemExit):
        train(corpus, tmp_path / "b", TINY, settings)
    monkeypatch.setattr(checkpoint, "save", real)
    assert checkpoint.load(tmp_path / "b" / "last.pt").training.progress.validation_owed
    train(corpus, tmp_path / "b", TINY, settings)

    def validations(run):
        return [(e["step"], e["epoch"], e["dev_nll"]) for e in runlog.entries(tmp_path / run) if "dev_nll" in e]

    assert validations("a") == validations("b") and [s for s, _, _ in validations("b")] == [2, 4, 6, 7]
    assert len({e for _, e, _ in validations("a")}) > 1  # the epochs are told apart: the line's epoch is checked
    for name in ("best.pt", "last.pt"):
        a, b = checkpoint.load(tmp_path / "a" / name), checkpoint.load(tmp_path / "b" / name)
        assert vars(a.training.progress) | {"seconds": 0, "validation_seconds": 0} == vars(b.training.progress) | {
            "seconds": 0,
            "validation_seconds": 0,
        }
        assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)
    # the rate of the last update, kept as the uninterrupted run keeps it: a resume that only
    # validated had saved this command's --lr
    rate = [checkpoint.load(tmp_path / r / "last.pt").training.optimizer["param_groups"][0]["lr"] for r in "ab"]
    assert rate[0] == rate[1] != settings.lr


def test_the_summary_names_dev_nll_when_no_dev_bleu_was_computed(corpus, tmp_path):
    from nmtkit.train.runlog import run_summary

    train(corpus, tmp_path / "n", TINY, cfg(max_updates=2, valid_every=2, valid_bleu=False))  # best_by: bleu
    assert "(chosen by dev NLL" in run_summary(tmp_path / "n")
    train(corpus, tmp_path / "b", TINY, cfg(max_updates=2, valid_every=2, valid_bleu=True, best_by="bleu"))
    from nmtkit.train.runlog import RunLog

    bleu = RunLog.read(tmp_path / "b").validations[-1]["dev_bleu_tok"]  # the figure it chose by, said first
    assert f"(chosen by dev BLEU {bleu:.2f}, greedy and tokenized; dev NLL " in run_summary(tmp_path / "b")


def test_checkpoint_is_self_contained_and_weights_only(corpus, tmp_path):
    train(corpus, tmp_path / "c", TINY, cfg(max_updates=2))
    raw = torch.load(tmp_path / "c" / "best.pt", weights_only=True)
    assert (raw["format"], raw["version"]) == ("nmtkit-checkpoint", checkpoint.VERSION)
    assert set(raw) == {"format", "version", "nmtkit", "model", "text", "training", "lexicon"}
    ckpt = checkpoint.load(tmp_path / "c" / "best.pt")
    assert ckpt.text.vocab["tgt"][:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert ckpt.text.text["src"].lang == "en" and ckpt.text.text["tgt"].lang == "fr"
    assert ckpt.model.arch == "rnnsearch" and ckpt.training.progress.step == 2


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
    # the object named, not torch's first lines, which say how to load the file unsafely
    with pytest.raises(
        UserError, match=r"holds objects other than tensors and plain values \(Unsupported global: .*Evil\)"
    ):
        checkpoint.load(tmp_path / "p.pt")
    torch.save({"format": "nmtkit-checkpoint", "evil": os.system}, tmp_path / "os.pt")  # a blocked module's words
    with pytest.raises(UserError, match=r"holds objects other than tensors .*GLOBAL .*system"):
        checkpoint.load(tmp_path / "os.pt")
    (tmp_path / "c" / "last.pt").write_bytes(good[: len(good) // 2])  # resuming a damaged run says the way on
    with pytest.raises(UserError, match=r"truncated or corrupt .*; --reset starts over \(with --init-from"):
        train(corpus, tmp_path / "c", TINY, cfg(max_updates=2))


def test_resuming_with_another_vocabulary_is_refused(raw, tmp_path):
    from nmtkit.data.binarize import binarize_corpus
    from nmtkit.data.build_vocab import build_vocab
    from nmtkit.data.settings import VocabConfig

    make_corpus(raw, tmp_path)
    train(tmp_path / "bin", tmp_path / "run", TINY, cfg(max_updates=1))
    build_vocab(tmp_path / "clean" / "train", ("en", "fr"), tmp_path / "v2", VocabConfig(size=9))
    binarize_corpus(
        {s: tmp_path / "clean" / s for s in ("train", "valid")}, ("en", "fr"), tmp_path / "v2", tmp_path / "bin2"
    )
    with pytest.raises(UserError, match="is not the one the checkpoint .* uses") as refused:
        train(tmp_path / "bin2", tmp_path / "run", TINY, cfg(max_updates=2))
    assert str(refused.value).endswith(f"another --save-dir, or start {tmp_path / 'run'} over (--reset)")


def test_resuming_over_another_training_split_of_the_same_vocabulary_is_refused(raw, tmp_path):
    """Its batch position was in another corpus: a smaller one's epoch ended before it, and the
    run spun without an update, deaf to SIGTERM; a finished run said it had nothing left to do."""
    from nmtkit.data.binarize import binarize_corpus

    make_corpus(raw, tmp_path)
    train(tmp_path / "bin", tmp_path / "run", TINY, cfg(max_updates=2))
    clean = tmp_path / "clean"
    binarize_corpus(
        {"train": clean / "valid", "valid": clean / "valid"}, ("en", "fr"), tmp_path / "vocab", tmp_path / "b2"
    )
    for budget in (4, 2):  # going on, and finished
        with pytest.raises(UserError, match=r"was trained on another training split than .*b2's: resume it"):
            train(tmp_path / "b2", tmp_path / "run", TINY, cfg(max_updates=budget))
    assert train(tmp_path / "bin", tmp_path / "run", TINY, cfg(max_updates=3)).step == 3  # its own goes on


def test_a_run_resumed_over_another_valid_split_chooses_best_pt_afresh_on_it(raw, tmp_path, capfd):
    """Its best dev score was another dev set's: kept, no model validated on this one could
    replace best.pt, and --patience would count against a score of another set."""
    import shutil

    from nmtkit.data.binarize import binarize_corpus

    make_corpus(raw, tmp_path)
    train(tmp_path / "bin", tmp_path / "run", TINY, cfg(max_updates=2, valid_every=1))
    last = tmp_path / "run" / "last.pt"
    ckpt = checkpoint.load(last, lazy=False)
    assert ckpt.training.valid_sha256 == Corpus(tmp_path / "bin").fingerprint("valid")
    chosen = checkpoint.load(tmp_path / "run" / "best.pt").training.progress.step
    ckpt.training.progress.best = 1e9  # no validation beats it: only a fresh choice replaces best.pt
    checkpoint.save(last, ckpt)
    ckpt.training.valid_sha256 = None  # a file from before the valid split was recorded
    for run in ("same", "older"):
        shutil.copytree(tmp_path / "run", tmp_path / run)
    checkpoint.save(tmp_path / "older" / "last.pt", ckpt)
    clean = tmp_path / "clean"
    binarize_corpus(
        {"train": clean / "train", "valid": clean / "test"}, ("en", "fr"), tmp_path / "vocab", tmp_path / "b2"
    )
    assert Corpus(tmp_path / "b2").fingerprint("train") == Corpus(tmp_path / "bin").fingerprint("train")
    capfd.readouterr()
    for data, run, afresh in (("b2", "run", True), ("bin", "same", False), ("b2", "older", False)):
        train(tmp_path / data, tmp_path / run, TINY, cfg(max_updates=3, valid_every=1))
        err = capfd.readouterr().err
        assert ("valid split is not the one the run in" in err) is afresh, err
        assert ("the next validation's model replaces best.pt (chosen on the other, at 1e+09)" in err) is afresh
        assert checkpoint.load(tmp_path / run / "best.pt").training.progress.step == (3 if afresh else chosen)
        assert (checkpoint.load(tmp_path / run / "last.pt").training.progress.best == 1e9) is not afresh


def test_a_batch_position_past_an_epoch_s_end_goes_on_at_the_next_epoch():
    from nmtkit.data.batching import Batches

    sizes = np.full(6, 3)
    batches = Batches(sizes, sizes, 2, 1, 0, 1)
    batches.load_state_dict({"epoch": 0, "index": 9, "seed": 1})
    first = next(iter(batches))
    assert (batches.drawn_epoch, batches.index) == (1, 1)
    assert np.array_equal(first, batches.epoch_batches(1)[0])


@pytest.mark.parametrize("encoder", ["paper", "cudnn"])
def test_train_cli(corpus, tmp_path, encoder):
    r = train_tiny(corpus, tmp_path / "r", "--max-updates", 2, "--encoder", encoder)
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "r" / "last.pt").model.encoder == encoder
    assert (tmp_path / "r" / "last.pt").exists() and (tmp_path / "r" / "best.pt").exists()


def test_train_cli_passes_the_cpu_recipe_flags(corpus, tmp_path):
    r = train_tiny(
        corpus, tmp_path / "r", "--max-updates", 2, "--sampled-softmax", 10, "--best-by", "nll", "--keep-validations"
    )
    assert r.exit_code == 0, r.output
    config = checkpoint.load(tmp_path / "r" / "last.pt").training.config
    assert (config.shortlist, config.best_by, config.keep_validations) == (10, "nll", True)
    assert (tmp_path / "r" / "update-2.pt").exists()


def test_nan_loss_stops_naming_the_update_and_keeps_the_last_good_checkpoint(corpus, tmp_path, monkeypatch):
    from nmtkit.models.rnnsearch import RNNSearch

    real, updates = RNNSearch.output_nll, []

    def poisoned(model, t, tgt_out, words=None, smoothing=0.0):
        loss = real(model, t, tgt_out, words, smoothing)
        if model.training:
            updates.append(1)
            if len(updates) == 3:
                return loss * float("nan")
        return loss

    monkeypatch.setattr(RNNSearch, "output_nll", poisoned)
    with pytest.raises(UserError, match="loss became nan at update 3; .*last.pt holds the last good state"):
        train(corpus, tmp_path / "n", TINY, cfg(max_updates=5, valid_every=1))
    assert checkpoint.load(tmp_path / "n" / "last.pt").training.progress.step == 2
    # a run that saved nothing before its NaN names no checkpoint, not another run's last.pt (--reset)
    updates.clear()
    with pytest.raises(UserError, match="loss became nan at update 3; no checkpoint was saved before it"):
        train(corpus, tmp_path / "n", TINY, cfg(max_updates=5, valid_every=1000), resume=False)


def test_a_run_its_patience_stopped_is_finished_when_run_again(corpus, tmp_path):
    """It trained on, a validation more at each run of the same command."""
    still = cfg(lr=0.0, valid_every=1, patience=1, max_updates=40, valid_bleu=False)  # no dev score ever improves
    first = train(corpus, tmp_path / "r", TINY, still)
    assert first.step == 2  # the first validation improves on nothing, the second does not improve
    again = train(corpus, tmp_path / "r", TINY, still)
    assert again.step == 2
    assert train(corpus, tmp_path / "r", TINY, replace(still, patience=2)).step == 3  # more patience goes on


def test_a_run_its_minutes_ended_is_finished_when_run_again(corpus, tmp_path, monkeypatch):
    """The final validation, shorter than the estimate that ended the run, replaced it: the same
    command run again found minutes left and trained on."""
    import time

    import nmtkit.train.loop as loop

    real, calls = loop.validate, []

    def first_slow(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the probe whose estimate ends the run
            time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "validate", first_slow)
    timed = cfg(max_minutes=0.05, valid_every=100000, valid_bleu=False)
    first = train(corpus, tmp_path / "r", TINY, timed)
    assert train(corpus, tmp_path / "r", TINY, timed).step == first.step


def test_dev_bleu_counts_against_the_real_text_not_unk_references(raw, tmp_path, monkeypatch):
    # a vocabulary of 40 entries leaves some dev words <unk>; a "model" that writes exactly the
    # binarized reference ids (with their <unk>s) must not get BLEU 100 for it
    import nmtkit.train.validate as training
    from nmtkit.data.binarized import Corpus
    from nmtkit.data.settings import VocabConfig
    from nmtkit.models.build import build_model
    from nmtkit.train.validate import validate

    make_corpus(raw, tmp_path, VocabConfig(size=40))
    corpus = Corpus(tmp_path / "bin")
    _, tgt = corpus.split("valid")
    assert any(1 in tgt[i] for i in range(len(tgt)))
    batches, real = [], training.scored_batches

    def watched(*args, **kw):
        for item in real(*args, **kw):
            batches.append(item[0])
            yield item

    class Echo:  # greedy's result: the references' own ids
        def __init__(self, model, enc):
            self.tokens = [list(map(int, tgt[int(i)])) for i in batches[-1]]

    monkeypatch.setattr(training, "scored_batches", watched)
    monkeypatch.setattr(training, "greedy", Echo)
    model = build_model(replace(TINY, **{"src_vocab": len(corpus.vocab("en")), "tgt_vocab": len(corpus.vocab("fr"))}))
    metrics = validate(model, corpus, cfg(), torch.device("cpu"), corpus.vocab("fr").tokens)
    refs = corpus.references("valid")
    assert refs is not None and "<unk>" not in " ".join(refs)
    assert 30 < metrics["dev_bleu_tok"] < 95
    manifest = json.loads((tmp_path / "bin" / "manifest.json").read_text())
    del manifest["splits"]["valid"]["reference"]  # a corpus binarized before the fix
    (tmp_path / "bin" / "manifest.json").write_text(json.dumps(manifest))
    old = validate(model, Corpus(tmp_path / "bin"), cfg(), torch.device("cpu"), corpus.vocab("fr").tokens)
    assert old["dev_bleu_tok"] == pytest.approx(100)  # what ids-as-references reward


def test_max_epochs_stops_after_exactly_that_many_epochs(corpus, tmp_path):
    from nmtkit.data.batching import Batches
    from nmtkit.data.binarized import Corpus

    src, tgt = Corpus(corpus).split("train")
    per_epoch = len(Batches(src.sizes, tgt.sizes, 2, 2, 50, 1234).epoch_batches(0))
    state = train(corpus, tmp_path / "e", TINY, cfg(max_epochs=2))
    assert state.step == 2 * per_epoch
    assert (checkpoint.load(tmp_path / "e" / "last.pt").training.batches or {})["epoch"] == 2
    logged = [json.loads(line) for line in (tmp_path / "e" / "metrics.jsonl").read_text().splitlines()]
    # counted from 1, as the progress line and the resume message count them
    epochs = [e["epoch"] for e in logged if "train_nll" in e]
    assert epochs == sorted(epochs) and epochs[0] == 1 and epochs[-1] == 2


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: would prove that a resumed GPU run restores the CUDA RNG state that dropout draws from",
)
def test_exact_resume_on_a_gpu_restores_the_cuda_rng(corpus, tmp_path, deterministic):
    # dropout on a GPU draws from the CUDA generator: a resumed run must go on from its state
    model = model_config(arch="luong", emb=12, hidden=12, align=12, layers=2, dropout=0.3)
    train(corpus, tmp_path / "a", model, cfg(max_updates=8, valid_every=4, valid_bleu=False))
    train(corpus, tmp_path / "b", model, cfg(max_updates=4, valid_every=4, valid_bleu=False))
    train(corpus, tmp_path / "b", model, cfg(max_updates=8, valid_every=4, valid_bleu=False))
    a, b = (checkpoint.load(tmp_path / r / "last.pt").training.rng[0] for r in "ab")
    assert torch.equal(a["cuda"], b["cuda"]) and torch.equal(a["torch"], b["torch"])
    assert losses(tmp_path / "a") == losses(tmp_path / "b")


def test_the_pairs_max_len_leaves_out_are_counted_in_the_data_bin_s_units(corpus, tmp_path, capfd):
    """--max-len compares the data-bin's lengths: subword units under BPE, where preprocess counted
    words, so a third of a corpus could go without a word."""
    from nmtkit.data.binarized import Corpus

    src, tgt = Corpus(corpus).split("train")
    sizes = np.maximum(src.sizes, tgt.sizes)
    limit = int(np.median(sizes))
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=1, max_len=limit))
    longer = int((sizes > limit).sum())
    assert longer and f"{longer:,} of {len(sizes):,} training pairs are longer than --max-len {limit} " in (
        capfd.readouterr().err
    )


@pytest.mark.parametrize(
    "model",
    [
        model_config(arch="luong", emb=12, hidden=12, align=12, layers=2, dropout=0.3),
        model_config(arch="rnnsearch", emb=12, hidden=12, align=12, maxout=12, weight_drop=0.3),
    ],
    ids=["luong-dropout", "rnnsearch-weight-drop"],
)
def test_save_every_leaves_a_last_pt_between_validations_that_resumes_exactly(
    model, corpus, tmp_path, deterministic, monkeypatch
):
    """A run killed outright resumes from the last --save-every save as from a validation's: its
    batches and its random state too (Luong et al.'s dropout and --weight-drop draw from it every
    update)."""
    import shutil

    from nmtkit.train import loop

    saved = []

    def keeping(state, name, rng, window=None, resumable=True):
        real_save(state, name, rng, window, resumable)
        saved.append((name, state.progress.step))
        shutil.copy(state.save_dir / name, tmp_path / f"{name}-{state.progress.step}")

    real_save = loop.save
    monkeypatch.setattr(loop, "save", keeping)
    train(corpus, tmp_path / "a", model, cfg(max_updates=7, save_every=3, valid_bleu=False))
    assert saved == [("last.pt", 3), ("last.pt", 6)]  # the end's is the validation's
    assert checkpoint.load(tmp_path / "last.pt-3").training.progress.step == 3
    monkeypatch.setattr(loop, "save", real_save)
    (tmp_path / "b").mkdir()
    shutil.copy(tmp_path / "last.pt-3", tmp_path / "b" / "last.pt")  # a kill -9 at update 4 or 5
    train(corpus, tmp_path / "b", model, cfg(max_updates=7, save_every=3, valid_bleu=False))
    assert losses(tmp_path / "a")[3:] == losses(tmp_path / "b")  # updates 4 to 7, dropout and all
    a = checkpoint.load(tmp_path / "a" / "last.pt").weights
    b = checkpoint.load(tmp_path / "b" / "last.pt").weights
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("how", ["sigterm", "save-every"])
def test_a_last_pt_saved_between_reports_keeps_their_losses_and_the_log_is_the_uninterrupted_runs(
    corpus, tmp_path, monkeypatch, deterministic, how
):
    """The resumed run's first line averaged only the updates since the resume (20.40 against
    19.64), and a SIGTERM between reports logged a line of its own, at an update no line is for."""
    import shutil
    import signal

    from nmtkit.core.errors import Interrupted
    from nmtkit.train.state import TrainState

    settings = cfg(max_updates=10, log_every=4, save_every=3 if how == "save-every" else 0)
    train(corpus, tmp_path / "a", TINY, settings)
    if how == "sigterm":
        tick = TrainState.tick

        def tick_then_signal(state):
            tick(state)
            if state.progress.step == 5:
                os.kill(os.getpid(), signal.SIGTERM)

        monkeypatch.setattr(TrainState, "tick", tick_then_signal)
        with pytest.raises(Interrupted):
            train(corpus, tmp_path / "b", TINY, settings)
        monkeypatch.setattr(TrainState, "tick", tick)
    else:  # a kill -9 at update 7 or 8: the last.pt of update 6, whose window holds updates 5 and 6
        shutil.copytree(tmp_path / "a", tmp_path / "b")
        shutil.copy(tmp_path / "a" / "last.pt", tmp_path / "final.pt")
        from nmtkit.train import loop

        real_save, copies = loop.save, []

        def keeping(state, name, rng, window=None, resumable=True):
            real_save(state, name, rng, window, resumable)
            if state.progress.step == 6:
                copies.append(window)
                shutil.copy(state.save_dir / name, tmp_path / "b" / "last.pt")

        monkeypatch.setattr(loop, "save", keeping)
        train(corpus, tmp_path / "c", TINY, settings)
        monkeypatch.setattr(loop, "save", real_save)
        assert copies and copies[0]["first"] == 5 and len(copies[0]["losses"]) == 2
    saved = checkpoint.load(tmp_path / "b" / "last.pt").training.window
    assert saved is not None and saved["first"] == 5
    train(corpus, tmp_path / "b", TINY, settings)

    def lines(run):
        return [
            (e["step"], e["train_nll"], e["train_nll_token"])
            for e in runlog.entries(tmp_path / run)
            if "train_nll" in e
        ]

    assert [s for s, _, _ in lines("a")] == [4, 8, 10] and lines("a") == lines("b")


def test_a_run_from_before_a_setting_it_never_reads_was_refused_still_resumes(corpus, tmp_path):
    """A Luong model with global attention trained with --window 5 (which it never reads): now that
    --window is refused there, the command without it must still go on from its last.pt."""
    tiny = {"emb": 12, "hidden": 12, "align": 12, "layers": 1}
    train(corpus, tmp_path / "r", model_config(arch="luong", attention="global", window=5, **tiny), cfg(max_updates=2))
    state = train(corpus, tmp_path / "r", model_config(arch="luong", attention="global", **tiny), cfg(max_updates=3))
    assert state.step == 3


def test_the_speed_logged_after_a_validation_leaves_the_validation_out(corpus, tmp_path, monkeypatch):
    """The window after a validation started its clock before it: a run validating every 2
    updates logged, after each validation, a small fraction of the speed between them."""
    from nmtkit.train import loop

    real = loop.validate_and_save
    monkeypatch.setattr(loop, "validate_and_save", lambda *a: time.sleep(2) or real(*a))
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=4, valid_every=2, log_every=2, valid_bleu=False))
    speeds = [e["updates_per_s"] for e in runlog.entries(tmp_path / "r") if "updates_per_s" in e]
    assert len(speeds) == 2 and speeds[1] > 3  # 2 updates of a tiny model, not 2 s of validation


def test_a_best_pt_without_its_last_pt_is_said_to_be_replaced(corpus, tmp_path, capfd):
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=2, valid_every=2))
    (tmp_path / "r" / "last.pt").unlink()
    capfd.readouterr()
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=2, valid_every=2))
    assert "best.pt has no last.pt to go on from (an earlier run's, or" in capfd.readouterr().err
    # --reset beside both: said as such (it said last.pt was missing)
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=2, valid_every=2), resume=False)
    err = capfd.readouterr().err
    assert "warning: --reset: this run starts over in" in err and "has no last.pt" not in err, err


def test_a_resume_that_chooses_the_best_by_another_score_takes_that_best_and_its_patience_from_the_log(
    corpus, tmp_path
):
    """A dev BLEU kept as the best beat every minus dev NLL: best.pt never changed again, and
    --patience stopped a run that was still improving."""
    from nmtkit.train import runlog

    run = tmp_path / "r"
    train(corpus, run, TINY, cfg(max_updates=6, valid_every=2))  # best by dev BLEU, the default
    progress = train(corpus, run, TINY, cfg(max_updates=8, valid_every=2, best_by="nll", patience=20))
    scores = [(-e["dev_nll"], e["step"]) for e in runlog.entries(run) if "dev_nll" in e]
    assert [step for _, step in scores] == [2, 4, 6, 8]
    best = max(range(4), key=lambda i: scores[i][0])
    assert progress.best == scores[best][0] < 0 and progress.bad_evals == 3 - best
    (run / "metrics.jsonl").unlink()  # a log lost: no validation to take a best from, not a traceback
    again = train(corpus, run, TINY, cfg(max_updates=10, valid_every=2, best_by="bleu", patience=20))
    assert again.bad_evals == 0 and again.best == next(e for e in runlog.entries(run) if "dev_nll" in e)["dev_bleu_tok"]


def test_a_token_cap_below_the_longest_target_is_warned_of(corpus, tmp_path, capfd):
    """Each longer sentence made a minibatch of its own, over the cap, while the log said the cap."""
    from nmtkit.data.binarized import Corpus as Binarized

    longest = int(Binarized(corpus).split("train")[1].sizes.max()) + 1
    train(corpus, tmp_path / "t", TINY, cfg(max_updates=1, max_tokens=longest))
    assert "--max-tokens" not in capfd.readouterr().err
    train(corpus, tmp_path / "s", TINY, cfg(max_updates=1, max_tokens=longest - 1))
    assert f"warning: --max-tokens {longest - 1} is below the longest target ({longest} units" in capfd.readouterr().err


def test_the_best_of_a_log_is_taken_from_what_a_resume_keeps_of_it(tmp_path):
    """An owed validation's line (a kill between it and its last.pt) is redone, not counted; a
    damaged line ends the log, as open_log cuts it; a missing log has no best."""
    from nmtkit.train import runlog

    lines = [{"step": 2, "dev_nll": 5.0}, {"step": 4, "dev_nll": 3.0}, {"step": 6, "dev_nll": 1.0}]
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    nll = lambda e: -e["dev_nll"]
    assert runlog.best_of(tmp_path, 6, nll) == (-1.0, 0, 6)
    assert runlog.best_of(tmp_path, 6, nll, owed=True) == (-3.0, 0, 4)
    log.write_text(json.dumps(lines[0]) + "\nnot a line\n" + json.dumps(lines[2]) + "\n", encoding="utf-8")
    assert runlog.best_of(tmp_path, 6, nll) == (-5.0, 0, 2)
    log.unlink()
    assert runlog.best_of(tmp_path, 6, nll) == (-float("inf"), 0, None)


def test_dev_bleu_makes_words_of_units_as_the_corpus_codes_say(tmp_path):
    """A word that starts with SentencePiece's mark, in a word-level or BPE corpus, was taken for a
    SentencePiece unit: the whole sentence ran together, and so did the dev BLEU."""
    from types import SimpleNamespace

    from nmtkit.text.bpe import SPM_HEADER, SPM_MARK
    from nmtkit.train.validate import _merger

    def corpus(codes):
        if codes is not None:
            (tmp_path / "codes").write_text(codes, encoding="utf-8")
        named = {"fr": None if codes is None else "codes"}
        return SimpleNamespace(manifest=SimpleNamespace(bpe_codes=named), tgt_lang="fr", path=tmp_path)

    units = ["la", f"{SPM_MARK}lune", "et@@", "oile"]
    assert _merger(corpus(None))(units) == units  # words: as they are
    assert _merger(corpus("#version: 0.2\nl a\n"))(units) == ["la", f"{SPM_MARK}lune", "etoile"]
    assert _merger(corpus(f"{SPM_HEADER}\nAAAA\n"))([f"{SPM_MARK}la", f"{SPM_MARK}lu", "ne"]) == ["la", "lune"]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda d: (d / "train.fr.bin").unlink(), "train.fr.bin: missing from the corpus directory"),
        (lambda d: (d / "train.en.idx").unlink(), "train.en.idx: missing from the corpus directory"),
        (lambda d: (d / "valid.fr.ref").unlink(), "valid.fr.ref: missing, where the manifest names it"),
        (  # a short reference: a KeyError at the first validation, after every update before it
            lambda d: (d / "valid.fr.ref").write_text("one line\n", encoding="utf-8"),
            "valid.fr.ref: 1 line, where the split has",
        ),
        (  # a long one: dev BLEU 0.000 at every validation
            lambda d: (d / "valid.fr.ref").write_text("a\n" * 999, encoding="utf-8"),
            "valid.fr.ref: 999 lines, where the split has",
        ),
    ],
)
def test_a_damaged_data_bin_is_refused_before_training_not_when_first_read(corpus, tmp_path, damage, said):
    """A missing train file was a traceback; a damaged reference failed or scored 0 at the first validation."""
    damage(corpus)  # the test's own copy
    args = ["train", str(corpus), "--save-dir", str(tmp_path / "r"), "--preset", "tiny", "--max-updates", "2"]
    r = CliRunner().invoke(main, [*args, "--batch-size", "2", "--threads", "1"])
    assert r.exit_code == 2 and said in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "r").exists()
