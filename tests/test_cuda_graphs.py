"""The whole update as a CUDA graph (``train --cuda-graphs``, nmtkit.train.graphs): what can be held
on any machine (a padded batch's loss and gradients equal to the unpadded
batch's, an update body that never reads a tensor on the host, the padded run equal to the eager
one), and on a GPU, replayed updates equal to eager ones."""

from __future__ import annotations

import contextlib
import inspect
import json
import re

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nmtkit import checkpoint
from nmtkit.data.batching import collate
from nmtkit.data.vocab import PAD
from nmtkit.models import fused
from nmtkit.models.build import build_model
from nmtkit.models.fused import use_fused
from nmtkit.models.host_free import host_free
from nmtkit.train.graphs import padded
from nmtkit.train.loop import train
from tests.conftest import TINY_RNNSEARCH, sized
from tests.test_train import cfg, losses

VOCAB = 40
FAMILIES = {
    "rnnsearch": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB),
    "rnnencdec": sized("rnnencdec", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB),
    "rnnsearch-head": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, alignment_head=True),
    "rnnsearch-coverage": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, coverage="neural"),
    # targets turned around before the padding: the same batches as the eager path's
    "rnnsearch-r2l": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, right_to_left=True),
    # torch's GRU, which packs the batch by lengths read on the host, except in the graph's update
    "rnnsearch-cudnn": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, encoder="cudnn"),
    "rnnencdec-cudnn": sized("rnnencdec", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, encoder="cudnn"),
    # --weight-drop's masks are drawn by the weights' shapes: a padded batch draws the same ones
    "rnnsearch-weight-drop": sized("rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, weight_drop=0.3),
    "rnnsearch-cudnn-weight-drop": sized(
        "rnnsearch", TINY_RNNSEARCH, src_vocab=VOCAB, tgt_vocab=VOCAB, encoder="cudnn", weight_drop=0.3
    ),
    # without dropout: its masks are drawn by shape, so a padded batch draws other ones
    "luong": sized(
        "luong",
        TINY_RNNSEARCH,
        src_vocab=VOCAB,
        tgt_vocab=VOCAB,
        attention="local-p",
        max_src=40,
        dropout=0.0,
        layers=2,
    ),
}


# Adam divides each gradient by its running scale: where a gradient is rounding noise (the
# attention's, while v_a is still near its zero start) a rounding difference becomes a difference
# in the step itself, a fraction of the rate (0.01)
ADAM_NOISE = 1e-4


# A moving rate (the warm-up, then the cosine decay: the rate a graph reads on the device, written
# in place before each replay), label smoothing, and batches of 4 of the 6 training pairs: every
# epoch's second batch holds 2, padded to its shape with empty sentences. make paper's recipe.
SCHEDULE = {"warmup": 4, "lr_decay": "cosine", "label_smoothing": 0.1, "batch_size": 4}


def extra_settings(extra: str, device: str = "cpu") -> dict[str, object]:
    """A run's settings for a case's ``+extra``: ``fused`` (:func:`fused_sgd`), ``ema`` (an average
    of the weights) or ``schedule`` (:data:`SCHEDULE`)."""
    return {"fused": fused_sgd("fused", device), "ema": {"ema_decay": 0.8}, "schedule": SCHEDULE, "": {}}[extra]


def fused_sgd(fused_steps: str, device: str = "cpu") -> dict[str, object]:
    """A run's settings for ``+fused`` (none without it): the hand-written passes, on a CPU with
    SGD. There their ∂v_a is 2 Σ_j ∂e_j σ_j, whose part Σ_j ∂e_j is zero but leaves rounding as
    large as the gradient itself while v_a is near its zero start (a GPU's energies read tanh); Adam
    scales such a gradient up to a full step, so two orders of summation (a padded batch's and the
    unpadded one's) part by a fraction of the rate within a few updates, as the passes and the
    reference loop do. SGD keeps rounding at its size."""
    if not fused_steps:
        return {}
    return {"fused_steps": True, **({"optimizer": "sgd"} if device == "cpu" else {})}


def assert_same_weights(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    """Every weight within rounding (and Adam's noise) of ``want``'s; a failure names each weight
    that is not, with its largest difference and the first rows that hold one past the tolerance."""
    far = []
    assert got.keys() == want.keys()
    for k, w in want.items():
        assert got[k].shape == w.shape, k
        diff = (got[k] - w).abs()
        past = (~(diff <= ADAM_NOISE + 1e-4 * w.abs())).reshape(w.shape[0] if w.dim() else 1, -1).any(1)  # NaN too
        if past.any():
            far.append(f"{k}: {diff.max().item():.2e} (rows {past.nonzero().flatten().tolist()[:10]})")
    assert not far, "; ".join(far)


def _batch(seed: int, sentences: int, links: bool = False) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    src = [rng.integers(4, VOCAB, rng.integers(1, 9)) for _ in range(sentences)]
    tgt = [rng.integers(4, VOCAB, rng.integers(1, 9)) for _ in range(sentences)]
    pairs = [
        np.stack([np.arange(min(len(s), len(t))), np.arange(min(len(s), len(t)))], 1).ravel() for s, t in zip(src, tgt)
    ]
    return collate(src, tgt, np.arange(sentences), 1, pairs if links else None)


def _loss_and_grads(model, batch, guided: bool, hostless: bool = False):
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)  # the same --weight-drop masks for each batch
    with host_free() if hostless else contextlib.nullcontext():
        out = model(batch["src"], batch["src_mask"], batch["tgt_in"], batch["tgt_out"], None, 0.1, batch.get("guide"))
    loss = out.loss + (out.align_loss if guided else 0)
    loss.backward()
    return (
        loss.detach(),
        out.nll.detach(),
        {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
    )


@pytest.mark.parametrize(
    "family",
    [
        *FAMILIES,
        *(
            f"{f}+fused"
            for f in ("rnnsearch", "rnnencdec", "rnnsearch-head", "rnnsearch-cudnn", "rnnsearch-weight-drop")
        ),
    ],
)
def test_a_batch_padded_to_its_shape_gives_the_unpadded_loss_and_gradients(family):
    """Longer lengths and empty sentences added, computed as the graph's update computes it (with
    no value read on the host: no rows dropped, no batch packed): the same loss, NLL and gradients
    as the unpadded batch computed eagerly, to rounding; ``+fused``: both through the recurrences'
    hand-written passes (--fused-steps)."""
    torch.manual_seed(0)
    family, _, fused_steps = family.partition("+")
    model = build_model(FAMILIES[family])
    model.train()
    use_fused(model, bool(fused_steps))
    guided = not family.startswith("rnnencdec")
    batch = _batch(1, 5, links=guided)
    loss, nll, grads = _loss_and_grads(model, batch, guided)
    bigger = padded(batch, 8, batch["src"].shape[1] + 7, batch["tgt_in"].shape[1] + 5)
    assert bigger["src"].shape[0] == 8 and (bigger["tgt_out"][5:] == 0).all() and bigger["src_mask"][5:, 0].all()
    loss2, nll2, grads2 = _loss_and_grads(model, bigger, guided, hostless=True)
    torch.testing.assert_close(loss2, loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(nll2, nll, rtol=1e-5, atol=1e-5)
    assert grads.keys() == grads2.keys()
    for name in grads:
        torch.testing.assert_close(grads2[name], grads[name], rtol=1e-4, atol=1e-6, msg=name)


class _HostReadsRefused(TorchDispatchMode):
    """Every operator that hands the host a value computed on the device raises: a scalar read,
    a shape that depends on values (``nonzero``, a boolean index), a batch packed by lengths."""

    ATEN = torch.ops.aten
    REFUSED = frozenset(
        (ATEN._local_scalar_dense, ATEN.nonzero, ATEN.masked_select, ATEN._pack_padded_sequence, ATEN.unique_dim)
        + (ATEN._unique2, ATEN.repeat_interleave, ATEN.bincount)
    )
    INDEXED = frozenset((ATEN.index, ATEN.index_put, ATEN.index_put_, ATEN._index_put_impl_))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func.overloadpacket
        by_mask = op in self.INDEXED and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None
        )
        # a Python number put by index (``x[i] = 1.0``) comes as a 0-dim CPU tensor, copied from the host
        by_number = op in self.INDEXED and op is not self.ATEN.index and args[2].dim() == 0
        if op in self.REFUSED or by_mask or by_number:
            raise AssertionError(f"the update read a tensor on the host: {func}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _host_reads_refused():
    """Every read of a tensor's value on the host (what waits for a GPU) raises: from Python, and
    from the operators that do it (:class:`_HostReadsRefused`), in the backward pass too."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("the update read a tensor on the host")

    names = ("item", "tolist", "__bool__", "__float__", "__int__")
    saved = {n: getattr(torch.Tensor, n) for n in names}
    try:
        for n in names:
            setattr(torch.Tensor, n, refuse)
        with _HostReadsRefused():
            yield
    finally:
        for n, f in saved.items():
            setattr(torch.Tensor, n, f)


def test_the_guard_refuses_what_reads_the_device_on_the_host():
    x, mask = torch.randn(2, 3, 4), torch.tensor([[True, True, False], [True, False, False]])
    gru = torch.nn.GRU(4, 5, batch_first=True)

    class ReadsInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, y):
            return y.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * (grad != 0).nonzero().shape[0]

    outside = ReadsInBackward.apply(gru(x)[0]).sum()  # its forward reads nothing
    with _host_reads_refused(), pytest.raises(AssertionError, match="host"):
        outside.backward()  # the backward pass is watched too
    for read in (
        lambda: x.sum().item(),
        lambda: (x > 0).nonzero(),
        lambda: x[mask],
        lambda: x.__setitem__((torch.arange(2), slice(None), torch.tensor([1, 2])), 1.0),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([2, 1]), batch_first=True),
    ):
        with _host_reads_refused(), pytest.raises(AssertionError, match="host"):
            read()
    with _host_reads_refused():  # what a padded, masked update does is allowed
        (gru(x)[0] * mask.unsqueeze(-1)).sum().backward()
        torch.nn.utils.clip_grad_norm_(gru.parameters(), 1.0)


def test_the_alignment_head_s_guided_loss_reads_nothing_on_the_host():
    """The guide of an alignment head (its unlinked words linked to </s>) is computed on the
    device alone, forward and backward: --guided-alignment-weight keeps the graph's update."""
    torch.manual_seed(0)
    model = build_model(FAMILIES["rnnsearch-head"]).train()
    batch = _batch(1, 5, links=True)
    batch["guide"][0, 1] = 0  # a word the aligner left unlinked
    bigger = padded(batch, 8, batch["src"].shape[1] + 3, batch["tgt_in"].shape[1] + 2)
    with _host_reads_refused(), host_free():
        out = model(bigger["src"], bigger["src_mask"], bigger["tgt_in"], bigger["tgt_out"], None, 0.1, bigger["guide"])
        (out.loss + out.align_loss).backward()
    assert out.align_loss is not None and float(out.align_loss.detach()) > 0


@pytest.mark.parametrize("optimizer", ["adam", "adadelta", "sgd"])
@pytest.mark.parametrize(
    "family", ["rnnsearch-head", "rnnencdec", "luong", "rnnsearch-cudnn", "rnnsearch-cudnn-weight-drop"]
)
def test_the_update_body_never_reads_a_tensor_on_the_host(corpus, tmp_path, family, optimizer):
    """What a graph captures (forward, backward, clipping, the optimizer's step) reads no value
    on the host: a capture would fail there, and an eager GPU update would wait at each read."""
    from nmtkit.train import graphs

    bodies = []
    real = graphs.WholeUpdate.body

    def watched(self, inputs, *args, **kwargs):
        if not bodies:  # the first update: the optimizer's state is made, as in a warm-up
            bodies.append(real(self, inputs, *args, **kwargs))
            return bodies[-1]
        with _host_reads_refused():
            bodies.append(real(self, inputs, *args, **kwargs))
        return bodies[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(graphs.WholeUpdate, "body", watched)
        asked = cfg(max_updates=4, cuda_graphs=True, optimizer=optimizer, valid_bleu=False, device="cpu")
        train(corpus, tmp_path / "g", FAMILIES[family], asked)  # the vocabulary sizes: the corpus's
    assert len(bodies) == 4


@pytest.mark.parametrize("family", ["rnnsearch-head", "rnnencdec", "rnnsearch-cudnn", "rnnsearch-weight-drop"])
def test_the_fused_passes_in_the_update_body_never_read_a_tensor_on_the_host(corpus, tmp_path, family):
    """--fused-steps in the graph's update: the hand-written passes run there and read no value on
    the host, forward or backward (their CPU branches here: a GPU's differ in tanh's kernel and
    in allocating the attention's energies afresh, neither of which reads the host)."""
    from nmtkit.train import graphs

    ran, real, bodies = [], fused.AttentiveGRU.forward, []
    real_body = graphs.WholeUpdate.body

    def watched(self, inputs, *args, **kwargs):
        with _host_reads_refused() if bodies else contextlib.nullcontext():  # the first makes Adam's state
            bodies.append(real_body(self, inputs, *args, **kwargs))
        return bodies[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(graphs.WholeUpdate, "body", watched)
        mp.setattr(fused.AttentiveGRU, "forward", staticmethod(lambda *a: ran.append(1) or real(*a)))
        mp.setattr(
            fused.MaskedGRU, "forward", staticmethod(lambda *a, _f=fused.MaskedGRU.forward: ran.append(2) or _f(*a))
        )
        asked = cfg(max_updates=3, cuda_graphs=True, fused_steps=True, valid_bleu=False, device="cpu")
        train(corpus, tmp_path / "g", FAMILIES[family], asked)
    assert len(bodies) == 3
    assert set(ran) == ({2} if family == "rnnencdec" else {1} if family.endswith("cudnn") else {1, 2})


@pytest.mark.parametrize(
    "family",
    [
        "rnnsearch",
        "luong",
        "rnnsearch-cudnn",
        "rnnsearch+fused",
        "rnnsearch-cudnn-weight-drop",
        "rnnsearch+schedule",
        "rnnsearch-r2l",
    ],
)
def test_the_padded_whole_update_trains_as_the_eager_update_does(corpus, tmp_path, family):
    """On a CPU, --cuda-graphs runs the padded update eagerly: after the same updates, the same
    losses and weights as the unpadded eager path, to rounding."""
    family, _, extra = family.partition("+")
    model, common = FAMILIES[family], dict(max_updates=6, valid_bleu=False, device="cpu") | extra_settings(extra)
    train(corpus, tmp_path / "eager", model, cfg(**common))  # the vocabulary sizes: the corpus's
    train(corpus, tmp_path / "graphs", model, cfg(**common, cuda_graphs=True))
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)
    a, b = (checkpoint.load(tmp_path / r / "last.pt").weights for r in ("eager", "graphs"))
    assert_same_weights(b, a)


def test_the_average_of_the_weights_is_taken_in_the_update_body_without_reading_the_host(corpus, tmp_path):
    """--ema-decay with --cuda-graphs: the average's step is part of what a graph captures, reads
    nothing on the host, and averages as the eager path does."""
    from nmtkit.train import graphs

    bodies, real = [], graphs.WholeUpdate.body

    def watched(self, inputs, *args, **kwargs):
        with _host_reads_refused() if bodies else contextlib.nullcontext():  # the first makes Adam's state
            bodies.append(real(self, inputs, *args, **kwargs))
        return bodies[-1]

    common = dict(max_updates=6, valid_bleu=False, device="cpu", ema_decay=0.8)
    train(corpus, tmp_path / "eager", FAMILIES["rnnsearch"], cfg(**common))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(graphs.WholeUpdate, "body", watched)
        train(corpus, tmp_path / "graphs", FAMILIES["rnnsearch"], cfg(**common, cuda_graphs=True))
    assert len(bodies) == 6
    a, b = (checkpoint.load(tmp_path / r / "last.pt") for r in ("eager", "graphs"))
    assert a.training.raw_weights is not None and b.training.raw_weights is not None
    assert_same_weights(b.weights, a.weights)
    assert_same_weights(b.training.raw_weights, a.training.raw_weights)
    assert any(not torch.equal(b.weights[k], b.training.raw_weights[k]) for k in b.weights)


@pytest.mark.parametrize("by", ["sentences", "tokens"])
def test_each_batch_without_a_length_limit_gets_a_shape_that_holds_it(corpus, tmp_path, by, capfd):
    """No --max-len: the shapes reach the corpus's longest pair; every batch of three epochs, as
    collate widens it, gets a shape at least as large, and its padded update runs. The share of
    real target positions the run logs is the first epoch's, counted afresh from its batches."""
    from nmtkit.train import graphs

    seen, real, tokens, first = [], graphs.WholeUpdate.key, [], []

    def key(self, batch, sentences):
        got = real(self, batch, sentences)
        seen.append((got, sentences, batch["src"].shape[1], batch["tgt_in"].shape[1]))
        tokens.append(int((batch["tgt_out"] != PAD).sum()))
        first[:] = [len(self.state.batches.epoch_batches(0))]
        return got

    batches = {"sentences": {"batch_size": 3}, "tokens": {"max_tokens": 30}}[by]
    asked = cfg(max_epochs=3, max_len=0, cuda_graphs=True, valid_bleu=False, device="cpu", **batches)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(graphs.WholeUpdate, "key", key)
        train(corpus, tmp_path / "g", FAMILIES["rnnsearch"], asked)
    assert len(seen) > 3
    assert all(shape is not None for shape, _, _, _ in seen)
    assert all(rows >= n and src >= s and tgt >= t for (rows, src, tgt), n, s, t in seen)
    epoch = range(first[0])
    share = sum(tokens[i] for i in epoch) / sum(seen[i][0][0] * seen[i][0][2] for i in epoch)
    logged = re.search(r"([0-9.]+)% of the target positions an epoch computes", capfd.readouterr().err)
    assert logged and float(logged.group(1)) == pytest.approx(100 * share, abs=0.05)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: replays captured CUDA graphs")
@pytest.mark.parametrize(
    "family",
    [
        "rnnsearch-head",
        "rnnencdec",
        "rnnsearch-cudnn",
        "luong",
        "rnnsearch-head+fused",
        "rnnencdec+fused",
        "rnnsearch+ema",
        "rnnsearch+schedule",
        "rnnsearch-r2l",
    ],
)
def test_replayed_updates_give_the_eager_updates_parameters(corpus, tmp_path, family, monkeypatch):
    """``+fused``: both runs through the recurrences' hand-written passes (--fused-steps);
    ``+ema``: both keep an average of the weights (--ema-decay), the graph's in its replays;
    ``+schedule``: a rate that moves at every update and batches padded with empty sentences."""
    from nmtkit.train import graphs

    captured, real = [], graphs.WholeUpdate.record
    monkeypatch.setattr(graphs.WholeUpdate, "record", lambda self, *a: captured.append(a) or real(self, *a))
    family, _, extra = family.partition("+")
    model = FAMILIES[family]
    common = dict(max_updates=16, valid_bleu=False, device="cuda", tf32=False)
    common |= extra_settings(extra, "cuda")
    if family == "luong" or model.right_to_left:
        # Adam makes rounding a step where a gradient nearly cancels (on a CPU, noise of 1e-7 of a
        # weight's largest gradient parts any of these models' Adam updates past the tolerance), and
        # other kernels round otherwise: Luong's eager encoder is cuDNN's LSTM, the graph's the masked
        # loop; the right-to-left model's attention parted so on an H200 (two rows of W_a and of U_a's
        # bias, by 2.0e-4), where the left-to-right cases held under Adam. The paper's SGD keeps
        # rounding at its size (test_sgd_holds_the_luong_models_rounding_within_the_tolerance_and_adam_does_not)
        common |= {"optimizer": "sgd", "lr": 1.0}
    train(corpus, tmp_path / "eager", model, cfg(**common))
    train(corpus, tmp_path / "graphs", model, cfg(**common, cuda_graphs=True))
    assert captured  # shapes met more than WARMUP times were captured, and replayed from then on
    logged = [json.loads(line) for line in (tmp_path / "graphs" / "metrics.jsonl").read_text().splitlines()]
    assert sum(e.get("graphs_captured", 0) for e in logged) == len(captured)
    busy = [e["gpu_busy_share"] for e in logged if "gpu_busy_share" in e]  # the replayed updates' windows
    assert busy and all(0 < b <= 1 for b in busy)
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)
    a, b = (checkpoint.load(tmp_path / r / "last.pt") for r in ("eager", "graphs"))
    assert_same_weights(b.weights, a.weights)
    if extra == "ema":
        assert b.training.raw_weights is not None and a.training.raw_weights is not None
        assert_same_weights(b.training.raw_weights, a.training.raw_weights)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: replays captured CUDA graphs")
def test_guided_alignment_of_an_alignment_head_is_replayed_as_the_eager_updates(raw, tmp_path, monkeypatch):
    """An alignment head trained on links: every shape met often enough is captured (a read of the
    host in the guide's </s> links would refuse them all), and the graphs log the eager losses."""
    from nmtkit.train import graphs
    from tests.test_guided_alignment import linked_corpus

    captured, real = [], graphs.WholeUpdate.record
    monkeypatch.setattr(graphs.WholeUpdate, "record", lambda self, *a: captured.append(a) or real(self, *a))
    data = linked_corpus(raw, tmp_path)
    common = dict(max_updates=16, valid_bleu=False, device="cuda", tf32=False, guided_alignment_weight=0.5)
    common |= {"optimizer": "sgd", "lr": 1.0}  # rounding kept at its size (as for Luong's model above)
    train(data, tmp_path / "eager", FAMILIES["rnnsearch-head"], cfg(**common))
    train(data, tmp_path / "graphs", FAMILIES["rnnsearch-head"], cfg(**common, cuda_graphs=True))
    assert captured
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)


@pytest.mark.gpu
def test_sgd_holds_the_luong_models_rounding_within_the_tolerance_and_adam_does_not(corpus, tmp_path, monkeypatch):
    """Why the replay test trains Luong's model with SGD at rate 1: noise of 1e-7 of each weight's
    largest gradient on its nonzero gradients (rounding, as other kernels sum) parts Adam's 16
    updates from the noiseless ones past the tolerance, and SGD's not; noise of 1e-3 (a wrong
    gradient) parts SGD's past it too, so the test still sees one."""
    from nmtkit.train import state as state_module

    real, gen, noise = state_module.build_model, torch.Generator().manual_seed(1), [0.0]

    def noisy(model_cfg):
        model = real(model_cfg)
        for p in model.parameters():
            p.register_hook(lambda g: g + noise[0] * g.abs().max() * torch.randn(g.shape, generator=gen) * (g != 0))
        return model

    monkeypatch.setattr(state_module, "build_model", noisy)

    def parted(optimizer, lr, amount):
        common = dict(max_updates=16, valid_bleu=False, device="cpu", optimizer=optimizer, lr=lr)
        runs = []
        for name, noise[0] in (("plain", 0.0), ("noisy", amount)):
            train(corpus, tmp_path / f"{optimizer}-{amount}-{name}", FAMILIES["luong"], cfg(**common))
            runs.append(checkpoint.load(tmp_path / f"{optimizer}-{amount}-{name}" / "last.pt").weights)
        try:
            assert_same_weights(runs[1], runs[0])
        except AssertionError:
            return True
        return False

    assert parted("adam", 0.01, 1e-7) and not parted("sgd", 1.0, 1e-7) and parted("sgd", 1.0, 1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: captures bf16 updates under autocast")
def test_bf16_with_the_passes_is_captured_and_trains_as_eager_bf16(corpus, tmp_path, monkeypatch):
    """The bench's bf16 cell of update-graph+fused: the passes under the GPU's autocast are
    captured and replayed, and the run's losses stay within bfloat16's rounding (2%) of the eager
    bf16 run's."""
    from nmtkit.train import graphs

    captured, real = [], graphs.WholeUpdate.record
    monkeypatch.setattr(graphs.WholeUpdate, "record", lambda self, *a: captured.append(a) or real(self, *a))
    model = FAMILIES["rnnsearch-head"]
    common = dict(max_updates=16, valid_bleu=False, device="cuda", bf16=True, fused_steps=True)
    train(corpus, tmp_path / "eager", model, cfg(**common))
    train(corpus, tmp_path / "graphs", model, cfg(**common, cuda_graphs=True))
    assert captured
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=0.02)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: streams and pinned memory are a GPU's")
def test_eager_updates_share_a_side_stream_and_replays_read_pinned_memory(corpus, tmp_path, monkeypatch):
    """The warm-ups and every update of a shape never captured run on one side stream (the
    caching allocator reuses a block only on its own stream), and the batches a replay reads come
    through pinned memory (from pageable memory the copy would wait for the queued replay)."""
    from nmtkit.train import graphs

    streams, pinned, real_body, real_pin = set(), [], graphs.WholeUpdate.body, torch.Tensor.pin_memory

    def pin(t, *args):  # counted where a replay's batch is copied, not where a shape's buffers are made
        if inspect.stack()[1].function == "run":
            pinned.append(1)
        return real_pin(t, *args)

    def body(self, inputs, capturing=False, **kwargs):
        if not capturing:
            streams.add(torch.cuda.current_stream().cuda_stream)
        return real_body(self, inputs, capturing, **kwargs)

    monkeypatch.setattr(graphs.WholeUpdate, "body", body)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    train(
        corpus, tmp_path, FAMILIES["rnnsearch"], cfg(max_updates=16, valid_bleu=False, device="cuda", cuda_graphs=True)
    )
    assert len(streams) == 1 and torch.cuda.default_stream().cuda_stream not in streams
    assert pinned


def test_what_keeps_the_eager_update_says_why_and_gets_an_optimizer_that_is_not_capturable():
    from types import SimpleNamespace

    from nmtkit.train.state import eager_reason, graphed

    def asked(**kw):
        return cfg(cuda_graphs=True, **kw)

    gpu = SimpleNamespace(device=torch.device("cuda"), many=False)
    assert eager_reason(asked(), many=False) is None
    assert "DDP" in eager_reason(asked(), many=True)
    assert "--update-freq" in eager_reason(asked(update_freq=2), many=False)
    assert "--sampled-softmax" in eager_reason(asked(shortlist=100), many=False)
    # the optimizer is built capturable only for an update that is captured
    assert graphed(asked(), gpu) and not graphed(asked(update_freq=2), gpu)
    assert not graphed(asked(), SimpleNamespace(device=torch.device("cuda"), many=True))
    assert not graphed(asked(), SimpleNamespace(device=torch.device("cpu"), many=False))


def test_a_length_multiple_is_refused_beside_the_fitted_shapes():
    """--cuda-graphs pads to the shapes it fits, so --pad-to-multiple would be read by nothing."""
    from nmtkit.cli.train_settings import train_settings
    from nmtkit.core.errors import UserError

    with pytest.raises(UserError, match="--pad-to-multiple: --cuda-graphs pads"):
        train_settings("rnnsearch", "tiny", "appendix-b", {"cuda_graphs": True, "pad_to_multiple": 8}, {"cuda_graphs"})
    got = train_settings("rnnsearch", "tiny", "appendix-b", {"cuda_graphs": True, "pad_to_multiple": 1}, set())[1]
    assert got.cuda_graphs and got.pad_to_multiple == 1


def test_a_padded_run_resumes_exactly(corpus, tmp_path, deterministic):
    """Stopped and resumed (its shapes met again from nothing), a --cuda-graphs run goes on as if
    uninterrupted; the scheduled rate, saved as a number, is read back as the run keeps it."""
    common = dict(valid_bleu=False, cuda_graphs=True, warmup=6, valid_every=4, device="cpu")  # the rate scheduled
    train(corpus, tmp_path / "a", FAMILIES["rnnsearch"], cfg(max_updates=8, **common))
    train(corpus, tmp_path / "b", FAMILIES["rnnsearch"], cfg(max_updates=4, **common))
    saved = checkpoint.load(tmp_path / "b" / "last.pt").training.optimizer
    assert all(isinstance(g["lr"], float) for g in saved["param_groups"])
    train(corpus, tmp_path / "b", FAMILIES["rnnsearch"], cfg(max_updates=8, **common))
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    a, b = (checkpoint.load(tmp_path / r / "last.pt").weights for r in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: captures the update again after a resume")
def test_a_run_resumed_on_a_gpu_captures_again_and_goes_on_as_the_uninterrupted_one(corpus, tmp_path, monkeypatch):
    """Stopped at a checkpoint and resumed, a --cuda-graphs run on a GPU captures its shapes anew
    and logs the uninterrupted run's losses and ends at its weights, to rounding (so without
    deterministic kernels, whose sorted scatters may wait for the host and refuse every shape)."""
    from nmtkit.train import graphs

    captured, real = [], graphs.WholeUpdate.record
    monkeypatch.setattr(graphs.WholeUpdate, "record", lambda self, *a: captured.append(a) or real(self, *a))
    common = dict(valid_bleu=False, cuda_graphs=True, valid_every=8, device="cuda", tf32=False)
    train(corpus, tmp_path / "a", FAMILIES["rnnsearch"], cfg(max_updates=24, **common))
    train(corpus, tmp_path / "b", FAMILIES["rnnsearch"], cfg(max_updates=8, **common))
    before = len(captured)
    train(corpus, tmp_path / "b", FAMILIES["rnnsearch"], cfg(max_updates=24, **common))
    assert len(captured) > before  # the resumed run's own graphs
    assert losses(tmp_path / "b") == pytest.approx(losses(tmp_path / "a"), rel=1e-4)
    a, b = (checkpoint.load(tmp_path / r / "last.pt").weights for r in "ab")
    assert_same_weights(b, a)


def test_a_state_saved_by_a_capturable_optimizer_steps_on_a_cpu():
    """A GPU run's --cuda-graphs optimizer saves capturable=True and a number for its rate; a run
    that resumes it eagerly on a CPU keeps its own kind (Adadelta refuses capturable there)."""
    from nmtkit.train.optimizer import load_optimizer

    param = torch.nn.Parameter(torch.ones(3))
    saved = torch.optim.Adadelta([param], lr=1.0).state_dict()
    saved["param_groups"][0]["capturable"] = True
    plain = torch.optim.Adadelta([param], lr=1.0)
    plain.load_state_dict(saved)
    param.grad = torch.ones(3)
    with pytest.raises((AssertionError, RuntimeError), match="capturable"):  # torch asserts it
        plain.step()
    opt = torch.optim.Adadelta([param], lr=1.0)
    load_optimizer(opt, saved)
    opt.step()
    assert opt.param_groups[0]["capturable"] is False and isinstance(opt.param_groups[0]["lr"], float)
    assert not torch.equal(param.detach(), torch.ones(3))


def test_a_state_saved_without_graphs_is_stepped_on_the_device_by_a_capturable_optimizer():
    """An eager run's Adadelta keeps its step counts on the host; resumed with --cuda-graphs, they
    go to the parameters' device (the meta device stands for a GPU here), where a capturable step
    reads them, and the rate stays the tensor on the device that the graph's step reads."""
    from nmtkit.train.optimizer import load_optimizer, place_step_counts

    param = torch.nn.Parameter(torch.ones(3))
    eager = torch.optim.Adadelta([param], lr=1.0)
    param.grad = torch.ones(3)
    eager.step()
    on_device = torch.nn.Parameter(torch.ones(3, device="meta"))
    rate = torch.tensor(1.0, device="meta")
    resumed = torch.optim.Adadelta([torch.nn.Parameter(torch.ones(3))], lr=1.0, capturable=True)
    resumed.param_groups[0] |= {"params": [on_device], "lr": rate}  # as on a GPU: torch reads a rate on meta
    plain = torch.optim.Adadelta([on_device], lr=1.0)
    plain.load_state_dict(eager.state_dict())
    assert plain.state[on_device]["step"].device.type == "cpu"  # torch's loading leaves it there
    load_optimizer(resumed, eager.state_dict())
    assert resumed.state[on_device]["step"].device.type == "meta"
    assert resumed.state[on_device]["step"].dtype == torch.float32
    assert resumed.param_groups[0]["capturable"] and resumed.param_groups[0]["lr"] is rate
    # a fused step reads them on the device, whatever the saving run's kind
    fused = torch.optim.Adam([torch.nn.Parameter(torch.ones(3))], lr=1.0, fused=True)
    fused.param_groups[0]["params"] = [on_device]  # built on the CPU: torch 2.4 refuses a fused one on meta
    fused.state[on_device]["step"] = torch.tensor(3.0, device="meta")
    place_step_counts(fused)
    assert fused.state[on_device]["step"].device.type == "meta"


def test_a_resumed_optimizer_keeps_this_runs_settings_and_the_saved_runs_moments():
    """torch's loading brings back the saved groups' rate and Adadelta's rho and eps; this run's
    stand (the command's), and the moments are the saved run's."""
    from nmtkit.train.optimizer import load_optimizer

    param = torch.nn.Parameter(torch.ones(3))
    before = torch.optim.Adadelta([param], lr=1.0, rho=0.95, eps=1e-6)
    param.grad = torch.full((3,), 2.0)
    before.step()
    opt = torch.optim.Adadelta([param], lr=0.5, rho=0.9, eps=1e-8)
    load_optimizer(opt, before.state_dict())
    group = opt.param_groups[0]
    assert (group["lr"], group["rho"], group["eps"]) == (0.5, 0.9, 1e-8)
    assert torch.equal(opt.state[param]["square_avg"], before.state[param]["square_avg"])
    assert float(opt.state[param]["step"]) == 1


ON_A_GPU = pytest.param(
    "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: replays the update")
)


@pytest.mark.gpu
@pytest.mark.parametrize("device", ["cpu", ON_A_GPU])
def test_an_eager_runs_adadelta_resumed_with_graphs_goes_on_as_the_eager_run(corpus, tmp_path, device, monkeypatch):
    """The paper's Adadelta (bin/bench-gpu's and gpu-check's train part's): an eager run stopped at
    update 4 and resumed with --cuda-graphs ends where the eager run of 12 updates ends, to
    rounding, its step counts moved to the device; on a GPU its last updates replayed graphs (on a
    CPU the padded update runs eagerly)."""
    from nmtkit.train import graphs

    captured, real = [], graphs.WholeUpdate.record
    monkeypatch.setattr(graphs.WholeUpdate, "record", lambda self, *a: captured.append(a) or real(self, *a))
    common = dict(valid_bleu=False, device=device, optimizer="adadelta", lr=1.0, valid_every=4, tf32=False)
    train(corpus, tmp_path / "eager", FAMILIES["rnnsearch"], cfg(max_updates=12, **common))
    train(corpus, tmp_path / "r", FAMILIES["rnnsearch"], cfg(max_updates=4, **common))
    train(corpus, tmp_path / "r", FAMILIES["rnnsearch"], cfg(max_updates=12, cuda_graphs=True, **common))
    assert bool(captured) == (device == "cuda")
    assert losses(tmp_path / "r") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)
    a, b = (checkpoint.load(tmp_path / r / "last.pt").weights for r in ("eager", "r"))
    assert_same_weights(b, a)


def test_a_window_logs_its_captures_and_the_share_of_its_time_the_gpu_spent_replaying(monkeypatch):
    from nmtkit.train import window as window_module

    class Span:  # a CUDA event: what the window asks of one
        def __init__(self, ms):
            self.ms = ms

        def elapsed_time(self, end):
            return end.ms - self.ms

    clock = iter([100.0, 102.0, 200.0, 201.0])  # two windows: opened, closed 2 s / 1 s later
    monkeypatch.setattr(window_module.time, "perf_counter", lambda: next(clock))
    replayed = window_module.LossWindow(1)
    replayed.add_capture(0.25)
    for _ in range(2):
        replayed.add(torch.tensor(3.0), None, 10, 2, 10)
        replayed.add_replay(Span(0.0), Span(400.0))  # 0.4 s on the GPU each
    logged = replayed.close(1)
    assert logged["gpu_busy_share"] == pytest.approx(0.8 / 2) and logged["tgt_tokens_per_s"] == pytest.approx(10)
    assert logged["graphs_captured"] == 1 and logged["capture_s"] == 0.25
    partly = window_module.LossWindow(3)  # an update ran eagerly: its time on the GPU is not known
    partly.add(torch.tensor(3.0), None, 10, 2, 10)
    partly.add(torch.tensor(3.0), None, 10, 2, 10)
    partly.add_replay(Span(0.0), Span(400.0))
    assert not {"gpu_busy_share", "graphs_captured"} & partly.close(1).keys()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: step counts on the device")
def test_a_graph_runs_adadelta_resumed_eagerly_reads_its_step_counts_on_the_host():
    """Neither capturable nor fused, Adadelta would wait for the GPU to read each count."""
    from nmtkit.train.optimizer import load_optimizer

    param = torch.nn.Parameter(torch.ones(3, device="cuda"))
    graphed = torch.optim.Adadelta([param], lr=torch.tensor(1.0, device="cuda"), capturable=True)
    param.grad = torch.ones_like(param)
    graphed.step()
    saved = graphed.state_dict()
    saved["param_groups"] = [{**g, "lr": 1.0} for g in saved["param_groups"]]
    plain = torch.optim.Adadelta([param], lr=1.0)
    plain.load_state_dict(saved)
    assert plain.state[param]["step"].device.type == "cuda"  # as the capturable run kept it
    eager = torch.optim.Adadelta([param], lr=1.0)
    load_optimizer(eager, saved)
    assert eager.state[param]["step"].device.type == "cpu"
    eager.step()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: refuses a wait for it")
def test_a_shape_whose_update_waits_for_the_host_runs_eagerly_and_says_so(
    corpus,
    tmp_path,
    monkeypatch,
    capfd,
):
    from nmtkit.train import graphs

    real = graphs.WholeUpdate.body

    def waits(self, inputs, *args, **kwargs):
        if kwargs.get("hostless", True):  # as a model that read a value on the host would
            inputs["src"].sum().item()
        return real(self, inputs, *args, **kwargs)

    monkeypatch.setattr(graphs.WholeUpdate, "body", waits)
    common = dict(max_updates=10, valid_bleu=False, device="cuda", tf32=False)
    train(corpus, tmp_path / "eager", FAMILIES["rnnsearch"], cfg(**common))
    train(corpus, tmp_path / "graphs", FAMILIES["rnnsearch"], cfg(**common, cuda_graphs=True))
    assert "waits for the host" in capfd.readouterr().err
    logged = (tmp_path / "graphs" / "metrics.jsonl").read_text()
    assert "graphs_captured" not in logged  # no capture was tried, so none could fail
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: refuses a wait for it")
def test_a_warm_up_refused_in_its_optimizer_step_is_not_stepped_again(corpus, tmp_path, monkeypatch, capfd):
    """A wait for the host met in the optimizer's step, after the weights before it moved: the
    batch's update stands, and the run goes on as the eager run does (run again, it would step
    those weights twice)."""
    from nmtkit.train.state import TrainState

    real = TrainState.step

    def waits(self):
        real(self)
        if torch.cuda.get_sync_debug_mode():  # in a warm-up: the wait comes after the step
            next(self.model.parameters()).sum().item()

    monkeypatch.setattr(TrainState, "step", waits)
    common = dict(max_updates=10, valid_bleu=False, device="cuda", tf32=False)
    train(corpus, tmp_path / "eager", FAMILIES["rnnsearch"], cfg(**common))
    train(corpus, tmp_path / "graphs", FAMILIES["rnnsearch"], cfg(**common, cuda_graphs=True))
    assert "optimizer step stopped at the wait" in capfd.readouterr().err
    assert losses(tmp_path / "graphs") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: captures")
def test_an_optimizer_state_begun_in_a_capture_is_dropped_and_the_shape_captured_again(
    corpus, tmp_path, monkeypatch, capfd
):
    """Weights whose optimizer state a capture would make: the zeroed moments would be written at
    every replay. Their state is dropped, made by the next warm-ups, and the shape captured again."""
    from nmtkit.train import graphs

    real, dropped = graphs.WholeUpdate.record, []

    def forget(self, *args):
        if not dropped:  # as weights that got no gradient before the capture would be
            param = next(self.state.model.parameters())
            dropped.append(self.state.opt.state.pop(param))
        return real(self, *args)

    monkeypatch.setattr(graphs.WholeUpdate, "record", forget)
    save = tmp_path / "graphs"
    train(corpus, save, FAMILIES["rnnsearch"], cfg(max_updates=10, valid_bleu=False, device="cuda", cuda_graphs=True))
    said = capfd.readouterr().err
    assert "began the optimizer's state of 1 weights in its capture: captured after warm-ups again" in said
    assert "such batches run eagerly" not in said
    nll = losses(save)
    assert len(nll) == 10 and all(np.isfinite(nll))
    moments = checkpoint.load(save / "last.pt").training.optimizer["state"]
    assert all(torch.isfinite(v).all() for entry in moments.values() for v in entry.values() if torch.is_tensor(v))
