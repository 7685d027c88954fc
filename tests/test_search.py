"""Beam search: exact on a space small enough to enumerate, batch-independent, scores = NLL."""

import itertools

import numpy as np
import pytest
import torch

from nmtkit.config import ModelConfig
from nmtkit.models import build_model
from nmtkit.models.ensemble import Ensemble
from nmtkit.search import SearchConfig, beam_search, force, greedy

EOS = 3


def model_and_batch(seed, tgt_vocab=15):
    torch.manual_seed(seed)
    model = build_model(ModelConfig(src_vocab=20, tgt_vocab=tgt_vocab, emb=12, hidden=10, align=8, maxout=6))
    for p in model.parameters():        # spread-out weights give distinct, peaked distributions
        torch.nn.init.normal_(p, 0, 0.8)
    model.eval()
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 20, (4, 6), generator=g)
    src[1, 4:] = 0
    src[3, 2:] = 0
    return model, src, src != 0


def sequence_score(model, src, mask, tokens):
    """log p(tokens </s> | src) by teacher forcing, for one sentence."""
    tgt_in = torch.tensor([[2] + tokens])
    tgt_out = torch.tensor(tokens + [EOS])
    with torch.no_grad():
        logp = torch.log_softmax(model(src, mask, tgt_in), -1)[0]
    return float(logp[torch.arange(len(tgt_out)), tgt_out].sum())


@pytest.mark.parametrize("penalty", ["none", "average", "gnmt"])
def test_wide_beam_finds_the_exact_n_best_under_each_length_penalty(penalty):
    model, src, mask = model_and_batch(0, tgt_vocab=6)            # words: <unk> <s> 4 5 (<pad> never)
    limit = 3                                                      # at most 2 words, then </s>
    cfg = SearchConfig(beam=30, max_ratio=0.0, max_extra=limit, length_penalty=penalty, alpha=1.5, nbest=4)
    out = beam_search(model, model.encode(src, mask), cfg)
    norm = {"none": lambda s, n: s, "average": lambda s, n: s / n, "gnmt": lambda s, n: s / ((5 + n) / 6) ** 1.5}
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        s, m = src[i:i + 1, :n], mask[i:i + 1, :n]
        candidates = [list(c) for L in range(limit) for c in itertools.product([1, 2, 4, 5], repeat=L)]
        scores = [sequence_score(model, s, m, c) for c in candidates]
        ranked = sorted(range(len(candidates)), key=lambda j: -norm[penalty](scores[j], len(candidates[j]) + 1))
        assert out.tokens[4 * i:4 * i + 4] == [candidates[j] for j in ranked[:4]]
        assert out.scores[4 * i:4 * i + 4] == pytest.approx([scores[j] for j in ranked[:4]], abs=1e-4)
    if penalty == "none":
        assert out.ranking == out.scores


def test_no_unk_never_emits_unk():
    model, src, mask = model_and_batch(5)
    with torch.no_grad():
        model.W_o.bias[1] += 100.0                                # <unk> now wins every step
    enc = model.encode(src, mask)
    assert all(set(t) == {1} for t in beam_search(model, enc, SearchConfig(beam=3)).tokens)
    free = beam_search(model, enc, SearchConfig(beam=3, no_unk=True))
    assert all(t and 1 not in t for t in free.tokens)


def test_forcing_the_search_output_gives_its_score_and_attention():
    model, src, mask = model_and_batch(6)
    enc = model.encode(src, mask)
    out = beam_search(model, enc, SearchConfig(beam=4), attention=True)
    from nmtkit.data.batching import pad
    scores, maps = force(model, enc, pad([np.array(t) for t in out.tokens]))
    assert scores.tolist() == pytest.approx(out.scores, abs=1e-4)
    for i, att in enumerate(out.attention):
        assert np.allclose(maps[i, :att.shape[0], :att.shape[1]].numpy(), att, atol=1e-5)


def test_ensemble_averages_probabilities():
    a, src, mask = model_and_batch(7)
    b, _, _ = model_and_batch(8)
    both = Ensemble([a, b])
    enc, ea, eb = both.encode(src, mask), a.encode(src, mask), b.encode(src, mask)
    y = torch.tensor([2, 5, 6, 7])
    with torch.no_grad():
        lp, _, alpha = both.step(y, both.init_state(enc), enc)
        la, _, aa = a.step(y, a.init_state(ea), ea)
        lb, _, ab = b.step(y, b.init_state(eb), eb)
    assert torch.allclose(lp.exp(), (la.exp() + lb.exp()) / 2, atol=1e-6)
    assert torch.allclose(alpha, (aa + ab) / 2)
    twice = beam_search(Ensemble([a, a]), Ensemble([a, a]).encode(src, mask), SearchConfig(beam=3))
    once = beam_search(a, ea, SearchConfig(beam=3))
    assert twice.tokens == once.tokens and twice.scores == pytest.approx(once.scores, abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_a_sentence_gets_the_same_result_alone_as_in_a_batch(beam):
    model, src, mask = model_and_batch(1)
    together = beam_search(model, model.encode(src, mask), SearchConfig(beam=beam))
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        alone = beam_search(model, model.encode(src[i:i + 1, :n], mask[i:i + 1, :n]), SearchConfig(beam=beam))
        assert alone.tokens[0] == together.tokens[i]
        assert alone.scores[0] == pytest.approx(together.scores[i], abs=1e-4)


def test_scores_are_teacher_forced_log_probabilities_and_greedy_is_argmax():
    model, src, mask = model_and_batch(2)
    enc = model.encode(src, mask)
    for out in (beam_search(model, enc, SearchConfig(beam=5)), greedy(model, enc)):
        for i, (tokens, score) in enumerate(zip(out.tokens, out.scores)):
            n = int(mask[i].sum())
            assert score == pytest.approx(sequence_score(model, src[i:i + 1, :n], mask[i:i + 1, :n], tokens), abs=1e-4)
    g = greedy(model, enc)
    for i, tokens in enumerate(g.tokens):             # each word is the argmax given the ones before
        n = int(mask[i].sum())
        with torch.no_grad():
            logits = model(src[i:i + 1, :n], mask[i:i + 1, :n], torch.tensor([[2] + tokens]))[0]
        logits[:, 0] = float("-inf")
        assert logits.argmax(-1).tolist()[:len(tokens)] == tokens


def test_output_length_limit_and_attention_maps():
    switched = 0     # sentences whose best hypothesis did not start as the top one (the rows reorder)
    for seed in range(3, 8):
        model, src, mask = model_and_batch(seed)
        enc = model.encode(src, mask)
        out = beam_search(model, enc, SearchConfig(beam=4, max_ratio=0.0, max_extra=9), attention=True)
        first = greedy(model, enc, max_ratio=0.0, max_extra=9)
        for i, (tokens, att) in enumerate(zip(out.tokens, out.attention)):
            assert len(tokens) <= 8                              # 9 positions at most, </s> included
            switched += tokens[:1] != first.tokens[i][:1]
            n = int(mask[i].sum())
            assert att.shape == (len(tokens) + 1, n)
            one = model.encode(src[i:i + 1, :n], mask[i:i + 1, :n])   # the chosen words' own attention
            state, want = model.init_state(one), []
            with torch.no_grad():
                for y in [2] + tokens:
                    _, state, alpha = model.step(torch.tensor([y]), state, one)
                    want.append(alpha[0].numpy())
            assert np.allclose(att, np.stack(want), atol=1e-5)
    assert switched


def test_length_normalisation_ranks_by_score_per_token():
    model, src, mask = model_and_batch(4)
    enc = model.encode(src, mask)
    raw = beam_search(model, enc, SearchConfig(beam=5))
    norm = beam_search(model, enc, SearchConfig(beam=5, length_penalty="average"))
    for r_t, r_s, n_t, n_s in zip(raw.tokens, raw.scores, norm.tokens, norm.scores):
        assert r_s >= n_s - 1e-5                                      # raw picks the best total
        assert n_s / (len(n_t) + 1) >= r_s / (len(r_t) + 1) - 1e-5    # normalised the best per token
