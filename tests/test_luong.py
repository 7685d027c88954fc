"""Luong et al. (2015): the attention family, the stacked-LSTM model, its schedule, and its use by
every command built for RNNsearch (translate, ensembles, score, align-plot, resume)."""

import itertools
import json

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.checkpoint.info import describe, format_info
from nmtkit.cli import main
from nmtkit.models.attention import LuongAttention
from nmtkit.models.build import build_model
from nmtkit.models.config import SCORES, WINDOWS, model_config
from nmtkit.models.layers import reversal
from nmtkit.train.config import SCHEDULES, TrainConfig
from nmtkit.train.loop import train
from nmtkit.train.optimizer import learning_rate
from nmtkit.translate.search import beam_search, force
from nmtkit.translate.settings import SearchConfig
from tests.conftest import EN

B, TQ, TX, N = 3, 4, 9, 6
LENGTHS = torch.tensor([9, 5, 2])
MASK = torch.arange(TX) < LENGTHS.unsqueeze(1)


def attention(score, window, D=2, max_src=TX):
    torch.manual_seed(0)
    return LuongAttention(score, window, N, 5, max_src, D)


def inputs(seed=1):
    g = torch.Generator().manual_seed(seed)
    q, h = torch.randn(B, TQ, N, generator=g), torch.randn(B, TX, N, generator=g)
    t = torch.arange(TQ).expand(B, TQ)
    return q, h, t


def run(att, q, h, t, mask=MASK):
    return att(q, att.precompute(h), h, mask, t)


@pytest.mark.parametrize("score,window", list(itertools.product(SCORES, WINDOWS)))
def test_shapes_and_padding_get_no_weight(score, window):
    att = attention(score, window)
    q, h, t = inputs()
    c, a = run(att, q, h, t)
    assert c.shape == (B, TQ, N) and a.shape == (B, TQ, TX)
    assert torch.all(a[~MASK.unsqueeze(1).expand_as(a)] == 0)
    assert torch.all(a >= 0)
    assert torch.allclose(c, torch.bmm(a, h), atol=1e-6)
    sums = a.sum(-1)
    if window == "local-p":  # Gaussian-scaled, not renormalised (Eq. 10)
        assert torch.all(sums <= 1 + 1e-6) and torch.all(sums > 0)
    else:
        assert torch.allclose(sums, torch.ones_like(sums))
    # whatever padding holds changes nothing
    c2, a2 = run(att, q, h.masked_fill(~MASK.unsqueeze(-1), 7.0), t)
    assert torch.allclose(a, a2) and torch.allclose(c, c2, atol=1e-6)


@pytest.mark.parametrize("score", SCORES)
def test_local_m_weights_are_zero_outside_the_window(score):
    D = 2
    q, h, t = inputs()
    _, a = run(attention(score, "local-m", D), q, h, t)
    s = torch.arange(TX)
    for b, i in itertools.product(range(B), range(TQ)):
        p = min(i, int(LENGTHS[b]) - 1)  # p_t = t, held at the last word of a short sentence
        inside = ((s - p).abs() <= D) & MASK[b]
        assert torch.all(a[b, i, ~inside] == 0) and torch.all(a[b, i, inside] > 0)


def test_under_bf16_autocast_the_window_centre_is_float32():
    """p_t past 256 is whole (bfloat16 holds only even numbers there), and S·σ is not rounded to
    bfloat16: local-p's centre from the same logits as float32's, to float32's rounding."""
    mask = torch.ones(1, 400, dtype=torch.bool)
    local_m = attention("general", "local-m", max_src=400)
    q = torch.randn(1, 3, local_m.W_a.in_features)
    with torch.autocast("cpu", torch.bfloat16):
        p = local_m.centre(q.bfloat16(), torch.tensor([[257, 301, 333]]), mask)
    assert p.dtype == torch.float32 and p.tolist() == [[257.0, 301.0, 333.0]]
    local_p = attention("general", "local-p", max_src=400)
    for w in (local_p.W_p.weight, local_p.v_p.weight):
        torch.nn.init.normal_(w, 0, 1)
    with torch.autocast("cpu", torch.bfloat16):
        p = local_p.centre(q, None, mask)
        logit = local_p.v_p(torch.tanh(local_p.W_p(q))).squeeze(-1).float()
    assert p.dtype == torch.float32
    torch.testing.assert_close(p, 400 * torch.sigmoid(logit))


@pytest.mark.parametrize("score", SCORES)
def test_local_p_is_a_window_around_its_predicted_position_scaled_by_a_gaussian(score):
    D = 2
    att = attention(score, "local-p", D)
    q, h, t = inputs()
    _, a = run(att, q, h, t)
    p = att.centre(q, t, MASK)
    assert torch.all(p >= 0) and torch.all(p <= LENGTHS.unsqueeze(1))  # S·sigmoid(·)
    distance = torch.arange(TX) - p.unsqueeze(-1)
    inside = (distance.abs() <= D) & MASK.unsqueeze(1)
    assert torch.all(a[~inside] == 0) and torch.all(a[inside] > 0)
    # a / Gaussian inside the window is a softmax over the window: it sums to 1
    unscaled = torch.where(inside, a / torch.exp(-(distance**2) / (2 * (D / 2) ** 2)), torch.zeros_like(a))
    assert torch.allclose(unscaled.sum(-1), torch.ones(B, TQ), atol=1e-5)
    # p_t is learned: its parameters get gradients through the weights
    att.zero_grad()
    run(att, q, h, t)[0].sum().backward()
    assert att.W_p.weight.grad.abs().sum() > 0 and att.v_p.weight.grad.abs().sum() > 0


def test_local_p_renormalised_keeps_the_window_and_the_shape_and_sums_to_one():
    q, h, t = inputs()
    paper, renorm = attention("general", "local-p"), attention("general", "local-p")
    renorm.renorm = True
    (_, a), (c_r, a_r) = run(paper, q, h, t), run(renorm, q, h, t)
    assert torch.allclose(a_r.sum(-1), torch.ones(B, TQ), atol=1e-6)
    assert torch.allclose(a_r, a / a.sum(-1, keepdim=True), atol=1e-6)  # the paper's weights, rescaled
    assert torch.equal(a_r > 0, a > 0) and torch.allclose(c_r, torch.bmm(a_r, h), atol=1e-6)
    model = build_model(tiny(attention="local-p", window_renorm=True))
    assert model.attention.renorm and not build_model(tiny(attention="local-p")).attention.renorm


def test_location_attention_ignores_source_content_and_positions_past_its_length():
    att = attention("location", "global", max_src=4)
    q, h, t = inputs()
    _, a = run(att, q, h, t)
    _, a_other = run(att, q, torch.randn(B, TX, N), t)
    assert torch.equal(a, a_other)
    assert torch.all(a[..., 4:] == 0)  # longer sentences: words past max_src get nothing
    assert torch.allclose(a[2].sum(-1), torch.ones(TQ))  # a 2-word sentence uses the first 2 logits
    content = attention("general", "global")
    assert not torch.equal(run(content, q, h, t)[1], run(content, q, torch.randn(B, TX, N), t)[1])


def test_reversing_the_words_keeps_eos_last_and_padding_in_place_and_is_its_own_inverse():
    src = torch.tensor([[5, 6, 7, 3], [8, 3, 0, 0], [3, 0, 0, 0]])
    order = reversal(src != 0, kept=1)
    assert src.gather(1, order).tolist() == [[7, 6, 5, 3], [8, 3, 0, 0], [3, 0, 0, 0]]
    assert torch.equal(order.gather(1, order), torch.arange(4).expand(3, 4))
    assert src.gather(1, reversal(src != 0)).tolist() == [[3, 7, 6, 5], [3, 8, 0, 0], [3, 0, 0, 0]]


def tiny(**kw):
    return model_config(
        **{
            **dict(arch="luong", src_vocab=20, tgt_vocab=20, emb=8, hidden=10, align=7, layers=2, window=1, max_src=4),
            **kw,
        }
    )


def test_input_feeding_widens_the_decoder_input():
    assert build_model(tiny(input_feed=True)).decoder.input_size == 8 + 10
    assert build_model(tiny(input_feed=False)).decoder.input_size == 8
    assert build_model(tiny(layers=3)).decoder.num_layers == 3 == build_model(tiny(layers=3)).encoder.num_layers


VARIANTS = [
    dict(attention=w, score=s, input_feed=f, reverse_source=r)
    for (w, s), f, r in itertools.product(
        [*itertools.product(WINDOWS, SCORES), ("none", "dot")], (True, False), (True, False)
    )
] + [dict(attention="local-p", score="general", input_feed=True, reverse_source=True, window_renorm=True)]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_teacher_forcing_and_the_search_step_compute_the_same_model(variant):
    torch.manual_seed(0)
    model = build_model(tiny(**variant)).eval()
    src = torch.tensor([[5, 6, 7, 8, 9, 3], [9, 10, 3, 0, 0, 0]])
    tgt_in, tgt_out = torch.tensor([[2, 5, 6, 7, 8], [2, 8, 9, 0, 0]]), torch.tensor([[5, 6, 7, 8, 3], [8, 9, 3, 0, 0]])
    with torch.no_grad():
        enc = model.encode(src, src != 0)
        nll = model.output_nll(model.teacher_forced(enc, tgt_in)[0], tgt_out)
        logp, _, maps = force(model, enc, tgt_out)
        hyps = beam_search(model, enc, SearchConfig(beam=3, max_extra=3))
    assert torch.allclose(-logp.sum(), nll, rtol=1e-5)
    assert len(hyps.tokens) == 2
    if variant["attention"] != "none":
        assert torch.allclose(maps[1, :3, 3:], torch.zeros(3, 3))  # padding gets no attention


def test_input_feeding_drops_h_tilde_out_once():
    # in training, the h̃ fed to the next step is the very h̃ the softmax saw (dropped out once
    # when made), not dropped out a second time on its way into the LSTM
    torch.manual_seed(0)
    model = build_model(tiny(dropout=0.5)).train()
    src = torch.tensor([[5, 6, 7, 8, 9, 3]])
    fed = []
    model.decoder.register_forward_hook(lambda mod, args, out: fed.append(args[0][..., 8:].detach()))
    enc = model.encode(src, src != 0)
    h_tilde = model.teacher_forced(enc, torch.tensor([[2, 5, 6, 7]]))[0]
    for t in range(1, 4):
        assert torch.equal(fed[t][:, 0], h_tilde[:, t - 1])


def test_content_scores_align_the_input_word_and_location_and_local_p_the_predicted_one():
    # footnote 14: a_t weighs the source for y_{t-1} (content scores) or for y_t (location); local-p
    # places its window for y_t
    src = torch.tensor([[5, 6, 7, 3]])
    tgt_out = torch.tensor([[8, 9, 3]])
    for window, score, follows in (
        ("local-m", "dot", True),
        ("global", "general", True),
        ("local-m", "concat", True),
        ("global", "location", False),
        ("local-p", "general", False),
        ("local-p", "dot", False),
    ):
        torch.manual_seed(0)
        model = build_model(tiny(attention=window, score=score, max_src=6)).eval()
        assert model.attention_follows_input() == follows
        enc = model.encode(src, src != 0)
        _, _, maps = force(model, enc, tgt_out)
        steps, state, y = [], model.init_state(enc), torch.tensor([2])
        with torch.no_grad():
            for word in [8, 9, 3, 3]:
                _, state, alpha = model.step(y, state, enc)
                steps.append(alpha[0])
                y = torch.tensor([word])
        want = torch.stack(steps[1:4] if follows else steps[:3])
        assert maps.shape == (1, 3, 4) and torch.allclose(maps[0], want, atol=1e-6)


def test_local_attention_with_no_window_is_refused(tmp_path):
    from nmtkit.core.errors import UserError

    with pytest.raises(UserError, match="--window: 0 is not >= 1"):  # ModelConfig's declared bound
        build_model(tiny(attention="local-p", window=0))
    r = invoke(
        "train", tmp_path, "--save-dir", tmp_path / "x", "--arch", "luong", "--attention", "local-p", "--window", 0
    )
    assert r.exit_code == 2 and "--window" in r.output and "Traceback" not in r.output


def test_reading_backwards_sees_the_words_in_the_other_order():
    torch.manual_seed(0)
    fwd = build_model(tiny(reverse_source=False)).eval()
    bwd = build_model(tiny(reverse_source=True)).eval()
    bwd.load_state_dict(fwd.state_dict())
    src = torch.tensor([[5, 6, 7, 3]])
    flipped = torch.tensor([[7, 6, 5, 3]])
    with torch.no_grad():
        a, b = bwd.encode(src, src != 0), fwd.encode(flipped, flipped != 0)
    assert torch.allclose(a.summary, b.summary)  # the same final state…
    assert torch.allclose(a.h, b.h[:, [2, 1, 0, 3]])  # …and annotations in the sentence's order


def test_parameters_start_uniform_in_a_tenth():
    model = build_model(tiny(emb=64, hidden=64))
    values = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert values.abs().max() <= 0.1 and values.std() > 0.05


def test_luong_schedule_halves_the_rate_each_epoch_after_the_fifth():
    cfg = TrainConfig(**SCHEDULES["luong"].settings(0.0))
    assert [learning_rate(cfg, e) for e in range(8)] == [1, 1, 1, 1, 1, 0.5, 0.25, 0.125]
    assert (cfg.optimizer, cfg.batch_size, cfg.clip, cfg.max_len, cfg.max_epochs) == ("sgd", 128, 5.0, 50, 10)
    with_dropout = TrainConfig(**SCHEDULES["luong"].settings(0.2))
    assert [learning_rate(with_dropout, e) for e in (7, 8, 9)] == [1, 0.5, 0.25]
    assert with_dropout.max_epochs == 12
    assert learning_rate(TrainConfig(), 30) == 1.0  # Appendix B: no decay


# -- with the commands -----------------------------------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def luong(overfit):
    """A Luong model (local-p, general, input feeding, reversed, 2 layers) that learned the pairs
    the session's RNNsearch learned, on the same vocabulary."""
    r = invoke(
        "train",
        overfit / "bin-kept",
        "--save-dir",
        overfit / "luong",
        "--arch",
        "luong",
        "--preset",
        "tiny",
        "--attention",
        "local-p",
        "--hidden",
        48,
        "--emb",
        24,
        "--dropout",
        0,
        "--optimizer",
        "adam",
        "--lr",
        0.01,
        "--batch-size",
        6,
        "--pool",
        1,
        "--max-updates",
        150,
        "--valid-every",
        1000,
        "--log-every",
        50,
        "--patience",
        0,
        "--threads",
        1,
    )
    assert r.exit_code == 0, r.output
    return overfit / "luong" / "last.pt"


def test_the_cli_trains_the_asked_variant_with_the_schedule_under_the_given_flags(luong, overfit, tmp_path):
    ckpt = checkpoint.load(luong)
    assert {
        k: getattr(ckpt.model, k) for k in ("arch", "attention", "score", "input_feed", "reverse_source", "layers")
    } == {
        "arch": "luong",
        "attention": "local-p",
        "score": "general",
        "input_feed": True,
        "reverse_source": True,
        "layers": 2,
    }
    r = invoke(
        "train",
        overfit / "bin-kept",
        "--save-dir",
        tmp_path / "s",
        "--arch",
        "luong",
        "--preset",
        "tiny",
        "--schedule",
        "luong",
        "--batch-size",
        4,
        "--max-updates",
        1,
        "--no-valid-bleu",
        "--threads",
        1,
    )
    assert r.exit_code == 0, r.output
    cfg = checkpoint.load(tmp_path / "s" / "last.pt").training.config
    assert (cfg.optimizer, cfg.lr, cfg.clip, cfg.decay_after, cfg.max_epochs) == ("sgd", 1.0, 5.0, 8, 12)
    model = checkpoint.load(tmp_path / "s" / "last.pt").model  # --arch luong's default attention
    assert (model.attention, model.score, model.window_renorm) == ("local-m", "general", False)
    assert cfg.batch_size == 4  # a flag given wins over the schedule
    lr = [json.loads(x).get("lr") for x in (tmp_path / "s" / "metrics.jsonl").read_text().splitlines()]
    assert 1.0 in lr


def test_a_luong_model_translates_and_ensembles_with_rnnsearch(luong, overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text("\n".join(EN[:4]) + "\n", encoding="utf-8")
    alone = invoke("translate", "-m", luong, src, "--beam", 3)
    rnnsearch = invoke("translate", "-m", overfit / "run" / "last.pt", src, "--beam", 3)
    assert alone.exit_code == 0 and rnnsearch.exit_code == 0, alone.output
    both = invoke(
        "translate",
        "-m",
        overfit / "run" / "last.pt",
        "-m",
        luong,
        src,
        "--beam",
        3,
        "--alignments",
        tmp_path / "a.txt",
        "--replace-unk",
    )
    assert both.exit_code == 0, both.output
    assert len(both.stdout.splitlines()) == 4
    # both members learned the pairs: their ensemble agrees with them on most lines
    agree = sum(x == y for x, y in zip(both.stdout.splitlines(), rnnsearch.stdout.splitlines()))
    assert agree >= 3, (both.stdout, rnnsearch.stdout, alone.stdout)
    assert (tmp_path / "a.txt").stat().st_size > 0


def test_info_names_the_attention_and_a_renormalised_window(luong):
    found = describe(luong)  # trained with train's defaults: a renormalised window
    window = found["model"]["window"]
    said = f"attention local-p (general, D = {window}, renormalised), input feeding on, source reversed"
    assert said in format_info(found)
    found["model"] |= {"window_renorm": False, "reverse_source": False}  # what train's errors name
    assert f"attention local-p (general, D = {window}), input feeding on, source in order" in format_info(found)
    found["model"] |= {"attention": "none", "input_feed": False}
    assert "attention none, input feeding off" in format_info(found)  # no score: it has none


def test_score_align_plot_and_resume_work_with_a_luong_checkpoint(luong, overfit, tmp_path):
    r = invoke("score", "-m", luong, "--data", overfit / "bin-kept", "--output-format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["corpus_nll"]["nll_token"] < 0.5  # it learned the pairs
    src, ref = tmp_path / "s.en", tmp_path / "r.fr"
    src.write_text(EN[0] + "\n", encoding="utf-8")
    ref.write_text("Au commencement, Dieu créa les cieux et la terre.\n", encoding="utf-8")
    r = invoke("align-plot", "-m", luong, "--source", src, "--target", ref, "-n", "1", "-o", tmp_path / "a.png")
    assert r.exit_code == 0, r.output
    assert list(tmp_path.glob("a*.png"))


def test_exact_resume_with_dropout(overfit, tmp_path, deterministic):
    model = model_config(arch="luong", emb=12, hidden=12, align=12, layers=2, dropout=0.3)
    cfg = dict(
        optimizer="sgd",
        lr=0.5,
        decay_after=1,
        batch_size=2,
        pool=2,
        valid_every=1000,
        log_every=1,
        valid_bleu=False,
        threads=1,
        patience=0,
    )
    corpus = overfit / "bin-kept"
    train(corpus, tmp_path / "a", model, TrainConfig(**cfg, max_updates=8))
    train(corpus, tmp_path / "b", model, TrainConfig(**cfg, max_updates=3))
    train(corpus, tmp_path / "b", model, TrainConfig(**cfg, max_updates=8))
    a = checkpoint.load(tmp_path / "a" / "last.pt")
    b = checkpoint.load(tmp_path / "b" / "last.pt")
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert a.training.optimizer is not None and a.training.batches is not None
    lrs = [g["lr"] for g in a.training.optimizer["param_groups"]]
    assert lrs == [0.5 * 0.5 ** a.training.batches["epoch"]]  # the rate followed the epochs


def test_flags_of_the_other_family_or_without_their_switch_are_refused(tmp_path):
    r = invoke("train", tmp_path, "--save-dir", tmp_path / "x", "--arch", "rnnsearch", "--window", 5)
    assert r.exit_code == 2 and "--window does not apply to --arch rnnsearch" in r.output
    r = invoke("train", tmp_path, "--save-dir", tmp_path / "x", "--arch", "luong", "--readout", "next")
    assert r.exit_code == 2 and "--readout does not apply to --arch luong" in r.output
    r = invoke("train", tmp_path, "--save-dir", tmp_path / "x", "--compile-mode", "reduce-overhead")
    assert r.exit_code == 2 and "--compile-mode applies to a compiled step: add --compile" in r.output
    r = invoke(
        "train", tmp_path, "--save-dir", tmp_path / "x", "--arch", "luong", "--attention", "local-m", "--window-renorm"
    )
    assert r.exit_code == 2 and "--window-renorm applies to --attention local-p" in r.output
    assert not (tmp_path / "x").exists()


def test_a_new_local_p_model_renormalises_its_window_unless_the_paper_form_is_asked_for():
    from nmtkit.cli.train_settings import train_settings

    base = {"attention": "local-p", "window_renorm": None}
    assert train_settings("luong", "tiny", "appendix-b", base, set())[0].window_renorm
    paper = train_settings("luong", "tiny", "appendix-b", {**base, "window_renorm": False}, {"window_renorm"})[0]
    assert not paper.window_renorm
    for attention in ("global", "local-m"):
        assert not train_settings("luong", "tiny", "appendix-b", {**base, "attention": attention}, set())[
            0
        ].window_renorm
    assert "window_renorm" not in train_settings("rnnsearch", "tiny", "appendix-b", base, set())[0].flat()


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: would prove that the layer-by-layer LSTM "
    "(exact resume with dropout) equals cuDNN's fused LSTM and draws its dropout from torch's generator",
)
def test_stacked_lstm_layer_by_layer_equals_the_fused_lstm_without_dropout_and_drops_with_torchs_generator():
    from nmtkit.models.stacked_lstm import StackedLSTM

    torch.manual_seed(0)
    lstm = StackedLSTM(6, 5, 3, batch_first=True, dropout=0.5).cuda().train()
    x = torch.randn(4, 7, 6, device="cuda")
    lengths = torch.tensor([7, 3, 5, 1])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    lstm.dropout = 1e-30  # the layer-by-layer path, with no dropout in effect
    (out, (h, c)) = lstm(packed)
    lstm.dropout = 0.0  # the fused path
    (ref, (h0, c0)) = lstm(packed)
    # (cuDNN may use TF32 in one path and not the other)
    assert torch.allclose(out.data, ref.data, atol=1e-3) and torch.allclose(h, h0, atol=1e-3)
    assert torch.allclose(c, c0, atol=1e-3)
    lstm.dropout = 0.5
    state = torch.cuda.get_rng_state()
    first = lstm(x)[0]
    torch.cuda.set_rng_state(state)
    assert torch.equal(lstm(x)[0], first)  # the same masks from the same generator state


def test_the_cpu_recipe_leaves_the_hand_written_passes_out_for_luong_s_lstms():
    """--schedule cpu turns --fused-steps on; Luong et al.'s LSTMs have no such passes, so the
    recipe leaves it out for them rather than have train warn about a flag nobody typed."""
    from nmtkit.cli.train_settings import train_settings

    budget = {"max_updates": 100, "window_renorm": None}
    assert not train_settings("luong", "tiny", "cpu", {**budget, "attention": "local-m"}, set())[1].fused_steps
    assert train_settings("rnnsearch", "tiny", "cpu", budget, set())[1].fused_steps


def test_a_run_from_a_luong_checkpoint_is_a_luong_run_without_arch(luong, overfit, tmp_path):
    """--attention beside --init-from a Luong model, --arch left out, was refused as 'does not
    apply to --arch rnnsearch': the default family, not the checkpoint's."""
    r = CliRunner().invoke(
        main,
        ["train", str(overfit / "bin-kept"), "--save-dir", str(tmp_path / "x"), "--init-from", str(luong)]
        + ["--attention", "local-p", "--dump-config", "-"],
    )
    assert r.exit_code == 0, r.output
    assert "\nattention: local-p\n" in r.stdout and "does not apply" not in r.output


def test_the_non_attentional_base_feeds_nothing_back_unless_asked(tmp_path):
    """--attention none fed h_{t-1} back as input: not the paper's base, whose Table 1 adds input
    feeding only after attention."""

    def dumped(*flags):
        line = ["train", "bin", "--save-dir", str(tmp_path / "r"), "--arch", "luong", *flags, "--dump-config", "-"]
        r = CliRunner().invoke(main, line)
        assert r.exit_code == 0, r.output
        return r.stdout.splitlines()

    assert "# input-feed: false" in dumped("--attention", "none")
    assert "input-feed: true" in dumped("--attention", "none", "--input-feed")
    assert "# input-feed: true" in dumped("--attention", "global")


def test_a_subclass_gives_its_own_attention_made_and_initialised_as_the_papers():
    """Code outside the package replaced self.attention after __init__: the paper's attention made
    and thrown away, and the new one's parameters left out of the uniform(-0.1, 0.1) start."""
    from nmtkit.models.luong import Luong

    class Scaled(LuongAttention):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.temperature = torch.nn.Parameter(torch.full((1,), 5.0))

        def _scores(self, q, keys, h):
            return super()._scores(q, keys, h) / self.temperature

    class ScaledLuong(Luong):
        attention_class = Scaled

    cfg = model_config("luong", src_vocab=9, tgt_vocab=9, emb=8, hidden=8, layers=1, attention="global", score="dot")
    model = ScaledLuong(cfg)
    assert isinstance(model.attention, Scaled) and -0.1 <= model.attention.temperature.item() <= 0.1
    src, out = torch.tensor([[4, 5, 6, 2]]), torch.tensor([[4, 5, 2]])
    scores = []
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
        for temperature in (1.0, 100.0):  # flatter weights: another log p of the same words
            model.attention.temperature.fill_(temperature)
            scores.append(force(model.eval(), model.encode(src, src != 0), out)[0])
    assert not torch.allclose(scores[0], scores[1])


class _Cosine(LuongAttention):
    """A score of a researcher's own that adds no parameter: its weights are the paper's."""

    def _scores(self, q, keys, h):  # (B, Tq, n) against (B, Tx, n): cosines
        return torch.bmm(
            torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(h, dim=-1).transpose(1, 2)
        )


def test_a_model_of_classes_from_outside_nmtkit_is_read_only_where_they_are_built(corpus, tmp_path, monkeypatch):
    """A Luong subclass whose attention only scored another way was saved as 'luong' and read back by
    translate, info and a resumed run as the paper's model, without a word."""
    from nmtkit.core.errors import UserError
    from nmtkit.models import build
    from nmtkit.models.luong import Luong

    class CosineLuong(Luong):
        attention_class = _Cosine

    settings = dict(emb=8, hidden=8, layers=1, attention="global", score="dot")
    run = TrainConfig(max_updates=2, valid_every=2, valid_bleu=False, batch_size=4)
    with monkeypatch.context() as m:
        m.setitem(build.MODELS, "luong", CosineLuong)
        train(corpus, tmp_path / "cos", model_config("luong", **settings), run)
        ckpt = checkpoint.load(tmp_path / "cos" / "last.pt")
        assert ckpt.classes == (f"{__name__}._Cosine", f"{__name__}.{CosineLuong.__qualname__}")
        assert isinstance(checkpoint.model_of(ckpt, "last.pt").attention, _Cosine)  # built here: read
    with pytest.raises(
        UserError, match=r"last.pt: its model was trained with .*_Cosine.*this process builds nmtkit's own luong"
    ):
        checkpoint.model_of(ckpt, "last.pt")
    assert "classes    " in format_info(describe(tmp_path / "cos" / "last.pt"))
    out = CliRunner().invoke(main, ["translate", "-m", str(tmp_path / "cos" / "last.pt")], input="a b\n")
    assert out.exit_code == 2 and "this process builds nmtkit's own luong" in out.output
    train(corpus, tmp_path / "own", model_config("luong", **settings), run)
    assert checkpoint.load(tmp_path / "own" / "last.pt").classes == ()  # nmtkit's own: no entry
