"""``nmtkit score`` passes sacreBLEU's options through: every figure and signature it prints is
the one sacreBLEU's own command line prints for the same files and options."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.evaluate.metrics import PAPER

# case, accents, guillemets and a Chinese line: lowercasing and each tokenizer change the counts
HYPS = [
    "Le Chat est assis sur le tapis ; il DORT.",
    "Élimélec mourut, et elle resta avec ses deux fils.",
    "« Où vas-tu ? » demanda-t-elle à Noémi.",
    "L'ÉTÉ fut très chaud à Bethléhem !",
    "他说：你好，世界。 Hello World",
]
REFS = [
    [
        "Le chat était assis sur le tapis ; il dort.",
        "Élimélec, mari de Naomi, mourut, et elle resta avec ses deux fils.",
        "« Où vas-tu ? » lui demanda Naomi.",
        "L'été fut très chaud à Bethléhem.",
        "他说：你好世界。 hello world",
    ],
    [
        "Le chat s'assit sur le tapis, et il dormit.",
        "Élimélec mourut ; elle resta seule avec ses deux fils.",
        "« Où vas-tu ? » demanda-t-elle à Naomi.",
        "L'Été à Bethléhem fut très chaud !",
        "他说你好，世界！ Hello world",
    ],
]
METRICS = ("bleu", "chrf", "ter")
# sacrebleu's options as nmtkit score spells them (sacrebleu's own names: the same)
OPTIONS = [
    (),
    ("--lowercase",),
    ("--tokenize", "intl"),
    ("--tokenize", "char"),
    ("--tokenize", "zh"),
    ("--tokenize", "none", "--lowercase"),
    ("--chrf-word-order", "2"),
]
READ_BY = {"--lowercase": "bleu", "--tokenize": "bleu", "--chrf-word-order": "chrf"}  # where sacrebleu ignores them


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("score")
    (root / "hyp.fr").write_text("".join(line + "\n" for line in HYPS), encoding="utf-8")
    for i, refs in enumerate(REFS):
        (root / f"ref{i}.fr").write_text("".join(line + "\n" for line in refs), encoding="utf-8")
    (root / "short.fr").write_text(REFS[0][0] + "\n", encoding="utf-8")
    return root


def sacrebleu(files, nrefs, *args):
    refs = [str(files / f"ref{i}.fr") for i in range(nrefs)]
    out = subprocess.run(
        [sys.executable, "-m", "sacrebleu", *refs, "-i", str(files / "hyp.fr"), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return out.stdout


def nmtkit(files, nrefs, *args):
    refs = [a for i in range(nrefs) for a in ("-r", str(files / f"ref{i}.fr"))]
    r = CliRunner().invoke(main, ["score", str(files / "hyp.fr"), *refs, *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def key(sacrebleu_name):
    """nmtkit's JSON key of a sacreBLEU score name (BLEU, chrF2, chrF2++, TER)."""
    return "chrf" if sacrebleu_name.startswith("chrF") else sacrebleu_name.lower()


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o) or "defaults")
@pytest.mark.parametrize("nrefs", [1, 2])
def test_corpus_figures_and_signatures_are_sacrebleus(files, nrefs, options):
    theirs = json.loads(sacrebleu(files, nrefs, "-m", *METRICS, "-f", "json", "-w", "6", *options))
    ours = json.loads(nmtkit(files, nrefs, "--metrics", ",".join(METRICS), "--output-format", "json", *options))[
        "systems"
    ][0]
    assert [key(s["name"]) for s in theirs] == list(METRICS) and "bleu_tok" not in ours
    for s in theirs:
        k = key(s["name"])
        assert (float(f"{ours[k]:.6f}"), ours[f"{k}_signature"]) == (s["score"], s["signature"]), k
    text = nmtkit(files, nrefs, "--metrics", "bleu", "--metrics", "chrf,ter", *options)
    assert all(f"    {s['signature']}\n" in text for s in theirs)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o) or "defaults")
def test_sentence_level_lines_are_sacrebleus(files, options):
    theirs = {m: sacrebleu(files, 2, "-m", m, "--sentence-level", "-w", "2", *options).splitlines() for m in METRICS}
    assert all(len(lines) == len(HYPS) for lines in theirs.values())
    for m in METRICS:  # one metric: sacrebleu's very lines, where it reads the options (nmtkit refuses the rest)
        if all(READ_BY.get(o, m) == m for o in options):
            assert nmtkit(files, 2, "--metrics", m, "--sentence-level", *options).splitlines() == theirs[m]
    ours = nmtkit(files, 2, "--metrics", ",".join(METRICS), "--sentence-level", *options).splitlines()
    assert [line.split("\t") for line in ours] == [list(row) for row in zip(*theirs.values())]


def test_sentence_level_json_holds_each_score_and_signature(files):
    theirs = json.loads(sacrebleu(files, 1, "-m", "chrf", "--chrf-word-order", "2", "-f", "json"))
    res = json.loads(
        nmtkit(files, 1, "--metrics", "chrf", "--chrf-word-order", "2", "--sentence-level", "--output-format", "json")
    )
    s = res["systems"][0]
    assert s["chrf_signature"] == theirs["signature"] and s["chrf_label"] == "chrF++"
    assert len(s["sentence_scores"]) == len(HYPS) and set(s["sentence_scores"][0]) == {"chrf"}


def test_the_default_report_is_sacrebleus_bleu_and_chrf_and_paper_adds_the_tokenized_bleu(files):
    s = json.loads(nmtkit(files, 1, "--output-format", "json"))["systems"][0]
    assert {k for k in s if k.endswith("_signature")} == {"bleu_signature", "chrf_signature"}
    s = json.loads(nmtkit(files, 1, "--metrics", ",".join(PAPER), "--output-format", "json"))["systems"][0]
    assert {k for k in s if k.endswith("_signature")} == {"bleu_signature", "bleu_tok_signature", "chrf_signature"}


@pytest.mark.parametrize("metrics", [[], ["--metrics", "bleu,chrf,ter"]])
def test_sacrebleus_metrics_alone_load_no_tokenizer_or_numpy(files, metrics):
    """What keeps a plain score near sacrebleu's own time: sacremoses (for the tokenized BLEU) and
    numpy (for --plot) load only when asked for, and not for the default report."""
    args = ["score", str(files / "hyp.fr"), "-r", str(files / "ref0.fr"), *metrics]
    code = (
        f"import sys\nfrom nmtkit.cli import main\nmain({args!r}, standalone_mode=False)\n"
        "print(sorted(m for m in ('sacremoses', 'numpy', 'torch', 'subword_nmt') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "args,match",
    [
        (["--metrics", "bleu,meteor"], "unknown metric 'meteor'"),
        (["--tokenize", "moses"], "unknown tokenizer 'moses'"),
        (["-r", "missing.fr"], "missing.fr: no such file"),
        (["-r", "short.fr"], "short.fr has 1 line but"),
        (["--sentence-level", "--bootstrap", "10"], "--sentence-level"),
        (
            ["--device", "cpu"],
            "--device sets how a model computes, and none runs here (-m MODEL scores the hypotheses' NLL)",
        ),
        (["--bf16"], "--bf16 sets how a model computes"),
        (["--threads", "2", "--metrics", "bleu"], "--threads sets how a model computes"),
        (["--source", "ref1.fr"], "--source is read by --by-length, --no-unk-vocab and -m"),
    ],
)
def test_user_errors_are_one_line_and_status_2(files, args, match):
    args = [str(files / a) if a.endswith(".fr") else a for a in args]
    r = CliRunner().invoke(main, ["score", str(files / "hyp.fr"), "-r", str(files / "ref0.fr"), *args])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and match in r.stderr, r.output


def test_a_system_that_ties_the_baseline_is_not_significant():
    """sacreBLEU's bootstrap gives the same output as the baseline p = 1/(samples+1); score gives 1."""
    from nmtkit.evaluate.significance import paired_bootstrap

    other = [h.lower() for h in HYPS]
    got = paired_bootstrap({"a": HYPS, "same": list(HYPS), "other": other}, REFS, samples=200)
    base, same, changed = got["systems"]
    assert base["p_value"] is None and same["p_value"] == 1.0 and same["bleu"] == base["bleu"]
    assert changed["bleu"] != base["bleu"] and changed["p_value"] < 1.0


def test_bootstrap_resamples_every_metric_asked_for_as_sacrebleus_paired_test_does_each(files):
    from sacrebleu.metrics import CHRF, TER
    from sacrebleu.significance import PairedTest

    other = files / "other.fr"
    other.write_text("".join(h.replace("Le ", "").lower() + "\n" for h in HYPS), encoding="utf-8")
    args = [str(files / "hyp.fr"), str(other), "-r", str(files / "ref0.fr"), "--bootstrap", "100", "--lang", "fr"]
    r = CliRunner().invoke(main, ["score", *args, "--metrics", "chrf,ter", "--output-format", "json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    # both BLEUs, as every analysis gives them, then each metric asked for
    assert [k for k in got if k.startswith("bootstrap")] == [
        "bootstrap",
        "bootstrap_tok",
        "bootstrap_chrf",
        "bootstrap_ter",
    ]
    systems = [("hyp", HYPS), ("other", other.read_text(encoding="utf-8").splitlines())]
    for name, metric in (("chrf", CHRF()), ("ter", TER())):
        sigs, alone = PairedTest(systems, {name: metric}, [REFS[0]], test_type="bs", n_samples=100)()
        ((_, results),) = [(k, v) for k, v in alone.items() if k != "System"]
        rows = got[f"bootstrap_{name}"]["systems"]
        assert [row["score"] for row in rows] == [res.score for res in results]
        assert [row["mean"] for row in rows] == pytest.approx([float(res.mean) for res in results])
        assert [row["ci95"] for row in rows] == pytest.approx([float(res.ci) for res in results])
        assert rows[0]["p_value"] is None and rows[1]["p_value"] == pytest.approx(results[1].p_value)
        assert got[f"bootstrap_{name}"]["signature"] == str(next(iter(sigs.values())))
    text = CliRunner().invoke(main, ["score", *args, "--metrics", "chrf,ter"]).stdout
    assert f"(100 samples, chrF):\n  {args[0]}: chrF " in text and f"(100 samples, TER):\n  {args[0]}: TER " in text
    # the bootstrap's BLEU reads --tokenize and --lowercase, though --metrics leaves BLEU out
    tokenize = CliRunner().invoke(main, ["score", *args, "--metrics", "chrf", "--tokenize", "intl", "--lowercase"])
    assert tokenize.exit_code == 0 and "intl, lowercased" in tokenize.stdout, tokenize.output
    plain = CliRunner().invoke(main, ["score", *args, "--metrics", "bleu", "--output-format", "json"])
    assert [k for k in json.loads(plain.stdout) if k.startswith("bootstrap")] == ["bootstrap", "bootstrap_tok"]


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")  # sacreBLEU's own call
def test_a_tokenizer_model_that_cannot_be_fetched_is_one_line(files, tmp_path, monkeypatch, caplog):
    """--tokenize spm fetches its model on first use; offline, sacreBLEU's own warning about the
    name ('spm' is now 'flores101') came out above nmtkit's error line (logging's last resort
    prints it on stderr; under pytest, caplog holds it)."""
    import logging
    from urllib.error import URLError

    import sacrebleu.tokenizers.tokenizer_spm as spm

    def offline(url, path):
        raise URLError("Name or service not known")

    def cut(url, path):  # what sacreBLEU's download does on an SSL error, or a wrong checksum
        logging.getLogger("sacrebleu").error("An SSL error was encountered in downloading the files.")
        logging.getLogger("sacrebleu").error("Please check your network.")
        sys.exit(1)

    monkeypatch.setattr(spm, "SACREBLEU_DIR", str(tmp_path))  # no model fetched before
    for download, said in (
        (offline, "--tokenize spm: sacreBLEU could not download the tokenizer's model"),
        (cut, "--tokenize spm: An SSL error was encountered in downloading the files.\n"),  # exit 1, nothing said
    ):
        monkeypatch.setattr(spm, "download_file", download)
        caplog.clear()
        args = ["score", str(files / "hyp.fr"), "-r", str(files / "ref0.fr"), "--tokenize", "spm"]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and said in r.stderr, r.stderr
        assert not [record.getMessage() for record in caplog.records if record.name == "sacrebleu"]


def test_the_library_refuses_references_that_are_not_streams_as_long_as_the_hypotheses():
    """A list of str was scored as that many one-line streams; a short stream cut the hypotheses;
    no hypothesis was an IndexError inside sacreBLEU."""
    from nmtkit.core.errors import UserError
    from nmtkit.evaluate.score import corpus_scores

    hyps = ["the cat sat on the mat", "a dog ran in the park"]
    with pytest.raises(TypeError, match=r"reference streams, each a list of lines as long as hyps"):
        corpus_scores(hyps, hyps)
    with pytest.raises(UserError, match="2 hypotheses and reference streams of 2, 1 lines"):
        corpus_scores(hyps, [hyps, hyps[:1]])
    with pytest.raises(UserError, match="0 hypotheses"):
        corpus_scores([], [[]])
    assert corpus_scores(hyps, [hyps])["bleu"] == pytest.approx(100.0)
