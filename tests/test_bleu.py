"""BLEU as the paper counts it (multi-bleu.perl on Moses tokens), beside sacreBLEU, on fixtures
whose n-gram counts are worked out by hand in the comments."""

import json
import math

import pytest

from nmtkit.evaluate.metrics import PAPER, Metrics
from nmtkit.evaluate.score import SACREBLEU_LABEL, TOKENIZED_LABEL, Texts, evaluate, format_report

HYPS = ["The <unk> sat on the mat.", "It is a good day."]
REFS = ["The cat sat on the mat.", "It is a very good day."]


def by_hand() -> float:
    # Moses tokens: "The <unk> sat on the mat ." (7) and "It is a good day ." (6): 13 against 7 + 7.
    # matches, clipped: 1-grams 6 + 6 of 13; 2-grams 4 + 4 of 11 ("sat on", "on the", "the mat",
    # "mat ."; "It is", "is a", "good day", "day ."); 3-grams 3 + 2 of 9; 4-grams 2 + 0 of 7
    precisions = [12 / 13, 8 / 11, 5 / 9, 2 / 7]
    return 100 * math.exp(1 - 14 / 13) * math.exp(sum(map(math.log, precisions)) / 4)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "hyp.en").write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    (tmp_path / "ref.en").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    (tmp_path / "src.de").write_text("Die Katze saß auf der Matte.\nEs ist ein sehr guter Tag.\n", encoding="utf-8")
    return tmp_path


def test_unk_is_one_token_and_tokenized_bleu_is_multi_bleu(files):
    assert by_hand() == pytest.approx(52.90, abs=0.005)
    s = evaluate([str(files / "hyp.en")], [str(files / "ref.en")], metrics=Metrics(PAPER))["systems"][0]
    assert s["bleu_tok"] == pytest.approx(by_hand(), abs=1e-6)
    assert "hyp_len = 13" in s["bleu_tok_detail"] and "ref_len = 14" in s["bleu_tok_detail"]
    assert s["bleu_tok_label"] == TOKENIZED_LABEL and s["bleu_label"] == SACREBLEU_LABEL


def test_tokenized_bleu_is_not_smoothed():
    # no 4-gram matches (3-grams 1 of 4): multi-bleu.perl says 0, sacreBLEU's smoothed BLEU does not
    texts = Texts.of(["the cat sat on a mat"], [["the cat sat in a mat"]], tokenized=False, lang="en")
    both = texts.bleus()
    assert both["bleu_tok"] == 0.0 and both["bleu"] > 0.0


def test_subsets_and_buckets_get_both_bleus_counted_the_same_way(files):
    # both sources have 6-10 Moses tokens: one bucket, holding the whole set
    res = evaluate([str(files / "hyp.en")], [str(files / "ref.en")], source=str(files / "src.de"), bucket_width=5)
    rows = res["by_length"]["rows"]
    assert [(r["lo"], r["hi"], r["sentences"]) for r in rows] == [(6, 10, 2)]
    assert rows[0]["bleu_tok"][str(files / "hyp.en")] == pytest.approx(by_hand(), abs=1e-6)
    assert set(rows[0]) >= {"bleu", "bleu_tok"}
    one = Texts.of(HYPS, [REFS], tokenized=False, lang="en").subset([1]).bleus()
    # a subset (as for No-UNK) is scored the same way: sentence 1 alone has 6/6, 4/5, 2/4, 0/3,
    # a zero precision, so 0 unsmoothed
    assert one["bleu_tok"] == 0.0
    report = format_report(res)
    assert f"{TOKENIZED_LABEL} by source length" in report and f"{SACREBLEU_LABEL}: " in report


def test_score_command_labels_both_bleus(files):
    from click.testing import CliRunner

    from nmtkit.cli import main

    r = CliRunner().invoke(
        main, ["score", str(files / "hyp.en"), "-r", str(files / "ref.en"), "--metrics", "bleu,bleu-tok"]
    )
    assert r.exit_code == 0, r.output
    assert f"{TOKENIZED_LABEL}: 52.90" in r.stdout
    assert f"{SACREBLEU_LABEL}: " in r.stdout and "nrefs:1|case:mixed|eff:no|tok:13a" in r.stdout
    j = CliRunner().invoke(
        main,
        [
            "score",
            str(files / "hyp.en"),
            "-r",
            str(files / "ref.en"),
            "--metrics",
            "bleu-tok",
            "--output-format",
            "json",
        ],
    )
    assert json.loads(j.stdout)["systems"][0]["bleu_tok"] == pytest.approx(52.90, abs=0.005)


def test_two_systems_under_one_name_are_refused_and_same_file_names_told_apart(files, monkeypatch):
    """One name stood for both systems: the first one's scores were lost, exit 0; a/test.hyp and
    b/test.hyp were both headed test.hyp in the by-length table and the picture's legend."""
    from click.testing import CliRunner

    from nmtkit.cli import main
    from nmtkit.core.console import short_names

    for d in ("model_a", "model_b"):
        (files / d).mkdir()
        hyps = (files / "hyp.en").read_text(encoding="utf-8")
        (files / d / "newstest2014.hyp.en").write_text(hyps, encoding="utf-8")
    a, b, ref, src = (
        str(files / p) for p in ("model_a/newstest2014.hyp.en", "model_b/newstest2014.hyp.en", "ref.en", "src.de")
    )

    def score(*args):
        return CliRunner().invoke(main, ["score", *args])

    for args, says in (
        ([a, b, "-r", ref, "--name", "sys", "--name", "sys"], "--name sys is given twice"),
        ([a, a, "-r", ref], f"{a} is given twice: give each system once"),
        (["-", "-r", "-"], "HYPOTHESES and -r cannot both read stdin"),
        (["-", "-", "-r", ref], "two HYPOTHESES cannot both read stdin"),
    ):
        r = score(*args)
        assert r.exit_code == 2 and says in r.output, r.output
    assert score(a, a, "-r", ref, "--name", "one", "--name", "two").exit_code == 0
    both = ["model_a/newstest2014.hyp.en", "model_b/newstest2014.hyp.en"]
    assert short_names([a, b]) == both and short_names([a, ref]) == ["newstest2014.hyp.en", "ref.en"]
    legends = []
    monkeypatch.setattr("nmtkit.core.plot.save_figure", lambda fig, out: legends.append(fig.axes[0].get_legend()))
    r = score(a, b, "-r", ref, "--source", src, "--by-length", "--plot", str(files / "len.png"))
    assert r.exit_code == 0, r.output
    assert r.stderr.strip().endswith(
        f"wrote {files / 'len.png'}"
    )  # align-plot says so of its pictures; score said nothing
    head = next(line for line in r.stdout.splitlines() if line.strip().startswith("length"))
    assert both[0] in head and both[1] in head  # the table's columns, whole
    assert [t.get_text() for t in legends[0].get_texts()] == both


def test_a_reference_given_twice_or_of_blank_lines_is_refused(files):
    """The same reference twice counted as two (nrefs:2 in the signature); a reference file of
    blank lines (a wrong path, an unfinished step) scored every system 0.00 with status 0."""
    from click.testing import CliRunner

    from nmtkit.cli import main

    hyp, ref = str(files / "hyp.en"), str(files / "ref.en")
    blank = files / "blank.en"
    blank.write_text("\n" * len((files / "ref.en").read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    (files / "link.en").symlink_to(files / "ref.en")
    for args, says in (
        (["-r", ref, "-r", ref], f"-r {ref} is given twice: give each reference once"),
        (["-r", ref, "-r", str(files / "link.en")], f"link.en is given twice (as {ref})"),
        (["-r", str(blank)], f"reference {blank} has only blank lines: every system would score 0"),
    ):
        r = CliRunner().invoke(main, ["score", hyp, *args])
        assert r.exit_code == 2 and says in r.output, r.output
    r = CliRunner().invoke(main, ["score", hyp, "-r", ref, "-r", hyp])  # two files, two references
    assert r.exit_code == 0 and "2 references" in r.output, r.output


def test_a_tokenizer_whose_model_cannot_be_fetched_says_so_in_one_line(monkeypatch):
    """sacreBLEU downloads flores101's SentencePiece model on first use; offline, the line was the
    bare URL error."""
    from urllib.error import URLError

    import sacrebleu.metrics.bleu

    from nmtkit.core.errors import UserError

    class Offline(sacrebleu.metrics.bleu.BLEU):
        def __init__(self, **_kwargs):
            raise URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(sacrebleu.metrics.bleu, "BLEU", Offline)
    with pytest.raises(UserError, match=r"^--tokenize flores101: sacreBLEU could not download .* with a network$"):
        Metrics(tokenize="flores101").bleu()


def test_score_s_picture_never_replaces_what_it_reads_and_its_chrf_order_is_bounded(files):
    """--plot naming the hypotheses, a reference or the source wrote the PNG over it and exited 0;
    --chrf-word-order 10**20 made sacreBLEU take the machine's memory."""
    from click.testing import CliRunner

    from nmtkit.cli import main

    def score(*args):
        return CliRunner().invoke(main, ["score", *map(str, args)])

    for name in ("hyp.en", "ref.en", "src.de"):  # named as pictures are: only the suffix was checked
        (files / f"{name}.png").write_bytes((files / name).read_bytes())
    hyp, ref, src = files / "hyp.en.png", files / "ref.en.png", files / "src.de.png"
    kept = {p: p.read_bytes() for p in (hyp, ref, src)}
    for role, path in (("HYPOTHESES", hyp), ("-r", ref), ("--source", src)):
        r = score(hyp, "-r", ref, "--source", src, "--by-length", "--plot", path)
        assert r.exit_code == 2 and f"--plot {path}" in r.output and role in r.output, r.output
    assert {p: p.read_bytes() for p in kept} == kept
    r = score(hyp, "-r", ref, "--chrf-word-order", 10**20)
    assert r.exit_code == 2 and "--chrf-word-order" in r.output and "Traceback" not in r.output, r.output
    assert score(hyp, "-r", ref, "--chrf-word-order", 6, "--metrics", "chrf").exit_code == 0
