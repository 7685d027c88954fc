"""make compare: the runs it asks for, and the table it writes from what they wrote."""

import datetime
import json
import re
import subprocess
from pathlib import Path

import torch
from click.testing import CliRunner

from bench import compare
from nmtkit.core.machine import MACHINE, describe, machine
from nmtkit.models.config import SCORES, WINDOWS
from tests.checkpoints import fake_checkpoint

ROOT = Path(__file__).resolve().parent.parent


def test_make_compare_trains_every_variant_with_the_same_budget(tmp_path):
    out = subprocess.run(
        ["make", "-n", "compare", f"CMP={tmp_path}", "COMPARE_UPDATES=77"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    trains = [line for line in out.splitlines() if " train " in line and "--save-dir" in line]
    names = [re.search(r"--save-dir \S+/(\S+)", line).group(1) for line in trains]
    assert len(names) == len(set(names)) == 14
    assert {"rnnencdec", "rnnsearch"} <= set(names)
    luong = [line for line in trains if "--arch luong" in line]
    variants = {
        (
            re.search(r"--attention (\S+)", x).group(1),
            re.search(r"--score (\S+)", x).group(1),
            "--no-input-feed" not in x,
        )
        for x in luong
    }
    assert variants == {
        (w, s, f)
        for w, s in [*(("global", s) for s in SCORES), ("local-m", "general"), ("local-p", "general")]
        for f in (True, False)
    }
    assert all(w in WINDOWS for w, _, _ in variants)
    assert all("--max-updates 77" in line and "--optimizer adam" in line for line in trains)
    assert "bench.compare" in out and "--doc" not in out  # a user's run leaves the page as it is
    recorded = subprocess.run(
        ["make", "-n", "compare", f"CMP={tmp_path}", "RESULTS_DIR=results"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert "--doc docs/luong.md" in recorded
    elsewhere = subprocess.run(
        ["make", "-n", "compare", f"CMP={tmp_path}", f"RESULTS_DIR={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    assert "--doc" not in elsewhere  # a run recorded in its own results directory leaves the page alone
    page = (ROOT / "docs" / "luong.md").read_text(encoding="utf-8")
    assert page.count(compare.BEGIN) == page.count(compare.END) == 1
    for name in names:
        assert compare.describe(name)[0] in ("RNNencdec", "RNNsearch", "Luong")


def fake_run(run: Path, bleu: float, nll: float) -> None:
    run.mkdir(parents=True)
    (run / "dev-bleu.json").write_text(json.dumps({"systems": [{"bleu": bleu, "bleu_tok": bleu + 1}]}))
    (run / "dev-nll.json").write_text(json.dumps({"corpus_nll": {"nll": nll, "perplexity": 9.5}}))
    fake_checkpoint(run / "last.pt", step=500, seconds=120.0, weights={"w": torch.zeros(1000, 1000)})
    (run / MACHINE).write_text(json.dumps(machine()))


def test_the_table_goes_into_the_docs_block_and_a_missing_result_is_an_error(tmp_path):
    fake_run(tmp_path / "rnnsearch", 12.345, 80.0)
    fake_run(tmp_path / "luong_local-p_general_nofeed", 11.0, 82.5)
    doc = tmp_path / "luong.md"
    doc.write_text(f"intro\n{compare.BEGIN}\nold\n{compare.END}\nrest\n", encoding="utf-8")
    r = CliRunner().invoke(
        compare.main, [str(tmp_path), "rnnsearch", "luong_local-p_general_nofeed", "--doc", str(doc)]
    )
    assert r.exit_code == 0, r.output
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith(f"{compare.END}\nrest\n") and "old" not in text
    assert "| RNNsearch | additive | concat | – | 1.0 | 2.0 | 80.00 | 9.50 | 12.35 | 13.35 |" in text
    assert "| Luong | local-p | general | no |" in text
    assert f"trained on {describe(machine())}, the last ending {datetime.date.today().isoformat()}" in text
    assert (tmp_path / "table.md").read_text(encoding="utf-8") in text
    (tmp_path / "rnnsearch" / "dev-nll.json").unlink()
    r = CliRunner().invoke(compare.main, [str(tmp_path), "rnnsearch"])
    assert r.exit_code == 2 and "dev-nll.json: missing" in r.output


def test_a_variant_outside_compare_models_still_has_a_recipe(tmp_path):
    """Its done stamp depends on options whose rule only the listed variants had: 'No rule to make target'."""
    out = subprocess.run(
        ["make", "-n", "INSTALLED=", f"CMP={tmp_path}", f"{tmp_path}/luong_local-p_dot_feed/done"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "--attention local-p --score dot --input-feed" in out.stdout and "train-options" in out.stdout
