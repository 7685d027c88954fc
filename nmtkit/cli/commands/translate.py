"""``nmtkit translate``: raw text in, raw text out, with nothing but a checkpoint."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from ...core.errors import UserError
from ...translate.settings import OUTPUT_FORMATS, TranslateOptions
from .. import options
from ..config_file import config_options

_O = TranslateOptions()


# What translate writes besides the translations.
_outputs = options.options(
    click.option(
        "--alignments",
        type=click.Path(dir_okay=False),
        help="Also write each output's attention matrix with its tokens (JSON lines, for align-plot).",
    ),
    click.option(
        "--print-alignment",
        "pharaoh_path",
        type=click.Path(dir_okay=False),
        help="Also write hard word alignments, one line per input line, as Pharaoh 'i-j' pairs (source "
        "word i, target word j, from 0; Moses tokens after BPE is undone), from the attention.",
    ),
    click.option(
        "--output-format",
        type=click.Choice(OUTPUT_FORMATS),
        default=OUTPUT_FORMATS[0],
        show_default=True,
        help="jsonl: one JSON object per input line with the text, score, alignment and n-best list.",
    ),
)

# How outputs are made besides the search's settings: drawn rather than searched, or forced to start so.
_decoding = options.options(
    options.sampling,
    click.option(
        "--prefix",
        type=click.Path(dir_okay=False),
        help="Force the first target words: FILE has a line per input line, raw target text (Moses "
        "tokens with --tokenized) that each output starts with, the search going on after it; an "
        "empty line forces nothing.",
    ),
)


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit translate -m runs/demo/best.pt < test.en > test.hyp.fr
  echo "In the beginning God created the heaven and the earth." | nmtkit translate -m best.pt
  nmtkit translate -m best.pt test.en -o test.hyp.fr --beam 5 --length-penalty gnmt --alpha 0.6
  nmtkit translate -m a.pt -m b.pt test.en --nbest 5            # ensemble; Moses n-best lines
  nmtkit translate -m best.pt test.en --alignments test.align   # then: nmtkit align-plot test.align""",
)
@options.models("A checkpoint from 'nmtkit train' (nothing else is needed); repeat to ensemble.")
@click.argument("input", default="-")
@config_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write here (atomically) instead of stdout ('-': stdout).",
)
@options.search
@_decoding
@click.option("--replace-unk", is_flag=True, help="Replace each <unk> by the source word it attends to most.")
@click.option(
    "--unk-dict",
    type=click.Path(dir_okay=False),
    help="With --replace-unk: 'source target' lines to translate the copied word.",
)
@_outputs
@click.option(
    "--batch-size",
    type=click.IntRange(1),
    default=None,
    help="Sentences per batch (times --beam rows; long sentences get smaller batches) "
    "[default: 32, fewer for beams over 5: at most 160 rows].",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(0),
    default=None,
    help="Batches of at most N source tokens (padding included; times --beam rows) instead of "
    "--batch-size sentences; 0: sentence batches [default: 8,000 on GPUs, 0 on CPUs].",
)
@click.option("--tokenized", is_flag=True, help="Input and output in Moses tokens (BPE still applied and undone).")
@click.option(
    "--crop-len",
    "max_length",
    type=click.IntRange(0),
    default=_O.max_length,
    show_default=True,
    help="Source subword units read of each line: a longer line is cropped to its first N, with a "
    "warning, and still gives one output line (0: no limit; Marian's --max-length-crop). Search "
    "time grows with the square of the length.",
)
@options.renamed("--max-length", "--crop-len", "max_length", type=click.IntRange(0))
@click.option(
    "--shortlist",
    is_flag=True,
    help="Vocabulary selection: each batch scores only its candidate words (the 1,000 most "
    "frequent target words and 20 translations of each of its source words, from the lexicon "
    "training stores in the checkpoint): a smaller output layer.",
)
@click.option(
    "--int8",
    is_flag=True,
    help="CPUs: the linear layers in int8 (torch's dynamic quantization, a scale per output row): "
    "faster products, a quarter of their memory; BLEU within a few tenths (docs/benchmarks.md).",
)
@options.runtime
@options.verbosity
def translate(
    model_paths: tuple[str, ...],
    input: str,
    output: str | None,
    replace_unk: bool,
    unk_dict: str | None,
    alignments: str | None,
    pharaoh_path: str | None,
    output_format: str,
    batch_size: int | None,
    max_tokens: int | None,
    tokenized: bool,
    max_length: int,
    shortlist: bool,
    int8: bool,
    **values: Any,
) -> None:
    """Translate raw text, one sentence a line, from INPUT (default: stdin) to stdout.

    Output line i is the translation of input line i, always; an empty line
    gives an empty line. From a pipe or a terminal each line is translated as
    soon as it arrives; a file is translated in batches under a progress bar.
    """
    from ...translate.io import translate_file
    from ...translate.translator import read_unk_dict

    if unk_dict and not replace_unk:
        raise UserError("--unk-dict is used by --replace-unk; add that flag")
    nbest_lines = values["nbest"] > 0
    search, prefix = options.search_config(values), values.pop("prefix")
    settings = TranslateOptions(
        search,
        batch_size,
        max_tokens,
        shortlist,
        tokenized,
        replace_unk=replace_unk,
        unk_dict=read_unk_dict(unk_dict) if unk_dict else None,
        max_length=max_length,
    )
    translate_file(
        list(model_paths),
        input,
        output,
        settings,
        alignments,
        options.runtime_config(values),
        nbest_format=nbest_lines,
        pharaoh_path=pharaoh_path,
        jsonl=output_format == "jsonl",
        int8=int8,
        prefix=prefix,
    )
