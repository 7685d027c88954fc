"""Faster CPU translation that keeps the translations: int8 linear layers, RNNencdec's fixed
context projected once, token batches."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.errors import UserError
from nmtkit.core.settings import RuntimeConfig
from nmtkit.data.lexicon import Lexicon, build_lexicon
from nmtkit.data.vocab import BOS
from nmtkit.models.build import build_model
from nmtkit.models.config import model_config
from nmtkit.models.int8 import quantize_int8
from nmtkit.translate.search import beam_search
from nmtkit.translate.settings import SearchConfig, TranslateOptions
from nmtkit.translate.translator import Translator
from tests.conftest import EN


def _step_logp(model, src):
    with torch.inference_mode():
        enc = model.encode(src, src != 0)
        state = model.init_state(enc)
        y = torch.full((src.shape[0],), BOS)
        out = []
        for _ in range(4):
            logp, state, _ = model.step(y, state, enc)
            y = logp.argmax(1)
            out.append(logp)
    return torch.stack(out)


@pytest.mark.parametrize("output_rank", [0, 24])  # the factored output: one more int8 product
def test_int8_log_probabilities_stay_within_a_stated_tolerance_of_float32(output_rank):
    """Tolerance: every next-word probability of four greedy steps within 0.03 of float32's, and
    log-probabilities 0.05 nats apart on average, on a random 32-unit RNNsearch with weights
    N(0, 0.3²), spread wider than trained ones (int8 weights, a scale per output row; inputs
    quantized per call)."""
    torch.manual_seed(0)
    model = build_model(
        model_config(src_vocab=40, tgt_vocab=50, emb=32, hidden=32, align=32, maxout=32, output_rank=output_rank)
    ).eval()
    for p in model.parameters():  # B.1's tiny weights make every output uniform: spread them
        p.data.normal_(0, 0.3)
    if output_rank:  # W_r at 1/√l keeps t's scale: 0.3 would widen the logits 1.7 times more
        model.W_r.weight.data.normal_(0, 32**-0.5)
    src = torch.randint(4, 40, (3, 7))
    full = _step_logp(model, src)
    low = _step_logp(quantize_int8(model), src)
    assert torch.nn.Linear not in {type(m) for n, m in quantize_int8(model).named_modules() if not n.endswith("v_a")}
    assert 0 < (full.exp() - low.exp()).abs().max().item() < 0.03  # changed (int8 ran), but little
    assert (full - low).abs().mean().item() < 0.05


def test_int8_translates_the_learned_pairs_as_float32_does(overfit, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    lines = EN[:5]
    fp32 = [t.text for t in Translator.from_checkpoints(ckpt, "cpu").translate(lines, TranslateOptions())]
    int8 = [
        t.text
        for t in Translator.from_checkpoints(ckpt, RuntimeConfig("cpu", int8=True)).translate(lines, TranslateOptions())
    ]
    assert int8 == fp32 and all(fp32)
    src = tmp_path / "in.en"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["translate", "-m", str(ckpt), str(src), "--int8", "--device", "cpu"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == fp32


def test_rnnencdec_projects_its_fixed_context_once_and_teacher_forcing_still_matches_the_step():
    torch.manual_seed(1)
    model = build_model(
        model_config(arch="rnnencdec", src_vocab=20, tgt_vocab=20, emb=8, hidden=8, align=8, maxout=8)
    ).eval()
    for p in model.parameters():
        p.data.normal_(0, 0.3)
    src = torch.randint(4, 20, (2, 5))
    enc = model.encode(src, src != 0)
    assert enc.keys is not None and torch.allclose(enc.keys, model.C(enc.summary))
    calls = []
    model.C.register_forward_hook(lambda *_: calls.append(1))
    tgt = torch.randint(4, 20, (2, 6))
    forced = torch.log_softmax(model(src, src != 0, tgt).logits, -1)
    assert len(calls) == 1  # once in encode, never per position
    state, stepped = model.init_state(enc), []
    with torch.no_grad():
        for t in range(6):
            logp, state, _ = model.step(tgt[:, t], state, enc)
            stepped.append(logp)
    assert torch.allclose(torch.stack(stepped, 1), forced, atol=1e-5)


def test_token_batches_give_the_translations_of_sentence_batches(overfit):
    translator = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu")
    lines = EN + ["", "And God saw the earth, and the light."]
    by_sentences = list(translator.translate(lines, TranslateOptions(batch_size=32, max_tokens=0)))
    batches = list(translator._batches([len(translator.sides.src.tokens(x)) for x in lines], 32, 24))
    assert len(batches) > 2  # several batches of at most 24 tokens, padding included
    by_tokens = list(translator.translate(lines, TranslateOptions(max_tokens=24)))
    assert [t.text for t in by_tokens] == [t.text for t in by_sentences]
    assert [t.score for t in by_tokens] == pytest.approx([t.score for t in by_sentences], abs=1e-4)


def test_a_batch_size_given_alone_cuts_sentence_batches_on_any_device(overfit, monkeypatch):
    """A GPU's default is token batches: a --batch-size given without --max-tokens was read by
    nothing there. Both given is refused: one would be ignored."""
    from nmtkit.core.errors import UserError

    translator = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu")
    asked, real = [], Translator._batches
    monkeypatch.setattr(
        Translator, "_batches", lambda self, n, size, tokens: asked.append(tokens) or real(self, n, size, tokens)
    )
    for options in (TranslateOptions(batch_size=2), TranslateOptions(), TranslateOptions(max_tokens=24)):
        list(translator.translate(EN[:3], options))
    assert asked == [0, None, 24]  # None: the device's default, token batches on a GPU
    with pytest.raises(UserError, match="--batch-size and --max-tokens are two ways to cut batches"):
        list(translator.translate(EN[:3], TranslateOptions(batch_size=2, max_tokens=24)))


# -- vocabulary selection ---------------------------------------------------------------------


def test_the_lexicon_lists_a_source_words_rare_translation_and_never_a_frequent_word():
    # target ids 4-5 are "frequent"; source 7 always comes with target 9, source 8 with 10 then 11
    src = [np.array([7, 5]), np.array([7, 6]), np.array([8, 6]), np.array([8, 5]), np.array([8])]
    tgt = [np.array([4, 9]), np.array([9, 5]), np.array([10, 4]), np.array([10, 11]), np.array([11])]
    lex = build_lexicon(src, tgt, src_vocab=12, tgt_vocab=12, frequent=6, per_source=2)
    assert lex.table[7].tolist() == [9, 0]  # one translation known; 0 (<pad>) pads the row
    assert lex.table[8].tolist() == [10, 11]  # Dice 2·2/(3+2) for both: ties by id
    assert not (lex.table[:, :] == 4).any() and not (lex.table == 5).any()
    cand = lex.candidates(torch.tensor([[7, 0]]))
    assert cand.tolist() == [0, 1, 2, 3, 4, 5, 9]  # specials, the frequent, 7's list


def _search(model, src, vocab=None, beam=3):
    with torch.inference_mode():
        return beam_search(model, model.encode(src, src != 0), SearchConfig(beam=beam), vocab)


def test_the_shortlist_holds_what_the_full_search_picks_when_the_table_covers_it():
    torch.manual_seed(2)
    model = build_model(model_config(src_vocab=30, tgt_vocab=60, emb=16, hidden=16, align=16, maxout=16)).eval()
    for p in model.parameters():
        p.data.normal_(0, 0.3)
    src = torch.randint(4, 30, (4, 6))
    full = _search(model, src)
    picked = sorted({w for hyp in full.tokens for w in hyp})
    assert any(w >= 8 for w in picked)
    table = torch.tensor([picked[i % len(picked)] for i in range(len(picked))], dtype=torch.int32)
    lex = Lexicon(frequent=8, table=table.expand(30, -1).clone())  # every source word lists them
    cand = lex.candidates(src)
    assert set(picked) <= set(cand.tolist())
    # the whole vocabulary as candidates: the restricted search is the full one, id for id
    every = Lexicon(frequent=60, table=torch.zeros(30, 1, dtype=torch.int32)).candidates(src)
    same = _search(model, src, every)
    assert same.tokens == full.tokens and same.scores == pytest.approx(full.scores, abs=1e-5)
    # a smaller list: the outputs use listed words only
    short = _search(model, src, cand)
    assert {w for hyp in short.tokens for w in hyp} <= set(cand.tolist())


def test_training_stores_a_lexicon_and_translate_shortlist_uses_it(overfit, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    lex = checkpoint.load(ckpt).lexicon
    assert lex is not None and lex.table.shape[0] == checkpoint.load(ckpt).model.src_vocab
    src = tmp_path / "in.en"
    src.write_text("\n".join(EN[:5]) + "\n", encoding="utf-8")
    full = CliRunner().invoke(main, ["translate", "-m", str(ckpt), str(src), "--device", "cpu"])
    short = CliRunner().invoke(
        main, ["translate", "-m", str(ckpt), str(src), "--shortlist", "--int8", "--device", "cpu"]
    )
    assert short.exit_code == 0, short.output
    assert short.stdout == full.stdout


def test_the_lexicon_command_says_how_many_words_it_holds(overfit, tmp_path):
    """--frequent or --per-source past the target vocabulary holds every word: said so, not the number asked."""
    ckpt, out = overfit / "run" / "last.pt", tmp_path / "lex.pt"
    args = ["lexicon", str(ckpt), "--data", str(overfit / "bin-kept"), "-o", str(out), "--frequent", "100000000"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    words = checkpoint.load(out).lexicon.frequent
    assert words == checkpoint.load(ckpt).model.tgt_vocab < 100_000_000
    assert f"lexicon of {words:,} frequent words" in r.output and "passes the vocabulary" in r.output, r.output
    # --per-source likewise: it said 100000000 and stored as many as the target vocabulary holds
    r = CliRunner().invoke(main, [*args[:-2], "--per-source", "100000000"])
    assert r.exit_code == 0, r.output
    listed = checkpoint.load(out).lexicon.table.shape[1]
    assert listed == words and f"frequent words and {listed:,} per source word" in r.output, r.output
    assert "and --per-source 100,000,000 pass the vocabulary" in r.output  # --frequent 1,000 too, here


def test_an_ensembles_shortlist_is_its_members_lists_together_whatever_their_order(overfit, tmp_path):
    """The first member's lexicon served the ensemble: the same models in another order searched
    other candidates (other scores), and a member without one let --shortlist through."""
    a = Lexicon(4, torch.tensor([[5, 0], [6, 7]], dtype=torch.int32))
    b = Lexicon(6, torch.tensor([[8], [9]], dtype=torch.int32))
    src = torch.tensor([[0, 1]])
    assert a.candidates(src).tolist() == [0, 1, 2, 3, 5, 6, 7]
    for both in (Lexicon.union([a, b]), Lexicon.union([b, a])):
        assert both.candidates(src).tolist() == list(range(10))
    assert Lexicon.union([a]) is a and Lexicon.union([]) is None
    ckpt, small = overfit / "run" / "last.pt", tmp_path / "small.pt"
    args = ["lexicon", str(ckpt), "--data", str(overfit / "bin-kept"), "-o", str(small)]
    assert CliRunner().invoke(main, [*args, "--frequent", "0", "--per-source", "1"]).exit_code == 0
    options = TranslateOptions(search=SearchConfig(beam=3), shortlist=True)
    found = [
        [(t.text, t.score) for t in Translator.from_checkpoints(models, "cpu").translate(EN[:3], options)]
        for models in ([small, ckpt], [ckpt, small])
    ]
    assert found[0] == found[1]
    bare = tmp_path / "bare.pt"  # an older nmtkit's checkpoint: no lexicon
    checkpoint.save(bare, dataclasses.replace(checkpoint.load(ckpt, lazy=False), lexicon=None))
    for models in ([bare, ckpt], [ckpt, bare]):  # one member's lexicon served; the other's order refused
        with pytest.raises(UserError, match="--shortlist: the checkpoint .or one of the ensemble's. holds no lexicon"):
            Translator.from_checkpoints(models, "cpu").translate(EN[:1], options)


@pytest.mark.parametrize("penalty", ["none", "average", "power", "gnmt"])
def test_looking_for_finished_sentences_every_fourth_step_changes_no_output(penalty):
    # the GPU's schedule (fewer waits for the device), run on the CPU
    from nmtkit.translate.search import _beam_search

    torch.manual_seed(3)
    model = build_model(model_config(src_vocab=30, tgt_vocab=40, emb=16, hidden=16, align=16, maxout=16)).eval()
    for p in model.parameters():
        p.data.normal_(0, 0.3)
    src = torch.randint(4, 30, (6, 5))
    src[2, 3:] = 0
    cfg = SearchConfig(beam=4, nbest=2, length_penalty=penalty, max_ratio=1.5)
    with torch.inference_mode():
        enc = model.encode(src, src != 0)
        every, fourth = (_beam_search(model, enc, cfg, None, n) for n in (1, 4))
    assert every.tokens == fourth.tokens
    assert every.scores == fourth.scores and every.ranking == fourth.ranking


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.bfloat16, 2e-2)])
def test_the_search_energies_give_the_training_attention_within_a_stated_tolerance(dtype, tol):
    """Search reads the attention in float32 as 2 v·σ(2x) without the constant Σv (three passes),
    in bfloat16 as v·tanh(x); training's _Energy as v·tanh(x). Tolerance: weights α and contexts c
    within 1e-6 in float32 (rounding alone), 2e-2 in bfloat16 (its 8-bit mantissa), on random keys
    with a masked tail."""
    from nmtkit.models.attention import AdditiveAttention

    torch.manual_seed(0)
    att = AdditiveAttention(16, 24, 20)
    h = torch.randn(6, 9, 24)
    mask = torch.ones(6, 9, dtype=torch.bool)
    mask[2, 5:] = mask[4, 1:] = False
    s = torch.randn(6, 16)
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            keys_s = att.precompute(h)
            c_search, a_search = att(s, keys_s, h, mask)
    with torch.enable_grad():  # the training path, for bfloat16 too
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            c_train, a_train = att(s, att.precompute(h), h, mask)
    assert torch.allclose(a_search.float(), a_train.float().detach(), atol=tol)
    assert torch.allclose(c_search.float(), c_train.float().detach(), atol=tol)
    assert a_search[4, 1:].eq(0).all() and a_search[2, 5:].eq(0).all()


def test_in_bfloat16_small_energies_keep_their_differences():
    """What the softmax reads of the energies, each less its row's mean, from bfloat16 keys and
    states of about 0.01 (a model early in training): within 2% of float64's largest. Read through a
    bfloat16 σ, whose distance from ½ is rounded to 2⁻⁹, it would be noise (20% off)."""
    from nmtkit.models.attention import _search_energies

    torch.manual_seed(0)
    keys, q, v = 0.01 * torch.randn(6, 9, 20), 0.01 * torch.randn(6, 20), torch.randn(20)
    exact = _search_energies(keys.double(), q.double(), v.double())
    got = _search_energies(keys.bfloat16(), q.bfloat16(), v.bfloat16()).double()
    centred = lambda e: e - e.mean(-1, keepdim=True)
    assert (centred(got) - centred(exact)).abs().max() <= 0.02 * centred(exact).abs().max()


@pytest.mark.parametrize("int8", [False, True])
def test_the_shortlisted_output_layer_scores_its_words_as_the_whole_layer_does(int8):
    """The restricted layer is of the whole layer's kind (for --int8: the same int8 rows and
    scales). Tolerance: logits within 1e-4 of the whole layer's columns (float32 rounding of
    another kernel; int8: the same integer products)."""
    from nmtkit.models.layers import inference_linear, restricted_output

    torch.manual_seed(0)
    model = (
        build_model(model_config(arch="rnnsearch", src_vocab=20, tgt_vocab=40, emb=8, hidden=8, align=8, maxout=8))
        .eval()
        .requires_grad_(False)
    )
    if int8:
        model = quantize_int8(model)
    layer = model.output_layer()
    rows = torch.tensor([0, 1, 2, 3, 7, 19, 38])
    t = torch.randn(10, 8)
    with torch.inference_mode():
        whole = inference_linear(layer, t)
        cut = restricted_output(layer, rows)(t)
    assert type(restricted_output(layer, rows)) is type(layer)
    assert cut.shape == (10, len(rows))
    assert torch.allclose(cut, whole[:, rows], atol=1e-4)


def test_bf16_translation_casts_the_weights_once_and_translates_as_autocast_alone(overfit):
    """--bf16 on a CPU: the model's weights become bfloat16 once (autocast rounds them the same
    way at every call). Same outputs as autocast over float32 weights, scores within 1e-3; runs
    on any CPU (bfloat16 arithmetic is emulated where it is not native)."""
    from nmtkit.core.runtime import Runtime
    from nmtkit.translate import translator as module

    ckpt = overfit / "run" / "last.pt"
    runtime = Runtime(torch.device("cpu"), True)
    model, sides, lexicon = module.load_models([ckpt], runtime.device)
    once = Translator(module.bf16_weights(model, runtime), sides, runtime, lexicon)  # as from_checkpoints
    assert all(p.dtype == torch.bfloat16 for p in once.model.parameters())
    model, sides, lexicon = module.load_models([ckpt], runtime.device)
    per_call = Translator(model, sides, runtime, lexicon)
    assert all(p.dtype == torch.float32 for p in per_call.model.parameters())
    a = list(once.translate(EN[:5], TranslateOptions(SearchConfig(beam=3))))
    b = list(per_call.translate(EN[:5], TranslateOptions(SearchConfig(beam=3))))
    assert [t.text for t in a] == [t.text for t in b] and all(t.text for t in a)
    assert [t.score for t in a] == pytest.approx([t.score for t in b], abs=1e-3)
    int8 = module.bf16_weights(quantize_int8(module.load_models([ckpt], runtime.device)[0]), runtime)
    assert next(p for p in int8.parameters()).dtype == torch.float32  # int8 keeps float32 parts


def test_a_shortlist_of_no_word_translates_with_the_whole_vocabulary_not_to_minus_infinity(overfit, tmp_path):
    """A lexicon of --frequent 0 and a source of unknown words alone left --no-unk no word: an empty
    output scored -inf, which rescore and rerank then refused in the n-best list."""
    ckpt, out = overfit / "run" / "last.pt", tmp_path / "lex.pt"
    args = ["lexicon", str(ckpt), "--data", str(overfit / "bin-kept"), "-o", str(out), "--frequent", "0"]
    assert CliRunner().invoke(main, [*args, "--per-source", "1"]).exit_code == 0
    (tmp_path / "z.en").write_text("zzzz\n", encoding="utf-8")
    argv = [
        "translate",
        "-m",
        str(out),
        "--shortlist",
        "--no-unk",
        "--beam",
        "3",
        "--nbest",
        "2",
        str(tmp_path / "z.en"),
    ]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    scores = [float(line.rsplit("|||", 1)[1]) for line in r.stdout.splitlines()]
    assert len(scores) == 2 and all(math.isfinite(s) for s in scores), r.stdout
