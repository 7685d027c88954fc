"""A corpus with its sides swapped (nmtkit.data.reverse): the other direction's source is this
one's target, token for token, and its word links are the forward links transposed."""

import numpy as np
import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.core.errors import UserError
from nmtkit.data.binarize import binarize_corpus
from nmtkit.data.binarized import Corpus
from nmtkit.data.reverse import reverse_corpus
from tests.test_corpus import make_corpus


def skewed_links(clean, split="train"):
    """Links i-(i+1) where both words exist, and 0-0: no pair of them is its own transpose."""
    src = (clean / f"{split}.en").read_text(encoding="utf-8").splitlines()
    tgt = (clean / f"{split}.fr").read_text(encoding="utf-8").splitlines()
    lines = []
    for s, t in zip(src, tgt):
        n, m = len(s.split()), len(t.split())
        lines.append(" ".join(["0-0"] + [f"{i}-{i + 1}" for i in range(1, min(n, m - 1))]))
    (clean / f"{split}.links").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_a_reversed_corpus_swaps_the_sides_and_transposes_the_links(raw, tmp_path):
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean"
    skewed_links(clean)
    splits = {s: clean / s for s in ("train", "valid")}
    binarize_corpus(splits, ("en", "fr"), tmp_path / "vocab", tmp_path / "fwd", align_suffix="links")
    forward = Corpus(tmp_path / "fwd")
    backward = reverse_corpus(tmp_path / "fwd", tmp_path / "bwd")
    assert (backward.src_lang, backward.tgt_lang) == ("fr", "en")
    assert backward.vocab("fr").tokens == forward.vocab("fr").tokens
    for split in ("train", "valid"):
        (f_src, f_tgt), (b_src, b_tgt) = forward.split(split), backward.split(split)
        assert len(b_src) == len(f_tgt) and all((b_src[i] == f_tgt[i]).all() for i in range(len(f_tgt)))
        assert all((b_tgt[i] == f_src[i]).all() for i in range(len(f_src)))
    # the old source's clean text is the new reference (dev BLEU of the reversed model), and back
    assert backward.references("valid") == forward.source_references("valid")
    assert backward.references("valid") == (clean / "valid.en").read_text(encoding="utf-8").splitlines()
    assert backward.source_references("valid") == forward.references("valid") != backward.references("valid")
    assert backward.references("train") is None
    ahead, back = forward.links("train"), backward.links("train")
    assert len(ahead) == len(back) > 0
    skew = 0
    for i in range(len(ahead)):
        pairs, reversed_pairs = ahead[i].reshape(-1, 2), back[i].reshape(-1, 2)
        np.testing.assert_array_equal(reversed_pairs, pairs[:, ::-1])
        skew += int((pairs[:, 0] != pairs[:, 1]).sum())
        src, tgt = backward.split("train")
        assert (reversed_pairs[:, 0] < len(src[i])).all() and (reversed_pairs[:, 1] < len(tgt[i])).all()
    assert skew > 0  # the links are not their own transpose, so the test could fail
    assert backward.links("valid") is None
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine\n")
    with pytest.raises(UserError, match="not empty"):
        reverse_corpus(tmp_path / "fwd", tmp_path / "other")


def test_the_reverse_command_writes_the_corpus_whole_or_not_at_all(raw, tmp_path):
    make_corpus(raw, tmp_path)
    splits = {s: tmp_path / "clean" / s for s in ("train", "valid")}
    binarize_corpus(splits, ("en", "fr"), tmp_path / "vocab", tmp_path / "fwd")

    def reverse(data_bin, out):
        return CliRunner().invoke(main, ["reverse", str(data_bin), str(out)])

    r = reverse(tmp_path / "fwd", tmp_path / "bwd")
    assert r.exit_code == 0, r.output
    assert Corpus(tmp_path / "bwd").src_lang == "fr"
    # run again (a Makefile's, its corpus made anew with a split less): its own output replaced, whole
    binarize_corpus({"train": splits["train"]}, ("en", "fr"), tmp_path / "vocab", tmp_path / "fwd2")
    r = reverse(tmp_path / "fwd2", tmp_path / "bwd")
    assert r.exit_code == 0 and "the reversed corpus written before is replaced" in r.output, r.output
    assert Corpus(tmp_path / "bwd").splits == ["train"] and not list((tmp_path / "bwd").glob("valid.*"))
    binarize_corpus({"train": splits["train"]}, ("fr", "en"), tmp_path / "vocab", tmp_path / "own")
    r = reverse(tmp_path / "fwd", tmp_path / "own")  # binarized fr-en, not reversed: the user's own, kept
    assert r.exit_code == 2 and "not empty" in r.output and Corpus(tmp_path / "own").splits == ["train"], r.output
    r = reverse(tmp_path / "fwd", tmp_path / "fwd2")  # a corpus of this direction is no earlier reverse
    assert r.exit_code == 2 and "not empty" in r.output and Corpus(tmp_path / "fwd2").src_lang == "en", r.output
    for r in (reverse(tmp_path / "none", tmp_path / "out"),):
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output  # no corpus
    assert not (tmp_path / "out").exists()
    r = reverse(tmp_path / "fwd", tmp_path / "fwd" / "bwd")  # nested in its own input, exit 0
    assert r.exit_code == 2 and "inside" in r.output and not (tmp_path / "fwd" / "bwd").exists(), r.output
    assert [p.name for p in tmp_path.iterdir() if ".staging-" in p.name] == []


@pytest.mark.parametrize("damage", ["missing-split-file", "truncated-index", "cut-vocabulary"])
def test_a_damaged_corpus_is_refused_by_reverse_and_info_before_anything_is_written(raw, tmp_path, damage):
    """reverse copied a corpus with a cut index or vocabulary as it was, and met a missing file with
    a traceback; info described them as whole."""
    make_corpus(raw, tmp_path)
    splits = {s: tmp_path / "clean" / s for s in ("train", "valid")}
    binarize_corpus(splits, ("en", "fr"), tmp_path / "vocab", tmp_path / "fwd")
    fwd = tmp_path / "fwd"
    if damage == "missing-split-file":
        (fwd / "valid.en.bin").unlink()
    elif damage == "truncated-index":
        (fwd / "train.en.idx").write_bytes((fwd / "train.en.idx").read_bytes()[:-4])
    else:
        vocab = next(fwd.glob("vocab.fr*"))
        vocab.write_bytes(vocab.read_bytes()[: vocab.stat().st_size // 2])
    for args in (["reverse", str(fwd), str(tmp_path / "out")], ["info", str(fwd)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert "Traceback" not in r.output and str(fwd) in r.output, r.output
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if ".staging-" in p.name] == []


def test_a_corpus_reversed_from_one_without_source_text_counts_dev_bleu_on_ids_and_says_so_once(raw, tmp_path, capsys):
    from nmtkit.data.manifest import read_manifest, write_manifest
    from nmtkit.train.validate import dev_bleu

    make_corpus(raw, tmp_path)
    splits = {s: tmp_path / "clean" / s for s in ("train", "valid")}
    binarize_corpus(splits, ("en", "fr"), tmp_path / "vocab", tmp_path / "old")
    old = read_manifest(tmp_path / "old")  # as preprocess wrote it before it kept the source's text
    old.splits["valid"].source_reference = None
    write_manifest(tmp_path / "old" / "manifest.json", old)
    backward = reverse_corpus(tmp_path / "old", tmp_path / "bwd")
    assert backward.references("valid") is None
    capsys.readouterr()
    _, tgt = backward.split("valid")
    outputs = {k: [int(t) for t in tgt[k]] for k in range(len(tgt))}  # the references' own ids
    tokens = backward.vocab("en").tokens
    assert [dev_bleu(backward, "valid", outputs, tokens) for _ in range(2)] == [pytest.approx(100)] * 2
    assert capsys.readouterr().err.count("no reference text for 'valid'") == 1
