"""The shortlist vocabulary: fixed specials, frequency order, file format, fingerprint."""

from collections import Counter

import pytest

from nmtkit.core.errors import FormatError
from nmtkit.data.vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocab


def test_specials_fixed_then_by_count_then_alphabetical():
    v = Vocab.from_counts(Counter({"b": 3, "a": 3, "c": 5, "d": 1, "<unk>": 9}), size=7)
    assert v.tokens == list(SPECIALS) + ["c", "a", "b"]
    assert (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert v.encode(["c", "d", "zzz"]) == [4, UNK, UNK]
    assert v.decode([4, 5]) == ["c", "a"]


def test_min_count_and_unlimited_size():
    v = Vocab.from_counts(Counter({"a": 2, "b": 1}), size=0, min_count=2)
    assert v.tokens[4:] == ["a"]


def test_save_load_round_trip_and_fingerprint(tmp_path):
    v = Vocab.from_counts(Counter({"été": 2, "l'": 4}), size=0)
    v.save(tmp_path / "v.txt")
    assert (tmp_path / "v.txt").read_text(encoding="utf-8").splitlines()[:5] == [
        "<pad> 0",
        "<unk> 0",
        "<s> 0",
        "</s> 0",
        "l' 4",
    ]
    w = Vocab.load(tmp_path / "v.txt")
    assert w.tokens == v.tokens and w.counts == v.counts and w.fingerprint == v.fingerprint
    assert Vocab.from_counts(Counter({"été": 2, "x": 4}), size=0).fingerprint != v.fingerprint


@pytest.mark.parametrize(
    "content, match",
    [
        ("a 1\n", "must start with"),
        ("<pad> 0\n<unk> 0\n<s> 0\n</s> 0\nx y z\n", "line 5 is not 'token count'"),
        ("<pad> 0\n<unk> 0\n<s> 0\n</s> 0\nx 1\nx 1\n", "twice"),
    ],
)
def test_bad_vocabulary_files(tmp_path, content, match):
    (tmp_path / "v.txt").write_text(content)
    with pytest.raises(FormatError, match=match):
        Vocab.load(tmp_path / "v.txt")


def test_the_symbols_typed_in_text_are_unknown_words_not_sentence_ends():
    """`--tokenized` text holding "</s>" or "<pad>" got their ids: a rescored "<pad> le" scored
    better with each <pad>, a source "</s> the cat" ended there."""
    v = Vocab.from_counts(Counter({"le": 2}), 0)
    assert v.encode(["<pad>", "<s>", "</s>", "<unk>", "le", "zz"]) == [UNK, UNK, UNK, UNK, 4, UNK]
    assert v.decode([PAD, BOS, EOS]) == ["<pad>", "<s>", "</s>"]  # the model's own symbols, written back


def test_a_typed_unknown_word_is_one_unit_wherever_text_is_segmented(tmp_path):
    """translate kept '<unk>' whole, a data-bin (preprocess --vocab) cut it into BPE pieces; a
    codes file behind a byte order mark read its '#version' line as a merge."""
    from nmtkit.text.bpe import Segmenter, learn_codes, read_codes

    codes = learn_codes(Counter({"lower": 9, "newest": 6, "unknown": 5, "<unk>": 1}), 30)
    seg = Segmenter(codes)
    assert "<unk>" in seg.segment(["unknown", "<unk>", "lower"]) and "<unk>" not in seg.segment(["<un", "k>"])
    (tmp_path / "bom.codes").write_text("\ufeff" + codes, encoding="utf-8")
    assert read_codes(tmp_path / "bom.codes") == codes
