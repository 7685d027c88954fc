"""The command line in-process: modes, help, and every bad input → one line, exit 2, nothing left."""

import inspect
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nmtkit.cli import COMMANDS, main

MODULES = Path(__file__).resolve().parent.parent / "nmtkit" / "cli" / "commands"

SPLITS = ["-s", "en", "-t", "fr"]


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def one_error_line(result, match):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], result.stderr
    assert "Traceback" not in result.output


def text_mode(raw, out, *extra):
    return run(
        "preprocess",
        *SPLITS,
        "--train",
        raw / "train",
        "--valid",
        raw / "valid",
        "--test",
        raw / "test",
        "-d",
        out,
        "-j",
        1,
        *extra,
    )


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_shows_the_command_s_usage_its_text_and_every_option(cmd):
    r = CliRunner().invoke(main, [cmd, "--help"], terminal_width=10**4)
    command = main.commands[cmd]
    assert r.exit_code == 0 and r.output.startswith(f"Usage: nmtkit {cmd} ")
    assert command.get_short_help_str(limit=10**6) in " ".join(r.output.split())
    shown = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    assert shown and all(any(f in r.output for f in p.opts) for p in shown)


def test_every_command_is_a_module_of_its_own_named_in_the_list():
    modules = {p.stem for p in MODULES.glob("*.py")} - {"__init__"}
    assert {name.replace("-", "_") for name in COMMANDS} == modules
    assert set(main.commands) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_group_reads_each_command_s_help_from_its_docstring(name):
    """One source: the group lists a command by the docstring of its function, read from the
    source without importing it, which is the help click gives the command itself."""
    command = main.commands[name]
    assert command.name == name and not command.hidden
    assert main.summary(name) == inspect.cleandoc(command.help)


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_the_group_s_help_is_what_click_makes_of_the_commands_themselves(width):
    eager = click.Group(main.name, commands=[main.commands[n] for n in COMMANDS], params=main.params, help=main.help)
    settings = {**main.context_settings, "terminal_width": width}
    made = [g.get_help(click.Context(g, info_name="nmtkit", **settings)) for g in (main, eager)]
    assert made[0] == made[1]


def test_nmtkit_alone_gives_its_help_not_an_error_line():
    r = CliRunner().invoke(main, [])
    assert r.exit_code == 2 and r.output.startswith("Usage: nmtkit [OPTIONS] COMMAND") and "error:" not in r.output
    assert r.output.strip() == CliRunner().invoke(main, ["--help"]).output.strip()


def test_the_group_s_overview_places_every_command():
    import re

    overview = run("--help").output.split("Options:")[0]
    named = set(
        re.findall(r"[a-z][a-z-]+", " ".join(line.split(":", 1)[1] for line in overview.splitlines() if ":" in line))
    )
    assert set(COMMANDS) <= named, f"not in the overview: {sorted(set(COMMANDS) - named)}"


def test_completing_a_command_s_name_gives_its_short_help():
    ctx = click.Context(main, info_name="nmtkit")
    items = main.shell_complete(ctx, "score")
    assert [(i.value, i.help) for i in items] == [
        (n, main.commands[n].get_short_help_str()) for n in ("score", "score-align")
    ]


@pytest.mark.parametrize(
    "args,match",
    [
        (["align-plot", "x"], "Missing option '-n'"),
        (["translate", "--beam", "0"], "Invalid value for '--beam'"),
        # numpy's and torch's seeds: a traceback once, after the save directory was made
        (["train", "x", "--save-dir", "s", "--seed", "-5"], "Invalid value for '--seed': -5 is not in the range"),
        (["train", "x", "--save-dir", "s", "--seed", str(2**70)], "Invalid value for '--seed'"),
        (["score", "--bogus"], "No such option '--bogus'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["train", "--save-dir", "x"], "Missing the corpus to train on: DATA_BIN or --data DATA_BIN."),
        (["train", "a", "--data", "b", "--save-dir", "x"], "'[DATA_BIN]' (a) and '--data' (b) give two values"),
        (["train", "--data", "b", "a", "--save-dir", "x"], "'[DATA_BIN]' (a) and '--data' (b) give two values"),
        # the parser's own error, which comes without a command: the line still names it
        (["translate", "-m", "x.pt", "--beam"], "nmtkit translate: error: Option '--beam' requires an argument"),
        # OpenNMT-py's spellings, which click would read as -m odel, or an unknown -b
        (["translate", "-model", "x.pt"], "nmtkit translate: error: -model: a word option takes two dashes: --model"),
        (["translate", "-m", "x.pt", "-beam_size", "5"], "error: -beam_size: a word option takes two dashes (see"),
    ],
)
def test_usage_errors_are_one_line(args, match):
    one_error_line(run(*args), match)


def test_a_commands_q_holds_for_it_alone_in_the_process(capsys):
    """After a command run with -q in the same process (a test's, a notebook's), the library's own
    warnings (word_align's, called directly) were silent."""
    from nmtkit.core.console import log

    assert run("tokenize", "-l", "en", "-q", input="hello world\n").exit_code == 0
    log("warning: still said")
    assert "warning: still said" in capsys.readouterr().err


def test_a_short_option_with_its_value_attached_and_an_options_dashed_value_are_no_word_options():
    r = run("tokenize", "-len", "-q", input="hello world\n")  # -l en
    assert r.exit_code == 0 and r.stdout == "hello world\n", r.output
    r = run("translate", "-m", "x.pt", "--prefix", "-abc")  # a file named -abc, which is not there
    assert r.exit_code == 2 and "-abc: no such file" in r.output and "word option" not in r.output


@pytest.mark.parametrize(
    "args",
    [
        ["preprocess", "-s", "en", "-t", "fr", "--train", "t", "-o", "a", "-d", "b"],
        ["word-align", "-s", "en", "-t", "fr", "--train", "t", "--suffix", "a", "--align-suffix", "b"],
    ],
)
def test_an_old_spelling_and_the_new_one_with_two_values_are_refused(args):
    r = run(*args)
    *warned, error = r.output.strip().splitlines()
    assert r.exit_code == 2 and "(a) and " in error and "(b) give two values: give one" in error
    assert len(warned) == 1 and "is deprecated" in warned[0]


def test_a_links_suffix_with_a_slash_is_refused(tmp_path):
    """It wrote train.../x beside another directory's files, exit 0."""
    r = run("word-align", "-s", "en", "-t", "fr", "--train", tmp_path / "train", "--align-suffix", "../x")
    one_error_line(r, "--align-suffix '../x': a file name's suffix, without '/'")
    assert list(tmp_path.iterdir()) == []
    same = run("word-align", "-s", "en", "-t", "en", "--train", tmp_path / "train")  # preprocess refuses it too
    one_error_line(same, "source and target language are both 'en'")


def test_word_align_refuses_text_that_preprocess_did_not_write(tmp_path):
    """Raw text was aligned over its own words, which preprocess --align-suffix, tokenizing, counts otherwise."""
    for lang, line in (("en", "Hello, world!"), ("fr", "Bonjour, le monde !")):
        (tmp_path / f"raw.{lang}").write_text(line + "\n", encoding="utf-8")
    r = run("word-align", "-s", "en", "-t", "fr", "--train", tmp_path / "raw")
    one_error_line(
        r, f"{tmp_path / 'preprocess.json'}: missing; word-align reads the Moses tokens of 'nmtkit preprocess'"
    )
    assert not (tmp_path / "raw.links").exists()
    one_error_line(run("word-align", "-s", "en", "-t", "fr", "--train", tmp_path / "nothing"), "nothing.en")


def test_stream_mode_one_line_out_per_line_in():
    r = run("tokenize", "-l", "en", "--clean", "bible", input="Don`t panic [now].\n\nAmen. \n")
    assert r.exit_code == 0
    assert r.stdout == "Don 't panic now .\n\nAmen .\n"
    assert "brackets 1" in r.stderr and "quotes 1" in r.stderr


def test_full_data_pipeline_and_summary(raw, tmp_path):
    assert text_mode(raw, tmp_path / "clean").exit_code == 0
    r = run("build-vocab", *SPLITS, "--train", tmp_path / "clean" / "train", "-d", tmp_path / "vocab")
    assert r.exit_code == 0 and "covering 100.00%" in r.stderr
    r = run(
        "preprocess",
        *SPLITS,
        "--train",
        tmp_path / "clean" / "train",
        "--test",
        tmp_path / "clean" / "test",
        "--vocab",
        tmp_path / "vocab",
        "-d",
        tmp_path / "bin",
        "-j",
        1,
    )
    assert r.exit_code == 0, r.output
    assert "OOV en" in r.stderr and "duplicate" in r.stderr and r.stdout == ""
    assert (tmp_path / "bin" / "manifest.json").exists()


def test_the_old_dash_o_for_a_directory_still_works_and_says_to_use_dash_d(raw, tmp_path):
    """-o is a file everywhere (translate, align, average...); a directory is -d/--dest-dir."""
    r = run("preprocess", *SPLITS, "--test", raw / "test", "-o", tmp_path / "clean", "-j", 1)
    assert r.exit_code == 0, r.output
    assert "nmtkit preprocess: warning: -o/--out is deprecated, use -d/--dest-dir" in r.stderr
    assert (tmp_path / "clean" / "test.en").exists()
    one_error_line(run("build-vocab", *SPLITS, "--train", tmp_path / "clean" / "test"), "Missing option '-d'")


def test_mismatched_line_counts(raw, tmp_path):
    (raw / "train.fr").write_text("only one line\n")
    one_error_line(text_mode(raw, tmp_path / "out"), "lines 2-8 have no partner")
    assert not (tmp_path / "out").exists()  # refused before anything is written, the directory included


def test_one_file_as_both_sides_is_refused(raw, tmp_path):
    """train.fr a link to train.en (a copy-paste slip) made a corpus of each sentence paired with itself."""
    (raw / "train.fr").unlink()
    (raw / "train.fr").symlink_to(raw / "train.en")
    one_error_line(text_mode(raw, tmp_path / "out"), "train.fr and ")
    assert not (tmp_path / "out").exists()


def test_invalid_utf8_names_file_and_line(raw, tmp_path):
    data = (raw / "valid.en").read_bytes().split(b"\n")
    data[1] = b"caf\xe9"
    (raw / "valid.en").write_bytes(b"\n".join(data))
    r = text_mode(raw, tmp_path / "out")
    one_error_line(r, "valid.en: line 2 is not valid UTF-8")
    assert not (tmp_path / "out").exists()  # train was done, but nothing is kept


def test_empty_and_missing_files(raw, tmp_path):
    one_error_line(run("preprocess", *SPLITS, "--train", raw / "nope", "-d", tmp_path / "o"), "no such file")
    (raw / "test.en").write_text("")
    (raw / "test.fr").write_text("")
    one_error_line(text_mode(raw, tmp_path / "out"), "test.en: is empty")
    one_error_line(run("tokenize", "-l", "en", input=""), "<stdin>: is empty")


def test_a_train_split_filtered_to_nothing_is_refused_and_writes_nothing(raw, tmp_path):
    """It exited 0 with an empty train split, which build-vocab refused next."""
    r = text_mode(raw, tmp_path / "clean", "--max-len", 1)
    one_error_line(r, "every pair of its 8 lines was filtered out (dropped: ")
    assert "loosen --max-len, --min-len or --max-ratio" in r.output and not (tmp_path / "clean").exists()


def test_bad_utf8_on_stdin():
    one_error_line(run("tokenize", "-l", "en", input=b"ok\n\xff\xfe\n"), "<stdin>: line 2 is not valid UTF-8")
    one_error_line(run("tokenize", "-l", "en", input="ok\n".encode("utf-16")), "<stdin>: UTF-16 text; nmtkit reads")
    one_error_line(run("tokenize", "-l", "en", input=b"\x1f\x8b\x08\x00"), "<stdin>: gzip-compressed; nmtkit reads")


def test_a_count_of_lines_calls_stdin_as_other_messages_do(tmp_path):
    """score said '- has 1': every other message calls it <stdin>."""
    (tmp_path / "ref.fr").write_text("a\nb\n", encoding="utf-8")
    one_error_line(run("score", "-", "-r", tmp_path / "ref.fr", input="a\n"), "ref.fr has 2 lines but <stdin> has 1")


def test_a_file_of_nul_bytes_is_binary_data_not_one_empty_line(tmp_path):
    """A file zeroed by a crash (or any data of NULs) is valid UTF-8: translate and score read it
    as one line, and score gave chrF 100 of two such files. A stray NUL in text is still the
    cleaning's, as it was."""
    (tmp_path / "zeroed.fr").write_bytes(bytes(4096))
    for args in (
        ("score", tmp_path / "zeroed.fr", "-r", tmp_path / "zeroed.fr"),
        ("tokenize", "-l", "fr", tmp_path / "zeroed.fr"),
    ):
        one_error_line(run(*args), "zeroed.fr: binary data, not text (4,096 of its first 4,096 bytes are NUL)")
    one_error_line(run("tokenize", "-l", "en", input=b"ab\x00" * 100), "<stdin>: binary data, not text (100 of its")
    stray = run("tokenize", "-l", "en", input=b"Amen.\x00\n")
    assert stray.exit_code == 0 and stray.stdout == "Amen .\n", stray.output


def test_a_file_with_a_bad_line_past_the_first_chunk_writes_nothing_whatever_the_workers(tmp_path):
    """One worker wrote the 2,000 lines of the first chunk before the error, two wrote none."""
    from nmtkit.text.preprocess import CHUNK

    (tmp_path / "late.en").write_bytes(b"Amen.\n" * (CHUNK + 5) + b"bad \xe9\n")
    for workers in (1, 2):
        done = run("tokenize", "-l", "en", tmp_path / "late.en", "-j", workers)
        one_error_line(done, f"late.en: line {CHUNK + 6} is not valid UTF-8")
        assert done.stdout == ""


def test_a_pipe_shares_its_reads_among_the_workers_once_it_proves_long(monkeypatch):
    """A pipe went through one process whatever -j said (zcat corpus.gz | nmtkit tokenize -j 8);
    a line or a few still wait for no worker to start."""
    from nmtkit.core import parallel
    from nmtkit.text import preprocess

    lines = "".join(f"Amen, {k}.\n" for k in range(3 * preprocess.CHUNK))
    alone = run("tokenize", "-l", "en", "-j", 1, input=lines).stdout
    shared = run("tokenize", "-l", "en", "-j", 2, input=lines).stdout
    assert shared == alone and alone.splitlines()[7] == "Amen , 7 ."
    started = []
    monkeypatch.setattr(preprocess, "Workers", lambda n, *a: started.append(n) or parallel.Workers(1, *a))
    assert run("tokenize", "-l", "en", "-j", 2, input="Amen.\n" * 10).stdout == "Amen .\n" * 10
    assert started == [1]
    assert run("tokenize", "-l", "en", "-j", 4, input=lines).stdout == alone
    assert started == [1, 1, 4]


def test_a_short_file_starts_no_more_workers_than_it_has_chunks(tmp_path, monkeypatch):
    """-j 16 on a test set of one chunk spawned 16 processes, each loading the tokenizer."""
    from nmtkit.core import parallel
    from nmtkit.text import preprocess

    started = []
    monkeypatch.setattr(preprocess, "Workers", lambda n, *a: started.append(n) or parallel.Workers(1, *a))
    (tmp_path / "short.en").write_text("Amen.\n" * (preprocess.CHUNK + 1), encoding="utf-8")
    assert run("tokenize", "-l", "en", tmp_path / "short.en", "-j", 16).stdout == "Amen .\n" * (preprocess.CHUNK + 1)
    assert started == [2]


def test_bpe_codes_that_are_not_text_or_not_merges_are_one_line(tmp_path):
    """subword-nmt's own message and status 1, or a UnicodeDecodeError's traceback, before."""
    (tmp_path / "binary").write_bytes(b"#version: 0.2\n\x80\x81 a\n")
    (tmp_path / "text").write_text("#version: 0.2\nt h\nIn the beginning God\n", encoding="utf-8")
    one_error_line(run("tokenize", "-l", "en", "--bpe-codes", tmp_path / "binary", input="x\n"), "not UTF-8 text")
    one_error_line(
        run("tokenize", "-l", "en", "--bpe-codes", tmp_path / "text", input="x\n"),
        "text: line 3 is not a BPE merge, two subword units with a space between ('In the beginning God')",
    )
    (tmp_path / "text").write_text("#version: 0.2\nt h\nth e</w>\n", encoding="utf-8")
    merged = run("tokenize", "-l", "en", "--bpe-codes", tmp_path / "text", input="the thin\n")
    assert merged.output == "the th@@ i@@ n\n"
    # as subword-nmt reads them: a trailing empty line, a U+2028 inside a merge (splitlines would cut)
    (tmp_path / "text").write_text("#version: 0.2\nt h\nth e</w>\na\u2028 b\n\n", encoding="utf-8")
    assert run("tokenize", "-l", "en", "--bpe-codes", tmp_path / "text", input="the\n").output == "the\n"
    one_error_line(run("info", tmp_path / "nope"), "nope: no such checkpoint, training run or corpus")


def test_vocabulary_that_does_not_match_the_corpus(raw, tmp_path):
    assert text_mode(raw, tmp_path / "clean").exit_code == 0
    for name, size in (("v1", 30000), ("v2", 8)):
        assert (
            run(
                "build-vocab", *SPLITS, "--train", tmp_path / "clean" / "train", "-d", tmp_path / name, "--size", size
            ).exit_code
            == 0
        )
    # a --min-count past every word's count made lists of the four symbols alone, and exit 0
    vocab = ["build-vocab", *SPLITS, "--train", tmp_path / "clean" / "train", "-d", tmp_path / "v3"]
    one_error_line(run(*vocab, "--min-count", 10**6), "--min-count 1,000,000 keeps no en word")
    for size in (100, 8000):  # 8000: the default, typed without --spm, built words without a word
        one_error_line(run(*vocab, "--spm-size", size), "--spm-size is the size of a SentencePiece model")
    one_error_line(run(*vocab, "--separate"), "--separate learns subword codes per language: add --bpe N")
    one_error_line(run(*vocab, "--joint"), "--joint learns one model of subwords for both languages: add --bpe N")
    assert not (tmp_path / "v3").exists()
    binarize = ["preprocess", *SPLITS, "--test", tmp_path / "clean" / "test", "-d", tmp_path / "bin", "-j", 1]
    assert run(*binarize, "--vocab", tmp_path / "v1").exit_code == 0
    before = sorted(p.name for p in (tmp_path / "bin").iterdir())
    valid = ["preprocess", *SPLITS, "--valid", tmp_path / "clean" / "valid", "-d", tmp_path / "bin", "-j", 1]
    one_error_line(run(*valid, "--vocab", tmp_path / "v2"), "holds splits this run does not give (--test)")
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == before
    again = run(*binarize, "--vocab", tmp_path / "v2")  # every split it holds: replaced, as a Makefile rebuilds
    assert again.exit_code == 0 and "replaced by this one (every split given)" in again.output
    # cleaning and filtering are text mode's: binarizing ignored them without a word
    one_error_line(
        run(*binarize, "--vocab", tmp_path / "v1", "-d", tmp_path / "b2", "--max-len", 10, "--no-dedup"),
        "--max-len, --no-dedup: text mode's (cleaning raw text); binarizing (--vocab) maps the clean text as it is",
    )
    assert not (tmp_path / "b2").exists()
    (tmp_path / "both.yaml").write_text("max_len: 10\n", encoding="utf-8")  # a file for both modes
    r = run(*binarize, "--vocab", tmp_path / "v1", "-d", tmp_path / "b3", "--config", tmp_path / "both.yaml")
    assert r.exit_code == 0 and "warning: --max-len (--config): text mode's, not used when binarizing" in r.output


def test_missing_vocabulary_directory_and_unknown_rule(raw, tmp_path):
    one_error_line(
        run("preprocess", *SPLITS, "--test", raw / "test", "--vocab", tmp_path / "none", "-d", tmp_path / "b"),
        "no such vocabulary directory",
    )
    one_error_line(run("tokenize", "-l", "en", "--clean", "quotes,typo", input="x\n"), "unknown cleaning rule(s): typo")


def test_build_vocab_needs_preprocessed_text(raw, tmp_path):
    one_error_line(
        run("build-vocab", *SPLITS, "--train", raw / "train", "-d", tmp_path / "v"), "preprocess.json: missing"
    )
    assert not (tmp_path / "v" / "vocab.json").exists()


def test_stream_mode_applies_bpe_codes(tmp_path):
    from collections import Counter

    from nmtkit.text.bpe import learn_codes

    codes = tmp_path / "codes"
    codes.write_text(learn_codes(Counter({"lumière": 9, "lumineux": 9}), 10))
    r = run("tokenize", "-l", "fr", "--bpe-codes", codes, input="lumineuse\n")
    assert r.exit_code == 0 and "@@" in r.stdout and len(r.stdout.splitlines()) == 1
    one_error_line(run("tokenize", "-l", "fr", "--bpe-codes", tmp_path / "none", input="x\n"), "no such BPE codes file")


def test_the_old_spellings_of_renamed_options_still_work_and_say_the_new_one(tmp_path):
    hyp = tmp_path / "h.fr"
    hyp.write_text("a b c d\n", encoding="utf-8")
    r = run("score", hyp, "-r", hyp, "-s", hyp, "--by-length")
    assert r.exit_code == 0 and "warning: -s is deprecated, use --source" in r.stderr
    r = run("train", "bin", "--save-dir", "r", "--shortlist", 500, "--dump-config", "-")
    assert "warning: --shortlist is deprecated, use --sampled-softmax" in r.stderr
    assert r.exit_code == 0 and "\nsampled-softmax: 500\n" in r.stdout


def test_an_output_under_a_file_is_one_line_naming_the_file(raw, tmp_path):
    """-o FILE/x, -d FILE/x, --save-dir FILE/x: the directory cannot be made; it was a traceback."""
    from nmtkit.core.errors import UserError
    from nmtkit.train.saving import SaveDirLock

    blocker = tmp_path / "afile"
    blocker.write_text("x\n")
    why = f"cannot be written: {blocker} is a file, not a directory"
    one_error_line(text_mode(raw, blocker / "clean"), f"{blocker / 'clean'}: {why}")
    one_error_line(run("tokenize", "-l", "en", raw / "train.en", "--dump-config", blocker / "c.yaml"), f"c.yaml: {why}")
    with pytest.raises(UserError, match=why):
        SaveDirLock(blocker / "run", writes=True).hold()


def test_what_the_system_says_of_a_path_is_one_line_and_any_other_os_error_a_traceback():
    import errno

    import click

    from nmtkit.core.command import Command

    @click.command(cls=Command)
    @click.argument("code", type=int)
    def fails(code):
        raise OSError(code, os.strerror(code), "runs/x/y")

    refused = CliRunner().invoke(fails, [str(errno.EROFS)])
    one_error_line(refused, "runs/x/y: read-only file system")
    bug = CliRunner().invoke(fails, [str(errno.EIO)])
    assert bug.exit_code == 1 and isinstance(bug.exception, OSError)


def test_ctrl_c_and_an_allocation_that_fails_are_each_one_line():
    """Ctrl-C: 'interrupted' after the command's name alone, status 130 (click's own handling
    wrote an empty line first);
    torch's failure to allocate (a --beam of thousands): one line with the size, status 2."""
    import torch

    from nmtkit.core.command import Command

    @click.command(cls=Command)
    @click.argument("what")
    def fails(what):
        if what == "ctrl-c":
            raise KeyboardInterrupt
        if what == "cpu":
            raise RuntimeError(
                "[enforce fail at alloc_cpu.cpp:121] data. DefaultCPUAllocator: can't allocate memory: "
                "you tried to allocate 2251200000 bytes. Error code 12 (Cannot allocate memory)"
            )
        if what == "cuda":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 79 GiB")
        if what == "numpy":  # no size of the command's choosing: a defect's traceback
            raise MemoryError("Unable to allocate 727. TiB for an array with shape (10000000, 10000000)")
        raise RuntimeError("a defect, not enough memory for it")

    stopped = CliRunner().invoke(fails, ["ctrl-c"])
    assert stopped.exit_code == 130 and stopped.stderr == "fails: interrupted\n", repr(stopped.stderr)
    one_error_line(CliRunner().invoke(fails, ["cpu"]), "out of memory (2.10 GiB more asked): ask for less at once")
    one_error_line(CliRunner().invoke(fails, ["cuda"]), "out of GPU memory (2.00 GiB more asked)")
    for what, kind in (("other", RuntimeError), ("numpy", MemoryError)):
        bug = CliRunner().invoke(fails, [what])
        assert bug.exit_code == 1 and isinstance(bug.exception, kind)  # a defect keeps its traceback


def test_a_table_into_a_file_or_pipe_keeps_every_column_whole_and_no_padding():
    """info's tables at a terminal's width cut their headers (valid.…) and pad every line with spaces."""
    import io

    from rich.table import Table

    from nmtkit.core.console import Results

    table = Table(title="lines changed by cleaning rules")
    for name in ("rule", *(f"{split}.{lang}" for split in ("train", "valid", "test") for lang in ("en", "fr"))):
        table.add_column(name)
    table.add_row("verse-markers-and-more", *(f"{n:,}" for n in range(1000, 7000, 1000)))
    out = io.StringIO()
    Results(file=out).print(table)
    lines = out.getvalue().splitlines()
    assert "valid.fr" in lines[2] and "…" not in out.getvalue() and len(max(lines, key=len)) > 80
    assert not [line for line in lines if line != line.rstrip()]
    from rich.panel import Panel

    out = io.StringIO()
    Results(file=out).print(Panel("a panel takes the width it is given"))
    assert max(map(len, out.getvalue().splitlines())) <= 80  # not the columns a table's need was measured in
    from nmtkit.core import console

    found = console.console._width  # $COLUMNS where set, else None: rich finds it at each print
    with console.console.capture() as logged:  # stderr into a log file: preprocess's tables were cut too
        console.console.print(table)
        console.log("a line after it is wrapped at the width found then: " + "x " * 60)
    assert "valid.fr" in logged.get() and "…" not in logged.get() and console.console._width == found


def test_data_steps_refuse_what_would_lose_their_input_or_the_other_side(raw, tmp_path):
    """preprocess -d beside its raw text replaced train.en with its tokens, exit 0; build-vocab
    counted sides of other lengths, exit 0; SentencePiece's own refusals were tracebacks."""
    before = (raw / "train.en").read_bytes()
    one_error_line(text_mode(raw, raw), f"-d {raw / 'train.en'}: the same file as --train {raw / 'train.en'}")
    assert (raw / "train.en").read_bytes() == before
    assert text_mode(raw, tmp_path / "clean").exit_code == 0
    short = tmp_path / "short"
    short.mkdir()
    for name in ("preprocess.json", "train.en"):
        (short / name).write_bytes((tmp_path / "clean" / name).read_bytes())
    (short / "train.fr").write_text("".join((tmp_path / "clean" / "train.fr").read_text().splitlines(True)[:2]))
    one_error_line(
        run("build-vocab", *SPLITS, "--train", short / "train", "-d", tmp_path / "v"), "parallel files differ"
    )
    spm = [*SPLITS, "--train", tmp_path / "clean" / "train", "-d", tmp_path / "s", "--spm", "bpe", "-q", "--spm-size"]
    one_error_line(
        run("build-vocab", *spm, 8),
        "--spm-size 8: SentencePiece refuses it (Vocabulary size is smaller than required_chars",
    )
    assert run("build-vocab", *spm, 60).exit_code == 0
    (tmp_path / "cut.codes").write_text((tmp_path / "s" / "spm.codes").read_text()[:200])
    one_error_line(
        run("tokenize", "-l", "en", "-j", 1, "--bpe-codes", tmp_path / "cut.codes", input="And God\n"),
        "SentencePiece codes that are damaged",
    )
    # in workers, where a start that failed was started again, and failed again, for good
    one_error_line(
        run("tokenize", "-l", "en", "-j", 2, "--bpe-codes", tmp_path / "cut.codes", raw / "train.en"),
        "SentencePiece codes that are damaged",
    )


def test_a_full_or_closed_stdout_is_one_line_and_status_2(raw, tmp_path):
    """/dev/full: the line, then Python's 'Exception ignored' at exit and status 120; >&-: a traceback."""
    import subprocess
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]),
    }
    tokenize = [sys.executable, "-m", "nmtkit", "tokenize", "-l", "en", "-j", "1", str(raw / "train.en")]
    with open("/dev/full", "w") as full:
        done = subprocess.run(tokenize, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert (done.returncode, done.stderr) == (2, "nmtkit tokenize: error: stdout: no space left on device\n")
    for asked in (["--help"], ["--version"], ["translate", "--help"]):  # the group's help is longer than the buffer
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "nmtkit", *asked], stdout=full, stderr=subprocess.PIPE, text=True, env=env
            )
        assert done.returncode == 2 and done.stderr.endswith("error: stdout: no space left on device\n"), (
            asked,
            done.stderr,
        )
        assert done.stderr.count("\n") == 1
    done = subprocess.run(
        tokenize, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, timeout=120, pass_fds=()
    )
    assert done.returncode == 0
    closed = subprocess.run(
        ["bash", "-c", " ".join(tokenize) + " >&-"], capture_output=True, text=True, env=env, timeout=120
    )
    assert closed.returncode == 2 and closed.stderr.count("\n") == 1 and "stdout is closed" in closed.stderr, (
        closed.stderr
    )


def test_a_full_disk_under_an_output_file_names_the_file():
    """The system names no file when a write finds the disk full: the line said only "no space
    left on device", whichever of a command's outputs it was."""
    one_error_line(
        run("score", "--dump-config", "/dev/full"), "nmtkit score: error: /dev/full: no space left on device"
    )


@pytest.mark.parametrize(
    "args",
    [["tokenize", "-l", "en", "-"], ["score", "-", "-r", "{ref}"], ["score-align", "-", "-g", "{ref}"]],
    ids=["tokenize", "score", "score-align"],
)
def test_a_closed_stdin_is_one_line_and_status_2(raw, args):
    """<&-: Python's sys.stdin is None, whose .buffer was a traceback."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    cmd = [sys.executable, "-m", "nmtkit", *(a.format(ref=raw / "valid.fr") for a in args)]
    closed = subprocess.run(
        ["bash", "-c", " ".join(map(str, cmd)) + " <&-"], capture_output=True, text=True, env=env, timeout=120
    )
    assert closed.returncode == 2 and closed.stderr.count("\n") == 1 and "stdin is closed" in closed.stderr, (
        closed.stderr
    )
    if args[0] == "tokenize":  # a file read with stdin closed (cron, a daemon) is no error at all
        cmd[-1] = str(raw / "valid.en")
        done = subprocess.run(
            ["bash", "-c", " ".join(map(str, cmd)) + " <&-"], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0 and done.stdout.count("\n") > 1, done.stderr


@pytest.mark.parametrize("lang", ["", "e n", "en/fr"])
def test_a_language_code_that_cannot_name_a_file_is_refused(raw, lang):
    """PREFIX.LANG names every file: an empty code, or one with a space or a slash, was taken."""
    one_error_line(run("tokenize", "-l", lang, raw / "train.en"), f"language code {lang!r}")
    from nmtkit.text.settings import TextConfig

    assert TextConfig.from_dict({"lang": lang}).lang == lang  # as an older checkpoint or corpus stored it


def test_a_command_run_in_process_returns_whatever_threads_the_process_runs():
    """An exit that does not wait for threads (serve's, after Ctrl-C) ended a test run that had a
    thread pool alive (the BLAS of the logits keeps one), silently, with status 0."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        pool.submit(time.sleep, 1)
        assert run("--version").exit_code == 0


def test_a_name_that_would_break_the_line_or_is_no_utf_8_is_escaped_in_the_error(tmp_path):
    """A file name with a newline made the error two lines ('error: no' and 'such.en: no such
    file'); a name's byte that is no UTF-8 came out as \\udce9."""
    one_error_line(run("tokenize", "-l", "en", tmp_path / "no\nsuch\x1b[31m.en"), "no\\nsuch\\x1b[31m.en: ")
    latin = os.fsdecode(bytes(tmp_path / "caf") + b"\xe9.en")
    one_error_line(run("tokenize", "-l", "en", latin), "caf\\xe9.en: ")


def test_names_in_logs_are_not_read_as_markup(tmp_path, capsys):
    """rich read a log line's 'q[/b]avg.pt' as a closing tag (a traceback after the work) and
    'corpus[v2].fr' as 'corpus.fr'."""
    from nmtkit.core.console import debug, log, progress, set_verbosity

    log("wrote q[/b]avg.pt and corpus[v2].fr, runs/a:fire:b.pt")
    set_verbosity(verbose=True)
    try:
        debug("in [bold]x[/bold]")
    finally:
        set_verbosity()
    said = capsys.readouterr().err.splitlines()
    assert said == ["wrote q[/b]avg.pt and corpus[v2].fr, runs/a:fire:b.pt", "in [bold]x[/bold]"]
    bar = progress()  # drawn on a terminal alone: its description's column, rendered here
    bar.add_task("down[/i]load", total=1)
    assert bar.columns[0].render(bar.tasks[0]).plain == "down[/i]load"
