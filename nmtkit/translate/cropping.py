"""A line cropped to its first subword units (``--crop-len``): one output line per input line, as
Marian's --max-length-crop, rather than a refusal that would stop a file of good lines at one bad one."""

from __future__ import annotations

from ..core.console import log
from ..data.sides import Side

# A line far past the limit is cut before it is tokenized, so that a line of megabytes (a file
# without newlines) costs what a line of the limit does, not its whole text through the tokenizer
# and BPE. Its first units are the same: a word gives one unit or more, and a unit holds fewer
# characters than this. Lines short of the margins are tokenized whole, so that the warning counts
# their units.
WORDS_PER_UNIT, WORDS_MARGIN = 2, 1_000
CHARACTERS_PER_UNIT, CHARACTERS_MARGIN = 100, 10_000


def cropped_tokens(
    side: Side, line: str, tokenized: bool, limit: int, lineno: int, doing: str = "translating"
) -> list[str]:
    """The first ``limit`` units of ``line`` on ``side`` (all for 0), with a warning when that cuts it."""
    if not limit:
        return side.tokens(line, tokenized)
    most = limit * WORDS_PER_UNIT + WORDS_MARGIN
    cut = line[: limit * CHARACTERS_PER_UNIT + CHARACTERS_MARGIN]
    words = cut.split(maxsplit=most)
    if len(words) > most:
        cut = " ".join(words[:-1])
    tokens = side.tokens(cut, tokenized)
    if len(cut) < len(line):
        log(f"warning: line {lineno}: {len(line):,} characters; {doing} its first {limit:,} subword units (--crop-len)")
    elif len(tokens) > limit:
        log(f"warning: line {lineno}: {len(tokens):,} subword units; {doing} the first {limit:,} (--crop-len)")
    return tokens[:limit]
