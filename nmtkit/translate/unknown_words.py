"""Unknown words in a translation: each ``<unk>`` the search wrote replaced by the source word it
attends to most, or by that word's translation in a dictionary (``translate --replace-unk``,
``--unk-dict``; Luong et al. 2015, Jean et al. 2015)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.errors import UserError
from ..core.files import read_lines
from ..data.vocab import UNK
from ..text.bpe import GUESSED, SPM_MARK, UnitKinds, is_spm_units, word_of, word_start


def read_unk_dict(path: str | Path) -> dict[str, str]:
    """'source target' per line (whitespace-separated; the first translation listed wins), a third
    column, a number (a lexical table's probability), allowed and not read. A line of more words (a
    sentence file given by mistake) is refused: its first two were taken for a translation."""
    table: dict[str, str] = {}
    for lineno, line in enumerate(read_lines(path), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2 or len(parts) > 3 or (len(parts) == 3 and not _is_number(parts[2])):
            raise UserError(
                f"{path}: line {lineno} is not 'source-word target-word' (a probability may follow): {line[:40]!r}"
            )
        table.setdefault(parts[0], parts[1])
    return table


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def replace_unk(
    tokens: list[str],
    ids: list[int],
    source: list[str],
    alpha: np.ndarray,
    table: dict[str, str] | None,
    sentencepiece: UnitKinds = GUESSED,
) -> list[str]:
    """Each <unk> becomes the source word it attends to most (</s> excluded), or that word's
    dictionary translation (Luong et al. 2015; Jean et al. 2015): the whole word, where the source
    is in subwords, and a word of its own in the translation's (a copied ``Beth@@`` had joined the
    next word). ``sentencepiece``: the source's and the translation's kinds of units, as the
    codes say them (None: guessed from the units)."""
    if UNK not in ids or not source:
        return tokens
    aligned = alpha[: len(ids), : len(source)].argmax(1)
    src_spm, tgt_spm = sentencepiece
    starts = SPM_MARK if is_spm_units(tokens, tgt_spm) else ""
    out: list[str] = []
    last = None  # where the word the <unk> before this one was replaced by begins
    for tok, i, j in zip(tokens, ids, aligned):
        if i != UNK:
            out.append(tok)
            last = None
            continue
        begins = word_start(source, int(j), src_spm)
        word = word_of(source, int(j), src_spm)
        # <unk>s in a row that read one source word (its subwords, one by one) write it once
        out.append("" if begins == last else starts + (table.get(word, word) if table else word))
        last = begins
    return out
