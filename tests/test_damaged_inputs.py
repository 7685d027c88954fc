"""Inputs an option, an edit or a damaged file made impossible, found by a fuzz of every command's
user errors: each is one line and status 2, where each was a traceback, subword-nmt's own exit, or
a run without end."""

from __future__ import annotations

import asyncio
import copy

import pytest
import torch
from click.testing import CliRunner

from nmtkit.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _one_line(r, *said: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.output.count("error:") == 1, r.output
    for part in said:
        assert part in r.output, r.output


@pytest.mark.parametrize(
    "where, key, value, said",
    [
        ("model", "emb", -5, "its model settings build no model (Trying to create tensor with negative dimension"),
        ("model", "emb", "big", "its emb is 'big', not a whole number: an edited or damaged file"),
        ("training", "lr", "fast", "its lr is 'fast', not a number: an edited or damaged file"),
    ],
)
def test_an_edited_checkpoint_is_one_line(overfit, tmp_path, where, key, value, said):
    raw = torch.load(overfit / "run" / "best.pt", weights_only=True)
    edited = copy.deepcopy(raw)
    assert key in edited[where]["config"]
    edited[where]["config"][key] = value
    torch.save(edited, tmp_path / "edited.pt")
    (tmp_path / "in.en").write_text("in the beginning\n", encoding="utf-8")
    r = run("translate", "-m", tmp_path / "edited.pt", tmp_path / "in.en", "-o", tmp_path / "out.fr")
    _one_line(r, said)
    assert not (tmp_path / "out.fr").exists()


def test_a_checkpoints_damaged_bpe_codes_are_one_line_not_subword_nmts_exit():
    from nmtkit.core.errors import UserError
    from nmtkit.text.bpe import Segmenter

    assert Segmenter("#version: 0.2\ne s\nes t\n").segment(["test"])  # sound codes segment
    with pytest.raises(UserError, match=r"the BPE codes it carries are damaged \(line 2: 'garbage' is not a merge\)"):
        Segmenter("e s\ngarbage\n")


def test_an_array_an_option_sized_past_memory_is_refused_by_its_bound(tmp_path):
    """--bootstrap 9999999999 asked numpy for 7.28 TiB: its MemoryError was a traceback (numpy's
    is kept as a defect's, test_cli: no option sizes an array past memory)."""
    hyp = tmp_path / "h.fr"
    hyp.write_text("".join(f"line {i}\n" for i in range(20)), encoding="utf-8")
    _one_line(run("score", hyp, hyp, "-r", hyp, "--bootstrap", "99999999999999999999"), "--bootstrap")


def test_a_lexicon_lists_no_more_translations_than_the_target_words():
    from nmtkit.data.lexicon import build_lexicon

    src = [torch.tensor([4, 5]).numpy(), torch.tensor([5, 6]).numpy()]
    tgt = [torch.tensor([4, 7]).numpy(), torch.tensor([7, 8]).numpy()]
    lexicon = build_lexicon(src, tgt, 9, 10, 2, 99_999_999_999)  # np.zeros of 1.77 PiB
    assert lexicon.table.shape == (9, 10)


def test_workers_have_a_bound():
    r = CliRunner().invoke(main, ["tokenize", "-l", "en", "-j", "100000", "-"], input="a\n")
    _one_line(r, "-j")


def test_an_nbest_index_far_past_the_others_is_a_damaged_file(tmp_path):
    """rerank wrote an empty line for every index up to the last: 999,999,999 of them, hours."""
    nbest = tmp_path / "n.txt"
    nbest.write_text("0 ||| a ||| F0= -1 ||| -1\n999999999 ||| b ||| F0= -1 ||| -1\n", encoding="utf-8")
    _one_line(run("rerank", nbest), "its indices run to 999,999,999 but only 2 lines have hypotheses")
    nbest.write_text("0 ||| a ||| F0= -1 ||| -1\n2 ||| b ||| F0= -2 ||| -2\n", encoding="utf-8")
    r = run("rerank", nbest)
    assert r.exit_code == 0 and r.stdout.splitlines() == ["a", "", "b"], r.output  # a gap of one: as before


def test_serve_refuses_a_declared_length_over_the_limit_before_reading():
    """A client that declares 99,999,999,999 bytes and sends none held its connection until it
    gave up: the limit was counted as the bytes came."""
    pytest.importorskip("fastapi")
    from nmtkit.serve.app import BodyLimit

    answered: list[dict] = []

    async def app(scope, receive, send):  # never reached
        raise AssertionError("the application was called")

    async def receive():  # a body that never comes
        await asyncio.sleep(3600)

    async def send(message):
        answered.append(message)

    scope = {"type": "http", "method": "POST", "path": "/translate", "headers": [(b"content-length", b"99999999999")]}
    asyncio.run(asyncio.wait_for(BodyLimit(app, limit=20_000)(scope, receive, send), 5))
    assert answered[0]["type"] == "http.response.start" and answered[0]["status"] == 413


def test_an_empty_metrics_list_is_refused_not_the_default(tmp_path):
    hyp = tmp_path / "h.fr"
    hyp.write_text("a line\n", encoding="utf-8")
    _one_line(run("score", hyp, "-r", hyp, "--metrics", ""), "--metrics '': name at least one (bleu, chrf")
    assert "  chrF: 100.00\n" in run("score", hyp, "-r", hyp, "--metrics", "chrf").stdout
