"""``nmtkit tokenize``: one language's text cleaned and tokenized as preprocess does, as a filter."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ...core.command import Command
from ...core.console import log
from ...core.errors import UserError
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  echo "Don't panic." | nmtkit tokenize -l en
  nmtkit tokenize -l fr news.fr --bpe-codes vocab/bpe.codes > news.tok.fr""",
)
@click.option("-l", "--lang", required=True, help="Language code of the text.")
@click.argument("input", default="-")
@config_options()
@click.option("--bpe-codes", type=options.FilePath(), help="Apply these BPE codes too.")
@options.text
@options.workers
@options.verbosity
def tokenize(lang: str, input: str, bpe_codes: str | None, workers: int, **values: Any) -> None:
    """Clean and tokenize one language's text, INPUT (default: stdin) to stdout, one line out
    per line in: what preprocess does to each side, as a filter."""
    from ...core.files import refuse_overwriting
    from ...core.streams import STDIO
    from ...text.bpe import read_codes
    from ...text.preprocess import preprocess_stream

    # stdout appended to its own input read on, the lines it wrote, until the disk was full
    refuse_overwriting([("stdout", STDIO)], [("INPUT", input), ("--bpe-codes", bpe_codes)])
    codes = None
    if bpe_codes:
        if not Path(bpe_codes).is_file():
            raise UserError(f"{bpe_codes}: no such BPE codes file")
        codes = read_codes(Path(bpe_codes))
    fired = preprocess_stream(options.text_config(lang, values), input, sys.stdout, codes, workers)
    if fired:
        log("tokenize: cleaning rules fired: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fired.items())))
