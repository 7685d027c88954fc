"""Figures generated, not copied: every results table of README.md and docs/ is the rendering of
the results files it names (bench/results.py), each file says what measured it, where and when,
and a page quoting a number its file does not hold fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench import results

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_results_file_says_what_measured_it_where_and_when():
    files = sorted(results.RESULTS.glob("*.json"))
    assert files, "no results files"
    for path in files:
        result = json.loads(path.read_text(encoding="utf-8"))
        assert {"title", "command", "machine", "date", "commit", "figures"} <= result.keys(), path.name
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", result["date"]), path.name
        assert result["figures"] and all(isinstance(v, int | float) for v in result["figures"].values()), path.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_results_table_is_its_files(page):
    stale = results.stale_blocks(page.read_text(encoding="utf-8"))
    assert stale == [], f"{page.name}: the tables of {stale} are not their files': run make results"


def test_the_readme_quotes_its_figures_from_results_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert list(results.BLOCK.finditer(text)), "the README's results table is a results block"


def test_a_page_with_a_number_its_file_does_not_hold_fails(tmp_path):
    results.record("a", "A run", "make a", {"test BLEU": 17.13, "updates": 1499}, "a machine", into=tmp_path)
    page = "intro\n<!-- results: a -->\nold table\n<!-- /results -->\nend\n"
    good = results.rendered(page, tmp_path)
    assert "| A run | test BLEU: 17.13; updates: 1,499 | `make a` | a machine |" in good
    assert results.stale_blocks(good, tmp_path) == [] and results.stale_blocks(page, tmp_path) == ["a"]
    assert results.stale_blocks(good.replace("17.13", "17.31"), tmp_path) == ["a"]  # a planted wrong number
    results.record("a", "A run", "make a", {"test BLEU": 18.0, "updates": 1600}, "a machine", into=tmp_path)
    assert results.stale_blocks(good, tmp_path) == ["a"]  # a newer run supersedes the page's figure


def test_the_command_records_figures_from_json_with_the_machine_date_and_commit(tmp_path):
    (tmp_path / "score.json").write_text(json.dumps({"systems": [{"bleu": 17.126}]}))
    (tmp_path / "run.json").write_text(json.dumps({"updates": 1499, "tgt_tokens_per_s": 4865.4}))
    done = CliRunner().invoke(
        results.main,
        [
            "record",
            "demo",
            "--into",
            str(tmp_path / "results"),
            "--title",
            "The demo",
            "--command",
            "make demo",
            "--json-figure",
            f"updates={tmp_path / 'run.json'}:updates",
            "--json-figure",
            f"target tokens/s={tmp_path / 'run.json'}:tgt_tokens_per_s",
            "--json-figure",
            f"test BLEU={tmp_path / 'score.json'}:systems.0.bleu",
        ],
    )
    assert done.exit_code == 0, done.output
    made = json.loads((tmp_path / "results" / "demo.json").read_text())
    assert made["figures"] == {"updates": 1499, "target tokens/s": 4865, "test BLEU": 17.13}
    assert made["commit"] and "cores" in made["machine"] and made["command"] == "make demo"
    bad = CliRunner().invoke(results.main, ["record", "x", "--title", "t", "--command", "c", "--figure", "BLEU=high"])
    assert bad.exit_code == 2 and "LABEL=NUMBER" in bad.output


# what reads as a measured figure: a BLEU, an AER, a speed, a ratio, a share
MEASURED = re.compile(
    r"\b(?:BLEU|AER|chrF)\s+(?:of\s+)?\d|\b\d[\d,.]*\s*(?:BLEU|tokens/s|updates/s|×|%)|\b\d(?:\.\d+)?x\b", re.I
)


def quoted_figures(text: str) -> list[str]:
    """The measured-looking figures of a page outside its results blocks and code."""
    text = results.BLOCK.sub("", text)
    text = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)
    return [m.group(0) for m in MEASURED.finditer(text)]


def test_the_readme_quotes_no_measured_figure_outside_its_results_table():
    assert quoted_figures((ROOT / "README.md").read_text(encoding="utf-8")) == []
    planted = "The demo reaches test BLEU 19.1 in 20 minutes, 4-5x Marian's speed, 9% busy.\n"
    assert quoted_figures(planted) == ["BLEU 1", "5x", "9%"]  # each caught (its match kept short)


DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def undated_figures(text: str) -> list[tuple[str, list[str]]]:
    """(heading, figures) of each section quoting measured figures with no date of measurement in
    it: a page's figures are its results blocks' or a dated history's."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = []
    for section in re.split(r"(?m)^(?=#{1,4} )", text):
        if (figures := quoted_figures(section)) and not DATED.search(section):
            out.append((section.splitlines()[0], figures))
    return out


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_measured_figure_of_a_page_is_a_results_file_s_or_dated(page):
    assert undated_figures(page.read_text(encoding="utf-8")) == []


def test_an_undated_figure_is_found():
    page = "# A\nWe measured BLEU 17.1 on 2026-11-27.\n## B\nIt runs at 4,000 tokens/s.\n"
    assert undated_figures(page) == [("## B", ["4,000 tokens/s"])]
