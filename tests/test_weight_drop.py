"""--weight-drop: DropConnect on the GRUs' recurrent matrices, one mask for the batch and every
time step, the same on the fused passes, the reference loop and cuDNN's encoder, and nothing
outside training."""

import pytest
import torch

from nmtkit.core.errors import UserError
from nmtkit.models import fused, host_free
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from tests.conftest import sized
from tests.test_fused import TINY, batch, loss_and_grads

P = 0.4


def made(arch, seed=0, **values):
    torch.manual_seed(seed)
    model = build_model(sized(arch, TINY, **values))
    for p in model.parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    return model.train()


def recurrent_matrices(model):
    """The names of the recurrent matrices, in the order a training pass drops them."""
    if hasattr(model.encoder, "rnn"):  # cuDNN's encoder
        rnn = ["encoder.rnn.weight_hh_l0"] + (["encoder.rnn.weight_hh_l0_reverse"] if model.attentive else [])
    else:
        rnn = [f"encoder.{d}.{w}.weight" for d in ("fwd", "bwd")[: 1 + model.attentive] for w in ("U_zr", "U")]
    return rnn + ["gru.U_zr.weight", "gru.U.weight"]


def dropped_by_hand(model, seed):
    """The matrices a pass under ``seed`` steps with, drawn here as dropout draws them."""
    params = dict(model.named_parameters())
    torch.manual_seed(seed)
    return {name: torch.nn.functional.dropout(params[name].detach(), P, True) for name in recurrent_matrices(model)}


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_both_paths_drop_the_same_weights_once_a_batch(arch):
    """The fused passes and the reference loop give the loss and gradients of the model whose
    recurrent matrices are the dropped ones for every sentence and every step: one mask a pass,
    and each dropped weight's gradient is that model's times the mask's 1/(1 − p), 0 where dropped."""
    model = made(arch, weight_drop=P)
    mats = dropped_by_hand(model, 7)
    plain = made(arch)
    plain.load_state_dict(model.state_dict())
    with torch.no_grad():
        for name, w in mats.items():
            plain.get_parameter(name).copy_(w)
    want_loss, want = loss_and_grads(plain, False)
    for on in (False, True):
        torch.manual_seed(7)
        loss, got = loss_and_grads(model, on)
        assert torch.allclose(loss, want_loss, rtol=1e-5, atol=0), on
        for name, g in want.items():
            scale = 1.0
            if name in mats:
                kept = mats[name] != 0
                assert kept.float().mean() < 0.8, name  # the mask drops some weights...
                scale = kept / (1 - P)  # ...and only they get no gradient from the recurrence
            assert torch.allclose(got[name], g * scale, rtol=1e-4, atol=1e-4 * g.abs().max().item()), (on, name)
    torch.manual_seed(8)
    assert not torch.allclose(loss_and_grads(model, True)[0], want_loss)  # another mask, another loss


@pytest.mark.parametrize("arch", ["rnnsearch", "rnnencdec"])
def test_only_training_drops(arch):
    """In evaluation (validation, search) the model is the same model without weight drop, and
    it draws nothing from the generator."""
    model, plain = made(arch, weight_drop=P).eval(), made(arch).eval()
    plain.load_state_dict(model.state_dict())
    src, mask, tgt = batch()
    with torch.no_grad():
        state = torch.get_rng_state()
        loss = model(src, mask, tgt[:, :-1], tgt[:, 1:]).loss
        assert torch.equal(torch.get_rng_state(), state)
        assert torch.equal(loss, plain(src, mask, tgt[:, :-1], tgt[:, 1:]).loss)
        enc = model.encode(src, mask)
        logp, _, _ = model.step(tgt[:, 0], model.init_state(enc), enc)
        enc_plain = plain.encode(src, mask)
        assert torch.equal(logp, plain.step(tgt[:, 0], plain.init_state(enc_plain), enc_plain)[0])


@pytest.mark.parametrize("free", [False, True])
def test_the_cudnn_encoder_drops_its_recurrent_matrices(free, monkeypatch):
    """torch's GRU (packed, or each direction on its own where the update reads nothing on the
    host) steps with its dropped weight_hh matrices, one mask for the pass."""
    monkeypatch.setattr(host_free, "active", lambda: free)
    model = made("rnnsearch", encoder="cudnn", weight_drop=P)
    mats = dropped_by_hand(model, 3)
    plain = made("rnnsearch", encoder="cudnn")
    plain.load_state_dict(model.state_dict())
    with torch.no_grad():
        for name, w in mats.items():
            plain.get_parameter(name).copy_(w)
    want_loss, want = loss_and_grads(plain, False)
    torch.manual_seed(3)
    loss, got = loss_and_grads(model, False)
    assert torch.allclose(loss, want_loss, rtol=1e-5, atol=0)
    name = "encoder.rnn.weight_hh_l0_reverse"
    scale = (mats[name] != 0) / (1 - P)
    assert torch.allclose(got[name], want[name] * scale, rtol=1e-4, atol=1e-6)


def test_the_setting_is_the_gru_familys_and_bounded():
    assert model_config("rnnsearch", weight_drop=0.3).weight_drop == 0.3
    assert model_config("rnnsearch").weight_drop == 0.0
    with pytest.raises(UserError, match="--weight-drop does not apply to --arch luong"):
        model_config("luong", weight_drop=0.3)
    with pytest.raises(UserError, match="weight.drop"):
        model_config("rnnencdec", weight_drop=1.0)


def test_a_checkpoint_records_it_and_the_fused_switch_keeps_it():
    model = made("rnnsearch", weight_drop=0.25)
    assert model.cfg.to_dict()["weight_drop"] == 0.25
    assert fused.use_fused(model, True) == [] and model.fused_steps


def test_a_head_trained_alone_sees_the_frozen_model_without_its_dropouts():
    """train --head-only: the frozen model draws no dropout mask (the head learns from the
    attention translation gives it), the head alone is in training mode."""
    model = made("rnnsearch", dropout=0.3, weight_drop=P, alignment_head=True)
    model.head_alone = True
    model.train()
    assert model.align_head.training and not model.training and not model.encoder.training
    src, mask, tgt = batch()
    state = torch.get_rng_state()
    with torch.no_grad():
        model(src, mask, tgt[:, :-1], tgt[:, 1:])
    assert torch.equal(torch.get_rng_state(), state)
    model.eval()
    assert not model.align_head.training


def test_under_bf16_autocast_the_dropped_matrices_are_cast_once_and_both_paths_agree():
    """--bf16: the dropped matrices are bfloat16 already (no cast at each step of the reference
    loop), and the passes and the loop give nearly the same loss from the same masks."""
    model = made("rnnsearch", weight_drop=P)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        rec = model.gru.recurrence()
        assert rec is not None and rec.U_zr.dtype == rec.U.dtype == torch.bfloat16
        got = []
        for on in (False, True):
            torch.manual_seed(5)
            got.append(loss_and_grads(model, on)[0])
    assert torch.isfinite(got[0]) and torch.allclose(got[0], got[1], rtol=2e-2)
