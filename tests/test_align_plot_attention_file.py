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
    half = CliRunner().invoke(main, plot[:4] + plot[6:])  # --source alone: "Pharaoh links need both …"
    assert half.exit_code == 2 and "is an attention file (translate --alignments)" in half.output, half.output


def test_a_missing_sentence_names_the_lines_held_and_a_sentence_twice_is_refused(tmp_path):
    """A file holding sentence 7 alone said it held 'lines 1-7'; two records of one sentence drew the last."""
    attention = [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]
    records = [alignment_record(n, ["a", "b"], ["x"], attention, -1.0) for n in (2, 3, 7)]
    (tmp_path / "t.align").write_text("\n".join([header(), *map(json.dumps, records)]) + "\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["align-plot", str(tmp_path / "t.align"), "-n", "1", "-o", str(tmp_path / "a.png")])
    assert done.exit_code == 2 and "has no sentence 1 (it holds lines 2-3, 7)" in done.output, done.output
    twice = [*records, records[1]]
    (tmp_path / "t.align").write_text("\n".join([header(), *map(json.dumps, twice)]) + "\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["align-plot", str(tmp_path / "t.align"), "-n", "2", "-o", str(tmp_path / "a.png")])
    assert done.exit_code == 2 and "line 5 is a second record of sentence 3" in done.output, done.output


def test_an_empty_sentence_among_several_is_left_out_and_named(tmp_path):
    # one empty line among the asked ones stopped every picture; alone it is still an error
    records = [alignment_record(1, ["a", "b"], ["x"], [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], -1.0)]
    records += [alignment_record(2, [], [], [], 0.0), alignment_record(3, ["c"], ["y"], [[0.9, 0.1], [0.2, 0.8]], -2.0)]
    lines = [header()] + [json.dumps(r) for r in records]
    (tmp_path / "t.align").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "s.en").write_text("a b\n\nc\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text("x\n\ny\n", encoding="utf-8")
    (tmp_path / "l.txt").write_text("0-0 1-0\n\n0-0\n", encoding="utf-8")
    pharaoh = ["l.txt", "--source", "s.en", "--target", "s.fr"]
    for given, out in ((["t.align"], "a"), (pharaoh, "l")):
        args = [str(tmp_path / a) if a.endswith((".align", ".txt", ".en", ".fr")) else a for a in given]
        done = CliRunner().invoke(main, ["align-plot", *args, "-n", "1-3", "-o", str(tmp_path / f"{out}.png")])
        assert done.exit_code == 0, done.output
        assert "sentence 2 is empty: not drawn" in done.output
        assert sorted(p.name for p in tmp_path.glob(f"{out}-*.png")) == [f"{out}-1.png", f"{out}-3.png"]
        for asked in ("2", "2,2"):
            done = CliRunner().invoke(main, ["align-plot", *args, "-n", asked, "-o", str(tmp_path / "e.png")])
            assert done.exit_code == 2 and "sentence 2 is empty, there is nothing to plot" in done.output
            assert len(done.output.strip().splitlines()) == 1 and not (tmp_path / "e.png").exists()
        done = CliRunner().invoke(main, ["align-plot", *args, "-n", "1,2", "-o", str(tmp_path / f"{out}2.png")])
        assert done.exit_code == 0 and (tmp_path / f"{out}2-1.png").exists(), done.output  # named as one of two


def test_a_picture_is_never_drawn_over_a_file_it_reads(tmp_path):
    """align-plot x.png -o x.png replaced its input with the heatmap, exit 0."""
    record = alignment_record(1, ["a", "b"], ["x"], [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], -1.0)
    text = header() + "\n" + json.dumps(record) + "\n" + json.dumps(record | {"line": 2}) + "\n"
    (tmp_path / "t.png").write_text(text, encoding="utf-8")
    (tmp_path / "t-2.png").write_text(text, encoding="utf-8")
    # the input as -o itself, and as the second of the pictures -o t.png names (t-1.png, t-2.png)
    for read, sentences in (("t.png", "1"), ("t-2.png", "1-2")):
        plot = ["align-plot", str(tmp_path / read), "-n", sentences, "-o", str(tmp_path / "t.png")]
        done = CliRunner().invoke(main, plot)
        assert done.exit_code == 2 and "the same file as ALIGNMENTS" in done.output, done.output
        assert len(done.output.strip().splitlines()) == 1
    assert (tmp_path / "t.png").read_text(encoding="utf-8") == text
    assert (tmp_path / "t-2.png").read_text(encoding="utf-8") == text


def test_a_picture_whose_name_is_a_directory_stops_every_picture_before_any_is_drawn(tmp_path):
    """-n 1-2 -o e.png with a directory e-2.png: e-1.png was drawn, then the error."""
    record = alignment_record(1, ["a", "b"], ["x"], [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], -1.0)
    text = header() + "\n" + json.dumps(record) + "\n" + json.dumps(record | {"line": 2}) + "\n"
    (tmp_path / "t.align").write_text(text, encoding="utf-8")
    (tmp_path / "e-2.png").mkdir()
    done = CliRunner().invoke(
        main, ["align-plot", str(tmp_path / "t.align"), "-n", "1-2", "-o", str(tmp_path / "e.png")]
    )
    assert done.exit_code == 2 and "e-2.png is a directory" in done.output, done.output
    assert not (tmp_path / "e-1.png").exists()
