"""A binarized corpus with its sides swapped: the data of the model of the other direction.

The token files are a language's each (``<split>.<lang>.bin``), so they serve both directions as
they are (hard-linked where the file system allows, else copied); the manifest's source and
target are swapped; word links (``<split>.links``) are transposed, each ``s t`` pair becoming
``t s``, with the same offsets. A split's clean texts of both sides (``<split>.<lang>.ref``) swap
roles: the old source's becomes the reference dev BLEU is counted against (corpora binarized
before nmtkit kept the source's have none, and dev BLEU falls back to ids). The new directory
appears whole or not at all (:class:`~nmtkit.core.files.Staging`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import numpy as np

from ..core.console import log
from ..core.errors import UserError
from ..core.staging import Staging
from .binarized import Corpus
from .manifest import MANIFEST, read_manifest, write_manifest

REVERSED = "reversed"  # the manifest's settings: made by reverse, which may replace it


def _place(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copyfile(source, target)


def reverse_corpus(corpus_dir: str | Path, out_dir: str | Path) -> Corpus:
    """``corpus_dir``'s corpus with source and target swapped, written to ``out_dir``."""
    corpus, out = Corpus(corpus_dir), Path(out_dir)
    if out.resolve().is_relative_to(corpus.path.resolve()):  # a corpus inside the corpus it reverses
        raise UserError(f"{out}: inside {corpus.path}; the reversed corpus needs a directory of its own")
    again = out.exists() and any(out.iterdir())
    if again and not _reversed_before(out, corpus):
        raise UserError(f"{out}: not empty; the reversed corpus needs a directory of its own")
    corpus.check()  # a file missing or cut is said before anything is written, and not passed on
    with Staging(out, owned=("*",) if again else ()) as stage:
        _write_reversed(corpus, stage.dir)
        stage.commit()
    if again:
        log(f"{out}: the reversed corpus written before is replaced")
    return Corpus(out)


def _reversed_before(out: Path, corpus: Corpus) -> bool:
    """Whether ``out`` holds a corpus that reverse wrote of ``corpus``'s languages the other way,
    and nothing else: a run before this one (a Makefile's again, its corpus made anew), which it
    replaces. A corpus binarized that way round is a user's own, and is not."""
    if not (out / MANIFEST).is_file():
        return False
    try:
        earlier = read_manifest(out)
    except UserError:  # FormatError too: not a corpus this replaces
        return False
    if not earlier.settings.get(REVERSED) or (earlier.src_lang, earlier.tgt_lang) != (corpus.tgt_lang, corpus.src_lang):
        return False
    prefixes = {f"{name}." for name in earlier.splits} | {"vocab.", MANIFEST}
    codes = {c for c in earlier.bpe_codes.values() if c}
    return all(p.name in codes or p.name.startswith(tuple(prefixes)) for p in out.iterdir())


def _write_reversed(corpus: Corpus, out: Path) -> None:
    manifest = corpus.manifest
    for entry in manifest.vocab.values():
        _place(corpus.path / entry.file, out / entry.file)
    for codes in {c for c in manifest.bpe_codes.values() if c}:
        _place(corpus.path / codes, out / codes)
    splits = {}
    for name, stats in manifest.splits.items():
        for lang in manifest.langs.values():
            for suffix in ("bin", "idx"):
                _place(corpus.path / f"{name}.{lang}.{suffix}", out / f"{name}.{lang}.{suffix}")
        if (corpus.path / f"{name}.lines").exists():
            _place(corpus.path / f"{name}.lines", out / f"{name}.lines")
        if stats.links:
            pairs = np.fromfile(corpus.path / f"{stats.links}.bin", dtype=np.uint16).reshape(-1, 2)
            pairs[:, ::-1].tofile(out / f"{stats.links}.bin")  # each s t as t s, offsets alike
            _place(corpus.path / f"{stats.links}.idx", out / f"{stats.links}.idx")
        for ref in (stats.reference, stats.source_reference):
            if ref:
                _place(corpus.path / ref, out / ref)
        splits[name] = dataclasses.replace(stats, reference=stats.source_reference, source_reference=stats.reference)
    langs = {"src": manifest.tgt_lang, "tgt": manifest.src_lang}
    settings = {**manifest.settings, REVERSED: True}
    write_manifest(out / MANIFEST, dataclasses.replace(manifest, langs=langs, splits=splits, settings=settings))
