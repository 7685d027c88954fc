"""nmtkit serve on a free loopback port: it translates, batches concurrent requests, answers
every bad request with a 4xx JSON error and keeps serving, and stops cleanly on SIGTERM."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import EN

pytest.importorskip("fastapi", reason="nmtkit serve needs the serve extra (make install has it)")
pytest.importorskip("uvicorn", reason="nmtkit serve needs the serve extra (make install has it)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url, body, content_type="application/json"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def server(overfit):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "nmtkit", "serve", "-m", str(overfit / "run" / "last.pt"),
                             "--port", str(port), "--threads", "1", "--max-sentences", "8", "--max-length", "60",
                             "--max-body", "100000", "--shortlist"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
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
    words = first["word_attention"]                 # the same merged into words, beside the pieces
    assert len(words) == len(first["target_words"]) and len(words[0]) == len(first["source_words"])
    assert all(abs(sum(row) - 1) < 1e-3 for row in words)
    assert first["source_words"][-1] == first["target_words"][-1] == "</s>"
    assert not any(w.endswith("@@") for w in first["source_words"] + first["target_words"])
    assert all("-" in link for link in first["alignment"].split())
    status, onmt = _post(url + "/translator/translate", [{"src": EN[0], "id": 7}, {"src": EN[1], "id": 7}])
    assert status == 200 and onmt[0][0]["id"] == 7 and onmt[0][0]["tgt"] == out[0]["text"]
    assert isinstance(onmt[0][0]["pred_score"], float) and onmt[0][0]["n_best"] == 1


def test_concurrent_clients_get_their_own_translations(server):
    url, _ = server
    alone = {s: _post(url + "/translate", {"sentences": [s]})[1]["translations"][0]["text"] for s in EN[:5]}
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda s: (s, _post(url + "/translate", {"sentences": [s]})), EN[:5] * 8))
    assert all(status == 200 and body["translations"][0]["text"] == alone[s] for s, (status, body) in got)
    with urllib.request.urlopen(url + "/info", timeout=10) as res:
        info = json.loads(res.read())
    assert info["arch"] == "rnnsearch" and info["served"]["sentences"] >= 45
    assert info["served"]["batches"] < info["served"]["sentences"]          # requests shared batches


@pytest.mark.parametrize("body, status, says", [
    (b"", 400, "empty"),
    (b"{not json", 400, "not JSON"),
    (b'{"sentences": ["caf\xe9"]}', 400, "UTF-8"),
    ({"sentences": "one"}, 422, "list of strings"),
    ({"sentences": [1, 2]}, 422, "list of strings"),
    ({"sentences": []}, 422, "no sentences"),
    ({"sentences": ["a"], "beam": 0}, 422, "'beam'"),
    ({"sentences": ["a"], "beam": "5"}, 422, "'beam'"),
    ({"sentences": ["a"], "nbest": 4, "beam": 2}, 422, "more than 'beam'"),
    ({"sentences": ["a"], "colour": 1}, 422, "unknown field"),
    ({"sentences": ["word " * 10000]}, 413, "50,000 characters; at most 960"),   # refused before tokenizing
    ({"sentences": [EN[0], "a " * 61]}, 413, "sentence 1 has 61 subword units; at most 60"),
    ({"sentences": ["a"] * 9}, 413, "at most 8"),
    (b"[" + b'{"src": "a"},' * 10000 + b'{"src": "a"}]', 413, "bytes"),
    ([{"text": "a"}], 422, "'src'"),
    (7, 422, "object"),
])
def test_every_bad_request_is_a_json_error_and_the_server_goes_on(server, body, status, says):
    url, proc = server
    got, answer = _post(url + "/translate", body)
    assert got == status and says in answer["error"]
    assert _post(url + "/translate", {"sentences": [EN[0]]})[0] == 200
    assert proc.poll() is None


def test_the_page_is_served(server):
    url, _ = server
    with urllib.request.urlopen(url + "/", timeout=10) as res:
        page = res.read().decode()
    assert 'fetch("translate"' in page and 'createElement("canvas")' in page and "heatmap" in page
    assert 'id="pieces" type="checkbox"' in page and "t.word_attention" in page     # words, pieces on request


def test_the_answer_has_the_attention_over_pieces_and_over_words():
    import numpy as np

    from nmtkit.serve.app import native
    from nmtkit.translate.translator import Translation
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
    long = [" ".join(EN)[:180]] * 8                           # 8 sentences of ~35 words, beam 24
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
