"""Beam search: exact on a space small enough to enumerate, batch-independent, scores = NLL."""

import itertools

import numpy as np
import pytest
import torch

from nmtkit.config import ModelConfig
from nmtkit.models import build_model
from nmtkit.search import SearchConfig, beam_search, greedy

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


def test_wide_beam_finds_the_exact_best_sequence():
    model, src, mask = model_and_batch(0, tgt_vocab=6)            # words: <unk> <s> 4 5 (<pad> never)
    limit = 3                                                      # at most 2 words, then </s>
    cfg = SearchConfig(beam=30, max_ratio=0.0, max_extra=limit)
    out = beam_search(model, model.encode(src, mask), cfg)
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        s, m = src[i:i + 1, :n], mask[i:i + 1, :n]
        candidates = [list(c) for L in range(limit) for c in itertools.product([1, 2, 4, 5], repeat=L)]
        scores = [sequence_score(model, s, m, c) for c in candidates]
        best = int(np.argmax(scores))
        assert out.tokens[i] == candidates[best]
        assert out.scores[i] == pytest.approx(scores[best], abs=1e-4)


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
    raw = beam_search(model, enc, SearchConfig(beam=5, alpha=0.0))
    norm = beam_search(model, enc, SearchConfig(beam=5, alpha=1.0))
    for r_t, r_s, n_t, n_s in zip(raw.tokens, raw.scores, norm.tokens, norm.scores):
        assert r_s >= n_s - 1e-5                                      # raw picks the best total
        assert n_s / (len(n_t) + 1) >= r_s / (len(r_t) + 1) - 1e-5    # normalised the best per token
