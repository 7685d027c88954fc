"""SentencePiece subwords: learned by build-vocab, carried like BPE codes, undone on the way out."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from nmtkit.align.links import word_ids
from nmtkit.cli import main
from nmtkit.data.sides import Sides
from nmtkit.text.bpe import merge_subwords
from tests.conftest import EN, FR

pytest.importorskip("sentencepiece", reason="SentencePiece subwords need the sentencepiece package")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_raw_to_ids_to_raw_through_a_sentencepiece_vocabulary(raw, tmp_path, kind):
    assert (
        invoke(
            "preprocess", "-s", "en", "-t", "fr", "--train", raw / "train", "-d", tmp_path / "clean", "-j", 1
        ).exit_code
        == 0
    )
    r = invoke(
        "build-vocab",
        "-s",
        "en",
        "-t",
        "fr",
        "--train",
        tmp_path / "clean" / "train",
        "-d",
        tmp_path / "vocab",
        "--spm",
        kind,
        "--spm-size",
        60,
    )
    assert r.exit_code == 0 and "become <unk>" not in r.output, r.output
    assert (tmp_path / "vocab" / "spm.codes").read_text().startswith("#nmtkit-sentencepiece " + kind)
    cut = ["--spm", kind, "--spm-size", 60, "--size", 30, "-d", tmp_path / "cut"]
    r = invoke("build-vocab", "-s", "en", "-t", "fr", "--train", tmp_path / "clean" / "train", *cut)
    assert r.exit_code == 0 and re.search(r"warning: --size 30 keeps 26 of the \d+ en subword units", r.output)
    sides = Sides.from_vocab_dir(tmp_path / "vocab")
    for side, lines in ((sides.src, EN[:5]), (sides.tgt, FR[:5])):
        for line in lines:
            pieces = side.tokens(line)
            assert len(pieces) > len(line.split()) and any(p.startswith("\u2581") for p in pieces)
            ids = side.ids(pieces)
            assert 1 not in ids  # no <unk>: the pieces cover the text
            back = side.text.decode(side.vocab.decode(ids))
            assert re.sub(r" ([:;!?])", r"\1", back) == line  # French typography aside
    assert merge_subwords(["\u2581Éter", "nel", "\u2581dit"]) == ["Éternel", "dit"]
    assert word_ids(["\u2581Éter", "nel", "\u2581dit"]).tolist() == [0, 0, 1]


def test_a_model_trained_on_sentencepiece_translates_raw_text(raw, tmp_path):
    for cmd in (
        [
            "preprocess",
            "-s",
            "en",
            "-t",
            "fr",
            "--train",
            raw / "train",
            "--valid",
            raw / "valid",
            "-d",
            tmp_path / "clean",
            "-j",
            1,
        ],
        [
            "build-vocab",
            "-s",
            "en",
            "-t",
            "fr",
            "--train",
            tmp_path / "clean" / "train",
            "-d",
            tmp_path / "vocab",
            "--spm",
            "unigram",
            "--spm-size",
            60,
        ],
        [
            "preprocess",
            "-s",
            "en",
            "-t",
            "fr",
            "--train",
            tmp_path / "clean" / "train",
            "--valid",
            tmp_path / "clean" / "valid",
            "--vocab",
            tmp_path / "vocab",
            "-d",
            tmp_path / "bin",
            "-j",
            1,
            "-q",
        ],
        [
            "train",
            tmp_path / "bin",
            "--save-dir",
            tmp_path / "run",
            "--preset",
            "tiny",
            "--max-updates",
            2,
            "--batch-size",
            2,
            "--threads",
            1,
        ],
    ):
        r = invoke(*cmd)
        assert r.exit_code == 0, (cmd[0], r.output)
    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", tmp_path / "run" / "last.pt", tmp_path / "in.en", "--beam", 2)
    assert r.exit_code == 0, r.output
    assert len(r.stdout.splitlines()) == 1 and "\u2581" not in r.stdout


def test_a_signal_while_sentencepiece_reads_the_text_ends_as_the_signal_does():
    """SentencePiece wraps what its sentence iterator raised in a RuntimeError, which was taken
    for its refusal of the settings: Ctrl-C or SIGTERM there said '--spm-size 60: SentencePiece
    refuses it' and exited 2."""
    from nmtkit.text.bpe import learn_sentencepiece

    def stopped():
        yield from ["a b c", "d e f"] * 50
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        learn_sentencepiece(stopped(), 60, "unigram")
