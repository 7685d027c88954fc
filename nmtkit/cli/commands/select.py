"""``nmtkit select``: data selection by bilingual Moore–Lewis."""

from __future__ import annotations

from pathlib import Path

import click

from ...core.command import Command
from ...selection.settings import SelectConfig
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Example (the paper's: keep the 348M most news-like target words of WMT'14's corpora):
  nmtkit select -s en -t fr --in-domain dev/newstest2012-13 \\
      --general corpora/europarl-v7 --general corpora/un --general corpora/giga-fren --keep-words 348M -d selected/""",
)
@click.option("-s", "--source-lang", required=True, help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@config_options()
@click.option("--in-domain", multiple=True, required=True, help="In-domain parallel text prefix (repeat).")
@click.option("--general", multiple=True, required=True, help="General-domain corpus prefix to select from (repeat).")
@click.option(
    "--keep-words",
    required=True,
    callback=options.count,
    help="Target-side words to keep (348M, 2.5k, 1000000), the pair that reaches the count whole; counted "
    "as --count-words says.",
)
@options.option(SelectConfig, "count", dest="count_words")
@options.option(SelectConfig, "order", dest="lm_order")
@options.dest_dir
@options.workers
@options.verbosity
def select(
    source_lang: str,
    target_lang: str,
    in_domain: tuple[str, ...],
    general: tuple[str, ...],
    keep_words: int,
    count_words: str,
    lm_order: int,
    out_dir: str,
    workers: int,
) -> None:
    """Data selection: keep the general-domain pairs most like the in-domain text.

    Bilingual Moore-Lewis (Axelrod, He and Gao 2011): pairs ranked by the difference of
    in-domain and general n-gram cross-entropies, summed over both sides, best first.

    Writes DIR/train.LANG (the kept raw lines, in input order), DIR/select.json, DIR/lm/, and each
    general pair's score and target words in input order (DIR/scores.f32, DIR/words.i32: another cut
    needs no scoring again); 'nmtkit preprocess' then cleans DIR/train like any corpus.
    """
    from ...selection.moore_lewis import Corpus
    from ...selection.moore_lewis import select as run

    langs = (source_lang, target_lang)
    run(
        [Corpus.of(p, langs) for p in in_domain],
        [Corpus.of(p, langs) for p in general],
        Path(out_dir),
        langs,
        SelectConfig(keep_words=keep_words, order=lm_order, count=count_words),
        workers,
    )
