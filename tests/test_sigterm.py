"""SIGTERM (``timeout``, a job queue, make killing a recipe) ends a command as an error ends it: one
line, status 143 (128 + SIGTERM), and no output half-written, not even under a temporary name."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EN

ROOT = Path(__file__).resolve().parent.parent


STOPS = [(signal.SIGTERM, "terminated"), (signal.SIGHUP, "hung up")]  # SIGHUP: a closed terminal


@pytest.mark.parametrize(("stop", "said"), STOPS)
def test_sigterm_leaves_no_output_and_no_temporary_file(overfit, tmp_path, stop, said):
    (tmp_path / "in.en").write_text("".join(EN[i % 4] + "\n" for i in range(20000)), encoding="utf-8")
    out = tmp_path / "out" / "hyp.fr"
    cmd = [sys.executable, "-m", "nmtkit", "translate", "-m", str(overfit / "run" / "best.pt"), "in.en"]
    cmd += ["-o", str(out), "--beam", "2", "--threads", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    translating = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(out.parent.glob(".hyp.fr.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(out.parent.glob(".hyp.fr.*.tmp")), "translate never started writing"
    translating.send_signal(stop)
    _, err = translating.communicate(timeout=60)
    assert translating.returncode == 128 + stop
    assert err.strip().splitlines()[-1] == f"nmtkit translate: {said}"  # in a pipe of three, which one
    assert not out.parent.exists()  # neither the output nor its temporary name, nor the directory made for it


HANGING_ALIGNER = """\
import os, subprocess, sys, tempfile, time
held = tempfile.NamedTemporaryFile(delete=False)  # as eflomal-align's input files for its binary
binary = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["PIDS"], "w") as fh:
    fh.write(f"{os.getpid()} {binary.pid} {held.name}")
time.sleep(600)
"""


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("stop", "said"), STOPS)
def test_sigterm_in_word_align_stops_the_aligner_and_its_binary(tmp_path, stop, said):
    """The eflomal binary that eflomal-align starts went on aligning after the command ended, and
    the wrapper's temporary files stayed in /tmp."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "eflomal-align").write_text(f"#!{sys.executable}\n" + HANGING_ALIGNER, encoding="utf-8")
    (bin_dir / "eflomal-align").chmod(0o755)
    for lang, line in (("en", "Hello world ."), ("fr", "Bonjour le monde .")):
        (tmp_path / f"raw.{lang}").write_text(line + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    nmtkit = [sys.executable, "-m", "nmtkit"]
    made = subprocess.run(
        [*nmtkit, "preprocess", "-s", "en", "-t", "fr", "--train", "raw", "-d", "clean"], cwd=tmp_path, env=env
    )
    assert made.returncode == 0
    pids = tmp_path / "pids"
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "PIDS": str(pids)}
    cmd = [*nmtkit, "word-align", "-s", "en", "-t", "fr", "--train", "clean/train"]
    aligning = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pids.exists() and len(pids.read_text().split()) == 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    wrapper, binary, held = pids.read_text().split()
    aligning.send_signal(stop)
    _, err = aligning.communicate(timeout=60)
    assert aligning.returncode == 128 + stop and err.strip().splitlines()[-1] == f"nmtkit word-align: {said}"
    deadline = time.monotonic() + 10
    while (_alive(wrapper) or _alive(binary)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(wrapper) and not _alive(binary)
    assert not Path(held).exists() and not (tmp_path / "clean" / "train.links").exists()


def test_sighup_with_the_progress_bar_on_the_terminal_that_hung_up_ends_as_129(overfit, tmp_path):
    """The bar's last frame, drawn as the stack unwound, failed on the closed terminal (EIO):
    a traceback's status 1 in place of the hang-up's 129, which a pipe for stderr did not show."""
    import pty
    import select

    (tmp_path / "in.en").write_text("".join(EN[i % 4] + "\n" for i in range(20000)), encoding="utf-8")
    out = tmp_path / "out" / "hyp.fr"
    cmd = [sys.executable, "-m", "nmtkit", "translate", "-m", str(overfit / "run" / "best.pt"), "in.en"]
    cmd += ["-o", str(out), "--beam", "2", "--threads", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    terminal, its_end = pty.openpty()
    translating = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=its_end, stdin=subprocess.DEVNULL)
    os.close(its_end)
    deadline = time.monotonic() + 120
    while not list(out.parent.glob(".hyp.fr.*.tmp")) and time.monotonic() < deadline:
        if select.select([terminal], [], [], 0.05)[0]:  # the bar's frames, read: the terminal never fills
            os.read(terminal, 65536)
    assert list(out.parent.glob(".hyp.fr.*.tmp")), "translate never started writing"
    os.close(terminal)  # the terminal goes, then its hang-up
    translating.send_signal(signal.SIGHUP)
    assert translating.wait(timeout=60) == 128 + signal.SIGHUP
    assert not out.parent.exists()


ENDS = {"terminated": 128 + signal.SIGTERM, "hung up": 128 + signal.SIGHUP, "interrupted": 130}


@pytest.mark.parametrize("gap", [0, 0.002])
@pytest.mark.parametrize(
    "signals",
    [
        (signal.SIGTERM, signal.SIGHUP),  # systemd's stop with SendSIGHUP=yes
        (signal.SIGHUP, signal.SIGTERM),
        (signal.SIGINT, signal.SIGINT, signal.SIGINT),  # Ctrl-C pressed again and again
    ],
)
def test_stop_signals_back_to_back_end_the_command_once_as_its_line_says(tmp_path, signals, gap):
    """The second signal came while the first's exception unwound, or after the handlers were put
    back: a traceback with status 1, or the line of the first and the status of the second (the
    default handler's, killed by it). Sent at once, the kernel hands them over lowest first."""
    cmd = [sys.executable, "-m", "nmtkit", "tokenize", "-l", "en"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    filtering = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        filtering.stdin.write("Let there be light.\n")
        filtering.stdin.flush()
        assert filtering.stdout.readline() == "Let there be light .\n"  # waiting for the next line now
        for signum in signals:
            filtering.send_signal(signum)
            time.sleep(gap)
        err = filtering.communicate(timeout=60)[1]
    finally:
        filtering.kill()
    lines = [line.removeprefix("nmtkit tokenize: ") for line in err.splitlines()]
    assert len(lines) == 1 and lines[0] in ENDS and filtering.returncode == ENDS[lines[0]], (filtering.returncode, err)
    assert err.startswith("nmtkit tokenize: ")


def test_ctrl_c_while_the_command_s_libraries_load_is_one_line_and_130():
    """Before the command's guard is there (click and rich load in a tenth of a second), Ctrl-C
    gave a KeyboardInterrupt traceback of 20 to 30 lines."""
    script = """
import sys
class Interrupting:  # Ctrl-C as click is imported
    def find_spec(self, name, *args):
        if name == "click":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupting())
sys.argv = ["nmtkit", "--version"]
from nmtkit.__main__ import run
run()
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 0), (signal.SIGTERM, 0), (signal.SIGINT, 2)])
def test_a_stop_signal_after_the_command_has_ended_keeps_its_status(tmp_path, signum, status):
    """Ctrl-C in the half second of the interpreter's teardown (torch's) after a command's results
    were whole ended it as 130 without a line: a script took the run for failed."""
    script = f"""
import atexit, os, signal, sys, time
atexit.register(lambda: (os.kill(os.getpid(), {int(signum)}), time.sleep(1)))  # in the teardown
sys.argv = ["nmtkit", "tokenize", "-l", "en", sys.argv[1]]
from nmtkit.__main__ import run
run()
"""
    source = tmp_path / ("in.en" if status == 0 else "missing.en")
    if status == 0:
        source.write_text("Hello, world!\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, source], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert done.stdout == ("Hello , world !\n" if status == 0 else "") and "interrupted" not in done.stderr


def test_an_error_whose_stderr_reader_is_gone_still_exits_2(tmp_path):
    """``nmtkit … 2>&1 | true``: the error line met a closed pipe, and the BrokenPipeError made the
    status 1, as a defect's."""
    read, write = os.pipe()
    os.close(read)  # the reader gone before the line is written
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nmtkit", "tokenize", "-l", "en", "missing.txt"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=write,
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.returncode == 2


def _runs_as_pid_1() -> bool:
    probe = shutil.which("unshare") and subprocess.run(
        ["unshare", "-rpf", "--mount-proc", "true"], capture_output=True, timeout=30
    )
    return bool(probe) and probe.returncode == 0


@pytest.mark.skipif(not _runs_as_pid_1(), reason="needs unshare(1) and user namespaces to start a process as pid 1")
def test_a_torchrun_worker_whose_launcher_is_pid_1_runs():
    """torchrun as a container's entry point is pid 1: its workers took a parent of pid 1 for a
    launcher gone, and each ended itself at start, without a line."""
    env = {**os.environ, "TORCHELASTIC_RUN_ID": "pid-1", "PYTHONPATH": str(ROOT)}
    launcher = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"  # pid 1
    done = subprocess.run(
        [
            "unshare",
            "-rpf",
            "--mount-proc",
            sys.executable,
            "-c",
            launcher,
            sys.executable,
            "-m",
            "nmtkit",
            "--version",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("nmtkit "), (done.returncode, done.stderr)


def test_a_torchrun_worker_whose_launcher_ended_as_it_started_stops():
    """A launcher gone between the worker's start and its request for the signal: no signal comes,
    and the parent read as it started tells."""
    script = (
        "import os\nfrom nmtkit.core import stops\nstops.own_process(os.getppid() + 1)\nimport time\ntime.sleep(30)\n"
    )
    env = {**os.environ, "TORCHELASTIC_RUN_ID": "gone", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGTERM
