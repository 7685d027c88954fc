"""Beam search: exact on a space small enough to enumerate, batch-independent, scores = NLL."""

import itertools
import math

import numpy as np
import pytest
import torch

from nmtkit.core.errors import UserError
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from nmtkit.models.ensemble import Ensemble
from nmtkit.translate.sampling import sample
from nmtkit.translate.search import beam_search, force, greedy, ranking
from nmtkit.translate.settings import SearchConfig

EOS = 3


def model_and_batch(seed, tgt_vocab=15, output_rank=0):
    torch.manual_seed(seed)
    model = build_model(
        model_config(src_vocab=20, tgt_vocab=tgt_vocab, emb=12, hidden=10, align=8, maxout=6, output_rank=output_rank)
    )
    for p in model.parameters():  # spread-out weights give distinct, peaked distributions
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
        logp = torch.log_softmax(model(src, mask, tgt_in).logits, -1)[0]
    return float(logp[torch.arange(len(tgt_out)), tgt_out].sum())


@pytest.mark.parametrize("penalty", ["none", "average", "power", "gnmt"])
def test_wide_beam_finds_the_exact_n_best_under_each_length_penalty(penalty):
    model, src, mask = model_and_batch(0, tgt_vocab=6)  # words: <unk> 4 5 (<pad> and <s> never)
    limit = 3  # at most 2 words, then </s>
    cfg = SearchConfig(beam=30, max_ratio=0.0, max_extra=limit, length_penalty=penalty, alpha=1.5, nbest=4, min_len=0)
    out = beam_search(model, model.encode(src, mask), cfg)
    norm = {
        "none": lambda s, n: s,
        "average": lambda s, n: s / n,
        "power": lambda s, n: s / n**1.5,
        "gnmt": lambda s, n: s / ((5 + n) / 6) ** 1.5,
    }
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        s, m = src[i : i + 1, :n], mask[i : i + 1, :n]
        candidates = [list(c) for L in range(limit) for c in itertools.product([1, 4, 5], repeat=L)]
        scores = [sequence_score(model, s, m, c) for c in candidates]
        ranked = sorted(range(len(candidates)), key=lambda j: -norm[penalty](scores[j], len(candidates[j]) + 1))
        assert out.tokens[4 * i : 4 * i + 4] == [candidates[j] for j in ranked[:4]]
        assert out.scores[4 * i : 4 * i + 4] == pytest.approx([scores[j] for j in ranked[:4]], abs=1e-4)
    if penalty == "none":
        assert out.ranking == out.scores


def test_no_unk_never_emits_unk():
    model, src, mask = model_and_batch(5)
    with torch.no_grad():
        model.W_o.bias[1] += 100.0  # <unk> now wins every step
    enc = model.encode(src, mask)
    with_unk = beam_search(model, enc, SearchConfig(beam=3, nbest=3)).tokens
    assert all(t and set(t) == {1} for t in with_unk[::3])  # the best: <unk>s only
    free = beam_search(model, enc, SearchConfig(beam=3, nbest=3, no_unk=True))
    assert all(1 not in t for t in free.tokens) and any(free.tokens)


def test_the_start_symbol_is_never_emitted_by_the_search_or_the_sampler():
    """<s> is only ever read: a shortlist that renormalises over a few words made it a translation."""
    model, src, mask = model_and_batch(5)
    with torch.no_grad():
        model.W_o.bias[2] += 100.0  # <s> would win every step
    enc = model.encode(src, mask)
    for out in (
        beam_search(model, enc, SearchConfig(beam=3, nbest=3)),
        beam_search(model, enc, SearchConfig(beam=1)),
        sample(model, enc, SearchConfig(sampling=True, nbest=2, seed=1).check()),
    ):
        assert all(2 not in t for t in out.tokens) and any(out.tokens)


def test_forcing_the_search_output_gives_its_score():
    model, src, mask = model_and_batch(6)
    enc = model.encode(src, mask)
    out = beam_search(model, enc, SearchConfig(beam=4))
    from nmtkit.data.batching import pad

    scores, words, maps = force(model, enc, pad([np.array(t) for t in out.tokens]))
    assert scores.tolist() == pytest.approx(out.scores, abs=1e-4)
    assert words.sum(1).tolist() == pytest.approx(out.scores, abs=1e-4)  # each token's, 0 at padding
    assert maps.shape == (src.shape[0], max(len(t) for t in out.tokens) + 1, src.shape[1])


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
        alone = beam_search(model, model.encode(src[i : i + 1, :n], mask[i : i + 1, :n]), SearchConfig(beam=beam))
        assert alone.tokens[0] == together.tokens[i]
        assert alone.scores[0] == pytest.approx(together.scores[i], abs=1e-4)


@pytest.mark.parametrize("output_rank", [0, 9])  # W_o t, and the factored W_o W_r t
def test_scores_are_teacher_forced_log_probabilities_and_greedy_is_argmax(output_rank):
    model, src, mask = model_and_batch(2, output_rank=output_rank)
    enc = model.encode(src, mask)
    for out in (beam_search(model, enc, SearchConfig(beam=5)), greedy(model, enc)):
        for i, (tokens, score) in enumerate(zip(out.tokens, out.scores)):
            n = int(mask[i].sum())
            assert score == pytest.approx(
                sequence_score(model, src[i : i + 1, :n], mask[i : i + 1, :n], tokens), abs=1e-4
            )
    g = greedy(model, enc)
    for i, tokens in enumerate(g.tokens):  # each word is the argmax given the ones before
        n = int(mask[i].sum())
        with torch.no_grad():
            logits = model(src[i : i + 1, :n], mask[i : i + 1, :n], torch.tensor([[2] + tokens])).logits[0]
        logits[:, 0] = float("-inf")
        logits[0, EOS] = float("-inf")  # at least one word (min_len)
        best = logits.argmax(-1).tolist()
        assert best[:-1] == tokens
        assert best[-1] == EOS or len(tokens) + 1 == 2 * n + 10  # or the output limit forced </s>


def test_output_length_limit():
    for seed in range(3, 8):
        model, src, mask = model_and_batch(seed)
        out = beam_search(model, model.encode(src, mask), SearchConfig(beam=4, max_ratio=0.0, max_extra=9))
        assert all(len(tokens) <= 8 for tokens in out.tokens)  # 9 positions at most, </s> included
        half = beam_search(model, model.encode(src, mask), SearchConfig(beam=4, max_ratio=0.5, max_extra=0))
        for i, tokens in enumerate(half.tokens):
            assert len(tokens) + 1 <= max(1, int(mask[i].sum()) // 2)


def test_the_search_ends_at_the_output_limit_whatever_the_scores():
    """NaN scores (a damaged weight) never compare below the pool's: the search ran forever."""
    model, src, mask = model_and_batch(3)
    with torch.no_grad():
        model.W_o.weight[0, 0] = float("nan")
    for beam in (1, 4):
        out = beam_search(model, model.encode(src, mask), SearchConfig(beam=beam, max_ratio=0.0, max_extra=9))
        assert len(out.tokens) == 4 and all(len(tokens) <= 8 for tokens in out.tokens)


def test_a_minimum_length_beyond_the_output_limit_gives_way_to_it_not_an_empty_output():
    """The limit bounds a request's work (min_len's own bound is far past it); no hypothesis
    ended before, and each sentence got an empty output scored -inf."""
    model, src, mask = model_and_batch(4)
    out = beam_search(model, model.encode(src, mask), SearchConfig(beam=3, max_ratio=0.0, max_extra=4, min_len=6))
    assert all(len(tokens) == 3 for tokens in out.tokens) and all(math.isfinite(s) for s in out.scores)


def test_a_minimum_ratio_holds_each_sentence_to_its_share_of_its_source_in_search_and_sampling():
    """With </s> the likeliest word everywhere, each output ends at its floor: the larger of
    min_len and min_ratio × its source's units (</s> included), rounded down; the limit overrides."""
    model, src, mask = model_and_batch(6)
    with torch.no_grad():
        model.W_o.bias[EOS] += 50
    enc = model.encode(src, mask)
    assert mask.sum(1).tolist() == [6, 4, 6, 2]
    cases = [
        (SearchConfig(beam=4), [1, 1, 1, 1]),
        (SearchConfig(beam=4, min_ratio=0.5), [3, 2, 3, 1]),
        (SearchConfig(beam=4, min_ratio=0.5, min_len=3), [3, 3, 3, 3]),
        (SearchConfig(beam=4, min_ratio=5.0), [21, 17, 21, 10]),  # 2·n + 10 - 1 words at most
        (SearchConfig(sampling=True, nbest=2, min_ratio=0.5), [3, 3, 2, 2, 3, 3, 1, 1]),
    ]
    for cfg, lengths in cases:
        out = (sample if cfg.sampling else beam_search)(model, enc, cfg)
        assert [len(tokens) for tokens in out.tokens] == lengths, cfg
    with pytest.raises(UserError, match="min-output-ratio"):  # 1e30 would wrap past int64 to no floor
        SearchConfig(min_ratio=1e30)
    with pytest.raises(UserError, match="max-output-ratio"):  # and this one to a limit of 1
        SearchConfig(max_ratio=1e30)


def test_length_normalisation_ranks_by_score_per_token():
    model, src, mask = model_and_batch(4)
    enc = model.encode(src, mask)
    raw = beam_search(model, enc, SearchConfig(beam=5))
    norm = beam_search(model, enc, SearchConfig(beam=5, length_penalty="average"))
    for r_t, r_s, n_t, n_s in zip(raw.tokens, raw.scores, norm.tokens, norm.scores):
        assert r_s >= n_s - 1e-5  # raw picks the best total
        assert n_s / (len(n_t) + 1) >= r_s / (len(r_t) + 1) - 1e-5  # normalised the best per token


class Scripted(torch.nn.Module):
    """A toy model for search: the next-word log-probabilities are a fixed function of the
    sentence and the prefix written so far (``table(sentence, prefix) -> logits``)."""

    def __init__(self, table, vocab):
        super().__init__()
        self.table, self.vocab, self.prefixes = table, vocab, [()]

    def encode(self, sentences):
        from nmtkit.models.base import EncoderOut

        ids = torch.tensor(sentences, dtype=torch.float).view(-1, 1, 1)
        return EncoderOut(ids, torch.ones(len(sentences), 1, dtype=torch.bool))

    def init_state(self, enc):
        return torch.cat([enc.h[:, 0], torch.zeros(len(enc.h), 1)], 1)  # [sentence, prefix id]

    def step(self, y_prev, state, enc):
        logp, new = [], []
        for y, (sentence, prefix) in zip(y_prev.tolist(), state.long().tolist()):
            words = self.prefixes[prefix] + (() if y == 2 else (y,))
            if words not in self.prefixes:
                self.prefixes.append(words)
            new.append([sentence, self.prefixes.index(words)])
            logp.append(torch.log_softmax(torch.tensor(self.table(sentence, words), dtype=torch.float), 0))
        return torch.stack(logp), torch.tensor(new, dtype=torch.float), None

    def attention_follows_input(self):
        return False


NO = float("-inf")


def test_a_finished_hypothesis_is_never_lost_to_open_ones():
    # after the first word C: </s> (p = 0.25) is among the 2 best extensions with A (0.6), so
    # "C" (log p = -1.39) is found; then "C A X" and "C A Y" (-1.31 each) outscore it, and
    # everything after them is unlikely. A beam of 2 that keeps finished hypotheses in its
    # slots drops "C </s>" there and returns far worse.
    A, B, C, X, Y = 4, 5, 6, 7, 8
    V = 9

    def probable(**logp):
        row = [NO] * V
        for word, value in logp.items():
            row[{"EOS": EOS, "A": A, "B": B, "C": C, "X": X, "Y": Y, "UNK": 1}[word]] = value
        return row

    def table(sentence, prefix):
        if not prefix:
            return probable(C=0.0)
        if prefix == (C,):
            return probable(EOS=math.log(0.25), A=math.log(0.6), B=math.log(0.15))
        if prefix == (C, A):
            return probable(EOS=math.log(0.1), X=math.log(0.45), Y=math.log(0.45))
        return probable(UNK=0.0, EOS=-8.0, A=-2.0, B=-2.0, C=-2.0, X=-2.0, Y=-2.0)  # </s> costly

    out = beam_search(Scripted(table, V), Scripted(table, V).encode([0]), SearchConfig(beam=2, max_extra=12))
    assert out.tokens == [[C]]
    assert out.scores[0] == pytest.approx(math.log(0.25))


def random_table(seed, vocab):
    def table(sentence, prefix):
        g = np.random.default_rng([seed, sentence, *prefix])
        logits = g.normal(0, 2, vocab)
        logits[[0, 2]] = NO  # never <pad> or <s>
        return logits.tolist()

    return table


def exhaustive(table, sentence, words, longest):
    """Every output of at most ``longest`` words with its log-probability (</s> included)."""
    out = []
    for n in range(longest + 1):
        for c in itertools.product(words, repeat=n):
            score = 0.0
            for i, y in enumerate((*c, EOS)):
                score += float(torch.log_softmax(torch.tensor(table(sentence, c[:i])), 0)[y])
            out.append((list(c), score))
    return out


@pytest.mark.parametrize("penalty", ["none", "average", "power", "gnmt"])
def test_a_beam_as_wide_as_all_prefixes_finds_the_exhaustive_optimum(penalty):
    words, longest = [1, 4, 5], 4  # <unk> and two words, </s>; ≤ 4 words
    prefixes = sum(len(words) ** n for n in range(longest + 1))
    cfg = SearchConfig(
        beam=prefixes,
        max_ratio=0.0,
        max_extra=longest + 1,
        length_penalty=penalty,
        alpha=1.7 if penalty == "power" else 1.0,  # power at 1 would be average
        nbest=5,
        min_len=0,
    )
    for seed in range(3):
        table = random_table(seed, 6)
        model = Scripted(table, 6)
        out = beam_search(model, model.encode([0, 1]), cfg)
        for sentence in (0, 1):
            every = exhaustive(table, sentence, words, longest)
            rank = [float(ranking(cfg, torch.tensor(s), torch.tensor(len(c) + 1))) for c, s in every]
            best = sorted(range(len(every)), key=lambda j: -rank[j])[:5]
            got = slice(5 * sentence, 5 * sentence + 5)
            assert out.tokens[got] == [every[j][0] for j in best]
            assert out.scores[got] == pytest.approx([every[j][1] for j in best], abs=1e-4)
            assert out.ranking[got] == pytest.approx([rank[j] for j in best], abs=1e-4)


@pytest.mark.parametrize("penalty", ["none", "average", "power", "gnmt"])
def test_batched_search_equals_searching_each_sentence_alone_and_nbest_lists_are_sorted(penalty):
    table = random_table(7, 8)
    cfg = SearchConfig(beam=4, nbest=3, length_penalty=penalty, max_ratio=0.0, max_extra=9)
    together = beam_search(Scripted(table, 8), Scripted(table, 8).encode(list(range(6))), cfg)
    for i in range(6):
        alone = beam_search(Scripted(table, 8), Scripted(table, 8).encode([i]), cfg)
        assert alone.tokens == together.tokens[3 * i : 3 * i + 3]
        assert alone.scores == pytest.approx(together.scores[3 * i : 3 * i + 3], abs=1e-5)
        ranks = alone.ranking
        assert ranks == sorted(ranks, reverse=True)
        assert len({tuple(t) for t in alone.tokens}) == 3


def test_the_coverage_penalty_is_wu_et_al_s_formula_on_a_small_table():
    from nmtkit.translate.search import coverage_penalty

    coverage = torch.tensor([[0.5, 1.7, 0.25, 0.0], [1.0, 1.0, 2.0, 0.9]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    got = coverage_penalty(coverage, mask, 0.2)
    assert got.tolist() == pytest.approx([0.2 * (math.log(0.5) + 0 + math.log(0.25)), 0.2 * math.log(0.9)])
    # a source unit never attended counts as 1e-6, not -inf
    assert float(coverage_penalty(torch.tensor([[0.0, 1.0]]), torch.tensor([[True, True]]), 1.0)) == pytest.approx(
        math.log(1e-6)
    )


@pytest.mark.parametrize("penalty", ["none", "gnmt"])
def test_wide_beam_finds_the_exact_n_best_with_a_coverage_penalty(penalty):
    """The stop stays a bound with the penalty: every prefix fits the beam, so the search returns
    the n best of all outputs ranked by score (normalised) + β Σ log min(coverage, 1), coverage
    read off the model's own attention along each output."""
    model, src, mask = model_and_batch(2, tgt_vocab=6)  # a model whose n-best lists the penalty changes
    limit, beta = 3, 0.7
    cfg = SearchConfig(
        beam=30,
        max_ratio=0.0,
        max_extra=limit,
        length_penalty=penalty,
        alpha=1.5,
        nbest=4,
        min_len=0,
        coverage_penalty=beta,
    )
    out = beam_search(model, model.encode(src, mask), cfg)
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        s, m = src[i : i + 1, :n], mask[i : i + 1, :n]
        candidates = [list(c) for L in range(limit) for c in itertools.product([1, 4, 5], repeat=L)]
        ranks, scores = [], []
        for c in candidates:
            with torch.no_grad():
                score, _, maps = force(model, model.encode(s, m), torch.tensor([c + [EOS]]))
            cover = beta * float(maps[0].sum(0).clamp(min=1e-6, max=1.0).log().sum())
            scores.append(float(score[0]))
            ranks.append(float(ranking(cfg, score, len(c) + 1)[0]) + cover)
        best = sorted(range(len(candidates)), key=lambda j: -ranks[j])[:4]
        assert out.tokens[4 * i : 4 * i + 4] == [candidates[j] for j in best]
        assert out.ranking[4 * i : 4 * i + 4] == pytest.approx([ranks[j] for j in best], abs=1e-4)
    plain = beam_search(
        model,
        model.encode(src, mask),
        SearchConfig(beam=30, max_ratio=0.0, max_extra=limit, length_penalty=penalty, alpha=1.5, nbest=4, min_len=0),
    )
    assert plain.tokens != out.tokens  # the penalty changed some n-best list


@pytest.mark.parametrize("beam", [1, 4])
def test_the_search_returns_the_attention_that_forcing_its_outputs_gives(beam):
    """The α kept by the search, followed back along each output, is the α of walking that
    output through the model again (what translate --alignments used to do), </s>'s row too."""
    model, src, mask = model_and_batch(2)
    enc = model.encode(src, mask)
    out = beam_search(model, enc, SearchConfig(beam=beam, nbest=min(beam, 2)), attention=True)
    n = out.nbest
    tgt = torch.full((len(out.tokens), max(len(t) for t in out.tokens) + 1), 0)
    for row, tokens in enumerate(out.tokens):
        tgt[row, : len(tokens) + 1] = torch.tensor(tokens + [EOS])
    _, _, maps = force(model, enc.repeat(n), tgt)
    assert out.attention is not None and all(math.isfinite(s) for s in out.scores)  # every row found
    for row, tokens in enumerate(out.tokens):
        L = len(tokens) + 1
        assert torch.allclose(out.attention[row, :L, : maps.shape[2]], maps[row, :L], atol=1e-5)
        assert out.attention[row, L:].abs().sum() == 0


def test_the_power_penalty_is_fairseq_s_and_marian_s_score_over_length_to_the_alpha():
    scores, lengths = torch.tensor([-6.0, -6.0]), torch.tensor([4, 9])
    power = ranking(SearchConfig(length_penalty="power", alpha=0.6), scores, lengths)
    assert power.tolist() == pytest.approx([-6 / 4**0.6, -6 / 9**0.6])
    one = ranking(SearchConfig(length_penalty="power", alpha=1.0), scores, lengths)
    assert torch.equal(one, ranking(SearchConfig(length_penalty="average"), scores, lengths))


@pytest.mark.parametrize("penalty", ["power", "gnmt"])
def test_the_largest_alpha_ranks_long_outputs_and_dead_rows_without_a_nan(penalty):
    """An --alpha of 30 made 40 ** 30 inf, so that a row's -inf score ranked NaN, which topk put first
    (empty outputs): --alpha is at most 10, and a length whose power float32 cannot hold is ranked in
    float64, where the others keep their float32 figures."""
    from nmtkit.core.settings import declared

    assert declared(SearchConfig, "alpha")[1].le == 10
    cfg = SearchConfig(length_penalty=penalty, alpha=10.0)
    lengths = torch.tensor([1, 40, 500, 5000, 9000, 9000])  # 9,000 ** 10 is past float32's range
    got = ranking(cfg, torch.tensor([-3.0, -60.0, -float("inf"), -900.0, -float("inf"), -9000.0]), lengths)
    assert not got.isnan().any() and got[2] == got[4] == -float("inf") and (got[[0, 1, 3, 5]] < 0).all()
    assert got[5] == pytest.approx(-9000.0 / (9000.0 if penalty == "power" else 9005 / 6) ** 10, rel=1e-5)
    assert torch.equal(got[:4], ranking(cfg, torch.tensor([-3.0, -60.0, -float("inf"), -900.0]), lengths[:4]))
