"""Alignment error rate against sure and possible gold links, and the attention's alignment of
given translations (nmtkit align) that it scores."""

import json

import pytest
from click.testing import CliRunner

from nmtkit.align.aer import alignment_error, read_gold
from nmtkit.cli import main
from tests.conftest import EN, FR


def test_och_and_neys_definition_on_a_worked_example():
    # A = {0-0, 1-1, 2-1}; S = {0-0, 2-2}; P = S ∪ {1-1}: |A∩S| = 1, |A∩P| = 2
    r = alignment_error(["0-0 1-1 2-1"], ["0-0 1?1 2-2"])
    assert (r["links"], r["sure"], r["possible"]) == (3, 2, 3)
    assert r["precision"] == pytest.approx(200 / 3) and r["recall"] == pytest.approx(50.0)
    assert r["aer"] == pytest.approx(40.0)  # 1 − (1 + 2) / (3 + 2)
    assert alignment_error(["0-0 2-2"], ["0-0 1?1 2-2"])["aer"] == 0.0  # sure links, no error
    assert read_gold("0-1 2?3", "g") == ({(0, 1)}, {(0, 1), (2, 3)})


def test_counts_are_summed_over_the_corpus_not_averaged_per_sentence():
    r = alignment_error(["0-0", "0-0 1-1 2-2 3-3"], ["1-1", "0-0 1-1 2-2 3-3"])
    assert r["precision"] == pytest.approx(80.0) and r["recall"] == pytest.approx(80.0)


def test_score_align_cli_and_its_refusals(tmp_path):
    hyp, gold = tmp_path / "hyp", tmp_path / "gold"
    hyp.write_text("0-0 1-1 2-1\n")
    gold.write_text("0-0 1?1 2-2\n")
    done = CliRunner().invoke(main, ["score-align", str(hyp), "-g", str(gold), "--output-format", "json"])
    assert done.exit_code == 0 and json.loads(done.stdout)["aer"] == pytest.approx(40.0)
    gold.write_text("0-0 1?1 2-2\n0-0\n")
    done = CliRunner().invoke(main, ["score-align", str(hyp), "-g", str(gold)])
    assert done.exit_code == 2 and "has 1 line but" in done.output
    gold.write_text("0-0 1*1\n")
    done = CliRunner().invoke(main, ["score-align", str(hyp), "-g", str(gold)])
    assert done.exit_code == 2 and "'1*1' is not a gold link" in done.output
    for blank in ("\n", "1?1\n"):  # no sure link: AER and recall 0/0, once reported as a perfect 0.00
        gold.write_text(blank)
        done = CliRunner().invoke(main, ["score-align", str(hyp), "-g", str(gold)])
        assert done.exit_code == 2 and "holds no sure links" in done.output, done.output


def test_align_links_each_target_word_of_the_given_translations_at_most_once(overfit, tmp_path):
    src, tgt, out = tmp_path / "s.en", tmp_path / "t.fr", tmp_path / "links"
    src.write_text("\n".join(EN[:4]) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(FR[:4]) + "\n", encoding="utf-8")
    done = CliRunner().invoke(
        main,
        ["align", "-m", str(overfit / "run" / "last.pt"), "--source", str(src), "--target", str(tgt), "-o", str(out)],
    )
    assert done.exit_code == 0, done.output
    lines = out.read_text().splitlines()
    assert len(lines) == 4
    from nmtkit.translate.translator import Translator

    side = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu").sides.tgt  # words: no BPE here
    for line, sentence in zip(lines, FR[:4]):
        links = [tuple(map(int, x.split("-"))) for x in line.split()]
        linked, n = [j for _, j in links], len(side.tokens(sentence))
        assert linked == sorted(set(linked)) and set(linked) <= set(range(n))  # each word at most once
        assert len(linked) >= n / 2  # unlinked: only where </s> takes the most weight
    tgt.write_text("\n".join(FR[:3]) + "\n", encoding="utf-8")
    done = CliRunner().invoke(
        main, ["align", "-m", str(overfit / "run" / "last.pt"), "--source", str(src), "--target", str(tgt)]
    )
    assert done.exit_code == 2 and "has 4 lines but" in done.output


def test_align_plot_draws_gold_links_sure_white_and_possible_grey(tmp_path):
    from nmtkit.align.heatmap import from_pharaoh

    (tmp_path / "g.links").write_text("0-0 1?1 1-2\n", encoding="utf-8")
    (tmp_path / "s.en").write_text("a b\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text("x y z\n", encoding="utf-8")
    (heatmap,) = from_pharaoh(tmp_path / "g.links", str(tmp_path / "s.en"), str(tmp_path / "s.fr"), [1])
    assert heatmap.alignment.tolist() == [[1.0, 0.0], [0.0, 0.5], [0.0, 1.0]]  # a row per target word
    assert heatmap.title == "line 1, 2 links and 1 possible (grey)"
    alone = CliRunner().invoke(
        main, ["align-plot", str(tmp_path / "g.links"), "-n", "1", "-o", str(tmp_path / "g.png")]
    )
    assert alone.exit_code == 2 and "Pharaoh links need --source and --target" in alone.output
    pair = ["--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    for extra, said in ((["--pieces"], "--pieces draws a model's subword pieces"), (["--tokenized"], "add -m")):
        plot = ["align-plot", str(tmp_path / "g.links"), *pair, "-n", "1", "-o", str(tmp_path / "g.png"), *extra]
        refused = CliRunner().invoke(main, plot)  # taken without a word, and drawn the same
        assert refused.exit_code == 2 and said in refused.output, refused.output
