"""nmtkit serve on a free loopback port: it translates, batches concurrent requests, answers
every bad request with a 4xx JSON error (FastAPI's 422 naming the field for an invalid one) and
keeps serving, describes its API at /docs, passes a request's search settings to the search, and
stops cleanly on SIGTERM."""

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from nmtkit.core.errors import UserError
from nmtkit.translate.settings import SearchConfig
from tests.conftest import EN

pytest.importorskip("fastapi", reason="nmtkit serve needs the serve extra (make install has it)")
pytest.importorskip("uvicorn", reason="nmtkit serve needs the serve extra (make install has it)")

from pydantic import TypeAdapter  # after the skips: pydantic comes with the serve extra

from nmtkit.serve.answers import TRANSLATE_RESPONSES, ServerInfo

# every answer these tests get is held to what /openapi.json declares for its status
DECLARED = {status: TypeAdapter(r["model"]) for status, r in TRANSLATE_RESPONSES.items()}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as res:
        return res.status, res.read().decode()


def _post(url, body, content_type="application/json"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            status, answer = res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        status, answer = err.code, json.loads(err.read())
    DECLARED[status].validate_python(answer)
    return status, answer


@pytest.fixture(scope="module")
def server(overfit):
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nmtkit",
            "serve",
            "-m",
            str(overfit / "run" / "last.pt"),
            "--port",
            str(port),
            "--threads",
            "1",
            "--max-sentences",
            "8",
            "--max-source-len",
            "60",
            "--max-body",
            "100000",
            "--shortlist",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as res:
                if json.loads(res.read()) == {"status": "ok"}:
                    break
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the server did not start: " + proc.communicate()[1][-2000:])
    yield url, proc
    if proc.poll() is None:
        proc.kill()


def test_translates_in_both_request_shapes_with_alignments_and_attention(server):
    url, _ = server
    status, body = _post(url + "/translate", {"sentences": EN[:3], "beam": 3, "attention": True})
    assert status == 200
    out = body["translations"]
    assert len(out) == 3 and all(t["text"] for t in out)
    first = out[0]
    assert len(first["attention"]) == len(first["target_tokens"])
    assert len(first["attention"][0]) == len(first["source_tokens"])
    assert all(abs(sum(row) - 1) < 1e-3 for row in first["attention"])
    words = first["word_attention"]  # the same merged into words, beside the pieces
    assert len(words) == len(first["target_words"]) and len(words[0]) == len(first["source_words"])
    assert all(abs(sum(row) - 1) < 1e-3 for row in words)
    assert first["source_words"][-1] == first["target_words"][-1] == "</s>"
    assert not any(w.endswith("@@") for w in first["source_words"] + first["target_words"])
    assert all("-" in link for link in first["alignment"].split())
    # an empty sentence among them: the same fields, empty (they were absent, and a client's index failed)
    status, body = _post(url + "/translate", {"sentences": [EN[0], ""], "beam": 3, "attention": True})
    empty = body["translations"][1]
    assert status == 200 and empty["text"] == "" and set(first) <= set(empty), set(first) - set(empty)
    assert empty["attention"] == empty["word_attention"] == [] and empty["source_words"] == ["</s>"]
    assert empty["source_tokens"] == empty["target_tokens"] == empty["target_words"] == ["</s>"]  # as translate's
    status, onmt = _post(url + "/translator/translate", [{"src": EN[0], "id": 7}, {"src": EN[1], "id": 7}])
    assert status == 200 and onmt[0][0]["id"] == 7 and onmt[0][0]["tgt"] == out[0]["text"]
    assert isinstance(onmt[0][0]["pred_score"], float) and onmt[0][0]["n_best"] == 1


def test_a_request_may_ask_for_each_tokens_score(server):
    url, _ = server
    status, body = _post(url + "/translate", {"sentences": [EN[0], ""], "beam": 3, "nbest": 2, "token_scores": True})
    assert status == 200
    first, empty = body["translations"]
    assert first["tokens"] and len(first["token_scores"]) == len(first["tokens"]) + 1
    assert sum(first["token_scores"]) == pytest.approx(first["score"], abs=1e-3)
    assert all(len(h["token_scores"]) == len(h["tokens"]) + 1 for h in first["nbest"])
    assert (empty["tokens"], empty["token_scores"]) == ([], [])
    plain = _post(url + "/translate", {"sentences": [EN[0]]})[1]["translations"][0]
    assert "token_scores" not in plain and plain["score"] == pytest.approx(first["score"])


def test_a_request_may_give_each_sentence_phrases_its_translation_must_hold(server):
    url, _ = server
    free = _post(url + "/translate", {"sentences": EN[:3], "beam": 4})[1]["translations"]
    musts = [["les ténèbres"], [], ["la terre", "Dieu appela"]]
    status, body = _post(url + "/translate", {"sentences": EN[:3], "beam": 4, "nbest": 2, "constraints": musts})
    assert status == 200, body
    out = body["translations"]
    for t, must in zip(out, musts, strict=True):
        assert all(p in h["text"] for h in t["nbest"] for p in must), (t["text"], must)
    assert out[1]["text"] == free[1]["text"] and out[0]["text"] != free[0]["text"]
    # concurrent requests, with phrases and without, share batches and get their own
    with ThreadPoolExecutor(4) as pool:
        asked = [
            {"sentences": [EN[0]], "beam": 4, **({"constraints": [["la terre"]]} if k % 2 else {})} for k in range(8)
        ]
        got = [
            f.result()[1]["translations"][0]["text"] for f in [pool.submit(_post, url + "/translate", a) for a in asked]
        ]
    assert all("la terre" in text if k % 2 else text == free[0]["text"] for k, text in enumerate(got))
    status, body = _post(url + "/translate", {"sentences": EN[:2], "constraints": [["x"]]})
    assert status == 422 and "2 sentences" in json.dumps(body)
    status, body = _post(url + "/translate", {"sentences": EN[:1], "constraints": [["la " * 61]]})
    assert status == 413 and "phrases of" in json.dumps(body)
    status, body = _post(url + "/translate", {"sentences": EN[:1], "constraints": [["la"] * 33]})  # minutes at 200
    assert status == 413 and body["error"].endswith("sentence 0 has 33 phrases to hold; at most 32"), body
    glossary = {"sentences": [EN[0]], "glossary": {"earth": "la terre"}}  # EN[0] holds "earth": one more
    status, body = _post(url + "/translate", {**glossary, "constraints": [["la"] * 32]})
    assert status == 413 and "33 phrases and terms to hold" in body["error"], body
    ordered = {"sentences": EN[:1], "beam": 4, "constraints": [["les eaux", "les eaux"]], "ordered_constraints": True}
    status, body = _post(url + "/translate", ordered)
    assert status == 200 and body["translations"][0]["text"].count("les eaux") >= 2, body
    assert "warnings" not in body  # nothing done only in part
    asked = {"sentences": EN[:2], "beam": 4, "constraints": [["xylophone", "la terre"], []], "prefixes": ["", "Et zzz"]}
    status, body = _post(url + "/translate", asked)
    assert status == 200 and "la terre" in body["translations"][0]["text"], body
    assert body["warnings"] == [
        "sentence 0: the phrase 'xylophone' has a unit out of the vocabulary: left out",
        "sentence 1: the prefix has a word out of the vocabulary: the translation holds <unk> there",
    ]
    status, body = _post(url + "/translate", {**asked, "no_unk": True})
    assert status == 200 and "no_unk bans" in body["warnings"][1] and "<unk>" not in body["translations"][1]["text"]


def test_alignment_false_leaves_the_pairs_out_and_the_log_holds_no_batch_line_numbers(overfit, capfd):
    """A phrase's and a prefix's warnings are the answer's, by sentence: the translator's own, which
    numbered the lines of a batch of several requests, no longer reach the server's log."""
    from nmtkit.serve.settings import ServerConfig
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints([overfit / "run" / "last.pt"], "cpu")
    with in_process(translator, ServerConfig()) as url:
        asked = {"sentences": EN[:1], "beam": 3, "nbest": 2, "constraints": [["xylophone"]], "prefixes": ["Et zzz"]}
        status, body = _post(url + "/translate", {**asked, "alignment": False})
        assert status == 200 and len(body["warnings"]) == 2, body
        out = body["translations"][0]
        assert "alignment" not in out and not any("alignment" in h for h in out["nbest"])
        status, body = _post(url + "/translate", {**asked, "alignment": False, "attention": True})
        assert "alignment" not in body["translations"][0] and body["translations"][0]["attention"]
        status, body = _post(url + "/translate", asked)
        assert body["translations"][0]["alignment"] and all(h["alignment"] for h in body["translations"][0]["nbest"])
    TypeAdapter(TRANSLATE_RESPONSES[200]["model"]).validate_python(body)
    logged = capfd.readouterr().err
    assert "line 1" not in logged and "xylophone" not in logged, logged


def test_a_request_may_give_each_sentence_the_start_of_its_translation(server):
    url, _ = server
    free = _post(url + "/translate", {"sentences": EN[:3], "beam": 4})[1]["translations"]
    starts = ["Et Dieu dit", "", "Au commencement"]
    status, body = _post(url + "/translate", {"sentences": EN[:3], "beam": 4, "nbest": 2, "prefixes": starts})
    assert status == 200, body
    out = body["translations"]
    for t, start in zip(out, starts, strict=True):
        assert all(h["text"].startswith(start) for h in t["nbest"]), (t["text"], start)
    assert out[1]["text"] == free[1]["text"] and out[0]["text"] != free[0]["text"]
    # with phrases too, and beside requests that give neither, in shared batches
    with ThreadPoolExecutor(4) as pool:
        asked = [
            {
                "sentences": [EN[0]],
                "beam": 4,
                **({"prefixes": ["Et Dieu"], "constraints": [["la terre"]]} if k % 2 else {}),
            }
            for k in range(8)
        ]
        got = [
            f.result()[1]["translations"][0]["text"] for f in [pool.submit(_post, url + "/translate", a) for a in asked]
        ]
    assert all(
        text.startswith("Et Dieu") and "la terre" in text if k % 2 else text == free[0]["text"]
        for k, text in enumerate(got)
    )
    status, body = _post(url + "/translate", {"sentences": EN[:2], "prefixes": ["Et"]})
    assert status == 422 and "1 prefix for 2 sentences" in json.dumps(body)
    status, body = _post(url + "/translate", {"sentences": EN[:1], "prefixes": ["la " * 61]})
    assert status == 413 and "a prefix of" in json.dumps(body)
    status, body = _post(url + "/translate", {"sentences": EN[:1], "prefixes": ["é," * 40]})  # one word, 80 units
    assert status == 413 and "a prefix of 80 subword units; at most 60" in body["error"], body


def test_concurrent_clients_get_their_own_translations(server):
    url, _ = server
    alone = {s: _post(url + "/translate", {"sentences": [s]})[1]["translations"][0]["text"] for s in EN[:5]}
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda s: (s, _post(url + "/translate", {"sentences": [s]})), EN[:5] * 8))
    assert all(status == 200 and body["translations"][0]["text"] == alone[s] for s, (status, body) in got)
    with urllib.request.urlopen(url + "/info", timeout=10) as res:
        info = json.loads(res.read())
    ServerInfo.model_validate(info)
    assert info["arch"] == "rnnsearch" and info["served"]["sentences"] >= 45
    assert info["served"]["batches"] < info["served"]["sentences"]  # requests shared batches


@pytest.mark.parametrize(
    "body, status, says",
    [
        (b'{"sentences": ["caf\xe9"]}', 400, "the body is not UTF-8 (byte 19)"),
        # Python's JSON reader takes UTF-16 and UTF-32, with a byte-order mark or without
        (json.dumps({"sentences": ["a"]}).encode("utf-16"), 400, "the body is not UTF-8 (byte 0)"),
        (json.dumps({"sentences": ["a"]}).encode("utf-16-le"), 400, "the body holds a NUL byte (byte 1), which JSON"),
        (json.dumps({"sentences": ["a"]}).encode("utf-32-be"), 400, "the body holds a NUL byte (byte 0), which JSON"),
        (b'{"sentences": ["a\x00"]}', 400, "the body holds a NUL byte (byte 17), which JSON never holds raw"),
        (b"[" * 40_000 + b"]" * 40_000, 400, "its JSON nests too deep"),
        (b'{"sentences": ["a"], "beam": ' + b"9" * 5000 + b"}", 400, "a number of over 4,300 digits"),
        ({"sentences": ["word " * 10000]}, 413, "50,000 characters; at most 960"),  # refused before tokenizing
        ({"sentences": [EN[0], "a " * 61]}, 413, "sentence 1 has 61 subword units; at most 60"),
        ({"sentences": ["a"] * 9}, 413, "at most 8"),
        ([{"src": "a"}] * 9, 413, "at most 8"),
        (b"[" + b'{"src": "a"},' * 10000 + b'{"src": "a"}]', 413, "bytes"),
    ],
)
def test_every_bad_request_is_a_json_error_and_the_server_goes_on(server, body, status, says):
    url, proc = server
    got, answer = _post(url + "/translate", body)
    assert got == status and says in answer["error"] and answer["detail"] == answer["error"]
    assert _post(url + "/translate", {"sentences": [EN[0]]})[0] == 200
    assert proc.poll() is None


@pytest.mark.parametrize(
    "body, field",
    [
        ({"sentences": ["a"], "beam": "five"}, "beam"),
        ({"sentences": ["a"], "beam": "5"}, "beam"),  # strict, as before: a string is no number
        ({"sentences": ["a"], "beam": True}, "beam"),
        ({"sentences": ["a"], "beam": 0}, "beam"),
        ({"sentences": ["a"], "beam": 25}, "beam"),  # over --max-beam (24)
        ({"sentences": ["a"], "nbest": 4, "beam": 2}, "nbest"),
        ({"sentences": ["a"], "nbest": 11}, "nbest"),  # over the limit (10)
        ({"beam": 3}, "sentences"),  # missing
        ({"sentences": "one"}, "sentences"),
        ({"sentences": [1, 2]}, "sentences"),
        ({"sentences": []}, "sentences"),
        ({"sentences": ["a"], "colour": 1}, "colour"),  # unknown: a misspelt setting is no default
        ({"sentences": ["a"], "coverage_penalty": -0.1}, "coverage_penalty"),
        ({"sentences": ["a"], "coverage_penalty": "0.2"}, "coverage_penalty"),
        (b'{"sentences": ["a"], "alpha": NaN}', "alpha"),  # Python's JSON reads NaN; the search must not
        ({"sentences": ["a"], "length_penalty": "words"}, "length_penalty"),
        ({"sentences": ["a"], "max_ratio": 2.5}, "max_ratio"),  # a request may not raise the output limit
        ({"sentences": ["a"], "min_len": -1}, "min_len"),
        ({"sentences": ["a"], "min_len": 2**63}, "min_len"),  # past int64: a 500 from the search
        ({"sentences": ["a"], "coverage_penalty": 3.5e38}, "coverage_penalty"),  # past float32: NaN ranks
        ({"sentences": ["a"], "attention": 1}, "attention"),
        ([{"text": "a"}], "src"),
        # JSON's escape of half a character: no text, which the search once took (or answered 500)
        ({"sentences": ["ok \ud83d"], "attention": True}, "sentences"),
        ([{"src": "\udfff", "id": 1}], "src"),
        ([{"src": "a b", "id": "\ud800"}], "id"),  # OpenNMT-py's id is echoed back: JSON must write it
        (b'[{"src": "a b", "id": NaN}]', "id"),
        ([], "body"),  # the whole body: FastAPI's name for it
        (7, "body"),
        (b"", "body"),
        (b"{not json", "body"),
    ],
)
def test_an_invalid_request_is_fastapis_422_naming_the_field(server, body, field):
    url, proc = server
    got, answer = _post(url + "/translate", body)
    assert got == 422 and any(field in error["loc"] for error in answer["detail"]), answer
    assert field in answer["error"]  # the line the page shows
    assert _post(url + "/translate", {"sentences": [EN[0]]})[0] == 200
    assert proc.poll() is None


def test_the_api_is_described_at_docs_and_openapi_json(server):
    url, _ = server
    status, page = _get(url + "/docs")
    assert status == 200 and "swagger-ui" in page and "/openapi.json" in page
    status, text = _get(url + "/openapi.json")
    api = json.loads(text)
    assert status == 200 and {"/translate", "/translator/translate", "/health", "/info"} <= set(api["paths"])
    assert all("requestBody" in api["paths"][p]["post"] for p in ("/translate", "/translator/translate"))
    # one operationId an operation, as OpenAPI asks (GET and HEAD /health shared one, with a warning)
    ids = [op["operationId"] for path in api["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids)) and {"get", "head"} <= set(api["paths"]["/health"]), ids
    request = api["components"]["schemas"]["TranslateRequest"]
    assert set(request["properties"]) == {
        "sentences",
        "beam",
        "nbest",
        "length_penalty",
        "alpha",
        "coverage_penalty",
        "max_ratio",
        "min_len",
        "min_ratio",
        "no_unk",
        "ordered_constraints",
        "plain_first",
        "alignment",
        "attention",
        "token_scores",
        "constraints",
        "prefixes",
        "glossary",
    }
    assert request["required"] == ["sentences"]
    fields = request["properties"]
    assert (fields["beam"]["default"], fields["beam"]["maximum"]) == (12, 24)  # --beam, --max-beam
    assert (fields["coverage_penalty"]["default"], fields["coverage_penalty"]["minimum"]) == (0, 0)
    assert fields["length_penalty"]["enum"] == ["none", "average", "power", "gnmt"]
    assert "src" in api["components"]["schemas"]["OpenNMTSentence"]["properties"]
    answers = api["paths"]["/translate"]["post"]["responses"]
    assert {"200", "400", "413", "415", "422"} <= set(answers)
    shapes = json.dumps(answers["200"]["content"]["application/json"]["schema"])
    assert "TranslateResponse" in shapes and "OpenNMTResult" in shapes
    assert "ErrorAnswer" in json.dumps(answers["422"])  # ours, with its one line, not FastAPI's
    described = api["components"]["schemas"]["Translated"]["properties"]
    assert {"text", "score", "alignment", "nbest", "token_scores", "word_attention"} <= set(described)
    assert "ServerInfo" in json.dumps(api["paths"]["/info"]["get"]["responses"]["200"])


def test_a_coverage_penalty_reaches_the_search(server):
    url, _ = server
    ask = {"sentences": [EN[1]], "beam": 3}
    plain = _post(url + "/translate", ask)[1]["translations"][0]
    covered = _post(url + "/translate", {**ask, "coverage_penalty": 1.0})[1]["translations"][0]
    # the penalty (never positive, and negative while some source unit has received less than
    # all of its attention) joins the ranking, not the choice of open hypotheses: no translation
    # ranks as high as the plain best did, and none scores higher
    assert covered["ranking"] < plain["ranking"] and covered["score"] <= plain["score"]


def test_the_page_is_served(server):
    url, _ = server
    with urllib.request.urlopen(url + "/", timeout=10) as res:
        page = res.read().decode()
    assert 'fetch("translate"' in page and 'createElement("canvas")' in page and "heatmap" in page
    assert 'id="pieces" type="checkbox"' in page and "t.word_attention" in page  # words, pieces on request
    assert 'fetch("info")' in page and "attention: (await info).attention" in page  # asked only of a model with one


def test_the_answer_has_the_attention_over_pieces_and_over_words():
    import numpy as np

    from nmtkit.serve.app import native
    from nmtkit.translate.translation import Translation

    alpha = np.array([[0.6, 0.2, 0.1, 0.1], [0.1, 0.3, 0.5, 0.1], [0.0, 0.0, 0.1, 0.9]])
    t = Translation("Pléiades .", ["Plé@@", "iades"], ["the", "Plei@@", "ades"], -1.0, -0.5, alpha)
    record = native(t, attention=True)
    assert record["source_tokens"] == ["the", "Plei@@", "ades", "</s>"]
    assert record["target_tokens"] == ["Plé@@", "iades", "</s>"] and len(record["attention"]) == 3
    assert record["source_words"] == ["the", "Pleiades", "</s>"] and record["target_words"] == ["Pléiades", "</s>"]
    assert record["word_attention"] == [[0.35, 0.55, 0.1], [0.0, 0.1, 0.9]]
    assert "word_attention" not in native(t, attention=False)


def test_sigterm_finishes_the_request_in_flight_then_stops(server):
    url, proc = server
    long = [" ".join(EN)[:180]] * 8  # 8 sentences of ~35 words, beam 24
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_post, url + "/translate", {"sentences": long, "beam": 24})
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        status, body = pending.result(timeout=60)
    assert status == 200 and len(body["translations"]) == 8
    proc.wait(timeout=60)
    # uvicorn shuts down gracefully, then ends by the signal it caught, as a daemon should
    assert proc.returncode in (0, -signal.SIGTERM), proc.stderr.read()[-2000:]
    assert "Traceback" not in proc.stderr.read()


class _FakeTranslator:
    """What the app asks of a translator, recording the options each block is translated with."""

    def __init__(self):
        self.options = []
        self.attends = True

    def source_length(self, line):
        return len(line.split())

    def translate_block(self, lines, options, **given):
        from nmtkit.translate.translation import Translation

        if options.search.coverage_penalty and "no attention" in lines:
            raise UserError("a coverage penalty reads the attention: this model has none")  # as the search does
        self.options.append(options)
        return [Translation(line, line.split(), line.split(), -1.0, -1.0) for line in lines]


@contextlib.contextmanager
def in_process(translator, cfg, both=None):
    """The app on ``translator`` (and ``both``'s links) served by uvicorn in a thread of this process: its URL."""
    import uvicorn

    from nmtkit.serve.app import create_app

    server = uvicorn.Server(
        uvicorn.Config(create_app(translator, cfg, both=both), host="127.0.0.1", port=_free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run)
    thread.start()
    for _ in range(300):
        if server.started:
            break
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def fake_server():
    """The app in this process, on a translator that records what it is asked, serving the
    search settings of ``cfg.search`` to requests that name none."""
    from nmtkit.serve.settings import ServerConfig

    cfg = ServerConfig(search=SearchConfig(beam=4, length_penalty="gnmt", coverage_penalty=0.2))
    translator = _FakeTranslator()
    with in_process(translator, cfg) as url:
        yield url, translator, cfg


class _SlowTranslator(_FakeTranslator):
    def translate_block(self, lines, options, **given):
        time.sleep(2.5)
        return super().translate_block(lines, options, **given)


class _GatedTranslator(_FakeTranslator):
    """Holds its first block until ``gate`` is set, recording each block's lines."""

    def __init__(self):
        super().__init__()
        self.entered, self.gate, self.blocks = threading.Event(), threading.Event(), []

    def translate_block(self, lines, options, **given):
        self.entered.set()
        self.gate.wait(30)
        self.blocks.append(list(lines))
        return super().translate_block(lines, options, **given)


def test_a_request_whose_client_went_away_before_its_batch_began_is_not_translated(capfd):
    """It was translated with the next request's batch all the same: under load, the sentences of
    every client that gave up still cost the model their search."""
    from nmtkit.serve.settings import ServerConfig

    translator = _GatedTranslator()
    with in_process(translator, ServerConfig()) as url, ThreadPoolExecutor(2) as pool:
        first = pool.submit(_post, url + "/translate", {"sentences": ["a"]})
        assert translator.entered.wait(30)  # the model thread is busy with it
        body = json.dumps({"sentences": ["gone"]}).encode()
        head = f"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as client:
            client.sendall(head.encode() + b"\r\n\r\n" + body)
            time.sleep(0.5)  # read and queued; then the client hangs up
        time.sleep(0.5)
        last = pool.submit(_post, url + "/translate", {"sentences": ["c"]})
        time.sleep(0.3)
        translator.gate.set()
        assert first.result(timeout=30)[1]["translations"][0]["text"] == "a"
        assert last.result(timeout=30)[1]["translations"][0]["text"] == "c"
        served = json.loads(_get(url + "/info")[1])["served"]
    assert translator.blocks == [["a"], ["c"]]
    assert served == {"batches": 2, "sentences": 2, "abandoned": 1}
    assert "Traceback" not in capfd.readouterr().err


class _LineByLineTranslator(_FakeTranslator):
    """Searches a line a block, telling ``done`` after each as the search does; after the first
    batch's first, a long search whose blocks end empty (``done(0)``, every 20 ms, 30 s at most);
    records each line it translated."""

    def __init__(self):
        super().__init__()
        self.entered, self.lines = threading.Event(), []

    def translate_block(self, lines, options, done=lambda n: None, **given):
        out = []
        for k, line in enumerate(lines):
            out += super().translate_block([line], options, **given)
            self.lines.append(line)
            done(1)
            if k == 0 and not self.entered.is_set():  # the first batch's
                self.entered.set()
                for _ in range(1500):  # until the batch's client has gone: then done raises
                    time.sleep(0.02)
                    done(0)
        return out


class _LinkByLinkLinker:
    """Links a translation a part, telling ``done`` after each as BothWays does; after the first
    batch's first, waits (``done(0)`` every 20 ms, 30 s at most) for its client to go; records
    each line it linked."""

    def __init__(self):
        self.entered, self.lines = threading.Event(), []

    def linked_block(self, ts, done):
        for k, t in enumerate(ts):
            self.lines.append(t.text)
            done(1)
            if k == 0 and not self.entered.is_set():
                self.entered.set()
                for _ in range(1500):
                    time.sleep(0.02)
                    done(0)
        return ts


@pytest.mark.parametrize("where", ["search", "links"])
def test_a_batch_whose_clients_all_went_away_stops_at_the_search_s_next_block(capfd, where):
    """A batch under way went on to its last sentence for nobody; it stops between two blocks of
    the search, the sentences left counted abandoned, and the next request is served. With models
    of the other direction, between two parts of the links both ways (most of a batch's time),
    where it went on."""
    from nmtkit.serve.settings import ServerConfig

    translator, linker = (
        (_LineByLineTranslator(), None) if where == "search" else (_FakeTranslator(), _LinkByLinkLinker())
    )
    with in_process(translator, ServerConfig(), linker) as url:
        body = json.dumps({"sentences": ["a", "b", "c", "d"]}).encode()
        head = f"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as client:
            client.sendall(head.encode() + b"\r\n\r\n" + body)
            assert (linker or translator).entered.wait(30)  # its first line done; then the client hangs up
        assert _post(url + "/translate", {"sentences": ["e"]})[1]["translations"][0]["text"] == "e"
        served = json.loads(_get(url + "/info")[1])["served"]
    assert (linker or translator).lines == ["a", "e"]  # b, c and d never searched, or never linked
    assert served == {"batches": 2, "sentences": 2, "abandoned": 3}
    assert "Traceback" not in capfd.readouterr().err


def test_a_request_the_shutdown_wait_cuts_short_gets_a_json_503(capfd):
    """SIGTERM's wait over, uvicorn cancels what still runs: its client gets an error of the API's
    shape, as every other, where it got uvicorn's plain-text 500 and stderr a traceback."""
    import uvicorn

    from nmtkit.serve.app import create_app, listening
    from nmtkit.serve.settings import ServerConfig

    sock = listening("127.0.0.1", 0)
    app = create_app(_SlowTranslator(), ServerConfig())
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]})
    thread.start()
    for _ in range(300):
        if server.started:
            break
        time.sleep(0.02)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/translate"
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_post, url, {"sentences": ["a b"]})
        time.sleep(0.3)
        server.should_exit = True  # what SIGTERM sets
        status, body = pending.result(timeout=30)
    thread.join(timeout=30)
    assert status == 503 and "--shutdown-wait was over" in body["error"], body
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "asked, search",
    [
        ({}, {}),  # the server's: coverage 0.2, gnmt, beam 4
        ({"coverage_penalty": 0.5}, {"coverage_penalty": 0.5}),
        ({"coverage_penalty": 0}, {"coverage_penalty": 0.0}),
        (
            {
                "beam": 3,
                "nbest": 2,
                "length_penalty": "average",
                "alpha": 1,
                "max_ratio": 1.5,
                "min_len": 0,
                "no_unk": True,
            },
            {
                "beam": 3,
                "nbest": 2,
                "length_penalty": "average",
                "alpha": 1.0,
                "max_ratio": 1.5,
                "min_len": 0,
                "no_unk": True,
            },
        ),
    ],
)
def test_a_requests_search_settings_are_what_the_translator_searches_with(fake_server, asked, search):
    url, translator, cfg = fake_server
    status, body = _post(url + "/translate", {"sentences": ["a b", "c"], **asked})
    assert status == 200 and [t["text"] for t in body["translations"]] == ["a b", "c"]
    assert translator.options[-1].search == replace(cfg.search, **search)


def test_health_answers_head_as_a_load_balancer_asks_it(fake_server):
    url = fake_server[0]
    with urllib.request.urlopen(urllib.request.Request(url + "/health", method="HEAD"), timeout=10) as res:
        assert res.status == 200 and res.read() == b""


def test_opennmt_requests_get_the_servers_search(fake_server):
    url, translator, cfg = fake_server
    status, body = _post(url + "/translator/translate", [{"src": "a b", "id": 1, "ref": "OpenNMT-py's own"}])
    assert status == 200 and body == [[{"src": "a b", "tgt": "a b", "pred_score": -1.0, "n_best": 1, "id": 1}]]
    assert translator.options[-1].search == cfg.search


def test_a_setting_the_model_cannot_search_with_is_422(fake_server):
    url, _, _ = fake_server
    got, answer = _post(url + "/translate", {"sentences": ["no attention"], "coverage_penalty": 0.5})
    assert got == 422 and "reads the attention" in answer["error"]
    assert _post(url + "/translate", {"sentences": ["no attention"], "coverage_penalty": 0})[0] == 200


@pytest.mark.parametrize("kind", ["application/json; charset=utf-8", "application/vnd.api+json"])
def test_a_json_body_sent_as_json_is_read(fake_server, kind):
    url, _, _ = fake_server
    assert _post(url + "/translate", {"sentences": ["a b"]}, kind)[0] == 200


@pytest.mark.parametrize("body, where", [(b"hello", 0), (b'{"sentences": ["hi"', 19)])
def test_a_body_that_is_no_json_is_said_so_with_the_character_s_place(fake_server, body, where):
    """Its line read 'body.18: JSON decode error (...)', the place like a field's name."""
    url, _, _ = fake_server
    got, answer = _post(url + "/translate", body)
    assert got == 422 and answer["error"].startswith("the body is not JSON: ")
    assert answer["error"].endswith(f" at character {where}"), answer["error"]


def test_a_body_sent_as_a_form_is_415_naming_the_content_type_to_send(fake_server):
    """curl -d sends application/x-www-form-urlencoded: FastAPI reads the body as bytes, and its
    422 said only 'Input should be a valid dictionary'."""
    url, _, _ = fake_server
    got, answer = _post(url + "/translate", {"sentences": ["a b"]}, "application/x-www-form-urlencoded")
    assert got == 415 and "Content-Type: application/json" in answer["error"]
    got, answer = _post(url + "/translate", {"sentences": "a b"})  # JSON, of the wrong shape: still 422
    assert got == 422
    host, port = url.removeprefix("http://").split(":")
    plain = http.client.HTTPConnection(host, int(port), timeout=60)  # urllib would add a form type
    plain.request("POST", "/translate", body=json.dumps({"sentences": ["a b"]}).encode())
    res = plain.getresponse()
    answer = json.loads(res.read())
    assert res.status == 415 and "which the request lacks" in answer["error"]
    import gzip

    plain.request(  # curl --compressed-style bodies: their bytes were "not UTF-8 (byte 1)", a 400
        "POST",
        "/translate",
        body=gzip.compress(json.dumps({"sentences": ["a b"]}).encode()),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    res = plain.getresponse()
    answer = json.loads(res.read())
    assert res.status == 415 and "Content-Encoding gzip is not taken" in answer["error"]


def test_the_attention_of_a_model_without_one_is_422_and_its_alignment_empty(fake_server):
    url, translator, _ = fake_server
    translator.attends = False
    try:
        assert json.loads(_get(url + "/info")[1])["attention"] is False  # what the page asks by
        got, answer = _post(url + "/translate", {"sentences": ["a b"], "attention": True})
        assert got == 422 and answer["error"] == "attention: this model has none"
        got, answer = _post(url + "/translate", {"sentences": ["a b"]})
        assert got == 200 and answer["translations"][0]["alignment"] == ""
    finally:
        translator.attends = True


def test_the_search_settings_come_from_options_or_a_config_file(tmp_path, monkeypatch):
    import nmtkit.serve.app
    from nmtkit.cli import main

    started = []
    monkeypatch.setattr(nmtkit.serve.app, "serve", lambda models, cfg, runtime, links=None: started.append(cfg))
    (tmp_path / "serve.yaml").write_text(
        "coverage-penalty: 0.2\nlength_penalty: gnmt\nno-unk: true\n", encoding="utf-8"
    )
    r = CliRunner().invoke(main, ["serve", "-m", "x.pt", "--config", str(tmp_path / "serve.yaml"), "--beam", "5"])
    assert r.exit_code == 0, r.output
    assert started[0].search == SearchConfig(beam=5, coverage_penalty=0.2, length_penalty="gnmt", no_unk=True)
    r = CliRunner().invoke(main, ["serve", "-m", "x.pt", "--coverage-penalty", "-1"])
    assert r.exit_code == 2 and "--coverage-penalty" in r.output and len(started) == 1  # translate's bound


def test_an_address_in_use_is_one_line_before_any_model_loads(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "nmtkit", "serve", "-m", str(tmp_path / "none.pt"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    # the port is refused before the missing checkpoint is looked for
    assert (done.returncode, done.stderr) == (
        2,
        f"nmtkit serve: error: --host 127.0.0.1 --port {port}: address already in use\n",
    )


def test_a_coverage_penalty_a_model_without_attention_cannot_search_with_is_refused_at_the_start(corpus, tmp_path):
    """--coverage-penalty for an RNNencdec: one line at the start, as translate refuses it, not a server
    that says it is healthy and answers every request without a coverage_penalty of its own 422."""
    from nmtkit.train.loop import train
    from tests.conftest import TINY_RNNSEARCH, sized
    from tests.test_train import cfg

    train(corpus, tmp_path / "e", sized("rnnencdec", TINY_RNNSEARCH), cfg(max_updates=1, valid_bleu=False))
    done = subprocess.run(
        [sys.executable, "-m", "nmtkit", "serve", "-m", str(tmp_path / "e" / "last.pt"), "--port", "0"]
        + ["--coverage-penalty", "0.2", "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert (
        "--coverage-penalty reads the attention" in done.stderr
        and "a model with --arch rnnencdec, which has none" in done.stderr
    )


def test_a_beam_wider_than_the_target_vocabulary_is_refused_at_the_start(overfit):
    """As translate refuses it; a server started with it answered every request 422, and a
    request's wider beam is refused at its field, as one over --max-beam is."""
    from nmtkit import checkpoint

    model = overfit / "run" / "last.pt"
    units = len(checkpoint.load(model).text.vocab["tgt"])
    done = subprocess.run(
        [sys.executable, "-m", "nmtkit", "serve", "-m", str(model), "--port", "0", "--device", "cpu"]
        + ["--beam", str(units + 1), "--max-beam", str(units + 10)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"--beam {units + 1}: {model} has {units} target units, no more" in done.stderr


SWALLOWING_START = """
import os
import signal
import sys
from nmtkit.translate.translator import Translator

real = Translator.from_checkpoints
if sys.argv[3] == "ignored":  # as a background job of a script finds it
    signal.signal(signal.SIGINT, signal.SIG_IGN)

def loading(*args, **kw):  # the signal comes while the models load, in code that swallows it
    try:
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        for _ in range(1000):
            sum(range(1000))  # Python lines, where a handler runs
    except BaseException:  # as compiled code did: pydantic-core wrapped the KeyboardInterrupt in its own error
        pass
    return real(*args, **kw) if args else None

class Importing:  # the signal comes while FastAPI is imported, before the models load
    def find_spec(self, name, path, target=None):
        if name == "nmtkit.serve.app":
            sys.meta_path.remove(self)
            loading()
        return None

if sys.argv[4] == "import":
    sys.meta_path.insert(0, Importing())
else:
    Translator.from_checkpoints = loading
from nmtkit.cli import main
main(["serve", "-m", sys.argv[2], "--port", "0", "--device", "cpu"], prog_name="nmtkit")
"""


@pytest.mark.parametrize(
    "name, status, said, sigint, where",
    [
        ("SIGINT", 130, "interrupted", "default", "load"),
        ("SIGINT", 130, "interrupted", "ignored", "load"),
        ("SIGINT", 130, "interrupted", "ignored", "import"),
        ("SIGTERM", 143, "terminated", "default", "load"),
        ("SIGTERM", 143, "terminated", "default", "import"),
    ],
)
def test_a_signal_while_the_server_starts_stops_it_once_started(overfit, name, status, said, sigint, where):
    """Ctrl-C in the first second of serve, inside FastAPI's import or the models' load, was lost
    (the server started all the same), a traceback of pydantic's, or SIGABRT; now it is held
    until the models are loaded, then acted on as anywhere else. A server started with SIGINT
    ignored stops on it once serving (uvicorn's handler), and so during its load too: it served
    on, and during FastAPI's import it still did."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWING_START, name, str(overfit / "run" / "last.pt"), sigint, where],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == status and done.stderr.splitlines()[-1] == f"nmtkit serve: {said}", done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stderr


SLOW_SERVER = """
import signal
import sys
import time
# ignored, as a background job of a script finds it; else Python's own, whatever this suite inherited
signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[1] == "ignored" else signal.default_int_handler)
from tests.test_serve import _SlowTranslator
from nmtkit.core.command import _exit
from nmtkit.core.errors import Interrupted
from nmtkit.serve.app import create_app, listening, run_server
from nmtkit.serve.settings import ServerConfig

class Announcing(_SlowTranslator):  # the test's Ctrl-C comes with a request in flight, however loaded the machine
    def translate_block(self, lines, options, **given):
        print("translating", flush=True)
        time.sleep(float(sys.argv[2]))  # a search of minutes: the exit must not wait for it
        return super().translate_block(lines, options, **given)

sock = listening("127.0.0.1", 0)
print(sock.getsockname()[1], flush=True)
try:
    run_server(create_app(Announcing(), ServerConfig()), sock, float(sys.argv[3]))
except Interrupted as err:  # as nmtkit serve leaves: not waiting for the model thread's search
    _exit(128 + err.signum, err.abandon)
"""


def _said_within(proc: subprocess.Popen, seconds: float) -> str:
    """The process's next line on stdout, or a failure once ``seconds`` pass without one."""
    import select

    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, f"nothing said on stdout in {seconds:g} s"
    return proc.stdout.readline()


def _refused_within(url: str, seconds: float) -> None:
    """Waits until the server no longer takes connections (its shutdown has begun)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            _get(url)
        except OSError:  # refused, or reset: the listening socket is closed
            return
        time.sleep(0.05)
    raise AssertionError(f"still serving {url} {seconds:g} s after Ctrl-C")


@contextlib.contextmanager
def _slow_server_translating(sigint: str, shutdown_wait: float) -> Iterator[tuple[subprocess.Popen, str, Future]]:
    """SLOW_SERVER, with a request in flight (its model thread in a search of two minutes): the
    process, its URL and the request's pending answer."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    args = [sys.executable, "-c", SLOW_SERVER, sigint, "120", str(shutdown_wait)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = f"http://127.0.0.1:{int(_said_within(proc, 60))}"
        assert _get(url + "/health")[0] == 200  # the socket listens already: this waits for the server
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_post, url + "/translate", {"sentences": ["a b"]})
            assert _said_within(proc, 60) == "translating\n"
            yield proc, url, pending
    finally:
        proc.kill()


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_second_ctrl_c_stops_the_server_at_once_without_a_traceback(sigint):
    """Ctrl-C, then Ctrl-C again during the shutdown wait: out at once, the request in flight a JSON
    503, and stderr without the two tracebacks it got (the signal raised twice, the lifespan cut).
    The same status, 130, for a server started with SIGINT ignored, as a script's background job
    is (uvicorn raised the signal again under that handler, and the server ended with 0). Its
    search is not waited for (a search of minutes held the exit until it ended)."""
    with _slow_server_translating(sigint, 30) as (proc, url, pending):
        proc.send_signal(signal.SIGINT)
        _refused_within(url + "/health", 20)  # the first seen: two signals at once would be one
        proc.send_signal(signal.SIGINT)
        status, body = pending.result(timeout=30)
        err = proc.communicate(timeout=30)[1]
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, status, err)
    assert status == 503 and "a second Ctrl-C" in body["error"]


@pytest.mark.parametrize(
    ("stops", "said"),
    [
        ((signal.SIGTERM,), "terminated"),
        ((signal.SIGHUP,), "hung up"),
        ((signal.SIGHUP, signal.SIGTERM), "hung up"),  # the first decides
    ],
)
def test_sigterm_stops_the_server_after_its_wait_whatever_the_search_under_way(stops, said):
    """--shutdown-wait 1 and a request whose search takes minutes (a sentence of 200 phrases at
    beam 24 took 105 s): its client got its 503 on time, but the process went on until the search
    ended, its port closed, holding its memory, past a service manager's stop timeout. SIGHUP (a
    closed terminal) stops it the same way, where it ended the server at once, its requests cut
    without an answer; each says its line, and uvicorn's error line for what it cancelled is the
    log's line instead."""
    with _slow_server_translating("default", 1) as (proc, _, pending):
        for stop in stops:
            proc.send_signal(stop)
        status, _ = pending.result(timeout=30)
        err = proc.communicate(timeout=30)[1]
    assert status == 503 and proc.returncode == -stops[0] and "Traceback" not in err, (status, err)
    assert err.splitlines()[-2:] == [
        "--shutdown-wait over: 1 request(s) still running cancelled, each answered a 503",
        said,
    ], err


def test_ctrl_c_after_sigterm_stops_the_server_at_once_with_a_503_for_what_runs():
    """SIGTERM, then Ctrl-C in the wait: the stop at once, as a second Ctrl-C's (130, a JSON 503),
    where SIGTERM, raised again first, ended the server before its requests got an answer."""
    with _slow_server_translating("default", 30) as (proc, url, pending):
        proc.send_signal(signal.SIGTERM)
        _refused_within(url + "/health", 20)
        proc.send_signal(signal.SIGINT)
        status, body = pending.result(timeout=30)
        err = proc.communicate(timeout=30)[1]
    assert (proc.returncode, err.splitlines()) == (130, ["interrupted"]), err
    assert status == 503 and "a second Ctrl-C" in body["error"]


def test_a_search_setting_that_may_be_unset_is_a_field_that_may_be_null(monkeypatch):
    """A SearchConfig field of type 'int | None' crashed serve's start (KeyError: 'int | None')."""
    from dataclasses import dataclass, field, fields

    from nmtkit.core.settings import Declared
    from nmtkit.serve import schema

    @dataclass
    class _Unset:
        most: int | None = field(default=None)

    (f,) = fields(_Unset)
    monkeypatch.setattr(schema, "declared", lambda cls, name: (f, Declared("At most.", ge=1)))
    kind, info = schema._declared("most", None)
    assert TypeAdapter(kind).validate_python(None) is None and TypeAdapter(kind).validate_python(3) == 3
    assert info.default is None and any(getattr(m, "ge", None) == 1 for m in info.metadata)


def test_requests_that_waited_behind_other_options_are_batched_together():
    """Alternating beams under load: each request that had waited behind another beam's batch was
    translated alone (2 sentences a batch instead of 14, a third of the throughput)."""
    import asyncio

    from nmtkit.serve.batching import Batcher

    busy, blocks = threading.Event(), []

    def translate(lines, key, beside, done):
        blocks.append((key, list(lines)))
        if len(blocks) == 1:
            busy.wait(30)  # the model is busy while the others queue
        from nmtkit.translate.translation import Translation

        return [Translation(line, [line], [line], -1.0, -1.0) for line in lines]

    async def serve():
        batcher = Batcher(translate, max_sentences=8, wait=0.01)
        batcher.start()
        first = asyncio.ensure_future(batcher.submit(["a"], 5))
        await asyncio.sleep(0.1)
        rest = [asyncio.ensure_future(batcher.submit([f"b{i}"], (5, 4)[i % 2])) for i in range(6)]
        await asyncio.sleep(0.1)
        busy.set()
        got = await asyncio.gather(first, *rest)
        await batcher.stop()
        return got

    got = asyncio.run(serve())
    assert [t[0].text for t in got] == ["a", *(f"b{i}" for i in range(6))]
    assert blocks == [(5, ["a"]), (5, ["b0", "b2", "b4"]), (4, ["b1", "b3", "b5"])]


def test_verbose_logs_a_line_a_request(overfit):
    """An operator had no line of the requests served, the refused ones included: -v adds uvicorn's,
    on stderr, without the colours uvicorn chose by stdout (a terminal here, stderr a log file)."""
    import pty

    port = _free_port()
    cmd = [sys.executable, "-m", "nmtkit", "serve", "-m", str(overfit / "run" / "last.pt"), "--port", str(port), "-v"]
    terminal, stdout = pty.openpty()
    proc = subprocess.Popen([*cmd, "--device", "cpu"], stdout=stdout, stderr=subprocess.PIPE, text=True)
    os.close(stdout)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if _get(url + "/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        assert _post(url + "/translate", {"sentences": [EN[0]]})[0] == 200
        assert _post(url + "/translate", {"sentences": []})[0] == 422
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
        os.close(terminal)
    assert '"POST /translate HTTP/1.1" 200' in err and '"POST /translate HTTP/1.1" 422' in err, err
    assert "\x1b[" not in err


def test_serve_gives_an_ignored_ctrl_c_back_to_its_caller(tmp_path):
    """serve() lets Ctrl-C stop a server started with it ignored; a library caller's process got
    Python's handler back for good, after a failed start too."""
    from nmtkit.core.settings import RuntimeConfig
    from nmtkit.serve.app import serve
    from nmtkit.serve.settings import ServerConfig

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(UserError):
            serve([str(tmp_path / "none.pt")], ServerConfig(port=0), RuntimeConfig(device="cpu"))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
