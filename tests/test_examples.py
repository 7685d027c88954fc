"""Every example nmtkit shows runs: each command's --help examples and the README's nmtkit lines.

An example is a command line running ``nmtkit`` in a command's epilog (its indented lines) or in
a fenced sh/bash/console block of README.md (unlabelled blocks too), continued lines joined. Each
is a test case of its own, named after where it is shown (``translate-2``: the second example of
translate --help; ``L77-translate``: README.md's line 77), and runs as written in a fresh
directory, on a tiny corpus and model; only the budgets of :func:`cut` change. It passes when
every command exits 0 and nmtkit warns about no spelling it uses (``-o is deprecated``).

What an example reads comes from the lines shown before it in its block when one of them writes
it (``align ... -o test.links`` then ``score-align test.links``: the first runs, then the
second), from the checkout for paths under examples/, and otherwise from the :func:`world`,
chosen by the option that names it (:data:`ROLES`), whatever the file is called: ``-m`` gets a
checkpoint, ``--data`` a binarized corpus, ``--train`` a parallel text.

A single ``nmtkit ...`` with ``<``/``>`` runs in this process (torch is imported once); a
pipeline or another shell line runs in bash, the venv's bin first on PATH; ``nmtkit serve``
serves on a free loopback port until its /health and the curl lines shown after it are answered.
torchrun examples are slow tests, skipped without the GPUs they name.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import click
import pytest
from click.testing import CliRunner

from nmtkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIBLE = ROOT / "examples" / "bible_aer"  # 100 verses, their Moses tokens, gold links
SHELL_FENCES = {"", "sh", "bash", "console", "shell"}
OPERATORS = {"|", "<", ">", ">>", "&&", "||", ";", "&", "2>", "&>"}
OLD_SPELLING = re.compile(r"warning: \S+ is deprecated, use ")  # what nmtkit says of an old option


# ---------------------------------------------------------------------------------------------
# Finding the examples


@dataclass(frozen=True)
class Example:
    where: str  # "translate --help" or "README.md:77"
    line: str  # the command line, continued lines joined
    before: tuple[str, ...] = ()  # the example lines shown before it in its block
    clients: tuple[str, ...] = ()  # curl lines shown after an nmtkit serve

    def __str__(self) -> str:
        return f"{self.where}: {self.line}"


def words(line: str) -> list[str]:
    """The shell words of a line, comments dropped, operators (|, <, >, &&) words of their own."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def logical_lines(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(index of the first line, the line) with backslash-continued lines joined."""
    held: list[str] = []
    first = 0
    for i, line in enumerate(lines):
        if not held:
            first = i
        if line.rstrip().endswith("\\"):
            held.append(line.rstrip()[:-1])
            continue
        yield first, " ".join(held + [line]).strip()
        held = []
    if held:
        yield first, " ".join(held).strip()


def block_examples(lines: list[tuple[int, str]], where: str, prompt: bool = False) -> list[Example]:
    """The examples of one block: lines running nmtkit; a curl line joins the serve before it.
    ``prompt``: a console block, whose commands are the lines after a '$ ' (the rest is output)."""
    found: list[Example] = []
    for n, line in lines:
        if prompt and not line.startswith("$ "):
            continue
        line = line.removeprefix("$ ")
        if not line or line.startswith("#") or not re.search(r"\bnmtkit\b|^curl\b", line):
            continue
        try:
            shown = words(line)
        except ValueError:  # an unclosed quote: an example still, and it will fail
            shown = line.split()
        if shown[:1] == ["curl"]:
            if found and re.match(r"nmtkit serve\b", found[-1].line):
                last = found.pop()
                found.append(Example(last.where, last.line, last.before, last.clients + (line,)))
            continue
        if not any(re.search(r"\bnmtkit\b", w) for w in shown):
            continue  # nmtkit in a comment only
        found.append(Example(where.format(n), line, tuple(e.line for e in found)))
    return found


def help_examples() -> list[Example]:
    found = []
    for name, command in main.commands.items():
        indented = [line for line in (command.epilog or "").splitlines() if line.startswith((" ", "\t"))]
        found += block_examples(list(logical_lines(indented)), f"{name} --help")
    return found


def readme_examples(text: str, name: str = "README.md") -> list[Example]:
    """The examples of the fenced sh, bash and console blocks (and unlabelled ones) of a Markdown text."""
    found: list[Example] = []
    block: list[str] = []
    fence = lang = ""
    start = 0
    for i, line in enumerate(text.splitlines(), 1):
        if not fence:
            if m := re.match(r"\s*(```+|~~~+)\s*([\w-]*)", line):
                fence, lang, start, block = m.group(1), m.group(2).lower(), i + 1, []
        elif line.strip().startswith(fence):
            if lang in SHELL_FENCES:
                found += block_examples(
                    [(start + n, x) for n, x in logical_lines(block)], name + ":{}", prompt=lang == "console"
                )
            fence = ""
        else:
            block.append(line)
    return found


# ---------------------------------------------------------------------------------------------
# What an example reads and writes


def nmtkit_args(stage: list[str]) -> list[str] | None:
    """The arguments nmtkit gets in one stage: nmtkit ..., python -m nmtkit ..., torchrun ... -m nmtkit ..."""
    if stage[:1] == ["nmtkit"]:
        return stage[1:]
    for i, w in enumerate(stage[:-1]):
        if w == "-m" and stage[i + 1] == "nmtkit":
            return stage[i + 2 :]
    return None


def stages(ws: list[str]) -> list[tuple[list[str], str | None, str | None]]:
    """A pipeline's stages, each as (its words, its < file, its > file)."""
    out, cur, stdin, stdout = [], [], None, None
    it = iter(ws + ["|"])
    for w in it:
        if w == "|":
            out.append((cur, stdin, stdout))
            cur, stdin, stdout = [], None, None
        elif w == "<":
            stdin = next(it, None)
        elif w in (">", ">>"):
            stdout = next(it, None)
        else:
            cur.append(w)
    return out


# The fixture an input gets, by (command, parameter): the file's name does not matter.
ROLES = {
    **{
        (c, p): "parallel"
        for c, p in [
            ("preprocess", "train"),
            ("preprocess", "valid"),
            ("preprocess", "test"),
            ("select", "in_domain"),
            ("select", "general"),
        ]
    },
    ("build-vocab", "train"): "clean",  # parallel text and the preprocess.json beside it
    ("word-align", "train"): "clean",
    **{
        (c, p): "text"
        for c, p in [
            ("tokenize", "input"),
            ("translate", "input"),
            ("translate", "constraints"),  # a French verse a line: each output holds its reference whole
            ("score", "hypotheses"),
            ("score", "refs"),
            ("score", "source"),
            ("align", "source"),
            ("align", "target"),
            ("align-plot", "source"),
            ("align-plot", "target"),
            ("rescore", "source"),
            ("rescore", "target"),
            ("rerank", "tune_on"),
        ]
    },
    **{(c, "model_paths"): "checkpoint" for c in ("translate", "score", "rescore", "align", "align-plot", "serve")},
    ("average", "model_paths"): "kept",  # checkpoints, or a run directory of kept validations
    ("lexicon", "model_path"): "checkpoint",
    ("train", "init_from"): "checkpoint",
    **{(c, "data_bin"): "data-bin" for c in ("train", "score", "lexicon", "reverse")},
    ("train", "data_bin_arg"): "data-bin",
    ("preprocess", "vocab_dir"): "vocab",
    ("tokenize", "bpe_codes"): "bpe-codes",
    ("score", "no_unk"): "checkpoint",  # or a vocabulary directory: see provide()
    ("translate", "unk_dict"): "unk-dict",
    **{(c, "glossary"): "glossary" for c in ("translate", "serve")},
    ("score-align", "hypothesis"): "links",
    ("score-align", "gold"): "gold",  # gold: sure and possible links
    **{(c, "config"): "earlier" for c in main.commands},  # written by a line shown before
    ("rescore", "nbest_list"): "earlier",  # translate --nbest's
    ("rerank", "nbest_list"): "earlier",  # rescore --nbest-list's
    ("align-plot", "alignments"): "alignments",  # *.links: Pharaoh links; else translate --alignments
    ("info", "path"): "info",  # *.pt, runs/..., else a binarized corpus
}


@dataclass
class Reads:
    paths: list[tuple[str, str, tuple[str, str]]]  # (path, role, (source, target language))
    words: set[str]  # every word of the line: what it may write


def reads(line: str) -> Reads:
    out: list[tuple[str, str, tuple[str, str]]] = []
    ws = words(line)
    for stage, stdin, _ in stages(ws):
        if stdin:
            out.append((stdin, "text", ("en", "fr")))
        args = nmtkit_args(stage)
        if not args or args[0] not in main.commands:
            continue
        command = main.commands[args[0]]
        parser = command.make_parser(click.Context(command, info_name=args[0], resilient_parsing=True))
        opts, _, _ = parser.parse_args(args=list(args[1:]))
        langs = (opts.get("source_lang") or "en", opts.get("target_lang") or "fr")
        for param, value in opts.items():
            role = ROLES.get((args[0], param.removeprefix("old_")))  # old_X: X's old spelling (renamed)
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if role and isinstance(v, str) and v != "-":
                    out.append((v, role, langs))
    return Reads(out, {os.path.normpath(w) for w in ws if w not in OPERATORS and not w.startswith("-")})


def under(path: str, written: set[str]) -> bool:
    p = os.path.normpath(path)
    return any(p == w or p.startswith(w + os.sep) for w in written)


def plan(example: Example) -> list[str]:
    """The lines to run: those shown before the example that write what it reads (the last to
    name a path writes it), then the example."""
    run = [example.line]
    needed = {os.path.normpath(p) for p, _, _ in reads(example.line).paths}
    for line in reversed(example.before):
        r = reads(line)
        written = r.words - {os.path.normpath(p) for p, _, _ in r.paths}
        found = {p for p in needed if under(p, written)}
        if found:
            run.insert(0, line)
            needed = (needed - found) | {os.path.normpath(p) for p, _, _ in r.paths}
    return run


# ---------------------------------------------------------------------------------------------
# The world: the fixtures of every role, built once


def nmtkit(cwd: Path, *args: str | Path) -> bytes:
    with contextlib.chdir(cwd):
        r = CliRunner().invoke(main, [str(a) for a in args])
    if r.exit_code != 0:
        raise AssertionError(
            f"nmtkit {' '.join(map(str, args))} exited {r.exit_code}:\n{r.output[-3000:]}" + _traceback(r)
        )
    return r.stdout_bytes


def _traceback(r) -> str:
    if r.exc_info is None or isinstance(r.exception, SystemExit):
        return ""
    import traceback

    return "\n" + "".join(traceback.format_exception(*r.exc_info))[-4000:]


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> Path:
    """A fixture for each role: a corpus of 48 generated pairs (4 more to validate, 4 to test),
    its clean text, vocabularies, binarized corpus and a tiny model trained on it until it stops
    its sentences (30 updates, 1 s), and what it makes of examples/bible_aer's 100 verses (the text
    every example reads: their Moses tokens and gold links agree with them)."""
    from tests.synthetic import pairs, write

    w = tmp_path_factory.mktemp("world")
    generated = pairs(56, seed=1)
    for split, part in (("train", generated[:48]), ("valid", generated[48:52]), ("test", generated[52:])):
        write(w / "corpus" / split, part)
    splits = ("train", "valid", "test")
    pair = ["-s", "en", "-t", "fr"]
    nmtkit(w, "preprocess", *pair, "-j", "1", *[f"--{s}=corpus/{s}" for s in splits], "-d", "clean")
    nmtkit(w, "build-vocab", *pair, "--train", "clean/train", "-d", "vocab")
    nmtkit(w, "build-vocab", *pair, "--train", "clean/train", "-d", "vocab-bpe", "--bpe", "100", "--joint")
    nmtkit(
        w, "preprocess", *pair, "-j", "1", *[f"--{s}=clean/{s}" for s in splits], "--vocab", "vocab", "-d", "data-bin"
    )
    nmtkit(
        w,
        "train",
        "data-bin",
        "--preset",
        "tiny",
        "--optimizer",
        "adam",
        "--lr",
        "0.02",
        "--batch-size",
        "16",
        "--max-updates",
        "30",
        "--valid-every",
        "1000",
        "--save-dir",
        "run",
    )
    nmtkit(w, "translate", "-m", "run/best.pt", BIBLE / "test.en", "--alignments", "test.align", "-o", "test.hyp")
    nmtkit(
        w,
        "align",
        "-m",
        "run/best.pt",
        "--tokenized",
        "--source",
        BIBLE / "test.tok.en",
        "--target",
        BIBLE / "test.tok.fr",
        "-o",
        "test.links",
    )
    (w / "lex.txt").write_text("God Dieu\nlight lumière\nearth terre\n", encoding="utf-8")
    (w / "glossary.tsv").write_text("God\tDieu\nthe earth\tla terre\n", encoding="utf-8")
    return w


def provide(  # noqa: C901, PLR0912 (one branch per fixture role)
    world: Path, cwd: Path, path: str, role: str, langs: tuple[str, str]
) -> None:
    """Put at ``path`` (under ``cwd``) the fixture of ``role``, unless something is there."""
    dest = cwd / path
    if Path(path).is_absolute():
        pytest.fail(f"{path}: an example that reads an absolute path cannot run here")
    if path.startswith("examples/"):  # the checkout's sample data, as the README says
        if not (ROOT / path).exists():
            pytest.fail(f"{path} is not in the checkout")
        source = ROOT / path
    elif role in ("parallel", "clean"):  # PREFIX.SRC and PREFIX.TGT
        if not all(Path(f"{dest}.{lang}").exists() for lang in langs):
            dest.parent.mkdir(parents=True, exist_ok=True)
            for lang, side in zip(langs, ("en", "fr")):
                shutil.copy(world / role.replace("parallel", "corpus") / f"train.{side}", f"{dest}.{lang}")
            if role == "clean" and not (dest.parent / "preprocess.json").exists():
                shutil.copy(world / "clean" / "preprocess.json", dest.parent)
        return
    elif role == "text":
        lang = dest.suffix.lstrip(".")
        if lang not in ("en", "fr"):
            pytest.fail(f"{path}: no fixture for a text file whose language is not .en or .fr (add one to provide())")
        source = BIBLE / f"test.{'tok.' if '.tok.' in dest.name else ''}{lang}"
    elif role == "info":
        source = (
            world / "run" / "best.pt"
            if dest.suffix == ".pt"
            else world / ("run" if Path(path).parts[0] == "runs" else "data-bin")
        )
    elif role == "kept" and dest.suffix != ".pt":  # a run directory: its update-N.pt
        dest.mkdir(parents=True, exist_ok=True)
        from nmtkit import checkpoint

        for step in range(1000, 7000, 1000):
            if not (dest / f"update-{step}.pt").exists():  # each its own update: one model twice is refused
                kept = checkpoint.load(world / "run" / "best.pt")
                kept.training.progress.step = step
                checkpoint.save(dest / f"update-{step}.pt", kept)
        return
    elif role in ("checkpoint", "kept"):
        source = world / "run" / "best.pt" if dest.suffix == ".pt" else world / "vocab"  # score --no-unk-vocab DIR
    elif role == "alignments":
        source = world / ("test.links" if dest.suffix == ".links" else "test.align")
    elif role == "earlier":
        pytest.fail(f"{path}: no line shown before this one writes it")
    else:
        source = {
            "data-bin": world / "data-bin",
            "vocab": world / "vocab",
            "bpe-codes": world / "vocab-bpe" / "bpe.codes",
            "unk-dict": world / "lex.txt",
            "glossary": world / "glossary.tsv",
            "links": world / "test.links",
            "gold": BIBLE / "gold.links",
        }[role]
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)
    elif not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, dest)


# ---------------------------------------------------------------------------------------------
# Budgets cut: what would take minutes, as few changes as make it take seconds


def cut(args: list[str]) -> list[str]:
    """nmtkit's arguments with the budgets cut; everything else as written."""
    if not args or args[0] not in main.commands:
        return args
    command = main.commands[args[0]]
    if args[0] == "train":
        # 2 updates of a tiny model: the paper's sizes take 8-20 s for 2 updates on a CPU, and
        # --max-minutes 20 would be 20 minutes
        args = drop(args, "--preset", "--max-updates") + ["--preset", "tiny", "--max-updates", "2"]
    if any(p.name == "workers" for p in command.params) and not {"-j", "--workers"} & set(args):
        args = args + ["-j", "1"]  # no worker processes spawned (a second each) for a few lines
    return args


def drop(args: list[str], *names: str) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not a.startswith(tuple(n + "=" for n in names)):
            out.append(a)
    return out


def shell(line: str) -> str:
    """A bash line with nmtkit's budgets cut: as written where nothing is cut, else its words
    requoted (operators left as operators)."""
    ws, out, cur, changed = words(line), [], [], False
    for w in ws + ["|"]:
        if w in OPERATORS:
            args = nmtkit_args(cur)
            if args is not None and cut(args) != args:
                cur, changed = cur[: len(cur) - len(args)] + cut(args), True
            out += [shlex.quote(x) for x in cur] + [w]
            cur = []
        else:
            cur.append(w)
    return " ".join(out[:-1]) if changed else line


# ---------------------------------------------------------------------------------------------
# Running


def skip_reason(line: str) -> str | None:
    """Why this machine cannot run a line, where it cannot."""
    import torch

    from nmtkit.core.machine import this_cpu

    ws = words(line)
    if ws[:1] == ["torchrun"]:
        nodes = next((int(ws[i + 1]) for i, w in enumerate(ws[:-1]) if w in ("--nnodes",)), 1)
        procs = next(
            (int(ws[i + 1]) for i, w in enumerate(ws[:-1]) if w in ("--nproc_per_node", "--nproc-per-node")), 1
        )
        if nodes > 1:
            return f"torchrun on {nodes} machines"
        if "--device" not in ws and torch.cuda.device_count() < procs:
            return f"torchrun with {procs} processes on GPUs: this machine has {torch.cuda.device_count()} GPU(s)"
    if "--bf16" in ws and not torch.cuda.is_available() and not this_cpu().native_bf16:
        return "--bf16 on a CPU without native bfloat16: nmtkit refuses it there"
    if "--int8" in ws and "--device" not in ws and torch.cuda.is_available():
        return "--int8 is for CPUs, and this machine's default device is its GPU"
    return None


def run_example(example: Example, world: Path, cwd: Path) -> None:
    """Run an example in ``cwd`` after putting there what it reads; fail the test if a line fails."""
    try:
        lines, written = plan(example), set()
        for line in lines:
            r = reads(line)
            for path, role, langs in r.paths:
                if not under(path, written):
                    provide(world, cwd, path, role, langs)
            written |= r.words - {os.path.normpath(p) for p, _, _ in r.paths}
    except ValueError as err:  # the line does not parse as a shell line
        pytest.fail(f"{example}\n  does not parse in a shell: {err}")
    for line in lines:
        what = f"{example}" if line == example.line else f"{example}\n  (first, as shown before it: {line})"
        run_line(line, cwd, what, example.clients if line == example.line else ())


def run_line(line: str, cwd: Path, what: str, clients: tuple[str, ...] = ()) -> None:
    ws = words(line)
    parts = stages(ws)
    simple = len(parts) == 1 and parts[0][0][:1] == ["nmtkit"] and not OPERATORS - {"|", "<", ">"} & set(ws)
    if not simple:
        return run_shell(line, cwd, what)
    stage, stdin, stdout = parts[0]
    args = cut(stage[1:])
    if args[:1] == ["serve"]:
        r = serve(args, cwd, clients)
    else:
        with contextlib.chdir(cwd):
            r = CliRunner().invoke(main, args, input=Path(stdin).read_bytes() if stdin else None)
    if stdout:
        (cwd / stdout).parent.mkdir(parents=True, exist_ok=True)
        (cwd / stdout).write_bytes(r.stdout_bytes)
    check(what, r.exit_code, r.output + _traceback(r), " ".join(["nmtkit", *args]))


def check(what: str, status: int, output: str, ran: str) -> None:
    if status != 0:
        pytest.fail(f"{what}\n  exited {status} (ran: {ran}):\n{output[-4000:]}", pytrace=False)
    if said := OLD_SPELLING.search(output):
        line = output[output.rfind("\n", 0, said.start()) + 1 :].partition("\n")[0]
        pytest.fail(f"{what}\n  uses a spelling nmtkit warns about: {line}", pytrace=False)


@functools.cache
def nmtkit_bin() -> Path:
    """Where a shell line finds ``nmtkit``: the venv's bin, or, for a checkout run unbuilt
    (``PYTHONPATH=.``, as on a GPU machine with its own torch), a script running ``python -m nmtkit``."""
    venv = Path(sys.executable).parent
    if (venv / "nmtkit").exists():
        return venv
    shim = Path(tempfile.mkdtemp(prefix="nmtkit-bin-"))
    (shim / "nmtkit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nmtkit "$@"\n', encoding="utf-8")
    (shim / "nmtkit").chmod(0o755)
    for tool in ("python", "python3"):  # the same interpreter as the tests, not the system's
        (shim / tool).symlink_to(sys.executable)
    return shim


def run_shell(line: str, cwd: Path, what: str) -> None:
    checkout = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PATH": f"{nmtkit_bin()}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH", "")])),
        "OMP_NUM_THREADS": "1",
        "PET_MASTER_PORT": str(free_port()),
    }  # torchrun's rendezvous on a free port
    script = shell(line)
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    check(what, done.returncode, done.stdout[-2000:] + done.stderr, script)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(args: list[str], cwd: Path, clients: tuple[str, ...]):
    """nmtkit serve as written, but on a free loopback port and only until /health and the
    example's curl lines are answered."""
    pytest.importorskip("fastapi", reason="nmtkit serve needs the serve extra")
    uvicorn = pytest.importorskip("uvicorn", reason="nmtkit serve needs the serve extra")

    from nmtkit.serve import app as serve_app

    named, listening = [], serve_app.listening  # the port the example names, which its curl lines ask

    def loopback(host: str, port: int) -> socket.socket:
        named.append(port)
        return listening("127.0.0.1", 0)  # a free port, whatever the example names

    def run(app, sock: socket.socket, shutdown_wait: float) -> None:
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            for _ in range(600):
                if server.started or not thread.is_alive():
                    break
                time.sleep(0.05)
            assert server.started, "the server did not start"
            here = f"http://127.0.0.1:{sock.getsockname()[1]}"
            with urllib.request.urlopen(here + "/health", timeout=30) as res:
                assert json.loads(res.read()) == {"status": "ok"}
            for client in clients:
                curl(client, here, named[-1])
        finally:
            server.should_exit = True
            thread.join(30)

    with (
        contextlib.chdir(cwd),
        mock.patch.object(serve_app, "listening", loopback),
        mock.patch.object(serve_app, "run_server", run),
    ):
        return CliRunner().invoke(main, args)


def curl(line: str, here: str, port: int) -> None:
    """A curl line of the README or --help, sent to the server the example before it started."""
    ws, url, headers, data, method = words(line)[1:], None, {}, None, None
    it = iter(ws)
    for w in it:
        if w in ("-H", "--header"):
            key, _, value = next(it).partition(":")
            headers[key.strip()] = value.strip()
        elif w in ("-d", "--data", "--data-raw"):
            data = next(it).encode()
        elif w in ("-X", "--request"):
            method = next(it)
        elif not w.startswith("-"):
            url = w
    m = re.match(r"(?:https?://)?(?:localhost|127\.0\.0\.1)(?::(\d+))?(/.*)?$", url or "")
    assert m, f"curl asks {url}, not this machine"
    assert int(m.group(1) or 80) == port, f"curl asks port {m.group(1) or 80}; the server listens on {port}"
    req = urllib.request.Request(here + (m.group(2) or "/"), data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            assert 200 <= res.status < 300 and res.read()
    except urllib.error.HTTPError as err:
        raise AssertionError(f"{line}\n  was answered {err.code}: {err.read()[:500]!r}") from None


# ---------------------------------------------------------------------------------------------
# The tests


def params(examples: list[Example]) -> list:
    """A test case per example, named where it is shown: translate-2 (its --help's second
    example), L77 (README.md's line 77), and the command it runs where that is another."""
    out, index = [], {}
    for e in examples:
        ws = e.line.split()
        command = next((ws[i + 1] for i, w in enumerate(ws[:-1]) if w == "nmtkit"), ws[0])
        if e.where.endswith(" --help"):
            name = e.where.removesuffix(" --help")
            index[name] = index.get(name, 0) + 1
            key = f"{name}-{index[name]}" + (f"-{command}" if command != name else "")
        else:
            key = f"L{e.where.rsplit(':', 1)[1]}-{command}"
        slow = e.line.startswith("torchrun") or "--compile" in ws  # processes, or a minute of compiling
        out.append(pytest.param(e, id=key, marks=[pytest.mark.slow] if slow else []))
    return out


HELP = help_examples()
SHOWN = readme_examples(README.read_text(encoding="utf-8")) if README.exists() else []


@pytest.mark.parametrize("example", params(HELP))
def test_help_example_runs(example, request, tmp_path, monkeypatch):
    if reason := skip_reason(example.line):
        pytest.skip(reason)
    from tests.test_guided_alignment import fake_eflomal  # word-align's aligner, where eflomal is not installed

    monkeypatch.setenv("PATH", f"{fake_eflomal(tmp_path / 'stub-bin')}{os.pathsep}{os.environ.get('PATH', '')}")
    run_example(example, request.getfixturevalue("world"), tmp_path)


@pytest.mark.parametrize("example", params(SHOWN))
def test_readme_example_runs(example, request, tmp_path):
    if reason := skip_reason(example.line):
        pytest.skip(reason)
    run_example(example, request.getfixturevalue("world"), tmp_path)


def test_every_command_shows_an_example():
    shown = {e.where.removesuffix(" --help") for e in HELP}
    assert set(main.commands) <= shown, f"no example in the --help of {sorted(set(main.commands) - shown)}"


def test_the_examples_are_read_as_a_shell_reads_them():
    text = "\n".join(
        [
            "```sh",
            "make demo    # not nmtkit",
            "nmtkit train data-bin \\",
            "    --save-dir runs/a   # a comment",
            "$ nmtkit info runs/a",
            "nmtkit serve -m best.pt",
            "curl -s localhost:8080/health",
            "```",
            "```python",
            "nmtkit = 1",
            "```",
            "```",
            "echo hi | nmtkit tokenize -l en",
            "```",
        ]
    )
    found = readme_examples(text, "R")
    assert [(e.where, e.line) for e in found] == [
        ("R:3", "nmtkit train data-bin      --save-dir runs/a   # a comment"),
        ("R:5", "nmtkit info runs/a"),
        ("R:6", "nmtkit serve -m best.pt"),
        ("R:13", "echo hi | nmtkit tokenize -l en"),
    ]
    assert found[2].clients == ("curl -s localhost:8080/health",) and found[1].before == (found[0].line,)
    assert plan(found[1]) == [found[0].line, found[1].line]  # info reads what train writes
    assert cut(["train", "d", "--preset", "small", "--max-updates=9"]) == [
        "train",
        "d",
        "--preset",
        "tiny",
        "--max-updates",
        "2",
    ]
    assert shell("echo 'a b' | nmtkit tokenize -l en > out") == "echo 'a b' | nmtkit tokenize -l en -j 1 > out"
    assert shell('eval "$(nmtkit info x)"') == 'eval "$(nmtkit info x)"'  # as written: nothing to cut


BODY = """-H 'Content-Type: application/json' -d '{"sentences": ["In the beginning"]}'"""


@pytest.mark.parametrize(
    "line, clients",
    [
        ("nmtkit translate --no-such-flag -m best.pt test.en", ()),  # in this process
        ("echo 'In the beginning' | nmtkit translate --no-such-flag -m best.pt", ()),  # in bash, a pipeline
        ("nmtkit build-vocab -s en -t fr --train clean/train -o vocab", ()),  # an old spelling: it warns
        ("nmtkit serve -m best.pt", ("curl -s localhost:8081/translate " + BODY,)),  # another port than served
        ("nmtkit serve -m best.pt", ("curl -s localhost:8080/translate -d '{\"sentences\": 3}'",)),  # answered 4xx
    ],
    ids=["unknown-option", "unknown-option-in-a-pipeline", "old-spelling", "curl-elsewhere", "curl-refused"],
)
def test_a_broken_example_fails(line, clients, world, tmp_path):
    with pytest.raises(pytest.fail.Exception, match=re.escape(line)):
        run_example(Example("broken --help", line, clients=clients), world, tmp_path)
