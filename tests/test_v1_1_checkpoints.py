"""Checkpoints written by nmtkit 1.1.0 (tests/fixtures/v1.1.0, made by its make.sh before the
settings redesign) load and translate to the same bytes as 1.1.0 wrote: the best translations
with their scores and links (jsonl), and the 2-best lists with Pharaoh links."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "v1.1.0"


@pytest.mark.parametrize("model", ["rnnsearch", "luong"])
def test_a_1_1_checkpoint_translates_as_1_1_did(model, tmp_path):
    test_en = (FIXTURES / "test.en").read_text(encoding="utf-8")
    runner = CliRunner()
    best = runner.invoke(
        main,
        [
            "translate",
            "-m",
            str(FIXTURES / f"{model}.pt"),
            "--beam",
            "3",
            "--threads",
            "1",
            "--output-format",
            "jsonl",
            "-q",
        ],
        input=test_en,
    )
    assert best.exit_code == 0, best.output
    assert best.stdout == (FIXTURES / f"{model}.jsonl").read_text(encoding="utf-8")
    links = tmp_path / "links"
    nbest = runner.invoke(
        main,
        [
            "translate",
            "-m",
            str(FIXTURES / f"{model}.pt"),
            "--beam",
            "3",
            "--nbest",
            "2",
            "--threads",
            "1",
            "--print-alignment",
            str(links),
            "-q",
        ],
        input=test_en,
    )
    assert nbest.exit_code == 0, nbest.output
    assert nbest.stdout == (FIXTURES / f"{model}.nbest").read_text(encoding="utf-8")
    assert links.read_text(encoding="utf-8") == (FIXTURES / f"{model}.align").read_text(encoding="utf-8")
