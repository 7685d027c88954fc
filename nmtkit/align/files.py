"""The attention file of ``translate --alignments``: a header line, then one JSON record per
translated line (source and target tokens, the attention weights, the score).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.files import read_lines
from ..text.bpe import GUESSED, UnitKinds

# a line of Pharaoh links, sure (i-j) or possible (i?j)
_PHARAOH = re.compile(r"[0-9]+[-?][0-9]+(\s+[0-9]+[-?][0-9]+)*")

ALIGNMENT_FORMAT = "nmtkit-alignments"
EOS_LABEL = "</s>"


def alignment_record(
    lineno: int, source: list[str], target: list[str], attention: Any, score: float, sentencepiece: UnitKinds = GUESSED
) -> dict[str, Any]:
    """One line of an alignment file: tokens with </s> on both axes and α (rows: target, one per
    target token and </s>; None: no attention kept), and the two sides' kinds of units where they
    are known (``align-plot`` finds the words by them)."""
    alignment = [] if attention is None else [[round(float(a), 4) for a in row] for row in attention]
    record = {
        "line": lineno,
        "source": source + [EOS_LABEL],
        "target": target + [EOS_LABEL],
        "score": round(score, 4),
        "alignment": alignment if source else [],
    }
    return record | ({} if sentencepiece == GUESSED else {"sentencepiece": list(sentencepiece)})


def alignment_line(
    lineno: int, source: list[str], target: list[str], attention: Any, score: float, sentencepiece: UnitKinds = GUESSED
) -> str:
    """:func:`alignment_record` as the file's line of JSON (without its newline)."""
    return json.dumps(alignment_record(lineno, source, target, attention, score, sentencepiece), ensure_ascii=False)


def unit_kinds(record: dict[str, Any]) -> UnitKinds:
    """The kinds of units a record says (:func:`alignment_record`); guessed where it says none,
    as a file of an earlier nmtkit does not, or says them otherwise than as two booleans."""
    kinds = record.get("sentencepiece")
    if isinstance(kinds, list) and len(kinds) == 2 and all(k is None or isinstance(k, bool) for k in kinds):
        return kinds[0], kinds[1]
    return GUESSED


ALIGNMENT_VERSION = 1


def header() -> str:
    """The first line of an alignment file."""
    return json.dumps({"format": ALIGNMENT_FORMAT, "version": ALIGNMENT_VERSION})


def is_alignment_header(line: str) -> bool:
    """Whether ``line`` is the first line of an alignment file (:func:`header`)."""
    try:
        first = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(first, dict) and first.get("format") == ALIGNMENT_FORMAT


def read_alignments(path: str | Path) -> dict[int, dict[str, Any]]:
    """An alignment file by line number; refuses anything else with one clear line."""
    records: dict[int, dict[str, Any]] = {}
    lines = read_lines(path)
    first = next(lines, "")
    if not is_alignment_header(first):
        links = _PHARAOH.fullmatch(first.strip()) is not None  # a Pharaoh file given alone
        raise UserError(
            f"{path}: not an alignment file (made by nmtkit translate --alignments)"
            + ("; Pharaoh links need --source and --target (Moses tokens)" if links else "")
        )
    header = json.loads(first)
    if (version := header.get("version", ALIGNMENT_VERSION)) != ALIGNMENT_VERSION:  # none: taken as this one
        raise UserError(
            f"{path}: alignment file version {version} is not supported (this nmtkit reads "
            f"{ALIGNMENT_VERSION}); make it again with this nmtkit"
        )
    for k, line in enumerate(lines, 2):
        try:
            rec = json.loads(line)
            n = int(rec["line"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise UserError(f"{path}: line {k} is not an alignment record") from None
        if n in records:  # two files joined, or one edited: the last one was drawn without a word
            raise UserError(f"{path}: line {k} is a second record of sentence {n}")
        records[n] = rec
    return records


def spans(numbers: Iterable[int]) -> str:
    """Line numbers as runs: 1-3, 7, 9-12."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)
