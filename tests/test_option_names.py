"""One meaning per option name across every nmtkit command (issue 42): a name two commands use
is listed in :data:`SHARED` with its one meaning and declared alike (dest, type, flag); the old
spellings of renamed options still work, say on stderr that they are deprecated, and act as the
new name; every command with more than a handful of options reads --config."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from nmtkit.cli import main

# Every option spelling that two or more commands share, with its one meaning.
SHARED = {
    "-m/--model": "checkpoint to read; repeat for an ensemble",
    "-o/--output": "output file",
    "-d/--dest-dir": "directory to write into",
    "-s/--source-lang": "source language code",
    "-t/--target-lang": "target language code",
    "-l/--lang": "language code of the text",
    "-j/--workers": "processes to spread the work over",
    "-q/--quiet": "nothing on stderr but errors",
    "-v/--verbose": "also log the details",
    "--config": "options from a YAML or TOML file",
    "--dump-config": "write the effective options to a file and stop",
    "--data": "a binarized corpus (DATA_BIN)",
    "--train": "prefix of the training text, PREFIX.LANG",
    "--source": "file of source sentences",
    "--target": "file of target sentences",
    "--tokenized": "the files are Moses tokens",
    "--alignments": "file of each line's attention matrix with its tokens (JSON lines, for align-plot)",
    "--align-suffix": "word links of a corpus are PREFIX.SUFFIX",
    "--clean": "cleaning rules or preset applied to the text",
    "--normalize-punct/--no-normalize-punct": "Moses punctuation normalization",
    "--aggressive-dash": "split hyphens",
    "--lowercase": "lowercase the text first",
    "--max-len": "drop training pairs with a side longer than N units",
    "--batch-size": "sentences per batch",
    "--max-tokens": "tokens per batch, instead of sentences",
    "--output-format": "what stdout carries: text or JSON (json: one object; jsonl: one a line)",
    "--beam": "beam width",
    "--length-penalty": "how finished hypotheses are ranked",
    "--token-scores": "each output unit's log-probability, in jsonl",
    "--crop-len": "units read of each line, the rest cropped with a warning",
    "--alpha": "GNMT length penalty exponent",
    "--coverage-penalty": "Wu et al.'s coverage penalty",
    "--max-output-ratio": "search: output at most this times the source length, plus 10",
    "--min-output-len": "search: words before </s> at least",
    "--min-output-ratio": "search: words before </s> at least this times the source length",
    "--no-unk": "never produce <unk>",
    "--ordered-constraints": "constraints held in the order given",
    "--glossary": "terms and their translations, held where found",
    "--plain-first/--no-plain-first": "constrained search after a plain one",
    "--shortlist": "vocabulary selection in search",
    "--int8": "int8 linear layers on CPUs",
    "--device": "where to compute",
    "--threads": "CPU threads",
    "--bf16": "bfloat16 autocast",
    "--tf32/--no-tf32": "TensorFloat-32 products on GPUs",
    "--combine": "how the links of a model each way are combined",
    "--link-threshold": "--combine soft: the harmonic mean a link needs",
    "--null-threshold": "a word with this much weight on no counterpart links to nothing",
    "--seed": "seed of the random draws (train: weights, batches, dropout; translate: sampling)",
}

# Options besides help and verbosity from which a command takes --config.
MANY = 6


def commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(main, info_name="nmtkit")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        yield name, command


def visible(command: click.Command) -> list[click.Option]:
    """The options --help shows: an old spelling (hidden) is the new option's, not a name of its own."""
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def spelling(option: click.Option) -> str:
    return "/".join(option.opts + option.secondary_opts)


def kind(param_type: click.ParamType) -> str:
    """A type's kind: an integer range is an integer, its bounds the command's own (--beam 1 and up,
    --seed 0); a path is a file or a directory (-o a file everywhere, -d a directory)."""
    for number in (click.types.IntParamType, click.types.FloatParamType):
        if isinstance(param_type, number):
            return number.__name__
    if isinstance(param_type, click.Path):
        return f"Path(file_okay={param_type.file_okay}, dir_okay={param_type.dir_okay})"
    return type(param_type).__name__


def declared(option: click.Option) -> tuple[str, str | None, str, bool, bool]:
    """What must agree wherever a name is used: spelling, dest, type, flag or not, repeatable or not."""
    return spelling(option), option.name, kind(option.type), option.is_flag, option.multiple


def invoke(*args: object) -> click.testing.Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_every_option_name_is_declared_alike_on_every_command() -> None:
    seen: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, command in commands():
        for option in visible(command):
            for flag in option.opts + option.secondary_opts:
                seen[flag][declared(option)].append(name)
    clashes = {flag: dict(ways) for flag, ways in seen.items() if len(ways) > 1}
    assert not clashes, f"one name, several declarations: {clashes}"


def test_every_shared_option_is_in_the_table_with_its_meaning() -> None:
    users: dict[str, set[str]] = defaultdict(set)
    for name, command in commands():
        for option in visible(command):
            users[spelling(option)].add(name)
            assert option.help, f"{name} {spelling(option)}: no help to say what it means here"
    shared = {s for s, names in users.items() if len(names) > 1}
    assert shared - SHARED.keys() == set(), "shared by several commands: give its meaning in SHARED"
    assert SHARED.keys() - shared == set(), "in SHARED but used by one command or none"


def test_a_command_with_many_options_takes_a_config_file() -> None:
    for name, command in commands():
        own = [o for o in visible(command) if o.name not in ("quiet", "verbose", "config", "dump_config")]
        names = {o.name for o in visible(command)}
        if len(own) >= MANY:
            assert {"config", "dump_config"} <= names, f"{name}: {len(own)} options and no --config"
        if "config" in names:
            help = next(o.help or "" for o in visible(command) if o.name == "config")
            assert not re.search(r"--[a-z]", help), f"{name}: --config's help names an option: {help}"


def test_every_old_spelling_leads_to_an_option_of_its_command() -> None:
    for name, command in commands():
        params = {p.name for p in visible(command)}
        for p in command.params:
            if isinstance(p, click.Option) and p.hidden:
                assert p.name and p.name.startswith("old_") and p.name[4:] in params, f"{name}: {spelling(p)}"


def test_old_search_and_crop_spellings_warn_and_act_as_the_new_names() -> None:
    old = invoke("translate", "-m", "x.pt", "--max-ratio", 3, "--min-len", 0, "--max-length", 9, "--dump-config", "-")
    new = invoke(
        "translate", "-m", "x.pt", "--max-output-ratio", 3, "--min-output-len", 0, "--crop-len", 9, "--dump-config", "-"
    )
    assert old.exit_code == 0 and new.exit_code == 0, old.output
    assert old.stdout == new.stdout and "\ncrop-len: 9\n" in new.stdout and "\nmax-output-ratio: 3.0\n" in new.stdout
    for flag in ("--max-ratio", "--min-len", "--max-length"):
        assert f"warning: {flag} is deprecated" in old.stderr
    assert len(old.stderr.splitlines()) == 3 and new.stderr == ""


def test_json_still_prints_json_and_says_to_use_output_format(tmp_path) -> None:
    (tmp_path / "hyp").write_text("0-0 1-1\n")
    (tmp_path / "gold").write_text("0-0 1?1\n")
    old = invoke("score-align", tmp_path / "hyp", "-g", tmp_path / "gold", "--json")
    new = invoke("score-align", tmp_path / "hyp", "-g", tmp_path / "gold", "--output-format", "json")
    assert old.exit_code == 0 and old.stdout == new.stdout and json.loads(new.stdout)["aer"] == 0
    assert "--json is deprecated, use --output-format json" in old.stderr and new.stderr == ""


@pytest.mark.parametrize("corpus", [["bin"], ["--data", "bin"]])
def test_train_takes_its_corpus_as_data_or_as_fairseq_does(corpus) -> None:
    r = invoke("train", *corpus, "--save-dir", "r", "--dump-config", "-")
    assert r.exit_code == 0 and "\ndata: bin\n" in r.stdout and r.stderr == ""


def test_score_takes_a_config_file(tmp_path) -> None:
    for name in ("hyp.en", "ref.en"):
        (tmp_path / name).write_text("the cat sat on the mat .\n")
    (tmp_path / "score.yml").write_text(f"ref: {tmp_path / 'ref.en'}\noutput-format: json\ntokenized: true\n")
    flags = invoke("score", tmp_path / "hyp.en", "-r", tmp_path / "ref.en", "--output-format", "json", "--tokenized")
    config = invoke("score", tmp_path / "hyp.en", "--config", tmp_path / "score.yml")
    assert flags.exit_code == 0 and config.exit_code == 0, config.output
    assert json.loads(config.stdout) == json.loads(flags.stdout)
