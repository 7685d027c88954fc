"""The ``nmtkit`` command: a thin click layer over the library.

Each command turns its flags into config objects, makes one library call,
and maps :class:`~nmtkit.errors.UserError` to one line on stderr with exit
status 2. Defaults come from :mod:`nmtkit.config`.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__
from .config import (MODEL_PRESETS, SCHEDULES, SCORES, WINDOWS, FilterConfig, ModelConfig, TextConfig, TrainConfig, VocabConfig,
                     preset_sizes, schedule)
from .errors import UserError
from .parallel import default_workers
from .search import LENGTH_PENALTIES, SearchConfig
from .text.clean import PRESETS, RULES, rules_named

_F = FilterConfig()
_V = VocabConfig()
_M = ModelConfig()
_T = TrainConfig()
_S = SearchConfig()


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """One line on stderr and exit 2 for anything the user can fix; Ctrl-C exits 130."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as err:
            click.echo(f"nmtkit {click.get_current_context().info_name}: error: {err}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(141)
    return wrapper


class _Group(click.Group):
    """Usage errors as one line, like every other user error (click's own take four)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("standalone_mode", True) is False:
            return super().main(*args, **kwargs)
        try:
            rv = super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.UsageError as err:
            where = f"nmtkit {err.ctx.info_name}" if err.ctx is not None and err.ctx.parent else "nmtkit"
            click.echo(f"{where}: error: {err.format_message()} (see --help)", err=True)
            sys.exit(2)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nmtkit")
def main() -> None:
    """Attention-based neural machine translation (Bahdanau et al. 2015) from the shell.

    \b
    Pipeline:  preprocess → build-vocab → preprocess --vocab → train → translate → score
    Run 'nmtkit COMMAND --help' for a command's options and an example.
    """


def _workers_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("-j", "--workers", type=click.IntRange(1), default=default_workers(),
                        show_default="number of cores", help="Processes to spread the work over.")(fn)


@main.command(epilog="""\b
Examples:
  # raw parallel text -> clean Moses tokens (train is filtered, valid/test keep every line)
  nmtkit preprocess -s en -t fr --train raw/train --valid raw/valid --test raw/test -o clean/
  # clean tokens + vocabulary -> binarized corpus
  nmtkit preprocess -s en -t fr --train clean/train --valid clean/valid --test clean/test \\
      --vocab vocab/ -o data-bin/
  # one side as a stream
  echo "Don`t panic." | nmtkit preprocess -l en
  # data selection (bilingual Moore-Lewis): keep the 348M most news-like target words
  nmtkit preprocess --select -s en -t fr --in-domain nc/news-commentary \
      --train corpora/europarl --train corpora/un --keep-words 348M -o selected/""")
@click.option("-s", "--source-lang", help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", help="Target language code.")
@click.option("-l", "--lang", help="Stream mode: tokenize one language from INPUT (or stdin) to stdout.")
@click.argument("input", required=False)
@click.option("--train", "train", multiple=True, help="Training split prefix (filtered). Select mode: the general-domain corpora (repeat).")
@click.option("--valid", "valid", help="Validation split prefix (every line kept).")
@click.option("--test", "test", help="Test split prefix (every line kept).")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Output directory.")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False),
              help="Binarize: map clean text to ids with this build-vocab directory (applies its BPE).")
@click.option("--clean", "clean", default="default", show_default=True,
              help=f"Cleaning: a preset ({', '.join(PRESETS)}; 'default' = unicode,whitespace suits any corpus, "
                   f"'bible' = every rule, for the embedded Bible corpus) or rules, comma-separated: "
                   f"{', '.join(RULES)}.")
@click.option("--normalize-punct/--no-normalize-punct", default=True, show_default=True,
              help="Moses punctuation normalization.")
@click.option("--aggressive-dash", is_flag=True, help="Split hyphens: arc @-@ en @-@ ciel.")
@click.option("--lowercase", is_flag=True, help="Lowercase tokens (the paper does not).")
@click.option("--max-len", type=click.IntRange(0), default=_F.max_len, show_default=True,
              help="Drop training pairs with a side longer than this many tokens (0: no limit).")
@click.option("--min-len", type=click.IntRange(0), default=_F.min_len, show_default=True,
              help="Drop training pairs with a side shorter than this.")
@click.option("--max-ratio", type=click.FloatRange(0), default=_F.max_ratio, show_default=True,
              help="Drop training pairs whose longer side exceeds this times the shorter (0: off).")
@click.option("--dedup/--no-dedup", default=_F.dedup, show_default=True, help="Drop repeated training pairs.")
@click.option("--bpe-codes", type=click.Path(dir_okay=False), help="Stream mode: apply these BPE codes. (Corpus mode applies the vocabulary's codes when binarizing.)")
@click.option("-q", "--quiet", is_flag=True, help="No summary (binarize mode).")
@click.option("--select", is_flag=True, help="Select mode: keep the --train pairs most like --in-domain (Axelrod et al. 2011).")
@click.option("--in-domain", multiple=True, help="Select mode: in-domain parallel text prefix (repeat).")
@click.option("--keep-words", callback=lambda _c, _p, v: _count(v), help="Select mode: target-side words to keep (348M, 2.5k, 1000000).")
@click.option("--lm-order", type=click.IntRange(1, 4), default=4, show_default=True, help="Select mode: n-gram order of the LMs.")
@_workers_option
@user_errors
def preprocess(source_lang: str | None, target_lang: str | None, lang: str | None, input: str | None,
               train: str | None, valid: str | None, test: str | None, out_dir: str | None,
               vocab_dir: str | None, clean: str, normalize_punct: bool, aggressive_dash: bool,
               lowercase: bool, max_len: int, min_len: int, max_ratio: float, dedup: bool,
               bpe_codes: str | None, quiet: bool, select: bool, in_domain: tuple[str, ...],
               keep_words: int | None, lm_order: int, workers: int) -> None:
    """Clean and tokenize text, or binarize it with a vocabulary.

    \b
    Text mode (-s/-t and split prefixes, -o DIR): raw PREFIX.LANG files →
      DIR/<split>.LANG clean Moses tokens, DIR/<split>.lines (raw line numbers)
      and DIR/preprocess.json (settings, rule counts, dropped pairs).
    Binarize mode (the same plus --vocab VOCAB_DIR): clean text → DIR/manifest.json,
      <split>.LANG.bin/.idx, <split>.lines and the vocabularies, then a summary.
    Stream mode (-l LANG [INPUT]): one line out per line in, on stdout.
    Select mode (--select -s/-t --in-domain P --train P… --keep-words N -o DIR): the
      general pairs most like the in-domain text by bilingual cross-entropy difference →
      DIR/train.LANG (raw lines, input order), DIR/select.json, DIR/lm/.
    """
    codes = Path(bpe_codes).read_text(encoding="utf-8") if bpe_codes and Path(bpe_codes).is_file() else None
    if bpe_codes and codes is None:
        raise UserError(f"{bpe_codes}: no such BPE codes file")
    text_args = dict(clean=rules_named(clean), normalize_punct=normalize_punct,
                     aggressive_dash=aggressive_dash, lowercase=lowercase)
    if lang:
        from .preprocess import preprocess_stream
        from .console import log
        fired = preprocess_stream(TextConfig(lang, **text_args), input or "-", sys.stdout, codes, workers)
        if fired:
            log("cleaning rules fired: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fired.items())))
        return
    if input:
        raise UserError(f"unexpected argument '{input}': INPUT is for stream mode (-l LANG)")
    if bpe_codes:
        raise UserError("--bpe-codes is for stream mode (-l); a corpus gets the codes of its "
                        "vocabulary directory when binarized (preprocess --vocab)")
    if not (source_lang and target_lang and out_dir):
        raise UserError("give -s SRC -t TGT and -o DIR with split prefixes, or -l LANG for stream mode")
    if select or in_domain or keep_words is not None:
        _select(source_lang, target_lang, in_domain, train, keep_words, lm_order, Path(out_dir), workers)
        return
    if len(train) > 1:
        raise UserError("--train takes one prefix here (several only with --select)")
    splits = {name: Path(p) for name, p in (("train", train[0] if train else None), ("valid", valid),
                                             ("test", test)) if p}
    if not splits:
        raise UserError("no split given: use --train/--valid/--test PREFIX")
    if vocab_dir:
        from .binarize import binarize_corpus
        from .console import console
        from .summary import corpus_summary
        manifest = binarize_corpus(splits, (source_lang, target_lang), Path(vocab_dir), Path(out_dir), workers)
        if not quiet:
            console.print(corpus_summary(manifest))
        return
    from .preprocess import preprocess_corpus
    from .console import log
    texts = (TextConfig(source_lang, **text_args), TextConfig(target_lang, **text_args))
    report = preprocess_corpus(splits, Path(out_dir), texts,
                               FilterConfig(max_len, min_len, max_ratio, dedup), workers)
    for name, s in report["splits"].items():
        if name in splits:
            dropped = ", ".join(f"{k} {v:,}" for k, v in s.get("dropped", {}).items())
            log(f"{name}: {s['lines']:,} lines → {s['pairs']:,} pairs" + (f" (dropped: {dropped})" if dropped else ""))


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


def _select(src: str, tgt: str, in_domain: tuple[str, ...], general: tuple[str, ...], keep_words: int | None,
            order: int, out_dir: Path, workers: int) -> None:
    from .selection.moore_lewis import Corpus, SelectConfig, select
    if not in_domain or not general or keep_words is None:
        raise UserError("select mode needs --in-domain PREFIX, --train PREFIX (the general corpora) and --keep-words N")
    langs = (src, tgt)
    select([Corpus.of(p, langs) for p in in_domain], [Corpus.of(p, langs) for p in general], out_dir, langs,
           SelectConfig(keep_words=keep_words, order=order), workers)


@main.command("build-vocab", epilog="""\b
Examples:
  nmtkit build-vocab -s en -t fr --train clean/train -o vocab/            # 30,000 words each
  nmtkit build-vocab -s en -t fr --train clean/train -o vocab/ --bpe 16000 --joint""")
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
@click.option("--joint/--separate", "joint_bpe", default=_V.joint_bpe, show_default=True,
              help="One set of BPE codes for both languages, or one per language.")
@user_errors
def build_vocab(source_lang: str, target_lang: str, train: str, out_dir: str, size: int,
                min_count: int, bpe_merges: int, joint_bpe: bool) -> None:
    """Count the training text and write the shortlist vocabularies (and BPE codes).

    Writes OUT/vocab.SRC.txt and OUT/vocab.TGT.txt ('token count' lines, <pad> <unk> <s> </s>
    first), OUT/bpe.codes with --bpe, and OUT/vocab.json.
    """
    from .build_vocab import build_vocab as build
    from .console import log
    meta = build(Path(train), (source_lang, target_lang), Path(out_dir),
                 VocabConfig(size, min_count, bpe_merges, joint_bpe))
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
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
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
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True,
              help="Sentences per batch (times --beam rows; long sentences get smaller batches).")
@click.option("--tokenized", is_flag=True, help="Input and output in Moses tokens (BPE still applied and undone).")
@click.option("--device", help="cpu, cuda, cuda:1 … [default: cuda when present].")
@click.option("--bf16", is_flag=True, help="bfloat16 autocast (GPUs; CPUs with AVX512-BF16 or AMX).")
@click.option("--threads", type=click.IntRange(0), default=0, show_default=True,
              help="CPU threads (0: torch's default).")
@user_errors
def translate(model_paths: tuple[str, ...], input: str, output: str | None, beam: int, length_penalty: str,
              alpha: float, max_ratio: float, min_len: int, nbest: int, no_unk: bool, replace_unk: bool, unk_dict: str | None,
              alignments: str | None, batch_size: int, tokenized: bool, device: str | None, bf16: bool,
              threads: int) -> None:
    """Translate raw text, one sentence a line, from INPUT (default: stdin) to stdout.

    Output line i is the translation of input line i, always; an empty line
    gives an empty line. From a pipe or a terminal each line is translated as
    soon as it arrives; a file is translated in batches under a progress bar.
    """
    from .translate import TranslateOptions, read_unk_dict
    from .translate_io import translate_file
    if nbest > beam:
        raise UserError(f"--nbest {nbest} is more than --beam {beam} can give")
    if unk_dict and not replace_unk:
        raise UserError("--unk-dict is used by --replace-unk; add that flag")
    if threads:
        import torch
        torch.set_num_threads(threads)
    search = SearchConfig(beam=beam, length_penalty=length_penalty, alpha=alpha, max_ratio=max_ratio,
                          nbest=max(nbest, 1), no_unk=no_unk, min_len=min_len)
    options = TranslateOptions(search, batch_size, tokenized, replace_unk=replace_unk,
                               unk_dict=read_unk_dict(unk_dict) if unk_dict else None, bf16=bf16)
    translate_file(list(model_paths), input, output, options, alignments, device, nbest_format=nbest > 0)


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
@user_errors
def score(hypotheses: tuple[str, ...], refs: tuple[str, ...], names: tuple[str, ...], source: str | None,
          tokenized: bool, lang: str | None, clean: str, by_length: bool, bucket_width: int,
          plot_path: str | None, no_unk: str | None, bootstrap: int, model_paths: tuple[str, ...],
          data_bin: str | None, split: str, as_json: bool) -> None:
    """BLEU (sacreBLEU, with signatures) and chrF of HYPOTHESES against one or more references;
    NLL and perplexity of a checkpoint."""
    import json
    from .score import evaluate, format_report
    if not hypotheses and not data_bin:
        raise UserError("give hypothesis files and -r REF, or -m MODEL --data DATA_BIN")
    if plot_path and not by_length:
        raise UserError("--plot draws the --by-length table; add --by-length")
    result: dict[str, Any] = {}
    if hypotheses:
        if not refs:
            raise UserError("give the reference translation with -r REF")
        if plot_path:
            from .plot import check_format
            check_format(plot_path)
        result = evaluate(hypotheses, refs, names, source, rules_named(clean), tokenized, lang,
                          bucket_width if by_length else 0, no_unk, bootstrap,
                          model_paths if source or not data_bin else ())
        if plot_path:
            from .plot import bleu_by_length
            bleu_by_length(result["by_length"]["rows"], plot_path, "BLEU by source sentence length")
    if data_bin:
        if len(model_paths) != 1:
            raise UserError("--data scores one checkpoint: give -m MODEL once")
        from .nll import corpus_nll
        result["corpus_nll"] = corpus_nll(model_paths[0], data_bin, split)
    click.echo(json.dumps(result) if as_json else format_report({"systems": [], **result}))


@main.command("align-plot", epilog="""\b
Examples:
  nmtkit translate -m best.pt test.en --alignments test.align > test.hyp.fr
  nmtkit align-plot test.align --sentences 3,10-12 -o figs/align.png    # figs/align-3.png ...
  nmtkit align-plot -m best.pt --source test.en --target test.fr --sentences 7 -o align7.pdf""")
@click.argument("alignments", required=False)
@click.option("-n", "--sentences", required=True, help="Line numbers to plot, from 1: '3,10-12'.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Picture (.png/.svg/.pdf); several sentences get -LINE before the suffix.")
@click.option("-m", "--model", "model_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Instead of an alignment file: force this checkpoint on --source/--target pairs.")
@click.option("--source", type=click.Path(dir_okay=False), help="With -m: source lines.")
@click.option("--target", type=click.Path(dir_okay=False), help="With -m: their reference translations.")
@click.option("--tokenized", is_flag=True, help="With -m: the lines are Moses tokens.")
@user_errors
def align_plot(alignments: str | None, sentences: str, output: str, model_paths: tuple[str, ...],
               source: str | None, target: str | None, tokenized: bool) -> None:
    """Attention heatmaps (the paper's Figure 3): source words across, generated words down,
    black for 0 and white for 1."""
    from .align_plot import from_alignment_file, from_model, output_paths, parse_sentences, plot
    from .console import log
    lines = parse_sentences(sentences)
    output_paths(output, lines)                       # a bad suffix fails before any work
    if bool(alignments) == bool(model_paths):
        raise UserError("give either an alignment file from 'translate --alignments' or -m MODEL "
                        "with --source and --target")
    if model_paths:
        if not (source and target):
            raise UserError("-m needs --source and --target files")
        maps = from_model(model_paths, source, target, lines, tokenized)
    else:
        assert alignments is not None
        maps = from_alignment_file(alignments, lines)
    for path in plot(maps, output):
        log(f"wrote {path}")




_LUONG_ONLY = {"layers", "dropout", "attention", "score", "input_feed", "reverse_source", "window"}
_RNNSEARCH_ONLY = {"maxout", "readout", "encoder"}


@main.command(epilog="""\b
Examples:
  nmtkit train data-bin --arch rnnsearch --save-dir runs/rnnsearch          # the paper's recipe
  nmtkit train data-bin --preset small --optimizer adam --lr 5e-4 --max-minutes 20 --save-dir runs/demo
  nmtkit train data-bin --arch luong --attention global --score dot --schedule luong --save-dir runs/luong
  torchrun --nproc_per_node 4 -m nmtkit train data-bin --save-dir runs/x    # several GPUs (DDP)
Running the same command again resumes from SAVE_DIR/last.pt exactly (--reset starts over).""")
@click.argument("data_bin", type=click.Path(file_okay=False))
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
@click.option("--shortlist", type=click.IntRange(0), default=_T.shortlist, show_default=True,
              help="Jean et al. (2015)'s sampled softmax in training: over the minibatch's target words and "
                   "others drawn at random, this many in all (0: the full softmax, as the paper).")
@click.option("--pool", type=click.IntRange(1), default=_T.pool, show_default=True, help="Minibatches per length-sorted pool.")
@click.option("--max-len", type=click.IntRange(0), default=_T.max_len, show_default=True, help="Drop longer pairs (30 or 50 in the paper).")
@click.option("--max-updates", type=click.IntRange(0), default=_T.max_updates, show_default=True)
@click.option("--max-epochs", type=click.IntRange(0), default=_T.max_epochs, show_default=True)
@click.option("--max-minutes", type=click.FloatRange(0), default=_T.max_minutes, show_default=True)
@click.option("--valid-every", type=click.IntRange(1), default=_T.valid_every, show_default=True)
@click.option("--valid-bleu/--no-valid-bleu", default=_T.valid_bleu, show_default=True, help="Greedy dev BLEU at validation.")
@click.option("--best-by", type=click.Choice(["bleu", "nll"]), default=_T.best_by, show_default=True,
              help="The dev score that picks best.pt and counts for --patience: greedy BLEU, or NLL "
                   "(steadier for young models, whose greedy output is mostly repetition).")
@click.option("--patience", type=click.IntRange(0), default=_T.patience, show_default=True, help="Validations without improvement before stopping (0: never).")
@click.option("--keep-validations", is_flag=True,
              help="Also keep the model of every validation as SAVE_DIR/update-N.pt (weights only, no "
                   "optimizer state): for learning curves, e.g. test BLEU against minutes.")
@click.option("--log-every", type=click.IntRange(1), default=_T.log_every, show_default=True)
@click.option("--seed", type=int, default=_T.seed, show_default=True)
@click.option("--threads", type=click.IntRange(0), default=_T.threads, show_default=True, help="CPU threads (0: torch's default).")
@click.option("--bf16", is_flag=True, help="bfloat16 autocast: on GPUs, and on CPUs with AVX512-BF16 or AMX (about 2x faster there).")
@click.option("--reset", is_flag=True, help="Ignore SAVE_DIR/last.pt and start over.")
@user_errors
def train(data_bin: str, save_dir: str, arch: str, preset: str, schedule_name: str, reset: bool,
          **args: Any) -> None:
    """Train RNNsearch, RNNencdec or a Luong et al. model on a binarized corpus (Appendix B by default)."""
    from .train import train as run
    sizes = preset_sizes(arch, preset)
    sizes |= {k: v for k in ("emb", "hidden", "align", "maxout", "layers") if (v := args.pop(k)) is not None}
    model_cfg = ModelConfig(arch=arch, **sizes, **{k: args.pop(k) for k in (
        "readout", "encoder", "dropout", "attention", "score", "input_feed", "reverse_source", "window")})
    ctx = click.get_current_context()
    given = {k for k in ctx.params if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
    foreign = given & (_RNNSEARCH_ONLY if arch == "luong" else _LUONG_ONLY)
    if foreign:
        raise UserError(f"--{sorted(foreign)[0].replace('_', '-')} does not apply to --arch {arch}")
    recipe = schedule(schedule_name, model_cfg.dropout if arch == "luong" else 0.0)
    args |= {k: v for k, v in recipe.items() if k not in given}
    if args["lr"] is None:
        args["lr"] = 5e-4 if args["optimizer"] == "adam" else 1.0
    run(Path(data_bin), Path(save_dir), model_cfg, TrainConfig(**args), resume=not reset)
