"""``nmtkit preprocess``, ``tokenize`` and ``build-vocab``: raw text to clean tokens, a
vocabulary, and a binarized corpus."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..core.command import Command
from ..core.console import console, log
from ..core.errors import UserError
from ..data.settings import VocabConfig
from ..text.settings import SPM_KINDS, FilterConfig
from . import options
from .config_file import config_options

_F = FilterConfig()
_V = VocabConfig()


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  # raw parallel text -> clean Moses tokens (train is filtered, valid/test keep every line)
  nmtkit preprocess -s en -t fr --train raw/train --valid raw/valid --test raw/test -d clean/
  # clean tokens + vocabulary -> binarized corpus
  nmtkit preprocess -s en -t fr --train clean/train --valid clean/valid --test clean/test \\
      --vocab vocab/ -d data-bin/""",
)
@click.option("-s", "--source-lang", required=True, help="Source language code (files are PREFIX.LANG).")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@config_options
@click.option("--train", "train", help="Training split prefix (filtered).")
@click.option("--valid", "valid", help="Validation split prefix (every line kept).")
@click.option("--test", "test", help="Test split prefix (every line kept).")
@options.dest_dir
@click.option(
    "--vocab",
    "vocab_dir",
    type=click.Path(file_okay=False),
    help="Binarize: map clean text to ids with this build-vocab directory (applies its BPE).",
)
@click.option(
    "--align-suffix",
    metavar="SUFFIX",
    help="Binarize: carry each split's word links PREFIX.SUFFIX (Pharaoh over its clean tokens, from "
    "'nmtkit word-align'; train's required) into the corpus, for 'train --guided-alignment-weight'.",
)
@options.text
@options.setting(
    "--max-len", _F, click.IntRange(0), "Drop training pairs with a side longer than this many tokens (0: no limit)."
)
@options.setting("--min-len", _F, click.IntRange(0), "Drop training pairs with a side shorter than this.")
@options.setting(
    "--max-ratio",
    _F,
    click.FloatRange(0),
    "Drop training pairs whose longer side exceeds this times the shorter (0: off).",
)
@options.setting("--dedup/--no-dedup", _F, None, "Drop repeated training pairs.")
@options.workers
@options.verbosity
def preprocess(
    source_lang: str,
    target_lang: str,
    train: str | None,
    valid: str | None,
    test: str | None,
    out_dir: str,
    vocab_dir: str | None,
    align_suffix: str | None,
    workers: int,
    **values: Any,
) -> None:
    """Clean and tokenize parallel text, or binarize it with a vocabulary.

    \b
    Text mode (split prefixes, -d DIR): raw PREFIX.LANG files → DIR/<split>.LANG
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
        from ..data.binarize import binarize_corpus  # here: numpy and the subword code load to
        from ..data.summary import corpus_summary  # binarize, not for --help

        manifest = binarize_corpus(
            splits, (source_lang, target_lang), Path(vocab_dir), Path(out_dir), workers, align_suffix
        )
        console.print(corpus_summary(manifest))
        return
    if align_suffix:
        raise UserError("--align-suffix goes with --vocab (binarizing); make the links with 'nmtkit word-align'")
    texts = (options.text_config(source_lang, values), options.text_config(target_lang, values))
    filters = FilterConfig(**{k: values[k] for k in ("max_len", "min_len", "max_ratio", "dedup")})
    from ..text.preprocess import preprocess_corpus  # here: Moses's tokenizer loads to preprocess only

    report = preprocess_corpus(splits, Path(out_dir), texts, filters, workers)
    for name, s in report["splits"].items():
        if name in splits:
            dropped = ", ".join(f"{k} {v:,}" for k, v in s.get("dropped", {}).items())
            log(f"{name}: {s['lines']:,} lines → {s['pairs']:,} pairs" + (f" (dropped: {dropped})" if dropped else ""))


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  echo "Don't panic." | nmtkit tokenize -l en
  nmtkit tokenize -l fr news.fr --bpe-codes vocab/bpe.codes > news.tok.fr""",
)
@click.option("-l", "--lang", required=True, help="Language code of the text.")
@click.argument("input", default="-")
@config_options
@click.option("--bpe-codes", type=click.Path(dir_okay=False), help="Apply these BPE codes too.")
@options.text
@options.workers
@options.verbosity
def tokenize(lang: str, input: str, bpe_codes: str | None, workers: int, **values: Any) -> None:
    """Clean and tokenize one language's text, INPUT (default: stdin) to stdout, one line out
    per line in: what preprocess does to each side, as a filter."""
    from ..text.preprocess import preprocess_stream  # here: as in preprocess

    codes = None
    if bpe_codes:
        if not Path(bpe_codes).is_file():
            raise UserError(f"{bpe_codes}: no such BPE codes file")
        codes = Path(bpe_codes).read_text(encoding="utf-8")
    fired = preprocess_stream(options.text_config(lang, values), input, sys.stdout, codes, workers)
    if fired:
        log("cleaning rules fired: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fired.items())))


@click.command(
    "build-vocab",
    cls=Command,
    epilog="""\b
Examples:
  nmtkit build-vocab -s en -t fr --train clean/train -d vocab/            # 30,000 words each
  nmtkit build-vocab -s en -t fr --train clean/train -d vocab/ --bpe 16000 --joint
  nmtkit build-vocab -s en -t fr --train clean/train -d vocab/ --spm unigram --spm-size 16000""",
)
@click.option("-s", "--source-lang", required=True, help="Source language code.")
@click.option("-t", "--target-lang", required=True, help="Target language code.")
@config_options
@click.option("--train", "train", required=True, help="Prefix of clean tokenized text from 'preprocess'.")
@options.dest_dir
@options.setting(
    "--size", _V, click.IntRange(0), "Shortlist size per language, special symbols included (0: every token)."
)
@options.setting("--min-count", _V, click.IntRange(1), "Leave out tokens seen fewer times.")
@click.option(
    "--bpe",
    "bpe_merges",
    type=click.IntRange(0),
    default=_V.bpe_merges,
    show_default=True,
    help="Learn this many BPE merges first (subword-nmt); 0: whole words, as the paper.",
)
@click.option(
    "--spm",
    type=click.Choice(SPM_KINDS),
    help="SentencePiece subwords instead (unigram or BPE model), learned on the Moses tokens.",
)
@options.setting("--spm-size", _V, click.IntRange(8), "With --spm: pieces per SentencePiece model.")
@click.option(
    "--joint/--separate",
    "joint_bpe",
    default=_V.joint_bpe,
    show_default=True,
    help="One set of subword codes for both languages, or one per language.",
)
@options.verbosity
def build_vocab(
    source_lang: str,
    target_lang: str,
    train: str,
    out_dir: str,
    size: int,
    min_count: int,
    bpe_merges: int,
    spm: str | None,
    spm_size: int,
    joint_bpe: bool,
) -> None:
    """Count the training text and write the shortlist vocabularies (and BPE codes).

    Writes DIR/vocab.SRC.txt and DIR/vocab.TGT.txt ('token count' lines, <pad> <unk> <s> </s>
    first), DIR/bpe.codes with --bpe, and DIR/vocab.json.
    """
    from ..data.build_vocab import build_vocab as build  # here: as in preprocess

    meta = build(
        Path(train),
        (source_lang, target_lang),
        Path(out_dir),
        VocabConfig(
            size=size, min_count=min_count, bpe_merges=bpe_merges, joint_bpe=joint_bpe, spm=spm or "", spm_size=spm_size
        ),
    )
    for lang, s in meta.stats.items():
        log(
            f"{lang}: {s['size']:,} entries of {s['types']:,} types, "
            f"covering {100 * s['coverage']:.2f}% of {s['tokens']:,} training tokens"
        )


COMMANDS = (preprocess, tokenize, build_vocab)
