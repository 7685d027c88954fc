"""Data selection: the n-gram LMs, their hash tables, and bilingual Moore–Lewis over a stream."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.selection.hashindex import HashIndex
from nmtkit.selection.moore_lewis import Corpus, SelectConfig, select
from nmtkit.selection.ngram import BOS, EOS, NgramLM, SelectionVocab, words_of

from .synthetic import pairs, write

TEXT = "\n".join(e for e, _ in pairs(400, "animals", 3) + pairs(100, "finance", 4))


def _lm(order: int) -> tuple[SelectionVocab, NgramLM]:
    vocab = SelectionVocab.from_counts(Counter(w for line in words_of(TEXT) for w in line), min_count=1)
    return vocab, NgramLM.estimate([vocab.encode(TEXT)[0]], len(vocab), order)


def test_hash_index_finds_every_key_and_no_other():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 2**63, 5000, dtype=np.uint64))
    index = HashIndex.build(keys)
    slots = index.find(keys)
    assert (slots >= 0).all() and (index.table[slots] == keys).all()
    assert (index.slot_values(np.arange(keys.size))[slots] == np.arange(keys.size)).all()
    absent = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    absent = absent[~np.isin(absent, keys)]
    assert (index.find(absent) == -1).all()


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kneser_ney_distributions_sum_to_one(order):
    vocab, lm = _lm(order)
    words = [w for w in range(len(vocab)) if w != BOS]
    for history in ["", "the", "the black", "the black cat", "la banque zebra"]:
        ctx = vocab.encode(history)[0][:-1]  # <s> history (no </s>)
        block = np.concatenate([np.concatenate([ctx, [w, EOS]]) for w in words]).astype(np.uint64)
        logp = lm.token_logprobs(block).reshape(len(words), ctx.size + 2)[:, ctx.size]
        assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-6), history


def test_language_model_prefers_its_own_domain():
    vocab, lm = _lm(4)
    seen, unrelated = vocab.encode("The small dog hears the horse.\nThe bank lends 7 euros to the zebra quickly.")
    per_token = lm.sentence_logprobs(seen) / (unrelated + 1)
    assert per_token[0] > per_token[1]


def test_saved_model_scores_the_same(tmp_path):
    vocab, lm = _lm(3)
    lm.save(tmp_path / "lm")
    seq = vocab.encode(TEXT)[0]
    np.testing.assert_allclose(NgramLM.load(tmp_path / "lm").sentence_logprobs(seq), lm.sentence_logprobs(seq))


def _corpora(tmp_path: Path, general_pairs: int) -> tuple[Path, Path]:
    ind = write(tmp_path / "in" / "news", pairs(300, "animals", 1))
    mixed = []
    animals, finance = pairs(general_pairs // 2, "animals", 2), pairs(general_pairs // 2, "finance", 5)
    for a, f in zip(animals, finance):
        mixed += [f, a]
    return ind, write(tmp_path / "gen" / "all", mixed)


def test_in_domain_pairs_outrank_unrelated_ones_and_the_target_is_met(tmp_path):
    ind, gen = _corpora(tmp_path, 400)
    langs = ("en", "fr")
    report = select(
        [Corpus.of(ind, langs)],
        [Corpus.of(gen, langs)],
        tmp_path / "sel",
        langs,
        SelectConfig(keep_words=1000, chunk_lines=64, count="selection"),
        workers=1,
    )
    scores = np.fromfile(tmp_path / "sel" / "scores.f32", dtype=np.float32)
    animal, finance = scores[1::2], scores[0::2]
    assert animal.max() < finance.min()
    kept_en = (tmp_path / "sel" / "train.en").read_text(encoding="utf-8").splitlines()
    kept_fr = (tmp_path / "sel" / "train.fr").read_text(encoding="utf-8").splitlines()
    general = list(
        zip(
            Path(f"{gen}.en").read_text(encoding="utf-8").splitlines(),
            Path(f"{gen}.fr").read_text(encoding="utf-8").splitlines(),
        )
    )
    assert len(kept_en) == len(kept_fr) == report["kept_pairs"]
    assert all("euros" not in line for line in kept_en)
    # Pairs stay pairs and keep their input order.
    rest = iter(general)
    assert all(pair in rest for pair in zip(kept_en, kept_fr))  # a subsequence of the input
    # The target is met: at least keep_words target words, and less than one more pair beyond it.
    words = sum(len(line) for line in words_of("\n".join(kept_fr)))
    assert words == report["kept_tgt_words"]
    longest = max(len(line) for line in words_of("\n".join(f for _, f in general)))
    assert 1000 <= words < 1000 + longest
    assert json.loads((tmp_path / "sel" / "select.json").read_text())["kept_pairs"] == report["kept_pairs"]


def test_kept_words_are_the_moses_tokens_preprocess_counts(tmp_path):
    """The default count is preprocess's: the kept French has as many tokens in preprocess.json as
    select.json says were kept, and fewer than the selection's own tokens ("d'euros": d' euros, not d ' euros)."""
    ind, gen = _corpora(tmp_path, 400)
    sel = tmp_path / "sel"
    base = ["-s", "en", "-t", "fr", "-q"]
    keep = ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "2500", "-d", str(sel), "-j", "1"]
    result = CliRunner().invoke(main, ["select", *base, *keep])
    assert result.exit_code == 0, result.output
    report = json.loads((sel / "select.json").read_text())
    assert report["config"]["count"] == "moses"
    kept_fr = (sel / "train.fr").read_text(encoding="utf-8")
    assert "d'euros" in kept_fr  # finance pairs were reached, so the two counts differ
    recipe = ["--no-normalize-punct", "--max-len", "0", "--max-ratio", "0", "--no-dedup"]
    text = ["preprocess", *base, "--train", str(sel / "train"), "-d", str(tmp_path / "clean"), *recipe]
    result = CliRunner().invoke(main, text)
    assert result.exit_code == 0, result.output
    tokens = json.loads((tmp_path / "clean" / "preprocess.json").read_text())["splits"]["train"]["tokens"]["fr"]
    assert tokens == report["kept_tgt_words"] >= 2500
    assert sum(len(line) for line in words_of(kept_fr.removesuffix("\n"))) > tokens
    # The same process then counting the selection's tokens counts them, not Moses tokens.
    langs = ("en", "fr")
    cfg = SelectConfig(keep_words=2500, count="selection")
    again = select([Corpus.of(ind, langs)], [Corpus.of(gen, langs)], tmp_path / "sel2", langs, cfg, workers=1)
    kept_fr = (tmp_path / "sel2" / "train.fr").read_text(encoding="utf-8")
    assert again["kept_tgt_words"] == sum(len(line) for line in words_of(kept_fr.removesuffix("\n")))


def test_the_moses_count_is_preprocess_count_on_text_that_cleaning_normalisation_or_language_would_change(tmp_path):
    """Lines whose French token count moves with punctuation normalisation (l´homme), the cleaning
    (a zero-width space) or the language (Mme.): select, keeping everything, counts what preprocess counts."""
    ind, _ = _corpora(tmp_path, 10)
    tricky = [
        ("Mrs. Curie sees the man.", "Mme. Curie voit l´homme."),
        ("A\u200bB.", "A\u200bB."),
        ("« Yes », he said.", "« Oui », dit-il."),
    ]
    gen = write(tmp_path / "gen" / "tricky", tricky * 3)
    base = ["-s", "en", "-t", "fr", "-q"]
    keep = ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1M", "-j", "1"]
    result = CliRunner().invoke(main, ["select", *base, *keep, "-d", str(tmp_path / "sel")])
    assert result.exit_code == 0, result.output
    recipe = ["--no-normalize-punct", "--max-len", "0", "--max-ratio", "0", "--no-dedup"]
    text = ["preprocess", *base, "--train", str(gen), "-d", str(tmp_path / "clean"), *recipe]
    result = CliRunner().invoke(main, text)
    assert result.exit_code == 0, result.output
    tokens = json.loads((tmp_path / "clean" / "preprocess.json").read_text())["splits"]["train"]["tokens"]["fr"]
    assert json.loads((tmp_path / "sel" / "select.json").read_text())["kept_tgt_words"] == tokens == 3 * (8 + 2 + 6)


def test_a_selection_that_would_replace_its_general_corpus_is_refused(tmp_path):
    """-d the general corpus's own directory, its name train: train.en shrank to the selection, exit 0."""
    from nmtkit.core.errors import UserError

    ind, _ = _corpora(tmp_path, 50)
    langs = ("en", "fr")
    for lang in langs:
        (tmp_path / f"train.{lang}").write_bytes(Path(f"{ind}.{lang}").read_bytes())
    before = (tmp_path / "train.en").read_bytes()
    with pytest.raises(UserError, match=f"-d {tmp_path / 'train.en'}: the same file as --general"):
        select(
            [Corpus.of(ind, langs)],
            [Corpus.of(tmp_path / "train", langs)],
            tmp_path,
            langs,
            SelectConfig(keep_words=100),
            1,
        )
    assert (tmp_path / "train.en").read_bytes() == before


@pytest.mark.parametrize("report", ["preprocess.json", "manifest.json", "vocab.json"])
def test_a_directory_of_another_command_s_outputs_is_refused(tmp_path, report):
    """-d preprocess's directory: its clean train.* became raw lines under a preprocess.json and a
    train.lines that described the old text, and build-vocab built on them."""
    from nmtkit.core.errors import UserError

    ind, gen = _corpora(tmp_path, 50)
    out = tmp_path / "clean"
    out.mkdir()
    (out / report).write_text("{}")
    (out / "train.en").write_text("clean text\n")
    with pytest.raises(UserError, match=f"{out}: holds the outputs of 'nmtkit .*' \\({report}\\)"):
        select(
            [Corpus.of(ind, ("en", "fr"))],
            [Corpus.of(gen, ("en", "fr"))],
            out,
            ("en", "fr"),
            SelectConfig(keep_words=100),
            1,
        )
    assert (out / "train.en").read_text() == "clean text\n"


def test_build_vocab_refuses_text_that_is_not_preprocess_s_any_more(tmp_path):
    from nmtkit.core.errors import UserError
    from nmtkit.data.build_vocab import build_vocab
    from nmtkit.data.settings import VocabConfig

    clean = tmp_path / "clean"
    clean.mkdir()
    for lang in ("en", "fr"):
        (clean / f"train.{lang}").write_text("a b\nc d\n")
    (clean / "train.lines").write_text("1\n2\n3\n")  # preprocess's three sentences, two now
    (clean / "preprocess.json").write_text("{}")
    with pytest.raises(UserError, match="train.lines: has 3 lines for 2 sentences; re-run preprocess"):
        build_vocab(clean / "train", ("en", "fr"), tmp_path / "vocab", VocabConfig())
    assert not (tmp_path / "vocab").exists()


def test_a_corpus_given_twice_as_one_kind_is_refused(tmp_path):
    """--general g --general g kept each pair twice; one corpus as both kinds is the WMT'14 recipe's
    IN_DOMAIN=news-commentary-v9, and selects."""
    from nmtkit.core.errors import UserError

    ind, gen = _corpora(tmp_path, 50)
    langs, cfg = ("en", "fr"), SelectConfig(keep_words=100)
    with pytest.raises(UserError, match=f"--general {gen}.en: given twice"):
        select([Corpus.of(ind, langs)], [Corpus.of(gen, langs)] * 2, tmp_path / "out", langs, cfg, 1)
    assert not (tmp_path / "out").exists()
    select([Corpus.of(gen, langs)], [Corpus.of(gen, langs)], tmp_path / "both", langs, cfg, 1)
    assert (tmp_path / "both" / "train.en").exists()


def test_workers_give_the_same_selection(tmp_path):
    ind, gen = _corpora(tmp_path, 200)
    langs = ("en", "fr")
    outs = []
    for workers in (1, 2):
        select(
            [Corpus.of(ind, langs)],
            [Corpus.of(gen, langs)],
            tmp_path / f"w{workers}",
            langs,
            SelectConfig(keep_words=700, chunk_lines=50),
            workers,
        )
        outs.append((tmp_path / f"w{workers}" / "train.fr").read_bytes())
    assert outs[0] == outs[1]


def test_no_more_workers_start_than_there_are_chunks_to_score(tmp_path, monkeypatch):
    """-j 16 over two chunks started 16 processes, each loading both sides' models."""
    from nmtkit.core import parallel
    from nmtkit.selection import moore_lewis

    started = []
    monkeypatch.setattr(moore_lewis, "Workers", lambda n, *a: started.append(n) or parallel.Workers(1, *a))
    ind, gen = _corpora(tmp_path, 200)
    langs, cfg = ("en", "fr"), SelectConfig(keep_words=700, chunk_lines=100)
    report = select([Corpus.of(ind, langs)], [Corpus.of(gen, langs)], tmp_path / "one", langs, cfg, 16)
    # 200 and 300 pairs in chunks of 250: three chunks, each corpus read apart (two of all 500)
    general, cfg = [Corpus.of(gen, langs), Corpus.of(ind, langs)], SelectConfig(keep_words=700, chunk_lines=250)
    both = select([Corpus.of(ind, langs)], general, tmp_path / "two", langs, cfg, 16)
    assert started == [2, 3] and report["workers"] == 2 and both["workers"] == 3


_PEAK = """
import sys
from pathlib import Path
from nmtkit.selection.moore_lewis import Corpus, SelectConfig, select
langs = ("en", "fr")
select([Corpus.of(sys.argv[1], langs)], [Corpus.of(sys.argv[2], langs)], Path(sys.argv[3]), langs,
       SelectConfig(keep_words=1000, chunk_lines=500), workers=1)
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across exec.
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")))
"""


def test_memory_stays_bounded_as_the_input_grows(tmp_path):
    ind = write(tmp_path / "in" / "news", pairs(300, "animals", 1))
    peaks = {}
    for n in (2_000, 64_000):
        gen = write(tmp_path / f"gen{n}" / "all", pairs(n, "animals", 2) + pairs(n, "finance", 5))
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, str(ind), str(gen), str(tmp_path / f"sel{n}")],
            capture_output=True,
            text=True,
            check=True,
        )
        peaks[n] = int(out.stdout.split()[-1]) // 1024
    text_mb = sum(Path(f"{tmp_path}/gen64000/all.{lang}").stat().st_size for lang in ("en", "fr")) >> 20
    # 32x the pairs (~{text_mb} MB of text) must not show in the peak: holding the text would add more.
    assert text_mb >= 8
    assert peaks[64_000] - peaks[2_000] < text_mb / 2, (peaks, text_mb)


def test_select_refusals(tmp_path):
    ind, gen = _corpora(tmp_path, 40)
    runner = CliRunner()
    base = ["select", "-s", "en", "-t", "fr", "-d", str(tmp_path / "out"), "-j", "1"]
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen)])
    assert result.exit_code == 2 and "--keep-words" in result.output
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "lots"])
    assert result.exit_code == 2 and "348M" in result.output
    same = ["select", "-s", "en", "-t", "en", "-d", str(tmp_path / "out"), "-j", "1", "--keep-words", "1k"]
    result = runner.invoke(main, same + ["--in-domain", str(ind), "--general", str(gen)])
    assert result.exit_code == 2 and "source and target language are both 'en'" in result.output, result.output
    for code in ("x/y", "e n", ""):  # a traceback, a file named 'train.e n', a line about 'valid.'
        for named in (f"{ind}.{code}", f"{gen}.{code}"):
            if code and "/" not in code:
                Path(named).write_text(Path(f"{ind}.en").read_text(encoding="utf-8"), encoding="utf-8")
        odd = ["select", "-s", code, "-t", "fr", "-d", str(tmp_path / "odd"), "-j", "1", "--keep-words", "1k"]
        result = runner.invoke(main, odd + ["--in-domain", str(ind), "--general", str(gen)])
        assert result.exit_code == 2 and f"language code {code!r}" in result.output, (code, result.output)
        assert not (tmp_path / "odd").exists()
    odds = (("nanM", "348M"), ("infM", "348M"), ("1e400", "348M"), ("0.4", "at least 1"), ("1.5", "whole count"))
    from nmtkit.cli.options import count

    assert [count(None, None, v) for v in ("2.01k", "4.02k", "2.03M", "1.07G", "348M", "1,000")] == [
        2010,
        4020,
        2_030_000,
        1_070_000_000,
        348_000_000,
        1000,
    ]  # decimal: 2.01 × 1000 in floats is 2009.99…
    for odd, said in odds:
        result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", odd])
        assert result.exit_code == 2 and said in result.output, (odd, result.output)
    Path(f"{gen}.fr").write_text("".join(f"ligne {i}\n" for i in range(39)), encoding="utf-8")
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1k"])
    assert result.exit_code == 2 and "differ in length" in result.output
    Path(f"{gen}.fr").write_bytes(b"".join(b"ligne\n" if i != 7 else b"caf\xe9\n" for i in range(40)))
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1k"])
    assert result.exit_code == 2 and "line 8 is not valid UTF-8" in result.output
    # a second in-domain corpus's bad line was said of the first's file, at its place in the two joined
    ind2 = write(tmp_path / "in2" / "more", pairs(40, "animals", 3))
    Path(f"{ind2}.fr").write_bytes(b"".join(b"ligne\n" if i != 30 else b"caf\xe9\n" for i in range(40)))
    result = runner.invoke(
        main, base + ["--in-domain", str(ind), "--in-domain", str(ind2), "--general", str(gen), "--keep-words", "1k"]
    )
    assert result.exit_code == 2 and f"{ind2}.fr: line 31 is not valid UTF-8" in result.output, result.output
    for side in ("en", "fr"):
        Path(f"{gen}.{side}").write_text("")
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1k"])
    assert result.exit_code == 2 and f"the general-domain corpus is empty ({gen}.en and {gen}.fr)" in result.output
    assert not (tmp_path / "out" / "select.json").exists()
    # lines that are all empty: language models of nothing, which scored every pair alike, exit 0
    for side in ("en", "fr"):
        Path(f"{gen}.{side}").write_text("\n" * 40)
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1k"])
    assert result.exit_code == 2 and "the general-domain corpus's source side: holds only empty lines" in result.output
    Path(f"{ind}.fr").write_text(" \n" * len(Path(f"{ind}.en").read_text(encoding="utf-8").splitlines()))
    result = runner.invoke(main, base + ["--in-domain", str(ind), "--general", str(gen), "--keep-words", "1k"])
    assert (
        result.exit_code == 2
        and f"the in-domain corpus's target side: holds only empty lines ({ind}.en" in result.output
    )
    assert len(result.output.strip().splitlines()) == 1
    # words in the general corpus, but none in the sample that the in-domain text's size sets
    small = write(tmp_path / "small" / "in", [("the cat", "le chat"), ("a dog", "un chien")])
    sparse = write(tmp_path / "sparse" / "all", [("", "")] * 500 + [("the cat", "le chat")] + [("", "")] * 499)
    result = runner.invoke(main, base + ["--in-domain", str(small), "--general", str(sparse), "--keep-words", "1k"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "source side: a sample of 2 of its pairs holds only empty lines" in result.output
    assert "give more in-domain text" in result.output
    assert not (tmp_path / "out").exists()  # refused before anything is written, the directory included


def test_keep_words_counts(tmp_path):
    ind, gen = _corpora(tmp_path, 40)
    result = CliRunner().invoke(
        main,
        [
            "select",
            "-s",
            "en",
            "-t",
            "fr",
            "--in-domain",
            str(ind),
            "--general",
            str(gen),
            "--keep-words",
            "0.1k",
            "-d",
            str(tmp_path / "o"),
            "-j",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o" / "select.json").read_text())["config"]["keep_words"] == 100


def test_a_first_line_s_byte_order_mark_is_no_text_of_the_in_domain_model(tmp_path):
    """As every other reader drops it (core.files.decode_line): else the language model counted
    '\ufeffIn' as a word of its own."""
    from nmtkit.selection.moore_lewis import _text

    mark = b"\xef\xbb\xbf"
    assert _text([mark + b"In the\n", b"And\n"], tmp_path / "x", 1) == "In the\nAnd"
    assert _text([mark + b"In\n"], tmp_path / "x", 5) == "\ufeffIn"  # not a file's first line: its text


def test_each_files_lines_end_apart_and_its_mark_is_dropped_where_the_corpora_are_joined(tmp_path):
    """A last line without its newline ran into the next in-domain file's first ('deltaepsilon'),
    and a second file's mark of UTF-8 stayed glued to its first word."""
    from nmtkit.selection.moore_lewis import read_pairs

    for name, data in (("a", b"alpha beta\ngamma delta"), ("b", b"\xef\xbb\xbfepsilon zeta\n")):
        for lang in ("en", "fr"):
            (tmp_path / f"{name}.{lang}").write_bytes(data)
    chunks = [
        line for name in "ab" for src, _ in read_pairs(Corpus.of(tmp_path / name, ("en", "fr")), 1) for line in src
    ]
    assert chunks == [b"alpha beta\n", b"gamma delta\n", b"epsilon zeta\n"]


def test_an_in_domain_text_with_no_word_seen_twice_is_refused(tmp_path):
    """Every word <unk> to its model: the ranking was by length alone, without a word."""
    ind = write(tmp_path / "in" / "one", [("a single line", "une seule ligne")])
    _, gen = _corpora(tmp_path, 40)
    args = ["select", "-s", "en", "-t", "fr", "--in-domain", ind, "--general", gen, "--keep-words", "1k"]
    result = CliRunner().invoke(main, [*map(str, args), "-d", str(tmp_path / "out"), "-j", "1"])
    assert result.exit_code == 2 and "no word of the in-domain src text" in result.output, result.output
    assert not (tmp_path / "out").exists()
