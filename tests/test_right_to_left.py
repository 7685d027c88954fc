"""train --right-to-left: a model that writes each translation from its last unit to its first,
trained on its targets turned around (their word links with them), whose translations, scores,
token scores and attention come out in reading order as a left-to-right model's do; what it cannot
do (a forced prefix, an ensemble with a left-to-right model) refused in one line."""

import json
import math
import re

import numpy as np
import pytest
import torch

from nmtkit.data.batching import collate
from nmtkit.data.target_order import mirrored_links, reading_order
from nmtkit.data.vocab import BOS, EOS, PAD
from tests.conftest import EN, FR, TINY_RNNSEARCH, by_heart, write_pair
from tests.test_rescore import CPU, run


@pytest.fixture(scope="module")
def r2l(tmp_path_factory):
    """A right-to-left model that has learned the six training pairs by heart, validated with
    dev BLEU on them."""
    from nmtkit.models.config import model_config
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.loop import train
    from tests.test_corpus import make_corpus

    tmp = tmp_path_factory.mktemp("r2l")
    for split in ("train", "valid", "test"):
        write_pair(tmp / "raw" / split, EN, FR)
    make_corpus(tmp / "raw", tmp)
    config = by_heart(valid_every=250, log_every=TrainConfig.log_every)
    train(tmp / "bin", tmp / "run", model_config(**TINY_RNNSEARCH, right_to_left=True), config)
    return tmp


def test_batches_hold_each_target_turned_around_and_its_links_mirrored():
    src = [np.array([5, 6, 7]), np.array([8])]
    tgt = [np.array([10, 11, 12], dtype=np.int32), np.array([13, 14])]
    links = [np.array([0, 0, 2, 1]), np.array([0, 1])]  # s-t pairs: 0-0 2-1; 0-1
    ahead = collate(src, tgt, np.array([0, 1]), links=links)
    back = collate(src, tgt, np.array([0, 1]), links=links, right_to_left=True)
    assert torch.equal(back["src"], ahead["src"])
    assert back["tgt_out"].tolist() == [[12, 11, 10, EOS], [14, 13, EOS, PAD]]
    assert back["tgt_in"].tolist() == [[BOS, 12, 11, 10], [BOS, 14, 13, PAD]]
    # target word t of n is the model's position n - 1 - t; </s> stays linked with </s>
    assert back["guide"][0, 2, 0] == 1 and back["guide"][0, 1, 2] == 1 and back["guide"][0, 3, 3] == 1
    assert back["guide"][0, 0].sum() == 0  # the last word, the model's first, has no link
    assert back["guide"][1, 0, 0] == 1 and back["guide"][1, 1].sum() == 0
    assert torch.equal(back["guide"][0, :3].flip(0), ahead["guide"][0, :3])
    assert mirrored_links(np.array([3, 0, 1, 4]), 5).tolist() == [3, 4, 1, 0]
    empty = collate(src, [np.array([], dtype=np.int64)] * 2, np.array([0, 1]), right_to_left=True)
    assert empty["tgt_out"].tolist() == [[EOS], [EOS]]


def test_reading_order_keeps_the_end_of_sentence_entry_last():
    assert reading_order(["c", "b", "a", "</s>"], 3, True) == ["a", "b", "c", "</s>"]
    assert reading_order(["a", "b", "</s>"], 2, False) == ["a", "b", "</s>"]


def test_the_model_translates_in_reading_order_and_validates_so(r2l, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in EN[:5]), encoding="utf-8")
    done = run("translate", "-m", r2l / "run" / "last.pt", source, "-q", *CPU)
    assert done.exit_code == 0, done.output
    # Moses' French detokenizer writes French typography ("vide : il"), Segond "vide: il"
    assert [re.sub(r" ([:;!?])", r"\1", line) for line in done.stdout.splitlines()] == FR[:5]
    logged = [json.loads(line) for line in (r2l / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [e["dev_bleu_tok"] for e in logged if "dev_bleu_tok" in e][-1] == pytest.approx(100.0)
    info = run("info", r2l / "run" / "last.pt")
    assert "; right to left;" in info.stdout.splitlines()[1]


def test_constraints_are_placed_in_reading_order(r2l, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in EN[:3]), encoding="utf-8")
    terms = ["les ténèbres", "la lumière fut\tDieu", "Au commencement"]
    (tmp_path / "terms.fr").write_text("".join(f"{line}\n" for line in terms), encoding="utf-8")
    done = run("translate", "-m", r2l / "run" / "last.pt", source, "--constraints", tmp_path / "terms.fr", *CPU)
    assert done.exit_code == 0, done.output
    for line, must in zip(done.stdout.splitlines(), terms, strict=True):
        assert all(phrase in line for phrase in must.split("\t")), (line, must)


def test_scores_and_attention_come_back_in_reading_order_and_forcing_agrees(r2l, tmp_path):
    from nmtkit.data.batching import pad
    from nmtkit.translate.search import force, log_probs
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints([r2l / "run" / "last.pt"], "cpu")
    source = tmp_path / "in.en"
    source.write_text(f"{EN[3]}\n", encoding="utf-8")
    done = run(
        "translate", "-m", r2l / "run" / "last.pt", source, "--output-format", "jsonl", "--token-scores",
        "--alignments", tmp_path / "a.jsonl", "--tokenized", "--beam", 2, "-q", *CPU,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    got = json.loads(done.stdout)
    forced = translator.force([EN[3]], [got["text"]], tokenized=True)[0]
    assert forced.target_tokens == got["tokens"]
    assert math.isclose(forced.score, got["score"], abs_tol=1e-4)
    assert forced.token_scores == pytest.approx(got["token_scores"], abs=1e-4)  # with its attention
    alone = translator.force([EN[3]], [got["text"]], tokenized=True, aligned=False)[0]
    assert alone.token_scores == pytest.approx(got["token_scores"], abs=1e-4)
    assert translator.force([EN[3]], [got["text"]], tokenized=True, scored=False)[0].token_scores is None
    # the model's own walk along the reversed units: its first step scores the last unit
    sides = translator.sides
    ids = sides.tgt.ids(got["tokens"])[::-1]
    src = pad([np.asarray(sides.src.ids(forced.source_tokens))])
    with torch.inference_mode():
        enc = translator.model.encode(src, src != PAD)
        total, _, maps = force(translator.model, enc, pad([np.asarray(ids)]))
        each = log_probs(translator.model, enc, pad([np.asarray(ids)]))[1][0].tolist()
    walked = maps[0].numpy()
    n = len(ids)
    assert got["token_scores"] == pytest.approx([*each[:n][::-1], each[n]], abs=1e-4)
    assert np.allclose(forced.attention[:n], walked[:n][::-1], atol=1e-5)
    assert np.allclose(forced.attention[n], walked[n], atol=1e-5)
    written = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[1])  # after the header
    assert np.allclose(np.array(written["alignment"]), forced.attention, atol=1e-4)
    assert float(total[0]) == pytest.approx(got["score"], abs=1e-4)


def test_what_a_right_to_left_model_cannot_do_is_refused_in_one_line(r2l, overfit, tmp_path):
    source = tmp_path / "in.en"
    source.write_text(f"{EN[0]}\n", encoding="utf-8")
    prefix = tmp_path / "p.fr"
    prefix.write_text("Au\n", encoding="utf-8")
    done = run("translate", "-m", r2l / "run" / "last.pt", source, "--prefix", prefix, *CPU)
    assert done.exit_code == 2 and "writes right to left" in done.stderr and "Traceback" not in done.output
    both = run("translate", "-m", overfit / "run" / "last.pt", "-m", r2l / "run" / "last.pt", source, *CPU)
    assert both.exit_code == 2 and "cannot ensemble" in both.stderr and "right to left" in both.stderr


def test_serve_places_a_right_to_left_models_phrases_and_refuses_it_prefixes(r2l):
    from nmtkit.serve.settings import ServerConfig
    from nmtkit.translate.translator import Translator
    from tests.test_serve import _post, in_process

    with in_process(Translator.from_checkpoints(r2l / "run" / "last.pt", "cpu"), ServerConfig()) as url:
        status, body = _post(url + "/translate", {"sentences": EN[:1], "constraints": [["la lumière fut", "Dieu"]]})
        assert status == 200 and all(p in body["translations"][0]["text"] for p in ("la lumière fut", "Dieu")), body
        status, body = _post(url + "/translate", {"sentences": EN[:2], "prefixes": ["", "Au"]})
        assert status == 422 and "right to left" in body["error"], body
        assert _post(url + "/translate", {"sentences": EN[:2], "prefixes": ["", " "]})[0] == 200  # forcing nothing


def test_bench_rerank_takes_a_right_to_left_models_scores_as_a_feature(r2l, overfit, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    write_pair(tmp_path / "data" / "raw" / "valid", EN[:4], FR[:4])
    write_pair(tmp_path / "data" / "raw" / "test", EN[2:6], FR[2:6])
    script = Path(__file__).parent.parent / "bin" / "bench-rerank"
    models = ["--forward", overfit / "run" / "last.pt", "--right-to-left", r2l / "run" / "last.pt"]
    cmd = [sys.executable, script, *models, "--data", tmp_path / "data", "--nbest", 3, "--threads", 1]
    done = subprocess.run(
        list(map(str, cmd)), env={**os.environ, "BENCH_DIR": str(tmp_path)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "rerank" / "rerank.json").read_text())
    assert list(result["systems"])[2].startswith("reranked: right-to-left model and length (r2l= ")
    first, length, both = result["systems"].values()
    assert first["weights"] == "F0= 1" and "r2l" not in length["weights"] and "r2l= " in both["weights"]
    assert both["valid_bleu"] >= length["valid_bleu"]
    listed = (tmp_path / "rerank" / "test.r2l.nbest").read_text().splitlines()
    assert len(listed) == 12 and all(" r2l= -" in line or " r2l= 0" in line for line in listed)
    alone = subprocess.run(list(map(str, cmd[:4] + cmd[6:])), capture_output=True, text=True)
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1 and "--right-to-left" in alone.stderr


def test_luong_local_m_looks_from_the_sentences_end_for_a_right_to_left_model():
    from nmtkit.models.attention import LuongAttention
    from nmtkit.models.build import build_model
    from nmtkit.models.config import LuongConfig

    mask = torch.tensor([[True] * 5 + [False] * 2])
    t = torch.tensor([[0, 1, 4, 7]])
    q = torch.zeros(1, 4, 8)
    ahead = LuongAttention("general", "local-m", 8, 8, 50, 2)
    back = LuongAttention("general", "local-m", 8, 8, 50, 2, mirrored=True)
    assert ahead.centre(q, t, mask).tolist() == [[0, 1, 4, 4]]
    assert back.centre(q, t, mask).tolist() == [[3, 2, 0, 0]]  # 4 words, then </s> at 4
    model = build_model(LuongConfig(src_vocab=10, tgt_vocab=10, emb=8, hidden=8, align=8, right_to_left=True))
    assert model.attention.mirrored
