"""Checkpoints written by nmtkit 1.1.0 (tests/fixtures/v1.1.0, made by its make.sh before the
settings redesign) load and translate as 1.1.0 did: the best translations with their scores and
links (jsonl), and the 2-best lists with Pharaoh links.

The fixture was written on one CPU. Another CPU's kernels (AVX-512 against AVX2, oneDNN's code
paths) or a GPU round the last printed digit of a score either way, so the comparison holds the
words, the n-best order and the links to the byte, and the scores to ``SCORE_TOLERANCE``: four
printed decimals, one of them allowed to round the other way, and a margin for the sum of a few
dozen log-probabilities computed in another order. A GPU translates with float32 products
(``--no-tf32``): TF32's 10-bit mantissa moves a score past the tolerance (docs/gpu.md)."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "v1.1.0"
SCORE_TOLERANCE = 1e-3
SCORE_KEYS = ("score", "ranking")


def _translate(model: str, *extra: str) -> str:
    # no -q: the console's verbosity is process-wide, and later tests read its warnings
    args = ["translate", "-m", str(FIXTURES / f"{model}.pt"), "--beam", "3", "--threads", "1", "--no-tf32", *extra]
    result = CliRunner().invoke(main, args, input=(FIXTURES / "test.en").read_text(encoding="utf-8"))
    assert result.exit_code == 0, result.output
    return result.stdout


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=0.0, abs_tol=SCORE_TOLERANCE)


def assert_same_jsonl(got: str, want: str) -> None:
    """Every record's fields equal, but for the scores, which may differ by SCORE_TOLERANCE."""
    got_rows, want_rows = got.splitlines(), want.splitlines()
    assert len(got_rows) == len(want_rows), (got, want)
    for n, (mine, theirs) in enumerate(zip(got_rows, want_rows, strict=True), 1):
        a, b = json.loads(mine), json.loads(theirs)
        assert a.keys() == b.keys(), (n, mine, theirs)
        for key in a:
            same = _close(a[key], b[key]) if key in SCORE_KEYS else a[key] == b[key]
            assert same, f"line {n}, {key}: {a[key]!r} where 1.1.0 wrote {b[key]!r}"


def assert_same_nbest(got: str, want: str) -> None:
    """Moses n-best rows (``id ||| text ||| score ||| ranking``) in the same order with the same
    words; the numeric fields within SCORE_TOLERANCE (the score named F0 now, unnamed by 1.1.0)."""
    got_rows, want_rows = got.splitlines(), want.splitlines()
    assert len(got_rows) == len(want_rows), (got, want)
    for n, (mine, theirs) in enumerate(zip(got_rows, want_rows, strict=True), 1):
        a, b = mine.split(" ||| "), theirs.split(" ||| ")
        assert a[:2] == b[:2] and len(a) == len(b), f"row {n}: {mine!r} where 1.1.0 wrote {theirs!r}"
        for x, y in zip(a[2:], b[2:], strict=True):
            assert _close(float(x.removeprefix("F0= ")), float(y)), f"row {n}: {mine!r} where 1.1.0 wrote {theirs!r}"


@pytest.mark.parametrize("model", ["rnnsearch", "luong"])
def test_a_1_1_checkpoint_translates_as_1_1_did(model, tmp_path):
    assert_same_jsonl(_translate(model, "--output-format", "jsonl"), (FIXTURES / f"{model}.jsonl").read_text("utf-8"))
    links = tmp_path / "links"
    nbest = _translate(model, "--nbest", "2", "--print-alignment", str(links))
    assert_same_nbest(nbest, (FIXTURES / f"{model}.nbest").read_text(encoding="utf-8"))
    assert links.read_text(encoding="utf-8") == (FIXTURES / f"{model}.align").read_text(encoding="utf-8")


def _nudged(line: str, by: float) -> str:
    """A jsonl record or n-best row with every score moved by ``by``, printed as nmtkit prints."""
    if line.startswith("{"):
        record = json.loads(line)
        return json.dumps({k: round(v + by, 4) if k in SCORE_KEYS else v for k, v in record.items()})
    fields = line.split(" ||| ")
    return " ||| ".join(fields[:2] + [f"{float(x) + by:.4f}" for x in fields[2:]])


@pytest.mark.parametrize("kind", ["jsonl", "nbest"])
def test_the_comparison_allows_a_last_digit_rounded_the_other_way_but_no_other_word(kind):
    """The comparison is a real check: another machine's rounding passes, a word, a swapped
    n-best order or a score off by more than the tolerance fails."""
    compare = assert_same_jsonl if kind == "jsonl" else assert_same_nbest
    want = (FIXTURES / f"rnnsearch.{kind}").read_text(encoding="utf-8")
    rows = want.splitlines()
    compare("\n".join(_nudged(r, 1e-4) for r in rows) + "\n", want)
    compare("\n".join(_nudged(r, -1e-4) for r in rows) + "\n", want)
    with pytest.raises(AssertionError):
        compare("\n".join(_nudged(r, 5 * SCORE_TOLERANCE) for r in rows) + "\n", want)
    with pytest.raises(AssertionError):
        compare(want.replace("renard", "lion", 1), want)
    with pytest.raises(AssertionError):
        compare("\n".join([rows[1], rows[0], *rows[2:]]) + "\n", want)
