"""The README is a front door and docs/ holds the rest: short, no pictures, links that resolve,
every page in the site's navigation, and no page that speaks of who measured."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_the_readme_is_short_has_no_pictures_and_starts_the_own_data_pipeline_early():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    assert not any(re.search(r"!\[[^\]]*\]\(", line) for line in lines), "images belong on docs pages"
    start = next(i for i, line in enumerate(lines, 1) if line.startswith("## ") and "own data" in line)
    assert start <= 100
    assert "pip install nmtkit" not in "\n".join(lines)


def test_docs_pages_link_only_to_each_other_and_to_what_exists():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        assert "shared/" not in text, page
        for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if link.startswith(("http://", "https://")):
                continue
            assert not link.startswith("../"), f"{page.name}: {link} leaves docs/"
            assert (DOCS / link).exists(), f"{page.name}: {link}"


def test_every_page_is_in_the_site_navigation():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)

    def files(nav):
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            yield from (files(value) if isinstance(value, list) else [value])

    assert sorted(files(config["nav"])) == [p.name for p in pages()]


def test_no_page_speaks_of_who_measured():
    phrases = (
        "on this machine",
        "this machine's",
        "my reading",
        "we measured",
        "it was developed on",
        "on this cpu",
        "this amd cpu",
    )
    for path in [ROOT / "README.md", *pages()]:
        text = path.read_text(encoding="utf-8").lower()
        for phrase in phrases:
            assert phrase not in text, f"{path.name}: '{phrase}'"


def test_the_tables_recipes_write_have_their_markers_on_the_docs_pages():
    luong = (DOCS / "luong.md").read_text(encoding="utf-8")
    assert luong.count("<!-- compare:begin -->") == luong.count("<!-- compare:end -->") == 1
    cpu = (DOCS / "cpu-training.md").read_text(encoding="utf-8")
    assert cpu.count("<!-- trials:begin -->") == cpu.count("<!-- trials:end -->") == 1


@pytest.mark.slow
def test_the_library_page_s_examples_run_as_written(corpus, tmp_path):
    """docs/api.md's Python blocks, one after the other in one process, in a folder whose
    data-bin is the test corpus: an example that no longer matches the library fails here."""
    import os
    import subprocess
    import sys

    text = (DOCS / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert len(blocks) >= 2, "docs/api.md has lost its examples"
    work = tmp_path / "work"
    work.mkdir()
    (work / "data-bin").symlink_to(corpus, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}  # the example names the CPU
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)], cwd=work, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["en", "fr"]
    assert lines[1].startswith("rnnsearch ") and lines[1].endswith(" 20")  # the checkpoint's arch, step
    assert len(lines) == 5 and (work / "runs" / "api" / "best.pt").exists()
    assert len(lines[3].split()) >= 2 and lines[3].startswith("(")  # the attention's shape, then its links


def test_every_setting_of_the_makefile_is_on_its_page():
    """A researcher read settings such as PAPER_BEAM or COMPARE_MODELS only in the Makefile's comments."""
    settings = set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*\?=", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    page = (DOCS / "make.md").read_text(encoding="utf-8")
    assert len(settings) > 50 and sorted(s for s in settings if f"`{s}`" not in page) == []
