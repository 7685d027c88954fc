"""``nmtkit score`` and ``nmtkit score-align``: translations against references, alignments
against gold links."""

from __future__ import annotations

import json
from typing import Any

import click

from ..core.command import Command
from ..core.errors import UserError
from ..data.settings import VALID
from ..evaluate.settings import BUCKET_WIDTH
from ..text.clean import PRESETS, RULES, rules_named
from . import options


# BLEU by source length: the paper's Figure 2.
_by_length = options.options(
    click.option("--by-length", is_flag=True, help="BLEU per source-length bucket (the paper's Figure 2)."),
    click.option("--bucket-width", type=click.IntRange(1), default=BUCKET_WIDTH, show_default=True,
                 help="Words per length bucket."),
    click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
                 help="With --by-length: draw it here (.png/.svg/.pdf)."))

# The model's own score: NLL of the hypotheses, or of a binarized split.
_model_nll = options.options(
    click.option("-m", "--model", "model_paths", multiple=True, type=click.Path(dir_okay=False),
                 help="Checkpoint: NLL of each hypothesis given --source, or of --data's split."),
    click.option("--data", "data_bin", type=click.Path(file_okay=False), help="With -m: a binarized corpus."),
    click.option("--split", default=VALID, show_default=True, help="With --data: the split to score."))


@click.command(cls=Command, epilog="""\b
Examples:
  nmtkit score test.hyp.fr -r test.fr
  nmtkit score test.hyp.fr -r test.fr -r test.ostervald.fr -r test.darby.fr --clean verse-markers
  nmtkit score a.fr b.fr -r test.fr --source test.en --by-length --plot length.png --bootstrap 1000
  nmtkit score test.hyp.fr -r test.fr --source test.en --no-unk-vocab best.pt
  nmtkit score -m best.pt --data data-bin --split valid              # NLL and perplexity""")
@click.argument("hypotheses", nargs=-1)
@click.option("-r", "--ref", "refs", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Reference file; repeat for several references.")
@click.option("--name", "names", multiple=True, help="A name per hypothesis file, for tables and plots.")
@click.option("--source", type=click.Path(dir_okay=False),
              help="The source text (for --by-length, --no-unk-vocab and -m).")
@options.renamed("-s", "--source", "source", type=click.Path(dir_okay=False))
@click.option("--tokenized", is_flag=True, help="Files are Moses tokens: score them as they are (tok:none).")
@click.option("-l", "--lang", help="Target language for tokenized BLEU [default: the reference's suffix].")
@click.option("--clean", "clean", default="none", show_default=True,
              help=f"Cleaning applied to hypotheses and references alike before scoring: a preset "
                   f"({', '.join(PRESETS)}) or rules, comma-separated ({', '.join(RULES)}).")
@_by_length
@click.option("--no-unk-vocab", "no_unk", type=click.Path(),
              help="Also score the No-UNK subset: the sentences with no word unknown to this checkpoint or "
                   "build-vocab directory (the paper's Table 1).")
@options.renamed("--no-unk", "--no-unk-vocab", "no_unk", type=click.Path())
@click.option("--bootstrap", type=click.IntRange(0), default=0, show_default=True,
              help="Paired bootstrap resampling with this many samples, each system against the first.")
@_model_nll
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@options.runtime
@options.verbosity
def score(hypotheses: tuple[str, ...], refs: tuple[str, ...], names: tuple[str, ...], source: str | None,
          tokenized: bool, lang: str | None, clean: str, by_length: bool, bucket_width: int,
          plot_path: str | None, no_unk: str | None, bootstrap: int, model_paths: tuple[str, ...],
          data_bin: str | None, split: str, as_json: bool, **runtime: Any) -> None:
    """BLEU (sacreBLEU, with signatures) and chrF of HYPOTHESES against one or more references;
    NLL and perplexity of a checkpoint."""
    if not hypotheses and not data_bin:
        raise UserError("give hypothesis files and -r REF, or -m MODEL --data DATA_BIN")
    if plot_path and not by_length:
        raise UserError("--plot draws the --by-length table; add --by-length")
    from ..core.plot import bleu_by_length_chart, check_format  # here: numpy and sacremoses load to
    from ..evaluate.score import evaluate, format_report        # score, not for --help
    result: dict[str, Any] = {}
    run = options.runtime_config(runtime)
    if hypotheses and not refs:
        raise UserError("give the reference translation with -r REF")
    if plot_path:
        check_format(plot_path)
    if hypotheses:
        result = evaluate(hypotheses, refs, names, source, rules_named(clean), tokenized, lang,
                          bucket_width if by_length else 0, no_unk, bootstrap,
                          model_paths if source or not data_bin else (), run)
    if plot_path and hypotheses:
        bleu_by_length_chart(result["by_length"]["rows"], plot_path, "BLEU by source sentence length")
    if data_bin:
        if len(model_paths) != 1:
            raise UserError("--data scores one checkpoint: give -m MODEL once")
        from ..evaluate.nll import corpus_nll  # here: torch loads for a model only
        result["corpus_nll"] = corpus_nll(model_paths[0], data_bin, split, runtime=run)
    click.echo(json.dumps(result) if as_json else format_report({"systems": [], **result}))


@click.command("score-align", cls=Command, epilog="""\b
Example:
  nmtkit align -m best.pt --source test.en --target test.fr -o test.links
  nmtkit score-align test.links -g gold.links""")
@click.argument("hypothesis", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-g", "--gold", required=True, type=click.Path(dir_okay=False),
              help="Gold alignments: per line, sure links i-j and possible links i?j (from 0).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@options.verbosity
def score_align(hypothesis: str, gold: str, as_json: bool) -> None:
    """Precision, recall and alignment error rate (Och & Ney) of Pharaoh alignments against gold links."""
    from ..align.aer import score_files  # here: as in score
    r = score_files(hypothesis, gold)
    click.echo(json.dumps(r) if as_json else
               f"AER {r['aer']:.2f}  precision {r['precision']:.2f}  recall {r['recall']:.2f}  "
               f"({r['sentences']:,} sentences; {r['links']:,} links against {r['sure']:,} sure and "
               f"{r['possible']:,} possible)")


COMMANDS = (score, score_align)
