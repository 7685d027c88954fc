"""bin/bench-glossary: names mined from the training pairs (ties between the names of a list
broken by spelling), then the test verses translated with and without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.bench_glossary import mine, names
from tests.conftest import EN, FR, write_pair


def test_names_are_mined_by_their_pairs_and_a_list_of_them_by_their_spelling():
    assert names("And Naomi said to Ruth, Go.") == {"Naomi", "Ruth", "Go"}  # not the first word
    english = ["And Naomi and Ruth went", "Then Naomi wept", "So Ruth and Naomi came", "and Orpah left"] * 2
    french = ["Et Noémi et Ruth allèrent", "Puis Noémi pleura", "Alors Ruth et Noémi vinrent", "et Orpa partit"] * 2
    assert mine(english, french, 2, 0.7) == [("Naomi", "Noémi"), ("Orpah", "Orpa"), ("Ruth", "Ruth")]
    assert mine(english, french, 3, 0.7) == [("Naomi", "Noémi"), ("Ruth", "Ruth")]  # Orpah: in two pairs


def test_bench_glossary_holds_every_name_found_with_the_glossary(overfit, tmp_path):
    for split in ("train", "test"):
        write_pair(tmp_path / "data" / "raw" / split, EN, FR)
    script = Path(__file__).parent.parent / "bin" / "bench-glossary"
    cmd = [sys.executable, script, "--model", overfit / "run" / "last.pt", "--data", tmp_path / "data"]
    cmd += ["--beams", "2", "--min-count", "1", "--threads", "1"]
    env = {**os.environ, "BENCH_DIR": str(tmp_path)}
    done = subprocess.run(list(map(str, cmd)), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "glossary" / "glossary.json").read_text())
    # the six verses' one pair of capitalized words, neither a verse's first, spelt alike: "Let there be
    # light" beside "... soit! Et la lumière fut" (L’Esprit begins its verse)
    assert (tmp_path / "glossary" / "names.tsv").read_text() == "Let\tEt\n"
    free, given = result["rows"]
    assert not free["glossary"] and given["glossary"] and given["held"] == 1.0 and result["terms"] >= 1
    assert "| 2 | yes |" in done.stdout
    done = subprocess.run(list(map(str, [*cmd, "--min-dice", "1.01"])), env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "no name passes" in done.stderr
