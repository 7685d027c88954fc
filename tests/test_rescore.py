"""nmtkit rescore: the models' log-probabilities of given translations, a score a line or added to
n-best lines as a feature; the same scores translate gives its own outputs, an ensemble of one
model twice scoring as the model, --backward as the other direction's model given the files
swapped; a user's mistakes refused in one line, exit 2, nothing written."""

import json
import math

import pytest
import torch
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.core.settings import RuntimeConfig
from nmtkit.translate.rescore import read_nbest, rescore_file
from nmtkit.translate.settings import RescoreConfig, SearchConfig
from nmtkit.translate.translator import Translator
from tests.conftest import EN, FR

CPU = ["--device", "cpu", "--threads", "1"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def lines_of(path, text):
    path.write_text("".join(f"{line}\n" for line in text), encoding="utf-8")
    return path


def test_an_nbest_list_gets_the_scores_translate_gave_it_as_a_feature(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source = lines_of(tmp_path / "s.en", EN[:5])
    nbest = tmp_path / "s.nbest"
    # in Moses tokens: a detokenized output is not always tokenized back into the same tokens (the
    # Moses tokenizer keeps the full stop of "fut. la" on its word, an abbreviation's)
    tokens = ("--tokenized", *CPU)
    done = run("translate", "-m", model, source, "--nbest", 3, "--beam", 3, "-o", nbest, "-q", *tokens)
    assert done.exit_code == 0, done.output
    done = run("rescore", "-m", model, "--source", source, "--nbest-list", nbest, "--nbest-feature", "R2", *tokens)
    assert done.exit_code == 0, done.output
    given = nbest.read_text(encoding="utf-8").splitlines()
    out = done.stdout.splitlines()
    assert len(out) == len(given) == 15
    for before, after in zip(given, out):
        i, text, log_p, total = before.split(" ||| ")
        j, text2, features, total2 = after.split(" ||| ")
        assert (j, text2, total2) == (i, text, total) and log_p.startswith("F0= ")  # translate's, named
        assert features.startswith(f"{log_p} R2= ")
        assert float(features.split("R2= ")[1]) == pytest.approx(float(log_p.removeprefix("F0= ")), abs=2e-4)
    assert "rescore: 15 pairs" in done.stderr


def test_json_lines_give_each_units_log_probability_as_translate_gives_its_own(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source = lines_of(tmp_path / "s.en", EN[:4])
    tokens = ("--tokenized", "--output-format", "jsonl", "--token-scores", *CPU)
    done = run("translate", "-m", model, source, "--beam", 2, "-q", *tokens)
    assert done.exit_code == 0, done.output
    translated = [json.loads(line) for line in done.stdout.splitlines()]
    target = lines_of(tmp_path / "t.fr", [t["text"] for t in translated])
    done = run("rescore", "-m", model, "--source", source, "--target", target, "--length-penalty", "average", *tokens)
    assert done.exit_code == 0, done.output
    scored = [json.loads(line) for line in done.stdout.splitlines()]
    assert [s["line"] for s in scored] == [1, 2, 3, 4] and all("i" not in s for s in scored)
    for t, s in zip(translated, scored):
        assert s["tokens"] == t["tokens"] and s["units"] == len(t["tokens"]) + 1
        assert s["token_scores"] == pytest.approx(t["token_scores"], abs=2e-4)
        assert s["score"] == pytest.approx(t["score"], abs=2e-4)
        assert s["ranking"] == pytest.approx(s["score"] / s["units"], abs=2e-4)
    refused = run("rescore", "-m", model, "--source", source, "--target", target, "--token-scores")
    assert refused.exit_code == 2 and "--output-format jsonl" in refused.stderr


def test_a_score_a_line_ranks_the_learned_translations_above_others_and_an_ensemble_of_one_model_agrees(
    overfit, tmp_path
):
    model = str(overfit / "run" / "last.pt")
    source = lines_of(tmp_path / "s.en", EN[:5])
    right = lines_of(tmp_path / "right.fr", FR[:5])
    wrong = lines_of(tmp_path / "wrong.fr", FR[1:5] + FR[:1])
    cpu = RuntimeConfig(device="cpu", threads=1)
    scores = {}
    for name, target, models in (("right", right, [model]), ("wrong", wrong, [model]), ("twice", right, [model] * 2)):
        out = tmp_path / f"{name}.scores"
        done = rescore_file(models, str(source), str(target), output=str(out), runtime=cpu)
        scores[name] = [float(x) for x in out.read_text(encoding="utf-8").splitlines()]
        assert done.pairs == 5 and done.log_prob == pytest.approx(sum(scores[name]), abs=1e-3)
    assert all(r > w for r, w in zip(scores["right"], scores["wrong"]))
    assert all(-1.0 < r < 0 for r in scores["right"])  # learned by heart: each near log 1
    assert scores["twice"] == pytest.approx(scores["right"], abs=1e-4)
    translator = Translator.from_checkpoints([model], cpu)
    units = [len(translator.sides.tgt.tokens(line)) + 1 for line in FR[:5]]
    per_unit = tmp_path / "average.scores"
    penalty = RescoreConfig(penalty=SearchConfig(length_penalty="average"))
    done = rescore_file([model], str(source), str(right), output=str(per_unit), cfg=penalty, runtime=cpu)
    assert done.units == sum(units)
    assert done.perplexity == pytest.approx(math.exp(-sum(scores["right"]) / sum(units)), rel=1e-4)
    averaged = [float(x) for x in per_unit.read_text(encoding="utf-8").splitlines()]
    assert averaged == pytest.approx([s / n for s, n in zip(scores["right"], units)], abs=2e-4)


def test_backward_scores_the_source_of_each_nbest_line_given_its_hypothesis(overfit, backward, tmp_path):
    source = lines_of(tmp_path / "s.en", EN[:3])
    hypotheses = [(2, FR[2]), (0, FR[0]), (0, FR[1]), (2, "")]
    nbest = lines_of(tmp_path / "n.nbest", [f"{i} ||| {text} ||| F0= -1.0 ||| -1.0" for i, text in hypotheses])
    with source.open(encoding="utf-8") as stdin:
        turned = CliRunner().invoke(
            main,
            ["rescore", "-m", str(backward), "--backward", "--source", "-", "--nbest-list", str(nbest), *CPU],
            input=stdin.read(),
        )
    assert turned.exit_code == 0, turned.output
    features = [float(line.split(" ||| ")[2].split("Fscore= ")[1]) for line in turned.stdout.splitlines()]
    swapped_source = lines_of(tmp_path / "h.fr", [text for _, text in hypotheses])
    swapped_target = lines_of(tmp_path / "h.en", [EN[i] for i, _ in hypotheses])
    swapped = run("rescore", "-m", backward, "--source", swapped_source, "--target", swapped_target, *CPU)
    assert swapped.exit_code == 0, swapped.output
    assert features == [float(x) for x in swapped.stdout.splitlines()]
    assert len(set(features)) == 4  # each line its own pair


def test_backward_scores_each_source_as_the_other_directions_model_does_given_the_files_swapped(
    overfit, backward, tmp_path
):
    source, target = lines_of(tmp_path / "s.en", EN[:4]), lines_of(tmp_path / "s.fr", FR[:4])
    swapped = run("rescore", "-m", backward, "--source", target, "--target", source, *CPU)
    turned = run("rescore", "-m", backward, "--backward", "--source", source, "--target", target, *CPU)
    assert swapped.exit_code == turned.exit_code == 0, swapped.output + turned.output
    assert turned.stdout == swapped.stdout and len(turned.stdout.splitlines()) == 4
    assert "warning" not in turned.stderr + swapped.stderr
    unturned = run("rescore", "-m", backward, "--source", source, "--target", target, *CPU)
    assert unturned.exit_code == 0 and "the other direction's model, or the files swapped?" in unturned.stderr
    both = run("rescore", "-m", overfit / "run" / "last.pt", "-m", backward, "--source", source, "--target", target)
    assert both.exit_code == 2 and both.stderr.count("\n") == 1 and "--backward" in both.stderr, both.stderr


@pytest.mark.parametrize(
    ("nbest", "says"),
    [
        ("0 ||| a b\n", "line 1 is no Moses n-best line"),
        ("0 ||| a ||| F0= -1 ||| -1\n-1 ||| a ||| F0= -1 ||| -1\n", "line 2 starts with '-1', not a line number"),
        ("0 ||| a ||| F0= -1 ||| -1\n2 ||| a ||| F0= -1 ||| -1\n", "line 2 is of source line 2 (from 0), but "),
        ("\u00b2 ||| a ||| F0= -1 ||| -1\n", "line 1 starts with '\u00b2', not a line number"),
        ("0 ||| a ||| LM= -1 Fscore= -2 ||| -3\n", "line 1 has a feature Fscore= already: give --nbest-feature"),
        # what rerank could not read is refused before a model scores it
        ("0 ||| a ||| F0= -1 ||| -1\n1 ||| a ||| F0= nan ||| -1\n", "line 2: 'nan' is not a finite number"),
        ("0 ||| a ||| F0= 1e400 ||| -1\n", "line 1: '1e400' is not a finite number (the feature F0=)"),
        ("0 ||| a ||| F0= -1 F0= -2 ||| -1\n", "line 1: the feature name 'F0=' is given twice"),
        ("0 ||| a ||| -1.5 ||| -1\n", "line 1: the value '-1.5' has no feature name before it (an older nmtkit's"),
        # rerank's word count, and lines of other features than the first's: rerank refused them after the model
        ("0 ||| a ||| words= 2 ||| -1\n", "line 1 has a feature words=, the name rerank gives the word count"),
        ("0 ||| a ||| F0= -1 ||| -1\n1 ||| a |||  ||| -1\n", "line 2 has the features none, line 1 F0=: every"),
        # the total's place holding something else: the fields shifted, or a foreign format
        ("0 ||| a ||| F0= -1 ||| 0-0 1-1\n", "line 1's fourth field '0-0 1-1' is no total score 'i ||| text"),
        ("0 ||| a ||| F0= -1 ||| nan\n", "line 1's fourth field 'nan' is no total score"),
        ("0 ||| a ||| F0= -1 ||| \n", "line 1 has a fourth field with no total score in it 'i ||| text"),
    ],
)
def test_a_malformed_nbest_list_is_refused_in_one_line(overfit, tmp_path, nbest, says):
    source = lines_of(tmp_path / "s.en", EN[:2])
    (tmp_path / "n.nbest").write_text(nbest, encoding="utf-8")
    out = tmp_path / "out"
    done = run(
        "rescore",
        "-m",
        overfit / "run" / "last.pt",
        "--source",
        source,
        "--nbest-list",
        tmp_path / "n.nbest",
        "-o",
        out,
    )
    assert done.exit_code == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not out.exists()


def test_an_nbest_line_keeps_its_fields_and_gets_the_feature_after_its_own(tmp_path):
    path = tmp_path / "n.nbest"
    path.write_text("1 |||  ||| LM0= -1 ||| -3.5\n0 ||| a  b ||| LM0= -2 ||| -2 ||| 0-0 1-1\n", encoding="utf-8")
    empty, full = read_nbest(str(path), 2, "s.en")
    assert (empty.index, empty.text, empty.with_feature("F0", -1.23456)) == (
        1,
        "",
        "1 |||  ||| LM0= -1 F0= -1.2346 ||| -3.5",
    )
    assert full.with_feature("F0", 0.5) == "0 ||| a  b ||| LM0= -2 F0= 0.5000 ||| -2 ||| 0-0 1-1"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "give one of them"),
        (("--target", "{t}", "--nbest-list", "{t}"), "give one of them"),
        (("--target", "{short}"), "has 3 lines but"),
        (("--target", "{t}", "--nbest-feature", "R L"), "a name without spaces"),
        (("--target", "{t}", "--nbest-feature", "F="), "a name without spaces"),
        (("--nbest-list", "{t}", "--nbest-feature", "words"), "the name rerank gives the word count"),
        (("--target", "{t}", "--nbest-feature", "R2"), "names the feature added to --nbest-list's lines"),
        (("--target", "{t}", "--nbest-feature", "Fscore"), "add --nbest-list FILE"),  # typed at its default
        (("--target", "{t}", "--alpha", "1"), "--alpha is the exponent"),
        (("--target", "{t}", "-o", "{t}"), "the same file as --target"),
        (("--target", "{t}", "-o", "{m}"), "the same file as -m"),
        (("--target", "-", "--source", "-"), "cannot both read stdin"),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_2(overfit, tmp_path, args, says):
    model = overfit / "run" / "last.pt"
    source = lines_of(tmp_path / "s.en", EN[:3])
    paths = {"t": lines_of(tmp_path / "t.fr", FR[:3]), "short": lines_of(tmp_path / "short.fr", FR[:2]), "m": model}
    before = {p: p.read_bytes() for p in (paths["t"], model)}
    done = run("rescore", "-m", model, "--source", source, *(a.format(**paths) for a in args))
    assert done.exit_code == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert {p: p.read_bytes() for p in before} == before


def test_the_clean_text_of_a_split_scores_as_its_binarized_corpus_does(overfit, backward, tmp_path):
    """Two roads to one figure: the checkpoint's own text pipeline over Moses tokens (rescore
    --tokenized) and the binarized split that training validates on (score -m --data). The
    French→English model, briefly trained, so that the figure is not the overfit model's 0."""
    from nmtkit.evaluate.nll import corpus_nll

    en, fr = ((overfit / "clean" / f"valid.{lang}").read_text(encoding="utf-8").splitlines() for lang in ("en", "fr"))
    pairs = [(f, e) for e, f in zip(en, fr) if e and f]  # the corpus leaves out a pair with an empty side
    source = lines_of(tmp_path / "v.fr", [f for f, _ in pairs])
    target = lines_of(tmp_path / "v.en", [e for _, e in pairs])
    cpu = RuntimeConfig(device="cpu", threads=1)
    out = str(tmp_path / "out")
    done = rescore_file([str(backward)], str(source), str(target), output=out, tokenized=True, runtime=cpu)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        corpus = corpus_nll(backward, backward.parent.parent / "bin", "valid", runtime=cpu)
        assert torch.get_num_threads() == 2  # its threads=1 for its own run alone
    finally:
        torch.set_num_threads(threads)
    assert (done.pairs, done.units) == (corpus["sentences"], corpus["tokens"]) and done.pairs >= 5
    assert corpus["nll"] > 1  # a model still learning: the comparison means something
    assert -done.log_prob / done.pairs == pytest.approx(corpus["nll"], rel=1e-4)


def test_an_unknown_word_as_translate_writes_it_is_the_models_unknown_word_read_back(overfit, tmp_path):
    """translate writes '<unk>' for a word outside its vocabulary: read back raw, it is one unit,
    the unknown word's, as in Moses tokens, not the Moses tokenizer's '< unk >'."""
    from nmtkit.text.tokenize import MosesText

    model = overfit / "run" / "last.pt"
    moses = [" ".join(MosesText("en").tokenize(line)) for line in EN[2:4]]
    scored = {}
    for form, english, text, extra in (
        ("raw", EN[2:4], ["Dieu dit: Que la <unk> soit!", "Dieu vit que la <unk> était <unk>."], ()),
        ("tokens", moses, ["Dieu dit : Que la <unk> soit !", "Dieu vit que la <unk> était <unk> ."], ("--tokenized",)),
    ):
        source = lines_of(tmp_path / f"{form}.en", english)
        target = lines_of(tmp_path / f"{form}.fr", text)
        done = run(
            "rescore",
            "-m",
            model,
            "--source",
            source,
            "--target",
            target,
            "--output-format",
            "jsonl",
            "--token-scores",
            *extra,
            *CPU,
        )
        assert done.exit_code == 0, done.output
        scored[form] = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["tokens"].count("<unk>") for r in scored["raw"]] == [1, 2]
    assert not any(t in r["tokens"] for r in scored["raw"] for t in ("<", "unk", ">"))
    assert [r["tokens"] for r in scored["raw"]] == [r["tokens"] for r in scored["tokens"]]
    assert [r["score"] for r in scored["raw"]] == [r["score"] for r in scored["tokens"]]


def test_the_length_penalties_rank_as_the_search_ranks(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source, target = lines_of(tmp_path / "s.en", EN[1:4]), lines_of(tmp_path / "t.fr", FR[2:5])
    for penalty, alpha, of in (("power", 0.5, lambda n: n**0.5), ("gnmt", 0.8, lambda n: ((5 + n) / 6) ** 0.8)):
        args = ("--length-penalty", penalty, "--alpha", alpha, "--output-format", "jsonl", *CPU)
        done = run("rescore", "-m", model, "--source", source, "--target", target, *args)
        assert done.exit_code == 0, done.output
        for r in map(json.loads, done.stdout.splitlines()):
            assert r["ranking"] == pytest.approx(r["score"] / of(r["units"]), abs=2e-4) and r["score"] < -1


def test_an_ensemble_averages_its_members_probabilities_word_by_word(overfit, tmp_path):
    """Two different models (the second's output bias shifted at random): each unit's ensemble
    score is the log of the mean of the members' probabilities, not the mean of their logs."""
    import torch

    first = overfit / "run" / "last.pt"
    raw = torch.load(first, weights_only=True)
    generator = torch.Generator().manual_seed(0)
    weights = raw["model"]["weights"]
    weights["W_o.bias"] = weights["W_o.bias"] + 3 * torch.randn(weights["W_o.bias"].shape, generator=generator)
    torch.save(raw, tmp_path / "other.pt")
    source, target = lines_of(tmp_path / "s.en", EN[:3]), lines_of(tmp_path / "t.fr", FR[1:4])
    scored = {}
    for name, models in (("a", [first]), ("b", [tmp_path / "other.pt"]), ("ab", [first, tmp_path / "other.pt"])):
        args = [x for m in models for x in ("-m", m)]
        done = run(
            "rescore", *args, "--source", source, "--target", target, "--output-format", "jsonl", "--token-scores", *CPU
        )
        assert done.exit_code == 0, done.output
        scored[name] = [json.loads(line)["token_scores"] for line in done.stdout.splitlines()]
    for a, b, ab in zip(scored["a"], scored["b"], scored["ab"]):
        mean_p = [math.log((math.exp(x) + math.exp(y)) / 2) for x, y in zip(a, b)]
        assert ab == pytest.approx(mean_p, abs=5e-4)
        assert ab != pytest.approx([(x + y) / 2 for x, y in zip(a, b)], abs=5e-3)


def test_a_line_longer_than_crop_len_is_scored_cropped_with_a_warning_naming_it(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source = lines_of(tmp_path / "s.en", EN[:2])
    long = " ".join([FR[1]] * 20)
    target = lines_of(tmp_path / "t.fr", [FR[0], long])
    args = ("--output-format", "jsonl", "--token-scores", "--tokenized", *CPU)
    done = run("rescore", "-m", model, "--source", source, "--target", target, "--crop-len", 20, *args)
    assert done.exit_code == 0, done.output
    first, second = map(json.loads, done.stdout.splitlines())
    assert second["units"] == 21 and second["tokens"] == long.split()[:20]
    assert first["tokens"] == FR[0].split()  # the sources and this line are under the limit: whole
    assert f"warning: line 2: {len(long.split()):,} subword units; scoring the first 20 (--crop-len)" in done.stderr
    cropped = lines_of(tmp_path / "c.fr", [FR[0], " ".join(long.split()[:20])])
    whole = run("rescore", "-m", model, "--source", source, "--target", cropped, *args)
    assert [json.loads(line)["score"] for line in whole.stdout.splitlines()] == [first["score"], second["score"]]
    assert "warning" not in whole.stderr


def test_bench_rerank_reranks_each_split_with_the_weights_the_valid_verses_chose(overfit, backward, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import write_pair

    write_pair(tmp_path / "data" / "raw" / "valid", EN[:4], FR[:4])
    write_pair(tmp_path / "data" / "raw" / "test", EN[2:6], FR[2:6])
    script = Path(__file__).parent.parent / "bin" / "bench-rerank"
    models = ["--forward", overfit / "run" / "last.pt", "--backward", backward]
    cmd = [sys.executable, script, *models, "--data", tmp_path / "data", "--nbest", 3, "--threads", 1]
    done = subprocess.run(
        list(map(str, cmd)), env={**os.environ, "BENCH_DIR": str(tmp_path)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "rerank" / "rerank.json").read_text())
    first, length, both = result["systems"].values()
    assert first["weights"] == "F0= 1" and first["test_bleu"] > 50  # learned by heart
    assert length["weights"].startswith("F0= 1 words= ") and both["weights"].startswith("F0= 1 channel= ")
    assert both["valid_bleu"] >= length["valid_bleu"] >= 0  # the channel's grid holds its 0
    assert len((tmp_path / "rerank" / "test.channel.nbest").read_text().splitlines()) == 12
    assert done.stdout.count("\n") == 5 and "| 1-best of the search |" in done.stdout
    missing = subprocess.run(
        [sys.executable, str(script), *map(str, models), "--data", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "valid.en" in missing.stderr
