"""Glossaries (translate --glossary): a term's translation held by each output whose source holds
the term as whole words, beside the line's --constraints; the file's errors are one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.core.errors import UserError
from nmtkit.data.vocab import SPECIALS
from nmtkit.translate.glossary import Glossary, read_glossary, with_terms
from nmtkit.translate.settings import SearchConfig
from tests.conftest import EN


class _Side:
    """A side that splits text on spaces and then each word as ``cut`` says."""

    def __init__(self, cut, vocab):
        self.cut, self.vocab = cut, type("V", (), {"tokens": [*SPECIALS, *vocab]})()
        self.text = type("T", (), {"sentencepiece": cut is _spm})()  # the units' kind, as codes say it

    def tokens(self, line, tokenized=False):
        return [u for w in line.split() for u in self.cut(w)]

    def ids(self, units):
        return [self.vocab.tokens.index(u) if u in self.vocab.tokens else 1 for u in units]


def _bpe(word):  # words of more than four letters in units of four, BPE's @@ on all but the last
    parts = [word[i : i + 4] for i in range(0, len(word), 4)]
    return [p + "@@" for p in parts[:-1]] + parts[-1:]


def _spm(word):
    parts = [word[i : i + 4] for i in range(0, len(word), 4)]
    return ["▁" + parts[0], *parts[1:]]


@pytest.mark.parametrize("cut", [_bpe, _spm])
def test_terms_are_found_as_whole_words_and_each_translation_is_taken_once(cut):
    src = _Side(cut, [u for w in "the earth parterre heaven and".split() for u in cut(w)])
    tgt = _Side(str.split, ["la", "terre", "ciel", "et"])
    sides = type("Sides", (), {"src": src, "tgt": tgt})()
    terms = (("earth", "la terre"), ("the earth", "la terre"), ("heaven", "ciel"), ("parterre", "xylophone"))
    glossary = Glossary(terms, sides)
    assert glossary.targets(src.tokens("the heaven and the earth")) == ["ciel", "la terre"]
    assert glossary.targets(src.tokens("the parterre")) == []  # 'xylophone' is out of the vocabulary
    assert glossary.targets(src.tokens("heavenly earthen")) == []  # not whole words
    assert with_terms([["et"], []], [src.tokens("and heaven"), src.tokens("earth")], glossary) == [
        ["et", "ciel"],
        ["la terre"],
    ]
    assert with_terms(None, [src.tokens("the earth")], glossary) == [["la terre"]]


def test_a_bpe_side_whose_text_held_sentencepieces_mark_finds_its_terms_at_bpe_word_edges():
    """The kind was guessed from the vocabulary: one unit beginning with ▁ (a text that holds the
    mark) made every term of a BPE model wait for ▁ words, and none was ever found."""
    src = _Side(_bpe, [*(u for w in "the earth".split() for u in _bpe(w)), "▁", "▁x"])
    tgt = _Side(str.split, ["la", "terre"])
    glossary = Glossary((("earth", "la terre"),), type("S", (), {"src": src, "tgt": tgt})())
    assert glossary.targets(src.tokens("the earth ▁x")) == ["la terre"]


def test_the_longest_term_at_a_word_is_taken_and_none_inside_it():
    src = _Side(_bpe, [u for w in "the land of heaven".split() for u in _bpe(w)])
    tgt = _Side(str.split, ["le", "pays", "terre", "ciel", "de"])
    glossary = Glossary(
        (("land", "terre"), ("the land", "le pays"), ("heaven", "ciel")), type("S", (), {"src": src, "tgt": tgt})()
    )
    assert glossary.targets(src.tokens("the land of heaven")) == ["le pays", "ciel"]
    assert glossary.targets(src.tokens("a land of the land")) == ["terre", "le pays"]


def test_a_glossary_file_is_terms_and_their_translations_tab_separated(tmp_path, capsys):
    path = tmp_path / "g.tsv"
    path.write_text("God\tDieu\t\n\nthe earth\t la terre \nGod\tSeigneur\n", encoding="utf-8")
    assert read_glossary(path) == (("God", "Dieu"), ("the earth", "la terre"))  # a trailing tab is no field
    assert "line 4: 'God' is line 1's term too: line 1's translation kept" in capsys.readouterr().err
    for bad in ("God Dieu\n", "God\t\n", "a\tb\tc\n"):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(UserError, match="line 1: a glossary line is a source term, a tab"):
            read_glossary(path)
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(UserError, match="holds no terms"):
        read_glossary(path)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_glossary_from_the_shell(overfit, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    src = tmp_path / "src.en"
    src.write_text("\n".join(EN[:4]) + "\n", encoding="utf-8")
    (tmp_path / "g.tsv").write_text("earth\tles ténèbres\nLet there be light\tla lumière fut\n", encoding="utf-8")
    free = invoke("translate", "-m", ckpt, src, "--beam", 4).stdout.splitlines()
    got = invoke("translate", "-m", ckpt, src, "--beam", 4, "--glossary", tmp_path / "g.tsv")
    assert got.exit_code == 0, got.output
    out = got.stdout.splitlines()
    assert "les ténèbres" in out[0] and out[0] != free[0]  # "earth" is in line 1 (and 2)
    assert "les ténèbres" in out[1] and "la lumière fut" in out[2]
    assert out[3] == free[3]  # no term: the free search's
    (tmp_path / "musts").write_text("\n\n\nla terre\n", encoding="utf-8")
    both = invoke(
        "translate", "-m", ckpt, src, "--beam", 4, "--glossary", tmp_path / "g.tsv", "--constraints", tmp_path / "musts"
    )
    assert both.exit_code == 0 and both.stdout.splitlines()[:3] == out[:3] and "la terre" in both.stdout.splitlines()[3]


def test_glossary_errors_are_one_line_and_exit_2(overfit, tmp_path):
    ckpt = overfit / "run" / "last.pt"
    src = tmp_path / "src.en"
    src.write_text(EN[0] + "\n", encoding="utf-8")
    (tmp_path / "g.tsv").write_text("earth\tla terre\n", encoding="utf-8")
    (tmp_path / "bad.tsv").write_text("earth la terre\n", encoding="utf-8")
    (tmp_path / "twice.tsv").write_text("earth\tla terre\nearth\tle monde\n", encoding="utf-8")  # warned once read
    cases = [
        (["--glossary", tmp_path / "twice.tsv", "--sampling"], "sampling"),
        (["--glossary", tmp_path / "twice.tsv", "--ordered-constraints"], "no order"),
        (["--plain-first"], "--plain-first and --no-plain-first"),
        (["--no-plain-first"], "--plain-first and --no-plain-first"),
        (["--glossary", tmp_path / "bad.tsv"], "line 1: a glossary line"),
        (["--glossary", tmp_path / "missing.tsv"], "missing.tsv"),
        (["--glossary", tmp_path / "g.tsv", "--sampling"], "sampling"),
        (["--glossary", tmp_path / "g.tsv", "--ordered-constraints", "--constraints", src], "no order"),
        (["--glossary", tmp_path / "g.tsv", "--ordered-constraints"], "no order"),
    ]
    for args, says in cases:
        r = invoke("translate", "-m", ckpt, src, *args)
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, (args, r.output)


def test_serve_holds_its_glossarys_terms_in_every_translation_whose_sentence_holds_them(overfit, capsys):
    pytest.importorskip("fastapi", reason="nmtkit serve needs the serve extra (make install has it)")
    from nmtkit.serve.settings import Limits, ServerConfig
    from nmtkit.translate.translator import Translator
    from tests.test_serve import _get, _post, in_process

    translator = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu")
    capsys.readouterr()
    with in_process(translator, ServerConfig(glossary=(("earth", "les ténèbres"), ("God", "xylophone")))) as url:
        said = "warning: glossary: 'God': its translation 'xylophone' has a unit out of the target vocabulary: left out"
        assert said in capsys.readouterr().err
        status, body = _post(url + "/translate", {"sentences": EN[:4], "beam": 4})
        assert status == 200, body
        out = [t["text"] for t in body["translations"]]
        assert "les ténèbres" in out[0] and "ténèbres" not in out[2]
        assert json.loads(_get(url + "/info")[1])["glossary"] == {"terms": 2, "used": 1}
        # a request's terms, before the server's: its translation of "earth" is the one held
        own = {"earth": "la lumière", "light": "xylophone", "darkness": "les eaux"}
        status, body = _post(url + "/translate", {"sentences": EN[:4], "beam": 4, "glossary": own})
        assert status == 200, body
        out = [t["text"] for t in body["translations"]]
        assert "la lumière" in out[0] and "ténèbres" not in out[0] and "les eaux" in out[1], out
        assert body["warnings"] == [
            "glossary: 'light': its translation 'xylophone' has a unit out of the target vocabulary: left out"
        ]
        status, body = _post(url + "/translate", {"sentences": EN[:1], "glossary": own, "ordered_constraints": True})
        assert status == 422 and "no order" in body["error"], body
        for terms, says in (({"earth": " "}, "a word each"), ({"earth": "a", " earth": "b"}, "'earth' is given twice")):
            status, body = _post(url + "/translate", {"sentences": EN[:1], "glossary": terms})
            assert status == 422 and says in body["error"], body
        status, body = _post(
            url + "/translate", {"sentences": EN[:1], "constraints": [["Dieu"]], "ordered_constraints": True}
        )
        assert status == 422 and "no order" in body["error"], body
    # the request's terms over the server's: over a longer term around them, and where left out
    with in_process(translator, ServerConfig(glossary=(("the earth", "les ténèbres"),))) as url:
        for own, held in (({"earth": "la lumière"}, "la lumière"), ({"earth": "xylophone"}, None)):
            status, body = _post(url + "/translate", {"sentences": EN[:1], "beam": 4, "glossary": own})
            assert status == 200 and "ténèbres" not in body["translations"][0]["text"], body
            assert held is None or held in body["translations"][0]["text"], body
        status, body = _post(url + "/translate", {"sentences": EN[:1], "beam": 4})
        assert "les ténèbres" in body["translations"][0]["text"], body
        # invisible characters alone: no word to hold, said as a term out of the vocabulary is
        status, body = _post(url + "/translate", {"sentences": EN[:1], "glossary": {"earth": "\u200b", "\x7f": "a"}})
        assert status == 200 and body["warnings"] == [
            "glossary: 'earth': its translation '\\u200b' is no word once tokenized: left out",
            "glossary: the term '\\x7f' is no word once tokenized: left out",
        ], body
    with in_process(translator, ServerConfig(limits=Limits(max_length=12))) as url:  # terms count as phrases
        status, body = _post(url + "/translate", {"sentences": [EN[7]], "glossary": {"Amen": "la terre " * 7}})
        assert status == 413 and "phrases and terms of 14 subword units; at most 12" in body["error"], body
    # a server that orders constraints by default: a request's glossary, which has no order, is searched
    # without it, unless the request asks for the order itself
    with in_process(translator, ServerConfig(search=SearchConfig(ordered_constraints=True))) as url:
        asked = {"sentences": EN[1:2], "beam": 4, "glossary": {"darkness": "les eaux"}}
        status, body = _post(url + "/translate", asked)
        assert status == 200 and "les eaux" in body["translations"][0]["text"], body
        status, body = _post(url + "/translate", {**asked, "ordered_constraints": True})
        assert status == 422 and "no order" in body["error"], body
    with in_process(translator, ServerConfig()) as url:  # a request's glossary on a server without one
        status, body = _post(url + "/translate", {"sentences": EN[:2], "beam": 4, "glossary": {"darkness": "les eaux"}})
        assert status == 200 and "les eaux" in body["translations"][1]["text"] and "warnings" not in body, body
        assert json.loads(_get(url + "/info")[1])["glossary"] is None
    with pytest.raises(UserError, match="no order"):
        ServerConfig(glossary=(("a", "b"),), search=SearchConfig(ordered_constraints=True)).check()


def test_a_term_that_ends_in_a_stop_is_found_within_a_line_and_at_its_end(overfit):
    """Moses splits the stop off a line's last word only: "etc." was found at a line's end alone."""
    from nmtkit.translate.translator import Translator

    sides = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu").sides
    glossary = Glossary((("etc.", "la terre"), ("Mr. Smith", "Dieu")), sides)
    assert glossary.size == 2
    for line in ("the heaven, etc.", "the heaven etc. and the earth", "and Mr. Smith said"):
        assert glossary.targets(sides.src.tokens(line)), (line, sides.src.tokens(line))
    assert glossary.targets(sides.src.tokens("the heaven etc and the earth")) == []  # without its stop
