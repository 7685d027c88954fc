"""nmtkit align with the models of both directions (-m en-fr.pt -m fr-en.pt): one line of links per
line pair, empty lines included, each link inside its pair's words, combined as --combine says;
models of another language pair are refused in one line, exit 2."""

import subprocess
import sys

import pytest
import torch

from nmtkit.align.combine import LinkConfig
from nmtkit.align.links import read_pharaoh
from nmtkit.data.reverse import reverse_corpus
from nmtkit.text.tokenize import MosesText
from nmtkit.translate.forced import align_file
from tests.conftest import EN, FR, TINY_RNNSEARCH


@pytest.fixture(scope="module")
def backward(overfit, tmp_path_factory):
    """A French→English model of the overfit model's corpus, trained briefly: its links need not
    be good, only of the other direction."""
    from nmtkit.models.config import model_config
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.loop import train

    tmp = tmp_path_factory.mktemp("backward")
    reverse_corpus(overfit / "bin-kept", tmp / "bin")
    config = TrainConfig(optimizer="adam", lr=0.02, batch_size=6, pool=1, max_updates=40, valid_every=1000, threads=1)
    train(tmp / "bin", tmp / "run", model_config(**TINY_RNNSEARCH), config)
    return tmp / "run" / "last.pt"


def test_both_directions_write_one_line_of_links_per_pair(overfit, backward, tmp_path):
    forward = overfit / "run" / "last.pt"
    (tmp_path / "s.en").write_text(f"{EN[0]}\n\n{EN[2]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n\n{FR[2]}\n", encoding="utf-8")
    out = {}
    for combine in ("grow-diag-final-and", "soft"):
        out[combine] = tmp_path / f"{combine}.links"
        n = align_file(
            [str(forward), str(backward)],
            str(tmp_path / "s.en"),
            str(tmp_path / "s.fr"),
            str(out[combine]),
            False,
            links=LinkConfig(combine=combine, threshold=0.05),
        )
        lines = out[combine].read_text(encoding="utf-8").splitlines()
        assert n == len(lines) == 3 and lines[1] == ""
        for k, (en, fr) in enumerate(((EN[0], FR[0]), (EN[2], FR[2]))):
            n_src, n_tgt = len(MosesText("en").tokenize(en)), len(MosesText("fr").tokenize(fr))
            pairs = read_pharaoh(lines[2 * k], "here")
            assert pairs and all(i < n_src and j < n_tgt for i, j in pairs)
    single = tmp_path / "one.links"
    align_file([str(forward)], str(tmp_path / "s.en"), str(tmp_path / "s.fr"), str(single), False)
    assert len(single.read_text(encoding="utf-8").splitlines()) == 3


def test_models_of_another_language_pair_get_one_line_and_exit_2(overfit, backward, tmp_path):
    forward = overfit / "run" / "last.pt"
    raw = torch.load(forward, weights_only=True)
    raw["text"]["langs"] = {"src": "en", "tgt": "de"}
    torch.save(raw, tmp_path / "en-de.pt")
    (tmp_path / "s.en").write_text(f"{EN[0]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n", encoding="utf-8")
    for models in ([forward, tmp_path / "en-de.pt"], [backward, forward, tmp_path / "en-de.pt"]):
        cmd = [sys.executable, "-m", "nmtkit", "align", "--source", tmp_path / "s.en", "--target", tmp_path / "s.fr"]
        done = subprocess.run(
            [*map(str, cmd), *(x for m in models for x in ("-m", str(m))), "-o", str(tmp_path / "out")],
            capture_output=True,
            text=True,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "en-de.pt translates en→de" in lines[0] and "one language pair" in lines[0]
        assert not (tmp_path / "out").exists()
