"""A closed pipe ends a command quietly with 141 (128 + SIGPIPE), as a Unix filter killed by
SIGPIPE does: ``nmtkit … | head -1`` is not an error, and a script's ``set -o pipefail``
still sees that the writer did not finish."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EN, FR

ROOT = Path(__file__).resolve().parent.parent
LINES = 20000  # more than a pipe's 64 KiB: the writer meets the closed pipe while it runs


def piped(command: str, cwd: Path, reader: str = "head -1") -> tuple[int, str, str]:
    """(the nmtkit side's exit status, what the reader printed, nmtkit's stderr) of COMMAND | READER."""
    script = f'{command} 2>nmtkit.err | {reader}; echo "status ${{PIPESTATUS[0]}}"'
    # unbuffered (python -u, many containers): the harder case, where a write cut short by the reader's
    # leaving lost the rest without an error, and the command ended 0
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
    }
    done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout.splitlines()
    return int(out[-1].split()[1]), out[0] if len(out) > 1 else "", (cwd / "nmtkit.err").read_text()


@pytest.mark.parametrize("stdin", [False, True])
def test_tokenize_into_head_exits_141_and_says_nothing(tmp_path, stdin):
    (tmp_path / "in.en").write_text("".join(EN[i % len(EN)] + "\n" for i in range(LINES)), encoding="utf-8")
    nmtkit = f"{sys.executable} -m nmtkit tokenize -l en -j 1"
    status, first, err = piped(f"{nmtkit} < in.en" if stdin else f"{nmtkit} in.en", tmp_path)
    assert (status, err) == (141, "") and first.startswith("In the beginning God created")


@pytest.mark.parametrize("stdin", [False, True])
def test_tokenize_appended_to_its_own_input_is_refused(tmp_path, stdin):
    """tokenize FILE >> FILE read the lines it wrote, on and on, until the disk was full."""
    text = "".join(EN[i % len(EN)] + "\n" for i in range(LINES))
    (tmp_path / "in.en").write_text(text, encoding="utf-8")
    nmtkit = f"{sys.executable} -m nmtkit tokenize -l en -j 1"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    script = f"{nmtkit} - < in.en >> in.en" if stdin else f"{nmtkit} in.en >> in.en"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    named = "INPUT -" if stdin else "INPUT in.en"
    assert (
        done.returncode == 2
        and done.stderr == f"nmtkit tokenize: error: stdout: the same file as {named}: give another path\n"
    )
    assert (tmp_path / "in.en").read_text(encoding="utf-8") == text


def test_translate_into_head_exits_141_and_says_nothing(overfit, tmp_path):
    (tmp_path / "in.en").write_text("".join(EN[i % 4] + "\n" for i in range(LINES // 4)), encoding="utf-8")
    status, first, err = piped(
        f"{sys.executable} -m nmtkit translate -m {overfit / 'run' / 'best.pt'} --beam 1 --threads 1 -q < in.en",
        tmp_path,
    )
    assert (status, err) == (141, "") and first


def test_a_short_output_that_head_did_not_need_still_ends_0(tmp_path):
    (tmp_path / "in.en").write_text(EN[0] + "\n", encoding="utf-8")
    status, first, err = piped(f"{sys.executable} -m nmtkit tokenize -l en -j 1 in.en", tmp_path)
    assert (status, err) == (0, "") and first


# Every command that writes to stdout, in a pipe whose reader leaves before it is done: `head -1`
# where the output is long (more than a pipe holds), and where it is a few lines (a report, a
# help text) a reader gone before the first write, `true`. {model}: a checkpoint, {run}: its
# training run, {bin}: a data-bin; many.*: 5,000 lines, few.*: 50.
TO_STDOUT = {
    "tokenize": [("tokenize -l en -j 2 many.en", "head -1")],
    "translate": [
        ("translate -m {model} --beam 1 --threads 1 -q many.en", "head -1"),
        ("translate -m {model} --dump-config -", "true"),
    ],
    "align": [("align -m {model} --source many.en --target many.fr --threads 1 -q", "head -1")],
    "score": [
        ("score few.fr -r few.fr --sentence-level --metrics bleu,chrf", "true"),
        ("score many.fr -r many.fr --sentence-level --metrics bleu", "head -1"),
        ("score few.fr -r few.fr", "true"),
    ],
    "score-align": [("score-align few.links -g gold.links", "true")],
    "rescore": [("rescore -m {model} --source few.en --target few.fr --threads 1 -q", "true")],
    "rerank": [("rerank many.nbest -q", "head -1")],
    "info": [("info {model}", "true"), ("info {run}", "true"), ("info {bin}", "true")],
    "train": [("train {bin} --save-dir run --dump-config -", "true")],
}
# The commands whose results go to files or over HTTP: stdout has only their --help.
HELP_ONLY = {
    "fetch-bible",
    "preprocess",
    "build-vocab",
    "select",
    "reverse",
    "word-align",
    "align-plot",
    "average",
    "lexicon",
    "serve",
}


@pytest.fixture(scope="module")
def inputs(overfit, tmp_path_factory):
    """The files every command reads, and the names in TO_STDOUT's command lines."""
    d = tmp_path_factory.mktemp("pipes")
    for side, text in (("en", EN), ("fr", FR)):
        for name, n in (("many", 5000), ("few", 50)):
            (d / f"{name}.{side}").write_text("".join(text[i % 4] + "\n" for i in range(n)), encoding="utf-8")
    (d / "few.links").write_text("0-0 1-1\n" * 50, encoding="utf-8")
    nbest = "".join(f"{i} ||| {FR[i % 4]} ||| F0= -{i % 3}.5 ||| -1\n" for i in range(5000))
    (d / "many.nbest").write_text(nbest, encoding="utf-8")
    (d / "gold.links").write_text("0-0 1-1 2?2\n" * 50, encoding="utf-8")
    return d, {"model": overfit / "run" / "best.pt", "run": overfit / "run", "bin": overfit / "bin-kept"}


def test_every_command_is_in_the_table():
    from nmtkit.cli import main

    assert set(TO_STDOUT) | HELP_ONLY == set(main.commands) and not set(TO_STDOUT) & HELP_ONLY


@pytest.mark.parametrize("command,reader", [case for cases in TO_STDOUT.values() for case in cases])
def test_every_command_into_a_closed_pipe_exits_141_and_says_nothing(inputs, command, reader):
    cwd, names = inputs
    status, _, err = piped(f"{sys.executable} -m nmtkit {command.format(**names)}", cwd, reader)
    assert (status, err) == (141, "")


def test_every_help_and_the_version_into_a_closed_pipe_exit_141_and_say_nothing(tmp_path):
    from nmtkit.cli import main

    asked = ["--help", "--version"] + [f"{name} --help" for name in sorted(main.commands)]
    found = {args: piped(f"{sys.executable} -m nmtkit {args}", tmp_path, "true") for args in asked}
    assert {args: (status, err) for args, (status, _, err) in found.items()} == {args: (141, "") for args in asked}


def _translated_in_time(model: list[str], source: str, out: Path, options, prefix: str | None = None) -> str:
    """translate_file's output, run in a thread: a source read to its end and then again waits for
    good on a FIFO, which fails here rather than leave the suite waiting."""
    import threading

    from nmtkit.translate.io import translate_file

    ended: list[BaseException | None] = []

    def run() -> None:
        try:
            translate_file(model, source, str(out), options, prefix=prefix)
            ended.append(None)
        except BaseException as err:
            ended.append(err)

    runs = threading.Thread(target=run, daemon=True)
    runs.start()
    runs.join(timeout=120)
    assert ended, f"{source}: no end after 2 minutes (read to its end, then waiting to read it again?)"
    if ended[0] is not None:
        raise ended[0]
    return out.read_text(encoding="utf-8")


def test_input_and_prefix_from_a_pipe_by_name_are_read_once(overfit, tmp_path):
    """<(…), a FIFO and /dev/stdin are read as stdin is, as they come: counted first, they were
    read to their end before translation began ('is empty', or a hang on a FIFO)."""
    import threading

    from nmtkit.core.errors import UserError
    from nmtkit.translate.settings import SearchConfig, TranslateOptions

    model = [str(overfit / "run" / "best.pt")]
    text = "".join(line + "\n" for line in EN[:3])
    starts = "".join(line.split()[0] + "\n" for line in FR[:3])
    (tmp_path / "in.en").write_text(text, encoding="utf-8")
    (tmp_path / "starts.fr").write_text(starts, encoding="utf-8")
    options = TranslateOptions(search=SearchConfig(beam=2))

    def translated(source: str, prefix: str | None = None) -> str:
        return _translated_in_time(model, source, tmp_path / "out.fr", options, prefix)

    fds: list[int] = []

    def pipe(content: str) -> str:  # what bash's <(printf …) hands a command: /dev/fd/N of a pipe
        read, write = os.pipe()
        fds.append(read)
        threading.Thread(target=lambda: (os.write(write, content.encode()), os.close(write)), daemon=True).start()
        return f"/dev/fd/{read}"

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    try:
        want = translated(str(tmp_path / "in.en"))
        assert len(want.splitlines()) == 3
        assert translated(pipe(text)) == want
        threading.Thread(target=fifo.write_text, args=(text,), daemon=True).start()
        assert translated(str(fifo)) == want
        prefixed = translated(str(tmp_path / "in.en"), str(tmp_path / "starts.fr"))
        assert prefixed.splitlines()[0].startswith(FR[0].split()[0])
        assert translated(str(tmp_path / "in.en"), pipe(starts)) == prefixed
        with pytest.raises(UserError, match="--prefix has 2 lines, the input more"):
            translated(str(tmp_path / "in.en"), pipe("".join(starts.splitlines(keepends=True)[:2])))
    finally:
        for fd in fds:
            os.close(fd)
        for end in (os.O_RDONLY, os.O_WRONLY):  # a side still waiting in open() for the other is let go
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, end | os.O_NONBLOCK))
    # /dev/stdin on a pipe: the command's own stdin, so a command of its own
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    nmtkit = f"{sys.executable} -m nmtkit translate -m {model[0]} --beam 2 --threads 1 -q"
    got = subprocess.run(
        ["bash", "-c", f"cat in.en | {nmtkit} /dev/stdin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert (got.returncode, got.stdout, got.stderr) == (0, want, "")


def test_force_color_draws_no_bar_into_a_log_file(raw, tmp_path):
    """rich reads FORCE_COLOR (set by CI services for colours) as a terminal: translate's bar
    redrew itself into a log file, 13 KB of carriage returns in 7 s."""
    env = {**os.environ, "FORCE_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    args = ["preprocess", "-s", "en", "-t", "fr", "--train", str(raw / "train"), "-d", str(tmp_path / "c"), "-j", "1"]
    done = subprocess.run([sys.executable, "-m", "nmtkit", *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "\x1b[" not in done.stderr, done.stderr[:300]


def test_a_corpus_read_more_than_once_refuses_a_pipe_rather_than_wait_for_ever(tmp_path):
    """Its lines were counted from the pipe, then the second reading waited on a pipe no one would
    write again (preprocess, build-vocab, select: a silent hang)."""
    for lang, lines in (("en", EN), ("fr", FR)):
        os.mkfifo(tmp_path / f"p.{lang}")
        (tmp_path / f"t.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    commands = [
        ["preprocess", "-s", "en", "-t", "fr", "--train", tmp_path / "p", "-d", tmp_path / "out"],
        ["build-vocab", "-s", "en", "-t", "fr", "--train", tmp_path / "p", "-d", tmp_path / "out"],
        ["select", "-s", "en", "-t", "fr", "--in-domain", tmp_path / "t", "--general", tmp_path / "p"]
        + ["--keep-words", "10", "-d", tmp_path / "out"],
    ]
    for args in commands:
        done = subprocess.run(
            [sys.executable, "-m", "nmtkit", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "p.en: a pipe or a device, which this command would read more than once" in done.stderr
        assert not (tmp_path / "out").exists()


def test_stdin_and_stdout_by_their_other_names_are_still_one_stream(overfit, tmp_path):
    """--prefix /dev/stdin beside INPUT '-' said the prefix ran short; --alignments /dev/stdout mixed
    its JSON lines into the translations, exit 0: only '-' was taken for the streams."""
    (tmp_path / "s.en").write_text(f"{EN[0]}\n{EN[1]}\n", encoding="utf-8")
    (tmp_path / "p.fr").write_text(f"{FR[0].split()[0]}\n\n", encoding="utf-8")
    nmtkit = f"{sys.executable} -m nmtkit translate -m {overfit / 'run' / 'last.pt'} --beam 2 --threads 1 -q"
    script = "; ".join(
        [
            f"cat s.en | {nmtkit} - --prefix /dev/stdin 2>one.err; echo $?",
            f"{nmtkit} s.en --alignments /dev/stdout 2>two.err | cat; echo ${{PIPESTATUS[0]}}",
            f"{nmtkit} s.en --alignments a.txt 2>three.err > a.txt; echo $?",
            f"{nmtkit} s.en --prefix /dev/stdin < p.fr 2>four.err | wc -l",  # a file on stdin: opened afresh
        ]
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.split() == ["2", "2", "2", "2"], done.stdout
    errors = [(tmp_path / f"{n}.err").read_text() for n in ("one", "two", "three", "four")]
    assert "INPUT and --prefix cannot both read stdin" in errors[0]
    assert all("the translations and the alignments cannot both go to stdout" in e for e in errors[1:3]), errors
    assert all(e.count("\n") == 1 for e in errors[:3]) and errors[3] == "", errors


def test_a_command_reading_the_terminal_says_so_before_it_waits(tmp_path):
    """translate typed without its input waited in silence for the terminal's lines."""
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    cmd = [sys.executable, "-m", "nmtkit", "tokenize", "-l", "en", "-j", "1"]
    with subprocess.Popen(cmd, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        os.close(follower)
        os.write(leader, b"Hello, world\n\x04")
        out, err = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, err
    assert err.decode().startswith("reading the terminal: a line at a time, Ctrl-D to end")
    assert out.decode() == "Hello , world\n"


@pytest.mark.parametrize(
    "command,named",
    [
        ("translate -m {model} in.en", "INPUT in.en"),
        ("translate -m {model} < in.en", "INPUT -"),
        ("align -m {model} --source in.en --target in.fr", "--target in.fr"),
        ("rescore -m {model} --source in.en --target in.fr", "--target in.fr"),
        ("rerank in.en", "NBEST_LIST in.en"),
    ],
    ids=["translate", "translate-stdin", "align", "rescore", "rerank"],
)
def test_a_filter_appended_to_its_own_input_is_refused(overfit, tmp_path, command, named):
    """translate FILE >> FILE (no -o) translated the lines it wrote, on and on: only -o was checked."""
    (tmp_path / "in.en").write_text("".join(x + "\n" for x in EN), encoding="utf-8")
    (tmp_path / "in.fr").write_text("".join(x + "\n" for x in FR), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    target = "in.en" if named == "INPUT -" else named.split()[-1]
    done = shell(
        f"{sys.executable} -m nmtkit {command.format(model=overfit / 'run' / 'last.pt')} >> {target}", tmp_path
    )
    name = command.split()[0]
    assert (done.returncode, done.stderr) == (
        2,
        f"nmtkit {name}: error: stdout: the same file as {named}: give another path\n",
    )
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_stdin_opened_for_writing_only_is_one_line(tmp_path):
    """0>>FILE gave a traceback (EBADF) at the first read."""
    (tmp_path / "in.en").write_text("Amen.\n", encoding="utf-8")
    done = shell(f"{sys.executable} -m nmtkit tokenize -l en 0>>in.en", tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "nmtkit tokenize: error: stdin is open for writing only (0>FILE): give the input as a file, "
        "or redirect it with <\n",
    )


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A bash script run in ``cwd`` with this checkout's nmtkit, its output captured."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
