"""What users of other toolkits reach for: --version, -o -, info, average, --init-from, refused resumes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.errors import UserError
from nmtkit.core.runtime import resolve_device
from nmtkit.models.config import model_config
from tests.checkpoints import fake_checkpoint
from tests.conftest import EN, FR


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_version_names_torch_without_loading_it():
    r = invoke("--version")
    # read from the metadata, which may leave out the local part a CUDA build's torch.__version__ has ("+cu130")
    release = torch.__version__.split("+")[0]
    assert r.exit_code == 0 and r.output.startswith("nmtkit ") and f"torch {release}" in r.output
    code = (
        "import sys\nfrom nmtkit.cli import main\ntry:\n    main(['--version'])\n"
        "except SystemExit:\n    print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.startswith("nmtkit ") and done.stdout.splitlines()[-1] == "False"


def test_dash_is_stdout_and_two_streams_cannot_share_it(overfit, tmp_path):
    src = tmp_path / "in.en"
    src.write_text(EN[0] + "\n", encoding="utf-8")
    model = overfit / "run" / "last.pt"
    r = invoke("translate", "-m", model, src, "-o", "-")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1 and not (tmp_path / "-").exists()
    r = invoke("translate", "-m", model, src, "--alignments", "-")
    assert r.exit_code == 2 and "cannot both go to stdout" in r.output
    r = invoke("translate", "-m", model, src, "-o", tmp_path / "out.fr", "--print-alignment", "-")
    assert r.exit_code == 0, r.output
    assert re.fullmatch(r"(\d+-\d+ ?)+", r.stdout.strip()) and not (tmp_path / "-").exists()
    assert len((tmp_path / "out.fr").read_text(encoding="utf-8").splitlines()) == 1
    r = invoke("translate", "-m", model, src, "--print-alignment", "-")
    assert r.exit_code == 2 and "the translations and the Pharaoh links cannot both go to stdout" in r.output
    ref = tmp_path / "ref.fr"
    ref.write_text(FR[0] + "\n", encoding="utf-8")
    for to in ([], ["-o", "-"]):  # align's links on stdout when -o is not given: its records ran into them
        r = invoke("align", "-m", model, "--source", src, "--target", ref, "--alignments", "-", *to)
        assert r.exit_code == 2 and "the links and the alignments cannot both go to stdout" in r.output, r.output


def test_a_checkpoint_is_never_written_to_stdout(overfit, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = overfit / "run" / "last.pt"
    for args in (
        ("average", model, model.with_name("best.pt"), "-o", "-"),
        ("lexicon", model, "--data", overfit / "bin-kept", "-o", "-"),
    ):
        r = invoke(*args)
        assert r.exit_code == 2 and "a checkpoint is a binary file, not a stream" in r.output, r.output
        assert not (tmp_path / "-").exists() and r.stdout.count("\n") <= 1


def test_every_help_example_parses_in_a_shell():
    import shlex

    from nmtkit.cli import main as group

    for name, command in group.commands.items():
        for line in (command.epilog or "").splitlines():
            if line.strip().startswith(("nmtkit", "echo", "curl", "torchrun")):
                shlex.split(line.replace("\\", ""), comments=True)  # raises on an unclosed quote
        assert "`" not in (command.epilog or ""), name


def test_info_shows_what_the_checkpoint_holds(overfit):
    r = invoke("info", overfit / "run" / "last.pt")
    assert r.exit_code == 0, r.output
    assert "rnnsearch" in r.output and "en → fr" in r.output and "250 updates" in r.output
    found = json.loads(invoke("info", overfit / "run" / "last.pt", "--output-format", "json").stdout)
    assert found["progress"]["updates"] == 250 and found["resumable"] and found["training"]["optimizer"] == "adam"
    assert found["vocabulary"]["tgt"] == len(checkpoint.load(overfit / "run" / "last.pt").text.vocab["tgt"])


def test_info_says_the_rate_schedule_and_the_dropouts(overfit):
    from nmtkit.checkpoint.info import describe, format_info

    info = describe(overfit / "run" / "last.pt")
    plain = format_info(info)
    assert "training   adam lr 0.02, batch" in plain and "dropout" not in plain and "weight drop" not in plain
    info["training"] |= {"warmup": 50, "lr_decay": "plateau", "decay": 0.5, "decay_patience": 2}
    info["model"] |= {"dropout": 0.3, "weight_drop": 0.2}
    said = format_info(info)
    assert "lr 0.02 (warm-up 50, × 0.5 on plateaus of 3 validations)" in said
    assert "; dropout 0.3; weight drop 0.2;" in said
    assert "smoothing" not in plain and "sampled" not in plain and "accumulated" not in plain
    info["training"] |= {"max_tokens": 300, "update_freq": 2, "label_smoothing": 0.1, "shortlist": 200}
    said = format_info(info)  # the batch size a token cap leaves unread is not said
    assert ", batch 300 target tokens × 2 accumulated, label smoothing 0.1, sampled softmax over 200 words" in said
    assert "coverage" not in plain and "alignment head" not in plain  # the JSON alone said them
    info["model"] |= {"coverage": {"kind": "neural", "max_fertility": 2.0}, "alignment_head": True, "encoder": "cudnn"}
    info["model"] |= {"tie_embeddings": True, "layer_norm": True}
    assert "; neural coverage; alignment head; tied embeddings; layer norm; cudnn encoder;" in format_info(info)
    assert "readout" not in format_info(info) and "fertility" not in format_info(info)  # at their defaults
    # a setting without words of its own is said by its name where it is not its family's default
    info["model"] |= {"readout": "next", "coverage": {"kind": "linguistic", "max_fertility": 3.0}}
    assert "; linguistic coverage; alignment head; tied embeddings; layer norm; cudnn encoder; readout next; " in (
        format_info(info)
    )
    assert "max fertility 3;" in format_info(info)
    # a field that is no setting (train derives Luong's max_src from --max-len) is not said as one
    from nmtkit.models.config import LuongConfig

    said = format_info(info | {"model": LuongConfig(max_src=51, window=5).to_dict()})
    assert "D = 5" in said and "max src" not in said
    info["training"] |= {"warmup": 0, "lr_decay": "none", "decay_after": 5}
    assert "lr 0.02 (× 0.5 each epoch after 5), batch" in format_info(info)


def test_info_names_the_dev_score_that_chose_best_pt(corpus, tmp_path):
    """--no-valid-bleu beside the default --best-by bleu: dev NLL chose best.pt, and info says so
    (it printed the NLL as "best dev BLEU -345.32")."""
    from nmtkit.checkpoint.info import describe, format_info
    from nmtkit.train.loop import train
    from tests.test_train import TINY, cfg

    train(corpus, tmp_path / "r", TINY, cfg(max_updates=2, valid_every=2, valid_bleu=False))
    info = describe(tmp_path / "r" / "best.pt")
    assert info["training"]["best_by"] == "bleu" and info["progress"]["best_by"] == "nll"
    assert "dev NLL" in format_info(info) and "dev BLEU" not in format_info(info)


def test_info_reads_a_training_run_and_a_corpus_too(overfit, tmp_path):
    r = invoke("info", overfit / "run")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("trained 250 updates in ") and "target tokens/s" in r.output
    run = json.loads(invoke("info", overfit / "run", "--output-format", "json").stdout)
    assert run["updates"] == 250 and run["best"]["step"] == 250 and run["machine"]["cores"] >= 1
    r = invoke("info", overfit / "bin-kept")
    assert r.exit_code == 0 and "corpus en→fr" in r.output and "train" in r.output
    corpus = json.loads(invoke("info", overfit / "bin-kept", "--output-format", "json").stdout)
    assert corpus["format"] == "nmtkit-corpus" and corpus["splits"]["train"]["sentences"] == 6
    r = invoke("info", tmp_path)
    assert r.exit_code == 2 and "not a training run" in r.output and "Traceback" not in r.output
    stopped = tmp_path / "stopped"  # a run stopped before its first log line: said not to be one
    stopped.mkdir()
    shutil.copy(overfit / "run" / "last.pt", stopped / "last.pt")
    r = invoke("info", stopped)
    assert r.exit_code == 0 and r.output.startswith("trained 250 updates in ") and "before its first log" in r.output
    facts = json.loads(invoke("info", stopped, "--output-format", "json").stdout)
    assert facts["updates"] == 250 and facts["tgt_tokens_per_s"] is None
    (stopped / "metrics.jsonl").write_text("")  # a run just started: its log made, no line yet (0 tokens/s before)
    r = invoke("info", stopped)
    assert r.exit_code == 0 and "before its first log" in r.output and "0 target tokens/s" not in r.output, r.output


def test_info_reads_a_run_killed_while_it_logged_and_refuses_a_damaged_log(overfit, tmp_path):
    """A last line torn by a kill is left out, as a resumed run drops it; a whole line anywhere that
    is not the log's, or bytes that are not UTF-8, are one line and status 2 (a traceback before)."""
    run = tmp_path / "run"
    run.mkdir()
    log = (overfit / "run" / "metrics.jsonl").read_bytes()
    for name in ("metrics.jsonl", "machine.json"):
        (run / name).write_bytes((overfit / "run" / name).read_bytes())
    (run / "metrics.jsonl").write_bytes(log + b'{"step": 260, "epo')
    torn = json.loads(invoke("info", run, "--output-format", "json").stdout)
    assert torn["updates"] == 250
    for damage, said in (
        (b'{"step": 260, "epo\n', "line"),
        (b"[1, 2]\n", "line"),
        (b"\xff\xfe\n", "UTF-8"),
        (b'{"step": 1, "tgt_tokens_per_s": "fast"}\n', "line 1 is not a line of a training log"),
    ):
        (run / "metrics.jsonl").write_bytes(damage + log)
        r = invoke("info", run)
        assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output
    # a whole line (its end written) is not torn, even the last or the only one
    for damaged in (b"not json\n", log + b'{"step": 260, "epo\n'):
        (run / "metrics.jsonl").write_bytes(damaged)
        r = invoke("info", run)
        assert r.exit_code == 2 and "is not a line of a training log" in r.output, r.output
    (run / "metrics.jsonl").write_bytes(log)
    for machine in (
        b"",
        b'{"cpu": "x", "cor',
        b'{"machine": 5}',
        b"\xff",
        b'{"cpu": "x", "cores": 2, "torch": "2", "family": 1}',
        b'{"cpu": "x", "cores": 2, "torch": "2", "flags": 5}',
    ):
        (run / "machine.json").write_bytes(machine)
        r = invoke("info", run)
        assert r.exit_code == 2 and "machine.json: not the record of a machine" in r.output, r.output


@pytest.mark.parametrize("damage", [b'{"step": 3, "se', b"\xff\xfe", b"[1, 2]", b'{"seconds": 1.0}'])
def test_a_resumed_run_keeps_its_log_up_to_the_checkpoint_and_the_damage(tmp_path, damage, capfd):
    """open_log on resume: the lines after the checkpoint's update and from a damaged line on are
    dropped (bytes that are not UTF-8 and a line that is no entry were a traceback), the damage
    said (the lines were dropped without a word)."""
    from nmtkit.train import runlog

    good = b"".join(json.dumps({"step": k, "seconds": float(k)}).encode() + b"\n" for k in (1, 2, 3))
    (tmp_path / "metrics.jsonl").write_bytes(good[: good.index(b'{"step": 3')] + damage + b"\n" + good)
    capfd.readouterr()
    runlog.open_log(tmp_path, step=2)
    assert [e["step"] for e in runlog.entries(tmp_path)] == [1, 2]
    err = capfd.readouterr().err
    assert err.startswith("warning: ") and "the log is kept up to there, the lines from there on dropped" in err, err
    (tmp_path / "metrics.jsonl").write_bytes(good + b'{"step": 4, "se')  # torn by a kill: dropped, as ever, unsaid
    runlog.open_log(tmp_path, step=3)
    assert [e["step"] for e in runlog.entries(tmp_path)] == [1, 2, 3] and capfd.readouterr().err == ""


def test_average_is_the_mean_of_the_weights(tmp_path):
    fake_checkpoint(tmp_path / "a.pt", step=1, weights={"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.0])})
    fake_checkpoint(tmp_path / "b.pt", step=2, weights={"w": torch.tensor([3.0, 6.0]), "b": torch.tensor([1.0])})
    r = invoke("average", tmp_path / "a.pt", tmp_path / "b.pt", "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0, r.output
    avg = checkpoint.load(tmp_path / "avg.pt")
    assert torch.equal(avg.weights["w"], torch.tensor([2.0, 4.0])) and torch.equal(
        avg.weights["b"], torch.tensor([0.5])
    )
    assert avg.training.progress.step == 2 and not avg.training.resumable
    assert avg.averaged == (checkpoint.Averaged("a.pt", 1), checkpoint.Averaged("b.pt", 2))
    shown = invoke("info", tmp_path / "avg.pt")
    assert "\naveraged   2 checkpoints, a.pt (update 1) and b.pt (update 2); the progress" in shown.stdout
    described = json.loads(invoke("info", tmp_path / "avg.pt", "--output-format", "json").stdout)
    assert described["averaged"] == [{"name": "a.pt", "updates": 1}, {"name": "b.pt", "updates": 2}]
    assert "averaged" not in invoke("info", tmp_path / "a.pt").stdout
    other = fake_checkpoint(tmp_path / "c.pt", weights={"w": torch.zeros(2), "b": torch.zeros(1)})
    other.model = replace(other.model, hidden=7)
    checkpoint.save(tmp_path / "c.pt", other)
    r = invoke("average", tmp_path / "a.pt", tmp_path / "c.pt", "-o", tmp_path / "bad.pt")
    assert r.exit_code == 2 and "differs in hidden" in r.output and not (tmp_path / "bad.pt").exists()
    other.model = model_config("luong", src_vocab=other.model.src_vocab, tgt_vocab=other.model.tgt_vocab)
    checkpoint.save(tmp_path / "c.pt", other)  # every field was listed, the other family's too
    r = invoke("average", tmp_path / "a.pt", tmp_path / "c.pt", "-o", tmp_path / "bad.pt")
    assert r.exit_code == 2 and f"c.pt: a model of --arch luong, {tmp_path / 'a.pt'} one of rnnsearch" in r.output
    # checkpoints that differ in their dropouts alone (a run fine-tuned with more) have alike weights
    tuned = fake_checkpoint(tmp_path / "d.pt", weights={"w": torch.zeros(2), "b": torch.zeros(1)})
    tuned.model = replace(tuned.model, dropout=0.3, weight_drop=0.2)
    checkpoint.save(tmp_path / "d.pt", tuned)
    r = invoke("average", tmp_path / "a.pt", tmp_path / "d.pt", "-o", tmp_path / "ad.pt")
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "ad.pt").model == tuned.model  # the last's, as its progress
    assert "warning" not in r.stderr
    seeded = fake_checkpoint(tmp_path / "e.pt", weights={"w": torch.zeros(2), "b": torch.zeros(1)})
    seeded.training = replace(seeded.training, config=replace(seeded.training.config, seed=7))
    checkpoint.save(tmp_path / "e.pt", seeded)
    r = invoke("average", tmp_path / "a.pt", tmp_path / "e.pt", "-o", tmp_path / "ae.pt")
    assert r.exit_code == 0 and "e.pt was trained from seed 7, " in r.stderr and "ensembles them" in r.stderr


def test_average_refuses_a_damaged_weight_by_name_and_an_output_that_is_an_input(tmp_path):
    """A weight of another shape was a traceback, a NaN one an average that translate refused, and
    -o naming an input replaced it (best.pt lost)."""
    fake_checkpoint(tmp_path / "a.pt", step=1, weights={"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.0])})
    for name, weights, said in (
        ("shape.pt", {"w": torch.zeros(3), "b": torch.zeros(1)}, "weight w is 3 where"),
        ("gone.pt", {"w": torch.zeros(2)}, "weight b is missing where"),
        ("nan.pt", {"w": torch.tensor([1.0, float("nan")]), "b": torch.zeros(1)}, "weight w is not finite"),
    ):
        fake_checkpoint(tmp_path / name, step=2, weights=weights)
        r = invoke("average", tmp_path / "a.pt", tmp_path / name, "-o", tmp_path / "avg.pt")
        assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output
        assert not (tmp_path / "avg.pt").exists()
    fake_checkpoint(tmp_path / "b.pt", step=2, weights={"w": torch.zeros(2), "b": torch.zeros(1)})
    before = (tmp_path / "b.pt").read_bytes()
    r = invoke("average", tmp_path / "a.pt", tmp_path / "b.pt", "-o", tmp_path / "b.pt")
    assert r.exit_code == 2 and "the same file as CHECKPOINT" in r.output, r.output
    assert (tmp_path / "b.pt").read_bytes() == before


def test_an_average_keeps_a_tied_weight_one_tensor(tmp_path):
    """--tie-embeddings: one matrix reads the target words in and scores them out; averaged as two
    copies, the file grew and info counted it twice."""
    tied = torch.arange(6.0).reshape(3, 2)
    for run, scale in (("a", 1.0), ("b", 3.0)):
        w = tied * scale
        (tmp_path / run).mkdir()
        fake_checkpoint(
            tmp_path / run / "best.pt", weights={"embed.weight": w, "W_o.weight": w, "b": torch.ones(2) * scale}
        )
    r = invoke("average", tmp_path / "a" / "best.pt", tmp_path / "b" / "best.pt", "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0, r.output
    assert f"({tmp_path / 'a' / 'best.pt'} to {tmp_path / 'b' / 'best.pt'})" in r.stderr  # two best.pt: the paths
    assert [a.name for a in checkpoint.load(tmp_path / "avg.pt").averaged] == [
        str(tmp_path / run / "best.pt") for run in "ab"
    ]  # in the file too
    avg = checkpoint.load(tmp_path / "avg.pt").weights
    assert torch.equal(avg["embed.weight"], tied * 2) and torch.equal(avg["b"], torch.ones(2) * 2)
    assert avg["W_o.weight"].untyped_storage().data_ptr() == avg["embed.weight"].untyped_storage().data_ptr()
    assert avg["b"].untyped_storage().data_ptr() != avg["embed.weight"].untyped_storage().data_ptr()


def test_average_takes_a_run_directory_and_its_last_n_validations_in_update_order(tmp_path):
    """fairseq's --num-update-checkpoints: the run's update-N.pt by number (update-10 after update-9)."""
    run = tmp_path / "run"
    run.mkdir()
    for step in (8, 9, 10):
        fake_checkpoint(run / f"update-{step}.pt", step=step, weights={"w": torch.tensor([float(step)])})
    fake_checkpoint(run / "last.pt", step=10, weights={"w": torch.tensor([100.0])})  # not a kept validation
    fake_checkpoint(run / "update-final.pt", step=10, weights={"w": torch.tensor([100.0])})  # nor this
    r = invoke("average", run, "--last", 2, "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0, r.output
    assert torch.equal(checkpoint.load(tmp_path / "avg.pt").weights["w"], torch.tensor([9.5]))
    assert "averaged 2 checkpoints (update-9.pt to update-10.pt)" in r.stderr
    r = invoke("average", run, "-o", tmp_path / "all.pt")
    assert torch.equal(checkpoint.load(tmp_path / "all.pt").weights["w"], torch.tensor([9.0]))
    too_many = invoke("average", run, "--last", 4, "-o", tmp_path / "x.pt")
    assert too_many.exit_code == 2 and "--last 4: there are 3 checkpoints" in too_many.output
    twice = invoke("average", run, run / "update-9.pt", "-o", tmp_path / "x.pt")
    assert twice.exit_code == 2 and "update-9.pt: given twice" in twice.output
    os.link(run / "update-9.pt", tmp_path / "hard.pt")  # a hard link was averaged as a second model
    twice = invoke("average", run / "update-9.pt", tmp_path / "hard.pt", "-o", tmp_path / "x.pt")
    assert twice.exit_code == 2 and "hard.pt: given twice" in twice.output
    (tmp_path / "hard.pt").unlink()
    empty = invoke("average", tmp_path / "avg.pt", tmp_path, "-o", tmp_path / "x.pt")
    assert empty.exit_code == 2 and "holds no update-N.pt" in empty.output
    (run / "metrics.jsonl").write_text('{"step": 5, "dev_nll": 1.0}\n')  # another run's log, none of these
    earlier = invoke("average", run, "-o", tmp_path / "x.pt")
    assert earlier.exit_code == 2 and "holds only an earlier run's update-N.pt" in earlier.output
    (run / "metrics.jsonl").unlink()
    for name in ("last.pt", "best.pt", "best-9.pt", "update-11.pt"):  # the run's resume state was replaced
        before = (run / name).read_bytes() if (run / name).exists() else None
        r = invoke("average", run / "update-8.pt", run / "update-9.pt", "-o", run / name)
        assert r.exit_code == 2 and f"{run / name}: a name train writes in its run directory" in r.output, r.output
        assert ((run / name).read_bytes() if (run / name).exists() else None) == before
    assert invoke("average", run / "update-8.pt", run / "update-9.pt", "-o", run / "average.pt").exit_code == 0


def test_an_averaged_checkpoint_translates(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    earlier = checkpoint.load(model)  # an earlier update of the run (last.pt and best.pt may hold one model)
    earlier.training.progress.step -= 1
    earlier.weights = {k: v * 0.99 if v.is_floating_point() else v for k, v in earlier.weights.items()}
    checkpoint.save(tmp_path / "earlier.pt", earlier)
    assert invoke("average", model, tmp_path / "earlier.pt", "-o", tmp_path / "avg.pt").exit_code == 0
    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", tmp_path / "avg.pt", tmp_path / "in.en")
    assert r.exit_code == 0 and r.stdout.strip()


@pytest.fixture
def data_bin(raw, tmp_path):
    from tests.test_corpus import make_corpus

    make_corpus(raw, tmp_path)
    return tmp_path / "bin"


TINY = ["--preset", "tiny", "--optimizer", "adam", "--batch-size", "2", "--no-valid-bleu", "--threads", "1"]


def test_a_command_without_model_flags_goes_on_with_the_checkpoints_model(data_bin, tmp_path):
    """The FAQ's --init-from line, and a resume, with training flags alone: the model is the
    checkpoint's, where the paper's default sizes were compared with it and refused."""
    run, plain = tmp_path / "a", ["--optimizer", "adam", "--batch-size", "2", "--no-valid-bleu", "--threads", "1"]
    r = invoke("train", data_bin, "--save-dir", run, "--preset", "tiny", "--hidden", 24, *plain, "--max-updates", 2)
    assert r.exit_code == 0, r.output
    r = invoke(
        "train", data_bin, "--save-dir", tmp_path / "b", "--init-from", run / "last.pt", *plain, "--max-updates", 1
    )
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "b" / "last.pt").model == checkpoint.load(run / "last.pt").model
    r = invoke("train", data_bin, "--save-dir", run, *plain, "--max-updates", 3)  # a resume
    assert r.exit_code == 0, r.output
    resumed = checkpoint.load(run / "last.pt")
    assert resumed.training.progress.step == 3 and resumed.model.hidden == 24


def test_the_dropouts_may_change_on_a_fine_tuning_or_a_resume_and_the_log_says_so(data_bin, tmp_path):
    """--dropout and --weight-drop shape training, not the weights: typed alone with --init-from
    they are the new run's (the rest of the model the checkpoint's), typed on a resume the run goes
    on with them and says so; a model flag beside them must still describe the checkpoint."""
    run, plain = tmp_path / "a", ["--optimizer", "adam", "--batch-size", "2", "--no-valid-bleu", "--threads", "1"]
    r = invoke("train", data_bin, "--save-dir", run, "--preset", "tiny", "--hidden", 24, *plain, "--max-updates", 2)
    assert r.exit_code == 0, r.output
    tuned = tmp_path / "b"
    line = ["train", data_bin, "--save-dir", tuned, "--init-from", run / "last.pt", *plain]
    r = invoke(*line, "--dropout", 0.3, "--weight-drop", 0.2, "--max-updates", 1)
    assert r.exit_code == 0, r.output
    assert "fine-tuning with --dropout 0.3 (was 0.0), --weight-drop 0.2 (was 0.0)" in r.output
    model = checkpoint.load(tuned / "last.pt").model
    assert (model.hidden, model.dropout, model.weight_drop) == (24, 0.3, 0.2)
    r = invoke("train", data_bin, "--save-dir", tuned, *plain, "--weight-drop", 0.1, "--max-updates", 2)
    assert r.exit_code == 0, r.output
    said = next(x for x in r.output.splitlines() if x.startswith(f"resuming {tuned / 'last.pt'} with this command's"))
    assert said.endswith("--max-updates 2 (was 1), --weight-drop 0.1 (was 0.2)"), said
    model = checkpoint.load(tuned / "last.pt").model
    assert (model.dropout, model.weight_drop) == (0.3, 0.1)  # the untyped one goes on as it was
    line[3] = tmp_path / "c"
    r = invoke(*line, "--preset", "tiny", "--hidden", 40, "--dropout", 0.3, "--max-updates", 1)
    assert r.exit_code == 2 and "holds a model with --hidden 24, not 40:" in r.output
    # the flags typed describe the model (--arch rnnsearch does, without the paper's sizes); the
    # dropouts not typed are the checkpoint's, and --schedule luong's budget follows its dropout
    r = invoke(*line, "--arch", "rnnsearch", "--preset", "tiny", "--hidden", 24, "--max-updates", 1)
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "c" / "last.pt").model == checkpoint.load(run / "last.pt").model
    from_tuned = [*line[:3], tmp_path / "d", "--init-from", tuned / "last.pt", *plain, "--max-updates", 1]
    r = invoke(*from_tuned, "--schedule", "luong")
    assert r.exit_code == 0, r.output
    ckpt = checkpoint.load(tmp_path / "d" / "last.pt")
    assert ckpt.model.dropout == 0.3 and ckpt.training.config.max_epochs == 12  # the recipe with dropout
    r = invoke(*line, "--arch", "luong", "--preset", "tiny", "--weight-drop", 0.1)
    assert r.exit_code == 2 and "--weight-drop does not apply to --arch luong" in r.output
    luong = tmp_path / "l"
    r = invoke(
        "train", data_bin, "--save-dir", luong, "--arch", "luong", "--preset", "tiny", *plain, "--max-updates", 1
    )
    assert r.exit_code == 0, r.output
    r = invoke(
        "train", data_bin, "--save-dir", tmp_path / "e", "--init-from", luong / "last.pt", *plain, "--weight-drop", 0.1
    )
    assert (
        r.exit_code == 2
        and f"--weight-drop: {luong / 'last.pt'} holds a model with --arch luong, which has none" in r.output
    )


def test_resuming_another_model_is_refused_naming_the_difference(data_bin, tmp_path):
    run = tmp_path / "run"
    assert invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 2).exit_code == 0
    before = (run / "last.pt").read_bytes()
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, "--arch", "rnnencdec")
    assert r.exit_code == 2 and "--arch rnnsearch, not rnnencdec" in r.output
    # not the first setting of the other family that rnnsearch lacks (--layers)
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, "--arch", "luong")
    assert r.exit_code == 2 and "--arch rnnsearch, not luong" in r.output, r.output
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, "--hidden", 40)
    assert r.exit_code == 2 and "--hidden 32, not 40" in r.output
    assert (run / "last.pt").read_bytes() == before
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4)
    assert r.exit_code == 0 and checkpoint.load(run / "last.pt").training.progress.step == 4


def test_init_from_takes_the_weights_and_starts_a_fresh_run(data_bin, tmp_path):
    assert invoke("train", data_bin, "--save-dir", tmp_path / "a", *TINY, "--max-updates", 3).exit_code == 0
    r = invoke(
        "train",
        data_bin,
        "--save-dir",
        tmp_path / "b",
        *TINY,
        "--max-updates",
        2,
        "--lr",
        0,
        "--init-from",
        tmp_path / "a" / "last.pt",
    )
    assert r.exit_code == 0, r.output
    a, b = checkpoint.load(tmp_path / "a" / "last.pt"), checkpoint.load(tmp_path / "b" / "last.pt")
    assert b.training.progress.step == 2 and b.training.config.init_from == str(tmp_path / "a" / "last.pt")
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)  # lr 0: unchanged
    r = invoke(
        "train",
        data_bin,
        "--save-dir",
        tmp_path / "c",
        *TINY,
        "--max-updates",
        2,
        "--hidden",
        40,
        "--init-from",
        tmp_path / "a" / "last.pt",
    )
    assert r.exit_code == 2 and "--hidden 32, not 40" in r.output
    assert (
        f"give the model flags it was trained with, or none ('nmtkit info {tmp_path / 'a' / 'last.pt'}' lists them)"
        in r.output
        and "--reset" not in r.output
        and "--save-dir" not in r.output
    )
    # b has a last.pt: running its command again resumes b, and says that --init-from is not used
    r = invoke(
        "train",
        data_bin,
        "--save-dir",
        tmp_path / "b",
        *TINY,
        "--max-updates",
        3,
        "--lr",
        0,
        "--init-from",
        tmp_path / "a" / "last.pt",
    )
    assert r.exit_code == 0, r.output
    assert f"--init-from {tmp_path / 'a' / 'last.pt'} is ignored: {tmp_path / 'b' / 'last.pt'} exists" in r.output
    assert checkpoint.load(tmp_path / "b" / "last.pt").training.progress.step == 3


def test_a_resumed_run_names_the_batch_flags_it_does_not_take(data_bin, tmp_path):
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *TINY, "--max-updates", 2, "--patience", 0)
    assert r.exit_code == 0, r.output
    plain = ["--preset", "tiny", "--optimizer", "adam", "--no-valid-bleu", "--threads", "1"]
    again = [*plain, "--batch-size", "4", "--max-len", "20"]  # TINY has --batch-size 2
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *again, "--max-updates", 3, "--patience", 0)
    assert r.exit_code == 0, r.output
    last = tmp_path / "r" / "last.pt"
    said = f"--batch-size 4, --max-len 20 not used: the run in {last} keeps its batches (--batch-size 2, --max-len 50"
    assert said in r.output
    assert checkpoint.load(last).training.config.batch_size == 2
    # the same flags again, or a default left out: nothing to say
    for flags, updates in ((TINY, 4), (plain, 5)):
        r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags, "--max-updates", updates, "--patience", 0)
        assert r.exit_code == 0 and "not used" not in r.output, r.output
    # a value a --schedule gives is not one typed: the run's own --batch-size 2 stands without a word
    luong = [*plain, "--schedule", "luong", "--patience", 0]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "s", *luong, "--batch-size", 2, "--max-updates", 1)
    assert r.exit_code == 0, r.output
    r = invoke("train", data_bin, "--save-dir", tmp_path / "s", *luong, "--max-updates", 2)
    assert r.exit_code == 0 and "not used" not in r.output, r.output


def test_a_damaged_dev_split_is_refused_before_the_first_update_not_at_the_first_validation(data_bin, tmp_path):
    valid = data_bin / "valid.fr.bin"
    valid.write_bytes(valid.read_bytes()[:-2])
    flags = [*TINY, "--max-updates", 5, "--patience", 0, "--log-every", 1]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags)
    assert r.exit_code == 2 and f"{valid}: " in r.output and "truncated, or not this index's" in r.output, r.output
    assert "nll/tok" not in r.output  # not one update


def test_a_corpus_of_the_other_direction_is_refused_though_its_vocabularies_are_the_models(data_bin, tmp_path):
    """Its fingerprints, by language, match: score, lexicon and train read it as the model's, with
    a traceback (another size) or silently wrong figures (the same size)."""
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *TINY, "--max-updates", 1, "--patience", 0)
    assert r.exit_code == 0, r.output
    assert invoke("reverse", data_bin, tmp_path / "rev").exit_code == 0
    last, rev = tmp_path / "r" / "last.pt", tmp_path / "rev"
    said = f"{rev}: a fr→en corpus, where the checkpoint {last} translates en→fr; give one of its direction"
    for args in (
        ("score", "-m", last, "--data", rev),
        ("lexicon", last, "--data", rev, "-o", tmp_path / "lex.pt"),
        ("train", rev, "--save-dir", tmp_path / "s", *TINY, "--max-updates", 1, "--init-from", last),
        ("train", rev, "--save-dir", tmp_path / "r", *TINY, "--max-updates", 2),  # a resume
    ):
        r = invoke(*args)
        assert r.exit_code == 2 and said in r.output and "Traceback" not in r.output, (args, r.output)
    assert not (tmp_path / "lex.pt").exists()


def test_a_run_stopped_by_its_patience_resumed_says_so_and_what_would_go_on(data_bin, tmp_path):
    # a rate of 0 never betters the first dev score: the second validation spends a patience of 1
    flags = [*TINY, "--lr", 0, "--valid-every", 1, "--max-updates", 50]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags, "--patience", 1)
    assert r.exit_code == 0, r.output
    assert checkpoint.load(tmp_path / "r" / "last.pt").training.progress.step == 2
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags, "--patience", 1, "--clip", 2)
    said = "it reached --patience 1 (1 validation without a better dev score); to go on from it, a --patience over 1"
    assert r.exit_code == 0 and said in r.output and "this command's" not in r.output, r.output
    # both limits reached: each is named, with what goes beyond it
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags[:-2], "--max-updates", 2, "--patience", 1)
    said = "it reached --max-updates 2 and --patience 1 (1 validation without a better dev score); to go on from it,"
    assert said + " a --max-updates over 2 and a --patience over 1, or 0 (--reset starts over)" in r.output, r.output
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags, "--patience", 3)
    assert r.exit_code == 0 and "is a finished run" not in r.output, r.output
    assert checkpoint.load(tmp_path / "r" / "last.pt").training.progress.step == 4
    # what goes on is a patience over the validations counted, not over the one asked
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", *flags, "--patience", 2)
    assert "--patience 2 (3 validations without a better dev score); to go on from it, a --patience over 3" in r.output


def test_a_run_finished_by_its_minutes_or_epochs_names_what_goes_beyond_them(tmp_path):
    from types import SimpleNamespace

    from nmtkit.checkpoint import Progress
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.loop import _nothing_to_do
    from nmtkit.train.state import TrainState

    cfg = TrainConfig(max_minutes=1.0, max_epochs=2, patience=0)
    progress = Progress(step=90, seconds=50.0, validation_seconds=12.0)
    state = SimpleNamespace(
        cfg=cfg, progress=progress, batches=SimpleNamespace(epoch=2), save_dir=tmp_path, patience_spent=lambda: False
    )
    state.spent = lambda: TrainState.spent(state)  # the budgets' own test, not a copy of it
    said = _nothing_to_do(state)
    assert "it reached --max-epochs 2 and --max-minutes 1 (0.83 trained, 0.20 kept for the final validation)" in said
    assert said.endswith("to go on from it, a --max-epochs over 2 and a --max-minutes over 1.03 (--reset starts over)")


def test_a_resumed_run_takes_the_commands_rate_names_each_change_and_refuses_another_optimizer(data_bin, tmp_path):
    run, last = tmp_path / "r", tmp_path / "r" / "last.pt"
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--lr", "0.01", "--max-updates", 2, "--patience", 0)
    assert r.exit_code == 0, r.output
    assert checkpoint.load(last).training.optimizer["param_groups"][0]["lr"] == 0.01
    # torch's loading brings the saved rate back; without a schedule, nothing would set this one
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--lr", "0.002", "--max-updates", 3, "--patience", 0)
    assert r.exit_code == 0, r.output
    assert f"resuming {last} with this command's --lr 0.002 (was 0.01), --max-updates 3 (was 2)" in r.output
    saved = checkpoint.load(last).training
    assert saved.optimizer["param_groups"][0]["lr"] == 0.002 and saved.progress.step == 3
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--lr", "0.002", "--max-updates", 3, "--patience", 0)
    assert r.exit_code == 0 and "this command's" not in r.output, r.output  # the same command: no word
    # a finished run names no change it would not use, and says what would make it go on
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--lr", "0.5", "--max-updates", 3, "--patience", 0)
    assert r.exit_code == 0 and "this command's" not in r.output, r.output
    said = f"{last} is a finished run, at update 3: it reached --max-updates 3; to go on from it, a --max-updates"
    assert said + " over 3" in r.output
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--lr", "0.002", "--max-updates", 1, "--patience", 0)
    assert "it reached --max-updates 1 (it is past it, at 3);" in r.output  # a lower budget: where it stands
    other = [a if a != "adam" else "sgd" for a in TINY]
    r = invoke("train", data_bin, "--save-dir", run, *other, "--max-updates", 4, "--patience", 0)
    assert r.exit_code == 2, r.output
    line = f"nmtkit train: error: --optimizer sgd: the run in {last} trained with adam and holds its state; give"
    assert r.output.startswith(line) and len(r.output.strip().splitlines()) == 1, r.output
    assert checkpoint.load(last).training.progress.step == 3
    # --head-only turned on: another optimizer's parameters, refused in one line (was a "format" error)
    from nmtkit.train.continued import resumed as _resumed

    ckpt = checkpoint.load(last)
    head_only = replace(ckpt.training.config, head_only=True)
    with pytest.raises(
        UserError, match=f"--head-only: the run in {re.escape(str(last))} trained the whole model; start"
    ):
        _resumed(ckpt, ckpt.model, head_only, last, False, None)
    # a decay over the budget follows a new budget: the rate goes back up, and the log says why
    more = ["--lr", "0.002", "--lr-decay", "linear", "--patience", 0]
    r = invoke("train", data_bin, "--save-dir", run, *TINY, *more, "--max-updates", 4)
    assert r.exit_code == 0 and "--lr-decay linear falls over the new budget" in r.output, r.output


def test_a_reset_run_names_the_kept_models_of_the_run_before_it(data_bin, tmp_path):
    kept = ["--keep-validations", "--valid-every", 1, "--patience", 0]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "k", *TINY, *kept, "--max-updates", 2)
    assert r.exit_code == 0 and "earlier run" not in r.output, r.output
    r = invoke("train", data_bin, "--save-dir", tmp_path / "k", *TINY, "--reset", "--max-updates", 1)
    assert r.exit_code == 0, r.output
    assert f"warning: {tmp_path / 'k'} holds 2 kept models of an earlier run (update-1.pt, update-2.pt)" in r.output
    assert (tmp_path / "k" / "update-2.pt").exists()  # not deleted unasked


def test_the_time_an_update_takes_leaves_out_the_validations_among_the_timed_updates(data_bin, tmp_path, monkeypatch):
    from nmtkit.train import loop

    real = loop.validate
    monkeypatch.setattr(loop, "validate", lambda *a, **k: time.sleep(1.0) or real(*a, **k))
    flags = [*TINY, "--valid-every", 2, "--patience", 0, "--valid-max-sentences", 2]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "a", *flags, "--max-updates", 14)
    assert r.exit_code == 0, r.output
    took = re.search(r"an update takes (\d+\.\d\d) s here", r.output)
    assert took and float(took.group(1)) < 0.5, r.output  # a validation in the window: over 1 s each


def test_a_run_says_what_stops_it_and_how_long_an_update_takes(data_bin, tmp_path):
    r = invoke("train", data_bin, "--save-dir", tmp_path / "a", *TINY, "--max-updates", 8, "--patience", 0)
    assert r.exit_code == 0, r.output
    assert "stops at update 8; Ctrl-C saves last.pt and stops" in r.output
    assert re.search(
        r"an update takes \d+\.\d\d s here: an epoch of [\d,]+ updates about [\d.]+ (s|min|h|days), "
        r"update 8 in about",
        r.output,
    ), r.output
    assert "--schedule cpu" not in r.output  # a bounded run needs no advice
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.pace import pace_report, stopping_rule

    unbounded = TrainConfig(patience=0)
    assert stopping_rule(unbounded).startswith("nothing stops this run but Ctrl-C")
    assert stopping_rule(TrainConfig()) == (
        "stops after 10 validations (one every 1,000 updates) without a better dev BLEU; Ctrl-C saves last.pt and stops"
    )
    paper = pace_report(TrainConfig(), 3.0, 80_000, on_cpu=True)
    assert "an epoch of 80,000 updates about 2.8 days" in paper and "--schedule cpu" in paper
    assert "--schedule cpu" not in pace_report(TrainConfig(), 0.05, 40_000, on_cpu=False)
    resumed = pace_report(TrainConfig(max_updates=400), 0.5, 100, on_cpu=False, done=300)
    # the 100 updates left, not all 400; the validations' time is not in it (a recipe's 20 updates
    # "in about 1 s" took 38 with theirs)
    assert resumed.endswith("update 400 in about 50 s (validations and saves aside)")
    last = pace_report(TrainConfig(max_updates=6), 1.8, 100, on_cpu=False, done=6)  # timed at the last update
    assert last == "an update takes 1.80 s here: an epoch of 100 updates about 3 min"


def test_the_cpu_advice_gives_the_demo_recipe_of_the_makefile():
    from pathlib import Path

    from nmtkit.train.config import TrainConfig
    from nmtkit.train.pace import pace_report

    recipe = re.search(r"^CPU_RECIPE \?= (.*)$", (Path(__file__).parents[1] / "Makefile").read_text(), re.M)
    assert recipe and f"({'the demo' + chr(39) + 's recipe'}: {recipe.group(1)} --max-minutes 20)" in pace_report(
        TrainConfig(), 1.0, 100, on_cpu=True
    )


def test_a_toml_config_gives_options_and_the_command_line_overrides_it(data_bin, tmp_path):
    (tmp_path / "run.toml").write_text(
        'preset = "tiny"\nhidden = 40\nmax-updates = 5\noptimizer = "adam"\n'
        "batch_size = 2\nvalid-bleu = false\nthreads = 1\n",
        encoding="utf-8",
    )
    r = invoke("train", data_bin, "--save-dir", tmp_path / "r", "--config", tmp_path / "run.toml", "--max-updates", 2)
    assert r.exit_code == 0, r.output
    ckpt = checkpoint.load(tmp_path / "r" / "last.pt")
    assert ckpt.model.hidden == 40 and ckpt.model.emb == 32 and ckpt.training.progress.step == 2
    assert (ckpt.training.config.optimizer, ckpt.training.config.batch_size) == ("adam", 2)
    assert "hidden 40" in invoke("info", tmp_path / "r" / "last.pt").output
    (tmp_path / "bad.toml").write_text("hiden = 40\n", encoding="utf-8")
    r = invoke("train", data_bin, "--save-dir", tmp_path / "x", "--config", tmp_path / "bad.toml")
    assert r.exit_code == 2 and "'hiden' is not an option of 'nmtkit train'" in r.output
    (tmp_path / "c.toml").write_text("hidden: 40\n", encoding="utf-8")
    r = invoke("train", data_bin, "--save-dir", tmp_path / "x", "--config", tmp_path / "c.toml")
    assert r.exit_code == 2 and r.output.startswith("nmtkit train: error: ") and "not valid TOML" in r.output


def test_keep_last_and_keep_best_keep_that_many(data_bin, tmp_path):
    r = invoke(
        "train",
        data_bin,
        "--save-dir",
        tmp_path / "k",
        *TINY,
        "--max-updates",
        10,
        "--valid-every",
        2,
        "--keep-last",
        2,
        "--keep-best",
        2,
        "--best-by",
        "nll",
    )
    assert r.exit_code == 0, r.output
    run = tmp_path / "k"
    assert sorted(p.name for p in run.glob("update-*.pt")) == ["update-10.pt", "update-8.pt"]
    nll = {
        json.loads(x)["step"]: json.loads(x)["dev_nll"]
        for x in (run / "metrics.jsonl").read_text().splitlines()
        if "dev_nll" in x
    }
    best_two = sorted(nll, key=nll.get)[:2]
    assert sorted(p.name for p in run.glob("best-*.pt")) == sorted(f"best-{s}.pt" for s in best_two)
    assert invoke("average", *sorted(run.glob("update-*.pt")), "-o", run / "avg.pt").exit_code == 0


def test_a_reset_runs_keep_options_prune_its_own_models_not_the_earlier_runs(data_bin, tmp_path):
    """The warning says an earlier run's kept models stay beside this run's; the pruning, counting
    them in, deleted this run's newer models and kept the earlier run's."""
    keep = ["--valid-every", 2, "--keep-last", 2, "--keep-best", 1, "--best-by", "nll"]
    assert invoke("train", data_bin, "--save-dir", tmp_path / "k", *TINY, "--max-updates", 8, *keep).exit_code == 0
    earlier = {p.name: p.read_bytes() for p in (tmp_path / "k").glob("*-*.pt")}
    assert sorted(p for p in earlier if p.startswith("update-")) == ["update-6.pt", "update-8.pt"]
    r = invoke(
        "train", data_bin, "--save-dir", tmp_path / "k", *TINY, "--max-updates", 4, *keep, "--reset", "--seed", 7
    )
    assert r.exit_code == 0 and "kept models of an earlier run" in r.output, r.output
    run = tmp_path / "k"
    assert {"update-2.pt", "update-4.pt", "update-6.pt", "update-8.pt"} <= {p.name for p in run.glob("update-*.pt")}
    assert all(
        (run / name).read_bytes() == data for name, data in earlier.items() if not name.endswith(("-2.pt", "-4.pt"))
    )
    assert len([p for p in run.glob("best-*.pt") if p.name in ("best-2.pt", "best-4.pt")]) == 1  # this run's best
    # average takes this run's own, by its log: the earlier run's update-6 and -8 would be the last two
    r = invoke("average", run, "--last", 2, "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0, r.output
    assert "left out 2 kept models of an earlier run, not its own (update-6.pt, update-8.pt)" in r.stderr
    assert [a.name for a in checkpoint.load(tmp_path / "avg.pt").averaged] == ["update-2.pt", "update-4.pt"]


def test_average_refuses_one_model_given_twice_as_two_files(data_bin, tmp_path):
    """A run directory and its last.pt, or a kept model and its copy: the same weights, counted
    twice, and 'averaged 3 checkpoints'."""
    import shutil

    run = tmp_path / "k"
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, "--valid-every", 2, "--keep-last", 2)
    assert r.exit_code == 0, r.output
    shutil.copy(run / "update-4.pt", tmp_path / "copy.pt")
    for given in ([run, run / "last.pt"], [tmp_path / "copy.pt", run / "update-4.pt"]):
        r = invoke("average", *given, "-o", tmp_path / "avg.pt")
        assert r.exit_code == 2 and "update 4 of the run of" in r.output and "give it once" in r.output, r.output
    assert invoke("average", run / "update-2.pt", run / "last.pt", "-o", tmp_path / "avg.pt").exit_code == 0


def test_average_tells_an_earlier_runs_models_of_the_same_numbers_by_the_run_id(data_bin, tmp_path):
    """A --reset run that keeps no update-N.pt validates at the same updates as the earlier run
    whose files stay: their names were its log's steps, and average took the earlier run's models
    as this run's own. Each run's id, in its checkpoints and machine.json, tells them apart; a
    resume keeps it."""
    run, every = tmp_path / "k", ["--valid-every", 2, "--best-by", "nll"]
    assert (
        invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, *every, "--keep-last", 2).exit_code == 0
    )
    first = json.loads((run / "machine.json").read_text())["run_id"]
    assert {checkpoint.load(run / f"update-{n}.pt").training.run_id for n in (2, 4)} == {first}
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 2, *every, "--reset", "--seed", 7)
    assert r.exit_code == 0, r.output
    second = json.loads((run / "machine.json").read_text())["run_id"]
    assert second != first and checkpoint.load(run / "last.pt").training.run_id == second
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, *every)  # resumed: the same run
    assert r.exit_code == 0, r.output
    assert checkpoint.load(run / "last.pt").training.run_id == second
    assert json.loads((run / "machine.json").read_text())["run_id"] == second
    r = invoke("average", run, "-o", tmp_path / "avg.pt")
    assert r.exit_code == 2 and "holds only an earlier run's update-N.pt" in r.output, r.output
    assert "left out 2 kept models of an earlier run, not its own (update-2.pt, update-4.pt)" in r.stderr
    # a log and files from before runs had ids: the steps decide, as they did
    (run / "machine.json").write_text(
        json.dumps({k: v for k, v in json.loads((run / "machine.json").read_text()).items() if k != "run_id"})
    )
    r = invoke("average", run, "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0 and [a.name for a in checkpoint.load(tmp_path / "avg.pt").averaged] == [
        "update-2.pt",
        "update-4.pt",
    ]


def test_a_run_whose_log_lost_its_last_validations_keeps_its_own_models_by_the_run_id(data_bin, tmp_path):
    """A log cut short (a copy, an editor) left the run's own update-N.pt out of it: average called
    them an earlier run's and --keep-last let them pile up. Their run id says whose they are."""
    run, every = tmp_path / "k", ["--valid-every", 2, "--best-by", "nll", "--keep-last", 2]
    assert invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 6, *every).exit_code == 0
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if json.loads(line).get("step") == 4 and "dev_nll" in line)
    (run / "metrics.jsonl").write_text("".join(lines[:cut]))  # the validations of updates 4 and 6 gone
    r = invoke("average", run, "-o", tmp_path / "avg.pt")
    assert r.exit_code == 0 and "earlier run" not in r.output, r.output
    assert [a.name for a in checkpoint.load(tmp_path / "avg.pt").averaged] == ["update-4.pt", "update-6.pt"]
    r = invoke("train", data_bin, "--save-dir", run, *TINY, "--max-updates", 10, *every)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in run.glob("update-*.pt")) == ["update-10.pt", "update-8.pt"]
    # a damaged file beside them is no run's to prune, and no reason to stop a run at its validation
    (run / "update-100.pt").write_bytes((run / "update-10.pt").read_bytes()[:5000])
    r = invoke(
        "train", data_bin, "--save-dir", run, *TINY, "--max-updates", 4, *every[:-2], "--keep-last", 1, "--reset"
    )
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in run.glob("update-*.pt")) == [
        "update-10.pt",
        "update-100.pt",
        "update-4.pt",
        "update-8.pt",
    ]  # the earlier run's 8 and 10 kept


def test_a_dev_nll_that_is_not_finite_stops_the_run_in_one_line(data_bin, tmp_path, monkeypatch):
    """It was logged, no dev score being better than NaN, and the run ended 0 with no best.pt."""
    from nmtkit.train import loop

    real = loop.validate

    def broken(*args, **kwargs):
        return {**real(*args, **kwargs), "dev_nll": float("nan")}

    monkeypatch.setattr(loop, "validate", broken)
    r = invoke("train", data_bin, "--save-dir", tmp_path / "n", *TINY, "--max-updates", 2, "--valid-every", 2)
    assert r.exit_code == 2 and "the dev NLL became nan at update 2; no checkpoint was saved before it" in r.output
    assert not (tmp_path / "n" / "best.pt").exists()


def test_a_resumed_run_keeps_its_lexicon_and_a_new_one_builds_it_before_its_first_update(
    data_bin, tmp_path, monkeypatch
):
    """At the first save it cost seconds (10 on the Bible) that a SIGTERM's grace period had to hold."""
    from nmtkit.train import state

    built = []
    real = state.lexicon_of
    monkeypatch.setattr(state, "lexicon_of", lambda corpus: built.append("at the start") or real(corpus))
    assert (
        invoke("train", data_bin, "--save-dir", tmp_path / "x", *TINY, "--max-updates", 2, "--valid-every", 1).exit_code
        == 0
    )
    assert built == ["at the start"]
    r = invoke("train", data_bin, "--save-dir", tmp_path / "x", *TINY, "--max-updates", 4, "--valid-every", 1)
    assert r.exit_code == 0 and built == ["at the start"]  # resumed: the checkpoint's
    from nmtkit.data.binarized import Corpus

    kept, fresh = checkpoint.load(tmp_path / "x" / "last.pt").lexicon, real(Corpus(data_bin))
    assert kept is not None and kept.frequent == fresh.frequent and torch.equal(kept.table, fresh.table)


def test_quiet_and_verbose_on_every_command(data_bin, tmp_path):
    from nmtkit.cli import main as group

    for name, command in group.commands.items():
        flags = {opt for p in command.params for opt in p.opts}
        assert {"-q", "--quiet", "-v", "--verbose"} <= flags, name
    loud = invoke("train", data_bin, "--save-dir", tmp_path / "a", *TINY, "--max-updates", 1, "-v")
    device = f"device {resolve_device(None).type}"  # the GPU where there is one
    assert loud.exit_code == 0 and device in loud.output and "training {" in loud.output
    quiet = invoke("train", data_bin, "--save-dir", tmp_path / "b", *TINY, "--max-updates", 1, "-q")
    assert quiet.exit_code == 0 and quiet.output == ""
    plain = invoke("train", data_bin, "--save-dir", tmp_path / "c", *TINY, "--max-updates", 1)
    assert "training rnnsearch" in plain.output and device not in plain.output  # -q did not stick


def test_keep_best_keeps_the_earlier_of_equal_scores_as_best_pt_does(tmp_path):
    """Every dev BLEU 0: best.pt was update 20's, the kept best-N.pt those glob listed last."""
    from types import SimpleNamespace

    from nmtkit.train.config import TrainConfig
    from nmtkit.train.saving import _prune

    lines = [json.dumps({"step": s, "dev_nll": 50.0, "dev_bleu_tok": 0.0}) for s in (20, 40, 60, 80, 100)]
    (tmp_path / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
    for s in (20, 40, 60, 80, 100):
        (tmp_path / f"best-{s}.pt").write_bytes(b"")
    _prune(SimpleNamespace(cfg=TrainConfig(keep_best=2), save_dir=tmp_path))
    assert sorted(p.name for p in tmp_path.glob("best-*.pt")) == ["best-20.pt", "best-40.pt"]


def test_the_library_refuses_an_empty_directory_name_as_the_options_do(tmp_path, monkeypatch):
    """train(data, '') trained into the current directory: Path('') is '.'; --save-dir '' is refused."""
    from nmtkit.train.loop import train
    from tests.test_train import TINY, cfg

    monkeypatch.chdir(tmp_path)
    for args, said in (
        ((tmp_path, ""), "save_dir '' names nothing"),
        (("", tmp_path / "r"), "data_dir '' names nothing"),
    ):
        with pytest.raises(UserError, match=said):
            train(*args, TINY, cfg(max_updates=1))
    with pytest.raises(UserError, match="tensorboard '' names nothing"):
        train(tmp_path, tmp_path / "r", TINY, cfg(max_updates=1), tensorboard="")
    assert list(tmp_path.iterdir()) == []
