"""`score -m --data` says how many pairs of the split it left out for an empty side, so that
its count of sentences is not a silent surprise beside the split's lines."""

import json

from click.testing import CliRunner

from nmtkit.cli import main


def score_nll(overfit, *extra):
    args = ["score", "-m", overfit / "run" / "last.pt", "--data", overfit / "bin-kept", "--split", "valid"]
    return CliRunner().invoke(main, [str(a) for a in [*args, "--device", "cpu", *extra]], catch_exceptions=False)


def test_pairs_with_an_empty_side_are_counted_as_left_out(overfit):
    text = score_nll(overfit)
    assert text.exit_code == 0, text.output
    assert "(7 sentences," in text.stdout  # the valid split's 8 pairs, one of them '[]', cleaned to nothing
    assert "; 1 pair with an empty side left out" in text.stdout
    data = score_nll(overfit, "--output-format", "json")
    corpus = json.loads(data.stdout)["corpus_nll"]
    assert corpus["sentences"] == 7 and corpus["left_out_empty"] == 1
