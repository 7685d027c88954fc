"""make demo-self-training: what each round trains, from what and on which links (make -n)."""

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def planned(tmp_path: Path, *args: str) -> list[list[str]]:
    out = subprocess.run(
        ["make", "-n", "demo-self-training", f"RUNS={tmp_path}/runs", f"DATA={tmp_path}/data", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [shlex.split(line.split("#")[0]) for line in out.replace("\\\n", " ").splitlines() if line.strip()]


def value(words: list[str], flag: str) -> list[str]:
    return [words[k + 1] for k, w in enumerate(words) if w == flag]


def test_each_round_trains_both_heads_from_the_round_before_on_its_links(tmp_path):
    lines = planned(tmp_path, "SELF_ROUNDS=0 1 2", "ROUND_EVERY=3", "HEAD_UPDATES=9")
    runs, data = f"{tmp_path}/runs", f"{tmp_path}/data"
    heads = {
        Path(value(w, "--save-dir")[0]).name: (w[w.index("train") + 1], value(w, "--init-from")[0])
        for w in lines
        if "--head-only" in w
    }
    assert set(heads) == {f"round{r}-{d}" for r in range(3) for d in ("en-fr", "fr-en")}
    bins = {name: re.sub(r"data-bin-[^-/]+", "data-bin", b) for name, (b, _) in heads.items()}
    # round 0: demo-aligners' pair on eflomal's links; round r: round r-1's pair on its own links
    assert heads["round0-en-fr"][1] == f"{runs}/demo-guided/best.pt"
    assert heads["round0-fr-en"][1] == f"{runs}/demo-guided-fr-en/best.pt"
    assert bins["round0-en-fr"] == f"{data}/data-bin-links" and bins["round0-fr-en"] == f"{data}/data-bin-links-fr-en"
    for r in (1, 2):
        for d in ("en-fr", "fr-en"):
            assert heads[f"round{r}-{d}"][1] == f"{runs}/aligners/round{r - 1}-{d}/best.pt"
        assert bins[f"round{r}-en-fr"] == f"{data}/data-bin-round{r}"
        assert bins[f"round{r}-fr-en"] == f"{data}/data-bin-round{r}-fr-en"
    assert all(value(w, "--max-updates") == ["9"] for w in lines if "--head-only" in w)

    aligns = [w for w in lines if "align" in w and "--tokenized" in w]
    assert [value(w, "-o")[0] for w in aligns] == [f"{runs}/aligners/round{r}-links/train.links" for r in (1, 2)]
    for r, w in zip((1, 2), aligns):
        models = value(w, "-m")
        assert models == [f"{runs}/aligners/round{r - 1}-{d}/best.pt" for d in ("en-fr", "fr-en")]
        assert value(w, "--source") == [f"{runs}/aligners/pairs-every3/train.en"] and "-j" in w
    assert any("1~3p" in w for w in lines)  # every third pair is aligned
    # each round's links combined as the held-out verses chose for the pair before it
    assert [value(w, "--combine") for w in aligns] == [["soft"], ["grow-diag-final-and"]]
    bench = next(w for w in lines if "bin/bench-aer" in w)
    assert value(bench, "--pair") == [f"{runs}/aligners/round{r}-en-fr/best.pt" for r in range(3)]
