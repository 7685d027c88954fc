"""``nmtkit translate``: raw text in, raw text out, with nothing but a checkpoint."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from ...core.errors import UserError
from ...translate.settings import BATCHING_OPTIONS, OUTPUT_FORMATS, TranslateOptions, refuse_beside_glossary
from .. import options
from ..config_file import config_options

# What translate writes besides the translations.
_outputs = options.options(
    click.option(
        "--alignments",
        type=options.FilePath(),
        help="Also write each output's attention matrix with its tokens (JSON lines, for align-plot).",
    ),
    click.option(
        "--print-alignment",
        "pharaoh_path",
        type=options.FilePath(),
        help="Also write hard word alignments, one line per input line, as Pharaoh 'i-j' pairs (source "
        "word i, target word j, from 0; Moses tokens after BPE is undone), from the attention; with "
        "models of the other direction too, both directions' links combined (--combine).",
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
        type=options.FilePath(),
        help="Force the first target words: FILE has a line per input line, raw target text (Moses "
        "tokens with --tokenized) that each output starts with, the search going on after it; an "
        "empty line forces nothing.",
    ),
    click.option(
        "--constraints",
        type=options.FilePath(),
        help="Phrases each output must hold (lexically constrained beam search, Post & Vilar 2018): FILE has "
        "a line per input line, its phrases of raw target text separated by tabs, in any order; an empty "
        "line constrains nothing.",
    ),
    click.option(
        "--glossary",
        type=options.FilePath(),
        help="Terms and their translations: FILE has 'source term<TAB>target term' lines; each output whose "
        "input holds a source term (as whole words) holds its translation, as a constraint (see --constraints).",
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
  nmtkit translate -m best.pt test.en --alignments test.align   # then: nmtkit align-plot test.align -n 1 -o a.png
  nmtkit translate -m best.pt test.en --constraints terms.fr --beam 10   # each output holds its line's phrases
  nmtkit translate -m best.pt test.en --glossary names.tsv --beam 10   # 'source<TAB>target' terms, held where found
  nmtkit translate -m en-fr.pt -m fr-en.pt test.en --print-alignment test.links  # links both ways""",
)
@options.models(
    "A checkpoint from 'nmtkit train' (nothing else is needed); repeat to ensemble. Checkpoints of the "
    "other direction serve the links of --print-alignment and jsonl."
)
@click.argument("input", default="-")
@config_options()
@click.option(
    "-o",
    "--output",
    type=options.FilePath(allow_dash=True),
    help="Write here (atomically) instead of stdout ('-': stdout).",
)
@options.search
@_decoding
@options.option(TranslateOptions, "replace_unk")
@click.option(
    "--unk-dict",
    type=options.FilePath(),
    help="With --replace-unk: 'source target' lines to translate the copied word (a third column, a number, "
    "is allowed and not read).",
)
@_outputs
@options.option(TranslateOptions, "token_scores", note="Written in --output-format jsonl.")
@options.links
@options.options_of(TranslateOptions, *BATCHING_OPTIONS)
@options.inference_runtime
@options.verbosity
def translate(
    model_paths: tuple[str, ...],
    input: str,
    output: str | None,
    unk_dict: str | None,
    alignments: str | None,
    pharaoh_path: str | None,
    output_format: str,
    **values: Any,
) -> None:
    """Translate raw text, one sentence a line, from INPUT (default: stdin) to stdout.

    Output line i is the translation of input line i; an empty line gives an
    empty line. A line that is not UTF-8 ends the run (status 2): in a file
    before any output, in a pipe after the lines before it. From a pipe or a
    terminal each line is translated as soon as it arrives; a file is
    translated in batches under a progress bar.
    """
    from ...core.files import output_named, refuse_overwriting, refuse_two_on_stdin
    from ...translate.glossary import read_glossary
    from ...translate.io import translate_file
    from ...translate.unknown_words import read_unk_dict

    beside = [("--prefix", values["prefix"]), ("--constraints", values["constraints"])]
    read = [*beside, ("--unk-dict", unk_dict), ("--glossary", values["glossary"])]
    refuse_overwriting(
        [output_named("-o", output), ("--alignments", alignments), ("--print-alignment", pharaoh_path)],
        [("INPUT", input), *read, *(("-m", m) for m in model_paths)],
    )
    refuse_two_on_stdin([("INPUT", input), *read])
    if unk_dict and not values["replace_unk"]:
        raise UserError("--unk-dict is used by --replace-unk; add that flag")
    if values["token_scores"] and output_format != "jsonl":
        raise UserError("--token-scores are written in --output-format jsonl; add that")
    glossary = values.pop("glossary")
    if values["ordered_constraints"] and not values["constraints"] and not glossary:  # else: no order
        raise UserError("--ordered-constraints orders the phrases of --constraints FILE: add that")
    if options.typed("plain_first") and not values["constraints"] and not glossary:
        raise UserError("--plain-first and --no-plain-first choose how --constraints or --glossary search: add one")
    nbest_lines = values["nbest"] > 0
    search, prefix, constraints = options.search_config(values), values.pop("prefix"), values.pop("constraints")
    words = read_unk_dict(unk_dict) if unk_dict else None
    links = options.link_config(values, model_paths)
    if glossary:
        refuse_beside_glossary(search)
    terms = read_glossary(glossary) if glossary else None
    settings = options.config_of(TranslateOptions, values, search=search, unk_dict=words, glossary=terms)
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
        prefix=prefix,
        links=links,
        constraints=constraints,
    )
