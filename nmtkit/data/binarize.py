"""``nmtkit preprocess --vocab``: clean tokenized text + vocabulary → binarized corpus.

Reads the splits written by text-mode preprocessing, applies the
vocabulary's BPE codes, maps tokens to ids and streams them into the format
of :mod:`nmtkit.data.binarized`, with the manifest that later commands check:
vocabulary fingerprints, the fingerprint of the text settings (which must
equal the ones the vocabulary was counted on), token and unknown-word counts
per split. Adding splits to an existing corpus directory is allowed only
with the same vocabularies; with others, a run that gives every split the
directory holds replaces the corpus whole (a Makefile's rebuild).
"""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..align.links import read_pharaoh, unit_links, word_ids
from ..core.console import log, progress
from ..core.errors import UserError
from ..core.files import fingerprint, read_lines
from ..core.line_counts import check_line_map, check_parallel_prefix, count_lines
from ..core.parallel import Workers, chunked, needed
from ..core.staging import Staging, refuse_shared_directory
from ..core.wording import counted
from ..text.bpe import Segmenter
from ..text.preprocess import read_report, text_fingerprint
from .binarized import Corpus, TokenArrayWriter, best_dtype, too_long
from .manifest import MANIFEST, Manifest, SplitStats, VocabEntry, write_manifest
from .vocab import UNK, Vocab, VocabDir

CHUNK = 5000
LINK_DTYPE = np.dtype(np.uint16)  # unit positions of the word links (SPLIT.links.bin)

_sides: list[tuple[Vocab, Segmenter | None]] = []


def _init(vocab_tokens: list[list[str]], codes: list[str | None]) -> None:
    _sides[:] = [(Vocab(t), Segmenter(c) if c else None) for t, c in zip(vocab_tokens, codes)]


def _ids_chunk(rows: list[tuple[Any, ...]]) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Rows of ``(source, target)`` or ``(source, target, links, where)`` → per side (and for the
    links, as one more side: unit links flattened, 2 × their number): concatenated ids, lengths,
    number of ``<unk>``."""
    out, units = [], []
    for side, (vocab, seg) in enumerate(_sides):
        ids: list[int] = []
        lengths = []
        pieces = []
        for row in rows:
            tokens = row[side].split()
            sent = seg.segment(tokens) if seg is not None else tokens
            pieces.append((tokens, sent))
            ids.extend(vocab.encode(sent))
            lengths.append(len(sent))
        arr = np.asarray(ids, dtype=np.int64)
        out.append((arr, np.asarray(lengths, dtype=np.int64), int((arr == UNK).sum())))
        units.append(pieces)
    if rows and len(rows[0]) > 2:
        flat = [_unit_links(row[2], row[3], src, tgt) for row, src, tgt in zip(rows, *units)]
        out.append(
            (
                np.concatenate(flat) if flat else np.zeros(0, np.int64),
                np.asarray([len(f) for f in flat], dtype=np.int64),
                0,
            )
        )
    return out


def _unit_links(
    line: str, where: str, src: tuple[list[str], list[str]], tgt: tuple[list[str], list[str]]
) -> np.ndarray:
    """One pair's word links (Pharaoh over its tokens) over its subword units."""
    words = []
    for side, (tokens, pieces) in enumerate((src, tgt)):
        seg = _sides[side][1]
        ids = word_ids(pieces, seg.sentencepiece) if seg is not None else np.arange(len(tokens))
        if seg is not None and len(ids) and int(ids[-1]) + 1 != len(tokens):  # a token ending like a piece
            ids = np.repeat(np.arange(len(tokens)), [len(seg.segment([t])) for t in tokens])
        words.append(ids)
    return unit_links(read_pharaoh(line, where), words[0], words[1], where)


def binarize_corpus(
    splits: dict[str, Path],
    langs: tuple[str, str],
    vocab_dir: Path,
    out_dir: Path,
    workers: int = 1,
    align_suffix: str | None = None,
) -> Manifest:
    """The corpus of ``splits`` (prefixes of clean text) with the vocabularies of ``vocab_dir``;
    with ``align_suffix``, each split's word links PREFIX.SUFFIX (train's required, the others'
    where they exist) mapped onto subword units."""
    inputs = [(f"--vocab {vocab_dir}", Path(vocab_dir)), *((f"--{n} {p}", Path(p).parent) for n, p in splits.items())]
    refuse_shared_directory(out_dir, "the corpus", MANIFEST, inputs)
    vdir = VocabDir(vocab_dir)
    vdir.require(langs)
    vocabs = [vdir.vocabs[lang] for lang in langs]
    codes = [vdir.codes(lang) for lang in langs]
    fingerprints = {lang: v.fingerprint for lang, v in zip(langs, vocabs)}
    manifest, stale = _start_manifest(out_dir, langs, vdir, fingerprints, set(splits))
    counts = {name: check_parallel_prefix(p, langs) for name, p in splits.items()}  # first: names a file missing
    text_reports = {name: _check_text(prefix, vdir) for name, prefix in splits.items()}
    links = _link_files(splits, align_suffix, counts)
    if stale:  # said once the inputs are checked: a refusal after it left a line that said it was done
        log(f"{out_dir}: binarized with another vocabulary or other settings: replaced by this one (every split given)")
    dtype = np.dtype(manifest.dtype)
    with (
        Staging(out_dir, owned=stale) as stage,
        Workers(needed(workers, max(counts.values()), CHUNK), _init, ([v.tokens for v in vocabs], codes)) as pool,
        progress() as bar,
    ):
        for lang, vocab in zip(langs, vocabs):
            vocab.save(stage.path(f"vocab.{lang}.txt"))
            if codes_name := vdir.codes_files.get(lang):
                shutil.copyfile(vocab_dir / codes_name, stage.path(codes_name))
        for name, prefix in splits.items():
            task = bar.add_task(f"binarize {name}", total=counts[name])
            stats = _binarize_split(
                name, prefix, langs, stage, dtype, pool, lambda n, t=task: bar.advance(t, n), links.get(name)
            )
            manifest.splits[name] = SplitStats(**stats, **_carry(text_reports[name]))
        write_manifest(stage.path(MANIFEST), manifest)
        stage.commit()
    return manifest


def _start_manifest(
    out_dir: Path, langs: tuple[str, str], vdir: VocabDir, fingerprints: dict[str, str], given: set[str]
) -> tuple[Manifest, tuple[str, ...]]:
    """A new corpus's manifest; for a directory that holds a corpus already, its manifest with
    its splits, once the vocabularies and settings are checked to be the same. With others, a
    corpus whose every split is ``given`` is replaced: the patterns of its files, which the new
    one must not carry over."""
    vocab_entries = {
        lang: VocabEntry(f"vocab.{lang}.txt", len(vdir.vocabs[lang]), fingerprints[lang]) for lang in langs
    }
    dtype = best_dtype(max(len(vdir.vocabs[lang]) for lang in langs))
    settings = {
        "text": vdir.meta.text,
        "vocab": vdir.meta.config,
        "bpe_codes": {lang: fingerprint(vdir.codes(lang)) if vdir.codes(lang) else None for lang in langs},
    }
    fresh = Manifest(
        langs={"src": langs[0], "tgt": langs[1]},
        dtype=dtype.name,
        vocab=vocab_entries,
        settings=settings,
        settings_sha256=fingerprint(settings),
        bpe_codes=vdir.codes_files,
    )
    if not (out_dir / MANIFEST).exists():
        return fresh, ()
    old = Corpus(out_dir)
    if (old.src_lang, old.tgt_lang) != langs:
        raise UserError(f"{out_dir} is a {old.src_lang}→{old.tgt_lang} corpus, not {langs[0]}→{langs[1]}")
    same = {lang: old.manifest.vocab[lang].sha256 for lang in langs if lang in old.manifest.vocab} == fingerprints
    if same and old.manifest.settings_sha256 == fresh.settings_sha256:
        fresh.splits = old.manifest.splits
        return fresh, ()
    if left := [name for name in old.splits if name not in given]:
        flags = ", ".join(f"--{name}" if name in ("train", "valid", "test") else name for name in left)
        raise UserError(
            f"{out_dir} was binarized with another vocabulary or other text settings than {vdir.path}, and holds "
            f"splits this run does not give ({flags}): give them too, to replace the whole corpus, or give -d "
            "another directory"
        )
    owned = [f"{name}.*" for name in old.splits] + ["vocab.*.txt", *old.manifest.bpe_codes.values()]
    return fresh, tuple(name for name in owned if name)


def _check_text(prefix: Path, vdir: VocabDir) -> dict[str, Any]:
    """The preprocess report of a split, after checking it was made as the vocabulary's text was."""
    settings = read_report(prefix.parent, "binarize text written by 'nmtkit preprocess'")
    if text_fingerprint(settings["text"]) != vdir.text_sha256:
        diff = _differences(settings["text"], vdir.meta.text)
        raise UserError(
            f"{prefix}: preprocessed with other settings than the vocabulary in {vdir.path} was built from ({diff})"
        )
    split: dict[str, Any] = settings["splits"].get(prefix.name, {})
    return split


def _differences(a: dict[str, Any], b: dict[str, Any]) -> str:
    out = []
    for lang in sorted(set(a) | set(b)):
        for key in sorted(set(a.get(lang, {})) | set(b.get(lang, {}))):
            va, vb = a.get(lang, {}).get(key), b.get(lang, {}).get(key)
            if va != vb:
                out.append(f"{lang} {key}: {va} vs {vb}")
    return "; ".join(out) or "languages differ"


def _carry(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in ("source", "lines", "rules", "dropped", "kept_empty") if k in report}


def _link_files(splits: dict[str, Path], suffix: str | None, counts: dict[str, int]) -> dict[str, Path]:
    """Each split's links file (PREFIX.SUFFIX), checked to have a line per pair."""
    if not suffix:
        return {}
    found = {name: Path(f"{prefix}.{suffix}") for name, prefix in splits.items()}
    found = {name: path for name, path in found.items() if path.exists() or name == "train"}
    for name, path in found.items():
        if not path.exists():
            raise UserError(f"{path}: no such file (--align-suffix {suffix}: make it with 'nmtkit word-align')")
        if (have := count_lines(path)) != counts[name]:
            raise UserError(f"{path}: has {counted(have, 'line')} but the {name} split {counted(counts[name], 'pair')}")
    return found


def _binarize_split(
    name: str,
    prefix: Path,
    langs: tuple[str, str],
    stage: Staging,
    dtype: np.dtype,
    pool: Workers,
    advance: Any,
    links: Path | None = None,
) -> dict[str, Any]:
    inputs: list[Any] = [read_lines(f"{prefix}.{lang}") for lang in langs]
    tokens, unks = Counter[str](), Counter[str]()
    names = [f"{name}.{lang}" for lang in langs]
    if links is not None:
        inputs += [read_lines(links, allow_empty=True), (f"{links}, line {k}" for k in itertools.count(1))]
        names.append(f"{name}.links")
    files = [(open(stage.path(f"{n}.bin"), "wb"), open(stage.path(f"{n}.idx"), "wb")) for n in names]
    try:
        writers = [TokenArrayWriter(b, i, dtype if k < 2 else LINK_DTYPE) for k, (b, i) in enumerate(files)]
        for sides in pool.map(_ids_chunk, chunked(zip(*inputs), CHUNK)):
            for lang, writer, (ids, lengths, n_unk) in zip(langs, writers, sides):
                writer.add(ids, lengths)
                tokens[lang] += len(ids)
                unks[lang] += n_unk
            if links is not None:
                if len(sides[2][0]) and sides[2][0].max() > np.iinfo(LINK_DTYPE).max:
                    raise UserError(f"{links}: a sentence of over {np.iinfo(LINK_DTYPE).max:,} units")
                writers[2].add(*sides[2][:2])
            advance(len(sides[0][1]))
    finally:
        for b, i in files:
            b.close()
            i.close()
    n = writers[0].sentences
    _write_lines(prefix, stage.path(f"{name}.lines"), n)
    stats = {
        "sentences": n,
        "tokens": dict(tokens),
        "unk": dict(unks),
        "oov_rate": {lang: unks[lang] / tokens[lang] if tokens[lang] else 0.0 for lang in langs},
    }
    if links is not None:
        stats |= {"links": f"{name}.links", "link_count": writers[2].offset // 2}
    if name != "train":
        # the clean target text, rare words and all: what dev BLEU must be counted against
        # (references rebuilt from ids would hold <unk> where the text has a rare word); the
        # source's too, which becomes the reference of the corpus reversed (nmtkit reverse)
        for lang, field in zip(langs, ("source_reference", "reference"), strict=True):
            # as read, not copied: a BOM or CRLF would reach sacreBLEU run on the file itself
            with open(stage.path(f"{name}.{lang}.ref"), "w", encoding="utf-8") as ref:
                ref.writelines(line + "\n" for line in read_lines(f"{prefix}.{lang}", allow_empty=True))
            stats[field] = f"{name}.{lang}.ref"
    return stats


def _write_lines(prefix: Path, dest: Path, n: int) -> None:
    """Raw line numbers: those preprocess recorded, or 1..n for text it did not filter."""
    src = Path(f"{prefix}.lines")
    if src.exists():
        check_line_map(prefix, n)
        shutil.copyfile(src, dest)
    else:
        np.savetxt(dest, np.arange(1, n + 1), fmt="%d")


def over_length(data_dir: Path, max_len: int) -> str | None:
    """What training at ``max_len`` (train's --max-len) would leave out of the train split, said
    when the corpus is made: preprocess's --max-len counts words, training counts subword units."""
    corpus = Corpus(data_dir)
    if "train" not in corpus.splits:
        return None
    src, tgt = corpus.split("train")
    n = too_long(src.sizes, tgt.sizes, max_len)
    if not n:
        return None
    unit = "subword units" if any(corpus.manifest.bpe_codes.values()) else "tokens"
    return (
        f"train: {n:,} of {len(src.sizes):,} pairs have more than {max_len} {unit} on a side, which train's "
        f"--max-len {max_len} leaves out (--max-len 0 keeps them)"
    )
