"""Pharaoh word alignments from subword attention."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from nmtkit.align.links import pharaoh, read_pharaoh, word_alignment, word_ids
from nmtkit.align.words import word_attention
from nmtkit.cli import main
from nmtkit.core.errors import UserError
from tests.conftest import EN, FR


def test_subwords_are_grouped_into_words():
    assert word_ids(["Éter@@", "nel", "dit", "lu@@", "mi@@", "ère"]).tolist() == [0, 0, 1, 2, 2, 2]


def test_a_known_attention_gives_the_expected_links():
    source = ["the", "lu@@", "mi@@", "nous", "day"]  # words: the | lumi+nous | day
    target = ["le", "jour", "lu@@", "mineux"]  # words: le | jour | lumineux
    alpha = np.zeros((len(target) + 1, len(source) + 1))
    alpha[0, 0] = 1  # le → the
    alpha[1, 4] = 0.6
    alpha[1, 1] = 0.4  # jour → day
    alpha[2, 1] = 0.3
    alpha[2, 2] = 0.3
    alpha[2, 4] = 0.4  # lu@@: lumi+nous 0.6 beats day 0.4
    alpha[3, 3] = 0.5
    alpha[3, 0] = 0.5  # mineux: half to "nous", half to "the"
    alpha[4, 5] = 1  # </s> → </s>: no link
    pairs = word_alignment(source, target, alpha)
    assert pairs == [(0, 0), (2, 1), (1, 2)]  # lumineux: mean (0.6, 0.5) to lumi+nous
    assert pharaoh(pairs) == "0-0 2-1 1-2"
    assert read_pharaoh("0-0 2-1 1-2", "x") == pairs
    with pytest.raises(UserError):
        read_pharaoh("0-0 a-b", "x")
    # a target word whose weight goes mostly to the source's </s> is left unlinked
    alpha[1, 5] = 0.7
    alpha[1, 4] = 0.3
    alpha[1, 1] = 0.0
    assert word_alignment(source, target, alpha) == [(0, 0), (1, 2)]


def test_links_and_word_attention_find_words_by_the_units_kind_the_codes_say():
    """A BPE sentence holding a unit that begins with ▁ (a text that holds the mark) was taken for
    SentencePiece's: its words ran together, and links went to the wrong words."""
    source = ["a", "\u2581@@", "b", "c"]  # BPE: a | ▁b | c; taken for SentencePiece: a | ▁@@ b c
    target = ["x", "y"]
    alpha = np.zeros((3, 5))
    alpha[0, 0] = alpha[1, 3] = alpha[2, 4] = 1  # x → a, y → c, </s> → </s>
    assert word_alignment(source, target, alpha) == [(0, 0), (1, 1)]  # guessed
    assert word_alignment(source, target, alpha, (False, False)) == [(0, 0), (2, 1)]
    words = word_attention([*source, "</s>"], [*target, "</s>"], alpha, (False, False))
    assert words.source == ["a", "\u2581b", "c", "</s>"]
    assert word_attention([*source, "</s>"], [*target, "</s>"], alpha).source == ["a", "@@bc", "</s>"]


def test_an_attention_record_says_the_units_kind_and_one_without_it_is_guessed():
    from nmtkit.align.files import alignment_record, unit_kinds

    alpha = np.full((2, 2), 0.5)
    record = json.loads(json.dumps(alignment_record(1, ["a"], ["b"], alpha, -1.0, (False, True))))
    assert record["sentencepiece"] == [False, True] and unit_kinds(record) == (False, True)
    assert "sentencepiece" not in alignment_record(1, ["a"], ["b"], alpha, -1.0)  # not known: not said
    for said in (None, [True], ["yes", "no"], "bpe"):  # an earlier file's, or one edited by hand
        assert unit_kinds({"sentencepiece": said}) == (None, None)


def test_translations_and_forced_pairs_carry_the_units_kind_into_their_links(overfit, tmp_path):
    from nmtkit.align.files import read_alignments
    from nmtkit.translate.settings import TranslateOptions
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints([overfit / "run" / "last.pt"], "cpu")
    assert translator.unit_kinds == (False, False)  # the tiny corpus's BPE
    line = EN[0] + " \u2581" + EN[0].split()[-1]
    t = list(translator.translate([line, ""], TranslateOptions(attention=True)))
    assert [x.sentencepiece for x in t] == [(False, False)] * 2
    assert any(u.startswith("\u2581") for u in t[0].source_tokens)
    forced = translator.force([line], [t[0].text], tokenized=False)[0]
    assert forced.sentencepiece == (False, False)
    (tmp_path / "s.en").write_text(line + "\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(t[0].text + "\n", encoding="utf-8")
    model = str(overfit / "run" / "last.pt")
    args = ["-m", model, "--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    r = CliRunner().invoke(main, ["align", *args, "--alignments", str(tmp_path / "a.json")])
    assert r.exit_code == 0, r.output
    record = read_alignments(tmp_path / "a.json")[1]
    assert record["sentencepiece"] == [False, False]
    links = word_alignment(record["source"][:-1], record["target"][:-1], np.array(record["alignment"]), (False, False))
    assert r.stdout.splitlines() == [pharaoh(links)]


def test_translate_prints_one_alignment_line_and_jsonl_per_input(overfit, tmp_path):
    src = tmp_path / "in.en"
    src.write_text(EN[0] + "\n\n" + EN[2] + "\n", encoding="utf-8")
    model = overfit / "run" / "last.pt"
    r = CliRunner().invoke(
        main, ["translate", "-m", str(model), str(src), "--tokenized", "--print-alignment", str(tmp_path / "a.txt")]
    )
    assert r.exit_code == 0, r.output
    hyps = r.stdout.splitlines()
    links = (tmp_path / "a.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(links) == len(hyps) == 3 and links[1] == ""
    for hyp, line, source in zip(hyps, links, [EN[0], "", EN[2]]):
        pairs = read_pharaoh(line, "a.txt")
        linked = [j for _, j in pairs]  # each target word at most once
        assert linked == sorted(set(linked)) and set(linked) <= set(range(len(hyp.split())))
        assert all(i < len(source.split()) + 5 for i, _ in pairs)
    r = CliRunner().invoke(
        main, ["translate", "-m", str(model), str(src), "--output-format", "jsonl", "--beam", 3, "--nbest", 2]
    )
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["line"] for row in rows] == [1, 2, 3] and rows[1]["text"] == ""
    assert {"text", "score", "alignment", "nbest"} <= set(rows[0]) and len(rows[0]["nbest"]) == 2
    assert rows[0]["nbest"][0]["text"] == rows[0]["text"]
    assert rows[1]["nbest"] == [{"text": "", "score": 0.0, "ranking": 0.0, "alignment": ""}]  # as every line's


def test_align_writes_the_attention_of_given_translations_as_translate_does(overfit, tmp_path):
    """The references' attention (the paper's Figure 3 drawn from them) had no file: align wrote
    Pharaoh links alone, and only translate --alignments kept the weights, of its own outputs."""
    from nmtkit.align.files import read_alignments

    (tmp_path / "s.en").write_text(EN[0] + "\n\n" + EN[2] + "\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(FR[0] + "\n\n" + FR[2] + "\n", encoding="utf-8")
    model = str(overfit / "run" / "last.pt")
    args = ["align", "-m", model, "--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    plain = CliRunner().invoke(main, args)
    kept = CliRunner().invoke(main, [*args, "--alignments", str(tmp_path / "ref.align")])
    assert plain.exit_code == kept.exit_code == 0 and kept.stdout == plain.stdout, kept.output
    records = read_alignments(tmp_path / "ref.align")
    assert sorted(records) == [1, 2, 3] and records[2]["alignment"] == []  # the empty pair keeps its line
    first, links = records[1], plain.stdout.splitlines()[0]
    alpha = np.array(first["alignment"])
    assert alpha.shape == (len(first["target"]), len(first["source"])) and np.allclose(alpha.sum(1), 1, atol=1e-3)
    assert first["score"] < 0 and pharaoh(word_alignment(first["source"][:-1], first["target"][:-1], alpha)) == links
    plot = ["align-plot", str(tmp_path / "ref.align"), "-n", "1", "-o", str(tmp_path / "ref.png")]
    assert CliRunner().invoke(main, plot).exit_code == 0 and (tmp_path / "ref.png").stat().st_size > 0
    forced = ["align-plot", "-m", model, "--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    done = CliRunner().invoke(main, [*forced, "-n", "1-3", "-o", str(tmp_path / "m.png")])  # the empty pair left out
    assert done.exit_code == 0 and "sentence 2 is empty: not drawn" in done.output, done.output
    assert sorted(p.name for p in tmp_path.glob("m-*.png")) == ["m-1.png", "m-3.png"]


def test_align_plot_draws_pharaoh_links_over_token_files(tmp_path):
    (tmp_path / "s").write_text("the light day\n", encoding="utf-8")
    (tmp_path / "t").write_text("le jour\n", encoding="utf-8")
    (tmp_path / "a").write_text("0-0 2-1\n", encoding="utf-8")
    base = [
        "align-plot",
        str(tmp_path / "a"),
        "--source",
        str(tmp_path / "s"),
        "--target",
        str(tmp_path / "t"),
        "-n",
        "1",
        "-o",
    ]
    r = CliRunner().invoke(main, base + [str(tmp_path / "l.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "l.png").stat().st_size > 1000
    (tmp_path / "a").write_text("0-0 3-1\n", encoding="utf-8")
    r = CliRunner().invoke(main, base + [str(tmp_path / "m.png")])
    assert r.exit_code == 2 and "beyond its 3 source and 2 target words" in r.output


def test_word_attention_sums_source_pieces_and_averages_target_pieces():
    source = ["the", "P@@", "lé@@", "iades", "</s>"]  # words: the | Pléiades | </s>
    target = ["les", "Pl@@", "éiades", "</s>"]  # words: les | Pléiades | </s>
    alpha = np.array(
        [[0.7, 0.1, 0.1, 0.0, 0.1], [0.1, 0.5, 0.2, 0.1, 0.1], [0.0, 0.3, 0.3, 0.2, 0.2], [0.0, 0.0, 0.0, 0.1, 0.9]]
    )
    w = word_attention(source, target, alpha)
    assert w.source == ["the", "Pléiades", "</s>"] and w.target == ["les", "Pléiades", "</s>"]
    np.testing.assert_allclose(
        w.attention,
        [
            [0.7, 0.2, 0.1],
            [0.05, 0.8, 0.15],  # mean of (0.1, 0.8, 0.1), (0, 0.8, 0.2)
            [0.0, 0.1, 0.9],
        ],
    )  # </s> stays as it is
    np.testing.assert_allclose(w.attention.sum(1), 1.0)


def test_word_attention_leaves_words_alone_and_merges_sentencepiece():
    alpha = np.random.default_rng(0).dirichlet(np.ones(4), size=3)
    w = word_attention(["the", "light", "day", "</s>"], ["le", "jour", "</s>"], alpha)
    assert w.source == ["the", "light", "day", "</s>"] and w.target == ["le", "jour", "</s>"]
    np.testing.assert_array_equal(w.attention, alpha)
    w = word_attention(["\u2581Éter", "nel", "\u2581dit", "</s>"], ["\u2581a", "b", "</s>"], alpha)
    assert w.source == ["Éternel", "dit", "</s>"] and w.target == ["ab", "</s>"]
    np.testing.assert_allclose(
        w.attention[0],
        [
            (alpha[0, 0] + alpha[0, 1] + alpha[1, 0] + alpha[1, 1]) / 2,
            (alpha[0, 2] + alpha[1, 2]) / 2,
            (alpha[0, 3] + alpha[1, 3]) / 2,
        ],
    )
    np.testing.assert_allclose(w.attention.sum(1), 1.0)
    w = word_attention(["ab@@", "</s>"], ["x", "</s>"], np.full((2, 2), 0.5))  # a dangling separator
    assert w.source == ["ab", "</s>"]
    with pytest.raises(ValueError, match="shape"):
        word_attention(["a", "</s>"], ["b", "</s>"], np.ones((3, 2)))


def test_align_plot_draws_words_and_pieces_on_request(tmp_path, monkeypatch):
    record = {
        "line": 1,
        "source": ["the", "P@@", "lé@@", "iades", "</s>"],
        "target": ["les", "Pl@@", "éiades", "</s>"],
        "score": -1.5,
        "alignment": np.full((4, 5), 0.2).tolist(),
    }
    (tmp_path / "a.jsonl").write_text(
        '{"format": "nmtkit-alignments", "version": 1}\n' + json.dumps(record) + "\n", encoding="utf-8"
    )
    drawn = []
    monkeypatch.setattr(
        "nmtkit.align.heatmap.alignment_heatmap", lambda s, t, a, out, title: drawn.append((s, t, np.asarray(a)))
    )
    for extra in ([], ["--pieces"]):
        r = CliRunner().invoke(
            main, ["align-plot", str(tmp_path / "a.jsonl"), "-n", "1", "-o", str(tmp_path / "a.png"), *extra]
        )
        assert r.exit_code == 0, r.output
    (words_src, words_tgt, words), (piece_src, piece_tgt, piece) = drawn
    assert words_src == ["the", "Pléiades", "</s>"] and words_tgt == ["les", "Pléiades", "</s>"]
    np.testing.assert_allclose(words, [[0.2, 0.6, 0.2]] * 3)
    assert piece_src == record["source"] and piece_tgt == record["target"] and piece.shape == (4, 5)


def test_align_plot_refuses_a_bad_record_and_a_bad_line_list_in_one_line(tmp_path):
    """A record without its attention was a KeyError; one whose attention did not fit its tokens
    was drawn with --pieces, labels off the grid; a range typed wrong took minutes and gigabytes."""
    import time

    from nmtkit.align.heatmap import MAX_PICTURES, parse_sentences

    good = {"line": 1, "source": ["a", "b", "</s>"], "target": ["x", "</s>"], "score": -1.0}
    records = [good | {"alignment": [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]}, good | {"line": 2}]
    records.append(good | {"line": 3, "alignment": [[0.5, 0.5], [0.0, 1.0]]})
    records.append(good | {"line": 4, "source": [1, None, "</s>"], "alignment": [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]})
    records.append(good | {"line": 5, "alignment": [[float("nan"), 0.5, 0.0], [0.0, 0.0, 1.0]]})
    records.append(good | {"line": 6, "alignment": [[0.5, 0.5], [0.0, 0.0, 1.0]]})
    records.append(good | {"line": 7, "alignment": [[0.5, 0.5, 0.0], [0.0, 0.0, 1e300]]})  # overflowed in matplotlib
    path = tmp_path / "a.jsonl"
    path.write_text(
        '{"format": "nmtkit-alignments", "version": 1}\n' + "".join(json.dumps(r) + "\n" for r in records),
        encoding="utf-8",
    )

    def plot(*args):
        return CliRunner().invoke(main, ["align-plot", str(path), "-o", str(tmp_path / "p.png"), *args])

    assert plot("-n", "1").exit_code == 0
    for args, says in (
        (["-n", "2"], "a.jsonl: sentence 2 is not an alignment record"),
        (["-n", "3", "--pieces"], "sentence 3: attention of shape (2, 2) for 2 target and 3 source tokens"),
        (["-n", "3-"], "--sentences '3-': expected line numbers from 1"),
        (["-n", "4"], "a.jsonl: sentence 4 is not an alignment record"),  # tokens not text: a traceback
        (["-n", "5"], "sentence 5: its attention holds weights outside [0, 1], NaN or infinite"),  # NaN was drawn
        (["-n", "7"], "sentence 7: its attention holds weights outside [0, 1]"),
        (["-n", "6"], "sentence 6: its attention is not a table of numbers"),
        (
            ["-n", "1", "--threads", "2"],
            "--threads sets how a model computes, and none runs here (ALIGNMENTS is drawn as it is): leave",
        ),
        (["-n", "1", "--device", "cpu"], "--device sets how a model computes"),
    ):
        r = plot(*args)
        assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "p-3.png").exists()
    for out in ("-", "/dev/stdout"):
        r = CliRunner().invoke(main, ["align-plot", str(path), "-n", "1", "-o", out])
        assert r.exit_code == 2 and "a picture is a file, not text for stdout" in r.output
    r = CliRunner().invoke(main, ["align-plot", "links", "--source", "-", "--target", "-", "-n", "1", "-o", "p.png"])
    assert r.exit_code == 2 and "--source and --target cannot both read stdin" in r.output  # '<stdin>: is empty'
    assert parse_sentences("2,2,1-3") == [2, 1, 3]  # each drawn once
    assert len(parse_sentences("1-6000,1-6000")) == 6000
    started = time.monotonic()
    with pytest.raises(UserError, match=f"more than {MAX_PICTURES:,} pictures"):
        parse_sentences("1-20000000")
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("item", ["٠-٠", "1_0-2", "+1-2", "0-", "-1-2", "1--2", "a-b", "1p2"])
def test_a_link_is_ascii_digits_dash_ascii_digits(item):
    """int() took '٠' (Arabic-Indic zero) as 0, '1_0' as 10 and '+1' as 1."""
    from nmtkit.align.aer import read_gold

    with pytest.raises(UserError, match="here: "):
        read_pharaoh(f"0-0 {item}", "here")
    with pytest.raises(UserError, match="here: "):
        read_gold(f"0-0 {item}", "here")
    assert read_pharaoh("0-0 10-2", "here") == [(0, 0), (10, 2)]
