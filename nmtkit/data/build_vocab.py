"""``nmtkit build-vocab``: the shortlist per language, optionally over BPE units.

Bahdanau et al. (2015, §4.1) keep the 30,000 most frequent words of each
language and map the rest to ``[UNK]``. With ``bpe_merges`` > 0 the words
are first split by BPE codes learned here (subword-nmt), jointly over both
languages or per language, and the shortlist is taken over the subwords.

The corpus is read once: word counts feed both BPE learning (subword-nmt's
dictionary mode) and, segmented word by word, the subword counts, which is
exact because BPE never crosses a word boundary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..core.console import log, progress
from ..core.errors import UserError
from ..core.files import read_lines
from ..core.line_counts import check_line_map, check_parallel_prefix
from ..core.staging import Staging, refuse_shared_directory
from ..text.bpe import Segmenter, learn_codes, learn_sentencepiece
from ..text.preprocess import read_report, text_fingerprint
from ..text.settings import check_languages
from .manifest import VOCAB_META, VocabMeta, write_vocab_meta
from .settings import VocabConfig
from .vocab import SPECIALS, Vocab


def count_tokens(path: Path, advance: Any = None) -> Counter[str]:
    counts: Counter[str] = Counter()
    for i, line in enumerate(read_lines(path), 1):
        counts.update(line.split())
        if advance and i % 10000 == 0:
            advance(10000)
    return counts


def segment_counts(counts: Counter[str], codes: str) -> Counter[str]:
    seg = Segmenter(codes)
    out: Counter[str] = Counter()
    for word, c in counts.items():
        for unit in seg.segment([word]):
            out[unit] += c
    return out


def build_vocab(
    prefix: Path, langs: tuple[str, str], out_dir: Path, cfg: VocabConfig, typed: Collection[str] = ()
) -> VocabMeta:
    """Count ``prefix.<lang>`` (clean tokenized text from ``preprocess``) and write a vocabulary
    directory; ``typed``: the settings the caller gave, refused where idle even at their defaults."""
    check_languages(*langs)
    paths = [Path(f"{prefix}.{lang}") for lang in langs]
    lines = check_parallel_prefix(prefix, langs)  # first: a mistyped --train names its files, not preprocess.json
    check_line_map(prefix, lines)
    settings = read_report(
        prefix.parent, "build-vocab reads text written by 'nmtkit preprocess', which records how it was tokenized"
    )
    unrecorded = [lang for lang in langs if lang not in settings["text"]]
    if unrecorded:  # its text is some other run's, left beside this one's (a KeyError in train, later)
        raise UserError(
            f"{prefix.parent / 'preprocess.json'}: records no {unrecorded[0]} text (it holds "
            f"{', '.join(settings['text'])}): preprocess both languages into it together"
        )
    if cfg.size and cfg.size <= 4:
        raise UserError(f"vocabulary size {cfg.size} leaves no room beside the 4 special symbols")
    if cfg.spm and cfg.bpe_merges:
        raise UserError("choose subword-nmt BPE (--bpe N) or SentencePiece (--spm), not both")
    default = VocabConfig()
    if not cfg.spm and (cfg.spm_size != default.spm_size or "spm_size" in typed):
        raise UserError("--spm-size is the size of a SentencePiece model: add --spm unigram (or bpe)")
    if not (cfg.spm or cfg.bpe_merges) and (cfg.joint_bpe != default.joint_bpe or "joint_bpe" in typed):
        said = "--joint learns one model of subwords for both languages" if cfg.joint_bpe else ""
        said = said or "--separate learns subword codes per language"
        raise UserError(f"{said}: add --bpe N or --spm, or leave it out")
    refuse_shared_directory(out_dir, "the vocabularies", "vocab.json", [(f"--train {prefix}", prefix.parent)])
    with Staging(out_dir, owned=("*.codes", "vocab.*.txt")) as stage:  # a directory that cannot be, said at once
        meta = _build(prefix, langs, paths, lines, cfg, settings, stage)
        stage.commit()
    return meta


def _build(
    prefix: Path,
    langs: tuple[str, str],
    paths: list[Path],
    lines: int,
    cfg: VocabConfig,
    settings: dict[str, Any],
    stage: Staging,
) -> VocabMeta:
    with progress() as bar:
        word_counts = {}
        for lang, path in zip(langs, paths):
            task = bar.add_task(f"count {lang}", total=lines)  # both sides' count, check_parallel's
            word_counts[lang] = count_tokens(path, lambda n, t=task: bar.advance(t, n))
            bar.update(task, completed=bar.tasks[task].total)
    codes: dict[str, str | None] = {lang: None for lang in langs}
    if cfg.spm:
        log(f"learning SentencePiece ({cfg.spm}, {cfg.spm_size:,} pieces)")
        if cfg.joint_bpe:
            joint = learn_sentencepiece((line for p in paths for line in read_lines(p)), cfg.spm_size, cfg.spm)
            codes = {lang: joint for lang in langs}
        else:
            codes = {lang: learn_sentencepiece(read_lines(p), cfg.spm_size, cfg.spm) for lang, p in zip(langs, paths)}
    elif cfg.bpe_merges:
        if cfg.joint_bpe:
            joint = learn_codes(word_counts[langs[0]] + word_counts[langs[1]], cfg.bpe_merges)
            codes = {lang: joint for lang in langs}
        else:
            codes = {lang: learn_codes(word_counts[lang], cfg.bpe_merges, name=lang) for lang in langs}
    unit_counts = {
        lang: segment_counts(c, codes[lang]) if codes[lang] else c  # type: ignore[arg-type]
        for lang, c in word_counts.items()
    }
    meta = VocabMeta(
        langs=list(langs),
        config=cfg.to_dict(),
        text=settings["text"],
        text_sha256=text_fingerprint(settings["text"]),
        bpe_codes={},
        source=str(prefix),
    )
    for lang in langs:
        vocab = Vocab.from_counts(unit_counts[lang], cfg.size, cfg.min_count)
        if len(vocab) == len(SPECIALS):  # a model of such lists could only write <unk>
            most = max(unit_counts[lang].values(), default=0)
            raise UserError(
                f"--min-count {cfg.min_count:,} keeps no {lang} word (the most frequent occurs {most:,} times)"
            )
        _warn_cut_subwords(vocab, unit_counts[lang], cfg, lang, codes[lang] is not None)
        vocab.save(stage.path(f"vocab.{lang}.txt"))
        total = sum(unit_counts[lang].values())
        covered = sum(vocab.counts)
        meta.stats[lang] = {
            "size": len(vocab),
            "types": len(unit_counts[lang]),
            "tokens": total,
            "coverage": covered / total if total else 0.0,
            "sha256": vocab.fingerprint,
        }
        if codes[lang]:
            kind = "spm" if cfg.spm else "bpe"
            name = f"{kind}.codes" if cfg.joint_bpe else f"{kind}.{lang}.codes"
            stage.path(name).write_text(codes[lang] or "", encoding="utf-8")
            meta.bpe_codes[lang] = name
        else:
            meta.bpe_codes[lang] = None
    write_vocab_meta(stage.path(VOCAB_META), meta)
    return meta


def _warn_cut_subwords(vocab: Vocab, counts: Counter[str], cfg: VocabConfig, lang: str, subwords: bool) -> None:
    """Subwords exist so that no unit is out of the vocabulary: a --size below the units the codes
    make defeats them, each one left out becoming <unk> (a word list cut at --size is the paper's)."""
    kept, eligible = len(vocab) - len(SPECIALS), sum(c >= cfg.min_count for c in counts.values())
    if subwords and kept < eligible:
        codes = f"--spm-size {cfg.spm_size:,}" if cfg.spm else f"--bpe {cfg.bpe_merges:,}"
        log(
            f"warning: --size {cfg.size:,} keeps {kept:,} of the {eligible:,} {lang} subword units that {codes} "
            f"makes: the other {eligible - kept:,} become <unk> (a larger --size, or a smaller {codes.split()[0]})"
        )
