"""Forced decoding: the model walked along given translations, its attention read as word
alignments (``nmtkit align``) or as heatmaps (``nmtkit align-plot --model``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import checkpoint
from ..align.combine import combined_links
from ..align.files import EOS_LABEL, alignment_line, header
from ..align.heatmap import Heatmap, drawable
from ..align.links import pharaoh, word_alignment
from ..align.settings import LinkConfig
from ..core.console import progress
from ..core.errors import UserError
from ..core.files import read_lines, refuse_two_on_stdin, results_to
from ..core.parallel import Workers, chunked, default_workers
from ..core.runtime import resolve_device
from ..core.settings import RuntimeConfig
from ..core.wording import counted
from .both_ways import directions, read_as_named, refuse_idle_links, turned, warn_named_otherwise, word_table
from .translator import Translator

# pairs a process aligns at a time: enough to batch them by length, few enough to show progress
CHUNK = 1000


@dataclass(frozen=True)
class Aligner:
    """Models of one direction (an ensemble), and maybe of the other, that link given pairs."""

    forward: Translator
    backward: Translator | None
    tokenized: bool
    links: LinkConfig
    records: bool = False  # the attention file's records too (align --alignments)

    def lines(self, pairs: list[tuple[int, tuple[str, str]]]) -> list[tuple[str, str]]:
        """For each numbered (source, target) pair, its Pharaoh links, the forward models' own or
        both directions' combined as :attr:`links` says, and its attention file's record (the
        forward models' attention and score; "" unless :attr:`records`)."""
        sources, targets = [s for _, (s, _) in pairs], [t for _, (_, t) in pairs]
        ahead = self.forward.force(sources, targets, self.tokenized, scored=self.records)
        if self.backward is None:
            links = [
                pharaoh(word_alignment(f.source_tokens, f.target_tokens, f.attention, f.sentencepiece)) for f in ahead
            ]
        else:
            turned_pairs = [turned(f) for f in ahead]
            back = self.backward.force(
                [s for s, _ in turned_pairs], [t for _, t in turned_pairs], tokenized=True, scored=False
            )
            links = [pharaoh(combined_links(word_table(f), word_table(b), self.links)) for f, b in zip(ahead, back)]
        records = [
            alignment_line(n, f.source_tokens, f.target_tokens, f.attention, f.score, f.sentencepiece)
            if self.records
            else ""
            for (n, _), f in zip(pairs, ahead)
        ]
        return list(zip(links, records))


_aligner: Aligner | None = None  # this process's, set by _load


def _load(
    forward: list[str | Path],
    backward: list[str | Path],
    runtime: RuntimeConfig,
    tokenized: bool,
    links: LinkConfig,
    records: bool,
) -> None:
    global _aligner
    back = Translator.from_checkpoints(backward, runtime) if backward else None
    _aligner = Aligner(Translator.from_checkpoints(forward, runtime), back, tokenized, links, records)


def _align(pairs: list[tuple[int, tuple[str, str]]]) -> list[tuple[str, str]]:
    assert _aligner is not None, "_load runs first in every process"
    return _aligner.lines(pairs)


def processes(workers: int, pairs: int, runtime: RuntimeConfig) -> int:
    """How many processes align ``pairs`` pairs: ``workers`` on a CPU, at most one per chunk; one
    on a GPU, which a single process keeps busy."""
    if resolve_device(runtime.device).type != "cpu":
        return 1
    return max(1, min(workers, math.ceil(pairs / CHUNK)))


def align_file(
    model_paths: list[str],
    source: str,
    target: str,
    output: str | None,
    tokenized: bool,
    runtime: RuntimeConfig | None = None,
    links: LinkConfig = LinkConfig(),
    workers: int = 1,
    attention: str | None = None,
) -> int:
    """``nmtkit align``: Pharaoh links of each (source, target) line pair by forced decoding, with
    the models of one direction (an ensemble), or of both directions combined as ``links`` says;
    on a CPU, chunks of the pairs spread over ``workers`` processes. ``attention``: where to write
    the forward models' attention too, as ``translate --alignments`` writes it (align-plot's)."""
    global _aligner
    refuse_two_on_stdin([("--source", source), ("--target", target)])
    sources, targets = list(read_lines(source)), list(read_lines(target))
    if len(sources) != len(targets):
        raise UserError(f"{source} has {counted(len(sources), 'line')} but {target} {len(targets):,}")
    forward, backward = read_as_named(*directions(model_paths), source, target)
    refuse_idle_links(backward, links)
    warn_named_otherwise(source, "src", forward[0])
    warn_named_otherwise(target, "tgt", forward[0])
    for side in (forward, backward):  # here, before the models load in each process
        if side and not any(checkpoint.load(p).model.attends() for p in side):
            raise UserError(f"align reads the attention: {side[0]} has none")
    runtime = runtime or RuntimeConfig()
    n = processes(workers, len(sources), runtime)
    if n > 1 and not runtime.threads:
        # a teacher-forced pass gains little from a second thread (72 s → 59 s for 4,000 pairs on
        # two cores) and much from a second process: the cores are shared out, not oversubscribed
        runtime = replace(runtime, threads=max(1, default_workers() // n))
    lines: list[str] = []
    given = (forward, backward, runtime, tokenized, links, attention is not None)
    try:
        with contextlib.ExitStack() as stack:
            pool = stack.enter_context(Workers(n, _load, given))  # first: no open output is copied to a worker
            # both outputs at temporary names that a failure removes; the attention's records written
            # as they come (a corpus's would not fit in memory), the links at the end
            out = stack.enter_context(results_to(output))
            weights = None if attention is None else stack.enter_context(results_to(attention))
            if weights is not None:
                weights.write(header() + "\n")
            bar = stack.enter_context(progress("pairs"))
            task = bar.add_task("align", total=len(sources))
            for chunk in pool.map(_align, chunked(enumerate(zip(sources, targets), 1), CHUNK)):
                lines += [links_ for links_, _ in chunk]
                if weights is not None:
                    weights.write("".join(record + "\n" for _, record in chunk))
                bar.advance(task, len(chunk))
            out.write("".join(line + "\n" for line in lines))
    finally:
        _aligner = None  # the models of an in-process run are not kept past it
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
        raise UserError(f"{source} has {counted(len(src), 'line')} but {target} has {len(tgt)}")
    missing = [n for n in lines if n > len(src)]
    if missing:
        raise UserError(f"{source}: has no line {missing[0]} (it has {len(src)})")
    lines = drawable(source, lines, [n for n in lines if not src[n - 1].strip()])
    translator = Translator.from_checkpoints(list(model_paths), runtime)
    translator.require_attention("align-plot -m", model_paths[0])
    warn_named_otherwise(source, "src", model_paths[0])
    warn_named_otherwise(target, "tgt", model_paths[0])
    forced = translator.force([src[n - 1] for n in lines], [tgt[n - 1] for n in lines], tokenized)
    return [
        Heatmap(
            n,
            f.source_tokens + [EOS_LABEL],
            f.target_tokens + [EOS_LABEL],
            f.attention,
            f"line {n}, reference forced, log p = {f.score:.2f}",
            sentencepiece=f.sentencepiece,
        )
        for n, f in zip(lines, forced)
    ]
