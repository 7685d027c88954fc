"""Tiny fixtures: a few lines of parallel Bible-like text and a miniature bible.db."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nmtkit.core.machine import this_cpu

# bfloat16 on a CPU: nmtkit refuses --bf16 where the hardware would only emulate it
needs_native_bf16 = pytest.mark.skipif(
    not this_cpu().native_bf16,
    reason="this CPU has no native bfloat16 (AVX512-BF16 or AMX), so nmtkit refuses --bf16 on it",
)

# cuBLAS is deterministic only with a fixed workspace, set before CUDA starts (no effect on CPUs)
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

# The make that runs the suite (make test, make test-torch TORCH=…) hands its command-line variables
# to every make a test runs through MAKEFLAGS: test-torch's TORCH_CONSTRAINT changed what they print
for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
    os.environ.pop(name, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (a stable sort: in file order among them): spread over the workers at
    the start of a run on every core, they leave the short ones to fill the gaps, not a minutes'
    tail where one worker runs the last long test alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _stop_signals_restored() -> Any:
    """A command run in this process that a signal ended lets later stop signals go (it is ending):
    the suite's own handlers come back after each test."""
    import signal

    stops = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    before = {s: signal.getsignal(s) for s in stops}
    yield
    for s, handler in before.items():
        if handler is not None:
            signal.signal(s, handler)


EN = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep.",
    "And God said, Let there be light: and there was light.",
    "And God saw the light, that it was good.",
    "And God called the light Day, and the darkness he called Night.",
    "God`s Spirit was hovering [over] the waters.",
    "And God said, Let there be light: and there was light.",
    "Amen.",
]
FR = [
    "Au commencement, Dieu créa les cieux et la terre.",
    "La terre était informe et vide: il y avait des ténèbres à la surface de l'abîme.",
    "Dieu dit: Que la lumière soit! Et la lumière fut.",
    "Dieu vit que la lumière était bonne.",
    "Dieu appela la lumière jour, et il appela les ténèbres nuit.",
    "(1:3) L’Esprit de #Dieu se mouvait au-dessus des eaux.",
    "Dieu dit: Que la lumière soit! Et la lumière fut.",
    "[]",
]


def write_pair(prefix: Path, en: list[str], fr: list[str]) -> Path:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.en").write_text("".join(x + "\n" for x in en), encoding="utf-8")
    Path(f"{prefix}.fr").write_text("".join(x + "\n" for x in fr), encoding="utf-8")
    return prefix


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    """``raw/{train,valid,test}.{en,fr}`` — train is the lines above; valid/test small."""
    d = tmp_path / "raw"
    write_pair(d / "train", EN, FR)
    write_pair(d / "valid", EN[:3], FR[:3])
    write_pair(d / "test", EN[2:5] + [""], FR[2:5] + [""])
    return d


@pytest.fixture
def corpus(raw: Path, tmp_path: Path) -> Path:
    """``raw`` binarized in ``tmp_path/bin`` (its vocabularies in ``tmp_path/vocab``)."""
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    return tmp_path / "bin"


@pytest.fixture
def bible_db(tmp_path: Path) -> Path:
    """A bible.db with the real schema: 3 verses in each of a few books, every version."""
    db = tmp_path / "bible.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE bible (id INTEGER PRIMARY KEY, bbName TEXT, bNumber INT, cNumber INT, vNumber INT, vText TEXT)"
    )
    books = [1, 8, 17, 19, 21, 40, 50, 51]  # train, test, valid, train, test, train, test, valid
    rows = [(v, b, 1, n, f"{v} book{b} verse{n}") for v in "k43lo52" for b in books for n in (1, 2, 3)]
    con.executemany("INSERT INTO bible (bbName, bNumber, cNumber, vNumber, vText) VALUES (?,?,?,?,?)", rows)
    con.commit()
    con.close()
    return db


# The tiny model on Adam at 0.01: the runs that train a few updates to test what surrounds the model.
TINY_ADAM = ("--preset", "tiny", "--optimizer", "adam", "--lr", "0.01")

# A tiny RNNsearch trained once per session, shared by the translate and Luong tests.
TINY_RNNSEARCH = dict(emb=24, hidden=24, align=24, maxout=24)


def train_tiny(data: Path, save_dir: Path, *options: object) -> Any:
    """``nmtkit train`` of the tiny model, two pairs a batch on one thread, with ``options``: the
    quick runs of the tests that check what a flag leaves in the checkpoint."""
    from click.testing import CliRunner

    from nmtkit.cli import main

    args = ["train", data, "--save-dir", save_dir, "--preset", "tiny", "--batch-size", 2, "--threads", 1, *options]
    return CliRunner().invoke(main, [str(a) for a in args])


def by_heart(**changes: Any) -> Any:
    """The training settings under which a tiny model learns the six pairs by heart, on the CPU: the
    tests hold its translations against the CPU's search and forcing, with a GPU visible too."""
    from nmtkit.train.config import TrainConfig

    base = dict(optimizer="adam", lr=0.02, batch_size=6, pool=1, max_updates=250, valid_every=1000, threads=1)
    return TrainConfig(**{**base, "patience": 0, "log_every": 50, "device": "cpu", **changes})


def sized(arch: str, sizes: dict[str, int], **values: Any) -> Any:
    """The config of ``arch`` at the test's ``sizes``, those its family lacks (maxout for luong,
    layers for the GRU family) left out, with ``values``."""
    from nmtkit.models.config import FAMILIES, model_config

    own = FAMILIES[arch].flags()
    return model_config(arch, **{k: v for k, v in sizes.items() if k in own}, **values)


@pytest.fixture(scope="session")
def overfit(tmp_path_factory):
    """A model that has learned the six training pairs by heart; its corpus is then deleted."""
    from nmtkit.models.config import model_config
    from nmtkit.train.loop import train
    from tests.test_corpus import make_corpus

    tmp = tmp_path_factory.mktemp("overfit")
    raw = tmp / "raw"
    for split in ("train", "valid", "test"):
        write_pair(raw / split, EN, FR)
    make_corpus(raw, tmp)
    train(
        tmp / "bin",
        tmp / "run",
        model_config(**TINY_RNNSEARCH),
        by_heart(),
    )
    shutil.copytree(tmp / "vocab", tmp / "vocab-kept")  # for score --no-unk and --data
    shutil.copytree(tmp / "bin", tmp / "bin-kept")
    shutil.rmtree(tmp / "bin")
    shutil.rmtree(tmp / "vocab")
    return tmp


@pytest.fixture(scope="session")
def backward(overfit, tmp_path_factory):
    """A French→English model of the overfit model's corpus, trained briefly: its links need not
    be good, only of the other direction."""
    from nmtkit.data.reverse import reverse_corpus
    from nmtkit.models.config import model_config
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.loop import train

    tmp = tmp_path_factory.mktemp("backward")
    reverse_corpus(overfit / "bin-kept", tmp / "bin")
    config = TrainConfig(optimizer="adam", lr=0.02, batch_size=6, pool=1, max_updates=40, valid_every=1000, threads=1)
    train(tmp / "bin", tmp / "run", model_config(**TINY_RNNSEARCH), config)
    return tmp / "run" / "last.pt"


@pytest.fixture
def deterministic():
    """Deterministic kernels for a test that compares runs bit for bit (atomics in CUDA's
    backward passes otherwise add in varying order; CPUs are deterministic anyway)."""
    import torch

    before = torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    yield
    torch.use_deterministic_algorithms(before[0])
    torch.backends.cudnn.deterministic = before[1]
