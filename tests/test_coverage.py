"""Tu et al. (2016)'s linguistic coverage in RNNsearch: C_i = C_{i−1} + α_i / Φ, read by the
attention; one recurrence for training and search."""

from __future__ import annotations

import pytest
import torch

from nmtkit.core.errors import UserError
from nmtkit.models.build import build_model
from nmtkit.models.config import MAX_FERTILITY, ModelConfig
from nmtkit.translate.search import SearchConfig, beam_search, force
from tests.test_fused import TINY, batch


def covered():
    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="rnnsearch", coverage="linguistic", **TINY))
    for p in model.parameters():           # B.1's tiny weights would make every check trivially close
        torch.nn.init.normal_(p, 0, 0.3)
    return model.eval()


def test_coverage_sums_the_attention_over_fertility_and_the_attention_reads_it():
    model = covered()
    src, mask, tgt = batch()
    enc = model.encode(src, mask)
    assert enc.fertility is not None and bool(((enc.fertility > 0) & (enc.fertility < MAX_FERTILITY)).all())
    state, alphas = model.init_state(enc), []
    for y in tgt[:, :4].unbind(1):
        _, state, alpha = model.step(y, state, enc)
        alphas.append(alpha)
    coverage = state[:, model.cfg.hidden:]
    assert torch.allclose(coverage, torch.stack(alphas).sum(0) / enc.fertility, atol=1e-5)
    # the attention reads it: the same step with another coverage attends elsewhere
    s = state[:, :model.cfg.hidden]
    _, _, moved = model.step(tgt[:, 4], torch.cat([s, coverage + 1.0], 1), enc)
    _, _, alpha = model.step(tgt[:, 4], state, enc)
    assert not torch.allclose(alpha, moved, atol=1e-3)


def test_teacher_forcing_and_search_steps_agree_and_the_gradient_reaches_coverage():
    model = covered()
    src, mask, tgt = batch()
    tgt[:, 0] = 2                                        # <s>, as force feeds it
    enc = model.encode(src, mask)
    with torch.no_grad():
        _, walked = force(model, enc, tgt[:, 1:])
        _, forced_alpha = model.teacher_forced(enc, tgt[:, :-1])
    assert torch.allclose(walked, forced_alpha, atol=1e-5)
    model.train()
    model.zero_grad()
    model(src, mask, tgt[:, :-1], tgt[:, 1:]).backward()
    assert model.attention.V_a.weight.grad.abs().sum() > 0 and model.U_f.weight.grad.abs().sum() > 0


def test_beam_search_carries_each_hypothesis_coverage():
    """Beam search reorders [s; C] with its hypotheses: its best output scores, by force, what
    the search said (a coverage left behind by a reordered beam would change the score)."""
    model = covered()
    src, mask, _ = batch()
    enc = model.encode(src, mask)
    with torch.no_grad():
        hyps = beam_search(model, enc, SearchConfig(beam=4, max_ratio=1.5, max_extra=3))
        best = [hyps.tokens[i * hyps.nbest] for i in range(4)]
        out = torch.zeros(4, max(len(t) for t in best) + 1, dtype=torch.long)
        for i, t in enumerate(best):
            out[i, :len(t) + 1] = torch.tensor(t + [3])          # </s>
        scores, _ = force(model, enc, out)
    assert all(best) and scores.tolist() == pytest.approx([hyps.scores[i * hyps.nbest] for i in range(4)], abs=1e-4)


@pytest.mark.parametrize("arch", ["rnnencdec", "luong"])
def test_coverage_needs_rnnsearch(arch):
    from nmtkit.cli.train_settings import train_settings
    with pytest.raises(UserError, match="--coverage"):
        train_settings(arch, "tiny", "appendix-b", {"coverage": "linguistic"}, {"coverage"})


def test_the_long_passage_table_counts_output_length_against_the_reference(tmp_path):
    """A run that drops the second half of every long passage shows a ratio of about 0.5 over
    60 words and 1 below; BLEU per bucket is the recipe's."""
    from nmtkit.recipes.paper import long_rows
    raw, runs = tmp_path / "raw", tmp_path / "runs"
    raw.mkdir()
    words = [f"w{i}" for i in range(100)]
    short = [" ".join(words[:n]) for n in (5, 12, 30)]
    long = [" ".join(words[:n]) for n in (64, 80)]
    for name, lines in (("test", short), ("test-long", short + long)):
        for lang in ("en", "fr"):
            (raw / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for run, cut in (("whole", 1.0), ("half", 0.5)):
        (runs / run).mkdir(parents=True)
        (runs / run / "test.hyp.fr").write_text("\n".join(short) + "\n", encoding="utf-8")
        cropped = [" ".join(s.split()[:int(len(s.split()) * cut)]) if len(s.split()) > 60 else s for s in short + long]
        (runs / run / "test-long.hyp.fr").write_text("\n".join(cropped) + "\n", encoding="utf-8")
    rows = long_rows(runs, raw, ("whole", "half"))
    whole, half = (r.strip("| ").split(" | ") for r in rows[2:])
    assert whole[-2:] == ["1.00", "1.00"] and half[-2:] == ["1.00", "0.50"]
    assert whole[1] == half[1] == "100.00"
