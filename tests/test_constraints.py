"""Lexically constrained search (translate --constraints): every output holds its phrases, scored
as the model scores it; a beam that holds every hypothesis finds every output that holds them
(phrases sharing units, runs broken and begun again); an output ends once it may; sentences
without phrases are searched as without the option; and the shell's errors are one line."""

from __future__ import annotations

import itertools

import pytest
import torch
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.translate.constraints import constraint_batch, contains, contains_in_order, phrases
from nmtkit.translate.search import beam_search
from nmtkit.translate.settings import SearchConfig
from tests.conftest import EN
from tests.test_sampling_prefix import prefixes
from tests.test_search import model_and_batch, sequence_score

CPU = torch.device("cpu")


def search(model, enc, cfg, musts, **kw):
    return beam_search(model, enc, cfg, constraints=constraint_batch(musts, CPU), **kw)


def test_phrases_are_the_lines_tab_separated_fields():
    assert phrases("la terre\tDieu\n") == ["la terre", "Dieu"]
    assert phrases("\n") == [] and phrases(" \t\t") == []


@pytest.mark.parametrize("beam", [1, 4])
def test_every_output_holds_its_phrases_and_scores_as_the_model_does(beam):
    model, src, mask = model_and_batch(5)
    enc = model.encode(src, mask)
    musts = [[[7, 8]], [[9], [9]], [[12], [13, 13]], [[4, 4, 6], [11]]]  # a phrase twice; a unit repeated
    out = search(model, enc, SearchConfig(beam=beam, nbest=beam), musts, token_scores=True)
    found = 0
    for row, (tokens, score) in enumerate(zip(out.tokens, out.scores)):
        i = row // out.nbest
        if score == float("-inf"):
            assert row % out.nbest  # fewer hypotheses than asked, never none
            continue
        found += 1
        held = [sum(tokens[j : j + len(p)] == p for j in range(len(tokens))) for p in musts[i]]
        assert all(h >= musts[i].count(p) for h, p in zip(held, musts[i])), (i, tokens)  # a phrase twice: twice
        n = int(mask[i].sum())
        assert score == pytest.approx(sequence_score(model, src[i : i + 1, :n], mask[i : i + 1, :n], tokens), abs=1e-4)
        assert sum(out.token_scores[row]) == pytest.approx(score, abs=1e-4)
    assert found >= 4


@pytest.mark.parametrize("seed", [0, 3])
def test_a_beam_that_holds_every_hypothesis_finds_every_output_that_holds_the_phrases(seed):
    model, src, mask = model_and_batch(seed, tgt_vocab=6)  # words: <unk> 4 5 (<pad> and <s> never)
    # a unit repeated after a broken run; two phrases with one first unit; one inside another
    musts = [[[4, 4, 5]], [[4, 5], [4, 2]], [[4, 5], [4]], [[5], [4, 5, 4]]]
    cfg = SearchConfig(beam=400, max_ratio=0.0, max_extra=5, nbest=400, min_len=0)  # 4^4 outputs of 4 words
    out = search(model, model.encode(src, mask), cfg, musts)
    for i, must in enumerate(musts):
        n = int(mask[i].sum())
        s, m = src[i : i + 1, :n], mask[i : i + 1, :n]
        room = max(5, sum(map(len, must)) + 1)  # the limit widens to hold the phrases and </s>
        candidates = [
            list(c)
            for length in range(room)
            for c in itertools.product([1, 4, 5], repeat=length)
            if all(contains(list(c), p) for p in must)
        ]
        rows = range(400 * i, 400 * i + 400)
        found = [out.tokens[r] for r in rows if out.scores[r] > float("-inf")]
        assert sorted(found) == sorted(candidates)
        scores = [sequence_score(model, s, m, c) for c in candidates]
        best = sorted(range(len(candidates)), key=lambda j: -scores[j])[:3]
        assert out.tokens[400 * i : 400 * i + len(best)] == [candidates[j] for j in best]
        assert out.scores[400 * i : 400 * i + len(best)] == pytest.approx([scores[j] for j in best], abs=1e-4)


def test_contains_in_order_takes_each_phrase_after_the_last_unit_of_the_one_before():
    assert contains_in_order([4, 5, 4], [[4, 5], [4]]) and not contains_in_order([4, 5], [[4, 5], [5]])
    assert contains_in_order([4, 4, 5, 4, 5], [[4, 5], [4, 5]]) and not contains_in_order([4, 5, 4], [[4], [4, 5]])


@pytest.mark.parametrize("seed", [0, 3])
def test_ordered_phrases_are_found_in_every_output_that_holds_them_in_order_and_no_other(seed):
    model, src, mask = model_and_batch(seed, tgt_vocab=6)  # words: <unk> 4 5 (<pad> and <s> never)
    # one phrase inside the other; a unit twice; one phrase twice; the same phrases reversed
    musts = [[[4, 5], [4]], [[4], [4, 5]], [[5], [5]], [[4, 4], [4]], [[4], [5, 4]], [[5, 4], [4]]]
    cfg = SearchConfig(beam=400, max_ratio=0.0, max_extra=5, nbest=400, min_len=0)
    given = constraint_batch(musts, CPU, ordered=True)
    out = beam_search(model, model.encode(src[[0, 1, 2, 3, 0, 1]], mask[[0, 1, 2, 3, 0, 1]]), cfg, constraints=given)
    for i, must in enumerate(musts):
        room = max(5, sum(map(len, must)) + 1)
        candidates = [
            list(c)
            for length in range(room)
            for c in itertools.product([1, 4, 5], repeat=length)
            if contains_in_order(list(c), must)
        ]
        found = [out.tokens[r] for r in range(400 * i, 400 * i + 400) if out.scores[r] > float("-inf")]
        assert sorted(found) == sorted(candidates), must


def holds_words(output, phrase, tokens):
    """Whether ``output`` (ids, in reading order) holds ``phrase`` beginning and ending at word
    edges: between units a and b unless a continues (BPE's ``@@``) or b does not begin a word
    (where units mark beginnings, SentencePiece's ``▁``); the specials are edges."""
    return words_end(output, phrase, tokens) >= 0


def words_end(output, phrase, tokens, start=0):
    """Where the first run of ``phrase`` at word edges from ``start`` on ends in ``output``; −1: none."""
    marks = any(t.startswith("▁") for t in tokens)

    def edge(a, b):
        return a.startswith("<") or b.startswith("<") or (b.startswith("▁") if marks else not a.endswith("@@"))

    n = len(phrase)
    for i in range(start, len(output) - n + 1):
        before = tokens[output[i - 1]] if i else "<s>"
        after = tokens[output[i + n]] if i + n < len(output) else "</s>"
        if output[i : i + n] == phrase and edge(before, tokens[phrase[0]]) and edge(tokens[phrase[-1]], after):
            return i + n
    return -1


def holds_words_in_order(output, phrases, tokens):
    start = 0
    for phrase in phrases:
        start = words_end(output, phrase, tokens, start)
        if start < 0:
            return False
    return True


def runs(output, phrase, tokens):
    """How many runs of ``phrase`` at word edges ``output`` holds (overlapping or not)."""
    ends, start = 0, 0
    while (end := words_end(output, phrase, tokens, start)) >= 0:
        ends, start = ends + 1, end - len(phrase) + 1
    return ends


def holds(read, must, tokens, ordered):
    """Whether ``read`` (ids in reading order) holds the phrases ``must`` at word edges: in their order,
    or in any, a phrase given twice by two runs."""
    if ordered:
        return holds_words_in_order(read, must, tokens)
    return all(runs(read, p, tokens) >= must.count(p) for p in must)


@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("units", ["bpe", "sentencepiece", "bpe-right-to-left"])
def test_phrases_begin_and_end_at_word_edges(units, ordered):
    from nmtkit.translate.constraints import word_edges

    model, src, mask = model_and_batch(1, tgt_vocab=6)
    tokens = ["<pad>", "<unk>", "<s>", "</s>", *(("▁a", "b") if units == "sentencepiece" else ("a@@", "b"))]
    backwards = units.endswith("right-to-left")
    edges = word_edges(tokens, backwards, CPU, units == "sentencepiece")
    musts = [[[5]], [[4, 5]], [[5], [4]], [[4]], [[4], [5]], [[5], [5]]]
    cfg = SearchConfig(beam=400, max_ratio=0.0, max_extra=5, nbest=400, min_len=0)
    enc = model.encode(src[[0, 1, 2, 3, 0, 1]], mask[[0, 1, 2, 3, 0, 1]])
    out = beam_search(model, enc, cfg, constraints=constraint_batch(musts, CPU, edges, ordered))
    flip = -1 if backwards else 1  # musts in the model's order: the phrases' and their units'
    for i, must in enumerate(musts):
        room = max(5, sum(map(len, must)) + 1 + len(must))  # and a unit a phrase for a word's edge
        candidates = [
            list(c)
            for length in range(room)
            for c in itertools.product([1, 4, 5], repeat=length)
            if holds(list(c)[::flip], [p[::flip] for p in must[::flip]], tokens, ordered)
        ]
        found = [out.tokens[r] for r in range(400 * i, 400 * i + 400) if out.scores[r] > float("-inf")]
        assert sorted(found) == sorted(candidates), (units, must)


@pytest.mark.parametrize("ordered", [False, True])
def test_a_phrase_let_go_at_a_words_edge_is_found_again_inside_the_run_let_go(ordered):
    # ▁a b ▁a b ▁a: "▁a b ▁a" at units 0-2 is let go at unit 3 (b goes on with the word); at 2-4 it holds
    from nmtkit.translate.constraints import word_edges

    model, src, mask = model_and_batch(1, tgt_vocab=6)
    tokens = ["<pad>", "<unk>", "<s>", "</s>", "▁a", "b"]
    musts = [[[4, 5, 4]], [[4], [4, 5, 4]]]
    cfg = SearchConfig(beam=4200, max_ratio=0.0, max_extra=6, nbest=4200, min_len=0)  # 4^6 outputs of 6 units
    edges = word_edges(tokens, False, CPU, True)
    out = beam_search(
        model, model.encode(src[:2], mask[:2]), cfg, constraints=constraint_batch(musts, CPU, edges, ordered)
    )
    for i, must in enumerate(musts):
        room = max(6, sum(map(len, must)) + 1 + len(must))
        candidates = [
            list(c)
            for length in range(room)
            for c in itertools.product([1, 4, 5], repeat=length)
            if holds(list(c), must, tokens, ordered)
        ]
        found = [out.tokens[r] for r in range(4200 * i, 4200 * i + 4200) if out.scores[r] > float("-inf")]
        assert sorted(found) == sorted(candidates), must
    assert [4, 5, 4, 5, 4] in out.tokens[:4200] and [4, 4, 5, 4, 5, 4] in out.tokens[4200:]


def test_an_output_that_holds_its_phrases_ends_where_the_model_ends_it():
    # the </s> of a hypothesis that holds every phrase competes with the extensions of those that
    # do too, not with every survivor: most survivors have placed none and cannot end yet
    model, src, mask = model_and_batch(5)
    n = int(mask[0].sum())
    s, m = src[:1, :n], mask[:1, :n]
    free = beam_search(model, model.encode(s, m), SearchConfig(beam=10))
    out = search(model, model.encode(s, m), SearchConfig(beam=10), [[[7, 8]]])
    assert len(free.tokens[0]) == 21 and out.tokens[0][-2:] == [7, 8] and len(out.tokens[0]) < 10
    assert out.scores[0] >= sequence_score(model, s, m, [6, 7, 8]) - 1e-4


def test_sentences_without_phrases_are_searched_as_without_constraints_and_alone_as_in_a_batch():
    model, src, mask = model_and_batch(7)
    enc = model.encode(src, mask)
    cfg = SearchConfig(beam=3, nbest=2)
    free = beam_search(model, enc, cfg)
    musts = [[], [[6, 9]], [], [[10]]]
    out = search(model, enc, cfg, musts)
    for i in (0, 2):
        assert out.tokens[2 * i : 2 * i + 2] == free.tokens[2 * i : 2 * i + 2]
    for i in (1, 3):
        n = int(mask[i].sum())
        alone = search(model, model.encode(src[i : i + 1, :n], mask[i : i + 1, :n]), cfg, [musts[i]])
        assert alone.tokens == out.tokens[2 * i : 2 * i + 2]
        assert alone.scores == pytest.approx(out.scores[2 * i : 2 * i + 2], abs=1e-5)
    assert search(model, enc, cfg, [[]] * 4).tokens == free.tokens


def test_phrases_after_a_prefix_and_under_a_shortlist():
    model, src, mask = model_and_batch(8)
    enc = model.encode(src, mask)
    vocab = torch.tensor([0, 1, 2, 3, 5, 9, 11, 14])
    starts, musts = [[9, 14], [5], [], [11]], [[[11, 5]], [[5, 14]], [[9], [5, 5]], [[11]]]
    out = search(model, enc, SearchConfig(beam=3), musts, vocab=vocab, prefix=prefixes(starts))
    for tokens, start, must in zip(out.tokens, starts, musts):
        assert tokens[: len(start)] == start and set(tokens) <= set(vocab.tolist())
        assert all(contains(tokens, p) for p in must), (tokens, must)
    # a prefix that holds a phrase holds it: the output may end right after it
    free = beam_search(model, enc, SearchConfig(beam=3), vocab=vocab, prefix=prefixes(starts))
    assert out.tokens[3] == free.tokens[3]


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "src.en"
    path.write_text("\n".join(EN[:4]) + "\n", encoding="utf-8")
    return path


def test_constraints_from_the_shell(overfit, src, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    terms = ["les ténèbres", "", "la terre\tles eaux", "Dieu appela"]
    (tmp_path / "terms.fr").write_text("\n".join(terms) + "\n", encoding="utf-8")
    free = invoke("translate", "-m", ckpt, src, "--beam", 4)
    r = invoke("translate", "-m", ckpt, src, "--beam", 4, "--nbest", 2, "--constraints", tmp_path / "terms.fr")
    assert r.exit_code == 0, r.output
    rows = [line.split(" ||| ") for line in r.stdout.splitlines()]
    assert len(rows) == 8
    for fields in rows:
        assert all(p in fields[1] for p in phrases(terms[int(fields[0])])), fields
    best = [fields[1] for fields in rows[::2]]
    assert best[1] == free.stdout.splitlines()[1]  # an empty line constrains nothing
    assert best[0] != free.stdout.splitlines()[0]  # (the model learned the verses by heart)
    piped = invoke(
        "translate", "-m", ckpt, "--beam", 4, "--constraints", tmp_path / "terms.fr", input=src.read_text("utf-8")
    )
    assert piped.exit_code == 0 and piped.stdout.splitlines() == best


def test_ordered_constraints_from_the_shell_hold_each_phrase_after_the_one_before(overfit, src, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    terms = ["Dieu\tla lumière", "les eaux\tles eaux", "la terre\tles eaux", "la lumière\tDieu"]
    (tmp_path / "terms.fr").write_text("\n".join(terms) + "\n", encoding="utf-8")
    args = ("translate", "-m", ckpt, src, "--beam", 4, "--constraints", tmp_path / "terms.fr")
    given, free = invoke(*args, "--ordered-constraints"), invoke(*args)
    assert given.exit_code == 0, given.output
    for text, line in zip(given.stdout.splitlines(), terms):
        at = 0
        for p in phrases(line):
            assert text.find(p, at) >= 0, (text, line)
            at = text.find(p, at) + len(p)
    assert given.stdout != free.stdout  # in any order, one "les eaux" holds both, "Dieu" may come first
    r = invoke("translate", "-m", ckpt, src, "--ordered-constraints")
    assert r.exit_code == 2 and "add that" in r.output and len(r.output.strip().splitlines()) == 1


def test_constraints_that_cannot_be_taken_are_one_line_and_exit_2(overfit, src, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    (tmp_path / "short").write_text("Dieu\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--constraints", tmp_path / "short", "-o", tmp_path / "out")
    assert r.exit_code == 2 and "--constraints" in r.output and "has 2 lines but" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    (tmp_path / "four").write_text("Dieu\n\n\nla\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--constraints", tmp_path / "four", "--sampling")
    assert r.exit_code == 2 and "sampling" in r.output and "Traceback" not in r.output
    r = invoke("translate", "-m", ckpt, "--constraints", "-", input="x\n")
    assert r.exit_code == 2 and "stdin" in r.output
    # a phrase out of the vocabulary is left out, with a warning, and the rest is translated
    (tmp_path / "oov").write_text("xylophone\n\n\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--constraints", tmp_path / "oov")
    assert r.exit_code == 0 and "line 1: constraint 'xylophone'" in r.stderr
    assert r.stdout == invoke("translate", "-m", ckpt, src).stdout
    (tmp_path / "special").write_text("</s>\n\n\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--tokenized", "--constraints", tmp_path / "special")
    assert r.exit_code == 0 and "holds <s>, </s> or <pad>: left out" in r.stderr


def test_bench_constraints_draws_reference_phrases_and_every_output_holds_them(overfit, tmp_path):
    import json
    import os
    import random
    import subprocess
    import sys
    from pathlib import Path

    from bench.bench_constraints import draw_phrases, holds
    from nmtkit.text.tokenize import MosesText
    from tests.conftest import FR, write_pair

    moses = MosesText("fr")
    verse = "Dieu dit: Que la lumière soit! Et la lumière fut."
    drawn = draw_phrases(moses, verse, 3, random.Random(4))
    assert len(drawn) == 3 and all(1 <= len(p.split()) <= 3 for p in drawn)
    words = verse.replace(":", "").replace("!", "").replace(".", "").split()  # phrases of words, no stops
    assert draw_phrases(moses, "Amen.", 2, random.Random(1)) == ["Amen"]
    assert draw_phrases(moses, "...", 1, random.Random(1)) == []
    ordered = draw_phrases(moses, verse, 3, random.Random(4), ordered=True)
    assert sorted(ordered) == sorted(drawn) and holds(moses, verse, ordered, True)
    assert holds(moses, verse, drawn, False) and not holds(moses, verse, ["la lumière fut", "Dieu"], True)
    write_pair(tmp_path / "data" / "raw" / "test", EN[:4], FR[:4])
    script = Path(__file__).parent.parent / "bin" / "bench-constraints"
    cmd = [sys.executable, script, "--model", overfit / "run" / "last.pt", "--data", tmp_path / "data"]
    cmd += ["--beams", "3", "--phrases", "0,2", "--threads", 1]
    done = subprocess.run(
        list(map(str, cmd)), env={**os.environ, "BENCH_DIR": str(tmp_path)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    free, constrained = json.loads((tmp_path / "constraints" / "constraints.json").read_text())["rows"]
    assert free["phrases"] == 0 and free["bleu"] > 90  # the model learned the verses by heart
    assert constrained["drawn"] == 8 and constrained["held"] == 1.0
    assert constrained["held_free"] == 1.0  # the free outputs are the references, which hold them
    assert "| 2 | 3 | " in done.stdout and all(w in words for p in drawn for w in p.split())
    done = subprocess.run(
        list(map(str, [*cmd, "--ordered"])), env={**os.environ, "BENCH_DIR": str(tmp_path)}, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "constraints" / "ordered.json").read_text())
    assert result["ordered"] and result["rows"][1]["held"] == 1.0 and result["rows"][1]["drawn"] == 8


def test_outputs_that_do_not_hold_their_phrases_are_told_as_the_search_holds_them():
    from nmtkit.translate.constraints import unheld, word_edges
    from nmtkit.translate.search import Hypotheses

    outputs = [[4, 5, 6], [6, 5, 4], [4, 5], [6]]
    hyps = Hypotheses(outputs, [-1.0] * 4, [-1.0] * 4)
    assert unheld(hyps, constraint_batch([[[5, 6]], [[5, 6]], [[4]], []], CPU)) == [1]
    assert unheld(hyps, constraint_batch([[[4], [6]], [[4], [6]], [], []], CPU, ordered=True)) == [1]
    assert unheld(hyps, constraint_batch([[[4], [6]], [[4], [6]], [], []], CPU)) == []
    tokens = ["<pad>", "<unk>", "<s>", "</s>", "a@@", "b", "c"]  # a@@ b is one word: no "b" in it
    edges = word_edges(tokens, False, CPU, False)
    assert unheld(hyps, constraint_batch([[[6]], [[6]], [[5]], [[6]]], CPU, edges)) == [2]
    two = Hypotheses([[4, 5], [6], [6], [6]], [-1.0, -2.0, -1.0, float("-inf")], [-1.0] * 4, nbest=2)
    assert unheld(two, constraint_batch([[[6]], [[6]]], CPU)) == [0]  # every hypothesis, none of those missing


def test_an_output_that_holds_its_phrases_unasked_is_kept_and_one_that_does_not_is_searched_again(
    overfit, src, tmp_path
):
    ckpt = overfit / "run" / "last.pt"
    free = invoke("translate", "-m", ckpt, src, "--beam", 4).stdout.splitlines()
    last_words = [line.split()[-1].strip(".") for line in free]  # the last word of each: held already
    (tmp_path / "held").write_text("\n".join(last_words) + "\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--beam", 4, "--constraints", tmp_path / "held")
    assert r.exit_code == 0 and r.stdout.splitlines() == free
    (tmp_path / "new").write_text("les ténèbres\n\n\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt, src, "--beam", 4, "--constraints", tmp_path / "new")
    out = r.stdout.splitlines()
    assert "les ténèbres" in out[0] and out[0] != free[0] and out[1:] == free[1:]
    # the constrained search alone: every output holds its phrases all the same
    alone = invoke("translate", "-m", ckpt, src, "--beam", 4, "--constraints", tmp_path / "held", "--no-plain-first")
    assert alone.exit_code == 0 and all(w in line for w, line in zip(last_words, alone.stdout.splitlines()))


def test_a_sentence_whose_phrases_cannot_be_placed_gets_its_free_output():
    from nmtkit.translate.constraints import splice, unplaced

    model, src, mask = model_and_batch(5)
    enc = model.encode(src, mask)
    cfg = SearchConfig(beam=3, nbest=2, no_unk=True)  # <unk> (1) may never be written
    must = constraint_batch([[[1]], [[9]], [], [[1], [4]]], CPU)
    out = beam_search(model, enc, cfg, attention=True, token_scores=True, constraints=must)
    assert unplaced(out, must) == [0, 3]  # sentence 2 has no phrase: its output is its own
    free = beam_search(model, enc, cfg, attention=True, token_scores=True)
    rows = torch.tensor([0, 3])
    again = beam_search(model, enc.select(rows), cfg, attention=True, token_scores=True)
    both = splice(out, again, [0, 3])
    assert both.tokens == [*free.tokens[:2], *out.tokens[2:6], *free.tokens[6:]]
    assert both.scores == pytest.approx([*free.scores[:2], *out.scores[2:6], *free.scores[6:]], abs=1e-5)
    assert both.token_scores[7] == pytest.approx(free.token_scores[7], abs=1e-5)
    for r, (h, q) in enumerate([(free, 0), (free, 1), (out, 2), (out, 3), (out, 4), (out, 5), (free, 6), (free, 7)]):
        t = min(h.attention.shape[1], both.attention.shape[1])
        assert torch.allclose(both.attention[r, :t], h.attention[q, :t], atol=1e-5)


@pytest.mark.parametrize("plain_first", [True, False])
def test_the_translator_translates_a_sentence_without_its_phrases_when_none_can_be_placed(
    overfit, monkeypatch, capsys, plain_first
):
    from nmtkit.translate import translator as module
    from nmtkit.translate.settings import TranslateOptions

    t = module.Translator.from_checkpoints([overfit / "run" / "last.pt"], "cpu")
    # with attention kept: the sentences searched again and not placed are spliced back with theirs
    options = TranslateOptions(SearchConfig(beam=3, no_unk=True, plain_first=plain_first), attention=True)
    free = [x.text for x in t.translate(EN[:3], options)]
    monkeypatch.setattr(module, "constraint_ids", lambda lines, *a: [[[1]], [], [[1]]])  # <unk>, banned
    got = list(t.translate(EN[:3], options, constraints=[["x"], [], ["y"]]))
    assert [x.text for x in got] == free and [x.unheld for x in got] == [True, False, True]
    err = capsys.readouterr().err
    assert "line 1: no output within the output limit holds every constraint" in err and "line 3:" in err
    # a caller's warn takes it (a server's answer says it by sentence, not its log by a batch's line)
    warned: list[str] = []
    t.translate_block(EN[:3], options, 5, constraints=[["x"], [], ["y"]], warn=warned.append)
    assert [w.split(":")[0] for w in warned] == ["line 5", "line 7"] and "line" not in capsys.readouterr().err
    if plain_first:  # and a server's answer says which sentences
        pytest.importorskip("fastapi", reason="nmtkit serve needs the serve extra (make install has it)")
        from nmtkit.serve.app import UNHELD
        from nmtkit.serve.settings import ServerConfig
        from tests.test_serve import _post, in_process

        with in_process(t, ServerConfig()) as url:
            asked = {"sentences": EN[:3], "beam": 3, "no_unk": True, "constraints": [["x"], [], ["y"]]}
            status, body = _post(url + "/translate", asked)
        assert status == 200, body
        assert [w for w in body["warnings"] if UNHELD in w] == [f"sentence 0: {UNHELD}", f"sentence 2: {UNHELD}"]


def random_word(rng, bpe, inner, outer):
    """BPE: inner units, then one that ends the word; SentencePiece: one that begins it, then inner ones."""
    body = [rng.choice(inner) for _ in range(rng.randint(0, 1))]
    return body + [rng.choice(outer)] if bpe else [rng.choice(outer)] + body


@pytest.mark.parametrize("ordered", [False, True])
def test_random_phrases_of_subwords_are_held_at_word_edges_by_every_output_in_either_direction(ordered):
    import random

    from nmtkit.translate.constraints import word_edges

    schemes = {"bpe": (["a@@", "b", "c@@", "d"], (4, 6), (5, 7)), "spm": (["▁a", "b", "▁c", "d"], (5, 7), (4, 6))}
    placed = total = 0
    for scheme, (units, inner, outer) in schemes.items():
        tokens = ["<pad>", "<unk>", "<s>", "</s>", *units]
        for backwards in (False, True):
            edges = word_edges(tokens, backwards, CPU, scheme == "spm")
            for seed in range(12):
                rng = random.Random(seed)
                model, src, mask = model_and_batch(seed, tgt_vocab=8)
                enc = model.encode(src, mask)
                musts = [
                    [
                        sum((random_word(rng, scheme == "bpe", inner, outer) for _ in range(rng.randint(1, 2))), [])
                        for _ in range(rng.randint(1, 3))
                    ]
                    for _ in range(4)
                ]
                model_order = [[p[::-1] for p in m[::-1]] if backwards else m for m in musts]
                given = constraint_batch(model_order, CPU, edges, ordered)
                for beam in (1, 3, 8):
                    out = beam_search(model, enc, SearchConfig(beam=beam, nbest=beam), constraints=given)
                    for row, (toks, score) in enumerate(zip(out.tokens, out.scores)):
                        if row % out.nbest == 0:
                            total += 1
                            placed += score > float("-inf")
                        if score > float("-inf"):
                            read = toks[::-1] if backwards else toks
                            assert holds(read, musts[row // out.nbest], tokens, ordered)
    assert placed >= 0.97 * total, (placed, total)  # the translator translates the rest without them
