"""The checkpoint module owns the format: typed sections, the previous version, one-line refusals."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.errors import FormatError, UserError
from nmtkit.models.config import model_config
from tests.checkpoints import as_version_1, fake_checkpoint


def bad_files(tmp: Path) -> dict[str, Path]:
    """A corrupt, a hollow and two foreign files, each where a checkpoint should be."""
    tmp.mkdir(parents=True, exist_ok=True)
    files = {name: tmp / f"{name}.pt" for name in ("corrupt", "hollow", "foreign", "zip", "half")}
    files["corrupt"].write_bytes(b"PK\x03\x04" + os.urandom(200))
    torch.save({"format": checkpoint.FORMAT, "version": checkpoint.VERSION}, files["hollow"])
    torch.save({"state_dict": {"w": torch.zeros(2)}}, files["foreign"])  # somebody's PyTorch model
    with zipfile.ZipFile(files["zip"], "w") as z:
        z.writestr("readme.txt", "not a model")
    good = fake_checkpoint(tmp / "good.pt")
    raw = torch.load(tmp / "good.pt", weights_only=True)
    raw["text"]["vocab"]["tgt"] = raw["text"]["vocab"]["tgt"][:3]  # no longer the model's size
    torch.save(raw, files["half"])
    assert good.parameters == 9
    return files


def one_line(result, *words: str) -> None:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert all(w in lines[0] for w in words), lines[0]


def test_round_trip_keeps_every_section(tmp_path):
    ckpt = fake_checkpoint(tmp_path / "c.pt", step=7, seconds=3.5, weights={"a": torch.arange(4.0)})
    back = checkpoint.load(tmp_path / "c.pt")
    assert back.model == ckpt.model and back.text == ckpt.text
    assert back.training.config == ckpt.training.config and back.training.progress == ckpt.training.progress
    assert torch.equal(back.weights["a"], torch.arange(4.0)) and not back.training.resumable


def test_a_full_disk_under_a_checkpoint_is_the_system_s_error_naming_it(tmp_path, monkeypatch):
    """torch's zip writer answered a failed write with its own RuntimeError ('enforce fail at
    inline_container.cc'), a traceback in average, lexicon and train where translate said a line."""
    import errno

    from nmtkit.core import files

    real = files._NamedFile.write

    def filling(self, b):  # a disk that fills after 4 KiB of a file
        if self.tell() + len(b) > 4096:
            with files._named(self.shown):
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, b)

    ckpt = fake_checkpoint(tmp_path / "c.pt", weights={"a": torch.zeros(100_000)})
    fake_checkpoint(tmp_path / "d.pt", weights={"a": torch.ones(100_000)})
    monkeypatch.setattr(files._NamedFile, "write", filling)
    with pytest.raises(OSError) as err:
        checkpoint.save(tmp_path / "e.pt", ckpt)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(tmp_path / "e.pt")
    r = CliRunner().invoke(
        main, ["average", str(tmp_path / "c.pt"), str(tmp_path / "d.pt"), "-o", str(tmp_path / "e.pt")]
    )
    assert (
        r.exit_code == 2 and r.output.strip() == f"nmtkit average: error: {tmp_path / 'e.pt'}: no space left on device"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt", "d.pt"]  # nothing half-written


def test_version_1_files_still_load(tmp_path):
    ckpt = fake_checkpoint(tmp_path / "c.pt", step=3)
    ckpt.training.optimizer, ckpt.training.batches = (
        {"state": {}, "param_groups": []},
        {"epoch": 1, "index": 2, "seed": 3},
    )
    ckpt.training.rng = [{"torch": torch.get_rng_state()}]
    torch.save(as_version_1(ckpt), tmp_path / "v1.pt")
    old = checkpoint.load(tmp_path / "v1.pt")
    assert old.model == ckpt.model and old.text == ckpt.text and old.training.progress.step == 3
    assert old.training.resumable and old.training.batches == {"epoch": 1, "index": 2, "seed": 3}
    assert torch.equal(old.training.rng[0]["torch"], ckpt.training.rng[0]["torch"])
    older = as_version_1(ckpt)
    older["train"]["rng"] = {"torch": torch.get_rng_state()}  # before every process's state was kept
    torch.save(older, tmp_path / "v0.pt")
    assert len(checkpoint.load(tmp_path / "v0.pt").training.rng) == 1


def test_every_malformed_file_is_one_format_error(tmp_path):
    files = bad_files(tmp_path)
    expected = {
        "corrupt": "truncated or corrupt",
        "hollow": "not a complete nmtkit checkpoint (no 'model')",
        "foreign": "not an nmtkit checkpoint",
        "zip": "a zip archive that torch.save did not write",
        "half": "the tgt vocabulary has 3 entries but the model 6",
    }
    for name, path in files.items():
        with pytest.raises(FormatError, match=None) as err:
            checkpoint.load(path)
        assert expected[name] in str(err.value) and "\n" not in str(err.value), (name, err.value)
    with zipfile.ZipFile(tmp_path / "pickle.pt", "w") as z:  # a pickle's name, but no record of torch's beside it
        z.writestr("x/data.pkl", b"garbage")
    with pytest.raises(FormatError) as err:
        checkpoint.load(tmp_path / "pickle.pt")
    assert str(err.value).endswith("truncated or corrupt checkpoint (a zip archive that torch.save did not write)")
    raw = torch.load(tmp_path / "good.pt", weights_only=True)
    for averaged in ({"name": "a.pt"}, [{"name": "a.pt"}], [{"name": "a.pt", "step": 1.7}], [{"name": 3, "step": 1}]):
        torch.save(raw | {"averaged": averaged}, tmp_path / "averaged.pt")
        with pytest.raises(FormatError, match="not a complete nmtkit checkpoint") as err:
            checkpoint.load(tmp_path / "averaged.pt")
        assert "\n" not in str(err.value)
    vocab = raw["text"]["vocab"]["tgt"]
    resumable = {"optimizer": {"state": {}, "param_groups": []}, "batches": {"epoch": 0, "index": 1, "seed": 1}}
    resumable |= {"rng": [{"torch": torch.get_rng_state()}]}
    torch.save({**raw, "training": {**raw["training"], **resumable}}, tmp_path / "last.pt")
    assert checkpoint.load(tmp_path / "last.pt").training.resumable
    for edit, said in (  # an edited last.pt: each a traceback of the run that resumed it
        ({"progress": {**raw["training"]["progress"], "step": "abc"}}, "its progress's step is 'abc', not a whole"),
        ({"progress": {**raw["training"]["progress"], "best": "x"}}, "its progress's best is 'x', not a number"),
        ({"progress": {**raw["training"]["progress"], "validation_owed": 1}}, "validation_owed is 1, not true or"),
        ({"rng": {}}, "the RNG states are not tensors"),
        ({"rng": []}, "half there"),
        ({"rng": [{"torch": torch.zeros(3)}]}, "the RNG states are not tensors"),
    ):
        torch.save({**raw, "training": {**raw["training"], **resumable, **edit}}, tmp_path / "edited.pt")
        with pytest.raises(FormatError, match="edited.pt: not a complete nmtkit checkpoint") as err:
            checkpoint.load(tmp_path / "edited.pt")
        assert said in str(err.value) and "\n" not in str(err.value), err.value
    twice = {**raw["text"]["vocab"], "tgt": vocab[:-1] + vocab[4:5]}  # named as the file is read, not first
    torch.save({**raw, "text": {**raw["text"], "vocab": twice}}, tmp_path / "vocab.pt")  # where translate builds it
    with pytest.raises(FormatError, match=f"vocab.pt: not a complete .* lists a token twice \\({vocab[4]!r}\\)"):
        checkpoint.load(tmp_path / "vocab.pt")
    raw["version"] = 99
    torch.save(raw, tmp_path / "future.pt")
    with pytest.raises(FormatError, match="version 99 is not supported"):
        checkpoint.load(tmp_path / "future.pt")
    with pytest.raises(UserError, match="no such checkpoint"):
        checkpoint.load(tmp_path / "absent.pt")


def test_a_model_setting_this_nmtkit_does_not_know_is_refused_in_one_line(tmp_path):
    """A newer nmtkit's choice (or an edited file's) loaded as written: a traceback when translated
    (encoder 'lstm', Luong's window 'local-x'), or, for the readout, a silent translation as another."""
    fake_checkpoint(tmp_path / "good.pt")
    raw = torch.load(tmp_path / "good.pt", weights_only=True)
    for key, value in (("encoder", "lstm"), ("readout", "middle")):
        edited = {**raw, "model": {**raw["model"], "config": {**raw["model"]["config"], key: value}}}
        torch.save(edited, tmp_path / f"{key}.pt")
        with pytest.raises(FormatError, match=f"--{key} '{value}' is not one this nmtkit knows") as err:
            checkpoint.load(tmp_path / f"{key}.pt")
        assert "not a complete nmtkit checkpoint" in str(err.value) and "\n" not in str(err.value)
    # a family it does not have is no damage: a newer nmtkit's, or one a researcher's code registered
    edited = {**raw, "model": {**raw["model"], "config": {**raw["model"]["config"], "arch": "luong-sdot"}}}
    torch.save(edited, tmp_path / "family.pt")
    with pytest.raises(FormatError, match="architecture 'luong-sdot', which this nmtkit does not have") as err:
        checkpoint.load(tmp_path / "family.pt")
    assert "not a complete" not in str(err.value) and "rnnsearch" in str(err.value) and "\n" not in str(err.value)
    # a training setting it does not know leaves the model to translate (a resume is another matter)
    later = {**raw, "training": {**raw["training"], "config": {**raw["training"]["config"], "lr_decay": "cosine2"}}}
    torch.save(later, tmp_path / "later.pt")
    assert checkpoint.load(tmp_path / "later.pt").model == checkpoint.load(tmp_path / "good.pt").model
    luong = model_config("luong", src_vocab=6, tgt_vocab=6, emb=4, hidden=4, layers=1).to_dict()
    with pytest.raises(FormatError, match="--attention 'local-x' is not one this nmtkit knows"):
        type(model_config("luong")).from_dict({**luong, "attention": "local-x"})


def test_sizes_are_held_to_the_command_lines_bounds_in_python_too():
    import numpy as np

    for name, family in (("emb", "rnnsearch"), ("hidden", "rnnencdec"), ("maxout", "rnnsearch"), ("layers", "luong")):
        for bad in (0, 2.5):
            with pytest.raises(UserError, match=f"{name}: {bad}(,| is) not a whole number"):
                model_config(family, **{name: bad})
    assert model_config("luong", layers=1).layers == 1
    made = model_config("rnnsearch", emb=np.int64(256)).emb  # a numpy size, as a sweep computes it
    assert made == 256 and type(made) is int


def test_weights_that_do_not_fit_the_model_are_refused(tmp_path):
    fake_checkpoint(tmp_path / "c.pt")
    # the weight named, not torch's first line, which names only the model
    with pytest.raises(FormatError, match=r"do not fit the model .*\((Missing key|Unexpected key|size mismatch)"):
        checkpoint.model_of(checkpoint.load(tmp_path / "c.pt"), tmp_path / "c.pt")


def test_a_weight_damaged_into_nan_is_refused_in_one_line(tmp_path):
    from nmtkit.models.build import build_model

    config = model_config(src_vocab=6, tgt_vocab=6, emb=4, hidden=4, align=4, maxout=2)
    weights = build_model(config).state_dict()
    weights["W_o.weight"][1, 1] = float("inf")
    fake_checkpoint(tmp_path / "c.pt", weights=weights, model=config)
    with pytest.raises(FormatError, match="the weight W_o.weight holds NaN or infinite values") as err:
        checkpoint.model_of(checkpoint.load(tmp_path / "c.pt"), tmp_path / "c.pt")
    assert "\n" not in str(err.value)


def test_checkpoints_follow_the_umask_like_any_output(tmp_path):
    old = os.umask(0o022)
    try:
        fake_checkpoint(tmp_path / "c.pt")
    finally:
        os.umask(old)
    assert (tmp_path / "c.pt").stat().st_mode & 0o777 == 0o644


@pytest.fixture
def data_bin(raw, tmp_path):
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    return tmp_path / "bin"


def test_every_command_refuses_a_bad_last_pt_in_one_line(data_bin, raw, tmp_path):
    """train, translate, score, compare and the paper's report, each on a corrupt, a hollow and a
    foreign last.pt."""
    from bench import compare, paper

    runner = CliRunner()
    for name, bad in bad_files(tmp_path / "bad").items():
        run = tmp_path / name / "rnnsearch-50"
        run.mkdir(parents=True)
        (run / "last.pt").write_bytes(bad.read_bytes())
        last = str(run / "last.pt")
        one_line(
            runner.invoke(
                main, ["train", str(data_bin), "--save-dir", str(run), "--preset", "tiny", "--max-updates", "1"]
            ),
            "nmtkit train: error:",
            last,
        )
        one_line(runner.invoke(main, ["translate", "-m", last, str(raw / "test.en")]), "nmtkit translate", last)
        one_line(runner.invoke(main, ["score", "-m", last, "--data", str(data_bin)]), "nmtkit score", last)
        one_line(
            runner.invoke(
                main,
                [
                    "score",
                    str(raw / "test.fr"),
                    "-r",
                    str(raw / "test.fr"),
                    "--source",
                    str(raw / "test.en"),
                    "--no-unk-vocab",
                    last,
                ],
            ),
            "nmtkit score",
            last,
        )
        (run / "dev-bleu.json").write_text(json.dumps({"systems": [{"bleu": 1.0}]}))
        (run / "dev-nll.json").write_text(json.dumps({"corpus_nll": {"nll": 1.0, "perplexity": 2.0}}))
        one_line(runner.invoke(compare.main, [str(tmp_path / name), "rnnsearch-50"]), last)
        one_line(
            runner.invoke(
                paper.main,
                [
                    "report",
                    "--runs",
                    str(tmp_path / name),
                    "--raw",
                    str(raw),
                    "--no-unk-vocab",
                    str(tmp_path / "vocab"),
                    "--models",
                    "rnnsearch-50",
                ],
            ),
            "report: error:",
            last,
        )


@pytest.mark.parametrize(
    "device, words", [("tpu", "unknown device 'tpu'"), ("cuda:7", "device 'cuda:7'"), ("cuda", "device 'cuda'")]
)
def test_an_unknown_or_absent_device_is_one_line_everywhere(data_bin, raw, tmp_path, device, words):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU, so --device cuda is present")
    if device == "cuda:7" and torch.cuda.device_count() > 7:
        pytest.skip("this machine has eight GPUs")
    fake_checkpoint(tmp_path / "m.pt")
    runner = CliRunner()
    for args in (
        ["train", str(data_bin), "--save-dir", str(tmp_path / "r"), "--preset", "tiny"],
        ["translate", "-m", str(tmp_path / "m.pt"), str(raw / "test.en")],
        ["score", "-m", str(tmp_path / "m.pt"), "--data", str(data_bin)],
        [
            "align-plot",
            "-m",
            str(tmp_path / "m.pt"),
            "--source",
            str(raw / "test.en"),
            "--target",
            str(raw / "test.fr"),
            "-n",
            "1",
            "-o",
            str(tmp_path / "a.png"),
        ],
    ):
        one_line(runner.invoke(main, args + ["--device", device]), f"nmtkit {args[0]}: error:", words)
    assert not (tmp_path / "r").exists() and not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("lazy", [True, False])
def test_tied_weights_are_counted_once_as_train_counts_them(tmp_path, lazy):
    """One K × m matrix is both the target embeddings and the output layer: info says the
    parameters train said (nn.Module.parameters() yields a shared tensor once)."""
    from nmtkit.models.build import build_model
    from nmtkit.models.config import model_config
    from tests.checkpoints import fake_checkpoint

    model = build_model(model_config(src_vocab=6, tgt_vocab=6, emb=8, hidden=8, align=8, maxout=8, tie_embeddings=True))
    assert model.W_o.weight is model.embed.weight
    fake_checkpoint(tmp_path / "tied.pt", weights=model.state_dict())
    loaded = checkpoint.load(tmp_path / "tied.pt", lazy=lazy)
    assert (
        loaded.parameters
        == sum(p.numel() for p in model.parameters())
        < sum(w.numel() for w in model.state_dict().values())
    )


def test_records_written_without_checksums_load_and_a_file_is_checked_once(tmp_path, monkeypatch):
    """torch.serialization.set_crc32_options(False) writes 0 for each record's checksum: such a
    file is whole, and was refused as damaged. A command loads a checkpoint several times: its
    bytes are read through once (until the file changes)."""
    import zipfile

    from nmtkit.checkpoint import archive as checkpoint_file

    fake_checkpoint(tmp_path / "c.pt")
    ckpt = checkpoint.load(tmp_path / "c.pt")
    torch.serialization.set_crc32_options(False)
    try:
        checkpoint.save(tmp_path / "plain.pt", ckpt)
    finally:
        torch.serialization.set_crc32_options(True)
    assert all(r.CRC == 0 for r in zipfile.ZipFile(tmp_path / "plain.pt").infolist() if r.file_size)
    assert checkpoint.load(tmp_path / "plain.pt").model == ckpt.model
    opened = []
    real = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *a, **k: opened.append(a[0]) or real(self, *a, **k))
    checkpoint_file._CHECKED.clear()
    for _ in range(3):
        checkpoint.load(tmp_path / "c.pt")
    records = len(zipfile.ZipFile(tmp_path / "c.pt").infolist())
    assert len(opened) == records  # torch reads through its own reader: these are the sums, once
    os.utime(tmp_path / "c.pt", ns=(1, 1))  # another file now, as far as anyone can tell
    checkpoint.load(tmp_path / "c.pt")
    assert len(opened) == 2 * records


def test_a_last_pt_with_a_damaged_byte_is_said_with_the_way_to_start_over(data_bin, tmp_path):
    """A checksum mismatch was a plain format error: train left out the --reset line a cut-off
    last.pt gets."""
    run = tmp_path / "run"
    run.mkdir()
    fake_checkpoint(run / "last.pt", weights={"w": torch.zeros(4096)})
    data = bytearray((run / "last.pt").read_bytes())
    data[data.index(bytes(8192)) + 4096] ^= 0xFF  # a byte of the weights
    (run / "last.pt").write_bytes(bytes(data))
    r = CliRunner().invoke(main, ["train", str(data_bin), "--save-dir", str(run), "--preset", "tiny"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "do not match their checksum); --reset starts over" in r.output


def test_a_checkpoint_that_may_not_be_read_is_said_so_not_damaged(tmp_path, monkeypatch):
    """zipfile.is_zipfile says False of a file it may not open: a whole checkpoint of another user
    in a run directory was called corrupt, which asks for its deletion."""
    from pathlib import Path

    fake_checkpoint(tmp_path / "c.pt")
    real = Path.open

    def refused(self, *args, **kwargs):
        if self.name == "c.pt":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    with pytest.raises(UserError, match=r"c\.pt: permission denied$"):
        checkpoint.load(tmp_path / "c.pt")
