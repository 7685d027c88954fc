"""make bench runs from a clone: the peer scripts it calls are in the repository."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_peer_script_the_benchmarks_call_is_here_and_runs_through_bash():
    peers = ROOT / "bench" / "peers"
    called = set()
    for script in ("bench-train", "bench-translate"):
        text = (ROOT / "bin" / script).read_text(encoding="utf-8")
        called |= set(re.findall(r'"([a-z_]+\.(?:sh|py|yaml))"', text))
    assert {"install.sh", "prep_data.py", "run_fairseq.sh", "run_joeynmt.sh"} <= called
    for name in called:
        found = list(peers.rglob(name))
        assert found, f"bench/peers has no {name}"
    for sh in peers.glob("*.sh"):
        assert subprocess.run(["bash", "-n", str(sh)]).returncode == 0, sh  # parses
    for path in [*peers.rglob("*"), ROOT / "bin" / "bench-train", ROOT / "bin" / "bench-translate"]:
        if path.is_file():
            assert "shared/" not in path.read_text(encoding="utf-8"), path


def test_the_readme_never_points_outside_the_repository():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../" not in text and "shared/" not in text
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


def test_the_command_line_bench_times_every_command_and_completion():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "bench-cli"), "--runs", "1"], capture_output=True, text=True, check=True
    ).stdout
    from nmtkit.cli import main

    for name in main.commands:
        assert f"| `nmtkit {name} --help` |" in out
    assert "completion of 'nmtkit translate --be<TAB>'" in out and "target under 0.5 s" in out
