"""align-plot given an attention file (translate --alignments) with --source/--target."""

import json

from click.testing import CliRunner

from nmtkit.align.files import alignment_record, header
from nmtkit.cli import main


def test_an_attention_file_with_source_and_target_is_named_as_such(tmp_path):
    # --source/--target make align-plot read its file as Pharaoh links; an attention file's
    # header line once made that "differ in length (2, 1, 1 lines)", which said nothing of the mistake
    record = alignment_record(1, ["a", "b"], ["x"], [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], -1.0)
    (tmp_path / "t.align").write_text(header() + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    (tmp_path / "s.en").write_text("a b\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text("x\n", encoding="utf-8")
    plot = ["align-plot", str(tmp_path / "t.align"), "--source", str(tmp_path / "s.en")]
    plot += ["--target", str(tmp_path / "s.fr"), "-n", "1", "-o", str(tmp_path / "a.png")]
    done = CliRunner().invoke(main, plot)
    assert done.exit_code == 2, done.output
    assert "is an attention file (translate --alignments)" in done.output
    assert "without --source and --target" in done.output
    assert len(done.output.strip().splitlines()) == 1 and not (tmp_path / "a.png").exists()
    alone = CliRunner().invoke(
        main, ["align-plot", str(tmp_path / "t.align"), "-n", "1", "-o", str(tmp_path / "a.png")]
    )
    assert alone.exit_code == 0, alone.output  # the same file alone is drawn
