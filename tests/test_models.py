"""RNNsearch / RNNencdec: one decoder step for training and search, masks, B.1 init."""

import pytest
import torch
import torch.nn.functional as F

from nmtkit.models.base import ModelOutput
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from nmtkit.models.loss import alignment_cross_entropy
from nmtkit.translate.search import greedy
from tests.conftest import sized

TINY = dict(src_vocab=20, tgt_vocab=15, emb=12, hidden=10, align=8, maxout=6)


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 20, (3, 7), generator=g)
    src[1, 5:] = 0
    src[2, 3:] = 0
    return src, src != 0, torch.randint(4, 15, (3, 5), generator=g)


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("readout", ["prev", "next"])
@pytest.mark.parametrize("encoder", ["paper", "cudnn"])
def test_teacher_forced_equals_stepwise(arch, readout, encoder):
    torch.manual_seed(0)
    model = build_model(model_config(arch=arch, readout=readout, encoder=encoder, **TINY))
    for p in model.parameters():  # B.1's tiny weights would make every check trivially close
        torch.nn.init.normal_(p, 0, 0.3)
    src, mask, tgt = batch()
    forced = torch.log_softmax(model(src, mask, tgt).logits, -1)
    enc = model.encode(src, mask)
    s = model.init_state(enc)
    steps = []
    for i in range(tgt.shape[1]):
        logp, s, alpha = model.step(tgt[:, i], s, enc)
        steps.append(logp)
        if arch == "rnnsearch":
            assert alpha.shape == (3, 7) and torch.allclose(alpha.sum(-1), torch.ones(3))
            assert (alpha[2, 3:] == 0).all()  # no weight on padding
        else:
            assert alpha is None
    assert torch.allclose(forced, torch.stack(steps, 1), atol=1e-6)


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("encoder", ["paper", "cudnn"])
def test_padding_never_changes_a_sentence(arch, encoder):
    torch.manual_seed(1)
    model = build_model(model_config(arch=arch, encoder=encoder, **TINY))
    for p in model.parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    src, mask, tgt = batch()
    together = model(src, mask, tgt).logits
    for i in range(3):
        n = int(mask[i].sum())
        alone = model(src[i : i + 1, :n], mask[i : i + 1, :n], tgt[i : i + 1]).logits
        assert torch.allclose(together[i : i + 1], alone, atol=1e-5)


def test_s0_uses_the_backward_state_at_the_first_word():
    torch.manual_seed(2)
    model = build_model(model_config(**TINY))
    src, mask, _ = batch()
    enc = model.encode(src, mask)
    h_back_first = enc.h[:, 0, TINY["hidden"] :]
    assert torch.equal(enc.summary, h_back_first)
    assert torch.allclose(model.init_state(enc), torch.tanh(model.W_s(h_back_first)))


def test_appendix_b1_initialisation():
    model = build_model(model_config(src_vocab=50, tgt_vocab=60, emb=40, hidden=30, align=20, maxout=10))
    U = model.gru.U.weight
    assert torch.allclose(U @ U.T, torch.eye(30), atol=1e-5)
    Uz, Ur = model.encoder.fwd.U_zr.weight.split(30)
    assert torch.allclose(Uz @ Uz.T, torch.eye(30), atol=1e-5) and torch.allclose(Ur @ Ur.T, torch.eye(30), atol=1e-5)
    assert (model.attention.v_a.weight == 0).all() and (model.gru.W.bias == 0).all() and (model.C.weight.std() < 0.015)
    assert model.attention.W_a.weight.std() < 0.002 and model.attention.U_a.weight.std() < 0.002
    assert 0.005 < model.W_o.weight.std() < 0.015


def test_greedy_scores_are_the_sum_of_step_log_probs():
    torch.manual_seed(3)
    model = build_model(model_config(**TINY))
    for p in model.parameters():
        torch.nn.init.normal_(p, 0, 0.5)
    src, mask, _ = batch()
    out = greedy(model, model.encode(src, mask))
    for i, (toks, score) in enumerate(zip(out.tokens, out.scores)):
        tgt_in = torch.tensor([[2] + toks])
        tgt_out = torch.tensor(toks + [3])
        n = int(mask[i].sum())
        logp = torch.log_softmax(model(src[i : i + 1, :n], mask[i : i + 1, :n], tgt_in).logits, -1)[0]
        assert abs(float(logp[torch.arange(len(tgt_out)), tgt_out].sum().detach()) - score) < 1e-4


def test_cudnn_encoder_initialisation_and_first_backward_state():
    model = build_model(
        model_config(encoder="cudnn", src_vocab=50, tgt_vocab=60, emb=40, hidden=30, align=20, maxout=10)
    )
    for name in ("weight_hh_l0", "weight_hh_l0_reverse"):
        for block in getattr(model.encoder.rnn, name).split(30):
            assert torch.allclose(block @ block.T, torch.eye(30), atol=1e-5)
    assert (model.encoder.rnn.bias_ih_l0 == 0).all() and model.encoder.rnn.weight_ih_l0.std() < 0.015
    src, mask, _ = batch()
    src = src.clamp(max=49)
    enc = model.encode(src, mask)
    assert torch.equal(enc.summary, enc.h[:, 0, 30:])
    assert (enc.h[2, 3:] == 0).all()  # nothing at padded positions


def test_inference_linear_matches_the_layer_in_blocks_and_follows_weight_updates():
    from nmtkit.models.layers import inference_linear

    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 300)
    x = torch.randn(300, 16)  # more rows than one oneDNN block
    with torch.no_grad():
        assert torch.allclose(inference_linear(layer, x), layer(x), atol=1e-5)
        layer.weight.add_(1.0)  # a training update: the cache must follow
        assert torch.allclose(inference_linear(layer, x), layer(x), atol=1e-5)
    y = inference_linear(layer, x)  # with autograd: the plain layer
    assert y.requires_grad


@pytest.mark.parametrize("arch", ["rnnsearch", "luong"])
def test_forward_returns_one_model_output_whatever_it_is_given(arch):
    """Logits, the plain NLL, the smoothed loss and guided alignment: one type, each field what its
    name says and the others None."""
    torch.manual_seed(0)
    model = build_model(sized(arch, {**TINY, "layers": 1})).eval()
    src, mask, tgt = batch()
    tgt[2, 3:] = 0  # padding: no loss there
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    guide = torch.zeros(3, 4, 7)
    guide[:, :2, 0] = 1.0
    with torch.no_grad():
        logits = model(src, mask, tgt_in)
        plain = model(src, mask, tgt_in, tgt_out)
        smoothed = model(src, mask, tgt_in, tgt_out, smoothing=0.1)
        guided = model(src, mask, tgt_in, tgt_out, smoothing=0.1, guide=guide)
        _, alpha = model.teacher_forced(model.encode(src, mask), tgt_in)
    assert {type(out) for out in (logits, plain, smoothed, guided)} == {ModelOutput}
    assert logits.logits.shape == (3, 4, TINY["tgt_vocab"])
    assert logits.loss is logits.nll is logits.align_loss is logits.align_positions is None
    flat = logits.logits.flatten(0, 1), tgt_out.flatten()
    nll = F.cross_entropy(*flat, ignore_index=0, reduction="sum")
    assert plain.logits is None and plain.loss is plain.nll and torch.allclose(plain.nll, nll)
    assert plain.align_loss is None and plain.align_positions is None
    assert torch.allclose(smoothed.nll, nll)  # logged: the plain NLL
    assert torch.allclose(smoothed.loss, F.cross_entropy(*flat, ignore_index=0, reduction="sum", label_smoothing=0.1))
    assert smoothed.align_loss is None and smoothed.align_positions is None
    assert torch.equal(guided.loss, smoothed.loss) and torch.equal(guided.nll, smoothed.nll)
    fed = tgt_in != 0 if model.attention_follows_input() else None
    align, positions = alignment_cross_entropy(alpha, guide, fed)
    assert torch.allclose(guided.align_loss, align) and int(guided.align_positions) == int(positions) > 0
