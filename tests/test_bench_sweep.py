"""bin/bench-sweep's own parts (bench.bench_sweep, peer_recipes and the peers' readers): a
point's flags are its recipe's with the swept ones replaced, every toolkit sweeps at least three
rates, each toolkit's dev cross-entropy is read right from its own log, Joey NMT's configuration
reads back as written, the pick is the lowest, and bad calls get one line and exit 2."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench import bench_sweep as sweep
from bench.bench_common import Site
from bench.peer_fairseq import fairseq_dev_ce
from bench.peer_joeynmt import as_yaml, joey_dev_ce, settle
from bench.peer_marian import marian_dev_ce
from bench.peer_recipes import RECIPES, Point, over

ROOT = Path(__file__).resolve().parent.parent


def test_a_swept_option_replaces_the_recipes_with_all_its_values():
    base = ("--type", "s2s", "--optimizer-params", "0.9", "0.98", "1e-09", "--learn-rate", "3e-4", "--sync-sgd")
    assert over(base, ("--learn-rate", "1e-3", "--optimizer-params", "0.9", "0.999")) == (
        "--type",
        "s2s",
        "--optimizer-params",
        "0.9",
        "0.999",
        "--learn-rate",
        "1e-3",
        "--sync-sgd",
    )
    assert over(base, ("--after", "200u")) == (*base, "--after", "200u")
    assert over(("a.b=1", "a.c=2"), ("a.c=3", "d=4")) == ("a.b=1", "a.c=3", "d=4")


@pytest.mark.parametrize("toolkit", list(RECIPES))
def test_every_toolkit_sweeps_at_least_three_rates_over_its_own_recipe(toolkit):
    recipe = RECIPES[toolkit]
    points = recipe.points

    def options(flags):
        return {f.split("=")[0] for f in flags if f.startswith("--") or "=" in f}

    assert len({p.flags for p in points}) == len(points)  # no two points alike
    assert len({p.name.split(",")[0] for p in points if p.name.startswith("lr ")}) >= 3
    for p in points:
        assert p.toolkit == toolkit and options(p.flags) >= options(recipe.base)
        rate = p.name.split(",")[0].removeprefix("lr ")
        assert rate in p.flags or any(f.endswith("=" + rate) for f in p.flags)
    assert recipe.point(points[1].name) == points[1]


def test_each_peers_dev_cross_entropy_is_read_from_its_own_log(tmp_path):
    marian_log = (
        "[2026-11-26 21:59:30] [valid] Ep. 1 : Up. 100 : ce-mean-words : 6.5 : new best\n"
        "[2026-11-26 22:09:30] [valid] Ep. 1 : Up. 200 : ce-mean-words : 5.25 : new best\n"
    )
    assert marian_dev_ce(marian_log) == 5.25
    assert marian_dev_ce("[valid] Ep. 1 : Up. 200 : ce-mean-words : nan : stalled 1 times") is None
    assert marian_dev_ce("") is None
    # fairseq logs bits: its plain cross-entropy the loss alone, a smoothed one the NLL beside it
    plain = "valid | epoch 001 | valid on 'valid' subset | loss 7 | ppl 128 | wps 4743.5 | num_updates 200"
    smoothed = "valid | epoch 001 | valid on 'valid' subset | loss 9 | nll_loss 6 | ppl 64 | num_updates 200"
    assert fairseq_dev_ce(plain) == pytest.approx(7 * math.log(2))
    assert fairseq_dev_ce(plain + "\n" + smoothed) == pytest.approx(6 * math.log(2))
    assert fairseq_dev_ce("train_inner | epoch 001 | loss 9 | num_updates 50") is None
    # Joey NMT: the log of its dev perplexity, the last validation's
    (tmp_path / "validations.txt").write_text(
        "Steps: 100\tloss: 80.1\tacc: 0.2\tppl: 300.0\tbleu: 0.5\tLR: 0.005\t*\n"
        "Steps: 200\tloss: 60.2\tacc: 0.3\tppl: 150.0\tbleu: 1.5\tLR: 0.005\t*\n"
    )
    assert joey_dev_ce(tmp_path) == pytest.approx(math.log(150.0))
    assert joey_dev_ce(tmp_path / "none") is None


def test_joey_reads_its_configuration_back_as_written():
    config = {"training": {"learning_rate": 2e-4, "learning_rate_min": 1e-8, "adam_betas": [0.9, 0.999]}}
    config = settle(config, ["training.learning_rate=5e-3", "training.scheduling=plateau", "model.tied_softmax=true"])
    config["name"] = "lr 1e-8"  # a string that looks like a number stays a string
    back = yaml.safe_load(as_yaml(config))
    assert back == config
    assert back["training"]["learning_rate"] == 5e-3 and back["training"]["learning_rate_min"] == 1e-8
    assert back["model"] == {"tied_softmax": True} and back["training"]["scheduling"] == "plateau"


def test_the_pick_is_the_lowest_dev_cross_entropy_and_a_diverged_point_is_never_picked():
    rows = [
        {"toolkit": "marian", "point": "lr 3e-4", "dev_ce": 6.1},
        {"toolkit": "marian", "point": "lr 3e-3", "dev_ce": None},
        {"toolkit": "marian", "point": "lr 1e-3", "dev_ce": 5.9},
    ]
    assert sweep.best_point(rows)["point"] == "lr 1e-3"
    with pytest.raises(SystemExit) as stopped:
        sweep.best_point([{**r, "dev_ce": None} for r in rows])
    assert stopped.value.code == 2


def test_a_point_kept_from_another_length_is_refused(tmp_path, capsys):
    site = Site(tmp_path, tmp_path / "data")
    (site.work / "sweep").mkdir(parents=True)
    point = Point("nmtkit", "lr 5e-3", ("--lr", "5e-3"))
    kept = {"toolkit": "nmtkit", "point": point.name, "updates_asked": 300, "dev_ce": 5.0}
    (site.work / "sweep" / "nmtkit-lr 5e-3.json").write_text(json.dumps(kept))
    assert sweep.sweep_point(site, point, 300, 2) == kept  # the same length: read back, not rerun
    with pytest.raises(SystemExit) as stopped:
        sweep.sweep_point(site, point, 200, 2)
    assert stopped.value.code == 2
    assert "--updates 300, not 200" in capsys.readouterr().err


def test_the_table_marks_each_toolkits_pick():
    results = {
        "machine": "a CPU",
        "updates": 200,
        "minutes": 20,
        "sweep": [
            {"toolkit": "nmtkit", "point": "lr 5e-3", "updates": 200, "dev_ce": 4.5, "wall_s": 120},
            {"toolkit": "nmtkit", "point": "lr 1e-2", "updates": 200, "dev_ce": None, "wall_s": 118},
        ],
        "picked": {"nmtkit": "lr 5e-3"},
        "picks": {},
    }
    lines = sweep.table(results).splitlines()
    assert "| nmtkit | lr 5e-3 **(pick)** | 200 | 4.500 | 2.0 |" in lines
    assert "| nmtkit | lr 1e-2 | 200 | diverged | 2.0 |" in lines


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--toolkits", "nmtkit,moses"], "unknown toolkit 'moses'"), (["--data", "/nonexistent"], "make data")],
)
def test_a_bad_call_gets_one_line_and_exit_2(tmp_path, args, says):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "bench-sweep"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCH_DIR": str(tmp_path)},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0] and done.stdout == ""


def test_the_picks_are_decoded_beside_nmtkits_checkpoint_of_their_bleu_each_row_once(monkeypatch):
    asked = []

    def comparable(site, bleu, threads, run):
        assert run == "pick-nmtkit"
        return {9.0: "pick-nmtkit/update-400.pt", 3.0: "pick-nmtkit/update-200.pt"}[bleu]

    def decoding(site, beams, threads, models):
        asked.append(models)
        return [{"toolkit": t, "model": m, "path": "fp32", "beam": 5, "threads": threads} for t, m in models.items()]

    monkeypatch.setattr(sweep, "comparable_nmtkit", comparable)
    monkeypatch.setattr(sweep, "decoding", decoding)

    def pick(toolkit, best, last):
        return {"bleu": best, "bleu_last": last} | {"models": sweep.pick_models(toolkit, {})}

    monkeypatch.setattr(sweep, "LAST_MODEL", sweep.LAST_MODEL | {"opennmt": "pick-opennmt/model_step_950.pt"})
    monkeypatch.setattr(sweep, "PICK_MODEL", sweep.PICK_MODEL | {"opennmt": "pick-opennmt/model_step_800.pt"})
    monkeypatch.setattr(sweep, "pick_models", lambda t, run: {"last": sweep.LAST_MODEL[t], "best": sweep.PICK_MODEL[t]})
    picks = {
        "nmtkit": pick("nmtkit", 17.0, 16.5),
        "marian": pick("marian", 8.0, 9.0),  # its last model the better: decoded at 9.0
        "fairseq": pick("fairseq", 3.0, 2.0),
        "joeynmt": pick("joeynmt", 8.0, 8.0),
        "opennmt": pick("opennmt", 3.0, 3.0),
    }
    rows = sweep.decode_picks(None, [5], 2, picks, sweep.beside(None, 2, picks))
    assert asked == [
        {"nmtkit": "pick-nmtkit/update-400.pt", "marian": "pick-marian/model.npz"},
        {"nmtkit": "pick-nmtkit/update-200.pt", "fairseq": "pick-fairseq/checkpoint_best.pt"},
        {"nmtkit": "pick-nmtkit/update-200.pt", "opennmt": "pick-opennmt/model_step_800.pt"},
        {"nmtkit": "pick-nmtkit/best.pt"},
    ]
    assert len(rows) == 6 and "joeynmt" not in {r["toolkit"] for r in rows}
    asked.clear()
    picks["fairseq"]["bleu"] = picks["opennmt"]["bleu"] = 9.0  # the same checkpoint as Marian's: its rows once
    comparable_once = {9.0: "pick-nmtkit/update-400.pt"}
    monkeypatch.setattr(sweep, "comparable_nmtkit", lambda site, bleu, threads, run: comparable_once[bleu])
    assert len(sweep.decode_picks(None, [5], 2, picks, sweep.beside(None, 2, picks))) == 5


def test_a_best_rate_at_the_grids_end_is_swept_further_until_it_lies_inside(monkeypatch):
    recipe = RECIPES["nmtkit"]  # 2e-3, 5e-3, 1e-2: a step of 2 at the top
    assert recipe.beyond("lr 1e-2", ["lr 2e-3", "lr 5e-3", "lr 1e-2"]).name == "lr 2e-2"
    assert recipe.beyond("lr 2e-3", ["lr 2e-3", "lr 5e-3", "lr 1e-2"]).name == "lr 8e-4"
    assert recipe.beyond("lr 5e-3", ["lr 2e-3", "lr 5e-3", "lr 1e-2"]) is None
    assert recipe.beyond("lr 5e-3, no decay", ["lr 2e-3", "lr 5e-3", "lr 1e-2", "lr 5e-3, no decay"]) is None
    further = recipe.point("lr 2e-2")  # a point past the grid is found by name, for its pick
    assert further.flags == ("--schedule", "cpu", "--lr", "2e-2")
    joey = RECIPES["joeynmt"].beyond("lr 5e-3", ["lr 2e-4", "lr 1e-3", "lr 5e-3"])
    assert "training.learning_rate=3e-2" in joey.flags and "training.learning_rate=5e-3" not in joey.flags

    dev = {"lr 2e-3": 6.0, "lr 5e-3": 5.5, "lr 1e-2": 4.9, "lr 5e-3, no decay": 5.4, "lr 2e-2": 4.7, "lr 4e-2": 5.2}
    run = []

    def point(site, p, updates, threads):
        run.append(p.name)
        return {"toolkit": p.toolkit, "point": p.name, "dev_ce": dev[p.name]}

    monkeypatch.setattr(sweep, "sweep_point", point)
    rows = sweep.sweep_toolkit(None, recipe, 200, 2)
    assert run == ["lr 2e-3", "lr 5e-3", "lr 1e-2", "lr 5e-3, no decay", "lr 2e-2", "lr 4e-2"]
    assert sweep.best_point(rows)["point"] == "lr 2e-2"  # inside now: no further


@pytest.mark.parametrize("every", [6, 75, 200, 400])
def test_joey_logs_below_its_validation_interval_and_dividing_it(every):
    from bench.peer_joeynmt import validating

    settings = dict(s.split("=") for s in validating(every))
    valid, log = int(settings["training.validation_freq"]), int(settings["training.logging_freq"])
    assert valid == every and log < every and every % log == 0
    assert log == (50 if every in (200, 400) else 1)  # not every update where 50 fits


def test_fairseq_sweeps_each_rate_under_each_of_its_schedules_with_that_schedules_options_alone():
    recipe = RECIPES["fairseq"]
    points = {p.name: p.flags for p in recipe.points}
    assert len(points) == 9  # 3 rates x 3 schedules
    for name, flags in points.items():
        rate, schedule = name.removeprefix("lr ").split(", ")
        scheduler = flags[flags.index("--lr-scheduler") + 1]
        assert flags.count("--lr-scheduler") == 1 and flags.count("--lr") == 1
        assert flags[flags.index("--lr") + 1] == rate
        assert (
            scheduler
            == {"plateau": "reduce_lr_on_plateau", "inverse sqrt": "inverse_sqrt", "cosine": "cosine"}[schedule]
        )
        assert ("--lr-shrink" in flags) == (schedule == "plateau")  # fairseq knows it for that scheduler alone
        assert ("--warmup-updates" in flags) == (schedule != "plateau")
    swept = list(points)
    further = recipe.beyond("lr 1e-2, cosine", swept)  # further under the pick's own schedule
    assert further.name == "lr 2e-2, cosine" and further.flags[further.flags.index("--lr-scheduler") + 1] == "cosine"
    assert recipe.beyond("lr 5e-3, inverse sqrt", swept) is None
    assert recipe.point("lr 2e-2, cosine") == further


def test_opennmt_reads_its_validations_and_names_its_last_and_best_checkpoints(tmp_path):
    from bench.peer_opennmt import onmt_models, onmt_speed, onmt_validations

    (tmp_path / "train.log").write_text(
        "[2026-11-28 15:00:01,000 INFO] Step 100/10000000; acc: 10.0; ppl: 900.0; xent: 6.8; lr: 1.00000; "
        "sents:    8000; bsz:   30/  32/80; 1200/1300 tok/s;     60 sec;\n"
        "[2026-11-28 15:00:31,000 INFO] Step 200/10000000; acc: 12.0; ppl: 700.0; xent: 6.5; lr: 1.00000; "
        "sents:    8000; bsz:   30/  32/80; 1500/1700 tok/s;    120 sec;\n"
        "[2026-11-28 15:00:40,000 INFO] Validation perplexity: 400.5\n"
        "[2026-11-28 15:00:40,000 INFO] Validation accuracy: 20.0\n"
        "[2026-11-28 15:01:31,000 INFO] Step 300/10000000; acc: 14.0; ppl: 500.0; xent: 6.2; lr: 1.00000; "
        "sents:    8000; bsz:   30/  32/80; 1400/1900 tok/s;    180 sec;\n"
        "[2026-11-28 15:02:31,000 INFO] Step 400/10000000; acc: 15.0; ppl: 450.0; xent: 6.1; lr: 1.00000; "
        "sents:    8000; bsz:   30/  32/80; 1400/2100 tok/s;    240 sec;\n"
        "[2026-11-28 15:02:40,000 INFO] Validation perplexity: 410.0\n"
    )
    assert onmt_validations(tmp_path, 200) == pytest.approx({200: math.log(400.5), 400: math.log(410.0)})
    assert onmt_speed(tmp_path) == {"updates": 400, "tgt_tok_per_s": pytest.approx((1700 + 1900 + 2100) / 3)}
    for step in (150, 200, 400, 450):
        (tmp_path / f"model_step_{step}.pt").write_bytes(b"")
    models = onmt_models(tmp_path, 200)  # the budget's model is the last saved; the best, a validated one
    assert models == {"last": tmp_path / "model_step_450.pt", "best": tmp_path / "model_step_200.pt"}


def test_each_pick_is_scored_on_its_last_model_and_its_best_validated_one(monkeypatch, tmp_path):
    scored = []

    def bleu5(site, toolkit, model, threads):
        scored.append((toolkit, model))
        return 10.0 if model.endswith(("best.pt", "_best.pt", "best.ckpt", "pick-marian", "step_400.pt")) else 7.0

    monkeypatch.setattr(sweep, "bleu5", bleu5)
    runs = {
        "nmtkit": "train_nmtkit",
        "marian": "train_marian",
        "fairseq": "train_fairseq",
        "joeynmt": "train_joeynmt",
        "opennmt": "train_opennmt",
    }
    given = {}
    for toolkit, trainer in runs.items():

        def train(*args, _toolkit=toolkit, **kw):
            given[_toolkit] = (args, kw)
            return {"updates": 900, "last_model": "pick-opennmt/model_step_950.pt"} | (
                {"best_model": "pick-opennmt/model_step_400.pt"} if _toolkit == "opennmt" else {}
            )

        monkeypatch.setattr(sweep, trainer, train)
    monkeypatch.setattr(sweep, "fairseq_pace", lambda site, point, threads: 0.875)  # updates a second
    site = Site(tmp_path, tmp_path / "data")
    for best in [*sweep.PICK_MODEL.values(), "pick-opennmt/model_step_400.pt"]:
        (site.work / best).parent.mkdir(parents=True, exist_ok=True)
        (site.work / best).touch()
    for toolkit in runs:
        point = RECIPES[toolkit].points[0]
        row = sweep.pick_run(site, point, 20.0, 2)
        assert (row["bleu"], row["bleu_last"]) == (10.0, 7.0), toolkit
    assert [m for _, m in scored] == [
        "pick-nmtkit/last.pt",
        "pick-nmtkit/best.pt",
        "pick-marian/model.npz",
        "pick-marian",
        "pick-fairseq/checkpoint_last.pt",
        "pick-fairseq/checkpoint_best.pt",
        "pick-joeynmt/model/latest.ckpt",
        "pick-joeynmt/model/best.ckpt",
        "pick-opennmt/model_step_950.pt",
        "pick-opennmt/model_step_400.pt",
    ]
    # fairseq's cosine is told where the budget ends: its pace here, 0.875 updates a second, for 20 minutes
    cosine = RECIPES["fairseq"].point("lr 5e-3, cosine")
    sweep.pick_run(site, cosine, 20.0, 2)
    settings = given["fairseq"][1]["settings"]
    assert settings[settings.index("--max-update") + 1] == "1050"
    sweep.pick_run(site, RECIPES["fairseq"].point("lr 5e-3, plateau"), 20.0, 2)
    assert "--max-update" not in given["fairseq"][1]["settings"]
    # a run that never validated has no best model: its last one stands for both
    (site.work / sweep.PICK_MODEL["joeynmt"]).unlink()
    scored.clear()
    row = sweep.pick_run(site, RECIPES["joeynmt"].points[0], 20.0, 2)
    assert scored == [("joeynmt", "pick-joeynmt/model/latest.ckpt")] * 2 and row["bleu"] == row["bleu_last"]


def test_a_pick_given_by_name_skips_that_toolkits_sweep_and_a_wrong_one_is_refused(capsys):
    given = sweep.given_picks(["marian=lr 9e-3", "fairseq=lr 2e-2, cosine", "opennmt=lr 1e-3, adam"])
    assert given["marian"] == RECIPES["marian"].point("lr 9e-3")  # past its grid: a rate further
    assert "9e-3" in given["marian"].flags
    assert "cosine" in given["fairseq"].flags and "2e-2" in given["fairseq"].flags
    assert "optim=adam" in given["opennmt"].flags
    for wrong, says in [
        ("moses=lr 1e-3", "unknown toolkit 'moses'"),
        ("nmtkit=lr fast", "has no point 'lr fast'"),
        ("fairseq=lr 5e-3, warm", "has no point 'lr 5e-3, warm'"),
    ]:
        with pytest.raises(SystemExit) as stop:
            sweep.given_picks([wrong])
        assert stop.value.code == 2 and says in capsys.readouterr().err


def test_the_picks_figures_name_each_toolkit_with_its_last_and_best_models_bleu():
    picks = {
        "nmtkit": {"bleu_last": 16.1, "bleu": 15.9, "updates": 1300},
        "opennmt": {"bleu_last": 6.2, "bleu": 4.0, "updates": 700},
    }
    assert sweep.figures({"picks": picks}) == {
        "nmtkit BLEU (last)": 16.1,
        "nmtkit BLEU (best)": 15.9,
        "nmtkit updates": 1300,
        "OpenNMT-py BLEU (last)": 6.2,
        "OpenNMT-py BLEU (best)": 4.0,
        "OpenNMT-py updates": 700,
    }
    assert set(sweep.NAMES) == set(RECIPES)


@pytest.mark.parametrize("toolkit", ["nmtkit", "marian", "fairseq", "joeynmt"])
def test_a_points_log_keeps_its_whole_name_when_the_name_holds_a_dot(monkeypatch, tmp_path, toolkit):
    import bench.peer_fairseq
    import bench.peer_joeynmt
    import bench.peer_marian
    import bench.peer_recipes

    logs = []

    def timed(cmd, log, **kw):
        logs.append(log)
        raise SystemExit(0)

    for module in (bench.peer_fairseq, bench.peer_joeynmt, bench.peer_marian, bench.peer_recipes):
        monkeypatch.setattr(module, "timed", timed)
    monkeypatch.setattr(bench.peer_joeynmt, "joey_config", lambda *a, **kw: tmp_path / "config.yaml")
    monkeypatch.setattr(bench.peer_fairseq, "fairseq_data", lambda site: tmp_path)
    site = Site(tmp_path, tmp_path / "data")
    run_dir = tmp_path / f"{toolkit}-lr 1.0"
    with pytest.raises(SystemExit):
        sweep.SWEEP[toolkit](site, Point(toolkit, "lr 1.0", ()), run_dir, 10, 2)
    assert logs == [tmp_path / f"{toolkit}-lr 1.0.log"]


def test_joey_nmt_counts_the_updates_its_last_checkpoint_names(tmp_path):
    from bench.peer_joeynmt import joey_speed

    (tmp_path / "train.log").write_text("Epoch 1, Step: 50, Batch Loss: 5.1, Tokens per Sec: 1500\n")
    (tmp_path / "73.ckpt").touch()  # saved as the budget's signal stopped it, past its last logged step
    (tmp_path / "latest.ckpt").touch()
    assert joey_speed(tmp_path) == {"updates": 73, "tgt_tok_per_s": 1500.0}
    (tmp_path / "73.ckpt").unlink()
    assert joey_speed(tmp_path)["updates"] == 50


def test_opennmt_saves_often_enough_for_a_short_budget_to_leave_a_model():
    from bench.peer_opennmt import save_interval

    # it saves nothing when its budget's signal stops it: a minute's few dozen updates must save
    assert [save_interval(m, 200) for m in (0.2, 1, 3, 4, 6, 12, 20, 60)] == [1, 2, 5, 10, 10, 25, 50, 50]
    # each validated update is saved, or the best validated model would be none of them
    assert all(200 % save_interval(m / 10, 200) == 0 for m in range(1, 400))
    assert save_interval(20, 150) == 50 and save_interval(20, 120) == 40


def test_opennmt_decoding_is_timed_by_its_own_report_and_counts_end_of_sentence(monkeypatch, tmp_path):
    import bench.peer_opennmt as onmt

    def timed(cmd, log, **kw):
        assert "-report_time" in cmd
        out = Path(cmd[cmd.index("-output") + 1])
        out.write_text("le roi .\nil dit\n", encoding="utf-8")
        log.write_text("[x INFO] Total translation time (s): 0.1\n[x INFO] Tokens per second: 40.0\n")
        return {"rc": 0, "peak_rss_mb": 900.0}

    monkeypatch.setattr(onmt, "timed", timed)
    found = onmt.onmt_decode(Site(tmp_path, tmp_path / "data"), tmp_path / "model_step_10.pt", 5, 2)
    # its rate counts the 5 units; the others count </s> too: 7 tokens in 5/40 s
    assert found == {
        "seconds": 0.125,
        "sentences": 2,
        "tokens": 7,
        "hyps": ["le roi .", "il dit"],
        "peak_rss_mb": 900.0,
    }


def test_the_leading_table_gives_each_pick_its_run_both_bleus_and_its_fastest_sound_decoding():
    def row(toolkit, model, path, bleu, tok, threads=2, beam=5):
        return {"toolkit": toolkit, "model": model, "path": path, "bleu": bleu, "tok_per_s": tok} | {
            "beam": beam,
            "threads": threads,
        }

    pick = {"tgt_tok_per_s": 2500.0, "peak_rss_mb": 1600.0, "updates": 1300}
    results = {
        "picks": {
            "nmtkit": pick
            | {"point": "lr 1e-2", "bleu": 15.5, "bleu_last": 15.8, "models": {"last": "L", "best": "B"}},
            "marian": pick | {"point": "lr 9e-3", "bleu": 9.0, "bleu_last": 10.0, "models": {"last": "m", "best": "M"}},
            "joeynmt": pick | {"point": "lr 1e-3", "bleu": 6.0, "bleu_last": 5.0, "models": {"last": "j", "best": "J"}},
        },
        "beside": {"marian": "u600"},
        "decode": [
            row("marian", "m", "fp32", 10.0, 245.0),
            row("marian", "m", "intgemm8", 0.1, 400.0),  # fastest, but its translations broken: not the row's
            row("marian", "m", "fp32", 10.0, 120.0, threads=1),
            row("marian", "M", "fp32", 9.0, 300.0),  # the worse model: not the row's
            row("nmtkit", "u600", "fp32", 10.2, 1200.0),
            row("nmtkit", "u600", "int8 + shortlist", 9.8, 1700.0),
            row("nmtkit", "L", "fp32", 15.8, 1300.0),
            row("nmtkit", "L", "fp32", 15.5, 500.0, beam=12),
        ],
    }
    lines = sweep.lead(results, threads=2)
    ratio = sweep.figures(results | {"threads": 2})["nmtkit's decoding tokens/s over Marian's (beam 5)"]
    assert ratio == pytest.approx(1700 / 245)
    marian = next(line for line in lines if line.startswith("| Marian |"))
    assert marian.endswith("| 10.00 | 9.00 | 245 (fp32) | 1,700 (int8 + shortlist) at 9.80 |")
    assert next(line for line in lines if line.startswith("| nmtkit |")).endswith(
        "| 15.80 | 15.50 | 1,300 (fp32) | – |"
    )
    joey = next(line for line in lines if line.startswith("| Joey NMT |"))
    assert "| lr 1e-3 | 1,300 | 2,500 | 1,600 MB | 5.00 | 6.00 | – | – |" in joey


def test_marians_models_are_its_directorys_best_or_a_model_file_each_with_its_int8_conversion(monkeypatch, tmp_path):
    import bench.peer_marian as peer

    converted = []

    def run(cmd, **kw):
        converted.append(Path(cmd[cmd.index("-t") + 1]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(peer.subprocess, "run", run)
    site = Site(tmp_path, tmp_path / "data")
    pick = site.work / "pick-marian"
    pick.mkdir(parents=True)
    (pick / "model.npz").write_bytes(b"last")
    (pick / "model.npz.best-ce-mean-words.npz").write_bytes(b"best")
    assert peer.marian_models(site, "pick-marian") == {
        "fp32": pick / "model.npz.best-ce-mean-words.npz",
        "intgemm8": pick / "model.intgemm8.bin",
    }
    assert peer.marian_models(site, "pick-marian/model.npz") == {
        "fp32": pick / "model.npz",
        "intgemm8": pick / "model.npz.intgemm8.bin",  # its own conversion, not the best model's
    }
    assert converted == [pick / "model.intgemm8.bin", pick / "model.npz.intgemm8.bin"]


def test_fairseqs_pace_is_read_between_its_first_and_last_windows_and_kept(monkeypatch, tmp_path):
    import bench.peer_fairseq as peer

    runs = []

    def timed(cmd, log, **kw):
        runs.append(cmd)
        assert "--disable-validation" in cmd and cmd[cmd.index("--max-update") + 1] == "60"
        log.write_text(
            "epoch 001:     10 / 377 loss=9.1, ups=0.4, num_updates=10, lr=0.001, train_wall=20, wall=30\n"
            "epoch 001:     20 / 377 loss=8.1, ups=0.8, num_updates=20, lr=0.002, train_wall=32, wall=42\n"
            "epoch 001:     60 / 377 loss=7.1, ups=0.8, num_updates=60, lr=0.005, train_wall=80, wall=90\n"
        )
        return {"rc": 0}

    monkeypatch.setattr(peer, "timed", timed)
    monkeypatch.setattr(peer, "fairseq_data", lambda site: tmp_path)
    site = Site(tmp_path, tmp_path / "data")
    point = RECIPES["fairseq"].point("lr 5e-3, cosine")
    assert peer.fairseq_pace(site, point, 2) == pytest.approx(50 / 60)  # updates 10 → 60 in 30 → 90 s
    assert peer.fairseq_pace(site, point, 2) == pytest.approx(50 / 60) and len(runs) == 1  # read back
