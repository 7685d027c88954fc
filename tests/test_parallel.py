"""Spreading preprocessing over processes changes nothing in the output."""

from nmtkit.text.clean import PRESETS
from nmtkit.text.preprocess import preprocess_corpus
from nmtkit.text.settings import FilterConfig, TextConfig
from tests.conftest import EN, FR, write_pair


def test_two_workers_give_the_same_output_as_one(tmp_path, monkeypatch):
    monkeypatch.setattr("nmtkit.text.preprocess.CHUNK", 3)  # several chunks in flight
    write_pair(tmp_path / "raw" / "train", EN * 4, FR * 4)
    texts = (TextConfig("en", clean=PRESETS["bible"]), TextConfig("fr", clean=PRESETS["bible"]))
    outs = []
    for workers in (1, 2):
        rep = preprocess_corpus(
            {"train": tmp_path / "raw" / "train"},
            tmp_path / f"j{workers}",
            texts,
            FilterConfig(dedup=False),
            workers=workers,
        )
        outs.append(
            (
                [(tmp_path / f"j{workers}" / f"train.{x}").read_text() for x in ("en", "fr", "lines")],
                rep["splits"]["train"]["rules"],
            )
        )
    assert outs[0] == outs[1]
    assert outs[0][1]["fr"]["hash"] == 4
