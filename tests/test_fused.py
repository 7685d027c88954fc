"""models.fused: the hand-written recurrences give the reference loops' loss and gradients, their
backward passes agree with finite differences, and everything they do not cover falls back."""

import pytest
import torch

from nmtkit.models import activation, fused
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from tests.conftest import sized

TINY = dict(src_vocab=20, tgt_vocab=15, emb=12, hidden=10, align=8, maxout=6)


def batch(seed=0):
    """Sources of lengths 9, 6, 3 and 1 (padding after), targets with padding too."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 20, (4, 9), generator=g)
    for row, length in enumerate((9, 6, 3, 1)):
        src[row, length:] = 0
    tgt = torch.randint(4, 15, (4, 7), generator=g)
    tgt[1, 5:] = 0
    tgt[3, 2:] = 0
    return src, src != 0, tgt


def tiny_model(arch, readout="prev", encoder="paper", b1=False):
    """The model with Appendix B.1's initialisation (``b1``) or, by default, weights of N(0, 0.3):
    B.1's tiny weights would make most checks trivially close."""
    torch.manual_seed(0)
    gru = {} if arch == "luong" else {"readout": readout, "encoder": encoder}  # the GRU family's
    model = build_model(sized(arch, TINY, **gru))
    for p in [] if b1 else model.parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    return model


def loss_and_grads(model, on):
    fused.use_fused(model, on)
    src, mask, tgt = (t.to(next(model.parameters()).device) for t in batch())
    model.zero_grad(set_to_none=True)
    loss = model(src, mask, tgt[:, :-1], tgt[:, 1:]).loss
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


ON_A_GPU = pytest.param(
    "cuda",
    marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: the passes on its kernels"),
    ],
)


AS_A_GPU = "cpu, tanh as a GPU takes it"


def placed(device, monkeypatch):
    """The device a test runs on. AS_A_GPU is the CPU with tanh taken as a GPU and bfloat16 take
    it (torch's own kernel, the attention's energies reading tanh, not σ): a CPU runs those passes too."""
    if device != AS_A_GPU:
        return device
    monkeypatch.setattr(activation, "through_sigmoid", lambda x: False)
    return "cpu"


def energies_forms(monkeypatch):
    """The forms the decoder's passes take (2: σ, 1: tanh), as they run."""
    forms = set()
    real = fused._squash
    monkeypatch.setattr(fused, "_squash", lambda keys, q, k, out: forms.add(k) or real(keys, q, k, out))
    return forms


@pytest.fixture
def exact_products():
    """float32 products on a GPU (no TF32), so that the passes meet the reference loop to rounding."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def assert_fused_equals_reference(model):
    ref_loss, ref = loss_and_grads(model, False)
    loss, got = loss_and_grads(model, True)
    assert torch.allclose(loss, ref_loss, rtol=1e-5, atol=0)
    assert got.keys() == ref.keys() and len(got) == len(list(model.parameters()))
    for name, g in ref.items():
        assert torch.allclose(got[name], g, rtol=1e-4, atol=1e-4 * g.abs().max().item()), name


@pytest.mark.parametrize("device", ["cpu", AS_A_GPU, ON_A_GPU])
@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("readout", ["prev", "next"])
def test_fused_gives_the_reference_loss_and_gradients(arch, readout, device, monkeypatch, exact_products):
    """On a GPU as on a CPU (tanh there is torch's own kernel, the energies read tanh, not σ): the
    hand-written passes run, and give the reference loop's loss and gradients."""
    model, calls = tiny_model(arch, readout).to(placed(device, monkeypatch)), []
    forms = energies_forms(monkeypatch)
    with pytest.MonkeyPatch.context() as mp:
        real = fused.MaskedGRU.backward
        mp.setattr(fused.MaskedGRU, "backward", staticmethod(lambda ctx, *g: calls.append(1) or real(ctx, *g)))
        assert_fused_equals_reference(model)
    assert calls
    assert forms == (set() if arch == "rnnencdec" else {2} if device == "cpu" else {1})


@pytest.mark.parametrize("device", ["cpu", AS_A_GPU, ON_A_GPU])
def test_recomputing_the_energies_gives_the_same(monkeypatch, device, exact_products):
    for limit in ("KEEP_ENERGIES_BYTES", "KEEP_ENERGIES_BYTES_GPU"):  # backward recomputes them instead
        monkeypatch.setattr(fused, limit, 0)
    assert_fused_equals_reference(tiny_model("rnnsearch").to(placed(device, monkeypatch)))


def test_the_cudnn_encoder_keeps_its_own_and_the_decoder_is_fused():
    assert_fused_equals_reference(tiny_model("rnnsearch", encoder="cudnn"))


def test_fused_runs_the_hand_written_functions(monkeypatch):
    model, calls = tiny_model("rnnsearch"), []
    for f in (fused.MaskedGRU, fused.AttentiveGRU):
        monkeypatch.setattr(f, "backward", staticmethod(lambda ctx, *g, _f=f.backward: calls.append(1) or _f(ctx, *g)))
    loss_and_grads(model, True)
    assert len(calls) == 2  # the encoder's two directions together, the decoder
    calls.clear()
    loss_and_grads(model, False)
    assert calls == []


def test_the_switch_leaves_parameters_and_checkpoint_alone():
    model = tiny_model("rnnsearch")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fused.use_fused(model, True)
    assert model.state_dict().keys() == before.keys()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    assert model.fused_steps and model.encoder.fused_steps


@pytest.mark.parametrize("case", ["no_grad", "float64", "autocast-float16", "frozen", "off"])
def test_fallback_gives_the_reference_path(case, monkeypatch):
    model = tiny_model("rnnsearch")
    fused.use_fused(model, case != "off")
    if case == "float64":
        model.double()
    if case == "frozen":
        model.requires_grad_(False)

    def refuse(*args):
        raise AssertionError("the fused path ran")

    monkeypatch.setattr(fused.MaskedGRU, "forward", staticmethod(refuse))
    monkeypatch.setattr(fused.AttentiveGRU, "forward", staticmethod(refuse))
    src, mask, tgt = batch()
    with (
        torch.set_grad_enabled(case != "no_grad"),
        torch.autocast("cpu", torch.float16, enabled=case == "autocast-float16"),
    ):
        out = model(src, mask, tgt).logits
    assert torch.isfinite(out).all()


def _bf16_loss_and_grads(model, on):
    with torch.autocast(next(model.parameters()).device.type, torch.bfloat16):
        return loss_and_grads(model, on)


@pytest.mark.parametrize("device", ["cpu", ON_A_GPU])
@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("init", ["B.1", "N(0, 0.3)"])
def test_under_bf16_autocast_the_fused_passes_are_as_close_to_float32_as_the_reference_loop(
    arch, init, device, monkeypatch, exact_products
):
    """--bf16 runs the hand-written passes in bfloat16 (a CPU's autocast or a GPU's), from
    Appendix B.1's initialisation (small weights, states near 0, where a tanh taken through a
    bfloat16 σ is noise) and from larger weights. Tolerance: the loss within 1% of float32's;
    each parameter's gradient (its largest difference from float32's, relative to its largest
    entry) within 4x the bfloat16 reference loop's distance plus 2% from B.1 (two orders of the
    same bfloat16 sums part by a few times in one parameter), and the median over the parameters
    of the two distances' ratio at most 1.5: a systematic loss of precision moves them all. With
    the larger weights, where bfloat16 turns either path chaotic now and then (a maxout tie, a
    saturated softmax), within 4x plus 10%."""
    model = tiny_model(arch, b1=init == "B.1").to(device)
    calls = []
    monkeypatch.setattr(
        fused.MaskedGRU,
        "backward",
        staticmethod(lambda ctx, *g, _f=fused.MaskedGRU.backward: calls.append(1) or _f(ctx, *g)),
    )
    exact_loss, exact = loss_and_grads(model, False)
    ref_loss, ref = _bf16_loss_and_grads(model, False)
    assert calls == []
    loss, got = _bf16_loss_and_grads(model, True)
    assert calls, "the fused passes did not run under bf16 autocast"
    assert got.keys() == exact.keys()
    assert abs(loss - exact_loss) <= 0.01 * exact_loss
    ratios = []
    for name, g in exact.items():
        scale = g.abs().max().item() or 1.0
        ours, theirs = (got[name] - g).abs().max().item() / scale, (ref[name] - g).abs().max().item() / scale
        assert ours <= 4 * theirs + (0.02 if init == "B.1" else 0.1), (name, ours, theirs)
        ratios.append(ours / max(theirs, 1e-6))
    assert init != "B.1" or sorted(ratios)[len(ratios) // 2] <= 1.5, sorted(ratios)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: TF32 products are a GPU's")
@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_with_tf32_products_the_passes_are_as_close_to_float32_as_the_reference_loop(arch, exact_products):
    """--tf32 (the GPU bench's float32 cells) rounds every product's inputs to 10 bits: the passes'
    gradients no further from exact float32's than 2x the reference loop's distance with TF32, plus
    0.1% of each gradient's largest entry (the energies read tanh on a GPU, not σ, for this)."""
    model = tiny_model(arch).to("cuda")
    for p in model.parameters():  # small energies, as at B.1's start, where rounding costs most
        p.data.mul_(0.1)
    exact_loss, exact = loss_and_grads(model, False)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    ref_loss, ref = loss_and_grads(model, False)
    loss, got = loss_and_grads(model, True)
    assert abs(loss - exact_loss) <= 1e-3 * exact_loss
    for name, g in exact.items():
        scale = g.abs().max().item() or 1.0
        ours, theirs = (got[name] - g).abs().max().item() / scale, (ref[name] - g).abs().max().item() / scale
        assert ours <= 2 * theirs + 1e-3, (name, ours, theirs)


def test_luong_ignores_the_switch():
    model = tiny_model("luong").eval()  # no dropout: two passes are comparable
    ref_loss, ref = loss_and_grads(model, False)
    loss, got = loss_and_grads(model, True)
    assert torch.equal(loss, ref_loss) and all(torch.equal(got[k], g) for k, g in ref.items())


def gru_inputs(directions, masked):
    g = torch.Generator().manual_seed(1)
    D, B, T, n = directions, 3, 4, 3
    t = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()
    keep = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.float64) if masked else None
    keep = None if keep is None else torch.stack([keep.t(), keep.flip(1).t()][:D], 1)  # (T, D, B)
    return t(T, D, B, 3 * n), t(D, B, n), keep, t(D, 2 * n, n), t(D, n, n)


@pytest.mark.parametrize("directions", [1, 2])
@pytest.mark.parametrize("masked", [False, True])
def test_masked_gru_gradcheck(directions, masked):
    assert torch.autograd.gradcheck(fused.MaskedGRU.apply, gru_inputs(directions, masked))


def test_grus_stepped_together_are_each_grus_own_states():
    """Two GRUs in one MaskedGRU (the encoder's directions): each one's states are those it has
    stepped alone, so one batched product a step computes both."""
    wx, h0, keep, U_zr, U = (x.detach() if x is not None else None for x in gru_inputs(2, True))
    both = fused.MaskedGRU.apply(wx, h0, keep, U_zr, U)
    for d in range(2):
        alone = fused.MaskedGRU.apply(
            wx[:, d : d + 1], h0[d : d + 1], keep[:, d : d + 1], U_zr[d : d + 1], U[d : d + 1]
        )
        assert torch.equal(both[:, d], alone[:, 0])


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("device", ["cpu", AS_A_GPU])
def test_attentive_gru_gradcheck(kept, device, monkeypatch):
    placed(device, monkeypatch)
    monkeypatch.setattr(fused, "KEEP_ENERGIES_BYTES", fused.KEEP_ENERGIES_BYTES if kept else 0)
    g = torch.Generator().manual_seed(2)
    B, Ty, Tx, n, na, m = 3, 4, 5, 3, 2, 4
    t = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    inputs = (
        t(B, n),
        t(B, Ty, 3 * n),
        t(B, Tx, na),
        t(B, Tx, m),
        mask,
        t(na, n),
        t(na),
        t(3 * n, m),
        t(2 * n, n),
        t(n, n),
    )
    assert torch.autograd.gradcheck(fused.AttentiveGRU.apply, inputs)


def test_attentive_gru_forward_is_the_reference_step():
    model = tiny_model("rnnsearch", readout="next")
    src, mask, tgt = batch()
    with torch.no_grad():
        enc = model.encode(src, mask)
        s = model.init_state(enc)
        wy = model.gru.W(model.embed(tgt))
        states, contexts, _ = model._fused(s, wy, enc)
        for i in range(tgt.shape[1]):
            s, c, _ = model._recur(wy[:, i], s, enc)
            assert torch.allclose(states[:, i], s, atol=1e-6) and torch.allclose(contexts[:, i], c, atol=1e-6)


def test_graphs_alive_together_keep_their_own_energies():
    """The decoder's kept energies share one reused block only once a graph is gone: two graphs
    alive at once (accumulated gradients, or retain_graph) each keep their own."""
    model = tiny_model("rnnsearch")
    src, mask, tgt = batch()
    fused.use_fused(model, False)
    ref = [
        torch.autograd.grad(model(src[i:], mask[i:], tgt[i:, :-1], tgt[i:, 1:]).loss, list(model.parameters()))
        for i in (0, 1)
    ]
    fused.use_fused(model, True)
    losses = [model(src[i:], mask[i:], tgt[i:, :-1], tgt[i:, 1:]).loss for i in (0, 1)]
    for loss, want in zip(reversed(losses), reversed(ref)):
        for _ in range(2):  # and the same again from a retained graph
            got = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
            assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(got, want))
    del losses, loss
    assert fused._ENERGIES.free is not None  # handed on once no graph holds it


def test_what_the_passes_cannot_run_is_said_once_where_it_is_decided():
    """use_fused leaves a module that cannot take the passes on its reference loop and returns
    why, once (what ``train`` prints): a coverage model's decoder, a layer-normalised GRU."""

    coverage = build_model(model_config(**TINY, coverage="linguistic"))
    assert fused.use_fused(coverage, True) == [
        "the coverage model's decoder has no hand-written pass: it trains through the reference loop"
    ]
    assert coverage.encoder.fused_steps and not coverage.fused_steps  # the encoder still runs them
    normed = build_model(model_config(**TINY, layer_norm=True))
    (why,) = fused.use_fused(normed, True)
    assert "--layer-norm" in why and not normed.fused_steps and not normed.encoder.fused_steps
    plain = build_model(model_config(**TINY))
    assert fused.use_fused(plain, True) == [] and plain.fused_steps and plain.encoder.fused_steps
    assert fused.use_fused(coverage, False) == [] and not coverage.encoder.fused_steps


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_dropout_draws_the_same_masks_on_both_paths_and_acts_in_training_alone(arch):
    """--dropout on the GRU family (the embeddings and the deep output): the passes and the
    reference loop draw the same masks from the same generator state, so they give the same
    loss and gradients; in evaluation (search, validation) the model is the same model without
    dropout."""
    torch.manual_seed(0)
    model = build_model(sized(arch, TINY, dropout=0.4))
    for p in model.parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    model.train()
    torch.manual_seed(7)
    ref_loss, ref = loss_and_grads(model, False)
    torch.manual_seed(7)
    loss, got = loss_and_grads(model, True)
    assert torch.allclose(loss, ref_loss, rtol=1e-5, atol=0)
    for name, g in ref.items():
        assert torch.allclose(got[name], g, rtol=1e-4, atol=1e-4 * g.abs().max().item()), name
    torch.manual_seed(8)
    assert not torch.allclose(loss_and_grads(model, False)[0], ref_loss)  # other masks, another loss
    plain = build_model(sized(arch, TINY))
    plain.load_state_dict(model.state_dict())
    src, mask, tgt = batch()
    with torch.no_grad():
        model.eval()
        plain.eval()
        dropped, kept = (m(src, mask, tgt[:, :-1], tgt[:, 1:]).loss for m in (model, plain))
        assert torch.equal(dropped, kept)
        plain.train()
        assert torch.equal(plain(src, mask, tgt[:, :-1], tgt[:, 1:]).loss, kept)  # p = 0 draws nothing
