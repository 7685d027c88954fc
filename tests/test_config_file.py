"""--config FILE (YAML or TOML) and --dump-config on train, translate and serve (score: tests/test_option_names.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from tests.conftest import EN
from tests.test_adopt import TINY, data_bin  # noqa: F401  (a fixture)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_yaml_config_gives_options_and_the_command_line_wins(data_bin, tmp_path):  # noqa: F811
    (tmp_path / "run.yaml").write_text(
        "preset: tiny\nhidden: 40\nmax_updates: 5\noptimizer: adam\nbatch-size: 2\nvalid-bleu: false\nthreads: 1\n",
        encoding="utf-8",
    )
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", "--config", tmp_path / "run.yaml", "--max-updates", 2)
    assert r.exit_code == 0, r.output
    ckpt = checkpoint.load(tmp_path / "r" / "last.pt")
    assert ckpt.model.hidden == 40 and ckpt.training.progress.step == 2
    assert (ckpt.training.config.optimizer, ckpt.training.config.batch_size) == ("adam", 2)


def test_a_dumped_train_config_given_back_trains_the_same_model(data_bin, tmp_path):  # noqa: F811
    flags = [*TINY, "--hidden", 40, "--max-updates", 2]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "a", *flags, "--dump-config", tmp_path / "a.yaml")
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "a").exists(), "--dump-config stops before any work"
    text = (tmp_path / "a.yaml").read_text(encoding="utf-8")
    assert "\nhidden: 40\n" in text and "\n# arch: rnnsearch\n" in text  # chosen set, defaults commented
    dumped = yaml.safe_load(text)
    assert dumped["optimizer"] == "adam" and "arch" not in dumped and "schedule" not in dumped
    _assert_trains_as_the_flags(data_bin, tmp_path, flags, tmp_path / "a.yaml")


def _assert_trains_as_the_flags(corpus, tmp_path, flags, config):
    """``train`` with ``flags`` (in tmp_path/a) and with ``--config config`` (in tmp_path/b) make
    the same model with the same settings."""
    assert invoke("train", corpus, "--save-dir", tmp_path / "a", *flags).exit_code == 0
    r = invoke("train", "--config", config, "--save-dir", tmp_path / "b")
    assert r.exit_code == 0, r.output
    a, b = (checkpoint.load(tmp_path / d / "last.pt") for d in "ab")
    assert a.model == b.model and a.training.config == b.training.config


def test_a_luong_schedule_is_not_overridden_by_the_dumped_defaults(tmp_path):
    """The schedule sets optimizer and rate; a dump must leave them unset, or they would win."""
    r = invoke(
        "train",
        "bin",
        "--save-dir",
        "r",
        "--arch",
        "luong",
        "--schedule",
        "luong",
        "--dump-config",
        tmp_path / "l.toml",
    )
    assert r.exit_code == 0, r.output
    table = tomllib.loads((tmp_path / "l.toml").read_text(encoding="utf-8"))
    assert table == {"data": "bin", "save-dir": "r", "arch": "luong", "schedule": "luong"}
    r = invoke("train", "--config", tmp_path / "l.toml", "--dump-config", "-")
    assert r.exit_code == 0 and "\nschedule: luong\n" in r.stdout and "\n# optimizer: " in r.stdout


def test_a_dump_comments_what_the_schedule_and_preset_set_and_each_comment_runs_as_it(data_bin, tmp_path):  # noqa: F811
    """--schedule cpu sets the optimizer, the rate and the preset: the dump's comments say what the
    run takes (not the options' own defaults), and the file with every comment made a setting
    trains the same model with the same settings."""
    flags = ["--schedule", "cpu", "--max-updates", 1, "--batch-size", 2, "--no-valid-bleu", "--threads", 1]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "a", *flags, "--dump-config", "-")
    assert r.exit_code == 0, r.output
    for line in ("# preset: small", "# optimizer: adam", "# lr: 0.005", "# emb: 256", "# tie-embeddings: true"):
        assert line in r.stdout.splitlines(), line
    assert "# attention:" not in r.stdout, "a flag of Luong et al.'s model is not one of RNNsearch's"
    every = "\n".join(x.removeprefix("# ") for x in r.stdout.splitlines()[1:])
    (tmp_path / "every.yaml").write_text(every, encoding="utf-8")
    assert yaml.safe_load(every)["optimizer"] == "adam"
    _assert_trains_as_the_flags(data_bin, tmp_path, flags, tmp_path / "every.yaml")


def test_an_incomplete_run_is_still_dumped_for_editing(tmp_path):
    """--schedule cpu decays to 0 at the end of a budget, which this line lacks: train refuses it,
    the dump writes it, to be finished in the file."""
    line = ["train", "bin", "--save-dir", tmp_path / "r", "--schedule", "cpu"]
    refused = invoke(*line)
    assert refused.exit_code == 2 and "--lr-decay cosine falls to 0 at the end of a budget" in refused.output
    r = invoke(*line, "--dump-config", "-")
    assert r.exit_code == 0 and "# lr-decay: cosine" in r.stdout.splitlines()


def test_translate_takes_a_config_of_models_and_search(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    (tmp_path / "t.toml").write_text(f'model = "{model}"\nbeam = 3\nnbest = 2\n', encoding="utf-8")
    r = invoke("translate", "--config", tmp_path / "t.toml", tmp_path / "in.en")
    assert r.exit_code == 0, r.output
    assert len(r.stdout.splitlines()) == 2 and r.stdout.startswith("0 ||| ")  # two Moses n-best lines
    r = invoke("translate", "--config", tmp_path / "t.toml", "--nbest", 0, tmp_path / "in.en")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1  # the flag wins
    # a file's settings the search has no use for are ignored (docs/cli.md), the command line's refused
    plain = invoke("translate", "-m", model, tmp_path / "in.en").stdout
    for line, flag in (("alpha = 0.3", "--alpha"), ("top-k = 3", "--top-k"), ("seed = 7", "--seed")):
        (tmp_path / "idle.toml").write_text(f'model = "{model}"\n{line}\n', encoding="utf-8")
        r = invoke("translate", "--config", tmp_path / "idle.toml", tmp_path / "in.en")
        assert r.exit_code == 0 and r.stdout == plain, r.output
        typed = invoke("translate", "-m", model, flag, line.split(" = ")[1], tmp_path / "in.en")
        assert typed.exit_code == 2, typed.output


def test_serve_dumps_its_options_without_starting(tmp_path):
    r = invoke("serve", "-m", "a.pt", "-m", "b.pt", "--port", 5000, "--dump-config", tmp_path / "s.toml")
    assert r.exit_code == 0, r.output
    table = tomllib.loads((tmp_path / "s.toml").read_text(encoding="utf-8"))
    assert table == {"model": ["a.pt", "b.pt"], "port": 5000}
    r = invoke("serve", "--config", tmp_path / "s.toml", "--dump-config", "-")
    assert r.exit_code == 0 and yaml.safe_load(r.stdout) == {"model": ["a.pt", "b.pt"], "port": 5000}


def test_a_dump_replaces_an_earlier_dump_and_no_other_file(tmp_path):
    """--dump-config raw/train.en (the corpus's name typed where the dump's was meant) replaced the
    corpus with YAML, exit 0."""
    corpus = tmp_path / "train.en"
    corpus.write_text("In the beginning\n", encoding="utf-8")
    r = invoke("serve", "-m", "a.pt", "--dump-config", corpus)
    assert r.exit_code == 2 and f"--dump-config {corpus}: is a file --dump-config did not write" in r.output
    assert corpus.read_text(encoding="utf-8") == "In the beginning\n"
    for port in (5000, 5001):  # a dump, and that dump written again
        r = invoke("serve", "-m", "a.pt", "--port", port, "--dump-config", tmp_path / "s.yaml")
        assert r.exit_code == 0 and yaml.safe_load((tmp_path / "s.yaml").read_text())["port"] == port
    (tmp_path / "old.yaml").write_text("# nmtkit serve: options for --config (commented: defaults)\nport: 1\n")
    (tmp_path / "empty.yaml").touch()
    for name in ("old.yaml", "empty.yaml"):  # 1.1's dump; nothing to lose
        assert invoke("serve", "-m", "a.pt", "--dump-config", tmp_path / name).exit_code == 0
    done = subprocess.run(  # stdout by its name, a file the shell has just emptied
        ["bash", "-c", f"{sys.executable} -m nmtkit serve -m a.pt --dump-config /dev/stdout > {tmp_path / 'out.yaml'}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert done.returncode == 0 and yaml.safe_load((tmp_path / "out.yaml").read_text())["model"] == ["a.pt"]


def test_a_dump_names_the_options_it_leaves_unset_and_a_yaml_null_leaves_one_unset(tmp_path):
    """An option without a default (--device, --null-threshold) is in a YAML dump too, with what its
    absence means: YAML's null, which a file may give back (TOML has no null: left out); a null for
    an option that has a default is refused."""
    r = invoke("serve", "-m", "a.pt", "--dump-config", "-")
    assert r.exit_code == 0, r.output
    assert "# device: null  # the GPU of this process when there is one, else cpu" in r.stdout.splitlines()
    assert "# null-threshold: null  # none: a word links" in r.stdout
    every = yaml.safe_load("\n".join(x.removeprefix("# ") for x in r.stdout.splitlines()[1:]))
    assert every["device"] is None and every["beam"] == 12
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(every), encoding="utf-8")
    r = invoke("serve", "--config", tmp_path / "s.yaml", "--dump-config", "-")
    assert r.exit_code == 0, r.output
    assert "# device: null" in r.stdout and "\ndevice" not in r.stdout  # given back unset, not chosen
    r = invoke("serve", "-m", "a.pt", "--dump-config", tmp_path / "s.toml")
    text = (tmp_path / "s.toml").read_text(encoding="utf-8")
    assert "device" not in text and "# beam = 12" in text.splitlines()
    every = "\n".join(x.removeprefix("# ") for x in text.splitlines()[1:])
    assert tomllib.loads(every)["beam"] == 12  # every comment made a setting is TOML
    (tmp_path / "b.yaml").write_text("model: a.pt\nbeam: null\n", encoding="utf-8")
    r = invoke("serve", "--config", tmp_path / "b.yaml", "--dump-config", "-")
    assert r.exit_code == 2 and "'beam': no value: give one, or leave the key out" in r.output


def test_a_toml_dump_reads_back_equal_whatever_the_strings_hold(tmp_path):
    """Quotes, backslashes, a tab, U+007F (JSON's spelling, written before tomli-w, left it raw:
    a file tomllib refused) and non-ASCII text, in a list and alone."""
    odd = ['a "b" \\c\td.pt', "e\x7ff.pt", "Éternel « x ».pt"]
    r = invoke("serve", *(a for m in odd for a in ("-m", m)), "--host", "h\x7f", "--dump-config", tmp_path / "o.toml")
    assert r.exit_code == 0, r.output
    assert tomllib.loads((tmp_path / "o.toml").read_text(encoding="utf-8")) == {"model": odd, "host": "h\x7f"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("beam: [\n", "not valid YAML"),
        ("bem: 3\n", "'bem' is not an option of 'nmtkit translate'"),
        ("- 3\n", "expected option names and their values (a mapping), not a list"),
        ("dump-config: x.yaml\n", "'dump-config' is an option of the command line alone"),
        ("verbose: true\n", "'verbose' is an option of the command line alone"),
        # what click would convert without a word: each is refused as the command line refuses it
        ("beam:\n", "'beam': no value: give one, or leave the key out"),
        ("beam: 2.5\n", "'beam': a whole number, not 2.5"),
        ("beam: 0\n", "c.yaml: 'beam': 0 is not in the range x>=1."),  # a bound click checks: said of the file too
        ("beam: true\n", "'beam': a number, not true"),
        ("beam: [3]\n", "'beam': one value, not a list"),
        ("beam: {a: 3}\n", "'beam': one value, not a table"),
        ("replace-unk: 1\n", "'replace-unk': true or false, not 1"),
        # a quoted number was taken where a quoted flag was refused; 'abc' got click's words, no file
        ("beam: '16'\n", "'beam': a whole number, not '16': numbers go unquoted"),
        ("max-output-ratio: abc\n", "'max-output-ratio': a number, not 'abc': numbers go unquoted"),
        ("model: [a.pt, [b.pt]]\n", "'model': one value, not a list"),
        ("length-penalty: none\nlength_penalty: average\n", "'length-penalty' and 'length_penalty' are one option"),
        ("beam: 3\nbeam: 5\n", "not valid YAML ('beam' given twice in"),  # YAML's reader kept the last
        # YAML reads these unquoted as a date and a datetime: no option's value, nor silently text
        ("beam: 1979-05-27\n", "'beam': a date or time (1979-05-27), which no option takes: quote it"),
        ("output: 2020-01-01T07:32:00Z\n", "'output': a date or time (2020-01-01 07:32:00+00:00)"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_command(tmp_path, text, message):
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    r = invoke("translate", "-m", "x.pt", "--config", tmp_path / "c.yaml")
    assert r.exit_code == 2 and r.output.startswith("nmtkit translate: error: ") and message in r.output
    assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize("written", ["lr: 1e-4", "lr: 1.0e-4", '{"lr": 1e-4}', "lr = 1e-4"])
def test_a_number_with_an_exponent_is_a_number(tmp_path, written):
    """YAML 1.1's reader takes 1e-4 (YAML 1.2's and JSON's, json.dumps's 1e-05) for text, which the
    check of quoted numbers refused as one."""
    name = "c.toml" if " = " in written else "c.yaml"
    (tmp_path / name).write_text(written + "\n", encoding="utf-8")
    r = invoke("train", "bin", "--save-dir", "r", "--config", tmp_path / name, "--dump-config", "-")
    assert r.exit_code == 0 and yaml.safe_load(r.stdout)["lr"] == 1e-4, r.output


def test_a_toml_time_and_an_empty_dump_name_are_one_line(tmp_path):
    (tmp_path / "c.toml").write_text("beam = 07:32:00\n", encoding="utf-8")
    r = invoke("translate", "-m", "x.pt", "--config", tmp_path / "c.toml")
    assert r.exit_code == 2 and "'beam': a date or time (07:32:00)" in r.output
    r = invoke("serve", "-m", "x.pt", "--dump-config", "")
    assert r.exit_code == 2 and "'--dump-config': '' names nothing: give a file's name, or '-' for stdout" in r.output


def test_a_missing_config_is_one_line(tmp_path):
    r = invoke("serve", "-m", "x.pt", "--config", tmp_path / "none.yaml")
    assert r.exit_code == 2 and "none.yaml: no such file" in r.output


def test_a_dump_leaves_out_reset_and_the_settings_the_schedule_never_reads(tmp_path):
    """--reset is an action, which a file would repeat at every run (refused in one); --decay and
    --decay-patience do nothing under a cosine schedule, and --decay-patience typed there is refused."""
    line = ["train", "bin", "--save-dir", tmp_path / "r", "--lr-decay", "cosine", "--max-updates", 5]
    r = invoke(*line, "--reset", "--dump-config", "-")
    assert r.exit_code == 0, r.output
    keys = {x.removeprefix("# ").split(":")[0] for x in r.stdout.splitlines()[1:]}
    assert {"lr-decay", "max-updates"} <= keys and not {"reset", "decay", "decay-patience"} & keys
    plateau = invoke("train", "bin", "--save-dir", tmp_path / "r", "--lr-decay", "plateau", "--dump-config", "-")
    assert {"# decay: 0.5", "# decay-patience: 2"} <= set(plateau.stdout.splitlines())
    (tmp_path / "c.yaml").write_text("reset: true\n", encoding="utf-8")
    r = invoke(*line, "--config", tmp_path / "c.yaml")
    assert r.exit_code == 2 and "'reset' is an option of the command line alone" in r.output


def test_a_config_gives_score_its_hypotheses_and_an_old_spelling_names_the_new_key(tmp_path):
    (tmp_path / "h.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text(
        f"hypotheses: [{tmp_path / 'h.txt'}]\nref: [{tmp_path / 'h.txt'}]\n", encoding="utf-8"
    )
    r = invoke("score", "--config", tmp_path / "c.yaml", "--output-format", "json")
    assert r.exit_code == 0, r.output
    (tmp_path / "old.yaml").write_text("json: true\n", encoding="utf-8")
    r = invoke("score", tmp_path / "h.txt", "-r", tmp_path / "h.txt", "--config", tmp_path / "old.yaml")
    assert r.exit_code == 2 and "'json' is an old spelling: a file takes 'output-format'" in r.output


def test_a_dump_from_a_checkpoint_leaves_its_model_to_it(tmp_path):
    """--init-from (or a resume) takes the checkpoint's model but for what the command names: the
    family's defaults, written as comments, would describe another model once made settings; a
    typed setting, and the sizes of a typed preset, are written."""
    line = ["train", "bin", "--save-dir", tmp_path / "r", "--init-from", "x.pt", "--dump-config", "-"]
    r = invoke(*line)
    assert r.exit_code == 0, r.output
    assert "\ninit-from: x.pt\n" in r.stdout and "# optimizer: adadelta" in r.stdout
    for unnamed in ("dropout", "weight-drop", "emb:", "arch:", "preset:", "readout:"):
        assert unnamed not in r.stdout, unnamed
    r = invoke(*line, "--weight-drop", 0.2, "--preset", "tiny")
    assert "\nweight-drop: 0.2\n" in r.stdout and "\n# emb: 32\n" in r.stdout and "dropout:" not in r.stdout


def test_an_old_spelling_of_a_key_works_and_says_it_is_deprecated(tmp_path):
    """A key spelt as a renamed flag's old name (the parameter's own name) is read, with the warning
    the flag gives, not taken without a word."""
    (tmp_path / "c.yaml").write_text("max-ratio: 1.5\nbeam: 2\n", encoding="utf-8")
    r = invoke("translate", "-m", "x.pt", "--config", tmp_path / "c.yaml", "--dump-config", "-")
    assert r.exit_code == 0, r.output
    assert f"nmtkit translate: warning: {tmp_path / 'c.yaml'}: 'max-ratio' is deprecated, use 'max-output-ratio'" in (
        r.stderr
    )
    assert "\nmax-output-ratio: 1.5\n" in r.stdout and "'beam'" not in r.stderr


def test_a_number_a_file_gives_a_files_name_is_refused_and_other_text_takes_it_as_text(tmp_path, monkeypatch):
    """``ref: 3`` was file descriptor 3 to click, ``model: 5`` a TypeError, and YAML reads ``1.10``
    as 1.1: a file's name must be quoted. ``metrics: 5`` (an AttributeError) is read as text."""
    monkeypatch.chdir(tmp_path)
    Path("h.txt").write_text("a b c\n", encoding="utf-8")
    for text, *args in (
        ("ref: 3", "score", "h.txt"),
        ("model: 5", "translate", "h.txt"),
        ("output: 1.10", "translate", "-m", "x.pt", "h.txt"),
        ("data: 5\nsave-dir: six", "train"),
    ):
        Path("c.yaml").write_text(text + "\n", encoding="utf-8")
        r = invoke(*args, "--config", "c.yaml")
        assert r.exit_code == 2 and "a file's name, not the number" in r.output and "quote it" in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1
    Path("c.yaml").write_text("metrics: 5\n", encoding="utf-8")
    r = invoke("score", "h.txt", "-r", "h.txt", "--config", "c.yaml")
    assert r.exit_code == 2 and "unknown metric '5'" in r.output, r.output
    Path("c.yaml").write_text("ref: '3'\n", encoding="utf-8")
    Path("3").write_text("a b c\n", encoding="utf-8")
    r = invoke("score", "h.txt", "--config", "c.yaml", "--output-format", "json")
    assert r.exit_code == 0 and json.loads(r.output)["systems"][0]["chrf"] == 100, r.output  # the file named 3


@pytest.mark.parametrize("name", ["c.toml", "c.yaml"])
def test_a_config_that_starts_with_a_byte_order_mark_reads_as_without(tmp_path, name):
    """A TOML file saved with a BOM (Notepad's UTF-8) was 'not valid TOML (Invalid statement)'."""
    (tmp_path / name).write_bytes(
        "\ufeffmax-updates = 7\n".replace(" =", ":" if name.endswith("yaml") else " =").encode()
    )
    r = invoke("train", "bin", "--save-dir", tmp_path / "r", "--config", tmp_path / name, "--dump-config", "-")
    assert r.exit_code == 0, r.output
    assert "max-updates: 7" in r.stdout.splitlines()


def test_under_torchrun_one_process_dumps_the_config(tmp_path, monkeypatch):
    """Each of torchrun's processes wrote the dump: '-' gave every key twice, a file was raced for."""
    monkeypatch.setenv("RANK", "1")  # a RANK without a world (another launcher's environment): written
    assert invoke("train", "bin", "--save-dir", tmp_path / "r", "--dump-config", tmp_path / "e.yaml").exit_code == 0
    assert (tmp_path / "e.yaml").exists()
    monkeypatch.setenv("WORLD_SIZE", "2")
    r = invoke("train", "bin", "--save-dir", tmp_path / "r", "--dump-config", tmp_path / "d.yaml")
    assert r.exit_code == 0 and not (tmp_path / "d.yaml").exists(), r.output
    monkeypatch.setenv("RANK", "0")
    assert invoke("train", "bin", "--save-dir", tmp_path / "r", "--dump-config", tmp_path / "d.yaml").exit_code == 0
    assert (tmp_path / "d.yaml").exists()
