"""nmtkit rerank: each source line's best hypothesis of a Moses n-best list by weighted features,
and --tune's weights, the best BLEU against references on a grid; Moses features read by name; a
user's mistakes refused in one line, exit 2, nothing written."""

import re

import numpy as np
import pytest

from nmtkit.evaluate.rerank import GRID, WHOLE_GRID, read_lists, tune
from nmtkit.evaluate.score import sacre_bleu
from nmtkit.translate.nbest import features_of
from tests.conftest import EN
from tests.test_rescore import CPU, run
from tests.test_rescore import lines_of as write

# three source lines; line 1 has no hypothesis; X favours the second of each, words the longer
LISTS = [
    "0 ||| the cat sat ||| F0= -1.0 X= -5 ||| -1",
    "0 ||| a cat sat on the mat ||| F0= -2.0 X= -1 ||| -2",
    "2 ||| dogs bark ||| F0= -0.5 X= -3 ||| -0.5",
    "2 ||| the dogs bark loudly ||| F0= -0.5 X= -2 ||| -0.5",
]


def test_features_are_read_by_name_with_as_many_values_as_follow():
    assert features_of("F0= -1.5 TM0= -1 -2 -3 channel= 4e-1") == {"F0": [-1.5], "TM0": [-1, -2, -3], "channel": [0.4]}
    assert features_of("") == {}
    for text, says in [
        ("-3.2 F0= 1", "has no feature name before it"),
        ("F0= 1 F0= 2", "given twice"),
        ("F0= X= 1", "F0= has no value"),
        ("F0= one", "'one' is not a finite number"),
        ("F0= nan", "'nan' is not a finite number"),
        ("F0= -inf", "'-inf' is not a finite number"),
        ("F0= 1_0", "'1_0' is not a finite number"),
        ("= 1", "is empty"),
        ("F0= 1 channel=0.5", re.escape("'channel=0.5': a space after the '=', as Moses writes features")),
    ]:
        with pytest.raises(ValueError, match=says):
            features_of(text)


def test_the_weights_choose_each_lines_hypothesis_and_a_line_without_any_comes_out_empty(tmp_path):
    nbest = write(tmp_path / "n.nbest", LISTS)
    default = run("rerank", nbest)
    assert default.exit_code == 0, default.output
    assert default.stdout.splitlines() == ["the cat sat", "", "dogs bark"]  # F0 alone; the first of equals
    assert "rerank: 3 lines from 4 hypotheses, by F0= 1 X= 0 words= 0" in default.stderr
    weighted = run("rerank", nbest, "--weights", "F0= 1 X= 1")
    assert weighted.stdout.splitlines() == ["a cat sat on the mat", "", "the dogs bark loudly"]
    longer = run("rerank", nbest, "--weights", "F0= 1 words= 0.3", "-o", tmp_path / "out")
    assert longer.stdout == "" and (tmp_path / "out").read_text().splitlines()[2] == "the dogs bark loudly"
    assert (tmp_path / "out").read_text().splitlines()[0] == "the cat sat"  # -1 + 0.9 against -2 + 1.8
    assert run("rerank", nbest, "--weights", "F0= 0 words= -1").stdout.splitlines() == ["the cat sat", "", "dogs bark"]
    assert "no hypotheses for 1 of its lines 0 to 2 (the first: 1): each gets an empty one" in default.stderr
    assert "another hypothesis" not in default.stderr  # F0 ranked the lists: its choice is their first


def test_the_default_weights_say_where_they_choose_otherwise_than_the_lists_order(tmp_path):
    # a length penalty ranked the longer first: F0 alone, the log p, prefers the shorter
    penalised = ["0 ||| a long one ||| F0= -3 ||| -0.9", "0 ||| short ||| F0= -2 ||| -2", "1 ||| b ||| F0= -1 ||| -1"]
    done = run("rerank", write(tmp_path / "n.nbest", penalised))
    assert done.exit_code == 0 and done.stdout.splitlines() == ["short", "b"]
    assert "by F0= alone, 1 of 2 lines gets another hypothesis than the lists' first" in done.stderr
    weighted = run("rerank", tmp_path / "n.nbest", "--weights", "F0= 1")
    assert weighted.stdout == done.stdout and "another hypothesis" not in weighted.stderr  # the weights are the user's


def test_tuning_finds_weights_that_pick_the_references_and_writes_them_as_weights_takes_them(tmp_path):
    nbest = write(tmp_path / "n.nbest", LISTS)
    refs = write(tmp_path / "refs", ["a cat sat on the mat", "", "the dogs bark loudly"])
    done = run("rerank", nbest, "--tune", refs)
    assert "no hypotheses for 1 of the 3 lines of " in done.stderr, done.stderr
    assert done.exit_code == 0, done.output
    weights = done.stdout.strip()
    assert weights.startswith("F0= 1 X= ") and " words= " in weights
    assert "BLEU" in done.stderr and "100.00 reranked" in done.stderr
    again = run("rerank", nbest, "--weights", weights)
    assert again.stdout.splitlines() == ["a cat sat on the mat", "", "the dogs bark loudly"]
    held_first = run("rerank", nbest, "--tune", refs, "--weights", "X= 1 F0= 1")  # X held: written first
    assert held_first.exit_code == 0 and held_first.stdout.startswith("X= 1 F0= ")
    only_x = run("rerank", nbest, "--tune", refs, "--weights", "F0= 1 X= 0")  # words not named: not tuned
    assert only_x.exit_code == 0 and only_x.stdout.strip().startswith("F0= 1 X= ") and "words" not in only_x.stdout
    held = run("rerank", nbest, "--tune", refs, "--weights", "F0= 1")
    assert held.exit_code == 2 and "nothing to tune" in held.stderr
    both = run("rerank", "-", "--tune", "-")
    assert both.exit_code == 2 and "stdin" in both.stderr and both.stderr.count("\n") == 1


def test_tuning_beyond_the_whole_grid_goes_one_weight_at_a_time_and_reaches_the_same_bleu(tmp_path):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(30)]
    lines, refs = [], []
    for i in range(40):
        hyps = [" ".join(rng.choice(words, 6)) for _ in range(4)]
        refs.append(hyps[int(rng.integers(4))])
        for h in hyps:
            values = " ".join(f"A{k}= {rng.normal():.3f}" for k in range(4))
            lines.append(f"{i} ||| {h} ||| F0= {rng.normal():.3f} {values} ||| 0")
    nbest = write(tmp_path / "n.nbest", lines)
    lists = read_lists(str(nbest), len(refs))
    start = lists.weights({"F0": [1.0]})
    columns = [lists.columns(f"A{k}").start for k in range(4)]
    assert len(GRID) ** 4 <= WHOLE_GRID < len(GRID) ** 5  # four weights: every point; five: one at a time
    found = tune(lists, refs, start, [*columns, lists.columns("words").start], sacre_bleu())
    assert found.bleu > found.first and found.weights[0] == 1
    assert set(found.weights[columns]) <= set(GRID)
    off = lists.weights({"F0": [1.0], "A0": [0.25], "A1": [0.0], "A2": [0.0], "A3": [0.0]})
    at_start = tune(lists, refs, off, [], sacre_bleu()).bleu
    assert tune(lists, refs, off, columns[:2], sacre_bleu()).bleu >= at_start  # a start off the grid is a candidate
    two = tune(lists, refs, start, columns[:2], sacre_bleu())  # the whole grid of two weights
    assert two.bleu == max(
        tune(lists, refs, lists.weights({"F0": [1.0], "A0": [a], "A1": [b]}), [], sacre_bleu()).bleu
        for a in GRID
        for b in GRID
    )


@pytest.mark.parametrize(
    ("lines", "args", "says"),
    [
        (["0 ||| a ||| -3.2 ||| -3.2"], [], "the value '-3.2' has no feature name before it (an older nmtkit's"),
        (["0 ||| a ||| F0= -1 ||| -1", "0 ||| b ||| F0= -1 X= 2 3 ||| -1"], [], "features F0=, X= (2 values), line 1"),
        (["0 ||| a ||| F0= -1 words= 3 ||| -1"], [], "a feature words=, the name rerank gives the word count"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--weights", "F0= 1 channel= 0.5"], "(they have F0=, words=)"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--weights", "F0= 1 2"], "F0= takes 1 value(s)"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--weights", "F0 1"], "--weights 'F0 1': the value 'F0' has no feature"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--weights", "F0= nan"], "'nan' is not a finite number"),
        (["0 ||| a ||| F0= nan ||| -1"], [], "line 1: 'nan' is not a finite number (the feature F0=)"),
        (["0 ||| a b |||  ||| -1", "0 ||| a |||  ||| -1"], [], "have no features: nothing to rank them by"),
        (["3 ||| a ||| F0= -1 ||| -1"], ["--tune", "REFS"], "refs has 2 lines"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--tune", "EMPTY"], "empty: is empty; give the references, a line each"),
        (["1 ||| a ||| F0= -1 ||| -1"], ["--tune", "BLANK"], "blank: holds only empty lines; give the references"),
        (["0 ||| a ||| F0= -1 ||| -1"], ["--tokenized"], "--tokenized says how --tune's BLEU counts"),
        (["0 ||| a ||| F0= -1 X= 1 ||| -1"], ["--tune", "REFS", "--weights", "F0= 0 X= 1"], "holds F0= at 0"),
        # past float64: inf or NaN by the BLAS's order of sums, and a NaN ranks with no hypothesis
        (
            ["0 ||| a ||| F0= 1 X= 1 ||| 0", "1 ||| b ||| F0= 1e308 X= -1e308 ||| 0"],
            ["--weights", "F0= 10 X= 10"],
            "of line 1 (from 0) overflows: its features times the weights F0= 10 X= 10 words= 0 pass float64's",
        ),
        (
            ["0 ||| a ||| F0= -37 X= -30 ||| 0", "0 ||| b ||| F0= -38 X= -31 ||| 0"],
            ["--weights", "F0= 1e308 X= -1e308"],
            "of line 0 (from 0) overflows",
        ),
        (
            ["0 ||| a ||| F0= -1 X= 1e308 ||| 0", "1 ||| b ||| F0= -2 X= -1e308 ||| 0"],
            ["--tune", "REFS"],
            "--tune: the features are too large for its grid (weights up to 3 times the held feature's)",
        ),
        (["0 ||| a ||| F0=-1 ||| -1"], [], "line 1: 'F0=-1': a space after the '=', as Moses writes features"),
    ],
)
def test_mistakes_are_refused_in_one_line_and_nothing_is_written(tmp_path, lines, args, says):
    nbest = write(tmp_path / "n.nbest", lines)
    refs = write(tmp_path / "refs", ["a", "b"])
    out = tmp_path / "out"
    empty = write(tmp_path / "empty", [])
    given = {"REFS": str(refs), "EMPTY": str(empty), "BLANK": str(write(tmp_path / "blank", ["", " "]))}
    done = run("rerank", nbest, *[given.get(a, a) for a in args], "-o", out)
    assert done.exit_code == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not out.exists()


def test_translates_nbest_lists_name_their_log_p_and_rerank_gives_back_the_search_s_best(overfit, tmp_path):
    source = write(tmp_path / "s.en", EN[:4])
    nbest = tmp_path / "s.nbest"
    model = overfit / "run" / "last.pt"
    done = run("translate", "-m", model, source, "--nbest", 3, "--beam", 3, "-o", nbest, "-q", *CPU)
    assert done.exit_code == 0, done.output
    assert all(line.split(" ||| ")[2].startswith("F0= ") for line in nbest.read_text().splitlines())
    best = run("translate", "-m", model, source, "--beam", 3, "-q", *CPU)
    assert run("rerank", nbest).stdout == best.stdout


def test_the_bleu_tuning_reports_is_the_bleu_of_what_rerank_then_writes(tmp_path):
    import sacrebleu

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(12)]
    lines, refs = [], []
    for i in range(30):
        refs.append(" ".join(rng.choice(words, 7)))
        for _ in range(5):
            h = " ".join(rng.choice(words, int(rng.integers(3, 10))))
            lines.append(f"{i} ||| {h} ||| F0= {rng.normal():.3f} X= {rng.normal():.3f} ||| 0")
    nbest, references = write(tmp_path / "n.nbest", lines), write(tmp_path / "refs", refs)
    tuned = run("rerank", nbest, "--tune", references)
    assert tuned.exit_code == 0, tuned.output
    said = re.search(r"BLEU ([\d.]+) with the lists' first hypotheses, ([\d.]+) reranked", tuned.stderr)
    chosen = run("rerank", nbest, "--weights", tuned.stdout.strip()).stdout.splitlines()
    firsts = [line.split(" ||| ")[1] for k, line in enumerate(lines) if k % 5 == 0]
    assert float(said[2]) == pytest.approx(sacrebleu.corpus_bleu(chosen, [refs]).score, abs=0.005)
    assert float(said[1]) == pytest.approx(sacrebleu.corpus_bleu(firsts, [refs]).score, abs=0.005)
    assert float(said[2]) > float(said[1])


def test_a_text_s_three_pipes_are_escaped_in_the_list_and_read_back_as_they_were(tmp_path):
    """A copied source token '|||' (--replace-unk) parted the line's fields: rescore and rerank refused it."""
    from nmtkit.translate.nbest import nbest_line, read_nbest

    text = "a ||| b |||| c | d"
    line = nbest_line(0, text, -1.5, -1.5)
    assert line.count("|||") == 3 and "&#124;&#124;&#124;" in line
    (tmp_path / "n.txt").write_text(line + "\n", encoding="utf-8")
    (read,) = read_nbest(str(tmp_path / "n.txt"))
    assert read.text == text and read.with_feature("R", -1.0).count("|||") == 3
