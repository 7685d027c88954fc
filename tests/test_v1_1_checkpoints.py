"""Checkpoints written by nmtkit 1.1.0 (tests/fixtures/v1.1.0, made by its make.sh before the
settings redesign) load and translate to the same bytes as 1.1.0 wrote: the best translations
with their scores and links (jsonl), and the 2-best lists with Pharaoh links."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "v1.1.0"


def _translate(model: str, *extra: str) -> str:
    # no -q: the console's verbosity is process-wide, and later tests read its warnings
    args = ["translate", "-m", str(FIXTURES / f"{model}.pt"), "--beam", "3", "--threads", "1", *extra]
    result = CliRunner().invoke(main, args, input=(FIXTURES / "test.en").read_text(encoding="utf-8"))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("model", ["rnnsearch", "luong"])
def test_a_1_1_checkpoint_translates_as_1_1_did(model, tmp_path):
    assert _translate(model, "--output-format", "jsonl") == (FIXTURES / f"{model}.jsonl").read_text(encoding="utf-8")
    links = tmp_path / "links"
    assert _translate(model, "--nbest", "2", "--print-alignment", str(links)) == (
        FIXTURES / f"{model}.nbest"
    ).read_text(encoding="utf-8")
    assert links.read_text(encoding="utf-8") == (FIXTURES / f"{model}.align").read_text(encoding="utf-8")
