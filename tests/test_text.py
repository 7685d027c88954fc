"""Tokenisation, BPE and the shared Preprocessor: what preprocess and translate both use."""

import sys
from collections import Counter

from nmtkit.text.bpe import Segmenter, learn_codes, merge_subwords
from nmtkit.text.clean import PRESETS
from nmtkit.text.pipeline import Preprocessor
from nmtkit.text.settings import TextConfig


def test_encode_cleans_normalises_and_tokenizes():
    p = Preprocessor(TextConfig("fr", clean=PRESETS["bible"]))
    assert p.encode("(1:3) L’Esprit de #Dieu, « dit-il »!") == [
        "L'",
        "Esprit",
        "de",
        "Dieu",
        ",",
        '"',
        "dit-il",
        '"',
        "!",
    ]
    assert p.fired == Counter({"verse-markers": 1, "hash": 1, "quotes": 1})


def test_no_xml_escaping():
    assert Preprocessor(TextConfig("en")).encode("a & b < c") == ["a", "&", "b", "<", "c"]


def test_edge_cases_empty_trailing_space_and_nbsp():
    p = Preprocessor(TextConfig("en"))
    assert p.encode("") == []
    assert p.encode("   ") == []
    assert p.encode("Amen. ") == p.encode("Amen.") == ["Amen", "."]
    assert p.encode("a\u00a0b") == ["a", "b"]


def test_lowercase_and_aggressive_dash():
    p = Preprocessor(TextConfig("fr", lowercase=True, aggressive_dash=True))
    assert p.encode("Arc-en-Ciel") == ["arc", "@-@", "en", "@-@", "ciel"]
    assert p.decode(["arc", "@-@", "en", "@-@", "ciel"]) == "arc-en-ciel"
    # --replace-unk writes a word its <unk>s read once and leaves the others empty: no double space
    assert p.decode(["il", "And", "", "des", "", "."], detokenize=False) == "il And des ."


def test_detokenize_round_trip():
    p = Preprocessor(TextConfig("en"))
    line = "And God said, Let there be light: and there was light."
    assert p.decode(p.encode(line)) == line


def test_french_detokenization_follows_moses_typography():
    # Moses puts a space before ':' and '!' in French; Segond's text has none.
    p = Preprocessor(TextConfig("fr"))
    assert p.decode(p.encode("Dieu dit: Que la lumière soit!")) == "Dieu dit : Que la lumière soit !"


def test_bpe_learn_apply_and_undo():
    counts = Counter({"lumière": 10, "lumineux": 8, "lune": 6, "terre": 5})
    codes = learn_codes(counts, 20)
    assert codes.startswith("#version")
    seg = Segmenter(codes)
    pieces = seg.segment(["lumineuse", "terre"])
    assert len(pieces) > 2 and any(p.endswith("@@") for p in pieces)
    assert merge_subwords(pieces) == ["lumineuse", "terre"]
    p = Preprocessor(TextConfig("fr"), bpe_codes=codes)
    assert p.decode(p.encode("La lumineuse terre.")) == "La lumineuse terre."


def test_the_unknown_word_translate_writes_stays_one_unit_through_moses_and_bpe():
    codes = learn_codes(Counter({"lumière": 10, "lumineux": 8, "unknown": 6, "<unknown>": 4}), 30)
    for p in (Preprocessor(TextConfig("fr"), bpe_codes=codes), Preprocessor(TextConfig("fr", lowercase=True))):
        units = p.encode("La <unk> lumineuse <unk>!")
        assert units.count("<unk>") == 2 and "unk" not in units and units[-1] == "!"
        assert p.encode("La lumineuse <unk>", tokenized=True).count("<unk>") == 1
    assert Preprocessor(TextConfig("en")).encode("a < b > c") == ["a", "<", "b", ">", "c"]


def test_bpe_learning_draws_no_tqdm_bar(capfd):
    """learn_codes replaces the private name subword-nmt's learn_bpe draws its tqdm bar with: if
    subword-nmt renames it, tqdm's bar is back in pipes and logs, and this fails."""
    import subword_nmt.learn_bpe as subword_learn

    assert "tqdm" in subword_learn.learn_bpe.__code__.co_names, "subword-nmt's learn_bpe no longer calls tqdm"
    learn_codes(Counter({"lumière": 10, "lumineux": 8, "lune": 6}), 5)
    err = capfd.readouterr().err
    assert "it/s" not in err and "%|" not in err, err


def test_bpe_learning_that_runs_out_of_pairs_says_so_in_one_line_of_its_own(capfd):
    """subword-nmt's own line ("no pair has frequency >= 2. Stopping") went past -q; the module's
    sys is replaced, not the process's stderr, which our progress bar draws on."""
    import subword_nmt.learn_bpe as subword_learn

    assert "sys" in subword_learn.learn_bpe.__code__.co_names, "subword-nmt's learn_bpe no longer writes to sys"
    before = sys.stderr
    codes = learn_codes(Counter({"ab": 3, "cd": 1}), 50, name="fr")
    assert codes.count("\n") == 2 and sys.stderr is before  # the header and a b
    err = capfd.readouterr().err
    assert "Stopping" not in err and "learned 1 BPE merges for fr of the 50 asked: no pair is left 2 times" in err


def test_bpe_codes_without_a_merge_are_refused_in_one_line_where_subword_nmt_would_exit_1(tmp_path):
    import pytest

    from nmtkit.core.errors import UserError
    from nmtkit.text.bpe import read_codes

    with pytest.raises(UserError, match="--bpe 5: no pair of symbols occurs 2 times in the training text of fr"):
        learn_codes(Counter({"abc": 1, "xyz": 1}), 5, name="fr")
    with pytest.raises(UserError, match="--bpe 100: every word of the training text is one symbol"):
        learn_codes(Counter({"a": 5, "b": 3}), 100)  # subword-nmt's max() of no pair, a traceback
    (tmp_path / "bpe.codes").write_text("#version: 0.2\n", encoding="utf-8")
    with pytest.raises(UserError, match="bpe.codes: BPE codes without a merge"):
        read_codes(tmp_path / "bpe.codes")
    (tmp_path / "bpe.codes").write_text("\n", encoding="utf-8")  # was "line 1 is not a BPE merge ('')"
    with pytest.raises(UserError, match="bpe.codes: is empty, where BPE codes were expected"):
        read_codes(tmp_path / "bpe.codes")
    with pytest.raises(UserError, match="the BPE codes it carries hold no merge"):
        Segmenter("#version: 0.2\n")


def test_merge_subwords_drops_a_dangling_separator():
    assert merge_subwords(["ab@@", "c", "d@@"]) == ["abc", "d"]


def test_a_bpe_text_that_holds_sentencepieces_mark_keeps_its_spaces():
    """Its units were taken for SentencePiece's, and the whole sentence came out as one word."""
    from nmtkit.text.bpe import SPM_MARK

    codes = learn_codes(Counter({"lumière": 10, "lumineux": 8, "lune": 6}), 20)
    p = Preprocessor(TextConfig("fr"), bpe_codes=codes)
    line = f"La {SPM_MARK} lune et la lumière"  # Moses parts the mark from the word
    units = p.encode(line)
    assert any(u.startswith(SPM_MARK) for u in units) and any(u.endswith("@@") for u in units)
    assert p.decode(units) == line
    assert merge_subwords(["a", f"{SPM_MARK}b", "c"], sentencepiece=False) == ["a", f"{SPM_MARK}b", "c"]
    assert merge_subwords(["a", f"{SPM_MARK}b", "c"]) == ["a", "bc"]  # no codes to ask: the units' guess


def test_the_word_of_a_unit_is_its_subwords_merged():
    from nmtkit.text.bpe import word_of

    bpe = ["Et", "zz@@", "q@@", "xw", "."]
    assert [word_of(bpe, i) for i in range(5)] == ["Et", "zzqxw", "zzqxw", "zzqxw", "."]
    spm = ["▁Et", "▁zz", "q", "xw", "▁."]
    assert [word_of(spm, i) for i in range(5)] == ["Et", "zzqxw", "zzqxw", "zzqxw", "."]
    # the unknown word is one unit without SentencePiece's mark, a word of its own
    with_unk = ["▁Dieu", "<unk>", "▁la", "<unk>", "x"]
    assert [word_of(with_unk, i) for i in range(5)] == ["Dieu", "<unk>", "la", "<unk>", "x"]
    assert word_of(["▁a", "▁"], 1) == "▁" and word_of(["@@"], 0) == "@@"  # nothing left merged: the unit
    # BPE units of a text that holds SentencePiece's mark, as the codes say: not guessed from the units
    bpe_with_mark = ["▁x@@", "y", "▁z"]
    assert [word_of(bpe_with_mark, i, sentencepiece=False) for i in range(3)] == ["▁xy", "▁xy", "▁z"]
    assert [word_of(bpe_with_mark, i) for i in range(3)] == ["x@@y", "x@@y", "z"]  # the guess: wrong here


def test_a_units_word_begins_after_the_units_that_go_on_into_it():
    from nmtkit.text.bpe import word_start

    bpe = ["Et", "zz@@", "q@@", "xw", "."]
    assert [word_start(bpe, i) for i in range(5)] == [0, 1, 1, 1, 4]
    spm = ["▁Et", "▁zz", "q", "xw", "▁."]
    assert [word_start(spm, i) for i in range(5)] == [0, 1, 1, 1, 4]
    assert [word_start(["a", "▁b@@", "c"], i, sentencepiece=False) for i in range(3)] == [0, 1, 1]


def test_a_pipeline_says_its_units_kind_as_its_codes_do():
    from nmtkit.text.bpe import learn_sentencepiece

    bpe = learn_codes(Counter({"lumière": 10, "lumineux": 8, "lune": 6}), 20)
    spm = learn_sentencepiece(iter(["la lune et la lumière"] * 50), 30, "bpe")
    assert Preprocessor(TextConfig("fr"), bpe_codes=spm).sentencepiece
    assert not Preprocessor(TextConfig("fr"), bpe_codes=bpe).sentencepiece
    assert not Preprocessor(TextConfig("fr")).sentencepiece  # words


def test_a_language_code_is_one_that_can_end_a_file_name_and_be_read_back():
    import pytest

    from nmtkit.core.errors import UserError
    from nmtkit.text.settings import check_language

    for good in ("en", "fr", "pt-BR", "zh_Hant", "x1"):
        assert check_language(good) == good
    for bad in ("", "e n", "x/y", "..", "-", "en.x", "_"):  # 'train..', 'train.-', 'train.en.x' named nothing
        with pytest.raises(UserError, match="language code"):
            check_language(bad)


def test_an_empty_clean_is_refused_rather_than_taken_for_no_rules():
    import pytest

    from nmtkit.core.errors import UserError
    from nmtkit.text.clean import rules_named

    assert rules_named("none") == ()
    for empty in ("", " , "):
        with pytest.raises(UserError, match="name a preset"):
            rules_named(empty)


def test_bpe_learning_asked_for_more_merges_than_memory_holds_stops_where_the_pairs_run_out(capfd):
    """subword-nmt hands range(--bpe) to the bar: listing it was a MemoryError at --bpe 10**9."""
    codes = learn_codes(Counter({"lumière": 10, "lumineux": 8, "lune": 6}), 10**15, name="fr")
    merges = codes.count("\n") - 1
    assert 0 < merges < 30
    assert f"learned {merges:,} BPE merges for fr of the 1,000,000,000,000,000 asked" in capfd.readouterr().err
    assert learn_codes(Counter({"lumière": 10, "lune": 6}), 10**19).count("\n") > 1  # past len()'s ssize_t


def test_moses_rules_follow_a_codes_language_whatever_its_region_or_case():
    """sacremoses knows only bare codes: en-US, EN or en_GB got generic rules ("isn ' t")."""
    from nmtkit.text.settings import moses_language

    assert [moses_language(c) for c in ("en-US", "EN", "en_GB", "pt-BR", "fr")] == ["en", "en", "en", "pt", "fr"]
    english = Preprocessor(TextConfig("en")).encode("Mr. Smith isn't here.")
    assert english == ["Mr.", "Smith", "isn", "'t", "here", "."]
    for code in ("en-US", "EN", "en_GB"):
        assert Preprocessor(TextConfig(code)).encode("Mr. Smith isn't here.") == english
    assert Preprocessor(TextConfig("fr-CA")).encode("l'arbre") == ["l'", "arbre"]


def test_a_stored_text_config_tokenizes_as_it_did_when_it_was_written():
    """A corpus or a model made with en-US before the rules were recorded was tokenized by the
    generic rules: read back, it keeps them; a new config records its rules where they are not the code."""
    new = TextConfig("en-US")
    assert new.rules == "en" and new.to_dict()["rules"] == "en"
    assert TextConfig.from_dict(new.to_dict()) == new
    assert "rules" not in TextConfig("en").to_dict()  # a bare code's dict is as it always was
    older = {k: v for k, v in new.to_dict().items() if k != "rules"}
    assert Preprocessor(TextConfig.from_dict(older)).encode("isn't") == ["isn", "'", "t"]
