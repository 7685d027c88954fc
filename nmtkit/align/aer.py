"""Alignment error rate (Och & Ney 2003), as Luong et al. (2015, §5.4) judged attention.

A gold line holds sure links ``i-j`` and possible links ``i?j`` (source word
i, target word j, from 0); the possible set P includes the sure set S. For
hypothesis links A, summed over the corpus: precision |A∩P| / |A|, recall
|A∩S| / |S|, AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.files import read_lines, refuse_two_on_stdin
from ..core.wording import counted
from .links import read_pharaoh

_LINK = re.compile(r"([0-9]+)([-?])([0-9]+)")


def read_gold(line: str, where: str) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(sure, possible) links of one gold line; possible holds the sure ones too."""
    sure, possible = set(), set()
    for item in line.split():
        match = _LINK.fullmatch(item)
        if not match:
            raise UserError(f"{where}: '{item}' is not a gold link ('i-j' sure, 'i?j' possible)")
        link = (int(match.group(1)), int(match.group(3)))
        possible.add(link)
        if match.group(2) == "-":
            sure.add(link)
    return sure, possible


def alignment_error(
    hypotheses: Iterable[str], gold: Iterable[str], names: tuple[str, str] = ("hyp", "gold")
) -> dict[str, Any]:
    """Precision, recall and AER (in %) of Pharaoh lines against gold lines, with the counts."""
    a = s = p = a_s = a_p = n = 0
    hyp_lines, gold_lines = list(hypotheses), list(gold)
    if len(hyp_lines) != len(gold_lines):
        raise UserError(f"{names[0]} has {counted(len(hyp_lines), 'line')} but {names[1]} {len(gold_lines):,}")
    for k, (h, g) in enumerate(zip(hyp_lines, gold_lines), 1):
        links = set(read_pharaoh(h, f"{names[0]}, line {k}"))
        sure, possible = read_gold(g, f"{names[1]}, line {k}")
        a, s, p = a + len(links), s + len(sure), p + len(possible)
        a_s, a_p, n = a_s + len(links & sure), a_p + len(links & possible), n + 1
    if not n:
        raise UserError(f"{names[1]} is empty")
    if not s:  # AER, recall: 0/0, and no score says anything of the links
        raise UserError(f"{names[1]} holds no sure links ('i-j'): recall and AER count against them")
    return {
        "sentences": n,
        "links": a,
        "sure": s,
        "possible": p,
        "precision": 100 * a_p / a if a else 0.0,
        "recall": 100 * a_s / s,
        "aer": 100 * (1 - (a_s + a_p) / (a + s)),
    }


def score_files(hypothesis: str | Path, gold: str | Path) -> dict[str, Any]:
    refuse_two_on_stdin([("HYPOTHESIS", hypothesis), ("--gold", gold)])
    return alignment_error(read_lines(hypothesis), read_lines(gold), (str(hypothesis), str(gold)))
