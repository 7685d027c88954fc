"""``nmtkit translate``'s inputs and outputs: files, live streams, n-best lists, alignment files.

A file, named or redirected to standard input, is read in blocks of 1,000
lines under a progress bar. A pipe or a terminal is read as it arrives
(:class:`~nmtkit.core.arriving.ArrivingLines`): the complete lines at hand
are translated at once and flushed, so a line typed gets its translation
without waiting for the end of input while a piped file still goes in large
batches. Whatever the
input, output line i belongs to input line i (n-best lists: the lines
numbered i − 1, as Moses numbers them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..align.files import alignment_line, header
from ..align.links import pharaoh, word_alignment
from ..align.settings import LinkConfig
from ..core.arriving import ArrivingLines
from ..core.console import progress
from ..core.errors import UserError
from ..core.files import (
    display_name,
    open_binary,
    read_lines,
    refuse_two_on_stdin,
    refuse_two_on_stdout,
    results_to,
)
from ..core.line_counts import count_lines
from ..core.parallel import chunked
from ..core.settings import RuntimeConfig
from ..core.streams import STDIO, is_stream
from ..core.wording import counted
from .beside import LinesBeside
from .both_ways import LINK_PART, BothWays, directions, refuse_idle_links, warn_named_otherwise
from .constraints import phrases, refuse_sampling
from .nbest import nbest_line
from .settings import TranslateOptions
from .translation import Translation
from .translator import Translator


def hard_alignment(t: Translation) -> str:
    """Pharaoh pairs of one translation (empty for an empty line or a model without attention):
    its own links where they were made (both directions' models), else its attention's."""
    if t.links is not None:
        return t.links
    if t.attention is None or not t.tokens:
        return ""
    return pharaoh(word_alignment(t.source_tokens, t.tokens, t.attention, t.sentencepiece))


def json_record(lineno: int, t: Translation) -> dict[str, Any]:
    """One line of ``--output-format jsonl``: the text, its scores, Pharaoh pairs, the n-best list."""
    record: dict[str, Any] = {
        "line": lineno,
        "text": t.text,
        "score": json_score(t.score),
        "ranking": json_score(t.ranking),
        "alignment": hard_alignment(t),
    }
    record |= _token_scores(t)
    if t.nbest:
        record["nbest"] = [
            {
                "text": h.text,
                "score": json_score(h.score),
                "ranking": json_score(h.ranking),
                "alignment": hard_alignment(h),
            }
            | _token_scores(h)
            for h in t.nbest
        ]
    return record


def _token_scores(t: Translation) -> dict[str, Any]:
    """The output's subword units and each one's log-probability, </s>'s last, where asked for."""
    if t.token_scores is None:
        return {}
    return {"tokens": t.tokens, "token_scores": [json_score(x) for x in t.token_scores]}


def json_score(x: float, digits: int | None = 4) -> float | None:
    """A score as JSON has it: null where it is not finite (no hypothesis of the row ended), which
    JSON cannot write and a strict reader refuses (-Infinity); rounded to ``digits`` (None: not)."""
    return None if not math.isfinite(x) else x if digits is None else round(x, digits)


class _Sinks:
    """stdout (or -o FILE, written atomically), the optional attention and Pharaoh files."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        output: str | None,
        alignments: str | None,
        nbest: bool,
        pharaoh_path: str | None = None,
        jsonl: bool = False,
    ):
        self.out: IO[str] = stack.enter_context(results_to(output))
        self.align = None if not alignments else stack.enter_context(results_to(alignments))
        self.pharaoh = None if not pharaoh_path else stack.enter_context(results_to(pharaoh_path))
        self.nbest, self.jsonl, self.n = nbest, jsonl, 0
        if self.align is not None:
            self.align.write(header() + "\n")

    def write(self, t: Translation) -> None:
        self.n += 1
        if self.jsonl:
            self.out.write(json.dumps(json_record(self.n, t), ensure_ascii=False) + "\n")
        elif self.nbest:
            for h in t.nbest or [t]:
                self.out.write(nbest_line(self.n - 1, h.text, h.score, h.ranking) + "\n")
        else:
            self.out.write(t.text + "\n")
        if self.align is not None:
            self.align.write(
                alignment_line(self.n, t.source_tokens, t.tokens, t.attention, t.score, t.sentencepiece) + "\n"
            )
        if self.pharaoh is not None:
            self.pharaoh.write(hard_alignment(t) + "\n")

    def flush(self) -> None:
        """Each output, so that a reader of a pipe or FIFO (--print-alignment >(…)) gets a streamed
        line's links with its translation, not at the end of the input."""
        for sink in (self.out, self.align, self.pharaoh):
            if sink is not None:
                sink.flush()


def _refuse_two_on_stdio(
    source: str, beside: list[tuple[str, str | None]], outputs: list[tuple[str, str | None]]
) -> None:
    """Two inputs on stdin, or two outputs on stdout ('-'), refused in a line."""
    refuse_two_on_stdin([("INPUT", source), *beside])
    refuse_two_on_stdout(outputs, "-o, --alignments, --print-alignment")


def _counted(source: str, beside: list[tuple[str, str | None]]) -> int | None:
    """The lines of the file ``source`` (None for a stream, read once as it comes), which the
    files given ``beside`` it must have too; those are read before the models load either way,
    so a typo costs no waiting (one streamed is checked as it ends)."""
    total = None if is_stream(source) else count_lines(source, utf8=True)
    if total == 0:
        raise UserError(f"{display_name(source)}: is empty")
    for flag, path in beside:
        given = None if path is None or is_stream(path) else count_lines(path, utf8=True)
        if given is not None and total is not None and given != total:
            raise UserError(f"{flag} {path} has {counted(given, 'line')} but {display_name(source)} {total:,}")
    return total


def translate_file(  # noqa: PLR0913 (each of translate's inputs and outputs, by name)
    model_paths: list[str],
    source: str,
    output: str | None,
    options: TranslateOptions,
    alignments: str | None = None,
    runtime: RuntimeConfig | None = None,
    nbest_format: bool = False,
    pharaoh_path: str | None = None,
    jsonl: bool = False,
    prefix: str | None = None,
    links: LinkConfig = LinkConfig(),
    constraints: str | None = None,
) -> int:
    """``nmtkit translate``: lines of ``source`` ('-': stdin) to ``output`` (None or '-': stdout),
    each output starting with its line of ``prefix`` when given, and holding the tab-separated
    phrases of its line of ``constraints``. Given models of both directions,
    the first one's translate and the others are forced back along each translation for its
    links (``pharaoh_path``, ``jsonl``), combined as ``links`` says.

    Returns the number of lines translated. Files given by name are checked
    before the models load, so a typo costs no waiting.
    """
    beside = [("--prefix", prefix), ("--constraints", constraints)]
    _refuse_two_on_stdio(
        source, beside, [("translations", output or STDIO), ("alignments", alignments), ("Pharaoh links", pharaoh_path)]
    )
    options.check()  # before the models load: a typo costs no waiting
    if constraints is not None:
        refuse_sampling(options.search)
    streamed, total = is_stream(source), _counted(source, beside)
    if alignments or pharaoh_path or jsonl:
        options = dataclasses.replace(options, attention=True)
    forward, backward = directions(model_paths) if len(model_paths) > 1 else (list(model_paths), [])
    refuse_idle_links(backward, links)
    if source != STDIO:
        warn_named_otherwise(source, "src", forward[0])
    if backward and not (pharaoh_path or jsonl):
        raise UserError(
            f"{backward[0]} translates the other way: models of the other direction serve only the links "
            "of --print-alignment or --output-format jsonl"
        )
    translator = Translator.from_checkpoints(forward, runtime)
    asked = "--alignments" if alignments else "--print-alignment" if pharaoh_path else None  # both ways too
    if asked:
        translator.require_attention(asked, forward[0])
    both = BothWays.load(backward, links, runtime)
    with contextlib.ExitStack() as stack:
        sinks = _Sinks(stack, output, alignments, nbest_format or options.search.nbest > 1, pharaoh_path, jsonl)
        prefixes = None if prefix is None else read_lines(prefix, allow_empty=True)
        musts = None if constraints is None else map(phrases, read_lines(constraints, allow_empty=True))
        if streamed:
            forced, wanted = (
                LinesBeside(prefixes, f"--prefix {prefix}"),
                LinesBeside(musts, f"--constraints {constraints}"),
            )
            stream = open_binary(source)
            if str(source) != STDIO:
                stack.enter_context(stream)
            for chunk in ArrivingLines(stream, source):
                n = len(chunk)
                for t in _linked(
                    both,
                    translator.translate_block(chunk, options, sinks.n + 1, forced.take(n), constraints=wanted.take(n)),
                ):
                    sinks.write(t)
                sinks.flush()
            forced.finish()
            wanted.finish()
            return sinks.n
        bar = stack.enter_context(progress("sentences"))
        task = bar.add_task("translate", total=total)
        advance = functools.partial(bar.advance, task)  # by batch: a block's lines come out at its end
        for t in _linked(
            both, translator.translate(read_lines(source), options, prefixes=prefixes, done=advance, constraints=musts)
        ):
            sinks.write(t)
    return sinks.n


def _linked(both: BothWays | None, translations: Iterable[Translation]) -> Iterator[Translation]:
    """The translations with their links both ways where models of the other direction make them,
    forced back a part at a time (a block's translations come out together)."""
    if both is None:
        yield from translations
        return
    for part in chunked(translations, LINK_PART):
        yield from both.linked_block(part)
