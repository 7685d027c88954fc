"""``nmtkit build-vocab``: the vocabularies (and subword codes) of clean training text."""

from __future__ import annotations

from pathlib import Path

import click

from ...core.command import Command
from ...core.console import log
from ...data.settings import VocabConfig
from ...text.settings import SPM_KINDS
from .. import options
from ..config_file import config_options

_V = VocabConfig()


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
@config_options()
@click.option("--train", "train", required=True, help="Prefix of clean tokenized text from 'preprocess'.")
@options.dest_dir
@options.option(VocabConfig, "size")
@options.option(VocabConfig, "min_count")
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
@options.option(VocabConfig, "spm_size")
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
    """Count the training text and write the vocabularies (and BPE codes).

    Writes DIR/vocab.SRC.txt and DIR/vocab.TGT.txt ('token count' lines, <pad> <unk> <s> </s>
    first), DIR/bpe.codes with --bpe, and DIR/vocab.json.
    """
    from ...data.build_vocab import build_vocab as build

    meta = build(
        Path(train),
        (source_lang, target_lang),
        Path(out_dir),
        VocabConfig(
            size=size, min_count=min_count, bpe_merges=bpe_merges, joint_bpe=joint_bpe, spm=spm or "", spm_size=spm_size
        ),
        [name for name in ("spm_size", "joint_bpe") if options.typed(name)],
    )
    for lang, s in meta.stats.items():
        log(
            f"{lang}: {s['size']:,} entries of {s['types']:,} types, "
            f"covering {100 * s['coverage']:.2f}% of {s['tokens']:,} training tokens"
        )
