"""Text → binary → text round trip through the library calls preprocess uses."""

import io
import json

import numpy as np
import pytest
from rich.console import Console

from nmtkit.core.errors import FormatError, UserError
from nmtkit.data.batching import Batches
from nmtkit.data.binarize import binarize_corpus
from nmtkit.data.binarized import Corpus, best_dtype
from nmtkit.data.build_vocab import build_vocab
from nmtkit.data.manifest import read_manifest, read_vocab_meta
from nmtkit.data.settings import VocabConfig
from nmtkit.data.summary import corpus_summary
from nmtkit.data.vocab import UNK
from nmtkit.text.clean import PRESETS
from nmtkit.text.preprocess import PairFilter, preprocess_corpus
from nmtkit.text.settings import FilterConfig, TextConfig
from tests.conftest import EN, FR

TEXTS = (TextConfig("en", clean=PRESETS["bible"]), TextConfig("fr", clean=PRESETS["bible"]))


def make_corpus(raw, tmp_path, vocab_cfg=VocabConfig(), filters=FilterConfig()):  # noqa: B008 (frozen)
    clean, vocab, bin_ = tmp_path / "clean", tmp_path / "vocab", tmp_path / "bin"
    splits = {s: raw / s for s in ("train", "valid", "test")}
    report = preprocess_corpus(splits, clean, TEXTS, filters)
    build_vocab(clean / "train", ("en", "fr"), vocab, vocab_cfg)
    manifest = binarize_corpus({s: clean / s for s in splits}, ("en", "fr"), vocab, bin_)
    return report, manifest, Corpus(bin_)


def test_preprocess_report_filters_train_only(raw, tmp_path, capfd):
    report, _, _ = make_corpus(raw, tmp_path)
    assert "warning: test: 1 pair with an empty side, kept" in capfd.readouterr().err
    train = report["splits"]["train"]
    assert train["lines"] == 8
    assert train["dropped"]["empty"] == 1  # "Amen." vs "[]"
    assert train["dropped"]["duplicate"] == 1  # the repeated light verse
    assert train["pairs"] == 6
    assert train["rules"]["fr"] == {"brackets": 1, "hash": 1, "quotes": 1, "verse-markers": 1}
    assert report["splits"]["test"]["pairs"] == 4 and report["splits"]["test"]["kept_empty"] == 1
    assert (tmp_path / "clean" / "train.lines").read_text().split() == ["1", "2", "3", "4", "5", "6"]


def test_round_trip_text_binary_text(raw, tmp_path):
    _, manifest, corpus = make_corpus(raw, tmp_path)
    for split in ("train", "valid", "test"):
        src, tgt = corpus.split(split)
        for lang, arr in (("en", src), ("fr", tgt)):
            vocab = corpus.vocab(lang)
            text = (tmp_path / "clean" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            assert len(arr) == len(text) == manifest.splits[split].sentences
            assert [" ".join(vocab.decode(arr[i])) for i in range(len(arr))] == text
    assert isinstance(src.ids, np.memmap) and src.ids.dtype == np.uint8
    assert corpus.lines("train").tolist() == [1, 2, 3, 4, 5, 6]
    src = corpus.split("train")[0]
    assert np.array_equal(src[-1], src[len(src) - 1]) and len(src[-1])  # was an empty array
    with pytest.raises(IndexError):
        src[len(src)]
    with pytest.raises(UserError, match="has no 'de' side, only en, fr"):  # was a KeyError
        corpus.vocab("de")
    for read in (corpus.split, corpus.lines, corpus.fingerprint):  # numpy's FileNotFoundError, a KeyError
        with pytest.raises(UserError, match="no split 'dev' \\(has: "):
            read("dev")
    assert manifest.splits["train"].oov_rate == {"en": 0.0, "fr": 0.0}


def test_round_trip_with_bpe_and_oov_counted(raw, tmp_path):
    _, manifest, corpus = make_corpus(raw, tmp_path, VocabConfig(size=30, bpe_merges=30))
    assert manifest.bpe_codes == {"en": "bpe.codes", "fr": "bpe.codes"}
    assert (corpus.path / "bpe.codes").exists()
    src, _ = corpus.split("train")
    assert manifest.splits["train"].unk["en"] == int(sum((src[i] == 1).sum() for i in range(len(src))))
    assert manifest.splits["train"].unk["en"] > 0
    text = _rendered(corpus_summary(manifest))
    assert "subword codes: bpe.codes\n" in text, "joint codes: one file, named once"


def _rendered(renderable, width=200):
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_the_summary_shows_a_table_only_where_it_has_a_row(raw, tmp_path):
    _, manifest, _ = make_corpus(raw, tmp_path)
    text = _rendered(corpus_summary(manifest))
    assert "cleaning rules" in text and "dropped pairs" in text
    assert "pairs with an empty side, kept: test 1 (only train's are filtered)" in text
    for split in manifest.splits.values():
        split.dropped, split.rules, split.kept_empty = {}, {}, None
    text = _rendered(corpus_summary(manifest))
    assert "corpus en→fr" in text and "cleaning rules" not in text and "dropped pairs" not in text
    assert "empty side" not in text


def test_the_pairs_training_would_leave_out_are_said_when_the_corpus_is_made(tmp_path):
    """preprocess's --max-len counts words and train's subword units: the pairs the second leaves
    out were named only when training started."""
    from click.testing import CliRunner

    from nmtkit.cli import main
    from nmtkit.data.batching import Batches
    from tests.conftest import write_pair

    long_en, long_fr = " ".join(EN) + " " + EN[0], " ".join(FR) + " " + FR[0]  # over 50 words a side
    write_pair(tmp_path / "raw" / "train", [*EN, long_en], [*FR, long_fr])
    runner = CliRunner()
    langs = ["-s", "en", "-t", "fr"]
    for args in (
        ["preprocess", *langs, "--train", tmp_path / "raw" / "train", "-d", tmp_path / "clean", "--max-len", 400],
        ["build-vocab", *langs, "--train", tmp_path / "clean" / "train", "-d", tmp_path / "vocab"],
        [
            "preprocess",
            *langs,
            "--train",
            tmp_path / "clean" / "train",
            "--vocab",
            tmp_path / "vocab",
            "-d",
            tmp_path / "bin",
        ],
    ):
        done = runner.invoke(main, [str(a) for a in args])
        assert done.exit_code == 0, done.output
    src, tgt = Corpus(tmp_path / "bin").split("train")
    assert Batches(src.sizes, tgt.sizes).too_long == 1  # what training leaves out, at its default --max-len
    said = f"train: 1 of {len(src.sizes):,} pairs have more than 50 tokens on a side, which train's --max-len 50"
    assert said in done.stderr, done.stderr
    from nmtkit.data.binarize import over_length

    assert over_length(tmp_path / "bin", int(max(src.sizes.max(), tgt.sizes.max()))) is None


def test_best_dtype():
    assert best_dtype(256) == np.uint8 and best_dtype(257) == np.uint16
    assert best_dtype(30000) == np.uint16 and best_dtype(70000) == np.uint32


def test_truncated_index_is_refused(raw, tmp_path):
    _, _, corpus = make_corpus(raw, tmp_path)
    idx = corpus.path / "train.en.idx"
    idx.write_bytes(idx.read_bytes()[:-8])
    with pytest.raises(FormatError, match="expected 7 offsets"):
        corpus.split("train")


def test_an_index_that_does_not_rise_and_an_id_past_the_vocabulary_are_refused(raw, tmp_path):
    """Both were read as they were: a split of one sentence fewer, or an IndexError in training."""
    _, _, corpus = make_corpus(raw, tmp_path)
    idx = corpus.path / "valid.fr.idx"
    good = np.fromfile(idx, dtype=np.int64)
    damaged = good.copy()
    damaged[1], damaged[2] = damaged[2], damaged[1]  # the same size, the same last offset
    damaged.tofile(idx)
    with pytest.raises(FormatError, match="valid.fr.idx: its offsets do not rise from 0"):
        Corpus(corpus.path).split("valid")
    garbage = np.random.default_rng(0).integers(-(2**62), 2**62, len(good))  # its last offset a number of no .bin
    garbage.tofile(idx)
    with pytest.raises(FormatError, match="valid.fr.idx: its offsets do not rise from 0"):  # not the .bin's size
        Corpus(corpus.path).split("valid")
    good.tofile(idx)
    bin_path = corpus.path / "train.en.bin"
    ids = np.fromfile(bin_path, dtype=corpus.dtype)
    ids[3] = corpus.manifest.vocab["en"].size
    ids.tofile(bin_path)
    size = corpus.manifest.vocab["en"].size
    with pytest.raises(FormatError, match=f"train.en.bin: holds id {size}, where its vocabulary has {size}"):
        Corpus(corpus.path).check()


def test_a_manifest_field_of_the_wrong_type_is_refused_by_name(raw, tmp_path):
    _, _, corpus = make_corpus(raw, tmp_path)
    path = corpus.path / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["splits"]["train"]["sentences"] = "many"
    path.write_text(json.dumps(manifest))
    with pytest.raises(FormatError, match="field 'sentences' is 'many', not a whole number"):
        Corpus(corpus.path)
    manifest["splits"]["train"]["sentences"] = 7
    for dtype in ("foo", "float32"):
        path.write_text(json.dumps({**manifest, "dtype": dtype}))
        with pytest.raises(FormatError, match=f"dtype '{dtype}' is no dtype of ids"):
            Corpus(corpus.path)


def test_corpus_refuses_other_vocabulary(raw, tmp_path):
    _, _, corpus = make_corpus(raw, tmp_path)
    corpus.check_vocab({"en": corpus.manifest.vocab["en"].sha256}, "the model")
    with pytest.raises(UserError, match="the en vocabulary .* is not the one the model uses"):
        corpus.check_vocab({"en": "0" * 64}, "the model")


def test_binarizing_into_a_corpus_of_another_vocabulary_is_refused(raw, tmp_path):
    make_corpus(raw, tmp_path)
    other = tmp_path / "vocab2"
    build_vocab(tmp_path / "clean" / "train", ("en", "fr"), other, VocabConfig(size=10))
    before = sorted(p.name for p in (tmp_path / "bin").iterdir())
    with pytest.raises(
        UserError, match=r"another vocabulary .* holds splits this run does not give \(--train, --valid\)"
    ):
        binarize_corpus({"test": tmp_path / "clean" / "test"}, ("en", "fr"), other, tmp_path / "bin")
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == before


def test_a_corpus_binarized_again_whole_with_another_vocabulary_replaces_it(raw, tmp_path, capfd):
    """A Makefile's rebuild after the training text changed (and so the vocabulary): preprocess
    refused to write over the corpus it had made, and no flag let it."""
    make_corpus(raw, tmp_path)
    (tmp_path / "bin" / "mine.txt").write_text("the user's")
    other = tmp_path / "vocab2"
    build_vocab(tmp_path / "clean" / "train", ("en", "fr"), other, VocabConfig(size=10, bpe_merges=20))
    splits = {s: tmp_path / "clean" / s for s in ("train", "valid")}
    with pytest.raises(UserError, match=r"holds splits this run does not give \(--test\)"):
        binarize_corpus(splits, ("en", "fr"), other, tmp_path / "bin")
    capfd.readouterr()
    binarize_corpus({**splits, "test": tmp_path / "clean" / "test"}, ("en", "fr"), other, tmp_path / "bin")
    assert "replaced by this one (every split given)" in capfd.readouterr().err
    corpus = Corpus(tmp_path / "bin")
    corpus.check()
    assert corpus.manifest.vocab["en"].size == len(corpus.vocab("en")) and corpus.manifest.bpe_codes["en"]
    names = sorted(p.name for p in (tmp_path / "bin").iterdir())
    assert "mine.txt" in names and all(
        n.startswith(("train.", "valid.", "test.", "vocab.", "manifest", "mine", "bpe")) for n in names
    )


def test_text_made_with_other_settings_is_refused(raw, tmp_path):
    make_corpus(raw, tmp_path)
    preprocess_corpus(
        {"test": raw / "test"},
        tmp_path / "lower",
        (TextConfig("en", lowercase=True), TextConfig("fr", lowercase=True)),
        FilterConfig(),
    )
    with pytest.raises(UserError, match="other settings .*lowercase: True vs False"):
        binarize_corpus({"test": tmp_path / "lower" / "test"}, ("en", "fr"), tmp_path / "vocab", tmp_path / "bin2")
    assert not (tmp_path / "bin2" / "manifest.json").exists()


@pytest.mark.parametrize(
    "src, tgt, reason",
    [
        ("a b c", "", "empty"),
        ("a " * 6, "b", "too-long"),
        ("a b c", "x", "ratio"),
        ("a b", "x y", None),
    ],
)
def test_pair_filter(src, tgt, reason):
    f = PairFilter(FilterConfig(max_len=5, max_ratio=2.0))
    assert f.reason(src.strip(), tgt) == reason


def test_manifest_is_self_describing(raw, tmp_path):
    _, manifest, _ = make_corpus(raw, tmp_path)
    on_disk = json.loads((tmp_path / "bin" / "manifest.json").read_text())
    assert on_disk == manifest.to_dict() and on_disk["format"] == "nmtkit-corpus" and on_disk["version"] == 1
    assert read_manifest(tmp_path / "bin") == manifest
    assert set(manifest.settings["text"]) == {"en", "fr"}
    assert manifest.splits["train"].dropped["duplicate"] == 1
    assert len(manifest.settings_sha256) == 64


def test_joint_bpe_round_trip_from_raw_text_to_raw_text(raw, tmp_path):
    """What translate does to a line and its output: the subwords lose nothing and need no <unk>."""
    from nmtkit.text.pipeline import Preprocessor

    _, manifest, corpus = make_corpus(raw, tmp_path, VocabConfig(bpe_merges=40, joint_bpe=True))
    codes = (corpus.path / manifest.bpe_codes["fr"]).read_text(encoding="utf-8")
    assert manifest.bpe_codes["en"] == manifest.bpe_codes["fr"]  # one joint model
    kept = [int(n) - 1 for n in (tmp_path / "clean" / "train.lines").read_text().split()]  # BPE saw these
    same = 0
    for lang, lines in (("en", [EN[i] for i in kept]), ("fr", [FR[i] for i in kept])):
        cfg = TextConfig(lang, clean=PRESETS["bible"])
        subwords, words, vocab = Preprocessor(cfg, bpe_codes=codes), Preprocessor(cfg), corpus.vocab(lang)
        for line in lines:
            tokens = subwords.encode(line)
            ids = vocab.encode(tokens)
            assert UNK not in ids and len(tokens) >= len(words.encode(line))
            back = subwords.decode(vocab.decode(ids))
            assert back == words.decode(words.encode(line))
            same += back == line
    assert any(t.endswith("@@") for t in Preprocessor(TextConfig("fr"), bpe_codes=codes).encode(FR[1]))
    assert same >= 8  # raw → raw, character for character


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update(format="something-else"), "not an nmtkit corpus manifest"),
        (lambda m: m.update(version=7), "format version 7 is not supported"),
        (lambda m: m.pop("dtype"), "missing field 'dtype'"),
        (lambda m: m["splits"]["train"].pop("sentences"), "missing field 'sentences'"),
        (lambda m: m.update(vocab=[]), "entries are not an object"),
    ],
)
def test_a_bad_or_older_manifest_is_refused_in_one_line(raw, tmp_path, change, message):
    make_corpus(raw, tmp_path)
    path = tmp_path / "bin" / "manifest.json"
    on_disk = json.loads(path.read_text())
    change(on_disk)
    path.write_text(json.dumps(on_disk))
    with pytest.raises(FormatError, match=message):
        Corpus(tmp_path / "bin")


def test_vocab_meta_is_typed_and_versioned_and_reads_files_without_a_format(raw, tmp_path):
    make_corpus(raw, tmp_path)
    path = tmp_path / "vocab" / "vocab.json"
    on_disk = json.loads(path.read_text())
    assert on_disk["format"] == "nmtkit-vocab" and on_disk["version"] == 1
    meta = read_vocab_meta(tmp_path / "vocab")
    assert meta.langs == ["en", "fr"] and meta.text_config("fr").lang == "fr"
    del on_disk["format"], on_disk["version"]  # as build-vocab wrote it before
    path.write_text(json.dumps(on_disk))
    assert read_vocab_meta(tmp_path / "vocab") == meta
    path.write_text(json.dumps({**on_disk, "format": "nmtkit-vocab", "version": 2}))
    with pytest.raises(FormatError, match="format version 2"):
        read_vocab_meta(tmp_path / "vocab")


def test_a_vocabulary_of_one_language_on_both_sides_is_refused_as_preprocess_refuses_it(raw, tmp_path):
    make_corpus(raw, tmp_path)
    with pytest.raises(UserError, match="source and target language are both 'en'"):
        build_vocab(tmp_path / "clean" / "train", ("en", "en"), tmp_path / "v2", VocabConfig())
    assert not (tmp_path / "v2").exists()
    with pytest.raises(UserError, match="nonexist.en: no such file"):  # not "preprocess.json: missing"
        build_vocab(tmp_path / "nonexist", ("en", "fr"), tmp_path / "v2", VocabConfig())


def test_a_references_bom_and_crlf_stay_out_of_the_data_bin(raw, tmp_path):
    """The .ref files were copied byte for byte: sacreBLEU run on one counted the BOM into its first word."""
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean" / "valid.fr"
    lines = clean.read_text(encoding="utf-8").splitlines()
    clean.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8"))  # no newline at the end either
    binarize_corpus(
        {s: tmp_path / "clean" / s for s in ("train", "valid")}, ("en", "fr"), tmp_path / "vocab", tmp_path / "bin2"
    )
    assert (tmp_path / "bin2" / "valid.fr.ref").read_bytes() == "".join(f"{line}\n" for line in lines).encode("utf-8")


@pytest.mark.parametrize(("world", "update_freq"), [(2, 1), (1, 7), (2, 3)])
def test_a_minibatch_too_small_for_its_pieces_is_joined_to_a_neighbour_not_left_out(world, update_freq):
    """A minibatch of fewer sentences than processes × --update-freq was dropped from the epoch
    without a word: the 120th pair of a corpus never trained."""
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 30, 121), rng.integers(1, 30, 121)
    plan = Batches(src, tgt, batch_size=7 // update_freq or 1, pool=100, world=world, update_freq=update_freq)
    batches = plan.epoch_batches(0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(121))  # every pair, once
    assert min(len(b) for b in batches) >= world * update_freq


def test_clean_text_written_again_in_another_language_pair_leaves_none_of_the_other(raw, tmp_path):
    """en–fr, then en–de into the same directory: train.fr stayed beside a report without fr, and
    build-vocab -s en -t fr read it, whose corpus then failed in train with a KeyError."""
    import shutil

    clean = tmp_path / "clean"
    preprocess_corpus({"train": raw / "train"}, clean, TEXTS, FilterConfig())
    shutil.copy(raw / "train.fr", raw / "train.de")
    preprocess_corpus({"train": raw / "train"}, clean, (TextConfig("en"), TextConfig("de")), FilterConfig())
    assert sorted(p.name for p in clean.glob("train.*")) == ["train.de", "train.en", "train.lines"]
    shutil.copy(clean / "train.de", clean / "train.fr")  # as an older nmtkit left it
    with pytest.raises(UserError, match=r"preprocess.json: records no fr text \(it holds en, de\)"):
        build_vocab(clean / "train", ("en", "fr"), tmp_path / "vocab", VocabConfig())


def test_a_corpus_replaced_by_another_vocabulary_is_said_replaced_only_once_its_inputs_are_checked(
    raw, tmp_path, capfd
):
    """The line that said it replaced came before a refusal of its inputs: two lines for one error,
    the first untrue."""
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean"
    build_vocab(clean / "train", ("en", "fr"), tmp_path / "v2", VocabConfig(size=9))
    capfd.readouterr()
    splits = {"train": clean / "train", "valid": clean / "valid", "test": clean / "absent"}
    with pytest.raises(UserError, match="absent"):
        binarize_corpus(splits, ("en", "fr"), tmp_path / "v2", tmp_path / "bin")
    assert "replaced" not in capfd.readouterr().err
    binarize_corpus({**splits, "test": clean / "test"}, ("en", "fr"), tmp_path / "v2", tmp_path / "bin")
    assert "replaced by this one" in capfd.readouterr().err
    assert Corpus(tmp_path / "bin").manifest.vocab["en"].size <= 9


def test_a_narrow_terminal_folds_the_summary_s_numbers_never_cuts_them(raw, tmp_path):
    """COLUMNS=70: info's summary read 241,0… and 7,493,8…; a codes file named 'c[/b]' was markup."""
    _, manifest, _ = make_corpus(raw, tmp_path)
    manifest.splits["train"].sentences = 241_090_123
    manifest.bpe_codes = {"en": "c[/b]odes", "fr": "c[/b]odes"}
    text = _rendered(corpus_summary(manifest), width=40)
    assert "…" not in text and "subword codes: c[/b]odes" in text
    assert max(map(len, text.splitlines())) <= 40 and "241,090,123" in _rendered(corpus_summary(manifest))
