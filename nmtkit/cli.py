"""The ``nmtkit`` command: a thin click layer over the library.

Each command parses its flags into the typed configs of the code it calls
(defaults read from those configs), makes one library call and reports.
Errors become one line and exit status 2 in :mod:`nmtkit.command`; device,
threads and bf16 are set up by :mod:`nmtkit.runtime`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__
from .command import Group
from .config import (LEXICON_FREQUENT, LEXICON_PER_SOURCE, MODEL_PRESETS, SCHEDULES, SCORES, WINDOWS, FilterConfig, ModelConfig, TextConfig, TrainConfig,
                     VocabConfig, train_settings)
from .errors import UserError
from .parallel import default_workers
from .runtime import DEVICES, RuntimeConfig
from .search import LENGTH_PENALTIES, SearchConfig
from .selection.moore_lewis import SelectConfig
from .text.bpe import SPM_KINDS
from .text.clean import PRESETS, RULES, rules_named
from .translate import TranslateOptions

_F = FilterConfig()
_V = VocabConfig()
_M = ModelConfig()
_T = TrainConfig()
_S = SearchConfig()
_O = TranslateOptions()
_R = RuntimeConfig()
_SEL = SelectConfig(keep_words=1)


@click.group("nmtkit", cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=lambda c, _p, v: _version(c, v),
              help="Show nmtkit's version, torch's, and the device it would compute on, and exit.")
def main() -> None:
    """Attention-based neural machine translation (Bahdanau et al. 2015) from the shell.

    \b
    Pipeline:  preprocess → build-vocab → preprocess --vocab → train → translate → score
    Around it: select (data selection), tokenize (one side as a filter), align-plot.
    Run 'nmtkit COMMAND --help' for a command's options and an example.
    """


def _version(ctx: click.Context, asked: bool) -> None:
    if not asked or ctx.resilient_parsing:
        return
    from .runtime import describe_device
    import torch
    click.echo(f"nmtkit {__version__} (torch {torch.__version__}; {describe_device()})")
    ctx.exit()


def _options(*decorators: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[..., Any]:
    """Several click options as one decorator, for options that several commands share."""
    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            fn = d(fn)
        return fn
    return apply


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    from .console import set_verbosity
    if value:
        set_verbosity(quiet=param.name == "quiet", verbose=param.name == "verbose")


_verbosity = _options(
    click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_verbosity,
                 help="Nothing on stderr but errors: no logs, summaries or progress."),
    click.option("-v", "--verbose", is_flag=True, expose_value=False, callback=_set_verbosity,
                 help="Also log the details: resolved settings, device and threads."))


_workers_option = click.option("-j", "--workers", type=click.IntRange(1), default=default_workers(),
                               show_default="number of cores", help="Processes to spread the work over.")

_text_options = _options(
    click.option("--clean", "clean", default="default", show_default=True,
                 help=f"Cleaning: a preset ({', '.join(PRESETS)}; 'default' = unicode,whitespace suits any corpus, "
                      f"'bible' = every rule, for the embedded Bible corpus) or rules, comma-separated: "
                      f"{', '.join(RULES)}."),
    click.option("--normalize-punct/--no-normalize-punct", default=TextConfig.normalize_punct, show_default=True,
                 help="Moses punctuation normalization."),
    click.option("--aggressive-dash", is_flag=True, help="Split hyphens: arc @-@ en @-@ ciel."),
    click.option("--lowercase", is_flag=True, help="Lowercase tokens (the paper does not)."))


def _text_config(lang: str, options: dict[str, Any]) -> TextConfig:
    return TextConfig(lang, clean=rules_named(options["clean"]), normalize_punct=options["normalize_punct"],
                      aggressive_dash=options["aggressive_dash"], lowercase=options["lowercase"])


_runtime_options = _options(
    click.option("--device", default=_R.device, help=f"Where to compute: {DEVICES} [default: the GPU when "
                                                    f"there is one, else cpu]."),
    click.option("--threads", type=click.IntRange(0), default=_R.threads, show_default=True,
                 help="CPU threads (0: torch's default, one per core)."),
    click.option("--bf16", is_flag=True, help="bfloat16 autocast: on GPUs, and on CPUs with AVX512-BF16 or AMX "
                                              "(about 2x faster there)."),
    click.option("--tf32/--no-tf32", default=_R.tf32, show_default=True,
                 help="On GPUs, float32 matrix products in TensorFloat-32 (tensor cores; 10-bit mantissa, "
                      "float32 range and sums). No effect on CPUs."))


def _read_config(ctx: click.Context, path: str | None) -> None:
    """Options from a TOML file become the command's defaults, so the command line overrides them."""
    if not path:
        return
    import tomllib
    try:
        with open(path, "rb") as fh:
            table = tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{path}: no such config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid TOML ({err})") from None
    names = {p.name for p in ctx.command.params}
    values = {k.replace("-", "_"): v for k, v in table.items()}
    unknown = sorted(k for k in values if k not in names or k == "config")
    if unknown:
        raise UserError(f"{path}: '{unknown[0]}' is not an option of 'nmtkit {ctx.info_name}'")
    ctx.default_map = {**(ctx.default_map or {}), **values}


def _runtime(options: dict[str, Any]) -> RuntimeConfig:
    return RuntimeConfig(options.pop("device"), options.pop("threads"), options.pop("bf16"), options.pop("tf32"))


@main.command(epilog="""\b
Examples:
  # raw parallel text -> clean Moses tokens (train is filtered, valid/test keep every line)
  nmtkit preprocess -s en -t fr --train raw/train --valid raw/valid --test raw/test -o clean/
  # clean tokens + vocabulary -> binarized corpus
  nmtkit preprocess -s en -t fr --train clean/train --valid clean/valid --test clean/test \\
      --vocab vocab/ -o data-bin/""")
@click.option("-s", "--source-lang", required=True, help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@click.option("--train", "train", help="Training split prefix (filtered).")
@click.option("--valid", "valid", help="Validation split prefix (every line kept).")
@click.option("--test", "test", help="Test split prefix (every line kept).")
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False),
              help="Binarize: map clean text to ids with this build-vocab directory (applies its BPE).")
@_text_options
@click.option("--max-len", type=click.IntRange(0), default=_F.max_len, show_default=True,
              help="Drop training pairs with a side longer than this many tokens (0: no limit).")
@click.option("--min-len", type=click.IntRange(0), default=_F.min_len, show_default=True,
              help="Drop training pairs with a side shorter than this.")
@click.option("--max-ratio", type=click.FloatRange(0), default=_F.max_ratio, show_default=True,
              help="Drop training pairs whose longer side exceeds this times the shorter (0: off).")
@click.option("--dedup/--no-dedup", default=_F.dedup, show_default=True, help="Drop repeated training pairs.")
@_workers_option
@_verbosity
def preprocess(source_lang: str, target_lang: str, train: str | None, valid: str | None, test: str | None,
               out_dir: str, vocab_dir: str | None, workers: int, **options: Any) -> None:
    """Clean and tokenize parallel text, or binarize it with a vocabulary.

    \b
    Text mode (split prefixes, -o DIR): raw PREFIX.LANG files → DIR/<split>.LANG
      clean Moses tokens, DIR/<split>.lines (raw line numbers) and DIR/preprocess.json
      (settings, rule counts, dropped pairs).
    Binarize mode (the same plus --vocab VOCAB_DIR): clean text → DIR/manifest.json,
      <split>.LANG.bin/.idx, <split>.lines and the vocabularies, then a summary.
    One side as a stream: 'nmtkit tokenize'; data selection: 'nmtkit select'.
    """
    splits = {name: Path(p) for name, p in (("train", train), ("valid", valid), ("test", test)) if p}
    if not splits:
        raise UserError("no split given: use --train/--valid/--test PREFIX")
    if vocab_dir:
        from .binarize import binarize_corpus
        from .console import console
        from .summary import corpus_summary
        manifest = binarize_corpus(splits, (source_lang, target_lang), Path(vocab_dir), Path(out_dir), workers)
        console.print(corpus_summary(manifest))
        return
    from .console import log
    from .preprocess import preprocess_corpus
    texts = (_text_config(source_lang, options), _text_config(target_lang, options))
    filters = FilterConfig(**{k: options[k] for k in ("max_len", "min_len", "max_ratio", "dedup")})
    report = preprocess_corpus(splits, Path(out_dir), texts, filters, workers)
    for name, s in report["splits"].items():
        if name in splits:
            dropped = ", ".join(f"{k} {v:,}" for k, v in s.get("dropped", {}).items())
            log(f"{name}: {s['lines']:,} lines → {s['pairs']:,} pairs" + (f" (dropped: {dropped})" if dropped else ""))


@main.command(epilog="""\b
Examples:
  echo "Don`t panic." | nmtkit tokenize -l en
  nmtkit tokenize -l fr news.fr --bpe-codes vocab/bpe.codes > news.tok.fr""")
@click.option("-l", "--lang", required=True, help="Language code of the text.")
@click.argument("input", default="-")
@click.option("--bpe-codes", type=click.Path(dir_okay=False), help="Apply these BPE codes too.")
@_text_options
@_workers_option
@_verbosity
def tokenize(lang: str, input: str, bpe_codes: str | None, workers: int, **options: Any) -> None:
    """Clean and tokenize one language's text, INPUT (default: stdin) to stdout, one line out
    per line in: what preprocess does to each side, as a filter."""
    from .console import log
    from .preprocess import preprocess_stream
    codes = None
    if bpe_codes:
        if not Path(bpe_codes).is_file():
            raise UserError(f"{bpe_codes}: no such BPE codes file")
        codes = Path(bpe_codes).read_text(encoding="utf-8")
    fired = preprocess_stream(_text_config(lang, options), input, sys.stdout, codes, workers)
    if fired:
        log("cleaning rules fired: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fired.items())))


@main.command(epilog="""\b
Example (the paper's: keep the 348M most news-like target words of five corpora):
  nmtkit select -s en -t fr --in-domain nc/news-commentary \\
      --general corpora/europarl --general corpora/un --keep-words 348M -o selected/""")
@click.option("-s", "--source-lang", required=True, help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@click.option("--in-domain", multiple=True, required=True, help="In-domain parallel text prefix (repeat).")
@click.option("--general", multiple=True, required=True, help="General-domain corpus prefix to select from (repeat).")
@click.option("--keep-words", required=True, callback=lambda _c, _p, v: _count(v),
              help="Target-side words to keep (348M, 2.5k, 1000000).")
@click.option("--lm-order", type=click.IntRange(1, 4), default=_SEL.order, show_default=True,
              help="N-gram order of the language models.")
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@_workers_option
@_verbosity
def select(source_lang: str, target_lang: str, in_domain: tuple[str, ...], general: tuple[str, ...],
           keep_words: int, lm_order: int, out_dir: str, workers: int) -> None:
    """Data selection: keep the general-domain pairs most like the in-domain text.

    Bilingual Moore-Lewis (Axelrod, He and Gao 2011): pairs ranked by the difference of
    in-domain and general n-gram cross-entropies, summed over both sides, best first.

    Writes DIR/train.LANG (the kept raw lines, in input order), DIR/select.json and DIR/lm/;
    'nmtkit preprocess' then cleans DIR/train like any corpus.
    """
    from .selection.moore_lewis import Corpus, select as run
    langs = (source_lang, target_lang)
    run([Corpus.of(p, langs) for p in in_domain], [Corpus.of(p, langs) for p in general], Path(out_dir), langs,
        SelectConfig(keep_words=keep_words, order=lm_order), workers)


_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9}


def _count(value: str | None) -> int | None:
    """'348M' → 348000000; None stays None."""
    if value is None:
        return None
    text = value.strip().lower().replace(",", "").replace("_", "")
    scale = _SUFFIXES.get(text[-1:], 1)
    try:
        n = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a count such as 348M, 2.5k or 1000000") from None
    if n <= 0:
        raise click.BadParameter(f"'{value}' must be positive")
    return int(n)


@main.command("build-vocab", epilog="""\b
Examples:
  nmtkit build-vocab -s en -t fr --train clean/train -o vocab/            # 30,000 words each
  nmtkit build-vocab -s en -t fr --train clean/train -o vocab/ --bpe 16000 --joint
  nmtkit build-vocab -s en -t fr --train clean/train -o vocab/ --spm unigram --spm-size 16000""")
@click.option("-s", "--source-lang", required=True, help="Source language code.")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@click.option("--train", "train", required=True, help="Prefix of clean tokenized text from 'preprocess'.")
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--size", type=click.IntRange(0), default=_V.size, show_default=True,
              help="Shortlist size per language, special symbols included (0: every token).")
@click.option("--min-count", type=click.IntRange(1), default=_V.min_count, show_default=True,
              help="Leave out tokens seen fewer times.")
@click.option("--bpe", "bpe_merges", type=click.IntRange(0), default=_V.bpe_merges, show_default=True,
              help="Learn this many BPE merges first (subword-nmt); 0: whole words, as the paper.")
@click.option("--spm", type=click.Choice(SPM_KINDS),
              help="SentencePiece subwords instead (unigram or BPE model), learned on the Moses tokens.")
@click.option("--spm-size", type=click.IntRange(8), default=_V.spm_size, show_default=True,
              help="With --spm: pieces per SentencePiece model.")
@click.option("--joint/--separate", "joint_bpe", default=_V.joint_bpe, show_default=True,
              help="One set of subword codes for both languages, or one per language.")
@_verbosity
def build_vocab(source_lang: str, target_lang: str, train: str, out_dir: str, size: int,
                min_count: int, bpe_merges: int, spm: str | None, spm_size: int, joint_bpe: bool) -> None:
    """Count the training text and write the shortlist vocabularies (and BPE codes).

    Writes OUT/vocab.SRC.txt and OUT/vocab.TGT.txt ('token count' lines, <pad> <unk> <s> </s>
    first), OUT/bpe.codes with --bpe, and OUT/vocab.json.
    """
    from .build_vocab import build_vocab as build
    from .console import log
    meta = build(Path(train), (source_lang, target_lang), Path(out_dir),
                 VocabConfig(size=size, min_count=min_count, bpe_merges=bpe_merges, joint_bpe=joint_bpe,
                             spm=spm or "", spm_size=spm_size))
    for lang, s in meta["stats"].items():
        log(f"{lang}: {s['size']:,} entries of {s['types']:,} types, "
            f"covering {100 * s['coverage']:.2f}% of {s['tokens']:,} training tokens")


@main.command(epilog="""\b
Examples:
  nmtkit translate -m runs/demo/best.pt < test.en > test.hyp.fr
  echo "In the beginning God created the heaven and the earth." | nmtkit translate -m best.pt
  nmtkit translate -m best.pt test.en -o test.hyp.fr --beam 5 --length-penalty gnmt --alpha 0.6
  nmtkit translate -m a.pt -m b.pt test.en --nbest 5            # ensemble; Moses n-best lines
  nmtkit translate -m best.pt test.en --alignments test.align   # then: nmtkit align-plot test.align""")
@click.option("-m", "--model", "model_paths", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="A checkpoint from 'nmtkit train' (nothing else is needed); repeat to ensemble.")
@click.argument("input", default="-")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write here (atomically) instead of stdout ('-': stdout).")
@click.option("--beam", type=click.IntRange(1), default=_S.beam, show_default=True, help="Beam width (1: greedy).")
@click.option("--length-penalty", type=click.Choice(LENGTH_PENALTIES), default=_S.length_penalty,
              show_default=True, help="Rank finished hypotheses by raw log-probability (the paper), "
              "by log-probability per word, or by GNMT's ((5+|y|)/6)^alpha.")
@click.option("--alpha", type=click.FloatRange(0), default=_S.alpha, show_default=True,
              help="GNMT length penalty exponent.")
@click.option("--max-ratio", type=click.FloatRange(0), default=_S.max_ratio, show_default=True,
              help="Output limit: this times the source length, plus 10.")
@click.option("--min-len", type=click.IntRange(0), default=_S.min_len, show_default=True,
              help="Words before </s> at least (1, as GroundHog and fairseq: no empty translation).")
@click.option("--nbest", type=click.IntRange(0), default=0, show_default=True,
              help="Write the N best (1: the best alone) as Moses n-best lines: "
                   "'i ||| text ||| log p ||| normalised log p', i from 0.")
@click.option("--no-unk", is_flag=True, help="Never produce <unk> (the paper's Table 1, last column).")
@click.option("--replace-unk", is_flag=True, help="Replace each <unk> by the source word it attends to most.")
@click.option("--unk-dict", type=click.Path(dir_okay=False),
              help="With --replace-unk: 'source target' lines to translate the copied word.")
@click.option("--alignments", type=click.Path(dir_okay=False),
              help="Also write each output's attention matrix with its tokens (JSON lines, for align-plot).")
@click.option("--print-alignment", "pharaoh_path", type=click.Path(dir_okay=False),
              help="Also write hard word alignments, one line per input line, as Pharaoh 'i-j' pairs (source "
                   "word i, target word j, from 0; Moses tokens after BPE is undone), from the attention.")
@click.option("--output-format", type=click.Choice(["text", "jsonl"]), default="text", show_default=True,
              help="jsonl: one JSON object per input line with the text, score, alignment and n-best list.")
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Sentences per batch (times --beam rows; long sentences get smaller batches) "
                   "[default: 32, fewer for beams over 5: at most 160 rows].")
@click.option("--max-tokens", type=click.IntRange(0), default=None,
              help="Batches of at most N source tokens (padding included; times --beam rows) instead of "
                   "--batch-size sentences; 0: sentence batches [default: 8,000 on GPUs, 0 on CPUs].")
@click.option("--tokenized", is_flag=True, help="Input and output in Moses tokens (BPE still applied and undone).")
@click.option("--max-length", type=click.IntRange(0), default=_O.max_length, show_default=True,
              help="Source subword units read of each line: a longer line is cropped to its first N, with a "
                   "warning, and still gives one output line (0: no limit). Search time grows with the square "
                   "of the length.")
@click.option("--shortlist", is_flag=True,
              help="Vocabulary selection: each batch scores only its candidate words (the 1,000 most "
                   "frequent target words and 20 translations of each of its source words, from the lexicon "
                   "training stores in the checkpoint): a smaller output layer.")
@click.option("--int8", is_flag=True,
              help="CPUs: the linear layers in int8 (torch's dynamic quantization, a scale per output row): "
                   "faster products, a quarter of their memory; BLEU within a few tenths (README).")
@_runtime_options
@_verbosity
def translate(model_paths: tuple[str, ...], input: str, output: str | None, beam: int, length_penalty: str,
              alpha: float, max_ratio: float, min_len: int, nbest: int, no_unk: bool, replace_unk: bool, unk_dict: str | None,
              alignments: str | None, pharaoh_path: str | None, output_format: str, batch_size: int | None,
              max_tokens: int | None, tokenized: bool, max_length: int, shortlist: bool, int8: bool,
              **runtime: Any) -> None:
    """Translate raw text, one sentence a line, from INPUT (default: stdin) to stdout.

    Output line i is the translation of input line i, always; an empty line
    gives an empty line. From a pipe or a terminal each line is translated as
    soon as it arrives; a file is translated in batches under a progress bar.
    """
    from .translate import read_unk_dict
    from .translate_io import translate_file
    if nbest > beam:
        raise UserError(f"--nbest {nbest} is more than --beam {beam} can give")
    if unk_dict and not replace_unk:
        raise UserError("--unk-dict is used by --replace-unk; add that flag")
    search = SearchConfig(beam=beam, length_penalty=length_penalty, alpha=alpha, max_ratio=max_ratio,
                          nbest=max(nbest, 1), no_unk=no_unk, min_len=min_len)
    options = TranslateOptions(search, batch_size, max_tokens, shortlist, tokenized, replace_unk=replace_unk,
                               unk_dict=read_unk_dict(unk_dict) if unk_dict else None, max_length=max_length)
    translate_file(list(model_paths), input, output, options, alignments, _runtime(runtime), nbest_format=nbest > 0,
                   pharaoh_path=pharaoh_path, jsonl=output_format == "jsonl", int8=int8)


@main.command(epilog="""\b
Examples:
  nmtkit score test.hyp.fr -r test.fr
  nmtkit score test.hyp.fr -r test.fr -r test.ostervald.fr -r test.darby.fr --clean verse-markers
  nmtkit score a.fr b.fr -r test.fr --source test.en --by-length --plot length.png --bootstrap 1000
  nmtkit score test.hyp.fr -r test.fr --source test.en --no-unk best.pt
  nmtkit score -m best.pt --data data-bin --split valid              # NLL and perplexity""")
@click.argument("hypotheses", nargs=-1)
@click.option("-r", "--ref", "refs", multiple=True, help="Reference file; repeat for several references.")
@click.option("--name", "names", multiple=True, help="A name per hypothesis file, for tables and plots.")
@click.option("-s", "--source", type=click.Path(dir_okay=False),
              help="The source text (for --by-length, --no-unk and -m).")
@click.option("--tokenized", is_flag=True, help="Files are Moses tokens: score them as they are (tok:none).")
@click.option("-l", "--lang", help="Target language for tokenized BLEU [default: the reference's suffix].")
@click.option("--clean", "clean", default="none", show_default=True,
              help=f"Cleaning applied to hypotheses and references alike before scoring: a preset "
                   f"({', '.join(PRESETS)}) or rules, comma-separated ({', '.join(RULES)}).")
@click.option("--by-length", is_flag=True, help="BLEU per source-length bucket (the paper's Figure 2).")
@click.option("--bucket-width", type=click.IntRange(1), default=10, show_default=True, help="Words per length bucket.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="With --by-length: draw it here (.png/.svg/.pdf).")
@click.option("--no-unk", "no_unk", type=click.Path(),
              help="Also score the sentences with no word unknown to this checkpoint or build-vocab directory.")
@click.option("--bootstrap", type=click.IntRange(0), default=0, show_default=True,
              help="Paired bootstrap resampling with this many samples, each system against the first.")
@click.option("-m", "--model", "model_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Checkpoint: NLL of each hypothesis given --source, or of --data's split.")
@click.option("--data", "data_bin", type=click.Path(file_okay=False), help="With -m: a binarized corpus.")
@click.option("--split", default="valid", show_default=True, help="With --data: the split to score.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_runtime_options
@_verbosity
def score(hypotheses: tuple[str, ...], refs: tuple[str, ...], names: tuple[str, ...], source: str | None,
          tokenized: bool, lang: str | None, clean: str, by_length: bool, bucket_width: int,
          plot_path: str | None, no_unk: str | None, bootstrap: int, model_paths: tuple[str, ...],
          data_bin: str | None, split: str, as_json: bool, **runtime: Any) -> None:
    """BLEU (sacreBLEU, with signatures) and chrF of HYPOTHESES against one or more references;
    NLL and perplexity of a checkpoint."""
    import json
    from .score import evaluate, format_report
    if not hypotheses and not data_bin:
        raise UserError("give hypothesis files and -r REF, or -m MODEL --data DATA_BIN")
    if plot_path and not by_length:
        raise UserError("--plot draws the --by-length table; add --by-length")
    result: dict[str, Any] = {}
    run = _runtime(runtime)
    if hypotheses:
        if not refs:
            raise UserError("give the reference translation with -r REF")
        if plot_path:
            from .plot import check_format
            check_format(plot_path)
        result = evaluate(hypotheses, refs, names, source, rules_named(clean), tokenized, lang,
                          bucket_width if by_length else 0, no_unk, bootstrap,
                          model_paths if source or not data_bin else (), run)
        if plot_path:
            from .plot import bleu_by_length
            bleu_by_length(result["by_length"]["rows"], plot_path, "BLEU by source sentence length")
    if data_bin:
        if len(model_paths) != 1:
            raise UserError("--data scores one checkpoint: give -m MODEL once")
        from .nll import corpus_nll
        result["corpus_nll"] = corpus_nll(model_paths[0], data_bin, split, runtime=run)
    click.echo(json.dumps(result) if as_json else format_report({"systems": [], **result}))


@main.command("align-plot", epilog="""\b
Examples:
  nmtkit translate -m best.pt test.en --alignments test.align > test.hyp.fr
  nmtkit align-plot test.align --sentences 3,10-12 -o figs/align.png    # figs/align-3.png ...
  nmtkit align-plot -m best.pt --source test.en --target test.fr --sentences 7 -o align7.pdf
  # hard links (translate --print-alignment, fast_align) over Moses-token files
  nmtkit align-plot test.links --source test.tok.en --target test.tok.fr -n 7 -o links7.png""")
@click.argument("alignments", required=False)
@click.option("-n", "--sentences", required=True, help="Line numbers to plot, from 1: '3,10-12'.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Picture (.png/.svg/.pdf); several sentences get -LINE before the suffix.")
@click.option("-m", "--model", "model_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Instead of an alignment file: force this checkpoint on --source/--target pairs.")
@click.option("--source", type=click.Path(dir_okay=False),
              help="With -m: source lines. With a Pharaoh file: its source side, in Moses tokens.")
@click.option("--target", type=click.Path(dir_okay=False),
              help="With -m: their reference translations. With a Pharaoh file: its target side, in Moses tokens.")
@click.option("--tokenized", is_flag=True, help="With -m: the lines are Moses tokens.")
@_runtime_options
@_verbosity
def align_plot(alignments: str | None, sentences: str, output: str, model_paths: tuple[str, ...],
               source: str | None, target: str | None, tokenized: bool, **runtime: Any) -> None:
    """Attention heatmaps (the paper's Figure 3): source words across, generated words down,
    black for 0 and white for 1."""
    from .align_plot import from_alignment_file, from_model, from_pharaoh, output_paths, parse_sentences, plot
    from .console import log
    lines = parse_sentences(sentences)
    output_paths(output, lines)                       # a bad suffix fails before any work
    if bool(alignments) == bool(model_paths):
        raise UserError("give either an alignment file from 'translate --alignments' or -m MODEL "
                        "with --source and --target")
    if model_paths:
        if not (source and target):
            raise UserError("-m needs --source and --target files")
        maps = from_model(model_paths, source, target, lines, tokenized, _runtime(runtime))
    elif source or target:
        assert alignments is not None
        if not (source and target):
            raise UserError("Pharaoh links need both --source and --target (Moses tokens)")
        maps = from_pharaoh(alignments, source, target, lines)
    else:
        assert alignments is not None
        maps = from_alignment_file(alignments, lines)
    for path in plot(maps, output):
        log(f"wrote {path}")




@main.command(epilog="""\b
Examples:
  nmtkit train data-bin --arch rnnsearch --save-dir runs/rnnsearch          # the paper's recipe
  nmtkit train data-bin --preset small --optimizer adam --lr 5e-4 --max-minutes 20 --save-dir runs/demo
  nmtkit train data-bin --arch luong --attention global --score dot --schedule luong --save-dir runs/luong
  torchrun --nproc_per_node 4 -m nmtkit train data-bin --save-dir runs/x    # several GPUs (DDP)
Running the same command again resumes from SAVE_DIR/last.pt exactly (--reset starts over).""")
@click.argument("data_bin", type=click.Path(file_okay=False))
@click.option("--config", type=click.Path(dir_okay=False), is_eager=True, expose_value=False,
              callback=lambda ctx, _p, path: _read_config(ctx, path),
              help="A TOML file of options (names as the flags, without --: hidden = 512); flags on the "
                   "command line override it.")
@click.option("--save-dir", required=True, type=click.Path(file_okay=False), help="Where last.pt, best.pt and metrics.jsonl go.")
@click.option("--arch", type=click.Choice(["rnnsearch", "rnnencdec", "luong"]), default=_M.arch, show_default=True,
              help="Bahdanau et al.'s RNNsearch, Cho et al.'s RNNencdec, or Luong et al.'s stacked LSTM.")
@click.option("--preset", type=click.Choice(list(MODEL_PRESETS)), default="paper", show_default=True,
              help="Model sizes; --emb/--hidden/--align/--maxout/--layers override.")
@click.option("--emb", type=click.IntRange(1), help="Word embedding size m [paper: 620; luong: 1000].")
@click.option("--hidden", type=click.IntRange(1), help="Hidden units n [paper: 1000].")
@click.option("--align", type=click.IntRange(1), help="Alignment model units n' (luong: concat and local-p) [paper: 1000].")
@click.option("--maxout", type=click.IntRange(1), help="Maxout units l [paper: 500].")
@click.option("--layers", type=click.IntRange(1), help="luong: LSTM layers in encoder and decoder [paper: 4].")
@click.option("--dropout", type=click.FloatRange(0, 1, max_open=True), default=_M.dropout, show_default=True,
              help="luong: dropout on the non-recurrent connections.")
@click.option("--attention", type=click.Choice([*WINDOWS, "none"]), default=_M.attention,
              show_default=True, help="luong: where to attend (none: the paper's non-attentional base).")
@click.option("--score", type=click.Choice(SCORES), default=_M.score,
              show_default=True, help="luong: the alignment score function.")
@click.option("--input-feed/--no-input-feed", default=_M.input_feed, show_default=True,
              help="luong: feed h̃_{t-1} with the next input word.")
@click.option("--reverse-source/--no-reverse-source", default=_M.reverse_source, show_default=True,
              help="luong: read the source backwards.")
@click.option("--window", type=click.IntRange(1), default=_M.window, show_default=True,
              help="luong: local attention's half-width D.")
@click.option("--window-renorm/--no-window-renorm", default=None,
              help="luong, local-p: divide the Gaussian-scaled weights by their sum [default: on for local-p]. "
                   "--no-window-renorm is the paper's exact form, whose weights are left unnormalised: its "
                   "predicted position p_t pinned to a sentence end in every Bible run of the docs.")
@click.option("--schedule", "schedule_name", type=click.Choice(SCHEDULES), default="appendix-b", show_default=True,
              help="Training recipe: Bahdanau et al.'s Appendix B, or Luong et al.'s SGD (lr 1, halved each epoch "
                   "after the 5th, or 8th with dropout; batch 128; clip 5; 10 or 12 epochs). Flags override it.")
@click.option("--readout", type=click.Choice(["prev", "next"]), default=_M.readout, show_default=True,
              help="Deep output from s_{i-1} (the paper's equation) or s_i.")
@click.option("--encoder", type=click.Choice(["paper", "cudnn"]), default=_M.encoder, show_default=True,
              help="The appendix's GRU, or torch's fused GRU (cuDNN; reset gate after U s): faster on GPUs.")
@click.option("--optimizer", type=click.Choice(["adadelta", "adam", "sgd"]), default=_T.optimizer, show_default=True)
@click.option("--lr", type=float, default=None, help="Learning rate [adadelta, sgd: 1.0; adam: 5e-4].")
@click.option("--decay-after", type=click.IntRange(0), default=_T.decay_after, show_default=True,
              help="Multiply the learning rate by --decay every epoch after this many (0: never).")
@click.option("--decay", type=click.FloatRange(0, 1), default=_T.decay, show_default=True)
@click.option("--clip", type=click.FloatRange(0), default=_T.clip, show_default=True, help="Gradient L2 norm limit (0: off).")
@click.option("--batch-size", type=click.IntRange(1), default=_T.batch_size, show_default=True,
              help="Sentences per minibatch, in total over all GPUs (the paper's 80): with torchrun each of N "
                   "processes takes 1/N of every minibatch, so N changes nothing but the speed.")
@click.option("--max-tokens", type=click.IntRange(0), default=_T.max_tokens, show_default=True,
              help="Minibatches by target tokens instead, in total over all GPUs (0: off).")
@click.option("--update-freq", type=click.IntRange(1), default=_T.update_freq, show_default=True,
              help="Accumulate the gradients of N passes per update: an update is N times --batch-size "
                   "(or --max-tokens), computed a piece at a time, in 1/N of the memory.")
@click.option("--compile", "compile", is_flag=True,
              help="Compile the recurrences' per-word steps with torch.compile (rnnsearch, rnnencdec): "
                   "fused kernels, for GPUs, where the eager step is bound by kernel launches. The first "
                   "updates wait for the compiler.")
@click.option("--compile-mode", type=click.Choice(["default", "reduce-overhead", "max-autotune"]),
              default=_T.compile_mode, show_default=True,
              help="torch.compile's mode, with --compile: reduce-overhead replays each step as a CUDA graph "
                   "(recorded once per shape: combine with --pad-to-multiple); max-autotune also tunes the kernels.")
@click.option("--pad-to-multiple", type=click.IntRange(1), default=_T.pad_to_multiple, show_default=True,
              help="Pad each training batch's source and target lengths up to a multiple of N: fewer shapes "
                   "for CUDA graphs and compiled kernels, at the cost of computing the padding.")
@click.option("--shortlist", type=click.IntRange(0), default=_T.shortlist, show_default=True,
              help="Jean et al. (2015)'s sampled softmax in training: over the minibatch's target words and "
                   "others drawn at random, this many in all (0: the full softmax, as the paper).")
@click.option("--pool", type=click.IntRange(1), default=_T.pool, show_default=True, help="Minibatches per length-sorted pool.")
@click.option("--max-len", type=click.IntRange(0), default=_T.max_len, show_default=True, help="Drop longer pairs (30 or 50 in the paper).")
@click.option("--max-updates", type=click.IntRange(0), default=_T.max_updates, show_default=True)
@click.option("--max-epochs", type=click.IntRange(0), default=_T.max_epochs, show_default=True)
@click.option("--max-minutes", type=click.FloatRange(0), default=_T.max_minutes, show_default=True)
@click.option("--valid-every", type=click.IntRange(1), default=_T.valid_every, show_default=True)
@click.option("--valid-max-sentences", type=click.IntRange(0), default=_T.valid_max_sentences, show_default=True,
              help="Validate on the first N dev sentences only (0: all).")
@click.option("--valid-bleu/--no-valid-bleu", default=_T.valid_bleu, show_default=True, help="Greedy dev BLEU at validation.")
@click.option("--best-by", type=click.Choice(["bleu", "nll"]), default=_T.best_by, show_default=True,
              help="The dev score that picks best.pt and counts for --patience: greedy BLEU (the paper's), "
                   "or NLL (no search needed: with --no-valid-bleu, validation is teacher forcing alone).")
@click.option("--patience", type=click.IntRange(0), default=_T.patience, show_default=True, help="Validations without improvement before stopping (0: never).")
@click.option("--keep-validations", is_flag=True,
              help="Also keep the model of every validation as SAVE_DIR/update-N.pt (weights only, no "
                   "optimizer state): for learning curves, e.g. test BLEU against minutes.")
@click.option("--keep-last", type=click.IntRange(0), default=_T.keep_last, show_default=True,
              help="Keep the models of the last N validations as update-N.pt (weights only; 0: none, or every "
                   "one with --keep-validations), e.g. to average them.")
@click.option("--keep-best", type=click.IntRange(0), default=_T.keep_best, show_default=True,
              help="Keep the N best validated models (by --best-by) as best-STEP.pt, weights only.")
@click.option("--log-every", type=click.IntRange(1), default=_T.log_every, show_default=True)
@click.option("--seed", type=int, default=_T.seed, show_default=True)
@click.option("--init-from", type=click.Path(dir_okay=False),
              help="Start from this checkpoint's weights with a fresh optimizer (fine-tuning): same model "
                   "flags, same vocabularies. Ignored when SAVE_DIR/last.pt exists (that run resumes).")
@_runtime_options
@click.option("--reset", is_flag=True, help="Ignore SAVE_DIR/last.pt and start over.")
@_verbosity
def train(data_bin: str, save_dir: str, arch: str, preset: str, schedule_name: str, reset: bool,
          **values: Any) -> None:
    """Train RNNsearch, RNNencdec or a Luong et al. model on a binarized corpus (Appendix B by default)."""
    from .train import train as run
    ctx = click.get_current_context()
    typed = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.DEFAULT_MAP)   # flags, --config
    given = {k for k in ctx.params if ctx.get_parameter_source(k) in typed}
    model_cfg, train_cfg = train_settings(arch, preset, schedule_name, values, given)
    run(Path(data_bin), Path(save_dir), model_cfg, train_cfg, resume=not reset)


@main.command(epilog="""\b
Examples:
  nmtkit info runs/demo/best.pt
  nmtkit info runs/demo/best.pt --json | python -m json.tool""")
@click.argument("model_path", metavar="CKPT", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_verbosity
def info(model_path: str, as_json: bool) -> None:
    """What a checkpoint holds: architecture and sizes, languages and vocabularies, training
    progress and best dev score, and the resolved training settings."""
    import json
    from .info import describe, format_info
    found = describe(model_path)
    click.echo(json.dumps(found) if as_json else format_info(found))


@main.command(epilog="""\b
Example (the last three validations of a run kept with --keep-validations):
  nmtkit average runs/x/update-8000.pt runs/x/update-9000.pt runs/x/update-10000.pt -o runs/x/avg.pt""")
@click.argument("model_paths", metavar="CKPT...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The averaged checkpoint.")
@_verbosity
def average(model_paths: tuple[str, ...], output: str) -> None:
    """Average the weights of checkpoints of one model into a checkpoint that translate takes."""
    from .average import write_average
    from .console import log
    write_average(list(model_paths), output)
    log(f"averaged {len(model_paths)} checkpoints into {output}")


@main.command(epilog="""\b
Examples:
  nmtkit lexicon runs/old/best.pt --data data-bin                 # add one to a checkpoint, in place
  nmtkit lexicon best.pt --data data-bin --frequent 2000 --per-source 100 -o best-wide.pt""")
@click.argument("model_path", metavar="CKPT", type=click.Path(dir_okay=False))
@click.option("--data", "data_bin", required=True, type=click.Path(file_okay=False),
              help="The binarized corpus the model was trained on (same vocabularies).")
@click.option("--frequent", type=click.IntRange(0), default=LEXICON_FREQUENT, show_default=True,
              help="Target words always in the list: the N most frequent.")
@click.option("--per-source", type=click.IntRange(1), default=LEXICON_PER_SOURCE, show_default=True,
              help="Translations listed per source word (by Dice's coefficient over the training pairs).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here [default: CKPT itself].")
@_verbosity
def lexicon(model_path: str, data_bin: str, frequent: int, per_source: int, output: str | None) -> None:
    """Build the candidate lists of translate --shortlist from a corpus and store them in a checkpoint
    (training stores one already; this is for older checkpoints or other sizes)."""
    from .lexicon import add_lexicon
    from .console import log
    add_lexicon(model_path, data_bin, output or model_path, frequent, per_source)
    log(f"{output or model_path}: lexicon of {frequent:,} frequent words and {per_source} per source word")


@main.command(epilog="""\b
Examples:
  nmtkit serve -m runs/demo/best.pt                       # http://127.0.0.1:8080/ : the page
  curl -s localhost:8080/translate -H 'Content-Type: application/json' \\
       -d '{"sentences": ["And God said, Let there be light."], "beam": 5}'
  nmtkit serve -m a.pt -m b.pt --host 0.0.0.0 --port 5000 --int8 --shortlist""")
@click.option("-m", "--model", "model_paths", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="Checkpoint to serve; repeat for an ensemble.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option("--beam", type=click.IntRange(1), default=5, show_default=True, help="Beam when a request names none.")
@click.option("--max-sentences", type=click.IntRange(1), default=64, show_default=True,
              help="Sentences per request (and per batch of requests).")
@click.option("--max-length", type=click.IntRange(1), default=_O.max_length, show_default=True,
              help="Source subword units per sentence, as translate counts them: a longer one is refused (413).")
@click.option("--max-body", type=click.IntRange(1), default=1 << 20, show_default=True, help="Bytes per request.")
@click.option("--max-beam", type=click.IntRange(1), default=24, show_default=True, help="Largest beam a request may ask.")
@click.option("--batch-wait", type=click.FloatRange(0), default=5.0, show_default=True,
              help="Milliseconds a batch waits for other requests to join it.")
@click.option("--shortlist", is_flag=True, help="Vocabulary selection, as translate --shortlist.")
@click.option("--int8", is_flag=True, help="int8 linear layers on CPUs, as translate --int8.")
@_runtime_options
@_verbosity
def serve(model_paths: tuple[str, ...], host: str, port: int, beam: int, max_sentences: int, max_length: int,
          max_body: int, max_beam: int, batch_wait: float, shortlist: bool, int8: bool, **runtime: Any) -> None:
    """Serve translation over HTTP: a JSON API (also OpenNMT-py's request shape) and a page that
    shows the attention. Needs the serve extra: pip install 'nmtkit[serve]'."""
    try:
        from .serve.app import Limits, serve as run
    except ImportError as err:
        raise UserError(f"nmtkit serve needs FastAPI and uvicorn ({err.name} is missing): "
                        f"pip install 'nmtkit[serve]'") from None
    if beam > max_beam:
        raise UserError(f"--beam {beam} is more than --max-beam {max_beam}")
    run(list(model_paths), host, port, Limits(max_sentences, max_length, max_body, max_beam), beam,
        batch_wait / 1000, _runtime(runtime), int8, shortlist)


@main.command("score-align", epilog="""\b
Example:
  nmtkit align -m best.pt --source test.en --target test.fr -o test.links
  nmtkit score-align test.links -g gold.links""")
@click.argument("hypothesis", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-g", "--gold", required=True, type=click.Path(dir_okay=False),
              help="Gold alignments: per line, sure links i-j and possible links i?j (from 0).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_verbosity
def score_align(hypothesis: str, gold: str, as_json: bool) -> None:
    """Precision, recall and alignment error rate (Och & Ney) of Pharaoh alignments against gold links."""
    import json
    from .aer import score_files
    r = score_files(hypothesis, gold)
    click.echo(json.dumps(r) if as_json else
               f"AER {r['aer']:.2f}  precision {r['precision']:.2f}  recall {r['recall']:.2f}  "
               f"({r['sentences']:,} sentences; {r['links']:,} links against {r['sure']:,} sure and "
               f"{r['possible']:,} possible)")


@main.command(epilog="""\b
Example (the attention's alignment of reference translations, for score-align):
  nmtkit align -m runs/demo/best.pt --source test.en --target test.fr -o test.links""")
@click.option("-m", "--model", "model_paths", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="Checkpoint; repeat for an ensemble (attention averaged).")
@click.option("--source", required=True, type=click.Path(dir_okay=False), help="Source sentences, one a line.")
@click.option("--target", required=True, type=click.Path(dir_okay=False), help="Their translations, one a line.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), help="Pharaoh file [default: stdout].")
@click.option("--tokenized", is_flag=True, help="The files are Moses tokens (the links count them as they are).")
@_runtime_options
@_verbosity
def align(model_paths: tuple[str, ...], source: str, target: str, output: str | None, tokenized: bool,
          **runtime: Any) -> None:
    """Word alignments of given translations from the model's attention (forced decoding): each target
    word linked to the source word it attends to most, as Pharaoh i-j pairs over Moses tokens."""
    from .translate_io import align_file
    align_file(list(model_paths), source, target, output, tokenized, _runtime(runtime))
