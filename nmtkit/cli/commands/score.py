"""``nmtkit score``: translations against references, and a model's NLL."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import click

from ...core.command import Command
from ...core.console import log
from ...core.errors import UserError
from ...core.files import refuse_overwriting, refuse_two_on_stdin
from ...data.settings import VALID
from ...evaluate.metrics import (
    CHRF_WORD_ORDERS,
    DEFAULT,
    DEFAULT_TOKENIZED,
    TOK_BLEU,
    Metrics,
    metric_names,
    split_names,
    tokenizers,
)
from ...evaluate.score import evaluate, format_report, sentence_scores
from ...evaluate.settings import BUCKET_WIDTH
from ...text.clean import PRESETS, RULES, rules_named
from .. import options
from ..config_file import config_options


class _Listed(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5 on, not before
    """A name from a list that sacreBLEU holds (its tokenizers, its metrics), shown in --help and
    checked by :class:`Metrics` (one line, status 2): read only then, as importing sacreBLEU when
    nmtkit starts would cost every command its 20 ms."""

    name = "name"

    def __init__(self, names: Callable[[], Sequence[str]], several: bool = False):
        self.names, self.several = names, several

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:  # no ctx before 8.2
        return "[" + "|".join(self.names()) + "]" + (",..." if self.several else "")


# sacreBLEU's own options, passed through under its names; its -m is --model here
_sacrebleu = options.options(
    click.option(
        "--metrics",
        "metric_values",
        multiple=True,
        type=_Listed(metric_names, several=True),
        help=f"Metrics to report, repeated or comma-separated; bleu-tok is the paper's tokenized BLEU "
        f"[default: {','.join(DEFAULT)}; "
        f"{','.join(DEFAULT_TOKENIZED)} with --tokenized].",
    ),
    click.option(
        "--tokenize", type=_Listed(tokenizers), help="BLEU's tokenizer, as sacrebleu --tokenize [default: 13a]."
    ),
    click.option(
        "--lowercase",
        is_flag=True,
        help="BLEU on lowercased text (the tokenized BLEU's too), as sacrebleu "
        "--lowercase: chrF stays case-sensitive and TER case-insensitive.",
    ),
    click.option(
        "--chrf-word-order",
        type=click.IntRange(0, CHRF_WORD_ORDERS),
        default=0,
        show_default=True,
        help="chrF's word n-gram order, as sacrebleu's: 2 gives chrF++.",
    ),
    click.option(
        "--sentence-level",
        is_flag=True,
        help="A line per sentence with each metric's score and signature, as sacrebleu --sentence-level "
        "(tab between metrics); one hypothesis file.",
    ),
)


# BLEU by source length: the paper's Figure 2.
_by_length = options.options(
    click.option("--by-length", is_flag=True, help="BLEU per source-length bucket (the paper's Figure 2)."),
    click.option(
        "--bucket-width",
        type=click.IntRange(1),
        default=BUCKET_WIDTH,
        show_default=True,
        help="Words per length bucket.",
    ),
    click.option(
        "--plot", "plot_path", type=options.FilePath(), help="With --by-length: draw it here (.png/.svg/.pdf)."
    ),
)

# The model's own score: NLL of the hypotheses, or of a binarized split.
_model_nll = options.options(
    click.option(
        "-m",
        "--model",
        "model_paths",
        multiple=True,
        type=options.FilePath(checkpoint=True),
        help="Checkpoint: the hypotheses' NLL given --source (per sentence and per word), beside their scores "
        "against -r (repeat -m for an ensemble's); or --data's split's (one model).",
    ),
    options.data("With -m: a binarized corpus."),
    click.option("--split", default=VALID, show_default=True, help="With --data: the split to score."),
)


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit score test.hyp.fr -r test.fr
  nmtkit score test.hyp.fr -r test.fr --metrics bleu,chrf,ter --chrf-word-order 2 --tokenize intl
  nmtkit score test.hyp.fr -r test.fr --metrics bleu --sentence-level --lowercase
  nmtkit score test.hyp.fr -r test.fr -r test.ostervald.fr -r test.darby.fr --clean verse-markers
  nmtkit score a.fr b.fr -r test.fr --source test.en --by-length --plot length.png --bootstrap 1000
  nmtkit score test.hyp.fr -r test.fr --source test.en --no-unk-vocab best.pt
  nmtkit score -m best.pt --data data-bin --split valid              # NLL and perplexity""",
)
@click.argument("hypotheses", nargs=-1)
@config_options()
@click.option(
    "-r",
    "--ref",
    "refs",
    multiple=True,
    type=options.FilePath(allow_dash=True),
    help="Reference file; repeat for several references.",
)
@click.option("--name", "names", multiple=True, help="A name per hypothesis file, for tables and plots.")
@click.option("--source", type=options.FilePath(), help="The source text (for --by-length, --no-unk-vocab and -m).")
@options.renamed("-s", "--source", "source", type=options.FilePath())
@click.option("--tokenized", is_flag=True, help="Files are Moses tokens: bleu-tok scores them as they are (tok:none).")
@click.option("-l", "--lang", help="Target language for tokenized BLEU [default: the reference's suffix, test.fr: fr].")
@click.option(
    "--clean",
    "clean",
    default="none",
    show_default=True,
    help=f"Cleaning applied to hypotheses and references alike before scoring: a preset "
    f"({', '.join(PRESETS)}) or rules, comma-separated ({', '.join(RULES)}).",
)
@_sacrebleu
@_by_length
@click.option(
    "--no-unk-vocab",
    "no_unk",
    type=click.Path(),
    help="Also score the No-UNK subset: the sentences with no word unknown to this checkpoint or "
    "build-vocab directory (the paper's Table 1).",
)
@options.renamed("--no-unk", "--no-unk-vocab", "no_unk", type=click.Path())
@click.option(
    "--bootstrap",
    type=click.IntRange(0, 100_000),
    default=0,
    show_default=True,
    help="Paired bootstrap resampling with this many samples, each system against the first: both BLEUs "
    "and each other metric of --metrics.",
)
@_model_nll
@options.json_output
@options.runtime
@options.verbosity
def score(
    hypotheses: tuple[str, ...],
    refs: tuple[str, ...],
    names: tuple[str, ...],
    source: str | None,
    tokenized: bool,
    lang: str | None,
    clean: str,
    metric_values: tuple[str, ...],
    tokenize: str | None,
    lowercase: bool,
    chrf_word_order: int,
    sentence_level: bool,
    by_length: bool,
    bucket_width: int,
    plot_path: str | None,
    no_unk: str | None,
    bootstrap: int,
    model_paths: tuple[str, ...],
    data_bin: str | None,
    split: str,
    output_format: str,
    **runtime: Any,
) -> None:
    """BLEU (sacreBLEU, with signatures), chrF and TER of HYPOTHESES against one or more references;
    NLL and perplexity of a checkpoint."""
    as_json = output_format == "json"
    _check_inputs(hypotheses, refs, data_bin, plot_path, by_length)
    read = [("HYPOTHESES", h) for h in hypotheses] + [("-r", r) for r in refs] + [("-m", m) for m in model_paths]
    refuse_overwriting([("--plot", plot_path)], [*read, ("--source", source), ("--no-unk-vocab", no_unk)])
    if not hypotheses:  # -m --data alone: the split's NLL, which these would not change
        _no_analysis(
            "-m --data scores the split's references",
            "hypotheses (HYPOTHESES -r REF)",
            by_length=by_length,
            no_unk_vocab=no_unk,
            bootstrap=bootstrap,
            source=source,
            sentence_level=sentence_level,
        )
    refuse_two_on_stdin([*(("HYPOTHESES", h) for h in hypotheses), *(("-r", r) for r in refs), ("--source", source)])
    if metric_values and not split_names(metric_values):  # '' had scored the default metrics
        raise UserError(f"--metrics '{','.join(metric_values)}': name at least one ({', '.join(DEFAULT)}, …)")
    metrics = Metrics(split_names(metric_values) or None, tokenize, lowercase, chrf_word_order)
    _refuse_idle(metrics, tokenized, lang, by_length, bool(no_unk or bootstrap), bucket_width, data_bin, split)
    if not model_paths:
        options.refuse_idle_runtime(runtime, "-m MODEL scores the hypotheses' NLL")
    if source and hypotheses and not (by_length or no_unk or model_paths):
        raise UserError("--source is read by --by-length, --no-unk-vocab and -m: add one of them, or leave it out")
    if sentence_level:
        _no_analysis(
            "--sentence-level scores sentences",
            "the corpus",
            by_length=by_length,
            no_unk_vocab=no_unk,
            bootstrap=bootstrap,
            model=model_paths,
            data=data_bin,
        )
        click.echo(_sentence_level(hypotheses, refs, names, rules_named(clean), tokenized, lang, metrics, as_json))
        return
    run = options.runtime_config(runtime)
    result: dict[str, Any] = (
        {}
        if not hypotheses
        else evaluate(
            hypotheses,
            refs,
            names,
            source,
            rules_named(clean),
            tokenized,
            lang,
            bucket_width if by_length else 0,
            no_unk,
            bootstrap,
            model_paths if source or not data_bin else (),
            run,
            metrics,
        )
    )
    if data_bin:  # before the picture: a split it lacks leaves none drawn
        result["corpus_nll"] = _corpus_nll(model_paths, data_bin, split, run)
    if plot_path and hypotheses:
        from ...core.plot import bleu_by_length_chart  # numpy and matplotlib, for --plot only

        bleu_by_length_chart(result["by_length"]["rows"], plot_path, "BLEU by source sentence length")
        log(f"wrote {plot_path}")  # as align-plot says of its pictures
    click.echo(json.dumps(result) if as_json else format_report({"systems": [], **result}, metrics))


def _corpus_nll(model_paths: tuple[str, ...], data_bin: str, split: str, run: Any) -> Any:
    if len(model_paths) != 1:
        raise UserError("--data scores one checkpoint: give -m MODEL once")
    from ...evaluate.nll import corpus_nll  # torch, for -m --data only: a plain score never loads it

    return corpus_nll(model_paths[0], data_bin, split, runtime=run)


def _check_inputs(
    hypotheses: tuple[str, ...], refs: tuple[str, ...], data_bin: str | None, plot_path: str | None, by_length: bool
) -> None:
    """The usage errors, before anything is read or computed."""
    if not hypotheses and not data_bin:
        raise UserError("give hypothesis files (- for stdin) and -r REF, or -m MODEL --data DATA_BIN")
    if plot_path and not by_length:
        raise UserError("--plot draws the --by-length table; add --by-length")
    if hypotheses and not refs:
        raise UserError("give the reference translation with -r REF")
    if plot_path:
        from ...core.plot import check_format  # numpy, for --plot only

        check_format(plot_path)


def _refuse_idle(
    metrics: Metrics,
    tokenized: bool,
    lang: str | None,
    by_length: bool,
    other_analyses: bool,
    bucket_width: int,
    data: str | None,
    split: str,
) -> None:
    """The options of what this score does not compute, refused rather than dropped; the analyses
    (--by-length, --no-unk-vocab, --bootstrap) give the tokenized BLEU too."""
    analysed = by_length or other_analyses  # they give the BLEUs too, under these options
    metrics.refuse_idle(tokenized, ((TOK_BLEU,) if tokenized else ("bleu", TOK_BLEU)) if analysed else ())
    if lang and (tokenized or not (by_length or other_analyses or TOK_BLEU in metrics.chosen(tokenized))):
        why = "--tokenized files are scored as they are" if tokenized else "--metrics leaves bleu-tok out"
        raise UserError(f"--lang is the language bleu-tok tokenizes: {why}")
    if (bucket_width != BUCKET_WIDTH or options.typed("bucket_width")) and not by_length:
        raise UserError("--bucket-width sets the --by-length table's buckets: add --by-length")
    if split != VALID and not data:
        raise UserError("--split is the split of --data that -m scores: add --data, or leave --split out")


def _no_analysis(what: str, needs: str, **given: Any) -> None:
    """Refuse the options of what this score does not compute (``what`` it does, and what they
    need) rather than drop them: the corpus analyses under --sentence-level, the hypotheses' under
    -m --data alone."""
    on = [name.replace("_", "-") for name, value in given.items() if value]
    if on:
        raise UserError(f"{what}; --{on[0]} needs {needs}: drop one")


def _sentence_level(
    hypotheses: tuple[str, ...],
    refs: tuple[str, ...],
    names: tuple[str, ...],
    clean: tuple[str, ...],
    tokenized: bool,
    lang: str | None,
    metrics: Metrics,
    as_json: bool,
) -> str:
    scores = sentence_scores(hypotheses, refs, names, clean, tokenized, lang, metrics)
    return json.dumps({"systems": [scores.to_json()]}) if as_json else "\n".join(scores.lines())
