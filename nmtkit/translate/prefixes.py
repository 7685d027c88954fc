"""``translate --prefix``: the start each output must have, as target ids the search forces."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..core.errors import UserError
from ..data.batching import pad
from ..data.sides import Side
from ..data.vocab import NOT_WORDS, UNK
from ..text.bpe import word_end, word_start
from .settings import TranslateOptions


def prefix_ids(
    prefixes: list[str],
    side: Side,
    options: TranslateOptions,
    right_to_left: bool,
    first_line: int,
    warn: Callable[[str], object],
) -> list[list[int]]:
    """Each prefix's target ids, through the target pipeline as references go; under
    ``no_unk`` cut before its first <unk>, which the search could never emit."""
    if right_to_left:
        raise UserError(
            "--prefix: the model writes right to left, from a translation's last word: it cannot be given "
            "the first ones"
        )
    units = [side.tokens(line, options.tokenized) for line in prefixes]
    out = [side.ids(each) for each in units]
    for k, (tokens, ids) in enumerate(zip(units, out)):
        if (at := next((j for j, t in enumerate(tokens) if t in NOT_WORDS), None)) is not None:
            said = f"--prefix holds {tokens[at]}, which no output can: forcing only what comes before it"
            warn(f"line {first_line + k}: {said}")
            del ids[at:]
        if UNK not in ids:
            continue
        if options.search.no_unk:
            warn(
                f"line {first_line + k}: --prefix has a word out of the vocabulary, which --no-unk bans; "
                "forcing only what comes before it"
            )
            del ids[word_start(units[k], ids.index(UNK), side.text.sentencepiece) :]
        else:
            warn(f"line {first_line + k}: --prefix has a word out of the vocabulary: the output holds <unk> there")
            out[k] = _one_unk_a_word(units[k], ids, side.text.sentencepiece)
    return out


def _one_unk_a_word(units: list[str], ids: list[int], sentencepiece: bool | None = None) -> list[int]:
    """A word with a unit out of the vocabulary forced as one <unk>: its other units had been
    forced as a word of their own (``Xylophoneq`` as ``<unk> ylophoneq``)."""
    out: list[int] = []
    start = 0
    while start < len(ids):
        end = word_end(units, start, sentencepiece) + 1
        out.extend([UNK] if UNK in ids[start:end] else ids[start:end])
        start = end
    return out


def prefix_batch(starts: list[list[int]] | None, idx: list[int], device: torch.device) -> torch.Tensor | None:
    """The prefixes of the lines ``idx`` (B, P), <pad> after each; None when none forces a word."""
    if starts is None or not any(starts[i] for i in idx):
        return None
    return pad([np.asarray(starts[i], dtype=np.int64) for i in idx], eos=False).to(device)
