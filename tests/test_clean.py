"""Each cleaning rule on inline examples taken from the corpus's real noise."""

import pytest

from nmtkit.text.clean import RULES, apply_rules


@pytest.mark.parametrize(
    "rule, text, expected",
    [
        ("unicode", "a\u00a0b\u200bc\x07d", "a bcd"),
        ("unicode", "e\u0301te\u0301", "été"),  # NFC
        ("unicode", "chat\rnoir\x0cet\u2028le\x1fchien\x85!", "chat noir et le chien !"),  # no glued words
        ("mojibake", "To the tune of Â»Death of the Son.Â«", "To the tune of »Death of the Son.«"),
        ("mojibake", "Ânesse sauvage", "Ânesse sauvage"),  # a real Â stays
        ("mojibake", "Ã©tÃ© Ã\u00a0 naÃ¯ve", "été à naïve"),
        (
            "superscription",
            "(3:1) Psaume de David. Lors de sa fuite. (3:2) O Éternel, que mes ennemis",
            "(3:2) O Éternel, que mes ennemis",
        ),
        ("superscription", "Psaume de David, lorsqu'il fuyait. (3:2) Éternel, que", "(3:2) Éternel, que"),
        (
            "superscription",
            "(51:1) Au chef. (51:2) Lorsque Nathan vint. (51:3) O Dieu! aie pitié",
            "(51:3) O Dieu! aie pitié",
        ),
        ("superscription", "(34:6) Quand on tourne vers lui", "(34:6) Quand on tourne vers lui"),
        ("superscription", "(12:18) Et je me tins; (13:1) Et je vis", "(12:18) Et je me tins; (13:1) Et je vis"),
        ("superscription", "Et Jésus lui dit: Va. (10:53) Aussitôt", "Et Jésus lui dit: Va. (10:53) Aussitôt"),
        ("verse-markers", "(34:6) Quand on tourne", "  Quand on tourne"),
        ("verse-markers", "Ben-Ammi (fils de mon peuple)", "Ben-Ammi (fils de mon peuple)"),
        ("brackets", "[which is] ten baths", " which is  ten baths"),
        ("brackets", "[]", "  "),
        ("asterisks", "*** and the Lord has made it", "  and the Lord has made it"),
        ("hash", "le #Dieu qui l’a fait, # 3", "le Dieu qui l’a fait, # 3"),
        ("quotes", "Don`t `What?` l’Éternel « Va » “yes”", "Don't 'What?' l'Éternel \" Va \" \"yes\""),
        ("whitespace", "  Amen.   so  ", "Amen. so"),
        ("entities", "Tom &amp; Jerry&#39;s &lt;b&gt; &eacute;t&eacute; AT&T", "Tom & Jerry's <b> été AT&T"),
        ("entities", "?a=1&times=2&section=3 R&D&copy &#x41;&nosuch;", "?a=1&times=2&section=3 R&D&copy A&nosuch;"),
    ],
)
def test_rule(rule, text, expected):
    assert RULES[rule](text) == expected


def test_apply_rules_reports_what_fired_in_order():
    out, fired = apply_rules("(3:1) Titre. (3:2) L’Esprit de #Dieu [vint]. ", tuple(RULES))
    assert out == "L'Esprit de Dieu vint ."
    assert fired == ["superscription", "verse-markers", "brackets", "hash", "quotes"]


def test_an_entity_s_character_meets_the_rules_after_it_and_no_preset_but_all_unescapes():
    from nmtkit.text.clean import rules_named

    assert apply_rules("a&nbsp;&nbsp;b&#8217;s", rules_named("entities,unicode,quotes,whitespace")) == (
        "a b's",
        ["entities", "quotes"],  # unicode only moved spaces (NBSP): not counted
    )
    assert [p for p in ("default", "bible", "none", "all") if "entities" in rules_named(p)] == ["all"]


def test_disabled_rules_do_not_run():
    out, fired = apply_rules("[x] `y`", ("whitespace",))
    assert out == "[x] `y`" and fired == []


def test_whitespace_only_changes_are_not_counted():
    _, fired = apply_rules("a  b ", tuple(RULES))
    assert fired == []


NEWS = [
    "The vote (2:1) went to the [Senate] on page *3*, #metoo.\u00a0",
    "Le vote (2:1) passa au [Sénat] page *3*, #metoo.",
]


def test_preprocess_keeps_news_text_by_default_and_applies_the_bible_rules_when_asked(tmp_path):
    from click.testing import CliRunner

    from nmtkit.cli import main
    from tests.conftest import write_pair

    write_pair(tmp_path / "raw" / "train", [NEWS[0]], [NEWS[1]])
    run = lambda out, *extra: CliRunner().invoke(
        main,
        [
            "preprocess",
            "-s",
            "en",
            "-t",
            "fr",
            "--train",
            str(tmp_path / "raw" / "train"),
            "-d",
            str(tmp_path / out),
            "-j",
            "1",
            *extra,
        ],
    )
    assert run("plain").exit_code == 0
    kept = (tmp_path / "plain" / "train.en").read_text(encoding="utf-8")
    assert "( 2 : 1 )" in kept and "[ Senate ]" in kept and "* 3 *" in kept and "# metoo" in kept
    assert run("bible", "--clean", "bible").exit_code == 0
    cut = (tmp_path / "bible" / "train.en").read_text(encoding="utf-8")
    assert "2 : 1" not in cut and "[" not in cut and "*" not in cut and "#" not in cut
    bad = run("x", "--clean", "unicode,nonsense")
    assert bad.exit_code == 2 and "unknown cleaning rule(s): nonsense" in bad.output


def test_score_normalises_hypotheses_and_references_the_same_way(tmp_path):
    from nmtkit.evaluate.score import evaluate

    (tmp_path / "hyp").write_text("The vote (2:1) went to the\u00a0Senate in May.\n", encoding="utf-8")
    (tmp_path / "ref").write_text("The vote went to the Senate in May.\n", encoding="utf-8")
    bleu = lambda clean: evaluate([str(tmp_path / "hyp")], [str(tmp_path / "ref")], clean=clean)["systems"][0]["bleu"]
    assert bleu(()) < 60
    assert bleu(("unicode", "verse-markers")) == pytest.approx(100)


def test_every_character_that_separates_words_stays_a_separator():
    """What str.split() splits on (CR, form feed, the line separators, …) is never removed."""
    import sys

    from nmtkit.text.clean import unicode_rule

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() and chr(c) != "\n"]
    assert len(spaces) > 20 and all(unicode_rule(f"a{c}b").split() == ["a", "b"] for c in spaces)


def test_the_unicode_rule_removes_what_split_words_and_composes_last():
    """The bidirectional controls and the soft hyphen were kept, each a token that split a word;
    NFC came before the removals, so a zero-width space between a letter and its accent left them
    uncomposed."""
    import unicodedata

    from nmtkit.text.clean import unicode_rule

    assert unicode_rule("soft\u00adhyphen \u202bmot\u202c \u2067word\u2069 \u180e") == "softhyphen mot word "
    composed = unicode_rule("cafe\u200b\u0301")
    assert composed == "caf\u00e9" and unicodedata.is_normalized("NFC", composed)
