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
