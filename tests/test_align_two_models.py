"""nmtkit align with the models of both directions (-m en-fr.pt -m fr-en.pt): one line of links per
line pair, empty lines included, each link inside its pair's words, combined as --combine says;
models of another language pair are refused in one line, exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from nmtkit.align.links import read_pharaoh
from nmtkit.align.settings import LINK_THRESHOLD, LinkConfig
from nmtkit.cli import main
from nmtkit.core.settings import RuntimeConfig
from nmtkit.text.tokenize import MosesText
from nmtkit.translate import forced
from nmtkit.translate.both_ways import BothWays
from nmtkit.translate.forced import align_file
from nmtkit.translate.io import translate_file
from nmtkit.translate.settings import TranslateOptions
from nmtkit.translate.translator import Translator
from tests.conftest import EN, FR


def test_both_directions_write_one_line_of_links_per_pair(overfit, backward, tmp_path):
    forward = overfit / "run" / "last.pt"
    (tmp_path / "s.en").write_text(f"{EN[0]}\n\n{EN[2]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n\n{FR[2]}\n", encoding="utf-8")
    out = {}
    for combine in ("grow-diag-final-and", "soft"):
        out[combine] = tmp_path / f"{combine}.links"
        n = align_file(
            [str(forward), str(backward)],
            str(tmp_path / "s.en"),
            str(tmp_path / "s.fr"),
            str(out[combine]),
            False,
            links=LinkConfig(combine=combine, **({"threshold": 0.05} if combine == "soft" else {})),
        )
        lines = out[combine].read_text(encoding="utf-8").splitlines()
        assert n == len(lines) == 3 and lines[1] == ""
        for k, (en, fr) in enumerate(((EN[0], FR[0]), (EN[2], FR[2]))):
            n_src, n_tgt = len(MosesText("en").tokenize(en)), len(MosesText("fr").tokenize(fr))
            pairs = read_pharaoh(lines[2 * k], "here")
            assert pairs and all(i < n_src and j < n_tgt for i, j in pairs)
    single = tmp_path / "one.links"
    align_file([str(forward)], str(tmp_path / "s.en"), str(tmp_path / "s.fr"), str(single), False)
    assert len(single.read_text(encoding="utf-8").splitlines()) == 3


def test_pairs_spread_over_processes_get_the_links_of_one_process_in_order(overfit, backward, tmp_path, monkeypatch):
    forward = overfit / "run" / "last.pt"
    (tmp_path / "s.en").write_text("".join(f"{line}\n" for line in EN), encoding="utf-8")
    (tmp_path / "s.fr").write_text("".join(f"{line}\n" for line in FR), encoding="utf-8")
    monkeypatch.setattr(forced, "CHUNK", 3)  # 8 pairs: chunks of 3, 3 and 2 over two processes
    cpu = RuntimeConfig(device="cpu")
    assert forced.processes(2, len(EN), cpu) == 2 and forced.processes(8, len(EN), cpu) == 3
    assert forced.processes(2, 3, cpu) == 1  # one chunk: no process is started for it
    out = {}
    for workers in (1, 2):
        out[workers] = tmp_path / f"{workers}.links"
        models = [str(forward), str(backward)]
        n = align_file(
            models, str(tmp_path / "s.en"), str(tmp_path / "s.fr"), str(out[workers]), False, cpu, workers=workers
        )
        assert n == len(EN)
    assert out[2].read_text(encoding="utf-8") == out[1].read_text(encoding="utf-8")
    assert len(set(out[1].read_text(encoding="utf-8").splitlines())) > 1  # the pairs' own links, not one repeated


def test_models_of_another_language_pair_get_one_line_and_exit_2(overfit, backward, tmp_path):
    forward = overfit / "run" / "last.pt"
    raw = torch.load(forward, weights_only=True)
    raw["text"]["langs"] = {"src": "en", "tgt": "de"}
    torch.save(raw, tmp_path / "en-de.pt")
    (tmp_path / "s.en").write_text(f"{EN[0]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n", encoding="utf-8")
    for models in ([forward, tmp_path / "en-de.pt"], [backward, forward, tmp_path / "en-de.pt"]):
        cmd = [sys.executable, "-m", "nmtkit", "align", "--source", tmp_path / "s.en", "--target", tmp_path / "s.fr"]
        done = subprocess.run(
            [*map(str, cmd), *(x for m in models for x in ("-m", str(m))), "-o", str(tmp_path / "out")],
            capture_output=True,
            text=True,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "en-de.pt translates en→de" in lines[0] and "one language pair" in lines[0]
        assert not (tmp_path / "out").exists()


def test_bench_aer_scores_a_pair_of_models_by_each_combination(overfit, backward, tmp_path):
    script = Path(__file__).parent.parent / "bin" / "bench-aer"
    env = {**os.environ, "BENCH_DIR": str(tmp_path)}
    forward = overfit / "run" / "last.pt"

    def bench(*args):
        cmd = [sys.executable, script, "--no-eflomal", "--threads", "1", *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True)

    done = bench("--pair", forward, backward, "--link-thresholds", "0.2,0.6", "--null-thresholds", "0.9")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "aer.json").read_text())["results"]
    assert [name.split(" (")[0] for name in results] == [
        "nmtkit, both directions, grow-diag-final-and",
        "nmtkit, both directions, grow-diag-final-and, NULL ≥ 0.9 unlinked",
        "nmtkit, both directions, soft, harmonic mean ≥ 0.2",
        "nmtkit, both directions, soft, harmonic mean ≥ 0.6",
        "nmtkit, both directions, soft, geometric mean ≥ 0.2",
        "nmtkit, both directions, soft, geometric mean ≥ 0.6",
    ]
    assert results[next(iter(results))]["sure"] == 2637  # the 100 gold verses
    soft = [r["links"] for name, r in results.items() if "soft" in name]
    assert soft[0] >= soft[1]  # a higher threshold keeps no more links
    assert bench("--pair", forward, backward, "--link-thresholds", "0.5", "--verses", "dev").returncode == 0
    held_out = json.loads((tmp_path / "aer.json").read_text())["results"]
    assert len(held_out) == 3 and {r["sure"] for r in held_out.values()} == {2124}  # the 90 held-out verses
    for flag, value in (("--link-thresholds", "half"), ("--null-thresholds", "1.5")):
        bad = bench("--pair", forward, backward, flag, value)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and flag in bad.stderr, bad.stderr


def test_translate_and_serve_link_each_translation_with_both_directions(overfit, backward, tmp_path):
    forward = overfit / "run" / "last.pt"
    (tmp_path / "s.en").write_text(f"{EN[0]}\n\n{EN[2]}\n", encoding="utf-8")
    links = LinkConfig(combine="soft", threshold=0.05)
    hyp, printed = tmp_path / "hyp.fr", tmp_path / "hyp.links"
    models = [str(forward), str(backward)]
    translate_file(models, str(tmp_path / "s.en"), str(hyp), TranslateOptions(), pharaoh_path=str(printed), links=links)
    lines = printed.read_text(encoding="utf-8").splitlines()
    assert len(hyp.read_text(encoding="utf-8").splitlines()) == len(lines) == 3 and lines[1] == ""
    # the links of the pair (source, translation) as align makes them from the same two models
    aligned = tmp_path / "aligned.links"
    align_file(models, str(tmp_path / "s.en"), str(hyp), str(aligned), False, links=links)
    assert lines == aligned.read_text(encoding="utf-8").splitlines() and lines[0] and lines[2]
    # serve's answers carry the same links
    serve_app = pytest.importorskip("nmtkit.serve.app", reason="nmtkit serve needs the serve extra")
    translator = Translator.from_checkpoints([forward])
    both = BothWays.load([backward], links, None)
    out = translator.translate_block([EN[0]], TranslateOptions(attention=True))
    assert serve_app.native(both.linked(out[0]), False)["alignment"] == lines[0]


def test_translate_refuses_models_of_the_other_direction_without_links_to_make(overfit, backward, tmp_path):
    (tmp_path / "s.en").write_text(f"{EN[0]}\n", encoding="utf-8")
    r = CliRunner().invoke(
        main, ["translate", "-m", str(overfit / "run" / "last.pt"), "-m", str(backward), str(tmp_path / "s.en")]
    )
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "other direction" in r.output


def test_bench_aer_aligns_a_french_english_model_from_french_and_turns_its_links_back(backward, tmp_path):
    from bench.bench_aer import GOLD, attention_links

    got = attention_links([backward], tmp_path, 1, verses="dev")
    own = tmp_path / "own.links"
    align_file([str(backward)], str(GOLD / "dev.tok.fr"), str(GOLD / "dev.tok.en"), str(own), True)
    mine = [read_pharaoh(line, "own") for line in own.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len(mine) == 90
    assert [set(read_pharaoh(line, "got")) for line in got] == [{(i, j) for j, i in m} for m in mine]


def test_the_settings_of_combined_links_are_refused_with_models_of_one_direction(overfit, tmp_path):
    """They would change nothing: byte for byte the links without them."""
    model = str(overfit / "run" / "last.pt")
    (tmp_path / "s.en").write_text(f"{EN[0]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n", encoding="utf-8")
    pair = ["--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    for command in (["align", "-m", model, *pair], ["translate", "-m", model, str(tmp_path / "s.en")]):
        for extra, said in (
            (["--null-threshold", "0.1"], "--null-threshold: it combines the links of a model each way"),
            (["--combine", "soft", "--link-threshold", "0.5"], "--combine, --link-threshold: they combine"),
            # typed at its default, as idle as at another value
            (["--combine", "grow-diag-final-and"], "--combine: it combines the links of a model each way"),
        ):
            r = CliRunner().invoke(main, [*command, *extra])
            assert r.exit_code == 2 and r.output.startswith(f"nmtkit {command[0]}: error: {said}"), r.output
        assert CliRunner().invoke(main, command).exit_code == 0
    # and with a model each way, a setting of the combination the run does not make
    for extra, said in (
        (["--link-threshold", "0.5"], "--link-threshold thresholds --combine soft or geometric"),
        (["--combine", "soft", "--null-threshold", "0.5"], "--null-threshold is grow-diag-final-and's"),
        (["--link-threshold", str(LINK_THRESHOLD)], "--link-threshold thresholds --combine soft or geometric"),
    ):
        r = CliRunner().invoke(main, ["align", "-m", model, "-m", model, *pair, *extra])
        assert r.exit_code == 2 and r.output.startswith(f"nmtkit align: error: {said}"), r.output


def test_both_sides_from_stdin_and_files_named_for_the_other_direction(overfit, tmp_path):
    model = str(overfit / "run" / "last.pt")
    r = CliRunner().invoke(main, ["align", "-m", model, "--source", "-", "--target", "-"], input=EN[0] + "\n")
    assert r.exit_code == 2 and "--source and --target cannot both read stdin" in r.output
    r = CliRunner().invoke(main, ["score-align", "-", "-g", "-"], input="0-0\n")
    assert r.exit_code == 2 and "cannot both read stdin" in r.output
    # the files swapped (or the fr→en model given): a warning each, and the links still written
    (tmp_path / "s.en").write_text(f"{EN[0]}\n", encoding="utf-8")
    (tmp_path / "s.fr").write_text(f"{FR[0]}\n", encoding="utf-8")
    r = CliRunner().invoke(
        main, ["align", "-m", model, "--source", str(tmp_path / "s.fr"), "--target", str(tmp_path / "s.en")]
    )
    assert r.exit_code == 0 and r.stdout.strip()
    assert f"warning: {tmp_path / 's.fr'} is named as fr text, but {model} reads en there (en→fr)" in r.stderr
    assert f"warning: {tmp_path / 's.en'} is named as en text, but {model} reads fr there" in r.stderr
    r = CliRunner().invoke(
        main, ["align", "-m", model, "--source", str(tmp_path / "s.en"), "--target", str(tmp_path / "s.fr")]
    )
    assert r.exit_code == 0 and "warning" not in r.stderr


def test_a_backward_model_that_tokenizes_otherwise_forces_the_forward_models_words(overfit, backward):
    """It forced the raw text again with its own tokenizer (--aggressive-dash there): a table over
    other words, and a traceback where the two were combined."""
    ahead = Translator.from_checkpoints([overfit / "run" / "last.pt"], "cpu")
    behind = Translator.from_checkpoints([backward], "cpu")
    text = behind.sides.src.text
    plain = text.tokenize
    text.tokenize = lambda line: [p for t in plain(line) for p in t.replace("-", " @-@ ").split()]
    pairs = [(0, (EN[0], FR[0].replace(" ", "-", 1))), (1, (EN[2], FR[2]))]
    aligner = forced.Aligner(ahead, behind, False, LinkConfig())
    for (_, (en, fr)), (links, _) in zip(pairs, aligner.lines(pairs), strict=True):
        n_src, n_tgt = len(MosesText("en").tokenize(en)), len(MosesText("fr").tokenize(fr))
        assert all(i < n_src and j < n_tgt for i, j in read_pharaoh(links, "here"))


def test_a_pair_of_models_given_in_either_order_reads_the_files_as_their_names_say(overfit, backward, tmp_path):
    """-m fr-en.pt -m en-fr.pt over s.en and s.fr tokenized the English as French, silently."""
    forward = str(overfit / "run" / "last.pt")
    for name, lines in (("s.en", EN[:4]), ("s.fr", FR[:4]), ("b.txt", EN[:4]), ("a.txt", FR[:4])):
        (tmp_path / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    def align(models, source, target):
        r = CliRunner().invoke(
            main,
            [
                "align",
                *(a for m in models for a in ("-m", m)),
                "--source",
                tmp_path / source,
                "--target",
                tmp_path / target,
            ],
        )
        assert r.exit_code == 0 and "warning" not in r.stderr, r.output
        return r.stdout

    both = (forward, str(backward))
    links = align(both, "s.en", "s.fr")
    assert links.strip()
    # --source's name decides, else --target's; the order of the models does not
    for source, target in (("s.en", "s.fr"), ("s.en", "a.txt"), ("b.txt", "s.fr")):
        assert align(both[::-1], source, target) == links, (source, target)
    # files named in neither language: the first model's way, as before (French read as the source)
    turned = align(both[::-1], "a.txt", "b.txt")
    for line, fr, en in zip(turned.splitlines(), FR, EN):
        n_src, n_tgt = len(MosesText("fr").tokenize(fr)), len(MosesText("en").tokenize(en))
        assert all(i < n_src and j < n_tgt for i, j in read_pharaoh(line, "here"))
    assert turned != links
