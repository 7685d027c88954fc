"""The WMT'14 recipe: downloads, archives, SGML, the offline mirror and `make reproduce` end to end."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from bench.mirror import build_mirror, sgml
from nmtkit.core.errors import UserError
from nmtkit.data.download import Checksum, fetch, file_digest, read_checksums
from nmtkit.data.wmt14 import TEST, DamagedArchive, extract, unwrap_sgml, write_part

from .synthetic import pairs, write

ROOT = Path(__file__).resolve().parents[1]


def test_sgml_unwraps_segments_across_documents_with_entities():
    data = (
        b'<srcset setid="newstest2014" srclang="any">\n<doc docid="a" origlang="en">\n<p>\n'
        b'<seg id="1">  Tom &amp; Jerry  &lt;3 </seg>\n<seg id="2">L&apos;arc &quot;x&quot; caf\xc3\xa9</seg>\n'
        b'</p>\n</doc>\n<doc docid="b">\n<seg id="1">third\n line</seg>\n</doc>\n</srcset>\n'
    )
    assert unwrap_sgml(data) == ["Tom & Jerry <3", 'L\'arc "x" café', "third line"]
    with pytest.raises(UserError, match="no <seg>"):
        unwrap_sgml(b"<srcset></srcset>")


WMT_SGML = """<refset setid="newstest2014" srclang="any" trglang="fr">
<doc sysid="ref" docid="1012-bbc" genre="news" origlang="en">
<hl>
<seg id="1">Titre &amp; sous-titre</seg>
</hl>
<p>
<seg id="2" type="text">« Il a dit &quot;non&quot; » &lt;b&gt;</seg>
<SEG id=3>Numeric &#233; &#x2019; and&nbsp;named</SEG>
</p>
</doc>
<doc sysid="ref" docid="1013-cnn" genre="news" origlang="fr">
<p><seg id="1">Same   line  twice</seg><seg id="2">in
 one line</seg></p>
</doc>
</refset>
"""


def test_sgml_file_with_entities_attributes_and_documents_reads_as_before(tmp_path):
    """The hand-written reader's text, pinned when sacrebleu's was weighed (docs/design.md): that one
    reads 2 of these 5 segments, with "&amp;" left in, as it takes only lines that start "<seg "."""
    path = tmp_path / "newstest2014-fren-ref.fr.sgm"
    path.write_text(WMT_SGML, encoding="utf-8")
    assert unwrap_sgml(path.read_bytes(), str(path)) == [
        "Titre & sous-titre",
        '« Il a dit "non" » <b>',
        "Numeric é ’ and named",
        "Same line twice",
        "in one line",
    ]


@pytest.mark.parametrize(
    "data, message",
    [
        (b'<doc><seg id="1">one\n<seg id="2">two</seg></doc>', r"t.sgm: 2 <seg> tags but 1 closed by </seg>$"),
        (b'<seg id="1">caf\xe9</seg>', r"t.sgm: not valid UTF-8 at byte 15$"),
    ],
)
def test_malformed_sgml_is_one_line(data, message):
    with pytest.raises(UserError, match=message):
        unwrap_sgml(data, "t.sgm")


def test_sgml_round_trip_of_the_mirror_writer():
    lines = [b"a < b & c\n", b"  spaced   out \n", "é « x »\n".encode()]
    assert unwrap_sgml(sgml(lines, "t", "fr", "ref", doc_size=2)) == ["a < b & c", "spaced out", "é « x »"]


def _serve(directory: Path):
    """A local HTTP server that honours Range requests, as statmt.org's does."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(directory), **k)

        def log_message(self, *_):
            pass

        def send_head(self):  # type: ignore[override]
            rng = self.headers.get("Range")
            path = Path(self.translate_path(self.path))
            if not rng or not path.is_file():
                return super().send_head()
            start = int(rng.split("=")[1].split("-")[0])
            data = path.read_bytes()[start:]
            self.send_response(206)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return io.BytesIO(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("over_http", [False, True])
def test_download_resumes_and_verifies(tmp_path, over_http):
    src = tmp_path / "mirror" / "wmt14" / "x.tgz"
    src.parent.mkdir(parents=True)
    payload = os.urandom(300_000)
    src.write_bytes(payload)
    dest = tmp_path / "dl" / "wmt14" / "x.tgz"
    dest.parent.mkdir(parents=True)
    (dest.parent / "x.tgz.part").write_bytes(payload[:123_456])  # an interrupted download
    server = _serve(tmp_path / "mirror") if over_http else None
    base = f"http://127.0.0.1:{server.server_address[1]}" if server else str(tmp_path / "mirror")
    try:
        expected = Checksum("sha256", file_digest(src), len(payload))
        fetch(f"{base}/wmt14/x.tgz", dest, expected)
    finally:
        if server:
            server.shutdown()
    assert dest.read_bytes() == payload and not (dest.parent / "x.tgz.part").exists()


def test_download_rejects_a_wrong_file_and_records_unknown_digests(tmp_path):
    src = tmp_path / "m" / "a.tgz"
    src.parent.mkdir()
    src.write_bytes(b"archive bytes")
    with pytest.raises(UserError, match="md5 checksum mismatch"):
        fetch(str(src), tmp_path / "dl" / "a.tgz", Checksum("md5", "0" * 32))
    assert not (tmp_path / "dl" / "a.tgz").exists() and (tmp_path / "dl" / "a.tgz.bad").exists()
    sums = tmp_path / "dl" / "SHA256SUMS"
    fetch(str(src), tmp_path / "dl" / "a.tgz", None, sums, "a.tgz")
    assert read_checksums(sums)["a.tgz"].digest == file_digest(src)
    (tmp_path / "dl" / "a.tgz").write_bytes(b"tampered")
    assert not (tmp_path / "dl" / "a.tgz.bad").exists()  # the sound download's: gigabytes at full size
    with pytest.raises(UserError, match="a.tgz: 8 bytes where its checksum's file has 13; delete it"):
        fetch(str(src), tmp_path / "dl" / "a.tgz", None, sums, "a.tgz")
    (tmp_path / "dl" / "a.tgz").write_bytes(b"tampered byte")
    with pytest.raises(UserError, match="a.tgz: sha256 checksum mismatch; delete it"):
        fetch(str(src), tmp_path / "dl" / "a.tgz", None, sums, "a.tgz")
    with pytest.raises(UserError, match="cannot read"):
        fetch(str(tmp_path / "m" / "missing.tgz"), tmp_path / "dl" / "b.tgz", None)
    (tmp_path / "dl" / "c.tgz.part").write_bytes(b"garbled")  # a bad local part, not the mirror's fault
    with pytest.raises(UserError, match="the 7 bytes resumed from an earlier c.tgz.part may be at fault"):
        fetch(str(src), tmp_path / "dl" / "c.tgz", Checksum("sha256", file_digest(src)))
    assert (
        fetch(str(src), tmp_path / "dl" / "c.tgz", Checksum("sha256", file_digest(src))).read_bytes()
        == b"archive bytes"
    )


def test_extract_takes_members_and_unpacks_gzip(tmp_path):
    archive = tmp_path / "t.tar"
    with tarfile.open(archive, "w") as tar:
        for name, data in (("giga.en.gz", gzip.compress(b"one\ntwo\n")), ("other.txt", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    extract(archive, {"giga.en.gz": tmp_path / "giga.en"})
    assert (tmp_path / "giga.en").read_bytes() == b"one\ntwo\n"
    with pytest.raises(UserError, match="has no member nope$") as err:  # a whole archive: not one to download again
        extract(archive, {"nope": tmp_path / "n"})
    assert not isinstance(err.value, DamagedArchive)
    (tmp_path / "bad.tgz").write_bytes(b"not an archive")
    with pytest.raises(UserError, match="not a readable archive"):
        extract(tmp_path / "bad.tgz", {"x": tmp_path / "x"})


def test_a_damaged_compressed_archive_is_named_as_such_before_anything_is_copied(tmp_path):
    """Zeroed bytes in a .tgz inflated into garbage the streamed tar copied, exit 0, or ended it
    early: 'has no member', where gzip -t finds a CRC error."""
    import random

    rng = random.Random(0)
    archive = tmp_path / "t.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("a.en", "b.fr"):
            data = "".join(f"line {i} {rng.random()}\n" for i in range(20_000)).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    good = archive.read_bytes()
    extract(archive, {"b.fr": tmp_path / "b.fr"})
    assert (tmp_path / "b.fr").read_bytes().startswith(b"line 0 ")
    (tmp_path / "b.fr").unlink()
    for damaged in (good[: len(good) // 2] + bytes(50) + good[len(good) // 2 + 50 :], good[:-20]):
        archive.write_bytes(damaged)
        with pytest.raises(UserError, match=r"t.tgz: its gzip data is damaged \(.*\)"):
            extract(archive, {"b.fr": tmp_path / "b.fr"})
        assert not (tmp_path / "b.fr").exists()


def test_a_damaged_download_is_set_aside_with_its_recorded_digest_and_downloaded_again(tmp_path):
    """A digest recorded at download (none published) of an archive found damaged at unpacking
    refused every sound download after it; a damaged .gz member of a plain tar was a traceback."""
    from click.testing import CliRunner

    from bench.wmt14 import main as recipe

    mirror, dl = tmp_path / "mirror", tmp_path / "dl"
    archive = "wmt10/training-giga-fren.tar"
    (mirror / "wmt10").mkdir(parents=True)
    with tarfile.open(mirror / archive, "w") as tar:
        for lang in ("en", "fr"):
            data = gzip.compress("".join(f"{lang} line {i} {i * 7919 % 1000}\n" for i in range(30_000)).encode())
            info = tarfile.TarInfo(f"giga-fren.release2.fixed.{lang}.gz")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    good = (mirror / archive).read_bytes()
    damaged = good[:20_000] + b"Z" * 40 + good[20_040:]
    (mirror / archive).write_bytes(damaged)
    run = CliRunner().invoke
    fetched = run(recipe, ["fetch", "--dest", str(dl), "--mirror", str(mirror), archive])
    assert fetched.exit_code == 0, fetched.output
    assert archive in read_checksums(dl / "SHA256SUMS")  # the damaged file's, recorded
    unpacked = run(recipe, ["unpack", "giga-fren", "--downloads", str(dl), "--out", str(tmp_path / "c" / "giga")])
    assert unpacked.exit_code == 2 and "Traceback" not in unpacked.output, unpacked.output
    said = unpacked.output.strip().splitlines()[-1]
    assert "training-giga-fren.tar: not a readable archive (" in said and said.endswith(
        "and the digest recorded at its download dropped: run again to download it again"
    ), said
    assert not (dl / archive).exists() and (dl / f"{archive}.bad").read_bytes() == damaged
    assert archive not in read_checksums(dl / "SHA256SUMS")
    assert not list((tmp_path / "c").glob("giga*"))
    (mirror / archive).write_bytes(good)  # the mirror mended, or another one
    again = run(recipe, ["fetch", "--dest", str(dl), "--mirror", str(mirror), archive])
    assert again.exit_code == 0, again.output
    assert (dl / archive).read_bytes() == good and not (dl / f"{archive}.bad").exists()
    done = run(recipe, ["unpack", "giga-fren", "--downloads", str(dl), "--out", str(tmp_path / "c" / "giga")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "c" / "giga.fr").read_text().startswith("fr line 0 ")


def test_a_mirror_directory_that_is_not_there_is_said_so(tmp_path):
    """It was said of the first archive, as if the mirror lacked that one alone."""
    from click.testing import CliRunner

    from bench.wmt14 import main as recipe

    gone = tmp_path / "statmt"
    said = CliRunner().invoke(recipe, ["fetch", "--dest", str(tmp_path / "dl"), "--mirror", str(gone), "wmt14/dev.tgz"])
    assert said.exit_code == 2 and said.output.strip().splitlines()[-1].endswith(f"--mirror {gone}: no such directory")
    assert not (tmp_path / "dl").exists()


def test_a_cut_off_download_is_told_from_another_file(tmp_path):
    src = tmp_path / "m" / "a.tgz"
    src.parent.mkdir()
    src.write_bytes(b"archive bytes")
    with pytest.raises(UserError, match="13 bytes where its checksum's file has 20"):
        fetch(str(src), tmp_path / "dl" / "a.tgz", Checksum("sha256", file_digest(src), 20))


def _raw(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    write(raw / "train", pairs(2500, "animals", 1))
    write(raw / "valid", pairs(60, "animals", 2))
    write(raw / "test", pairs(40, "animals", 3))
    return raw


def test_mirror_has_wmt_layout_and_the_test_set_unwraps(tmp_path):
    sums = build_mirror(_raw(tmp_path), tmp_path / "mirror", pairs=100, dev_lines=20, test_lines=30)
    listed = read_checksums(sums)
    assert set(listed) == {
        "wmt13/training-parallel-europarl-v7.tgz",
        "wmt13/training-parallel-commoncrawl.tgz",
        "wmt13/training-parallel-un.tgz",
        "wmt14/training-parallel-nc-v9.tgz",
        "wmt10/training-giga-fren.tar",
        "wmt14/dev.tgz",
        "wmt14/test-full.tgz",
    }
    assert all(c.matches(tmp_path / "mirror" / rel) for rel, c in listed.items())
    n = write_part(tmp_path / "mirror" / TEST.archive, TEST, ("en", "fr"), tmp_path / "out" / "newstest2014")
    assert n == 30
    assert (tmp_path / "out" / "newstest2014.en").read_text(encoding="utf-8").splitlines()[0] == (
        tmp_path / "raw" / "test.en"
    ).read_text(encoding="utf-8").splitlines()[0]


def _make(
    *args: str, cwd: Path = ROOT, gpus: str | None = None, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The recipe's make; ``gpus``: its CUDA_VISIBLE_DEVICES (none set otherwise, whatever the
    machine's); ``path``: a folder searched for commands before the others."""
    tools = [f"PY={sys.executable}", f"NMTKIT={sys.executable} -m nmtkit"]
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    if path is not None:
        env["PATH"] = f"{path}:{env['PATH']}"
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT / "examples" / "wmt14_en_fr"), *tools, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT), **({"CUDA_VISIBLE_DEVICES": gpus} if gpus is not None else {})},
    )


def _trains(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [cmd for cmd in out.stdout.replace("\\\n", " ").splitlines() if " train " in cmd]


def test_dry_run_shows_the_full_size_commands():
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=4")
    assert out.returncode == 0, out.stderr
    for expected in (
        "http://www.statmt.org",
        "wmt10/training-giga-fren.tar",
        "--keep-words 348M",
        "--in-domain /nonexistent/work/dev/newstest2012-13",  # Cho et al.'s in-domain text
        "--no-normalize-punct --max-len 0 --max-ratio 0 --no-dedup",  # Moses tokens, nothing else
        "--size 30000",
        "--arch rnnsearch",
        "--max-len 50",
        "--max-len 30",
        "--beam 12",
        "--no-unk",
        "--clean default --by-length",  # Figure 2's text cleaned as Table 1's
        "report",
    ):
        assert expected in out.stdout, expected
    # each model for the updates of the paper's Table 2, within the paper's 5 days
    budgets = {"rnnencdec-30": 846000, "rnnencdec-50": 600000, "rnnsearch-30": 471000, "rnnsearch-50": 288000}
    for model, updates in budgets.items():
        (train,) = [t for t in _trains(out) if f"--save-dir /nonexistent/work/runs/{model} " in t]
        assert f"--max-updates {updates} " in train
        assert train.split(" || ")[0].endswith("--max-minutes 7200 --valid-every 10000 --save-every 2000")
        assert f"2>>/nonexistent/work/runs/{model}/train.log " in train  # several at once: a log each


def test_several_gpus_train_a_model_each_on_the_graph_path_or_one_at_a_time_over_all_with_ddp():
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=4", "DEVICE=H100")
    assert out.returncode == 0, out.stderr
    # the data a step at a time, listed once; then the models, NGPU at once (-k: a model that fails
    # stops only its GPU's later ones)
    lines = out.stdout.splitlines()
    fetches = [line for line in lines if " fetch " in line]
    assert lines[0] == "make data" and fetches and len(fetches) == len(set(fetches)), lines
    assert "make -k -j4 -o /nonexistent/work/data-bin/manifest.json models" in lines
    trains = _trains(out)
    assert [t.split()[0] for t in trains] == [f"CUDA_VISIBLE_DEVICES={i}" for i in range(4)]
    assert (
        all("--device cuda --cuda-graphs --fused-steps" in t for t in trains)
        and "torch.distributed.run" not in out.stdout
    )
    assert '--device "H100"' in out.stdout.replace("\\\n", " ")  # Table 2: each model had one GPU
    # the tests too, each model's on its GPU, four steps at once
    lines = out.stdout.replace("\\\n", " ").splitlines()
    assert any(
        line.startswith("make -j4 -Otarget --no-print-directory ") and line.endswith("/report.md") for line in lines
    ), lines
    on: dict[str, set[str]] = {}
    for line in lines:
        if found := re.search(r" (?:translate|score) -m \S+/runs/([^/]+)/best\.pt ", line):
            on.setdefault(found[1], set()).add(line.split()[0])
    assert on == {
        m: {f"CUDA_VISIBLE_DEVICES={i}"}
        for i, m in enumerate(("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50"))
    }, on
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=4", "PARALLEL=ddp", "DEVICE=H100")
    assert out.returncode == 0, out.stderr
    assert '--device "4× H100"' in out.stdout.replace("\\\n", " ")
    trains = _trains(out)
    assert len(trains) == 4 and all(
        "torch.distributed.run --standalone --nproc-per-node 4 -m nmtkit train" in t for t in trains
    )
    assert "--cuda-graphs" not in out.stdout and "-j4" not in out.stdout  # DDP keeps the eager update
    assert "train.log" not in out.stdout  # one training at a time: its log live on the terminal
    # two GPUs, four models: two at a time, each GPU's second after its first, on the GPUs visible
    out = _make("-n", "-p", "models", "WORK=/nonexistent/work", gpus="5,7")
    assert out.returncode == 0, out.stderr
    runs = "/nonexistent/work/runs"
    assert (
        f"{runs}/rnnsearch-30/done: /nonexistent/work/data-bin/manifest.json {runs}/rnnsearch-30/train-options "
        f"| {runs}/rnnencdec-30/done" in out.stdout
    )
    assert [t.split()[0] for t in _trains(out)] == ["CUDA_VISIBLE_DEVICES=5", "CUDA_VISIBLE_DEVICES=7"] * 2
    assert f"rnnsearch-50: training on GPU 7 (its log: {runs}/rnnsearch-50/train.log)" in out.stdout
    for wrong, gpus in (("NGPU=3", "0,1"), ("PARALLEL=both", None)):
        out = _make("-n", "reproduce", "WORK=/nonexistent/work", wrong, gpus=gpus)
        assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_two_gpus_train_two_models_at_once_and_each_gpus_models_one_after_another(tmp_path):
    """make -j over the models as the recipe plans them, with a stand-in for nmtkit train that
    records when each training ran and on which GPU."""
    fake = tmp_path / "fake-nmtkit"
    fake.write_text(
        "#!/bin/sh\n"
        'dir=$(echo "$@" | sed "s/.*--save-dir \\([^ ]*\\).*/\\1/")\n'
        'mkdir -p "$dir" && echo "$CUDA_VISIBLE_DEVICES $(date +%s.%N)" > "$dir/began"\n'
        'echo "update 1 of $dir" >&2\n'
        'case "$dir" in *rnnencdec-50) [ -e "$dir/../fail" ] && echo "error: out of memory" >&2 && exit 3;; esac\n'
        'sleep 1 && date +%s.%N > "$dir/ended"\n'
    )
    fake.chmod(0o755)
    work = tmp_path / "work"
    out = _make(f"WORK={work}", "NGPU=2", "-j2", f"NMTKIT={fake}", "-o", f"{work}/data-bin/manifest.json", "models")
    assert out.returncode == 0, out.stderr
    runs = {m: work / "runs" / m for m in ("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50")}
    began = {m: (r / "began").read_text().split() for m, r in runs.items()}
    ended = {m: float((r / "ended").read_text()) for m, r in runs.items()}
    assert {m: b[0] for m, b in began.items()} == {
        "rnnencdec-30": "0",
        "rnnencdec-50": "1",
        "rnnsearch-30": "0",
        "rnnsearch-50": "1",
    }
    assert float(began["rnnsearch-30"][1]) >= ended["rnnencdec-30"]  # GPU 0's second after its first
    assert float(began["rnnsearch-50"][1]) >= ended["rnnencdec-50"]
    assert float(began["rnnencdec-50"][1]) < ended["rnnencdec-30"]  # the two GPUs at once
    # each its own log, named as it starts, rather than four interleaved on the terminal
    for m, r in runs.items():
        assert (r / "train.log").read_text() == f"update 1 of {r}\n" and f"{m}: training on GPU" in out.stdout
        assert f"update 1 of {r}" not in out.stderr
    # a training that fails shows its log's end, and stops only the one after it on its GPU
    for r in runs.values():
        shutil.rmtree(r)
    (work / "runs" / "fail").touch()
    out = _make(
        f"WORK={work}", "NGPU=2", "-k", "-j2", f"NMTKIT={fake}", "-o", f"{work}/data-bin/manifest.json", "models"
    )
    assert out.returncode != 0 and "error: out of memory" in out.stderr and "Error 3" in out.stderr, out.stderr
    assert [m for m, r in runs.items() if (r / "ended").exists()] == ["rnnencdec-30", "rnnsearch-30"]


def test_the_in_domain_text_is_one_of_the_corpora_by_name_or_any_prefix(tmp_path):
    for lang in ("en", "fr"):  # a prefix of the user's own: make needs its files
        (tmp_path / f"in-domain.{lang}").write_text("a line\n", encoding="utf-8")
    by_name = _make("-n", "reproduce", "WORK=/nonexistent/work", "IN_DOMAIN=news-commentary-v9")
    by_prefix = _make("-n", "reproduce", "WORK=/nonexistent/work", f"IN_DOMAIN={tmp_path}/in-domain")
    assert by_name.returncode == 0 and by_prefix.returncode == 0, by_name.stderr + by_prefix.stderr
    assert "--in-domain /nonexistent/work/corpora/news-commentary-v9 " in by_name.stdout
    assert f"--in-domain {tmp_path}/in-domain " in by_prefix.stdout


def test_one_gpu_trains_on_the_graph_path_and_a_cpu_does_not():
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=1")
    assert out.returncode == 0, out.stderr
    trains = _trains(out)
    assert len(trains) == 4 and all("--cuda-graphs --fused-steps --max-minutes 7200" in t for t in trains), trains
    assert "torch.distributed.run" not in out.stdout and "CUDA_VISIBLE_DEVICES" not in out.stdout
    assert "train.log" not in out.stdout  # one training at a time: its log live on the terminal
    # TRAIN_ARGS replaced keeps the graphs; GPU_PATH= drops them
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=1", "TRAIN_ARGS=--max-updates 5")
    assert all(t.endswith("--cuda-graphs --fused-steps --max-updates 5") for t in _trains(out)), _trains(out)
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=1", "GPU_PATH=")
    assert "--cuda-graphs" not in out.stdout
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "NGPU=0", "TRAIN_ARGS=--max-updates 5")
    assert len(_trains(out)) == 4 and "--cuda-graphs" not in out.stdout and "train.log" not in out.stdout


def test_no_gpu_refuses_the_papers_updates_before_any_download(tmp_path):
    """Without a GPU the full-size recipe downloaded 6.5 GB, then trained on the CPU for months."""
    for goal in ("reproduce", "models"):
        out = _make(goal, f"WORK={tmp_path}/work", "NGPU=0")
        assert out.returncode == 2 and "no GPU here (NGPU=0)" in out.stderr and "TRAIN_ARGS=" in out.stderr
        assert out.stdout == "" and not (tmp_path / "work").exists()
    dry = _make("-n", "reproduce", f"WORK={tmp_path}/work", "NGPU=0")  # the commands, with a warning
    assert dry.returncode == 0 and "no GPU here" in dry.stderr and len(_trains(dry)) == 4
    assert "no GPU here" not in _make("-n", "data", f"WORK={tmp_path}/work", "NGPU=0").stderr
    refused = _make(f"{tmp_path}/work/report.md", f"WORK={tmp_path}/work", "NGPU=0")
    assert refused.returncode == 2 and "no GPU here" in refused.stderr
    for model in ("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50"):  # trained on a GPU, tested here
        (tmp_path / "work" / "runs" / model).mkdir(parents=True)
        (tmp_path / "work" / "runs" / model / "done").touch()
    assert "no GPU here" not in _make("-n", "reproduce", f"WORK={tmp_path}/work", "NGPU=0").stderr


def test_table_2_names_the_first_gpu_trained_on_or_the_cpu(tmp_path):
    """A machine's GPUs hidden (CUDA_VISIBLE_DEVICES=) train on the CPU, which Table 2 said was
    nvidia-smi's first GPU; with GPUs, the first of those trained on is named."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$*" in *-L*) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)";; '
        '*) while [ "$1" != -i ]; do shift; done; echo "NVIDIA H200 #$2";; esac\n'
    )
    smi.chmod(0o755)

    def device(gpus: str | None) -> str:
        out = _make("-n", "reproduce", "WORK=/nonexistent/work", gpus=gpus, path=tmp_path)
        assert out.returncode == 0, out.stderr
        return re.findall(r'--device "([^"]*)"', out.stdout)[-1]

    assert device("") == "CPU"
    assert device("3") == "NVIDIA H200 #3"
    assert device(None) == "NVIDIA H200 #0"


MADE = ("VENV", "PY", "NMTKIT")


def test_the_top_make_reproduce_hands_on_relative_absolute_and_path_commands_whole(tmp_path):
    def handed(*args: str) -> str:
        out = subprocess.run(
            ["make", "-n", "-C", str(ROOT), "INSTALLED=", "WORK=/nonexistent/work", *args, "reproduce"],
            capture_output=True,
            text=True,
            # a make running these tests passes its own variables on, and VENV, PY or NMTKIT may be exported
            env={k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", *MADE}},
        )
        assert out.returncode == 0, out.stderr
        return out.stdout[out.stdout.index("examples/wmt14_en_fr reproduce") :].replace("\\\n", " ")

    assert f'PY="{ROOT}/.venv/bin/python" NMTKIT="{ROOT}/.venv/bin/nmtkit"' in handed()
    line = handed(f"PY={sys.executable}", "NMTKIT=python3 -m nmtkit")
    assert f'PY="{sys.executable}" NMTKIT="python3 -m nmtkit"' in line
    # a mirror named from where the user stands, not from the example's directory
    line = handed("MIRROR=statmt", "CHECKSUMS=statmt/sums.txt")
    assert f"MIRROR='{ROOT}/statmt' CHECKSUMS='{ROOT}/statmt/sums.txt'" in line
    assert f"WORK='{ROOT}/scratch/wmt'" in handed("WORK=scratch/wmt")  # as the mirror: from here
    assert f"MIRROR='{ROOT.parent}/my mirror'" in handed("MIRROR=../my mirror")  # a space was a word break
    assert "MIRROR='http://x.org/a'" in handed("MIRROR=http://x.org/a") and "MIRROR=" not in handed()
    # the in-domain text: a prefix from here, with or without a /, made absolute; a corpus's name as it is
    assert "IN_DOMAIN='europarl-v7'" in handed("IN_DOMAIN=europarl-v7")
    for prefix in (tmp_path / "news", ROOT / f"in-domain-{os.getpid()}"):
        try:
            for lang in ("en", "fr"):
                Path(f"{prefix}.{lang}").write_text("")
            assert f"IN_DOMAIN='{prefix}'" in handed(f"IN_DOMAIN={os.path.relpath(prefix, ROOT)}")
        finally:
            for lang in ("en", "fr"):
                Path(f"{prefix}.{lang}").unlink()


@pytest.mark.parametrize(
    "setting, said",
    [
        ("MODELS=rnnsearch", "MODELS: 'rnnsearch' is not ARCH-N"),  # trained with --max-len --max-minutes
        ("MODELS=rnnsearch-50 transformer-50", "MODELS: 'transformer-50' is not ARCH-N"),
        ("MODELS=rnnsearch-5x", "MODELS: 'rnnsearch-5x' is not ARCH-N"),
        ("CORPORA=europarl un", "CORPORA: 'europarl' is not one of"),  # after the other downloads
        ("IN_DOMAIN=nope", "IN_DOMAIN: 'nope' is none of CORPORA"),
        ("SELECTION=axelrod2", "SELECTION is axelrod or schwenk, not 'axelrod2'"),
    ],
)
def test_settings_the_recipe_cannot_run_are_refused_before_any_work(setting, said):
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", setting)
    assert out.returncode != 0 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "fetch" not in out.stdout


def test_the_recipe_takes_models_corpora_and_in_domain_text_it_can_run():
    for setting in ("MODELS=luong-50 rnnencdec-30", "IN_DOMAIN=un", "IN_DOMAIN=/nonexistent/work/corpora/un"):
        out = _make("-n", "reproduce", "WORK=/nonexistent/work", setting)
        assert out.returncode == 0 and "fetch" in out.stdout, (setting, out.stderr)


def test_the_recipe_refuses_a_work_directory_with_a_space_and_quotes_the_mirror(tmp_path):
    out = _make("-n", "reproduce", "WORK=/tmp/a b")
    assert out.returncode != 0 and "WORK, DL and RUNS must not contain spaces" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = _make("-n", "reproduce", "WORK=/nonexistent/work", "MIRROR=/m i/statmt", "CHECKSUMS=/m i/sums")
    assert "--mirror '/m i/statmt' --checksums '/m i/sums'" in out.stdout
    # a score a killed job left half-written is never taken for done
    assert "--output-format json > $@.tmp && mv $@.tmp $@" in (ROOT / "examples/wmt14_en_fr/Makefile").read_text()


def _offline(tmp_path: Path, pairs: int, *settings: str, updates: int) -> tuple[Path, list[str]]:
    """A mirror of ``pairs`` pairs built from generated text, and make reproduce's arguments over it:
    tiny models trained ``updates`` updates, then ``settings``."""
    mirror = tmp_path / "mirror"
    build_mirror(_raw(tmp_path), mirror, pairs=pairs, dev_lines=pairs // 10, test_lines=pairs // 15)
    work = tmp_path / "work"
    train = f"--preset tiny --max-updates {updates} --valid-every {updates} --batch-size 32 --no-valid-bleu --threads 1"
    args = ["reproduce", f"WORK={work}", f"MIRROR={mirror}", f"CHECKSUMS={mirror}/checksums.txt", "JOBS=1", "BEAM=2"]
    return work, [*args, *settings, f"TRAIN_ARGS={train}"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_reproduce_runs_offline_on_a_mirror(tmp_path):
    work, args = _offline(tmp_path, 400, "KEEP_WORDS=6k", "VOCAB_SIZE=500", "NGPU=0", "FIGURE3=1-2", updates=8)
    out = _make(*args)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = (work / "report.md").read_text(encoding="utf-8")
    for heading in ("Table 1", "Figure 2", "Figure 3", "Table 2"):
        assert f"## {heading}" in report
    for model in ("RNNencdec-30", "RNNencdec-50", "RNNsearch-30", "RNNsearch-50"):
        assert sum(line.startswith(f"| {model} |") for line in report.splitlines()) == 2  # Tables 1 and 2
    assert sum(" (8) / " in line for line in report.splitlines()) == 4  # Table 2's dev NLL: best.pt's update
    for picture in ("fig2-bleu-by-length.png", "fig3-align-1.png", "fig3-align-2.png"):
        assert f"{picture}" in report and (work / picture).stat().st_size > 1000
    # the No-UNK translations are kept beside the others, not deleted as make's intermediates
    assert "rm " not in out.stdout
    assert all((work / "runs" / m / "test.nounk.hyp").exists() for m in ("rnnencdec-30", "rnnsearch-50"))
    chosen = json.loads((work / "selected" / "select.json").read_text())
    assert chosen["kept_tgt_words"] >= 6000 and chosen["kept_pairs"] < chosen["pairs"]
    data = f"with newstest2012-13 as in-domain text kept {chosen['kept_pairs']:,} of {chosen['pairs']:,} pairs"
    assert data in report and f"{chosen['kept_tgt_words']:,} of {chosen['tgt_words']:,} target words in Moses" in report
    # Done is done: a second run does nothing, an interrupted step is redone alone.
    again = _make(*args[1:], "-q", str(work / "report.md"))
    assert again.returncode == 0, "make -q: the finished run is not up to date"
    # what searched and scored, in the report and on the terminal; another beam translates again, alone
    assert "Searched with `--beam 2`. sacreBLEU's signatures: `nrefs:1|case:mixed|" in report
    assert out.stdout.index("## Table 1") < out.stdout.index(f"report: {work}/report.md")
    beam = _make(*[a if a != "BEAM=2" else "BEAM=3" for a in args[1:]], "-n", str(work / "report.md"))
    assert "--beam 3" in beam.stdout and "nmtkit score" in beam.stdout and "nmtkit train" not in beam.stdout
    (work / "runs" / "rnnsearch-50" / "score.json").unlink()
    rerun = _make(*args)
    assert rerun.returncode == 0
    assert "nmtkit score" in rerun.stdout and "nmtkit train" not in rerun.stdout and "fetch" not in rerun.stdout
    assert '--device "CPU"' in out.stdout.replace("\\\n", " ")
    # A step redone, as the docs say to (its file deleted, a setting changed), and what follows: the
    # models of the earlier data-bin start over where train would refuse to resume them on this one.
    (work / "selected" / "done").unlink()
    redone = _make(*[a if a != "KEEP_WORDS=6k" else "KEEP_WORDS=5k" for a in args], "MODELS=rnnsearch-50")
    assert redone.returncode == 0, redone.stdout[-3000:] + redone.stderr[-3000:]
    assert "rnnsearch-50: its last.pt was of an earlier data-bin (removed): training starts over" in redone.stdout
    last = work / "runs" / "rnnsearch-50" / "last.pt"
    assert last.stat().st_mtime > (work / "data-bin" / "manifest.json").stat().st_mtime
    assert json.loads((work / "selected" / "select.json").read_text())["kept_tgt_words"] < chosen["kept_tgt_words"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_reproduce_with_two_gpus_trains_two_models_at_once_and_translates_a_model_trained_again(tmp_path):
    """The several-GPU path end to end (on a CPU, GPU_PATH= and the GPUs named only): the models by a
    make of their own, two at once, then the tests and the report by a second; a model whose training
    is newer than its translations is translated again."""
    work, args = _offline(
        tmp_path, 300, "KEEP_WORDS=4k", "VOCAB_SIZE=400", "NGPU=2", "GPU_PATH=", "FIGURE3=1", updates=4
    )
    out = _make(*args)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "make -k -j2 models" in out.stdout
    assert not [line for line in out.stdout.splitlines() if line.startswith("make ") and " -o " in line]  # dry runs'
    on = {t.split("--save-dir ")[1].split()[0].rsplit("/", 1)[1]: t.split()[0] for t in _trains(out)}
    assert on == {
        "rnnencdec-30": "CUDA_VISIBLE_DEVICES=0",
        "rnnencdec-50": "CUDA_VISIBLE_DEVICES=1",
        "rnnsearch-30": "CUDA_VISIBLE_DEVICES=0",
        "rnnsearch-50": "CUDA_VISIBLE_DEVICES=1",
    }
    assert "## Table 2" in (work / "report.md").read_text(encoding="utf-8")
    for model in on:
        assert f"training {model.split('-')[0]} " in (work / "runs" / model / "train.log").read_text(encoding="utf-8")
    done = work / "runs" / "rnnsearch-30" / "done"
    later = (work / "report.md").stat().st_mtime + 10
    os.utime(done, (later, later))  # as if trained again
    again = _make(*args)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    translated = [line for line in again.stdout.splitlines() if " translate -m " in line]
    assert translated and all("/rnnsearch-30/best.pt" in line for line in translated), translated
    assert not _trains(again)


def test_schwenk_release_is_concatenated_pairwise(tmp_path):
    from nmtkit.data.wmt14 import extract_schwenk

    archive = tmp_path / "bitexts.tgz"
    members = {
        "bitexts.selected/b.en.gz": b"b1\n",
        "bitexts.selected/b.fr.gz": b"B1\n",
        "bitexts.selected/a.en.gz": b"a1\na2\n",
        "bitexts.selected/a.fr.gz": b"A1\nA2\n",
    }
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in members.items():
            packed = gzip.compress(data)
            info = tarfile.TarInfo(name)
            info.size = len(packed)
            tar.addfile(info, io.BytesIO(packed))
    assert extract_schwenk(archive, tmp_path / "sel" / "train", ("en", "fr")) == 3
    assert (tmp_path / "sel" / "train.en").read_bytes() == b"a1\na2\nb1\n"
    assert (tmp_path / "sel" / "train.fr").read_bytes() == b"A1\nA2\nB1\n"


def test_the_reports_epochs_are_the_runs_own():
    """Updates × batch / pairs counted 48.48 epochs where the run was in its 43rd: its last batch
    of each epoch partial, and the length buckets cutting more."""
    from types import SimpleNamespace

    import numpy as np

    from bench.report import _epochs
    from nmtkit.data.batching import Batches

    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 40, 495), rng.integers(1, 40, 495)
    cfg = SimpleNamespace(batch_size=80, pool=1, max_len=50, seed=1, max_tokens=0, update_freq=1)
    batches = Batches(src, tgt, 80, 1, 50, 1, 0)
    drawn = iter(batches)
    for _ in range(300):
        next(drawn)
    epochs = _epochs(batches.state_dict(), src, tgt, cfg)
    assert epochs == pytest.approx(300 / 7) and int(epochs) + 1 == batches.drawn_epoch + 1 == 43
    assert _epochs(None, src, tgt, cfg) is None


def _tar(path: Path, members: dict[str, bytes], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_test_set_whose_documents_stand_in_another_order_is_refused_before_anything_is_written(tmp_path):
    """Read in file order, a reference with its documents (or segment ids) reordered paired each
    sentence with another's translation, exit 0."""
    lines = [f"line {i}\n".encode() for i in range(6)]
    src, ref = sgml(lines, "t", "en", "src", doc_size=2), sgml(lines, "t", "fr", "ref", doc_size=2)
    docs = re.split(rb"(?=<doc )", ref)
    swapped = docs[0] + docs[2] + docs[1] + docs[3]  # bible.2 before bible.1
    names = [f"test-full/newstest2014-fren-{role}.{lang}.sgm" for role, lang in (("src", "en"), ("ref", "fr"))]
    for reference, said in (
        (swapped, "segment 1 is document 'bible.1' segment '1' in the en file but 'bible.2' '1' in the fr one"),
        (ref.replace(b'<seg id="2">', b'<seg id="9">'), "segment 2 is document 'bible.1' segment '2' in the en"),
    ):
        archive = _tar(tmp_path / "test-full.tgz", dict(zip(names, (src, reference))), "w:gz")
        with pytest.raises(UserError, match=re.escape(said)):
            write_part(archive, TEST, ("en", "fr"), tmp_path / "out" / "newstest2014")
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    archive = _tar(tmp_path / "test-full.tgz", dict(zip(names, (src, ref))), "w:gz")
    assert write_part(archive, TEST, ("en", "fr"), tmp_path / "out" / "newstest2014") == 6
    assert (tmp_path / "out" / "newstest2014.fr").read_text().splitlines()[5] == "line 5"


def test_dev_files_without_a_final_newline_are_joined_line_for_line(tmp_path):
    from nmtkit.data.wmt14 import concat

    (tmp_path / "a").write_bytes(b"one\ntwo")  # newstest2012 as an editor may leave it
    (tmp_path / "b").write_bytes(b"three\n")
    (tmp_path / "e").write_bytes(b"")
    concat([tmp_path / "a", tmp_path / "e", tmp_path / "b"], tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == b"one\ntwo\nthree\n"
    # Schwenk's release, its members joined the same way
    from nmtkit.data.wmt14 import extract_schwenk

    members = {
        f"bitexts.selected/{stem}.{lang}.gz": gzip.compress(text)
        for stem, texts in (("a", (b"one\ntwo", b"un\ndeux")), ("b", (b"three\n", b"trois\n")))
        for lang, text in zip(("en", "fr"), texts)
    }
    archive = _tar(tmp_path / "bitexts.tgz", members, "w:gz")
    assert extract_schwenk(archive, tmp_path / "s" / "train", ("en", "fr")) == 3
    assert (tmp_path / "s" / "train.fr").read_bytes() == b"un\ndeux\ntrois\n"


def test_a_plain_tar_cut_at_a_block_edge_is_set_aside_with_nothing_of_it_kept(tmp_path):
    """Cut between members, the tar read as a whole one: 'has no member', exit 2 at every run,
    the archive kept and the first member's corpus left behind."""
    from click.testing import CliRunner

    from bench.wmt14 import main as recipe

    dl = tmp_path / "dl"
    (dl / "wmt10").mkdir(parents=True)
    members = {f"giga-fren.release2.fixed.{lang}.gz": gzip.compress(f"{lang} line\n".encode()) for lang in ("en", "fr")}
    whole = _tar(tmp_path / "whole.tar", members).read_bytes()
    cut = whole[: 512 * (1 + -(-len(members["giga-fren.release2.fixed.en.gz"]) // 512))]  # the first member alone
    archive = dl / "wmt10" / "training-giga-fren.tar"
    archive.write_bytes(cut)
    r = CliRunner().invoke(recipe, ["unpack", "giga-fren", "--downloads", str(dl), "--out", str(tmp_path / "c" / "g")])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "has no member giga-fren.release2.fixed.fr.gz, and ends without a tar's end (cut short)" in r.output
    assert "run again" in r.output
    assert not archive.exists() and (dl / "wmt10" / "training-giga-fren.tar.bad").exists()
    assert not list((tmp_path / "c").glob("g*"))


@pytest.mark.parametrize(
    "content, said",
    [
        (b"wmt14/dev.tgz sha256:abc 12\n\xff\xfe bad\n", "line 2 is not valid UTF-8"),
        (b"wmt14/dev.tgz shake_128:abc 12\n", "line 1: 'shake_128' is not one of blake2b"),
    ],
)
def test_a_checksums_file_that_cannot_be_read_is_one_line(tmp_path, content, said):
    (tmp_path / "sums").write_bytes(content)
    with pytest.raises(UserError, match=re.escape(said)):
        read_checksums(tmp_path / "sums")


def test_a_checksums_file_with_a_byte_order_mark_or_capitals_is_read(tmp_path):
    from nmtkit.data.download import forget_checksum

    (tmp_path / "sums").write_bytes("\ufeffwmt14/dev.tgz SHA256:ABC 12\nwmt14/x.tgz sha256:def\n".encode())
    assert read_checksums(tmp_path / "sums")["wmt14/dev.tgz"] == Checksum("sha256", "abc", 12)
    assert forget_checksum(tmp_path / "sums", "wmt14/dev.tgz")  # the first entry, behind the mark, was kept
    assert list(read_checksums(tmp_path / "sums")) == ["wmt14/x.tgz"]
