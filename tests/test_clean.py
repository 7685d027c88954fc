"""Each cleaning rule on inline examples taken from the corpus's real noise."""

import pytest

from nmtkit.text.clean import RULES, apply_rules


@pytest.mark.parametrize("rule, text, expected", [
    ("unicode", "a\u00a0b\u200bc\x07d", "a bcd"),
    ("unicode", "e\u0301te\u0301", "été"),                                    # NFC
    ("mojibake", "To the tune of Â»Death of the Son.Â«", "To the tune of »Death of the Son.«"),
    ("mojibake", "Ânesse sauvage", "Ânesse sauvage"),                         # a real Â stays
    ("superscription", "(3:1) Psaume de David. Lors de sa fuite. (3:2) O Éternel, que mes ennemis",
     "(3:2) O Éternel, que mes ennemis"),
    ("superscription", "Psaume de David, lorsqu'il fuyait. (3:2) Éternel, que", "(3:2) Éternel, que"),
    ("superscription", "(51:1) Au chef. (51:2) Lorsque Nathan vint. (51:3) O Dieu! aie pitié",
     "(51:3) O Dieu! aie pitié"),
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
])
def test_rule(rule, text, expected):
    assert RULES[rule](text) == expected


def test_apply_rules_reports_what_fired_in_order():
    out, fired = apply_rules("(3:1) Titre. (3:2) L’Esprit de #Dieu [vint]. ", tuple(RULES))
    assert out == "L'Esprit de Dieu vint ."
    assert fired == ["superscription", "verse-markers", "brackets", "hash", "quotes"]


def test_disabled_rules_do_not_run():
    out, fired = apply_rules("[x] `y`", ("whitespace",))
    assert out == "[x] `y`" and fired == []


def test_whitespace_only_changes_are_not_counted():
    _, fired = apply_rules("a  b ", tuple(RULES))
    assert fired == []
