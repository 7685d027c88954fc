"""``nmtkit rescore``: the models' log-probabilities of given translations (forced decoding)."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from ...translate.settings import OUTPUT_FORMATS, RescoreConfig, SearchConfig, TranslateOptions
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit rescore -m best.pt --source train.en --target train.fr > train.scores      # a score per pair
  nmtkit translate -m best.pt test.en --nbest 12 > test.nbest
  nmtkit rescore -m other.pt --source test.en --nbest-list test.nbest --nbest-feature F1 > test.F1.nbest
  nmtkit rescore -m fr-en.pt --backward --source test.en --nbest-list test.nbest --nbest-feature channel""",
)
@options.models("Checkpoint; repeat for an ensemble (of one direction).")
@config_options()
@click.option("--source", required=True, type=options.FilePath(allow_dash=True), help="Source sentences, one a line.")
@click.option(
    "--target",
    type=options.FilePath(allow_dash=True),
    help="Their translations, one a line: a score a line is written.",
)
@click.option(
    "--nbest-list",
    type=options.FilePath(allow_dash=True),
    help="Instead of --target, Moses n-best lines ('i ||| text ||| features ||| score', i a line of --source "
    "from 0, as translate --nbest writes): each line is written with its score added to its features.",
)
@options.output
@click.option("--tokenized", is_flag=True, help="The files are Moses tokens (BPE still applied).")
@options.option(
    SearchConfig,
    "length_penalty",
    note="rescore: the score written, so divided (by subword units, </s> included); log p by default.",
)
@options.option(SearchConfig, "alpha")
@options.options_of(RescoreConfig, "backward", "feature")
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default=OUTPUT_FORMATS[0],
    show_default=True,
    help="jsonl: one JSON object a line with the score (log p), its ranking and the units scored.",
)
@options.option(TranslateOptions, "token_scores", note="Written in --output-format jsonl.")
@options.option(TranslateOptions, "max_length", note="rescore: the source's and the translation's units alike.")
@options.runtime
@options.verbosity
def rescore(
    model_paths: tuple[str, ...],
    source: str,
    target: str | None,
    nbest_list: str | None,
    output: str | None,
    tokenized: bool,
    output_format: str,
    **values: Any,
) -> None:
    """Score given translations: each one's log-probability under the models (the sum over its subword
    units, </s> included, as translate scores its own), by forced decoding. A score a line of --target,
    for filtering a corpus; or an n-best list with each hypothesis' score added as a feature, for
    reranking it. With --backward, models of the other direction score the source given each translation."""
    from ...core.console import log
    from ...core.errors import UserError
    from ...core.files import output_named, refuse_overwriting
    from ...translate.rescore import rescore_file

    refuse_overwriting(
        [output_named("-o", output)],
        [("--source", source), ("--target", target), ("--nbest-list", nbest_list), *(("-m", m) for m in model_paths)],
    )
    cfg = options.config_of(
        RescoreConfig,
        values,
        penalty=options.length_penalty(values),
        jsonl=output_format == "jsonl",
        token_scores=values.pop("token_scores"),
        crop=values.pop("max_length"),
    )
    if nbest_list is None and (cfg.feature != RescoreConfig().feature or options.typed("feature")):
        raise UserError("--nbest-feature names the feature added to --nbest-list's lines: add --nbest-list FILE")
    runtime = options.runtime_config(values)
    done = rescore_file(list(model_paths), source, target, nbest_list, output, tokenized, cfg, runtime)
    log(done.summary())
