"""Forced decoding: the model walked along given translations, its attention read as word
alignments (``nmtkit align``) or as heatmaps (``nmtkit align-plot --model``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import IO

from ..align.files import EOS_LABEL
from ..align.heatmap import Heatmap
from ..align.links import pharaoh, word_alignment
from ..core.errors import UserError
from ..core.files import STDIO, atomic_write, read_lines
from ..core.settings import RuntimeConfig
from .translator import Translator


def align_file(
    model_paths: list[str],
    source: str,
    target: str,
    output: str | None,
    tokenized: bool,
    runtime: RuntimeConfig | None = None,
) -> int:
    """``nmtkit align``: Pharaoh links of each (source, target) line pair by forced decoding."""
    sources, targets = list(read_lines(source)), list(read_lines(target))
    if len(sources) != len(targets):
        raise UserError(f"{source} has {len(sources):,} lines but {target} {len(targets):,}")
    translator = Translator.from_checkpoints(list(model_paths), runtime)
    lines = []
    for f in translator.force(sources, targets, tokenized):
        lines.append(pharaoh(word_alignment(f.source_tokens, f.target_tokens, f.attention)))
    with contextlib.ExitStack() as stack:
        out: IO[str] = stack.enter_context(atomic_write(output)) if output and output != STDIO else sys.stdout
        out.write("".join(line + "\n" for line in lines))
    return len(lines)


def from_model(
    model_paths: Sequence[str],
    source: str,
    target: str,
    lines: Sequence[int],
    tokenized: bool = False,
    runtime: RuntimeConfig | None = None,
) -> list[Heatmap]:
    src, tgt = list(read_lines(source)), list(read_lines(target))
    if len(src) != len(tgt):
        raise UserError(f"{source} has {len(src)} lines but {target} has {len(tgt)}")
    missing = [n for n in lines if n > len(src)]
    if missing:
        raise UserError(f"{source}: has no line {missing[0]} (it has {len(src)})")
    if any(not src[n - 1].strip() for n in lines):
        raise UserError(f"{source}: line {next(n for n in lines if not src[n - 1].strip())} is empty")
    translator = Translator.from_checkpoints(list(model_paths), runtime)
    forced = translator.force([src[n - 1] for n in lines], [tgt[n - 1] for n in lines], tokenized)
    return [
        Heatmap(
            n,
            f.source_tokens + [EOS_LABEL],
            f.target_tokens + [EOS_LABEL],
            f.attention,
            f"line {n}, reference forced, log p = {f.score:.2f}",
        )
        for n, f in zip(lines, forced)
    ]
