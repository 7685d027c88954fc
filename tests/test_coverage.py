"""Tu et al. (2016)'s coverage in RNNsearch, read by the attention: linguistic, C_i = C_{i−1} + α_i / Φ,
and neural, a GRU per source word; one recurrence for training and search."""

from __future__ import annotations

import pytest
import torch

from nmtkit import checkpoint
from nmtkit.core.errors import UserError
from nmtkit.models.build import build_model
from nmtkit.models.config import MAX_FERTILITY, NEURAL_COVERAGE_DIM, from_flat_record, model_config
from nmtkit.models.coverage import LinguisticCoverage, NeuralCoverage
from nmtkit.models.ensemble import Ensemble
from nmtkit.translate.search import SearchConfig, beam_search, force
from tests.checkpoints import fake_checkpoint
from tests.conftest import train_tiny
from tests.test_fused import TINY, batch

KINDS = ("linguistic", "neural")


def covered(kind="linguistic"):
    torch.manual_seed(0)
    model = build_model(model_config(arch="rnnsearch", coverage=kind, **TINY))
    for p in model.parameters():  # B.1's tiny weights would make every check trivially close
        torch.nn.init.normal_(p, 0, 0.3)
    return model.eval()


def test_coverage_sums_the_attention_over_fertility_and_the_attention_reads_it():
    model = covered("linguistic")
    src, mask, tgt = batch()
    enc = model.encode(src, mask)
    assert enc.coverage is not None and bool(((enc.coverage > 0) & (enc.coverage < MAX_FERTILITY)).all())
    state, alphas = model.init_state(enc), []
    for y in tgt[:, :4].unbind(1):
        _, state, alpha = model.step(y, state, enc)
        alphas.append(alpha)
    coverage = state[:, model.cfg.hidden :]
    assert torch.allclose(coverage, torch.stack(alphas).sum(0) / enc.coverage, atol=1e-5)
    # the attention reads it: the same step with another coverage attends elsewhere
    s = state[:, : model.cfg.hidden]
    _, _, moved = model.step(tgt[:, 4], torch.cat([s, coverage + 1.0], 1), enc)
    _, _, alpha = model.step(tgt[:, 4], state, enc)
    assert not torch.allclose(alpha, moved, atol=1e-3)


def hand_gru(model, c, alpha, h, s_prev):
    """Tu et al.'s gated update written out: z, r = σ(W_{z,r} x + U_{z,r} C), C̃ = tanh(W x + U (r ∘ C)),
    C' = (1 − z) ∘ C + z ∘ C̃, with x = [α_j; h_j; s_{i−1}] for each source word j."""
    gru, d = model.coverage.gru, NEURAL_COVERAGE_DIM
    x = torch.cat([alpha.unsqueeze(-1), h, s_prev.unsqueeze(1).expand(-1, h.shape[1], -1)], -1)
    wx = x @ gru.W.weight.T + gru.W.bias
    U_z, U_r = gru.U_zr.weight[:d], gru.U_zr.weight[d:]
    z = torch.sigmoid(wx[..., :d] + c @ U_z.T)
    r = torch.sigmoid(wx[..., d : 2 * d] + c @ U_r.T)
    candidate = torch.tanh(wx[..., 2 * d :] + (r * c) @ gru.U.weight.T)
    return (1 - z) * c + z * candidate


def hand_attention(model, enc, s_prev, c):
    """e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j + V_a C_{i−1,j}), softmax over the real words."""
    att = model.attention
    e = torch.tanh(att.W_a(s_prev).unsqueeze(1) + att.U_a(enc.h) + c @ att.V_a.weight.T) @ att.v_a.weight[0]
    return torch.softmax(e.masked_fill(~enc.mask, float("-inf")), -1)


def test_under_bf16_autocast_the_coverage_keeps_every_steps_share():
    """C_i sums a step's α/Φ at a time: in float32 under bfloat16 too, whose 8 bits would drop
    the shares below half its step. The state equals the float32 sum of the same shares, to
    float32's rounding."""
    model = covered("linguistic")
    torch.manual_seed(1)
    src = torch.randint(4, 20, (2, 40))
    mask = torch.ones_like(src, dtype=torch.bool)
    y = torch.randint(4, 15, (2,))
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        enc = model.encode(src, mask)
        state, shares = model.init_state(enc), torch.zeros(2, 40)
        for _ in range(60):
            _, state, alpha = model.step(y, state, enc)
            shares += alpha.float() / enc.coverage.float()
    assert state.dtype == torch.float32
    torch.testing.assert_close(state[:, model.cfg.hidden :], shares, rtol=1e-5, atol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_int8_translates_a_coverage_model(kind):
    """--int8 leaves the layers whose weights are read as tensors (the coverage's, V_a) in float32."""
    from nmtkit.models.int8 import quantize_int8

    model = covered(kind)
    src, mask, _ = batch()
    quantized = quantize_int8(model)
    assert type(quantized.attention.V_a) is torch.nn.Linear
    assert all(type(m) is not torch.nn.Linear for m in quantized.gru.modules() if m is not quantized.gru)
    with torch.inference_mode():
        hyps = beam_search(quantized, quantized.encode(src, mask), SearchConfig(beam=3, max_ratio=1.5))
    assert len(hyps.tokens) == len(src) and all(hyps.tokens)


def test_neural_coverage_is_a_gru_per_source_word_in_the_state_and_the_attention_reads_it():
    model = covered("neural")
    n, d = model.cfg.hidden, NEURAL_COVERAGE_DIM
    src, mask, tgt = batch()
    enc = model.encode(src, mask)
    assert isinstance(model.coverage, NeuralCoverage) and enc.coverage.shape == (4, 9, 3 * d)
    state = model.init_state(enc)
    assert state.shape == (4, n + 9 * d) and not state[:, n:].any()  # C_0 = 0
    c = state[:, n:].view(4, 9, d)
    with torch.no_grad():
        for y in tgt[:, :3].unbind(1):  # past the first step, where U's terms vanish with C_0
            s_prev = state[:, :n]
            _, state, alpha = model.step(y, state, enc)
            assert state.shape == (4, n + 9 * d)
            assert torch.allclose(alpha, hand_attention(model, enc, s_prev, c), atol=1e-5)
            c = hand_gru(model, c, alpha, enc.h, s_prev)
            assert torch.allclose(state[:, n:].view(4, 9, d), c, atol=1e-5)
        _, _, moved = model.step(tgt[:, 3], torch.cat([state[:, :n], state[:, n:] + 1.0], 1), enc)
        _, _, alpha = model.step(tgt[:, 3], state, enc)
    assert not torch.allclose(alpha, moved, atol=1e-3)


def coverage_gradients(model):
    """The gradients of what only the coverage model has: V_a, and Φ's U_f or the coverage GRU's W
    (its α, h and s columns apart) and U."""
    grads = {"V_a": model.attention.V_a.weight.grad}
    if isinstance(model.coverage, LinguisticCoverage):
        return grads | {"U_f": model.coverage.U_f.weight.grad}
    gru, h = model.coverage.gru, model.coverage.annotation
    W = gru.W.weight.grad
    return grads | {
        "W_alpha": W[:, :1],
        "W_h": W[:, 1 : 1 + h],
        "W_s": W[:, 1 + h :],
        "U_zr": gru.U_zr.weight.grad,
        "U": gru.U.weight.grad,
    }


@pytest.mark.parametrize("kind", KINDS)
def test_teacher_forcing_and_search_steps_agree_and_the_gradient_reaches_coverage(kind):
    model = covered(kind)
    src, mask, tgt = batch()
    tgt[:, 0] = 2  # <s>, as force feeds it
    enc = model.encode(src, mask)
    with torch.no_grad():
        _, _, walked = force(model, enc, tgt[:, 1:])
        _, forced_alpha = model.teacher_forced(enc, tgt[:, :-1])
    assert torch.allclose(walked, forced_alpha, atol=1e-5)
    model.train()
    model.zero_grad()
    model(src, mask, tgt[:, :-1], tgt[:, 1:]).loss.backward()
    assert [name for name, g in coverage_gradients(model).items() if g is None or not g.abs().sum() > 0] == []


def best_outputs_scored_by_force(model, enc, hyps):
    """Each sentence's best output, </s>-terminated, and its forced log-probability."""
    best = [hyps.tokens[i * hyps.nbest] for i in range(len(enc.mask))]
    out = torch.zeros(len(best), max(len(t) for t in best) + 1, dtype=torch.long)
    for i, t in enumerate(best):
        out[i, : len(t) + 1] = torch.tensor(t + [3])  # </s>
    scores, _, _ = force(model, enc, out)
    return best, scores.tolist()


@pytest.mark.parametrize("kind", KINDS)
def test_beam_search_carries_each_hypothesis_coverage(kind):
    """Beam search reorders [s; C] with its hypotheses: its best output scores, by force, what
    the search said (a coverage left behind by a reordered beam would change the score)."""
    model = covered(kind)
    src, mask, _ = batch()
    enc = model.encode(src, mask)
    with torch.no_grad():
        hyps = beam_search(model, enc, SearchConfig(beam=4, max_ratio=1.5, max_extra=3))
        best, scores = best_outputs_scored_by_force(model, enc, hyps)
    assert all(best) and scores == pytest.approx([hyps.scores[i * hyps.nbest] for i in range(4)], abs=1e-4)


def test_an_ensemble_splits_its_members_coverages_by_width():
    """A linguistic and a neural member: states of n + Tx and n + Tx·d numbers side by side."""
    members = [covered(kind) for kind in KINDS]
    torch.manual_seed(1)
    for p in members[1].parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    both = Ensemble(members).eval()
    src, mask, _ = batch()
    enc = both.encode(src, mask)
    with torch.no_grad():
        hyps = beam_search(both, enc, SearchConfig(beam=3, max_ratio=1.5, max_extra=3))
        best, scores = best_outputs_scored_by_force(both, enc, hyps)
    n, d = TINY["hidden"], NEURAL_COVERAGE_DIM
    assert both.widths == [n + 9, n + 9 * d]
    assert all(best) and scores == pytest.approx([hyps.scores[i * hyps.nbest] for i in range(4)], abs=1e-4)


def test_the_checkpoint_keeps_the_coverage_kind_and_an_older_one_has_none(tmp_path):
    cfg = model_config(arch="rnnsearch", coverage="neural", **{**TINY, "src_vocab": 6, "tgt_vocab": 6})
    model = build_model(cfg)
    fake_checkpoint(tmp_path / "c.pt", weights=model.state_dict(), model=cfg)
    back = checkpoint.load(tmp_path / "c.pt")
    assert back.model.coverage.kind == "neural"
    loaded = checkpoint.model_of(back, tmp_path / "c.pt").state_dict()
    assert loaded.keys() == model.state_dict().keys()
    assert all(torch.equal(loaded[k], v) for k, v in model.state_dict().items())
    older = {k: v for k, v in cfg.flat().items() if k not in ("coverage", "max_fertility")}  # 1.0's record
    assert from_flat_record(older).coverage.kind == "none"


def test_train_coverage_neural_trains_saves_and_translates(raw, tmp_path):
    from click.testing import CliRunner

    from nmtkit.cli import main
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    run = tmp_path / "run"
    r = train_tiny(tmp_path / "bin", run, "--max-updates", 2, "--no-valid-bleu", "--coverage", "neural")
    assert r.exit_code == 0, r.output
    assert checkpoint.load(run / "last.pt").model.coverage.kind == "neural"
    r = CliRunner().invoke(
        main, ["translate", "-m", str(run / "last.pt"), "--beam", "3", "--threads", "1"], input="the cat\n"
    )
    assert r.exit_code == 0 and len(r.output.splitlines()) == 1, r.output


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("arch", ["rnnencdec", "luong"])
def test_coverage_needs_rnnsearch(arch, kind):
    from nmtkit.cli.train_settings import train_settings

    with pytest.raises(UserError, match="--coverage"):
        train_settings(arch, "tiny", "appendix-b", {"coverage": kind}, {"coverage"})


def test_the_long_passage_table_counts_output_length_against_the_reference(tmp_path):
    """A run that drops the second half of every long passage shows a ratio of about 0.5 over
    60 words and 1 below, one that writes that half twice a ratio of 1 and its repeats; BLEU per
    bucket is the recipe's."""
    from bench.paper import long_rows

    raw, runs = tmp_path / "raw", tmp_path / "runs"
    raw.mkdir()
    words = [f"w{i}" for i in range(100)]
    short = [" ".join(words[:n]) for n in (5, 12, 30)]
    long = [" ".join(words[:n]) for n in (64, 80)]
    for name, lines in (("test", short), ("test-long", short + long)):
        for lang in ("en", "fr"):
            (raw / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for run, cut in (("whole", 1.0), ("half", 0.5), ("twice", 0.5)):
        (runs / run).mkdir(parents=True)
        (runs / run / "test.hyp.fr").write_text("\n".join(short) + "\n", encoding="utf-8")
        cropped = [
            " ".join(s.split()[: int(len(s.split()) * cut)] * (2 if run == "twice" else 1))
            if len(s.split()) > 60
            else s
            for s in short + long
        ]
        (runs / run / "test-long.hyp.fr").write_text("\n".join(cropped) + "\n", encoding="utf-8")
    rows = long_rows(runs, raw, ("whole", "half", "twice"))
    whole, half, twice = (r.strip("| ").split(" | ") for r in rows[2:])
    assert whole[-3:] == ["1.00", "1.00", "0.0%"] and half[-3:] == ["1.00", "0.50", "0.0%"]
    # the half written twice is as long as the reference, and its second half repeats the first:
    # 29 of 61 4-grams (64 words) and 37 of 77 (80 words)
    assert twice[-3:] == ["1.00", "1.00", f"{100 * (29 + 37) / (61 + 77):.1f}%"]
    assert whole[1] == half[1] == "100.00"


def test_make_paper_coverage_searches_each_model_as_the_paper_and_per_word(tmp_path):
    """The under-translation table has a row per model and search: the paper's raw log-probability,
    and log-probability per word in run/average/, which the long table reads as a run of its own."""
    import re
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        ["make", "-n", "paper-coverage", f"PAPER={tmp_path}", "COVERAGE_MODELS=a-50 b-50-coverage"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    trains = re.findall(r"--save-dir \S+/(\S+) .*", out)
    assert trains == ["a-50", "b-50-coverage"] and "--coverage linguistic" in out.split("--save-dir")[2]
    per_word = re.findall(
        rf"-m {tmp_path}/(\S+)/best.pt \S+ \\\n\s+-o {tmp_path}/(\S+)/\$s.hyp.fr .*--length-penalty average", out
    )
    assert per_word == [("a-50", "a-50/average"), ("b-50-coverage", "b-50-coverage/average")]
    assert '--models "a-50 b-50-coverage a-50/average b-50-coverage/average"' in out
    plain = subprocess.run(
        ["make", "-n", "paper-coverage", f"PAPER={tmp_path}", "COVERAGE_MODELS=a-50", "COVERAGE_SEARCH="],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--length-penalty" not in plain and '--models "a-50"' in plain


def test_the_fertility_bound_n_scales_each_source_words_fertility():
    """--max-fertility N (Tu et al.'s N, 2 before it was a setting): Φ_j = N σ(U_f h_j), so the same
    weights give fertilities in the ratio of the bounds; a model without linguistic coverage refuses it."""
    import torch

    from nmtkit.core.errors import UserError
    from nmtkit.models.build import build_model
    from nmtkit.models.config import model_config

    sizes = dict(src_vocab=9, tgt_vocab=9, emb=8, hidden=8, align=8, maxout=8, coverage="linguistic")
    torch.manual_seed(0)
    two = build_model(model_config(**sizes))
    three = build_model(model_config(**sizes, max_fertility=3.0))
    three.load_state_dict(two.state_dict())
    src = torch.tensor([[4, 5, 6, 3]])
    mask = torch.ones_like(src, dtype=torch.bool)
    with torch.no_grad():
        f2, f3 = two.encode(src, mask).coverage, three.encode(src, mask).coverage
    assert torch.allclose(f3, f2 * 1.5) and bool((f3 < 3).all()) and bool((f2 < 2).all())
    with pytest.raises(UserError, match="--max-fertility bounds the linguistic coverage"):
        model_config(max_fertility=3.0)
    # typed at its default beside another coverage: the config cannot tell it from none, the command line can
    from nmtkit.cli.train_settings import train_settings

    typed = {"coverage": "neural", "max_fertility": 2.0}
    with pytest.raises(UserError, match="--max-fertility bounds the linguistic coverage"):
        train_settings("rnnsearch", "tiny", "appendix-b", typed, set(typed))
    assert train_settings("rnnsearch", "tiny", "appendix-b", {"coverage": "neural"}, {"coverage"})


def test_a_coverage_model_written_by_1_1_reads_its_weights_under_their_old_names(tmp_path):
    """1.1 kept U_f and the neural GRU on RNNsearch itself (``U_f.*``, ``coverage_rnn.*``): a
    checkpoint is read with today's names (:mod:`nmtkit.models.coverage`'s modules), so that the
    model, a resumed run and ``average`` all see one set, and the model takes the weights as saved."""
    for kind, new, old in (("linguistic", "coverage.U_f.", "U_f."), ("neural", "coverage.", "coverage_rnn.")):
        cfg = model_config(**{**TINY, "src_vocab": 6, "tgt_vocab": 6}, coverage=kind)
        model = build_model(cfg)
        as_1_1 = {(old + k[len(new) :] if k.startswith(new) else k): v for k, v in model.state_dict().items()}
        assert any(k.startswith(old) for k in as_1_1) and not any(k.startswith(new) for k in as_1_1)
        fake_checkpoint(tmp_path / f"{kind}.pt", weights=as_1_1, model=cfg)
        read = checkpoint.load(tmp_path / f"{kind}.pt")
        assert set(read.weights) == set(model.state_dict())
        fresh = checkpoint.model_of(read, "test")
        assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), model.state_dict().values()))
