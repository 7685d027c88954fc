"""What makes training right and fast on GPUs, checked on the CPU: gradient accumulation, the
compiled step, checkpoint contents, device and process-group choices, a diverging process."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from nmtkit import checkpoint
from nmtkit.core.errors import UserError
from nmtkit.core.runtime import resolve_device
from nmtkit.data.batching import Batches, collate
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from nmtkit.train.config import TrainConfig
from nmtkit.train.loop import train
from nmtkit.train.pace import describe_batches
from nmtkit.train.parts import compiled_note
from tests.conftest import TINY_ADAM, sized
from tests.test_train import TINY
from tests.test_train import cfg as train_cfg

pytestmark = pytest.mark.gpu  # the GPU path, and the CPU tests that stand in for its CUDA ones

POISONED = Path(__file__).with_name("poisoned_train.py")  # train with one process's loss made NaN


def cfg(**kw):
    """test_train's settings, with the search's BLEU off and the CPU asked for by name."""
    return train_cfg(**{"valid_bleu": False, "device": "cpu", **kw})


def test_update_freq_two_gives_the_update_of_a_batch_twice_as_large(corpus, tmp_path):
    # 6 pairs: batches of 4 (2 accumulated passes of 2) against batches of 4 in one pass
    train(corpus, tmp_path / "acc", TINY, cfg(batch_size=2, update_freq=2, max_updates=3))
    train(corpus, tmp_path / "big", TINY, cfg(batch_size=4, max_updates=3))
    acc, big = (checkpoint.load(tmp_path / r / "last.pt") for r in ("acc", "big"))
    assert acc.training.batches == big.training.batches  # the same sentences, the same order
    # float32 sums in another order: equal to rounding, which Adam divides by the root of tiny gradients
    # (3 steps at 0.01; the 'small' run below differs by about 5e-2)
    for k in big.weights:
        assert torch.allclose(acc.weights[k], big.weights[k], atol=1e-5), k
    train(corpus, tmp_path / "small", TINY, cfg(batch_size=2, max_updates=3))  # not the same updates
    small = checkpoint.load(tmp_path / "small" / "last.pt")
    assert not all(torch.allclose(small.weights[k], big.weights[k], atol=1e-6) for k in big.weights)


def test_accumulation_cuts_each_minibatch_into_consecutive_pieces_shared_by_the_ranks():
    sizes = torch.arange(1, 25).numpy()
    one = Batches(sizes, sizes, batch_size=8, pool=3, max_len=0, seed=1)
    acc = Batches(sizes, sizes, batch_size=4, pool=3, max_len=0, seed=1, update_freq=2)
    assert [b.tolist() for b in one.epoch_batches(0)] == [b.tolist() for b in acc.epoch_batches(0)]
    batch = acc.epoch_batches(0)[0]
    assert [p.tolist() for p in acc.share(batch)] == [batch[:4].tolist(), batch[4:].tolist()]
    rank1 = Batches(sizes, sizes, batch_size=4, pool=3, max_len=0, seed=1, rank=1, world=2, update_freq=2)
    assert [p.tolist() for p in rank1.share(batch)] == [batch[1:4:2].tolist(), batch[5::2].tolist()]


def test_the_first_line_says_what_a_minibatch_is():
    assert describe_batches(TrainConfig(batch_size=80), 1) == "minibatches of 80 sentences"
    assert describe_batches(TrainConfig(batch_size=80, update_freq=2), 4) == (
        "minibatches of 160 sentences in total per update (4 processes taking 1/4 each, 2 accumulated "
        "passes of 80 sentences; about 20 sentences per process and pass)"
    )
    assert describe_batches(TrainConfig(max_tokens=6000, update_freq=4), 1) == (
        "minibatches of 24,000 target tokens in total per update (4 accumulated passes of 6,000 target tokens)"
    )


def test_best_pt_holds_what_translation_needs_and_last_pt_the_whole_training_state(corpus, tmp_path):
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=2, valid_every=2))
    best, last = (checkpoint.load(tmp_path / "r" / name) for name in ("best.pt", "last.pt"))
    assert best.training.optimizer is None and not best.training.rng and not best.training.resumable
    assert last.training.resumable and last.training.rng
    assert all(torch.equal(best.weights[k], last.weights[k]) for k in best.weights)
    assert (tmp_path / "r" / "best.pt").stat().st_size < 0.6 * (tmp_path / "r" / "last.pt").stat().st_size


def test_a_lazy_load_maps_the_file_and_reads_the_same_tensors(corpus, tmp_path):
    train(corpus, tmp_path / "r", TINY, cfg(max_updates=1, valid_every=1))
    lazy, eager = checkpoint.load(tmp_path / "r" / "last.pt"), checkpoint.load(tmp_path / "r" / "last.pt", lazy=False)
    assert all(torch.equal(lazy.weights[k], eager.weights[k]) for k in eager.weights)


# -- the compiled step --------------------------------------------------------------------------


def compiled_against_eager(arch, device="cpu", mode="default", shapes=((3, 5, 4), (2, 7, 6))):
    """The loss and gradients of the compiled step and of the eager one, on batches of these
    (sentences, source length, target length), each with padding."""
    torch.manual_seed(0)
    model_cfg = sized(arch, dict(src_vocab=13, tgt_vocab=11, emb=8, hidden=8, align=8, maxout=8))
    eager = build_model(model_cfg).to(device)
    fast = build_model(model_cfg).to(device)
    fast.load_state_dict(eager.state_dict())
    fast.compile_steps(mode)
    g = torch.Generator().manual_seed(1)
    for B, Tx, Ty in shapes:
        src = torch.randint(3, 13, (B, Tx), generator=g)
        src[0, -2:] = 0  # padding in the first sentence
        tgt = torch.randint(3, 11, (B, Ty + 1), generator=g)
        tgt[1, -2:] = 0
        src, tgt = src.to(device), tgt.to(device)
        results = []
        for model in (eager, fast):
            if mode == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()
            model.zero_grad()
            loss = model(src, src != 0, tgt[:, :-1], tgt[:, 1:]).loss
            loss.backward()
            results.append(
                (loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
            )
        yield results


def assert_same(runs):
    for (l_e, g_e), (l_f, g_f) in runs:
        assert torch.allclose(l_e, l_f, rtol=1e-5)
        assert g_e.keys() == g_f.keys()
        for name in g_e:
            assert torch.allclose(g_e[name], g_f[name], atol=1e-4), name


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_the_compiled_step_gives_the_eager_loss_and_gradients(arch):
    """Tolerance: 1e-5 relative on the loss and 1e-4 absolute on every gradient (float32; the
    compiled kernels sum in another order and compute tanh directly, not as 2σ(2x) − 1)."""
    pytest.importorskip("torch._inductor")
    assert_same(compiled_against_eager(arch))  # two shapes: one compilation serves both


@pytest.mark.slow
@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: would prove that the step replayed as "
    "CUDA graphs (reduce-overhead) gives the eager step's loss and gradients",
)
@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_the_step_replayed_as_cuda_graphs_gives_the_eager_loss_and_gradients(arch):
    """As above, on the GPU with torch.compile's reduce-overhead mode; each shape is run twice, so
    the second run replays the graphs recorded by the first. TF32 is off so that both sides
    compute in float32 (tolerances as above)."""
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        assert_same(compiled_against_eager(arch, "cuda", "reduce-overhead", shapes=((3, 8, 8), (2, 16, 8)) * 2))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


# -- static shapes for CUDA graphs: lengths padded to a multiple ------------------------------


def test_collate_pads_both_sides_to_the_multiple_asked():
    src = [np.array([5, 6, 7]), np.array([5])]
    tgt = [np.array([8] * 9), np.array([8, 9])]
    plain, padded = collate(src, tgt, np.arange(2)), collate(src, tgt, np.arange(2), multiple=8)
    assert plain["src"].shape == (2, 4) and plain["tgt_in"].shape == (2, 10)
    assert padded["src"].shape == (2, 8) and padded["tgt_in"].shape == padded["tgt_out"].shape == (2, 16)
    for key in plain:  # the same words, then padding only
        assert torch.equal(padded[key][:, : plain[key].shape[1]], plain[key]), key
    assert not padded["src_mask"][:, 4:].any() and (padded["tgt_out"][:, 10:] == 0).all()


@pytest.mark.parametrize(
    "model_cfg",
    [
        model_config(arch="rnnsearch", src_vocab=13, tgt_vocab=11, emb=8, hidden=8, align=8, maxout=8),
        model_config(arch="rnnsearch", src_vocab=13, tgt_vocab=11, emb=8, hidden=8, align=8, maxout=8, encoder="cudnn"),
        model_config(arch="rnnencdec", src_vocab=13, tgt_vocab=11, emb=8, hidden=8, align=8, maxout=8),
        model_config(
            arch="luong",
            src_vocab=13,
            tgt_vocab=11,
            emb=8,
            hidden=8,
            align=8,
            layers=2,
            attention="local-p",
            input_feed=True,
            reverse_source=True,
            dropout=0.0,
        ),
        model_config(
            arch="luong",
            src_vocab=13,
            tgt_vocab=11,
            emb=8,
            hidden=8,
            align=8,
            layers=1,
            attention="global",
            score="location",
            dropout=0.0,
        ),
    ],
    ids=["rnnsearch", "rnnsearch-cudnn", "rnnencdec", "luong-local-p", "luong-location"],
)
def test_padding_to_a_multiple_changes_neither_the_loss_nor_the_gradients(model_cfg):
    """Tolerance: 1e-6 relative on the loss, 1e-6 absolute on gradients (float32: only the
    order of sums may differ)."""
    torch.manual_seed(0)
    model = build_model(model_cfg)
    g = np.random.default_rng(3)
    src = [g.integers(3, 13, n) for n in (5, 3, 7)]
    tgt = [g.integers(3, 11, n) for n in (4, 6, 2)]
    results = []
    for multiple in (1, 8):
        batch = collate(src, tgt, np.arange(3), multiple=multiple)
        model.zero_grad()
        loss = model(batch["src"], batch["src_mask"], batch["tgt_in"], batch["tgt_out"]).loss
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (loss_1, grads_1), (loss_8, grads_8) = results
    assert torch.allclose(loss_1, loss_8, rtol=1e-6)
    assert grads_1.keys() == grads_8.keys()
    for name in grads_1:
        assert torch.allclose(grads_1[name], grads_8[name], atol=1e-6), name


@pytest.mark.slow
def test_training_with_cuda_graph_settings_runs_on_a_cpu_and_says_so(corpus, tmp_path, capsys):
    """On a CPU, torch.compile's reduce-overhead mode compiles without CUDA graphs: this checks
    the plumbing (mode, padding, the step marks), not the graphs."""
    pytest.importorskip("torch._inductor")
    settings = cfg(max_updates=3, compile=True, compile_mode="reduce-overhead", pad_to_multiple=8)
    state = train(corpus, tmp_path / "r", TINY, settings)
    assert state.step == 3
    assert "(compiled steps, mode reduce-overhead)" in capsys.readouterr().err
    assert compiled_note(settings) == " (compiled steps, mode reduce-overhead)"
    assert describe_batches(settings, 1) == "minibatches of 2 sentences; lengths padded to multiples of 8"
    windows = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    losses = [w["train_nll"] for w in windows if "train_nll" in w]
    assert len(losses) == 3 and all(np.isfinite(losses))


def test_compile_is_refused_for_a_model_without_a_step_to_compile():
    model = build_model(model_config(arch="luong", src_vocab=9, tgt_vocab=9, emb=4, hidden=4, align=4, layers=1))
    with pytest.raises(UserError, match="--compile: the luong model has no per-position step"):
        model.compile_steps()


# -- devices and processes --------------------------------------------------------------------


def test_more_processes_than_gpus_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(UserError, match=r"2 processes on this node but 1 CUDA GPU\(s\)"):
        resolve_device(None, local_rank=1, local_world=2)
    assert resolve_device(None, 0, 1) == torch.device("cuda:0")
    assert resolve_device("cpu", 1, 2) == torch.device("cpu")  # CPU processes: any number


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_ranks(corpus, tmp_path, hook: str, valid_every: int):
    """Two gloo processes started by hand (as torchrun would, without its restarts) training
    under ``poisoned_train.py``'s ``hook``: the processes and their (stdout, stderr)."""
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = {
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
            "CUDA_VISIBLE_DEVICES": "",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": "2",
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
        }
        cmd = [
            sys.executable,
            str(POISONED),
            hook,
            "train",
            str(corpus),
            "--save-dir",
            str(tmp_path / "ddp"),
            *TINY_ADAM,
            "--batch-size",
            "4",
            "--pool",
            "2",
            "--max-updates",
            "6",
            "--log-every",
            "3",
            "--valid-every",
            str(valid_every),
            "--no-valid-bleu",
            "--threads",
            "1",
            "--device",
            "cpu",
        ]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs, [p.communicate(timeout=240) for p in procs]


@pytest.mark.slow
@pytest.mark.parametrize(
    "poisoned, valid_every, said",
    [
        (2, 100, "no checkpoint was saved before it"),
        (99, 100, None),
        (5, 2, "last.pt holds the last good state"),  # rank 0 saved it: rank 1 must say so too
    ],
    ids=["nan-at-update-2", "no-nan", "nan-after-a-validation"],
)
def test_a_nan_on_one_rank_ends_every_rank_with_exit_2(corpus, tmp_path, poisoned, valid_every, said):
    """Two gloo processes started by hand (as torchrun would, without its restarts): rank 1's loss
    turns NaN at update 2; both stop at the next report with the same one line, none hangs. Ended
    by the error or by the budget, neither reaches the interpreter's teardown, where the group that
    DDP keeps alive can abort it (SIGABRT, once in a CI run)."""
    procs, outs = _two_ranks(corpus, tmp_path, f"1:{poisoned}", valid_every)
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == (2 if said else 0), err[-2000:]
        assert ("loss became nan at update 2" in err) == (poisoned == 2)
        assert said is None or f"loss became nan at update {poisoned}; " in err and said in err, err[-2000:]
        assert "Traceback" not in err
        assert "the interpreter's teardown" not in err
    assert json.loads((tmp_path / "ddp" / "machine.json").read_text())  # rank 0 had started the run


@pytest.mark.slow
@pytest.mark.parametrize("killed, valid_every", [(1, 2), (0, 2), (1, 100)])
def test_a_process_killed_under_the_job_ends_the_other_with_one_line(corpus, tmp_path, killed, valid_every):
    """SIGKILL (the out-of-memory killer's) on one rank at update 5: the other's collective fails
    with gloo's "Connection closed by peer", which was a traceback of 40 lines; it is one line
    saying what the same command does, status 1."""
    procs, outs = _two_ranks(corpus, tmp_path, f"{killed}:5:kill", valid_every)
    assert procs[killed].returncode == -9
    p, (_, err) = procs[1 - killed], outs[1 - killed]
    line = (
        "nmtkit train: error: another process of this 2-process job has gone (its connection closed under a collective)"
    )
    assert p.returncode == 1 and "Traceback" not in err and err.count(line) == 1, err[-2000:]
    then = f"resumes from {tmp_path / 'ddp' / 'last.pt'}" if valid_every == 2 else "nothing of this run was saved"
    assert then in err.splitlines()[-1], err[-2000:]


def test_resume_with_accumulation_is_exact(corpus, tmp_path, deterministic):
    whole = cfg(batch_size=2, update_freq=2, max_updates=4, valid_every=2)
    train(corpus, tmp_path / "a", TINY, whole)
    train(corpus, tmp_path / "b", TINY, cfg(batch_size=2, update_freq=2, max_updates=2, valid_every=2))
    train(corpus, tmp_path / "b", TINY, whole)
    a, b = (checkpoint.load(tmp_path / r / "last.pt") for r in "ab")
    assert a.training.progress.step == b.training.progress.step == 4
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)


def test_only_a_peer_s_closed_connection_in_a_joined_group_is_a_job_failure(monkeypatch):
    """Anything else keeps its traceback: a collective's size mismatch is a bug, not a lost peer."""
    from nmtkit.core import distributed
    from nmtkit.train.loop import _peer_gone

    gone = RuntimeError("[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:40090")
    assert not distributed.peer_gone(gone)  # no group joined
    monkeypatch.setattr(distributed, "_JOINED", [distributed.Place(0, 4, 0, 4)])
    assert distributed.peer_gone(gone)
    assert not distributed.peer_gone(RuntimeError("Gloo allreduce: sizes differ"))
    assert not distributed.peer_gone(ValueError("Connection closed by peer"))
    said = str(_peer_gone(4, None, resume=True))
    assert "this 4-process job has gone" in said and said.endswith("the same command starts it over")


def test_a_run_started_over_is_not_said_to_resume_when_a_peer_has_gone(tmp_path):
    """Under --reset the same command starts over again: resuming wants it left out."""
    from types import SimpleNamespace

    from nmtkit.train.loop import _peer_gone

    state = SimpleNamespace(last_kept=True, save_dir=tmp_path)
    assert str(_peer_gone(2, state, resume=True)).endswith(f"the same command resumes from {tmp_path / 'last.pt'}")
    assert str(_peer_gone(2, state, resume=False)).endswith(f"without --reset resumes from {tmp_path / 'last.pt'}")
    state.last_kept = False  # an earlier run's last.pt is not this one's
    assert str(_peer_gone(2, state, resume=False)).endswith(
        "nothing of this run was saved: the same command starts it over"
    )
