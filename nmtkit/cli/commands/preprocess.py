"""``nmtkit preprocess``: raw parallel text to clean tokens, or clean tokens to a binarized corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ...core.command import Command
from ...core.console import console, log
from ...core.errors import UserError
from ...core.wording import counted
from ...data.summary import corpus_summary
from ...text.settings import FilterConfig
from .. import options
from ..config_file import config_options


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
@config_options()
@click.option("--train", "train", help="Training split prefix (filtered).")
@click.option("--valid", "valid", help="Validation split prefix (every line kept).")
@click.option("--test", "test", help="Test split prefix (every line kept).")
@options.dest_dir
@click.option(
    "--vocab",
    "vocab_dir",
    type=options.DirPath(),
    help="Binarize: map clean text to ids with this build-vocab directory (applies its BPE).",
)
@click.option(
    "--align-suffix",
    metavar="SUFFIX",
    help="Binarize: carry each split's word links PREFIX.SUFFIX (Pharaoh over its clean tokens, from "
    "'nmtkit word-align'; train's required) into the corpus, for 'train --guided-alignment-weight'.",
)
@options.text
@options.option(FilterConfig, "max_len")
@options.option(FilterConfig, "min_len")
@options.option(FilterConfig, "max_ratio")
@options.option(FilterConfig, "dedup")
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
    from ...data.binarize import binarize_corpus, over_length
    from ...text.preprocess import preprocess_corpus
    from ...train.config import TrainConfig

    splits = {name: Path(p) for name, p in (("train", train), ("valid", valid), ("test", test)) if p}
    if not splits:
        raise UserError("no split given: use --train/--valid/--test PREFIX")
    if vocab_dir:
        _text_mode_only(click.get_current_context(), values)
        manifest = binarize_corpus(
            splits, (source_lang, target_lang), Path(vocab_dir), Path(out_dir), workers, align_suffix
        )
        console.print(corpus_summary(manifest))
        if said := over_length(Path(out_dir), TrainConfig().max_len):
            log(said)
        return
    if align_suffix:
        raise UserError("--align-suffix goes with --vocab (binarizing); make the links with 'nmtkit word-align'")
    texts = (options.text_config(source_lang, values), options.text_config(target_lang, values))
    filters = FilterConfig(**{k: values[k] for k in ("max_len", "min_len", "max_ratio", "dedup")})
    report = preprocess_corpus(splits, Path(out_dir), texts, filters, workers)
    for name, s in report["splits"].items():
        if name in splits:
            dropped = ", ".join(f"{k} {v:,}" for k, v in s.get("dropped", {}).items())
            log(
                f"{name}: {counted(s['lines'], 'line')} → {counted(s['pairs'], 'pair')}"
                + (f" (dropped: {dropped})" if dropped else "")
            )


def _text_mode_only(ctx: click.Context, values: dict[str, Any]) -> None:
    """Refuse, in binarize mode, the cleaning and filtering options typed (they did nothing: the
    clean text is mapped as it is); warn of those a --config file gives, which may serve both modes."""
    source = ctx.get_parameter_source
    named = [p for p in ctx.command.params if p.name in values and p.name != "dump_config"]
    typed = [_spelled(p, values[p.name]) for p in named if source(p.name) is click.core.ParameterSource.COMMANDLINE]
    if typed:
        raise UserError(
            f"{', '.join(typed)}: text mode's (cleaning raw text); binarizing (--vocab) maps the clean text "
            f"as it is: give them to the run that cleans it"
        )
    filed = [_spelled(p, values[p.name]) for p in named if source(p.name) is click.core.ParameterSource.DEFAULT_MAP]
    if filed:
        log(f"warning: {', '.join(filed)} (--config): text mode's, not used when binarizing (--vocab)")


def _spelled(param: click.Parameter, value: Any) -> str:
    """The option as given: a switch's off spelling (--no-dedup) for False."""
    secondary = getattr(param, "secondary_opts", None)
    return secondary[-1] if secondary and value is False else param.opts[-1]
