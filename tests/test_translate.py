"""translate and score from the shell: raw text in, raw text out, with only a checkpoint."""

import re
import shutil

import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.config import ModelConfig, TrainConfig
from nmtkit.train import train
from tests.conftest import EN, FR
from tests.test_corpus import make_corpus

TINY = ModelConfig(emb=24, hidden=24, align=24, maxout=24)


@pytest.fixture(scope="module")
def overfit(tmp_path_factory):
    """A model that has learned the six training pairs by heart; its corpus is then deleted."""
    from tests.conftest import write_pair
    tmp = tmp_path_factory.mktemp("overfit")
    raw = tmp / "raw"
    for split in ("train", "valid", "test"):
        write_pair(raw / split, EN, FR)
    make_corpus(raw, tmp)
    train(tmp / "bin", tmp / "run", TINY, TrainConfig(optimizer="adam", lr=0.02, batch_size=6, pool=1,
                                                      max_updates=250, valid_every=1000, threads=1,
                                                      patience=0, log_every=50))
    shutil.rmtree(tmp / "bin")
    shutil.rmtree(tmp / "vocab")
    return tmp


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_learned_sentences_come_back_detokenized(overfit):
    (overfit / "in.en").write_text("\n".join(EN[:5]) + "\n\n" + EN[0] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", overfit / "run" / "last.pt", overfit / "in.en", "-o", overfit / "out.fr")
    assert r.exit_code == 0, r.output
    out = (overfit / "out.fr").read_text(encoding="utf-8").split("\n")
    # Moses' French detokenizer writes French typography ("vide : il"); Segond writes "vide: il"
    out = [re.sub(r" ([:;!?])", r"\1", line) for line in out]
    assert out[:5] == FR[:5]
    assert out[5] == "" and out[6] == FR[0]     # empty line stays empty; order is kept
    r = invoke("score", overfit / "out.fr", "-r", overfit / "out.fr", "--json")
    assert r.exit_code == 0 and '"bleu": 100.0' in r.output


def test_stdin_to_stdout_and_greedy(overfit):
    r = CliRunner().invoke(main, ["translate", "-m", str(overfit / "run" / "last.pt"), "--beam", "1"],
                           input=EN[2] + "\n")
    assert r.exit_code == 0, r.output
    assert r.stdout == "Dieu dit : Que la lumière soit ! Et la lumière fut.\n"   # French typography


@pytest.mark.parametrize("content,message", [(b"", "is empty"), (b"ok\n\xff\xfe bad\n", "line 2 is not valid UTF-8")])
def test_bad_input_fails_cleanly_and_writes_nothing(overfit, tmp_path, content, message):
    (tmp_path / "in.en").write_bytes(content)
    r = invoke("translate", "-m", overfit / "run" / "last.pt", tmp_path / "in.en", "-o", tmp_path / "out.fr")
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out.fr").exists() and list(tmp_path.iterdir()) == [tmp_path / "in.en"]


def test_missing_or_corrupt_checkpoint(tmp_path):
    (tmp_path / "in.en").write_text("Amen.\n")
    r = invoke("translate", "-m", tmp_path / "none.pt", tmp_path / "in.en")
    assert r.exit_code == 2 and "no such checkpoint" in r.output
    (tmp_path / "bad.pt").write_bytes(b"PK\x03\x04 not really")
    r = invoke("translate", "-m", tmp_path / "bad.pt", tmp_path / "in.en")
    assert r.exit_code == 2 and "corrupt" in r.output


def test_score_several_references_and_mismatched_lengths(tmp_path):
    a, b = "Au commencement Dieu créa les cieux et la terre", "Dieu vit que la lumière était bonne"
    (tmp_path / "hyp").write_text(f"{a}\n{b}\n")
    (tmp_path / "r1").write_text(f"(1:1) {a}\nEt Dieu vit que la lumière fut\n")
    (tmp_path / "r2").write_text(f"Au commencement Dieu créa\n{b}\n")
    one = invoke("score", tmp_path / "hyp", "-r", tmp_path / "r1", "--json")
    cleaned = invoke("score", tmp_path / "hyp", "-r", tmp_path / "r1", "--clean", "verse-markers", "--json")
    both = invoke("score", tmp_path / "hyp", "-r", tmp_path / "r1", "-r", tmp_path / "r2", "--json",
                  "--clean", "verse-markers")
    import json
    b1, bc, b2 = (json.loads(r.output)["bleu"] for r in (one, cleaned, both))
    assert 0 < b1 < bc < b2 == pytest.approx(100)   # each line now has an exact reference
    (tmp_path / "short").write_text("la lumière fut\n")
    r = invoke("score", tmp_path / "hyp", "-r", tmp_path / "short")
    assert r.exit_code == 2 and "has 1 lines but" in r.output
