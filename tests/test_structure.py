"""docs/structure.md's import graph is the code's."""

from pathlib import Path

from nmtkit.recipes.structure import BEGIN, END, graph, layers, mermaid

ROOT = Path(__file__).resolve().parent.parent


def test_the_documented_graph_is_the_code_s():
    doc = (ROOT / "docs" / "structure.md").read_text(encoding="utf-8")
    block = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == mermaid(graph(ROOT / "nmtkit")), "the code's imports changed: run make structure"


def test_layers_put_every_module_above_what_it_imports():
    edges = graph(ROOT / "nmtkit")
    rows = layers(edges)
    assert edges["checkpoint"].get("config") == "top" and "cli" not in {t for ts in edges.values() for t in ts}
    for source, targets in edges.items():
        for target, kind in targets.items():
            if kind == "top" and source not in edges[target]:
                assert rows[source] > rows[target], (source, target)
    assert edges["score"].get("models") is None         # scoring text needs no model code
