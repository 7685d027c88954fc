"""The gold alignments shipped in examples/bible_aer, and what scores against them: they must be
well-formed, over exactly the tokens nmtkit's pipeline makes of the raw verses, and counted as the
README says; eflomal's two directions are symmetrized as Moses does."""

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.align.aer import alignment_error, read_gold
from nmtkit.align.symmetrize import grow_diag_final_and
from nmtkit.cli import main
from nmtkit.data.bible import split_of

GOLD = Path(__file__).resolve().parent.parent / "examples" / "bible_aer"


def lines(name: str) -> list[str]:
    return (GOLD / name).read_text(encoding="utf-8").splitlines()


# the two linked sets: the test verses, and the held-out verses that thresholds are chosen on
SETS = {"test": ("gold.links", "verses.ids", 100), "dev": ("dev.links", "dev.ids", 90)}


@pytest.mark.parametrize("name", SETS)
def test_every_gold_link_joins_two_words_of_its_verse_and_is_listed_once(name):
    gold, _, size = SETS[name]
    en, fr, links = lines(f"{name}.tok.en"), lines(f"{name}.tok.fr"), lines(gold)
    assert len(en) == len(fr) == len(links) == len(lines(f"{name}.en")) == len(lines(f"{name}.fr")) == size
    for k, (e, f, line) in enumerate(zip(en, fr, links), 1):
        sure, possible = read_gold(line, f"{gold} line {k}")
        items = line.split()
        assert len(items) == len(possible), f"line {k}: a link listed twice, or both sure and possible"
        assert sure, f"line {k} has no sure link"
        assert all(i < len(e.split()) and j < len(f.split()) for i, j in possible), f"line {k}: index past the verse"


@pytest.mark.parametrize("name", SETS)
def test_the_gold_tokens_are_what_nmtkit_makes_of_the_raw_verses(name):
    # nmtkit align on the raw files (no --tokenized) must link the very words the gold set counts.
    for lang in ("en", "fr"):
        done = CliRunner().invoke(
            main, ["tokenize", "-l", lang, "--clean", "bible", "-j", "1", "-q", str(GOLD / f"{name}.{lang}")]
        )
        assert done.exit_code == 0, done.output
        assert done.stdout.splitlines() == lines(f"{name}.tok.{lang}")


def test_the_verses_are_test_verses_of_the_embedded_corpus_split_and_the_sets_apart():
    ids, held_out = lines("verses.ids"), lines("dev.ids")
    assert ids[0] == "k-l 8:1:1" and len(set(ids)) == 100  # Ruth 1:1, King James → Segond
    assert held_out[0] == "k-l 21:1:16" and len(set(held_out)) == 90  # Ecclesiastes 1:16, next in the split
    assert not set(ids) & set(held_out)
    for verse in ids + held_out:
        pair, ref = verse.split()
        assert pair == "k-l" and split_of(int(ref.split(":")[0])) == "test"


@pytest.mark.parametrize("name", SETS)
def test_the_readme_states_the_set_as_it_is(name):
    gold, _, _ = SETS[name]
    sure = possible = words_en = words_fr = 0
    for e, f, line in zip(lines(f"{name}.tok.en"), lines(f"{name}.tok.fr"), lines(gold)):
        s, p = read_gold(line, "gold")
        sure, possible = sure + len(s), possible + len(p)
        words_en, words_fr = words_en + len(e.split()), words_fr + len(f.split())
    readme = (GOLD / "README.md").read_text(encoding="utf-8")
    stated = re.findall(
        r"(\d[\d,]*) English and (\d[\d,]*) French\s+tokens.*?(\d[\d,]*) sure and (\d[\d,]*) possible", readme, re.S
    )
    assert len(stated) == 2, "the README no longer states each set's size"
    found = stated[list(SETS).index(name)]
    assert [int(x.replace(",", "")) for x in found] == [words_en, words_fr, sure, possible - sure]


def test_the_readme_counts_the_test_set_s_unlinked_tokens_as_they_are():
    unlinked, possible_only = [0, 0], 0
    for e, f, line in zip(lines("test.tok.en"), lines("test.tok.fr"), lines("gold.links")):
        s, p = read_gold(line, "gold")  # p holds the sure links too
        unlinked[0] += sum(1 for i in range(len(e.split())) if all(i != a for a, _ in p))
        unlinked[1] += sum(1 for j in range(len(f.split())) if all(j != b for _, b in p))
        possible_only += sum(
            1 for j in range(len(f.split())) if any(j == b for _, b in p) and all(j != b for _, b in s)
        )
    said = re.search(
        r"(\d+) English and (\d+) French tokens have no link at all, and (\d+) French", (GOLD / "README.md").read_text()
    )
    assert said is not None and [int(x) for x in said.groups()] == [*unlinked, possible_only]


def test_the_gold_set_scores_itself_perfectly_and_a_diagonal_badly():
    gold = lines("gold.links")
    sure_only = [" ".join(x for x in line.split() if "-" in x) for line in gold]
    assert alignment_error(sure_only, gold)["aer"] == 0.0
    diagonal = [
        " ".join(f"{j}-{j}" for j in range(min(len(e.split()), len(f.split()))))
        for e, f in zip(lines("test.tok.en"), lines("test.tok.fr"))
    ]
    assert alignment_error(diagonal, gold)["aer"] > 50


def test_grow_diag_final_and_grows_from_the_intersection_then_adds_unaligned_pairs():
    forward, reverse = {(0, 0), (1, 1), (2, 1)}, {(0, 0), (1, 1), (2, 2)}
    assert forward & reverse == {(0, 0), (1, 1)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (2, 1), (2, 2)}  # diagonal neighbours
    # (3, 3) is no neighbour but both its words are unaligned: final-and takes it; (0, 2) joins an
    # aligned source word to an unaligned target two columns away: neither step takes it.
    assert grow_diag_final_and({(0, 0), (3, 3), (0, 2)}, {(0, 0)}) == {(0, 0), (3, 3)}
    # a neighbour whose two words are both aligned already is not added
    assert grow_diag_final_and({(0, 0), (1, 1), (0, 1)}, {(0, 0), (1, 1)}) == {(0, 0), (1, 1)}


def _koehn(forward, reverse, sources, targets):
    """grow-diag-final-and as Koehn's pseudocode (and Moses' symal) writes it: every target word,
    then every source word, over the alignment as it grows, passes until none adds a link; then
    forward's links and reverse's, in the same order."""
    union, links = forward | reverse, forward & reverse
    steps = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))  # (target, source)

    def aligned(link):
        return any(i == link[0] for i, _ in links) and any(j == link[1] for _, j in links)

    added = True
    while added:
        added = False
        for j in range(targets):
            for i in range(sources):
                for dj, di in steps if (i, j) in links else ():
                    if (i + di, j + dj) in union and (i + di, j + dj) not in links and not aligned((i + di, j + dj)):
                        links.add((i + di, j + dj))
                        added = True
    for direction in (forward, reverse):
        for j in range(targets):
            for i in range(sources):
                free = not any(a == i for a, _ in links) and not any(b == j for _, b in links)
                if (i, j) in direction and free:
                    links.add((i, j))
    return links


def test_grow_diag_final_and_takes_competing_links_in_moses_order():
    """Which of two links competing for a word joins depends on the order links are grown in:
    Moses' (target word first, a link grown in the pass it joins) takes (1, 0) here, from (2, 0),
    before (1, 1) can take source word 1 from (0, 2)."""
    forward, reverse = {(0, 2), (1, 1), (2, 0)}, {(0, 2), (1, 0), (2, 0)}
    assert grow_diag_final_and(forward, reverse) == {(0, 2), (1, 0), (1, 1), (2, 0)}
    rng = random.Random(0)
    for _ in range(3000):
        m, n = rng.randint(1, 7), rng.randint(1, 7)  # fast_align's and eflomal's: a link a target word forward,
        forward = {(rng.randrange(m), j) for j in range(n) if rng.random() < 0.85}  # a source word reverse
        reverse = {(i, rng.randrange(n)) for i in range(m) if rng.random() < 0.85}
        assert grow_diag_final_and(set(forward), set(reverse)) == _koehn(forward, reverse, m, n), (forward, reverse)


def test_the_attention_of_any_model_gives_at_most_one_link_per_gold_french_word(overfit, tmp_path):
    out = tmp_path / "links"
    done = CliRunner().invoke(
        main,
        [
            "align",
            "-m",
            str(overfit / "run" / "last.pt"),
            "--tokenized",
            "--source",
            str(GOLD / "test.tok.en"),
            "--target",
            str(GOLD / "test.tok.fr"),
            "-o",
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    fr = lines("test.tok.fr")
    found = out.read_text().splitlines()
    for line, verse in zip(found, fr):  # a word whose weight goes mostly to </s> is left unlinked
        linked = [int(x.split("-")[1]) for x in line.split()]
        assert linked == sorted(set(linked)) and set(linked) <= set(range(len(verse.split())))
    links = sum(len(line.split()) for line in found)
    assert len(found) == 100 and 0 < links <= 3194  # 3,194 French words
    done = CliRunner().invoke(main, ["score-align", str(out), "-g", str(GOLD / "gold.links")])
    assert done.exit_code == 0 and f"100 sentences; {links:,} links" in done.output


def test_bench_aer_scores_each_model_and_refuses_a_missing_one_in_a_line(overfit, tmp_path):
    script = GOLD.parent.parent / "bin" / "bench-aer"
    env = {**os.environ, "BENCH_DIR": str(tmp_path)}
    model = overfit / "run" / "last.pt"
    done = subprocess.run(
        [sys.executable, script, "--model", model, "--no-eflomal", "--threads", "1"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"\| nmtkit attention \(run/last.pt\) \| [\d,]+ \|", done.stdout)  # at most a link per French word
    results = json.loads((tmp_path / "aer.json").read_text())["results"]
    assert [r["sure"] for r in results.values()] == [2637]
    done = subprocess.run(
        [sys.executable, script, "--model", tmp_path / "none.pt", "--no-eflomal"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "none.pt" in done.stderr


def test_bench_aer_keeps_eflomal_s_links_of_a_corpus_and_aligns_a_new_one(tmp_path, monkeypatch, capsys):
    """make aer ran eflomal's minutes again on every call, with other links each time."""
    from bench import bench_aer
    from tests.test_guided_alignment import fake_eflomal

    venv = tmp_path / "venv"
    fake_eflomal(venv / "bin")
    runs = tmp_path / "runs"
    wrapped = venv / "bin" / "eflomal-align"
    wrapped.write_text(wrapped.read_text() + f"open({str(runs)!r}, 'a').write('run\\n')\n")
    monkeypatch.setattr(bench_aer, "eflomal_venv", lambda: venv)
    data, work = tmp_path / "data", tmp_path / "work"
    (data / "clean").mkdir(parents=True)
    work.mkdir()
    for lang, line in (("en", "In the beginning"), ("fr", "Au commencement")):
        (data / "clean" / f"train.{lang}").write_text(line + "\n", encoding="utf-8")
    first = bench_aer.run_eflomal(data, work)
    again = bench_aer.run_eflomal(data, work)
    assert runs.read_text() == "run\n" and again == first and "remove it to align again" in capsys.readouterr().err
    n = len(bench_aer.lines(bench_aer.GOLD / "test.tok.en"))
    assert len(first[0]) == len(first[1]) == n and first[3] == n + 1
    (data / "clean" / "train.en").write_text("In the beginning God\n", encoding="utf-8")
    bench_aer.run_eflomal(data, work)
    assert runs.read_text() == "run\nrun\n" and len(list(work.glob("eflomal-*"))) == 2


def test_bench_aer_without_a_network_is_one_line_and_leaves_no_half_made_venv(tmp_path, monkeypatch, capsys):
    """make aer offline ended in pip's CalledProcessError traceback, its venv half made."""
    from bench import bench_aer

    made = subprocess.run
    monkeypatch.setenv("BENCH_DIR", str(tmp_path))
    monkeypatch.setattr(bench_aer.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(  # the venv is made; pip, offline, fails
        bench_aer.subprocess, "run", lambda cmd, **kw: made(["false"]) if "pip" in str(cmd[0]) else made(cmd, **kw)
    )
    with pytest.raises(SystemExit) as stop:
        bench_aer.eflomal_venv()
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().startswith("bench-aer: error: could not install eflomal==2.0.0 from PyPI")
    assert not (tmp_path / "eflomal" / "venv").exists()
