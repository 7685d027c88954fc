"""docs/structure.md's import graph is the code's."""

from pathlib import Path

from bench.structure import BEGIN, END, LAYERS, graph, mermaid, stage_of

ROOT = Path(__file__).resolve().parent.parent


def test_the_documented_graph_is_the_code_s():
    doc = (ROOT / "docs" / "structure.md").read_text(encoding="utf-8")
    block = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == mermaid(graph(ROOT / "nmtkit")), "the code's imports changed: run make structure"


def test_every_stage_and_layer_is_documented():
    doc = (ROOT / "docs" / "structure.md").read_text(encoding="utf-8")
    stages = {stage_of(m) for m in graph(ROOT / "nmtkit")}
    for row in LAYERS:
        for stage in row:
            if stage in stages and stage not in ("nmtkit", "__main__"):
                assert f"`{stage}`" in doc, f"docs/structure.md does not describe the {stage} stage"


def test_settings_modules_form_their_own_layer():
    assert stage_of("nmtkit.train.config") == stage_of("nmtkit.models.config") == "settings"
    assert stage_of("nmtkit.core.settings") == "core" and stage_of("nmtkit.train.loop") == "train"


def test_the_table_of_stages_names_every_module_once_in_its_stage_with_its_count():
    import re

    doc = (ROOT / "docs" / "structure.md").read_text(encoding="utf-8")
    table = doc[doc.index("| stage | what it holds |") :].split("\n\n")[0].splitlines()[2:]
    listed: dict[str, str] = {}
    for row in table:
        stage, holds, count = (cell.strip() for cell in row.strip("|").split("|"))
        names = [n for n in re.findall(r"`([^`]+)`", holds) if "/" in n or n == "__main__"]
        assert len(names) == int(count), f"{stage}: {count} modules said, {len(names)} named"
        for name in names:
            assert name not in listed, f"{name} is named twice"
            listed[name] = stage.strip("`")
    modules = {
        str(p.relative_to(ROOT / "nmtkit").with_suffix(""))
        for p in (ROOT / "nmtkit").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert set(listed) == modules, f"missing: {sorted(modules - set(listed))}; gone: {sorted(set(listed) - modules)}"
    total = re.search(r"`find nmtkit -name '\*\.py' ! -name __init__\.py` \((\d+)\)", doc)
    assert total and int(total.group(1)) == len(modules), "the page's count of modules is not the code's"
    for name, stage in listed.items():
        module = "nmtkit." + name.replace("/", ".")
        assert stage == ("__main__" if name == "__main__" else stage_of(module)), (name, stage)
