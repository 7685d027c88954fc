"""translate and score from the shell: raw text in, raw text out, with only a checkpoint."""

import json
import math
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.core.errors import UserError
from tests.conftest import EN, FR, needs_native_bf16


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_learned_sentences_come_back_detokenized(overfit):
    (overfit / "in.en").write_text("\n".join(EN[:5]) + "\n\n" + EN[0] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", overfit / "run" / "last.pt", overfit / "in.en", "-o", overfit / "out.fr")
    assert r.exit_code == 0, r.output
    out = (overfit / "out.fr").read_text(encoding="utf-8").split("\n")
    # Moses' French detokenizer writes French typography ("vide : il"); Segond writes "vide: il"
    out = [re.sub(r" ([:;!?])", r"\1", line) for line in out]
    assert out[:5] == FR[:5]
    assert out[5] == "" and out[6] == FR[0]  # empty line stays empty; order is kept
    r = invoke("score", overfit / "out.fr", "-r", overfit / "out.fr", "--output-format", "json")
    assert r.exit_code == 0 and '"bleu": 100.0' in r.output


def test_stdin_to_stdout_and_greedy(overfit):
    r = CliRunner().invoke(
        main, ["translate", "-m", str(overfit / "run" / "last.pt"), "--beam", "1"], input=EN[2] + "\n"
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == "Dieu dit : Que la lumière soit ! Et la lumière fut.\n"  # French typography


@pytest.mark.parametrize("content,message", [(b"", "is empty"), (b"ok\n\xff\xfe bad\n", "line 2 is not valid UTF-8")])
def test_bad_input_fails_cleanly_and_writes_nothing(overfit, tmp_path, content, message):
    (tmp_path / "in.en").write_bytes(content)
    r = invoke("translate", "-m", overfit / "run" / "last.pt", tmp_path / "in.en", "-o", tmp_path / "out.fr")
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out.fr").exists() and list(tmp_path.iterdir()) == [tmp_path / "in.en"]


def test_a_file_with_bad_utf8_far_down_is_refused_before_any_translation_reaches_stdout(overfit, tmp_path):
    """A file is counted before it is translated: the count checks its text, so stdout, which has no
    temporary name to drop, gets nothing (the first 1,000 lines came out before the error)."""
    lines = b"And God said, Let there be light.\n" * 1000  # a block of the search, translated before the next is read
    (tmp_path / "in.en").write_bytes(lines + b"bad \xff line\n" + lines)
    r = invoke("translate", "-m", overfit / "run" / "last.pt", tmp_path / "in.en", "--batch-size", 4)
    assert r.exit_code == 2 and "in.en: line 1001 is not valid UTF-8" in r.output and r.stdout == ""
    (tmp_path / "good.en").write_bytes(lines * 2)
    (tmp_path / "prefix.fr").write_bytes(lines + b"bad \xff line\n" + lines[:-34])  # as many lines
    r = invoke("translate", "-m", overfit / "run" / "last.pt", tmp_path / "good.en", "--prefix", tmp_path / "prefix.fr")
    assert r.exit_code == 2 and "prefix.fr: line 1001 is not valid UTF-8" in r.output and r.stdout == ""


def test_missing_or_corrupt_checkpoint(tmp_path):
    (tmp_path / "in.en").write_text("Amen.\n")
    r = invoke("translate", "-m", tmp_path / "none.pt", tmp_path / "in.en")
    assert r.exit_code == 2 and "no such checkpoint" in r.output
    (tmp_path / "bad.pt").write_bytes(b"PK\x03\x04 not really")
    r = invoke("translate", "-m", tmp_path / "bad.pt", tmp_path / "in.en")
    assert r.exit_code == 2 and "corrupt" in r.output


def test_a_checkpoint_whose_weights_bytes_are_damaged_is_refused(overfit, tmp_path):
    """A mapped load reads a weight's bytes as they are: without the archive's checksums, damaged
    weights translated (into nonsense, exit 0)."""
    data = bytearray(ckpt(overfit).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"A" * 64
    (tmp_path / "damaged.pt").write_bytes(bytes(data))
    (tmp_path / "in.en").write_text(EN[0] + "\n")
    for args in (("translate", "-m", tmp_path / "damaged.pt", tmp_path / "in.en"), ("info", tmp_path / "damaged.pt")):
        r = invoke(*args)
        assert r.exit_code == 2 and "do not match their checksum" in r.output, r.output


def test_an_output_that_is_an_input_or_another_output_is_refused_before_anything_is_written(overfit, tmp_path):
    src, model = tmp_path / "in.en", tmp_path / "model.pt"
    src.write_text(EN[0] + "\n")
    model.write_bytes(ckpt(overfit).read_bytes())
    before = {p: p.read_bytes() for p in (src, model)}
    for args, said in (
        (("-o", src), f"-o {src}: the same file as INPUT {src}"),
        (("--print-alignment", model), f"--print-alignment {model}: the same file as -m {model}"),
        (("-o", tmp_path / "x", "--alignments", tmp_path / "x"), f"--alignments {tmp_path / 'x'}: the same file as -o"),
    ):
        r = invoke("translate", "-m", model, src, *args)
        assert r.exit_code == 2 and said in r.output, r.output
    assert {p: p.read_bytes() for p in (src, model)} == before and not (tmp_path / "x").exists()
    nowhere = invoke("translate", "-m", model, src, "-o", os.devnull, "--print-alignment", os.devnull)
    assert nowhere.exit_code == 0, nowhere.output  # /dev/null is no file to replace
    with open(src, "rb") as stdin:  # '-': the file the shell put on stdin, test.en < test.en
        piped = subprocess.run(
            [sys.executable, "-m", "nmtkit", "translate", "-m", str(model), "-o", str(src)],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert piped.returncode == 2 and f"-o {src}: the same file as INPUT -" in piped.stderr, piped.stderr
    assert src.read_bytes() == before[src]
    both = CliRunner().invoke(main, ["translate", "-m", str(model), "-", "--prefix", "-"], input=EN[0] + "\n")
    assert both.exit_code == 2 and "INPUT and --prefix cannot both read stdin" in both.output
    both = CliRunner().invoke(
        main, ["translate", "-m", str(tmp_path / "absent.pt"), "--replace-unk", "--unk-dict", "-"]
    )
    assert both.exit_code == 2 and "INPUT and --unk-dict cannot both read stdin" in both.output  # before the model
    late = invoke("translate", "-m", tmp_path / "absent.pt", src, "--batch-size", 2, "--max-tokens", 24)
    assert late.exit_code == 2 and "two ways to cut batches" in late.output  # before any model is looked for


def test_score_several_references_and_mismatched_lengths(tmp_path):
    a, b = "Au commencement Dieu créa les cieux et la terre", "Dieu vit que la lumière était bonne"
    (tmp_path / "hyp").write_text(f"{a}\n{b}\n")
    (tmp_path / "r1").write_text(f"(1:1) {a}\nEt Dieu vit que la lumière fut\n")
    (tmp_path / "r2").write_text(f"Au commencement Dieu créa\n{b}\n")
    one = invoke("score", tmp_path / "hyp", "-r", tmp_path / "r1", "--output-format", "json")
    cleaned = invoke(
        "score", tmp_path / "hyp", "-r", tmp_path / "r1", "--clean", "verse-markers", "--output-format", "json"
    )
    both = invoke(
        "score",
        tmp_path / "hyp",
        "-r",
        tmp_path / "r1",
        "-r",
        tmp_path / "r2",
        "--output-format",
        "json",
        "--clean",
        "verse-markers",
    )
    import json

    b1, bc, b2 = (json.loads(r.output)["systems"][0]["bleu"] for r in (one, cleaned, both))
    assert 0 < b1 < bc < b2 == pytest.approx(100)  # each line now has an exact reference
    (tmp_path / "short").write_text("la lumière fut\n")
    r = invoke("score", tmp_path / "hyp", "-r", tmp_path / "short")
    assert r.exit_code == 2 and "has 1 line but" in r.output


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--metrics", "bleu", "--chrf-word-order", "2"], "--chrf-word-order is chrf's"),
        (["--metrics", "chrf,ter", "--lowercase"], "--lowercase is bleu and bleu-tok's"),
        (["--metrics", "bleu-tok", "--tokenize", "intl"], "--tokenize is bleu's"),
        (["--tokenized", "--tokenize", "intl"], "--tokenize is bleu's"),
        (["--lang", "de"], "--metrics leaves bleu-tok out"),
        (["--metrics", "bleu-tok", "--tokenized", "--lang", "de"], "--tokenized files are scored as they are"),
        (["--bucket-width", "5"], "add --by-length"),
        (["--bucket-width", "10"], "add --by-length"),  # the default, typed
        (["--split", "test"], "add --data"),
    ],
)
def test_score_refuses_an_option_of_what_it_does_not_compute(tmp_path, extra, said):
    """Each was taken without a word, and changed nothing."""
    hyp = tmp_path / "hyp.fr"  # a language the tokenized BLEU can read off its name
    hyp.write_text("Dieu vit que la lumière était bonne\n")
    r = invoke("score", hyp, "-r", hyp, *extra)
    assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output
    readers = {"--chrf-word-order": ",chrf", "--lowercase": ",bleu", "--tokenize": ",bleu"}
    reader = readers.get(extra[2]) if len(extra) > 2 else None
    if extra[0] == "--metrics" and reader:  # with the metric that reads it, the same option is taken
        named = extra[1] + reader
        assert invoke("score", hyp, "-r", hyp, "--metrics", named, *extra[2:]).exit_code == 0


def test_the_tokenized_bleu_refuses_a_reference_whose_name_gives_no_language(tmp_path):
    """English rules on French text counted other tokens without a word (ref.txt, stdin): the
    target language comes from the name (ref.fr) or --lang, or the score is refused."""
    hyp = tmp_path / "hyp.fr"
    hyp.write_text("Mr. Smith dit : la lumière était bonne.\n", encoding="utf-8")  # Mr. is one word in English
    for name in ("ref", "ref.txt", "ref.trg"):
        (tmp_path / name).write_text("Mr . Smith dit: la lumière était bonne.\n", encoding="utf-8")
        for extra in (["--metrics", "bleu-tok"], ["--by-length", "--source", hyp]):  # by length: both BLEUs
            r = invoke("score", hyp, "-r", tmp_path / name, *extra)
            assert r.exit_code == 2 and "give --lang" in r.output and r.output.count("\n") == 1, r.output
            asked = "--metrics bleu-tok" if extra[0] == "--metrics" else "--by-length"
            assert f"the tokenized BLEU ({asked}) tokenizes" in r.output  # what asked for it
            assert invoke("score", hyp, "-r", tmp_path / name, *extra, "--lang", "fr").exit_code == 0
        assert invoke("score", hyp, "-r", tmp_path / name).exit_code == 0  # sacreBLEU tokenizes itself
    (tmp_path / "ref.fr").write_text((tmp_path / "ref").read_text(encoding="utf-8"), encoding="utf-8")

    def bleu_tok(ref, *lang):
        out = invoke("score", hyp, "-r", tmp_path / ref, "--metrics", "bleu-tok", *lang, "--output-format", "json")
        return json.loads(out.stdout)["systems"][0]["bleu_tok"]

    assert bleu_tok("ref.fr") == bleu_tok("ref", "--lang", "fr") > bleu_tok("ref", "--lang", "en")
    both = invoke("score", hyp, "-r", tmp_path / "ref", "-r", tmp_path / "ref.fr", "--metrics", "bleu-tok")
    assert both.exit_code == 0, both.output  # the second reference's name gives the language


def ckpt(overfit):
    return overfit / "run" / "last.pt"


def test_translate_score_is_the_nll_that_score_computes(overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text("\n".join(EN[:5] + ["And God saw the earth."]) + "\n", encoding="utf-8")
    nbest = invoke("translate", "-m", ckpt(overfit), src, "--tokenized", "--beam", 4, "--nbest", 1)
    assert nbest.exit_code == 0, nbest.output
    fields = [line.split(" ||| ") for line in nbest.stdout.splitlines()]
    assert [int(f[0]) for f in fields] == list(range(6))
    (tmp_path / "hyp").write_text("".join(f[1] + "\n" for f in fields), encoding="utf-8")
    r = invoke(
        "score",
        tmp_path / "hyp",
        "-r",
        tmp_path / "hyp",
        "--tokenized",
        "--source",
        src,
        "-m",
        ckpt(overfit),
        "--output-format",
        "json",
    )
    assert r.exit_code == 0, r.output
    nll = json.loads(r.stdout)["systems"][0]["nll"]["sentences"]
    assert nll == pytest.approx([-float(f[2].removeprefix("F0= ")) for f in fields], abs=2e-3)  # 4 decimals printed


def test_beam_one_is_greedy(overfit, tmp_path):
    import numpy as np
    import torch

    from nmtkit.data.batching import pad
    from nmtkit.translate.search import greedy
    from nmtkit.translate.translator import Translator

    src = tmp_path / "src.en"
    lines = EN[:5] + ["God saw the darkness and the light."]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt(overfit), src, "--tokenized", "--beam", 1, "--device", "cpu")
    t = Translator.from_checkpoints(ckpt(overfit), "cpu")
    ids = [np.array(t.sides.src.ids(t.sides.src.tokens(line))) for line in lines]
    batch = pad(ids)
    with torch.no_grad():
        out = greedy(t.model, t.model.encode(batch, batch != 0))
    assert r.stdout.splitlines() == [" ".join(t.sides.tgt.vocab.decode(x)) for x in out.tokens]


def test_the_library_refuses_more_best_than_the_beam_holds_as_the_command_line_does(overfit):
    from nmtkit.core.errors import UserError
    from nmtkit.translate.settings import SearchConfig, TranslateOptions
    from nmtkit.translate.translator import Translator

    t = Translator.from_checkpoints(ckpt(overfit), "cpu")
    with pytest.raises(UserError, match="nbest 5 is more than beam 2 can give"):
        list(t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=2, nbest=5))))
    assert len(next(iter(t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=2, nbest=2))))).nbest) == 2
    units = len(t.sides.tgt.vocab)
    with pytest.raises(UserError, match=f"--beam {units + 1}: the model's target side has {units} units"):
        list(t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=units + 1))))  # memory for nothing
    assert next(iter(t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=units))))).text
    with pytest.raises(TypeError, match="not one str"):  # else each character a line
        list(t.translate(EN[0]))
    for nbest in (0, -1):  # an IndexError deep in the search
        with pytest.raises(UserError, match=f"nbest {nbest}: at least 1"):
            list(t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=2, nbest=nbest))))
    with pytest.raises(UserError, match="2 sources but 1 translations"):  # an IndexError
        t.force(EN[:2], FR[:1])
    with pytest.raises(TypeError, match="not one str"):
        t.force(EN[0], FR[0])
    assert len(t.force(EN[:2], FR[:2])) == 2


def test_the_library_refuses_lines_and_options_of_the_wrong_kind_in_a_line(overfit):
    """A None among the lines was dropped (an output short, the rest shifted); one str of constraints was
    phrases of a character; a non-str line failed deep in the text pipeline; the checks waited for
    the generator's first line."""
    import dataclasses

    import torch

    from nmtkit.core.errors import UserError
    from nmtkit.translate.settings import SearchConfig, TranslateOptions
    from nmtkit.translate.translator import Translator

    t = Translator.from_checkpoints(ckpt(overfit), torch.device("cpu"))  # a torch.device as its name
    for lines, said in (([EN[0], None, EN[1]], "line 2 is NoneType, not str"), ([b"x"], "line 1 is bytes")):
        with pytest.raises(TypeError, match=said):
            list(t.translate(lines))
    with pytest.raises(TypeError, match="the constraints of line 1 are str: give a list of phrases"):
        list(t.translate(EN[:1], constraints=["lumière"]))
    with pytest.raises(TypeError, match="line 1's constraint 1 is int"):
        list(t.translate(EN[:1], constraints=[[5]]))
    with pytest.raises(TypeError, match="--prefix takes a line per input line"):
        t.translate(EN[:1], prefixes="Et Dieu")
    with pytest.raises(TypeError, match="options is a SearchConfig"):
        t.translate(EN[:1], SearchConfig(beam=2))
    with pytest.raises(UserError, match="nbest 5 is more than beam 2"):  # before any line is read
        t.translate([], TranslateOptions(search=SearchConfig(beam=2, nbest=5)))
    with pytest.raises(TypeError, match="translation 1 is NoneType"):
        t.force(EN[:1], [None])
    with pytest.raises(ValueError, match="block 0: at least one line"):  # translated nothing
        t.translate(EN[:2], block=0)
    with pytest.raises(ValueError, match="no checkpoint given"):
        Translator.from_checkpoints([])
    for made in (lambda: SearchConfig(beam=2.5), lambda: TranslateOptions(batch_size="4")):
        with pytest.raises(UserError, match="not a whole number"):
            made()
    [best] = t.translate(EN[:1], TranslateOptions(search=SearchConfig(beam=3, nbest=3)))
    assert best.nbest[0] == dataclasses.replace(best, nbest=[]) and len(best.nbest) == 3
    assert len(dataclasses.asdict(best)["nbest"]) == 3  # no list that holds its owner


def test_nbest_lists_are_ordered_and_start_with_the_best(overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text(EN[1] + "\n\n" + EN[3] + "\n", encoding="utf-8")
    best = invoke("translate", "-m", ckpt(overfit), src, "--beam", 5).stdout.splitlines()
    for penalty in ("none", "average", "power", "gnmt"):
        r = invoke("translate", "-m", ckpt(overfit), src, "--beam", 5, "--nbest", 3, "--length-penalty", penalty)
        assert r.exit_code == 0, r.output
        rows = [line.split(" ||| ") for line in r.stdout.splitlines()]
        assert [int(f[0]) for f in rows] == [0, 0, 0, 1, 2, 2, 2]  # an empty line gets one empty entry
        assert rows[3][1] == ""
        for first in (0, 4):
            ranking = [float(f[3]) for f in rows[first : first + 3]]
            assert ranking == sorted(ranking, reverse=True)
            if penalty == "none":
                assert [float(f[2].removeprefix("F0= ")) for f in rows[first : first + 3]] == ranking
                assert rows[first][1] == best[first // 2]
    r = invoke("translate", "-m", ckpt(overfit), src, "--beam", 2, "--nbest", 3)
    assert r.exit_code == 2 and "more than --beam" in r.output


def unk_loving(overfit, tmp_path, boost=1000.0, flatten=1.0):
    """The overfit checkpoint with <unk> made more likely (by ``boost`` in its logit) and its
    output distributions flattened (weights times ``flatten``)."""
    from nmtkit import checkpoint

    c = checkpoint.load(ckpt(overfit))
    c.weights["W_o.bias"][1] += boost
    c.weights["W_o.weight"] *= flatten
    checkpoint.save(tmp_path / "unk.pt", c)
    return tmp_path / "unk.pt"


def test_no_unk_and_replace_unk(overfit, tmp_path):
    model = unk_loving(overfit, tmp_path)
    src = tmp_path / "src.en"
    src.write_text("God saw the light.\n", encoding="utf-8")
    plain = invoke("translate", "-m", model, src, "--tokenized", "--beam", 3, "--max-output-ratio", 0.5)
    assert set(plain.stdout.split()) == {"<unk>"}
    # every other word now costs ~1000 nats, so the best output without <unk> is the empty one
    free = invoke("translate", "-m", model, src, "--tokenized", "--beam", 3, "--no-unk", "--nbest", 3)
    texts = [line.split(" ||| ")[1] for line in free.stdout.splitlines()]
    assert free.exit_code == 0 and len(texts) == 3 and any(texts) and "<unk>" not in free.stdout
    copied = invoke(
        "translate", "-m", model, src, "--tokenized", "--beam", 3, "--max-output-ratio", 0.5, "--replace-unk"
    )
    words = copied.stdout.split()
    assert words and set(words) <= {"God", "saw", "the", "light", "."}
    (tmp_path / "dict").write_text("God Dieu\nsaw vit\nthe la\nlight lumière\n. .\n", encoding="utf-8")
    translated = invoke(
        "translate",
        "-m",
        model,
        src,
        "--tokenized",
        "--beam",
        3,
        "--max-output-ratio",
        0.5,
        "--replace-unk",
        "--unk-dict",
        tmp_path / "dict",
    )
    mapping = {"God": "Dieu", "saw": "vit", "the": "la", "light": "lumière", ".": "."}
    assert translated.stdout.split() == [mapping[w] for w in words]


@pytest.mark.parametrize(
    ("tokens", "want"),
    [(["<unk>", "et"], ["Bethlehemjudah", "et"]), (["▁<unk>", "▁et"], ["▁Bethlehemjudah", "▁et"])],
)
def test_an_unknown_word_becomes_the_whole_source_word_of_the_unit_it_attends_to(tokens, want):
    """A copied ``Beth@@`` had joined the next target word (``Bethet``); a dictionary is looked up
    by the whole word too."""
    import numpy as np

    from nmtkit.data.vocab import UNK
    from nmtkit.translate.unknown_words import replace_unk

    source, alpha = ["Beth@@", "lehem@@", "judah", "arrive"], np.eye(2, 4)  # <unk> reads unit 0, et unit 1
    assert replace_unk(tokens, [UNK, 9], source, alpha, None) == want
    table = {"Bethlehemjudah": "Bethléhem-Juda", "Beth@@": "wrong"}
    assert replace_unk(tokens, [UNK, 9], source, alpha, table)[0].lstrip("▁") == "Bethléhem-Juda"


def test_unknown_words_in_a_row_that_read_one_source_word_write_it_once():
    import numpy as np

    from nmtkit.data.vocab import UNK
    from nmtkit.translate.unknown_words import replace_unk

    source, alpha = ["Beth@@", "lehem", "et", "Beth@@", "el"], np.eye(3, 5)
    assert replace_unk(["<unk>", "<unk>", "et"], [UNK, UNK, 9], source, alpha, None) == ["Bethlehem", "", "et"]
    alpha = np.array([[1.0, 0, 0, 0, 0], [0, 0, 0, 1.0, 0]])  # two words, each read by its <unk>
    assert replace_unk(["<unk>", "<unk>"], [UNK, UNK], source, alpha, None) == ["Bethlehem", "Bethel"]


@pytest.mark.parametrize("spm", [False, True])
def test_a_word_written_once_for_unknown_words_in_a_row_is_one_word_of_the_links(spm):
    """The empty unit left by the second <unk> is part of the word the first wrote: --print-alignment
    had counted it a word of its own, shifting every later target word's number past the text's
    words, and linking both ways (whose backward model reads the text's words) stopped on a
    ValueError."""
    import numpy as np

    from nmtkit.align.links import word_alignment
    from nmtkit.align.words import word_attention
    from nmtkit.data.vocab import UNK
    from nmtkit.translate.unknown_words import replace_unk

    mark = "▁" if spm else ""
    source = ["▁Beth", "lehem", "▁went", "▁up"] if spm else ["Beth@@", "lehem", "went", "up"]
    tokens = [f"{mark}<unk>", "<unk>", f"{mark}monta"]
    alpha = np.eye(4, 5)  # each target unit, then </s>, reads the source unit of its row
    alpha[2] = [0, 0, 1, 0, 0]
    out = replace_unk(tokens, [UNK, UNK, 9], source, alpha, None, (spm, spm))
    assert [t.lstrip("▁") for t in out] == ["Bethlehem", "", "monta"]
    assert word_alignment(source, out, alpha) == [(0, 0), (1, 1)]  # "monta", the text's 2nd word, reads "went"
    table = word_attention([*source, "</s>"], [*out, "</s>"], alpha)
    assert [w.lstrip("▁") for w in table.target] == ["Bethlehem", "monta", "</s>"]


def test_an_unk_dictionary_is_word_pairs_and_a_sentence_file_is_refused(tmp_path):
    from nmtkit.translate.unknown_words import read_unk_dict

    (tmp_path / "lex").write_text("God Dieu 0.9\nGod Seigneur 0.1\n\nlight lumière\n", encoding="utf-8")
    assert read_unk_dict(tmp_path / "lex") == {"God": "Dieu", "light": "lumière"}  # the first listed wins
    (tmp_path / "text").write_text("light lumière\nAnd God said , Let there be light\n", encoding="utf-8")
    with pytest.raises(UserError, match="line 2 is not 'source-word target-word'"):
        read_unk_dict(tmp_path / "text")


def test_ensemble_of_a_model_with_itself_and_refusal_of_a_stranger(overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text("\n".join(EN[:3]) + "\n", encoding="utf-8")
    one = invoke("translate", "-m", ckpt(overfit), src, "--nbest", 1)
    two = invoke("translate", "-m", ckpt(overfit), "-m", overfit / "run" / "best.pt", src, "--nbest", 1)
    assert two.exit_code == 0, two.output
    texts = lambda r: [line.split(" ||| ")[1] for line in r.stdout.splitlines()]
    assert texts(one) == texts(two)
    from nmtkit import checkpoint

    c = checkpoint.load(ckpt(overfit))
    c.text.vocab["tgt"] = c.text.vocab["tgt"][:-1] + ["zzz"]
    checkpoint.save(tmp_path / "other.pt", c)
    r = invoke("translate", "-m", ckpt(overfit), "-m", tmp_path / "other.pt", src)
    assert r.exit_code == 2 and "cannot ensemble" in r.output


def test_alignment_file_and_align_plot(overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text(EN[0] + "\n\n" + EN[2] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt(overfit), src, "--alignments", tmp_path / "a.jsonl", "--beam", 3)
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records[0]["format"] == "nmtkit-alignments" and [x["line"] for x in records[1:]] == [1, 2, 3]
    for rec, out in zip(records[1:], r.stdout.splitlines()):
        if not out:
            assert rec["alignment"] == []
            continue
        a = rec["alignment"]
        assert len(a) == len(rec["target"]) and all(len(row) == len(rec["source"]) for row in a)
        assert all(abs(sum(row) - 1) < 1e-3 for row in a)
        assert rec["source"][-1] == rec["target"][-1] == "</s>"
    r = invoke("align-plot", tmp_path / "a.jsonl", "-n", "1,3", "-o", tmp_path / "fig.svg")
    assert r.exit_code == 0, r.output
    svg = (tmp_path / "fig-3.svg").read_text(encoding="utf-8")
    assert (tmp_path / "fig-1.svg").exists() and "lumière" in svg  # accented words kept as text
    for args, message in [
        (["-n", "7"], "has no sentence 7"),
        (["-n", "2"], "is empty"),
        (["-n", "1", "-o", tmp_path / "fig.jpg"], "png, svg, pdf"),
        (["-n", "x"], "line numbers"),
    ]:
        argv = ["align-plot", tmp_path / "a.jsonl", *args] + ([] if "-o" in args else ["-o", tmp_path / "f.png"])
        bad = invoke(*argv)
        assert bad.exit_code == 2 and message in bad.output, bad.output
    (tmp_path / "not.jsonl").write_text("hello\n")
    bad = invoke("align-plot", tmp_path / "not.jsonl", "-n", "1", "-o", tmp_path / "f.png")
    assert bad.exit_code == 2 and "not an alignment file" in bad.output
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "v9.jsonl").write_text(lines[0].replace('"version": 1', '"version": 9') + "".join(lines[1:]))
    bad = invoke("align-plot", tmp_path / "v9.jsonl", "-n", "1", "-o", tmp_path / "f.png")
    assert bad.exit_code == 2 and "alignment file version 9 is not supported" in bad.output, bad.output
    assert not (tmp_path / "f.png").exists()


def test_align_plot_forcing_a_reference(overfit, tmp_path):
    from tests.conftest import write_pair

    write_pair(tmp_path / "p", EN[:3], FR[:3])
    r = invoke(
        "align-plot",
        "-m",
        ckpt(overfit),
        "--source",
        tmp_path / "p.en",
        "--target",
        tmp_path / "p.fr",
        "-n",
        3,
        "-o",
        tmp_path / "forced.png",
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "forced.png").read_bytes()[:4] == b"\x89PNG"
    r = invoke(
        "align-plot",
        "-m",
        ckpt(overfit),
        "--source",
        tmp_path / "p.en",
        "--target",
        tmp_path / "p.fr",
        "-n",
        4,
        "-o",
        tmp_path / "x.png",
    )
    assert r.exit_code == 2 and "has no line 4" in r.output


def test_control_characters_never_shift_lines_and_a_long_line_translates(overfit):
    weird = [
        "God\x0bsaw\x0cthe\x1clight\x85.",
        "\x00\x1b[31mAmen\r.",
        "a\u2028b\u2029c",
        "",
        " ".join(["light"] * 1000),
    ]
    r = CliRunner().invoke(main, ["translate", "-m", str(ckpt(overfit)), "--beam", 2], input="\n".join(weird) + "\n")
    assert r.exit_code == 0, r.output
    assert r.stdout.count("\n") == len(weird) and r.stdout.split("\n")[3] == ""


def test_stdin_lines_are_translated_as_they_arrive(overfit):
    """A line written to the pipe comes back before the input ends."""
    import os
    import select
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "nmtkit", "translate", "-m", str(ckpt(overfit)), "--beam", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        proc.stdin.write((EN[3] + "\n").encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "no output while stdin is still open"
        first = proc.stdout.readline().decode()
        assert first.startswith("Dieu vit que la lumière")
        proc.stdin.write(b"Amen.\n")
        proc.stdin.close()
        assert proc.wait(60) == 0 and proc.stdout.read().count(b"\n") == 1
    finally:
        proc.kill()


def test_a_file_on_stdin_is_read_as_a_file_is(overfit, tmp_path):
    """`translate < file` took the stream's path: no length sorting, no progress bar, and a bad byte
    past the first 64 KiB read found after that read's translations had gone out. A file on stdin is
    counted first, as one given by name, from where the shell left it."""
    command = f"{sys.executable} -m nmtkit translate -m {ckpt(overfit)} --beam 2"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    lines = b"And God said, Let there be light.\n" * 3000
    (tmp_path / "bad.en").write_bytes(lines + b"bad \xff line\n")
    (tmp_path / "few.en").write_text("".join(x + "\n" for x in EN[:4]), encoding="utf-8")
    bad, rest = (
        subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        for script in (f"{command} < bad.en", f"{{ head -1 > /dev/null; {command}; }} < few.en")
    )
    assert bad.returncode == 2 and "<stdin>: line 3001 is not valid UTF-8" in bad.stderr and bad.stdout == ""
    named = invoke("translate", "-m", ckpt(overfit), tmp_path / "few.en", "--beam", 2)
    assert rest.returncode == 0 and named.exit_code == 0, rest.stderr
    assert rest.stdout.splitlines() == named.stdout.splitlines()[1:]


def test_score_by_length_no_unk_bootstrap_and_corpus_nll(overfit, tmp_path):
    src, ref = tmp_path / "t.en", tmp_path / "t.fr"
    from tests.conftest import write_pair

    write_pair(tmp_path / "t", EN[:5] + ["God saw the xylophone."], FR[:5] + ["Dieu vit le xylophone."])
    (tmp_path / "a").write_text("".join(x + "\n" for x in FR[:5] + ["Dieu vit la lumière."]), encoding="utf-8")
    (tmp_path / "b").write_text("".join(x + "\n" for x in FR[1:5] + ["Amen.", "Dieu."]), encoding="utf-8")
    r = invoke(
        "score",
        tmp_path / "a",
        tmp_path / "b",
        "--name",
        "good",
        "--name",
        "bad",
        "-r",
        ref,
        "--source",
        src,
        "--by-length",
        "--bucket-width",
        5,
        "--plot",
        tmp_path / "len.png",
        "--no-unk-vocab",
        overfit / "vocab-kept",
        "--bootstrap",
        200,
        "--output-format",
        "json",
        "--metrics",
        "bleu,bleu-tok",
    )
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    rows = res["by_length"]["rows"]
    assert sum(row["sentences"] for row in rows) == 6
    assert [(row["lo"], row["hi"]) for row in rows] == sorted({(row["lo"], row["hi"]) for row in rows})
    good, bad = res["systems"]
    assert good["no_unk"]["sentences"] == 5 and good["no_unk"]["bleu"] == pytest.approx(100)  # xylophone left out
    assert good["bleu"] > bad["bleu"] and "bleu_tok" in good
    assert res["bootstrap"]["systems"][1]["p_value"] < 0.05
    for key in ("bootstrap", "bootstrap_tok"):  # sacreBLEU, then the paper's BLEU
        base, other = res[key]["systems"]
        assert base["p_value"] is None and other["p_value"] < 0.05
        assert other["mean"] - other["ci95"] <= other["bleu"] <= other["mean"] + other["ci95"] + 1e-9
        assert base["ci95"] > 0 and base["mean"] - base["ci95"] > other["mean"] + other["ci95"]
    assert res["bootstrap_tok"]["systems"][0]["bleu"] == pytest.approx(good["bleu_tok"])
    assert (tmp_path / "len.png").read_bytes()[:4] == b"\x89PNG"
    text = invoke("score", tmp_path / "a", "-r", ref, "--source", src, "--by-length")
    from nmtkit.evaluate.score import SACREBLEU_LABEL, TOKENIZED_LABEL

    assert f"{SACREBLEU_LABEL} by source length" in text.stdout
    assert f"{TOKENIZED_LABEL} by source length" in text.stdout
    unsure = unk_loving(overfit, tmp_path, boost=0.0, flatten=0.1)  # NLLs well above float32 rounding
    nll = invoke(
        "score",
        "-m",
        unsure,
        "--data",
        overfit / "bin-kept",
        "--split",
        "valid",
        "--output-format",
        "json",
        "--device",
        "cpu",
    )
    assert nll.exit_code == 0, nll.output
    corpus = json.loads(nll.stdout)["corpus_nll"]
    from nmtkit.translate.translator import Translator

    forced = Translator.from_checkpoints(unsure, "cpu").force(EN, FR)  # valid = these pairs
    kept = [f for f in forced if f.source_tokens and f.target_tokens]  # "[]" cleans to nothing
    assert corpus["sentences"] == len(kept) == 7
    assert corpus["nll"] * corpus["sentences"] == pytest.approx(-sum(f.score for f in kept), rel=1e-4)
    assert corpus["nll"] > 1
    assert corpus["perplexity"] == pytest.approx(math.exp(corpus["nll_token"]))
    for args, message in [
        (["score", tmp_path / "a", "-r", ref, "--by-length"], "needs the source"),
        (["score", tmp_path / "a", "-r", ref, "--no-unk-vocab", ckpt(overfit)], "--no-unk-vocab needs the source"),
        (["score", tmp_path / "a", "-r", ref, "--plot", tmp_path / "x.png"], "add --by-length"),
        (["score", tmp_path / "a", "-r", ref, "--bootstrap", 10], "two or more"),
        (["score", "-m", ckpt(overfit), "--data", overfit / "bin-kept", "--split", "dev"], "no split 'dev'"),
    ]:
        bad = invoke(*args)
        assert bad.exit_code == 2 and message in bad.output, bad.output


@pytest.mark.parametrize(
    "stdin,message",
    [(b"", "<stdin>: is empty"), (b"Amen.\n\x89PNG\r\n\x1a\n\x00\xff\xd8 garbage\n", "line 2 is not valid UTF-8")],
)
def test_bad_stdin_is_one_line_and_exit_2(overfit, stdin, message):
    r = CliRunner().invoke(main, ["translate", "-m", str(ckpt(overfit))], input=stdin)
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) == 1


@needs_native_bf16
def test_bf16_translates_the_memorized_sentences_alike(overfit, tmp_path):
    src = tmp_path / "src.en"
    src.write_text("\n".join(EN[:5]) + "\n", encoding="utf-8")
    fp32 = invoke("translate", "-m", ckpt(overfit), src, "--beam", 3)
    bf16 = invoke("translate", "-m", ckpt(overfit), src, "--beam", 3, "--bf16")
    assert bf16.exit_code == 0, bf16.output
    assert bf16.stdout == fp32.stdout


def test_no_unk_subset_from_a_checkpoint_and_pdf_heatmap(overfit, tmp_path):
    from tests.conftest import write_pair

    write_pair(tmp_path / "t", EN[:3] + ["God saw the xylophone."], FR[:3] + ["Dieu vit le xylophone."])
    r = invoke(
        "score",
        tmp_path / "t.fr",
        "-r",
        tmp_path / "t.fr",
        "--source",
        tmp_path / "t.en",
        "--no-unk-vocab",
        ckpt(overfit),
        "--output-format",
        "json",
    )
    assert json.loads(r.stdout)["systems"][0]["no_unk"]["sentences"] == 3
    r = invoke(
        "align-plot",
        "-m",
        ckpt(overfit),
        "--source",
        tmp_path / "t.en",
        "--target",
        tmp_path / "t.fr",
        "-n",
        "1",
        "-o",
        tmp_path / "a.pdf",
    )
    assert r.exit_code == 0 and (tmp_path / "a.pdf").read_bytes()[:4] == b"%PDF"


def test_a_line_of_megabytes_is_cut_before_it_is_tokenized_and_keeps_its_first_units(capsys):
    """A 30 MB line went whole through the tokenizer and BPE: 30 s and 915 MB for 250 units."""
    from nmtkit.translate.cropping import cropped_tokens

    class Side:  # a unit a word, or a piece of at most 8 characters of one
        given: list[int] = []

        def tokens(self, line, tokenized):
            self.given.append(len(line))
            return [w[i : i + 8] for w in line.split() for i in range(0, len(w), 8)]

    side = Side()
    for line, first in (
        (" ".join(f"w{i}" for i in range(2_000_000)), [f"w{i}" for i in range(250)]),
        ("x" * 10_000_000, ["x" * 8] * 250),  # no space at all
        ("a b  c", ["a", "b", "c"]),
    ):
        assert cropped_tokens(side, line, False, 250, 7) == first
        assert side.given[-1] <= 250 * 100 + 10_000
    assert capsys.readouterr().err.splitlines() == [
        "warning: line 7: 16,888,889 characters; translating its first 250 subword units (--crop-len)",
        "warning: line 7: 10,000,000 characters; translating its first 250 subword units (--crop-len)",
    ]
    assert cropped_tokens(side, "a " * 300, False, 0, 1) == ["a"] * 300  # 0: no limit


def test_a_line_over_max_length_is_cropped_with_a_warning_and_still_gives_one_line(overfit, tmp_path):
    src = tmp_path / "long.en"
    src.write_text(f"{EN[0]}\n{'light ' * 5000}\n{EN[2]}\n", encoding="utf-8")  # 5,000 units in line 2
    r = invoke("translate", "-m", ckpt(overfit), src, "--beam", 12)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert "line 2: 30,000 characters; translating its first 250 subword units (--crop-len)" in r.stderr
    # the search was bounded by the cropped source: at most 2 × 250 + 10 output words
    assert len(lines[1].split()) <= 2 * 250 + 10
    assert (
        lines[0]
        == CliRunner()
        .invoke(main, ["translate", "-m", str(ckpt(overfit)), "--beam", "12"], input=EN[0] + "\n")
        .stdout.strip()
    )
    short = invoke("translate", "-m", ckpt(overfit), src, "--crop-len", 3)
    assert short.exit_code == 0 and short.stderr.count("first 3 (--crop-len)") == 2
    assert "line 2: 30,000 characters; translating its first 3 subword units" in short.stderr


@pytest.fixture(scope="module")
def encdec(tmp_path_factory):
    """An RNNencdec checkpoint (no attention), two updates on the test corpus."""
    from nmtkit.models.config import model_config
    from nmtkit.train.config import TrainConfig
    from nmtkit.train.loop import train
    from tests.conftest import write_pair
    from tests.test_corpus import make_corpus

    tmp = tmp_path_factory.mktemp("encdec")
    for split in ("train", "valid", "test"):
        write_pair(tmp / "raw" / split, EN, FR)
    make_corpus(tmp / "raw", tmp)
    model = model_config("rnnencdec", emb=8, hidden=8, maxout=8)
    cfg = TrainConfig(optimizer="adam", batch_size=4, max_updates=2, valid_every=1000, threads=1, device="cpu")
    train(tmp / "bin", tmp / "run", model, cfg)
    return tmp / "run" / "last.pt"


@pytest.mark.parametrize(
    "asked, message",
    [
        (["--alignments", "A"], "--alignments reads the attention"),
        (["--print-alignment", "A"], "--print-alignment reads the attention"),
        (["--replace-unk"], "--replace-unk puts the most attended source word in place: this model has no"),
    ],
)
def test_what_reads_the_attention_is_refused_for_a_model_without_one(encdec, tmp_path, asked, message):
    from tests.test_cli import one_error_line

    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    asked = [str(tmp_path / a) if a == "A" else a for a in asked]
    one_error_line(invoke("translate", "-m", encdec, tmp_path / "in.en", "-o", tmp_path / "out.fr", *asked), message)
    assert not (tmp_path / "out.fr").exists() and not (tmp_path / "A").exists()


@pytest.mark.parametrize(
    "command, message",
    [
        (["align", "--source", "S", "--target", "T"], "align reads the attention"),
        (["align-plot", "--source", "S", "--target", "T", "-n", 1, "-o", "P.png"], "align-plot -m reads the attention"),
    ],
)
def test_forced_alignment_is_refused_for_a_model_without_attention(encdec, tmp_path, command, message):
    """They wrote every word linked to the first (the attention of a model without one: zeros)."""
    from tests.test_cli import one_error_line

    (tmp_path / "S").write_text(EN[0] + "\n", encoding="utf-8")
    (tmp_path / "T").write_text(FR[0] + "\n", encoding="utf-8")
    command = [str(tmp_path / a) if a in ("S", "T", "P.png") else a for a in command]
    one_error_line(invoke(command[0], "-m", encdec, *command[1:]), message)
    assert not list(tmp_path.glob("P*"))


def test_force_in_python_refuses_to_align_by_a_model_without_attention_and_scores_without(encdec):
    """Translator.force gave such a model's maps, zeros, which word_alignment linked to word 0."""
    from nmtkit.core.errors import UserError
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints(encdec, "cpu")
    with pytest.raises(UserError, match="aligns by the attention, which this model has none of: aligned=False"):
        translator.force([EN[0]], [FR[0]])
    [f] = translator.force([EN[0]], [FR[0]], aligned=False)
    assert f.score < 0 and f.attention.shape == (0, 0)


def test_jsonl_of_a_model_without_attention_has_no_links(encdec, tmp_path):
    (tmp_path / "in.en").write_text(EN[0] + "\n" + EN[1] + "\n", encoding="utf-8")
    r = invoke("translate", "-m", encdec, tmp_path / "in.en", "--output-format", "jsonl")
    assert r.exit_code == 0, r.output
    assert [json.loads(line)["alignment"] for line in r.stdout.splitlines()] == ["", ""]


def test_progress_is_told_batch_by_batch_before_a_block_comes_out(overfit):
    """A file's bar advanced only as the lines of a 1,000-line block came out, all at once at its
    end (a rate of 249,051 sentences/s for 50 lines)."""
    from nmtkit.translate.settings import TranslateOptions
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu")
    told, came = [], []
    lines = [*EN[:5], "", EN[0]]
    for t in translator.translate(lines, TranslateOptions(batch_size=2), done=told.append):
        came.append((t.text, sum(told)))
    empty, *batches = told  # the empty line first: it is in no batch
    assert sum(told) == len(lines) and len(batches) >= 3 and max(batches) <= 2 and empty == 1
    assert came[0][1] == len(lines), "every batch is told before the block's first line comes out"


def _walked(translator, source_tokens, tokens):
    """Each of ``tokens``' log-probability and </s>'s, walking them through the model's step."""
    import numpy as np
    import torch

    from nmtkit.data.batching import pad
    from nmtkit.data.vocab import BOS, EOS, PAD

    sides = translator.sides
    src = pad([np.asarray(sides.src.ids(source_tokens), dtype=np.int64)])
    ids = [*sides.tgt.ids(tokens), EOS]
    with torch.inference_mode():
        enc = translator.model.encode(src, src != PAD)
        state, y, out = translator.model.init_state(enc), torch.tensor([BOS]), []
        for word in ids:
            logp, state, _ = translator.model.step(y, state, enc)
            out.append(float(logp[0, word]))
            y = torch.tensor([word])
    return out


@pytest.mark.parametrize("how", ["beam", "nbest", "sampling"])
def test_token_scores_are_each_units_log_probability_and_sum_to_the_score(overfit, how):
    """One score per subword unit and one for </s>: what walking the output through the model's
    step gives, summing to the line's score, for the best, every n-best entry, and samples."""
    from nmtkit.translate.settings import SearchConfig, TranslateOptions
    from nmtkit.translate.translator import Translator

    translator = Translator.from_checkpoints(overfit / "run" / "last.pt", "cpu")
    search = {
        "beam": SearchConfig(beam=3),
        "nbest": SearchConfig(beam=4, nbest=3),
        "sampling": SearchConfig(sampling=True, nbest=2, seed=3, temperature=1.5),
    }[how]
    out = translator.translate([EN[0], EN[3]], TranslateOptions(search=search, token_scores=True))
    seen = 0
    for t in out:
        for h in t.nbest or [t]:
            assert len(h.token_scores) == len(h.tokens) + 1
            assert sum(h.token_scores) == pytest.approx(h.score, abs=1e-4)
            assert h.token_scores == pytest.approx(_walked(translator, h.source_tokens, h.tokens), abs=1e-4)
            seen += 1
    assert seen == 2 * search.nbest
    assert next(translator.translate([EN[0]], TranslateOptions(search=search))).token_scores is None  # not asked


def test_token_scores_are_written_in_jsonl_with_the_units_and_refused_elsewhere(overfit, tmp_path):
    from tests.test_cli import one_error_line

    (tmp_path / "in.en").write_text(EN[0] + "\n\n", encoding="utf-8")
    model = overfit / "run" / "last.pt"
    r = invoke("translate", "-m", model, tmp_path / "in.en", "--output-format", "jsonl", "--token-scores", "--nbest", 2)
    assert r.exit_code == 0, r.output
    first, empty = (json.loads(line) for line in r.stdout.splitlines())
    assert len(first["token_scores"]) == len(first["tokens"]) + 1 and first["tokens"]
    assert sum(first["token_scores"]) == pytest.approx(first["score"], abs=1e-3)
    assert all(len(h["token_scores"]) == len(h["tokens"]) + 1 for h in first["nbest"])
    assert (empty["tokens"], empty["token_scores"], empty["score"]) == ([], [], 0.0)  # not searched
    plain = invoke("translate", "-m", model, tmp_path / "in.en", "--output-format", "jsonl").stdout.splitlines()
    assert "token_scores" not in json.loads(plain[0]) and "tokens" not in json.loads(plain[0])
    one_error_line(invoke("translate", "-m", model, tmp_path / "in.en", "--token-scores"), "--output-format jsonl")


def test_a_score_that_is_not_finite_is_null_in_jsonl_which_json_cannot_write_otherwise():
    from nmtkit.translate.io import json_record
    from nmtkit.translate.translation import Translation

    record = json_record(1, Translation("", [], [], float("-inf"), float("-inf")))
    assert record["score"] is None and record["ranking"] is None
    json.dumps(record, allow_nan=False)  # what a strict reader (JavaScript's JSON.parse) reads
    assert json_record(1, Translation("a", ["a"], ["a"], -1.23456, -0.5))["score"] == -1.2346


def test_score_under_a_model_warns_of_files_named_as_the_other_direction(overfit, tmp_path):
    """As translate warns: scored under an en→fr model, fr source text and en outputs are most
    likely the other direction's model, or the files swapped."""
    (tmp_path / "src.fr").write_text(EN[0] + "\n")
    (tmp_path / "hyp.en").write_text(FR[0] + "\n")
    r = invoke(
        "score", tmp_path / "hyp.en", "-r", tmp_path / "hyp.en", "-m", ckpt(overfit), "--source", tmp_path / "src.fr"
    )
    assert r.exit_code == 0, r.output
    assert "src.fr is named as fr text, but" in r.stderr and "hyp.en is named as en text, but" in r.stderr


def test_a_no_unk_subset_left_empty_says_so_and_the_vocabularys_direction_is_checked(overfit, tmp_path):
    """Under the other direction's vocabularies every sentence has an unknown word: the report said
    BLEU nan and its JSON held NaN, which no strict reader takes."""
    src, hyp = tmp_path / "src.fr", tmp_path / "hyp.en"  # named as the fr→en direction's
    src.write_text("xylophone\nzzz xylophone\n", encoding="utf-8")
    hyp.write_text(f"{FR[0]}\n{FR[1]}\n", encoding="utf-8")
    args = ("score", hyp, "-r", hyp, "--source", src, "--no-unk-vocab", ckpt(overfit), "--metrics", "bleu")
    r = invoke(*args, "--output-format", "json")
    assert r.exit_code == 0, r.output
    (system,) = json.loads(r.stdout)["systems"]
    assert system["no_unk"] == {"sentences": 0} and "NaN" not in r.stdout
    assert "src.fr is named as fr text, but" in r.stderr and "hyp.en is named as en text, but" in r.stderr
    text = invoke(*args)
    assert (
        "No-UNK subset (0 sentences): none to score: every sentence has a word outside the vocabularies" in text.stdout
    )


def test_a_checkpoint_whose_pickle_is_cut_short_inside_a_whole_archive_is_refused(overfit, tmp_path):
    """The archive whole and its checksums right, but its pickle cut short (written again so):
    torch's reader raised struct.error, which came out as a traceback."""
    import zipfile

    (tmp_path / "in.en").write_text(EN[0] + "\n")
    for share in (0.02, 0.05, 0.2, 0.5, 0.8):  # cut within a record's header, within its values, ...
        with zipfile.ZipFile(ckpt(overfit)) as good, zipfile.ZipFile(tmp_path / "cut.pt", "w") as cut:
            for item in good.infolist():
                data = good.read(item)
                cut.writestr(item, data[: int(len(data) * share)] if item.filename.endswith("data.pkl") else data)
        for args in (("translate", "-m", tmp_path / "cut.pt", tmp_path / "in.en"), ("info", tmp_path / "cut.pt")):
            r = invoke(*args)
            assert r.exit_code == 2 and "truncated or corrupt checkpoint" in r.output, (share, r.output)
            assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--min-output-len", "99999999999999999999"],  # past int64: OverflowError at the search
        ["--sampling", "--temperature", "1e-40"],  # log p / T past float32: draws out of the vocabulary
        ["--sampling", "--temperature", "1e39"],
        ["--coverage-penalty", "3.5e38"],  # past float32: every rank NaN, outputs to the limit
        ["--sampling", "--nbest", "99999999999999999999"],  # past int64: a traceback
    ],
)
def test_a_setting_past_what_the_search_can_compute_is_refused_in_one_line(overfit, tmp_path, args):
    source = tmp_path / "s.en"
    source.write_text(EN[0] + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["translate", "-m", str(overfit / "run" / "last.pt"), str(source), *args])
    assert r.exit_code == 2 and "is not in the range" in r.output and len(r.output.strip().splitlines()) == 1, r.output
