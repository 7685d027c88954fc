"""Word links of a training corpus from a statistical aligner, the teacher of guided alignment.

eflomal (Östling & Tiedemann 2016; nmtkit's align extra, built from source with the
system's C compiler) aligns the Moses-tokenized text in both directions, lowercased as its
authors advise for small corpora; the two directions are symmetrised with grow-diag-final-and,
which scored best of the readings measured on the gold verses (docs/alignment.md). The output
is one Pharaoh line per sentence pair (``i-j``: source word i, target word j), which
``preprocess --vocab --align-suffix links`` maps onto subword units.

eflomal runs as its own program (``eflomal-align``), not imported: it is GPL-licensed, and a
process of its own keeps it out of nmtkit's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..core.console import log, progress
from ..core.errors import UserError
from ..core.extras import install_command
from ..core.files import atomic_write, read_lines
from ..core.line_counts import check_parallel
from ..core.wording import counted
from .links import pharaoh, read_pharaoh
from .symmetrize import grow_diag_final_and

# eflomal's reader leaves out a sentence of this many tokens or more: the pair gets no link (eflomal
# 2.0.0: 1,023 aligned, 1,024 not)
EFLOMAL_LONGEST = 1024


def aligner() -> Path:
    """The eflomal-align program beside this Python (a virtual environment's bin/) or on PATH."""
    here = Path(sys.executable).parent / "eflomal-align"
    found = here if here.exists() else shutil.which("eflomal-align")
    if not found:
        raise UserError(f"eflomal is not installed: {install_command('align')} (it builds with a C compiler)")
    return Path(found)


def _run_alone(argv: list[str], work: Path) -> tuple[int, str]:
    """Run the aligner in a process group of its own, its temporary files in ``work``: its exit
    status and stderr. Stopped for any reason (Ctrl-C, SIGTERM, an error), the whole group is
    killed: eflomal-align starts the eflomal binary, which killing the wrapper alone would leave
    running, and the wrapper's temporary files go with ``work``."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "TMPDIR": str(work)}
    with subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    ) as child:
        try:
            _, stderr = child.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
    return child.returncode, stderr


def symmetrized(forward: str, reverse: str, how: str, where: str) -> str:
    """One Pharaoh line from the two directions' lines (both source-target pairs)."""
    fw, rv = set(read_pharaoh(forward, f"{where} (forward)")), set(read_pharaoh(reverse, f"{where} (reverse)"))
    if how == "grow-diag-final-and":
        links = grow_diag_final_and(fw, rv)
    else:
        links = {"intersection": fw & rv, "forward": fw, "reverse": rv}[how]
    return pharaoh(sorted(links))


def word_align(
    source: Path, target: Path, out: Path, how: str = "grow-diag-final-and", lowercase: bool = True
) -> dict[str, Any]:
    """Links of every pair of the parallel files ``source`` and ``target`` (Moses tokens, one
    sentence a line) written to ``out``; what it did: pairs, links, seconds."""
    pairs = check_parallel([source, target])
    program = aligner()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nmtkit-align-") as tmp:
        work = Path(tmp)
        too_long: set[int] = set()
        for name, path in (("source", source), ("target", target)):
            words = False
            with open(work / name, "w", encoding="utf-8") as fh:
                for k, line in enumerate(read_lines(path, allow_empty=True), 1):
                    words = words or bool(line.strip())
                    if len(line.split()) >= EFLOMAL_LONGEST:
                        too_long.add(k)
                    fh.write((line.lower() if lowercase else line) + "\n")
            if not words:  # eflomal would write as many empty lines, exit 0
                raise UserError(f"{path}: holds only empty lines, no word to align")
        if too_long:
            first = ", ".join(map(str, sorted(too_long)[:5])) + (", …" if len(too_long) > 5 else "")
            log(
                f"warning: {counted(len(too_long), 'pair')} with a side of {EFLOMAL_LONGEST:,} words "
                f"or more (line {first}): eflomal gives them no link"
            )
        log(f"aligning {pairs:,} pairs with eflomal, both directions (a few minutes for 250,000 pairs)")
        returncode, stderr = _run_alone(
            [str(program), "--overwrite", "-s", str(work / "source"), "-t", str(work / "target")]
            + ["-f", str(work / "forward"), "-r", str(work / "reverse")],
            work,
        )
        if returncode != 0:
            last = (stderr.strip().splitlines() or ["no message"])[-1]
            raise UserError(f"eflomal-align failed (exit {returncode}): {last}")
        links = k = 0
        with (
            atomic_write(out) as fh,
            progress("pairs") as bar,
            open(work / "forward", encoding="utf-8") as fw,
            open(work / "reverse", encoding="utf-8") as rv,
        ):
            task = bar.add_task(f"symmetrize ({how})", total=pairs)
            for k, (f_line, r_line) in enumerate(zip(fw, rv), 1):
                line = symmetrized(f_line, r_line, how, f"eflomal's line {k}")
                links += line.count("-")
                fh.write(line + "\n")
                bar.advance(task)
            if k != pairs:
                raise UserError(f"eflomal-align wrote links for {k:,} of the {pairs:,} pairs")
    return {"pairs": pairs, "links": links, "seconds": time.perf_counter() - start, "symmetrization": how}
