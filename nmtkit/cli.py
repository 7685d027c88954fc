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
from .config import MODEL_PRESETS, FilterConfig, ModelConfig, TextConfig, TrainConfig, VocabConfig
from .errors import UserError
from .parallel import default_workers
from .search import SearchConfig
from .text.clean import RULES, check_rule_names

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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nmtkit")
def main() -> None:
    """Attention-based neural machine translation (Bahdanau et al. 2015) from the shell.

    \b
    Pipeline:  preprocess → build-vocab → preprocess --vocab → train → translate → score
    Run 'nmtkit COMMAND --help' for a command's options and an example.
    """


def _clean_rules(value: str) -> tuple[str, ...]:
    if value == "all":
        return tuple(RULES)
    if value == "none":
        return ()
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    check_rule_names(names)
    return names


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
  echo "Don`t panic." | nmtkit preprocess -l en""")
@click.option("-s", "--source-lang", help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", help="Target language code.")
@click.option("-l", "--lang", help="Stream mode: tokenize one language from INPUT (or stdin) to stdout.")
@click.argument("input", required=False)
@click.option("--train", "train", help="Training split prefix (filtered).")
@click.option("--valid", "valid", help="Validation split prefix (every line kept).")
@click.option("--test", "test", help="Test split prefix (every line kept).")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Output directory.")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False),
              help="Binarize: map clean text to ids with this build-vocab directory (applies its BPE).")
@click.option("--clean", "clean", default="all", show_default=True,
              help=f"Cleaning rules, comma-separated, 'all' or 'none': {', '.join(RULES)}.")
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
@_workers_option
@user_errors
def preprocess(source_lang: str | None, target_lang: str | None, lang: str | None, input: str | None,
               train: str | None, valid: str | None, test: str | None, out_dir: str | None,
               vocab_dir: str | None, clean: str, normalize_punct: bool, aggressive_dash: bool,
               lowercase: bool, max_len: int, min_len: int, max_ratio: float, dedup: bool,
               bpe_codes: str | None, quiet: bool, workers: int) -> None:
    """Clean and tokenize text, or binarize it with a vocabulary.

    \b
    Text mode (-s/-t and split prefixes, -o DIR): raw PREFIX.LANG files →
      DIR/<split>.LANG clean Moses tokens, DIR/<split>.lines (raw line numbers)
      and DIR/preprocess.json (settings, rule counts, dropped pairs).
    Binarize mode (the same plus --vocab VOCAB_DIR): clean text → DIR/manifest.json,
      <split>.LANG.bin/.idx, <split>.lines and the vocabularies, then a summary.
    Stream mode (-l LANG [INPUT]): one line out per line in, on stdout.
    """
    codes = Path(bpe_codes).read_text(encoding="utf-8") if bpe_codes and Path(bpe_codes).is_file() else None
    if bpe_codes and codes is None:
        raise UserError(f"{bpe_codes}: no such BPE codes file")
    text_args = dict(clean=_clean_rules(clean), normalize_punct=normalize_punct,
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
    splits = {name: Path(p) for name, p in (("train", train), ("valid", valid), ("test", test)) if p}
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


def _not_yet(name: str, issue: str) -> None:
    @main.command(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
                  help=f"Not built yet ({issue}).")
    def _cmd() -> None:
        click.echo(f"nmtkit {name}: not built yet ({issue})", err=True)
        sys.exit(2)


@main.command(epilog="""\b
Examples:
  nmtkit translate -m runs/demo/best.pt < test.en > test.hyp.fr
  echo "In the beginning God created the heaven and the earth." | nmtkit translate -m best.pt
  nmtkit translate -m best.pt test.en -o test.hyp.fr --beam 12 --alpha 1.0""")
@click.option("-m", "--model", "model_path", required=True, type=click.Path(dir_okay=False),
              help="A checkpoint from 'nmtkit train' (nothing else is needed).")
@click.argument("input", default="-")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--beam", type=click.IntRange(1), default=_S.beam, show_default=True, help="Beam width (1: greedy).")
@click.option("--alpha", type=click.FloatRange(0), default=_S.alpha, show_default=True,
              help="Rank finished hypotheses by score / length^alpha (0: the paper's raw score).")
@click.option("--max-ratio", type=click.FloatRange(0), default=_S.max_ratio, show_default=True,
              help="Output limit: this times the source length, plus 10.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True,
              help="Sentences per batch (times --beam rows; on CPUs 32 × 5 keeps each step's tensors small).")
@click.option("--tokenized", is_flag=True, help="Write Moses tokens (BPE undone) instead of detokenized text.")
@click.option("--device", help="cpu, cuda, cuda:1 … [default: cuda when present].")
@user_errors
def translate(model_path: str, input: str, output: str | None, beam: int, alpha: float, max_ratio: float,
              batch_size: int, tokenized: bool, device: str | None) -> None:
    """Translate raw text, one sentence a line, from INPUT (default: stdin) to stdout."""
    from .translate import translate_file
    translate_file(model_path, input, output, SearchConfig(beam=beam, alpha=alpha, max_ratio=max_ratio),
                   batch_size, tokenized, device)


@main.command(epilog="""\b
Examples:
  nmtkit score test.hyp.fr -r test.fr
  nmtkit score test.hyp.fr -r test.fr -r test.ref-ostervald.fr -r test.ref-darby.fr --clean verse-markers""")
@click.argument("hypotheses")
@click.option("-r", "--ref", "refs", multiple=True, required=True, help="Reference file; repeat for several references.")
@click.option("--tokenized", is_flag=True, help="Score tokens as they are (tok:none), as the paper's tokenized BLEU.")
@click.option("--clean", "clean", default="none", show_default=True,
              help=f"Cleaning rules to apply to the references: comma-separated, 'all' or 'none' ({', '.join(RULES)}).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@user_errors
def score(hypotheses: str, refs: tuple[str, ...], tokenized: bool, clean: str, as_json: bool) -> None:
    """BLEU and chrF (sacreBLEU, with signatures) of HYPOTHESES against one or more references."""
    import json
    from .score import corpus_scores, read_parallel
    hyps, streams = read_parallel(hypotheses, list(refs), _clean_rules(clean))
    result = corpus_scores(hyps, streams, tokenized)
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(f"BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  "
                   f"({result['sentences']} sentences, {result['references']} reference(s))")
        click.echo(f"  {result['bleu_detail']}\n  {result['bleu_signature']}\n  {result['chrf_signature']}")


_not_yet("align-plot", "issue 4")



@main.command(epilog="""\b
Examples:
  nmtkit train data-bin --arch rnnsearch --save-dir runs/rnnsearch          # the paper's recipe
  nmtkit train data-bin --preset small --optimizer adam --lr 5e-4 --max-minutes 20 --save-dir runs/demo
  torchrun --nproc_per_node 4 -m nmtkit train data-bin --save-dir runs/x    # several GPUs (DDP)
Running the same command again resumes from SAVE_DIR/last.pt exactly (--reset starts over).""")
@click.argument("data_bin", type=click.Path(file_okay=False))
@click.option("--save-dir", required=True, type=click.Path(file_okay=False), help="Where last.pt, best.pt and metrics.jsonl go.")
@click.option("--arch", type=click.Choice(["rnnsearch", "rnnencdec"]), default=_M.arch, show_default=True)
@click.option("--preset", type=click.Choice(list(MODEL_PRESETS)), default="paper", show_default=True,
              help="Model sizes; --emb/--hidden/--align/--maxout override.")
@click.option("--emb", type=click.IntRange(1), help="Word embedding size m [paper: 620].")
@click.option("--hidden", type=click.IntRange(1), help="Hidden units n [paper: 1000].")
@click.option("--align", type=click.IntRange(1), help="Alignment model units n' [paper: 1000].")
@click.option("--maxout", type=click.IntRange(1), help="Maxout units l [paper: 500].")
@click.option("--readout", type=click.Choice(["prev", "next"]), default=_M.readout, show_default=True,
              help="Deep output from s_{i-1} (the paper's equation) or s_i.")
@click.option("--encoder", type=click.Choice(["paper", "cudnn"]), default=_M.encoder, show_default=True,
              help="The appendix's GRU, or torch's fused GRU (cuDNN; reset gate after U s): faster on GPUs.")
@click.option("--optimizer", type=click.Choice(["adadelta", "adam"]), default=_T.optimizer, show_default=True)
@click.option("--lr", type=float, default=None, help="Learning rate [adadelta: 1.0, adam: 5e-4].")
@click.option("--clip", type=click.FloatRange(0), default=_T.clip, show_default=True, help="Gradient L2 norm limit (0: off).")
@click.option("--batch-size", type=click.IntRange(1), default=_T.batch_size, show_default=True, help="Sentences per minibatch.")
@click.option("--max-tokens", type=click.IntRange(0), default=_T.max_tokens, show_default=True,
              help="Minibatches by target tokens instead (0: off).")
@click.option("--pool", type=click.IntRange(1), default=_T.pool, show_default=True, help="Minibatches per length-sorted pool.")
@click.option("--max-len", type=click.IntRange(0), default=_T.max_len, show_default=True, help="Drop longer pairs (30 or 50 in the paper).")
@click.option("--max-updates", type=click.IntRange(0), default=_T.max_updates, show_default=True)
@click.option("--max-epochs", type=click.IntRange(0), default=_T.max_epochs, show_default=True)
@click.option("--max-minutes", type=click.FloatRange(0), default=_T.max_minutes, show_default=True)
@click.option("--valid-every", type=click.IntRange(1), default=_T.valid_every, show_default=True)
@click.option("--valid-bleu/--no-valid-bleu", default=_T.valid_bleu, show_default=True, help="Greedy dev BLEU at validation.")
@click.option("--patience", type=click.IntRange(0), default=_T.patience, show_default=True, help="Validations without improvement before stopping (0: never).")
@click.option("--log-every", type=click.IntRange(1), default=_T.log_every, show_default=True)
@click.option("--seed", type=int, default=_T.seed, show_default=True)
@click.option("--threads", type=click.IntRange(0), default=_T.threads, show_default=True, help="CPU threads (0: torch's default).")
@click.option("--bf16", is_flag=True, help="bfloat16 autocast: on GPUs, and on CPUs with AVX512-BF16 or AMX (about 2x faster there).")
@click.option("--reset", is_flag=True, help="Ignore SAVE_DIR/last.pt and start over.")
@user_errors
def train(data_bin: str, save_dir: str, arch: str, preset: str, emb: int | None, hidden: int | None,
          align: int | None, maxout: int | None, readout: str, encoder: str, optimizer: str, lr: float | None,
          reset: bool, **train_args: Any) -> None:
    """Train RNNsearch or RNNencdec on a binarized corpus (Appendix B by default)."""
    from .train import train as run
    sizes = {**MODEL_PRESETS[preset], **{k: v for k, v in
                                         (("emb", emb), ("hidden", hidden), ("align", align), ("maxout", maxout)) if v}}
    model_cfg = ModelConfig(arch=arch, readout=readout, encoder=encoder, **sizes)
    cfg = TrainConfig(optimizer=optimizer, lr=lr if lr is not None else (1.0 if optimizer == "adadelta" else 5e-4),
                      **train_args)
    run(Path(data_bin), Path(save_dir), model_cfg, cfg, resume=not reset)
