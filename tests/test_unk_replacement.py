"""make paper-unk's count: each <unk> filled by --replace-unk, checked against the reference's alignment."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bench.unk import count_line, forced_line, main
from nmtkit.core.errors import UserError


def test_a_copy_is_right_when_the_reference_links_that_word_to_where_it_stands_in_the_source():
    source, reference = "Ruth saw Orpah in Moab".split(), "Ruth vit Orpah en Moab".split()
    links = [(0, 0), (1, 1), (3, 3), (4, 4)]  # the aligner missed Orpah
    plain = "<unk> vit <unk> en <unk>".split()
    replaced = "Ruth vit Orpah en saw".split()  # the third <unk> attended to the wrong word
    got = count_line(source, reference, links, plain, replaced, "t")
    assert (got.unks, got.right, got.in_reference) == (3, 1, 2)


def test_a_word_of_the_reference_linked_elsewhere_is_not_right():
    got = count_line(
        "Boaz begat Obed".split(),
        "Obed naquit de Boaz".split(),
        [(0, 3), (2, 0)],
        "<unk> naquit".split(),
        "begat naquit".split(),
        "t",
    )
    assert (got.unks, got.right, got.in_reference) == (1, 0, 0)
    got = count_line(
        "Boaz begat Obed".split(),
        "Obed naquit de Boaz".split(),
        [(0, 0), (2, 3)],
        "<unk> naquit".split(),
        "Boaz naquit".split(),
        "t",
    )
    assert (got.unks, got.right, got.in_reference) == (1, 0, 1)


def test_translations_that_differ_in_more_than_the_copies_are_refused():
    with pytest.raises(UserError, match="differ in length"):
        count_line(["a"], ["a"], [], ["<unk>"], ["a", "b"], "t")
    with pytest.raises(UserError, match="outside the sentence pair"):
        count_line(["a"], ["a"], [(0, 3)], ["<unk>"], ["a"], "t")


def test_forced_decoding_checks_each_reference_word_outside_the_list_against_the_reference_alignment():
    source, reference = "Naomi said to Elimelech".split(), "Naomi dit à Élimélec".split()
    gold = [(0, 0), (1, 1), (2, 2), (3, 3)]
    vocab = {"dit", "à"}
    right = forced_line(source, reference, gold, [(0, 0), (1, 1), (2, 2), (3, 3)], vocab)
    # both names are linked right; only Naomi's copy is the reference word (Élimélec is spelt otherwise)
    assert (right.outside, right.linked, right.agreed, right.copied) == (2, 2, 2, 1)
    wrong = forced_line(source, reference, gold[1:], [(1, 0), (1, 1), (2, 2)], vocab)
    # the aligner left Naomi unlinked, the model linked it to "said" and left Élimélec unlinked
    assert (wrong.outside, wrong.linked, wrong.agreed, wrong.copied) == (2, 1, 0, 0)


def test_the_table_and_its_refusals(tmp_path):
    files = {
        "src": "Ruth saw Orpah\nBoaz came\n",
        "ref": "Ruth vit Orpah\nBoaz vint\n",
        "links": "0-0 1-1 2-2\n0-0 1-1\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    run = tmp_path / "runs" / "guided"
    run.mkdir(parents=True)
    (run / "test.plain.fr").write_text("<unk> vit <unk>\n<unk> vint\n", encoding="utf-8")
    (run / "test.replaced.fr").write_text("Ruth vit saw\nBoaz vint\n", encoding="utf-8")
    (run / "test.ref.links").write_text("0-0 1-1 0-2\n0-0 1-1\n", encoding="utf-8")
    (tmp_path / "vocab.fr.txt").write_text("<unk> 0\nvit 5\nvint 3\n", encoding="utf-8")
    args = [
        "--source",
        str(tmp_path / "src"),
        "--reference",
        str(tmp_path / "ref"),
        "--links",
        str(tmp_path / "links"),
        "--runs",
        str(tmp_path / "runs"),
        "--models",
        "guided",
        "--target-vocab",
        str(tmp_path / "vocab.fr.txt"),
    ]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0 and "| guided | 3 | 2 (66.7%) | 2 |" in out.output
    assert "| guided | 3 | 3 | 2 (66.7%) | 2 (66.7%) |" in out.output
    (tmp_path / "links").write_text("0-0 1-1 2-2\n", encoding="utf-8")
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "line counts differ" in out.output and "Traceback" not in out.output


def test_make_paper_unk_trains_the_study_recipe_on_words_with_and_without_guidance(tmp_path):
    import re
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        ["make", "-n", "paper-unk", f"PAPER={tmp_path}", "DATA=" + str(tmp_path / "data"), "PAPER_UPDATES=7"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    trains = re.findall(r" train (\S+) --save-dir \S+/(\S+) (.*?)(?=\n\S|\Z)", out, re.S)
    assert [(bin_.rsplit("/", 1)[1], run) for bin_, run, _ in trains] == [
        ("data-bin-words30000-links", "rnnsearch-50"),
        ("data-bin-words30000-links", "rnnsearch-50-guided"),
    ]
    assert all("--max-updates 7" in flags for _, _, flags in trains)
    assert ["--guided-alignment-weight" in flags for _, _, flags in trains] == [False, True]
    assert out.count("--replace-unk") == 2 and out.count("--tokenized") == 6 and out.count(" align -m ") == 2
    assert "word-align" in out and "bench.unk" in out
