"""bin/bench-marian's own parts (bench.bench_marian, peer_marian, peer_fairseq): Marian sees
nmtkit's units, its logs are read right, its shortlist table is extract-lex's, nmtkit trains with
the demo's own flags, and without Marian it says in one line how to get it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import bench_marian as bench
from bench import peer_fairseq as fairseq
from bench import peer_marian as marian
from bench.bench_common import Site
from tests.test_corpus import make_corpus

ROOT = Path(__file__).resolve().parent.parent


def site_at(tmp_path):
    """A work directory of the benchmark's own under ``tmp_path`` ($BENCH_DIR/marian-demo)."""
    site = Site(tmp_path, tmp_path / "data")
    site.work.mkdir(parents=True)
    return site


def test_without_marian_it_says_how_to_get_it_and_exits_0(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "bench-marian")],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCH_DIR": str(tmp_path)},
    )
    assert done.returncode == 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "bench/peers/install.sh marian" in lines[0]


def test_marian_reads_the_units_nmtkit_trains_on(raw, tmp_path):
    _, _, corpus = make_corpus(raw, tmp_path)
    out = tmp_path / "marian"
    info = marian.prepare(tmp_path / "bin", raw / "test.en", out)
    for lang in ("en", "fr"):
        vocab = corpus.vocab(lang)
        yml = (out / f"vocab.{lang}.yml").read_text(encoding="utf-8").splitlines()
        assert yml[:2] == ['"</s>": 0', '"<unk>": 1']
        entries = dict(line.rsplit(": ", 1) for line in yml)
        assert len(entries) == len(vocab) - 2  # <pad> and <s> are nmtkit's alone
        assert sorted(int(i) for i in entries.values()) == list(range(len(vocab) - 2))
        for split, index in (("train", 0 if lang == "en" else 1), ("valid", 0 if lang == "en" else 1)):
            ids = corpus.split(split)[index]
            text = (out / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            assert len(text) == len(ids) == info["pairs"][split]
            for i, line in enumerate(text):
                assert line.split() == vocab.decode(ids[i])
                assert all(json.dumps(t, ensure_ascii=False) in entries for t in line.split())
    # the test source as `nmtkit translate` would read it: the same units from the same pipeline
    src = marian.preprocessor(tmp_path / "bin", "en")
    raw_lines = (raw / "test.en").read_text(encoding="utf-8").splitlines()
    assert (out / "test.bpe.en").read_text(encoding="utf-8").splitlines() == [
        " ".join(src.encode(line)) for line in raw_lines
    ]
    assert marian.prepare(tmp_path / "bin", raw / "test.en", out) == info  # kept: read back, not redone


def test_marian_vocabulary_keys_survive_yaml_quoting():
    lines = marian.marian_vocab(["<pad>", "<unk>", "<s>", "</s>", "l'", '"', "\\", "a@@", "été"])
    assert lines == ['"</s>": 0', '"<unk>": 1', '"l\'": 2', '"\\"": 3', '"\\\\": 4', '"a@@": 5', '"été": 6']


def test_marian_speed_counts_labels_over_the_logged_training_time(tmp_path):
    (tmp_path / "model.npz.progress.yml").write_text("epochs: 1\nbatches: 470\nlabels-total: 1200000\n")
    (tmp_path / "train.log").write_text(
        "[2026-11-24 10:00:00] Training started\n"
        "[2026-11-24 10:01:00] Ep. 1 : Up. 50 : Sen. 4,000 : Cost 5.1 : Time 60.00s : 2000.00 words/s\n"
        "[2026-11-24 10:05:00] Training interrupted (via signal).\n"
        "[2026-11-24 10:06:00] Training started\n"
        "[2026-11-24 10:07:00] Ep. 1 : Up. 100 : Sen. 8,000 : Cost 4.1 : Time 60.00s : 1000.00 words/s\n"
        "[2026-11-24 10:11:00] Training interrupted (via signal).\n"
    )
    speed = marian.marian_speed(tmp_path)
    assert speed["updates"] == 470
    assert speed["train_s"] == 600  # two spans of 5 minutes; the gap not counted
    assert speed["tgt_tok_per_s"] == pytest.approx(1500)  # the logged windows' mean, as nmtkit's
    assert speed["tgt_tok_per_s_wall"] == pytest.approx(2000)


def test_lexical_table_is_extract_lex_p_target_given_source():
    table = marian.lexical_table(["a b", "a c"], ["x y", "x"], ["0-0 1-1", "0-0"])
    # a: aligned to x twice (c(a) = 2); b to y; c unaligned → NULL; nothing on the target side unaligned
    assert table == ["x a 1.000000", "y b 1.000000", "NULL c 1.000000"]
    table = marian.lexical_table(["a a"], ["x y z"], ["0-0 1-1"])
    assert table == ["z NULL 1.000000", "x a 0.500000", "y a 0.500000"]  # z unaligned: NULL → z


def test_every_path_the_table_names_is_decoded_with_its_flags():
    assert bench.NMTKIT_PATHS["fp32"] == [] and set(bench.NMTKIT_PATHS["int8 + shortlist"]) == {"int8", "shortlist"}
    assert {model for model, _ in marian.MARIAN_PATHS.values()} == {"fp32", "intgemm8"}
    assert {shortlist for _, shortlist in marian.MARIAN_PATHS.values()} == {True, False}


def test_the_fastest_path_is_one_that_keeps_the_translations():
    rows = [
        {"path": "fp32", "bleu": 14.7, "tok_per_s": 400},
        {"path": "int8", "bleu": 0.03, "tok_per_s": 900},
        {"path": "fp32 + shortlist", "bleu": 14.6, "tok_per_s": 450},
        {"path": "slow", "bleu": 14.9, "tok_per_s": 300},
    ]
    assert bench.fastest_path(rows) == "fp32 + shortlist"
    assert bench.fastest_path(rows[:2]) == "fp32"  # nothing else keeps the BLEU


def test_marian_total_trains_only_what_is_left(tmp_path, monkeypatch):
    site = site_at(tmp_path)
    chunks = []

    def fake_more(at, minutes, threads):
        chunks.append(minutes)
        (at.work / "marian-more").mkdir(exist_ok=True)
        (at.work / "marian-more" / "chunks.json").write_text(json.dumps([{"minutes": m} for m in chunks]))

    monkeypatch.setattr(marian, "train_more", fake_more)
    assert marian.trained_more(site) == 0.0
    marian.train_to_total(site, 50, 20, 2)
    assert chunks == [20, 10] and marian.trained_more(site) == 30
    marian.train_to_total(site, 50, 20, 2)  # a rerun finds it done
    marian.train_to_total(site, 60, 20, 2)  # a larger total: only what is left
    assert chunks == [20, 10, 10]


def test_fairseq_speed_is_the_mean_of_its_logged_windows(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "2026-11-25 | INFO | train_inner | epoch 001:     50 / 2781 loss=10.5, wps=4000.0, ups=1.9, num_updates=50\n"
        "2026-11-25 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.3 | wps 10672.1 | num_updates 100\n"
        "2026-11-25 | INFO | train_inner | epoch 001:    100 / 2781 loss=10.1, wps=3000.0, ups=1.6, num_updates=100\n"
        "2026-11-25 | INFO | fairseq_cli.train | done training in 61.5 seconds\n"
    )
    assert fairseq.fairseq_speed(log) == {"updates": 100, "tgt_tok_per_s": 3500.0, "train_s": 61.5}


def test_fairseq_is_paired_with_nmtkit_at_its_own_bleu_when_it_falls_short(tmp_path, monkeypatch):
    """Its checkpoints are tried from the last back, and an nmtkit checkpoint of its BLEU joins it."""
    site = site_at(tmp_path)
    for name in (
        "fairseq/checkpoint_1_200.pt",
        "fairseq/checkpoint_1_400.pt",
        "fairseq-more/checkpoint_1_600.pt",
        "nmtkit/update-200.pt",
        "nmtkit/update-400.pt",
        "nmtkit/update-600.pt",
    ):
        (site.work / name).parent.mkdir(exist_ok=True)
        (site.work / name).touch()
    bleu = {
        "fairseq/checkpoint_1_200.pt": 1.0,
        "fairseq/checkpoint_1_400.pt": 3.0,
        "fairseq-more/checkpoint_1_600.pt": 5.0,
        "nmtkit/update-200.pt": 2.0,
        "nmtkit/update-400.pt": 4.8,
        "nmtkit/update-600.pt": 9.0,
    }
    tried = []
    monkeypatch.setattr(
        bench,
        "decode_row",
        lambda at, toolkit, path, beam, threads, model: tried.append(model) or {"bleu": bleu[model]},
    )
    assert bench.fairseq_pair(site, 14.7, 2) == {
        "fairseq": "fairseq-more/checkpoint_1_600.pt",
        "nmtkit": "nmtkit/update-400.pt",
    }
    assert tried[0] == "fairseq-more/checkpoint_1_600.pt" and "fairseq/checkpoint_1_200.pt" not in tried
    assert bench.fairseq_pair(site, 4.5, 2) == {"fairseq": "fairseq-more/checkpoint_1_600.pt"}


def test_the_constant_rate_run_is_searched_for_the_comparable_model_where_there_is_one(tmp_path, monkeypatch):
    """From its last checkpoint back until one falls short of Marian's BLEU, the nearest kept; the
    budgeted run's checkpoints, of more updates but a lower BLEU, are not tried."""
    site = site_at(tmp_path)
    bleu = {
        "fairseq-more/checkpoint_2_4400.pt": 4.5,
        "fairseq-constant/checkpoint_1_2400.pt": 13.2,
        "fairseq-constant/checkpoint_1_2600.pt": 14.6,
        "fairseq-constant/checkpoint_1_2800.pt": 15.5,
        "fairseq-constant/checkpoint_1_3000.pt": 16.2,
    }
    for name in bleu:
        (site.work / name).parent.mkdir(exist_ok=True)
        (site.work / name).touch()
    tried = []
    monkeypatch.setattr(
        bench,
        "decode_row",
        lambda at, toolkit, path, beam, threads, model: tried.append(model) or {"bleu": bleu[model]},
    )
    assert bench.comparable_fairseq(site, 14.7, 2) == "fairseq-constant/checkpoint_1_2600.pt"
    assert tried == [f"fairseq-constant/checkpoint_1_{u}.pt" for u in (3000, 2800, 2600)]
    assert fairseq.last_interval(site, "fairseq-constant") == "fairseq-constant/checkpoint_1_3000.pt"


def test_a_fairseq_calls_time_is_its_total_or_for_a_stopped_one_its_wall_meters_largest(tmp_path):
    done, stopped = tmp_path / "done.log", tmp_path / "stopped.log"
    done.write_text(
        "| train_inner | epoch 002: num_updates=2950, wall=0\n| fairseq_cli.train | done training in 252.0 seconds\n"
    )
    stopped.write_text(
        "| train_inner | epoch 001: num_updates=2700, wall=3900\n"
        "| valid | epoch 001 | valid on 'valid' subset | wall 3910\n"
        "| train_inner | epoch 002: num_updates=2800, wall=22\n"
    )
    assert fairseq.call_seconds(done) == 252.0 and fairseq.call_seconds(stopped) == 3900.0


def test_marians_constant_rate_run_changes_the_decay_alone():
    changed = [(a, b) for a, b in zip(marian.MARIAN_TRAIN, marian.MARIAN_CONSTANT) if a != b]
    assert (
        changed == [("50", "0")]
        and marian.MARIAN_CONSTANT[marian.MARIAN_CONSTANT.index("--lr-decay-inv-sqrt") + 1] == "0"
    )


def test_nmtkit_trains_with_the_demos_own_flags_which_are_the_makefiles(tmp_path, monkeypatch):
    """One recipe for make demo and the benchmark: bench.demo's flags are the Makefile's."""
    from bench.demo import DEMO_RECIPE, STUDY_RECIPE
    from nmtkit.core.machine import this_cpu

    make = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "flags"],
        input='flags:\n\t@echo "$(DEMO_RECIPE)|$(STUDY_RECIPE)"\n',
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert make.stdout.strip() == f"{' '.join(DEMO_RECIPE)}|{' '.join(STUDY_RECIPE)}"
    site = site_at(tmp_path)
    ran = []

    def fake_run(cmd, log, timeout_s=None, env=None):
        ran.append([str(a) for a in cmd])
        return {"rc": 0, "wall_s": 1.0, "peak_rss_mb": 10.0}

    monkeypatch.setattr(bench, "timed", fake_run)
    monkeypatch.setattr(bench, "nmtkit_speed", lambda save: {"updates": 3})
    run = bench.train_nmtkit(site, 20.0, 2)
    bf16 = ["--bf16"] if this_cpu().native_bf16 else []
    assert ran == [
        [sys.executable, "-m", "nmtkit", "train", str(site.data_bin), "--save-dir", str(site.work / "nmtkit")]
        + ["--threads", "2", *DEMO_RECIPE, "--max-minutes", "20.0", *bf16]
    ]
    assert run["settings"] == " ".join(ran[0][3:]) and (run["minutes"], run["threads"], run["updates"]) == (20.0, 2, 3)
    assert json.loads((site.work / "train-nmtkit.json").read_text()) == run
    assert bench.train_nmtkit(site, 20.0, 2) == run and len(ran) == 1  # kept: read back, not run again
    with pytest.raises(SystemExit):  # another budget: refused, not reused
        bench.train_nmtkit(site, 30.0, 2)
