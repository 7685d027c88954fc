"""``nmtkit rerank``: the best hypothesis of each source line of an n-best list, by weighted features."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from ...evaluate.settings import RerankConfig
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Examples (the weights tuned on dev's lists, then test's reranked with them):
  nmtkit translate -m en-fr.pt dev.en --nbest 12 > dev.nbest
  nmtkit rescore -m fr-en.pt --backward --source dev.en --nbest-list dev.nbest --nbest-feature channel > dev.ch
  nmtkit rerank dev.ch --tune dev.fr > weights                  # a line: F0= 1 channel= 0.3 words= 0.5
  nmtkit translate -m en-fr.pt test.en --nbest 12 > test.nbest
  nmtkit rescore -m fr-en.pt --backward --source test.en --nbest-list test.nbest --nbest-feature channel > test.ch
  nmtkit rerank test.ch --weights "F0= 1 channel= 0.3 words= 0.5" > test.hyp.fr""",
)
@click.argument("nbest_list", metavar="NBEST_LIST", type=options.FilePath(allow_dash=True))
@config_options()
@click.option(
    "--tune",
    "tune_on",
    metavar="REFERENCES",
    type=options.FilePath(allow_dash=True),
    help="Instead of reranking, write the weights that rerank the lists to the best BLEU against these "
    "references (a line per source line), found on a grid: every point where the tuned weights are few, "
    "else one weight at a time from several starts.",
)
@options.output
@options.options_of(RerankConfig, "weights", "tokenized")
@options.verbosity
def rerank(nbest_list: str, tune_on: str | None, output: str | None, **values: Any) -> None:
    """Choose the best hypothesis of each source line of a Moses n-best list (translate --nbest, with
    the features rescore added), ranked by the sum of its features times their --weights; write one
    line per source line. With --tune, write the weights instead: those that rerank the lists to the
    best BLEU against the references."""
    from ...core.console import log
    from ...core.errors import UserError
    from ...core.files import output_named, refuse_overwriting, refuse_two_on_stdin
    from ...evaluate.rerank import rerank_file

    refuse_overwriting([output_named("-o", output)], [("NBEST_LIST", nbest_list), ("--tune", tune_on)])
    refuse_two_on_stdin([("NBEST_LIST", nbest_list), ("--tune", tune_on)])
    cfg = options.config_of(RerankConfig, values)
    if cfg.tokenized and options.typed("tokenized") and not tune_on:
        raise UserError("--tokenized says how --tune's BLEU counts: add --tune REFERENCES, or leave it out")
    log(rerank_file(nbest_list, output, cfg, tune_on or ""))
