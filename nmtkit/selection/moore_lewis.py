"""Bilingual modified Moore–Lewis selection (Axelrod, He & Gao 2011), streaming over any corpus size.

Each general-domain pair (s, t) is scored by the sum, over its two sides, of
the in-domain minus the general-domain cross-entropy per token,

    [H_in-src(s) − H_gen-src(s)] + [H_in-tgt(t) − H_gen-tgt(t)],

lower is more in-domain; the best pairs are kept up to a number of target
words. The in-domain LMs learn from the in-domain text, the general ones
from a random sample of the general corpus with as many pairs, both over
the in-domain vocabulary (Moore & Lewis 2010), so the scores compare.

Memory depends on the in-domain size, never on the corpus: the sample is a
reservoir, scores go to disk (8 bytes a pair), the cut is found from a
fixed-size histogram, and the corpus is read three times (sample, score,
write) in chunks that worker processes score in parallel.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from ..core.console import log, progress
from ..core.errors import UserError
from ..core.files import BOM, decode_line, open_binary, refuse_overwriting
from ..core.line_counts import refuse_streams
from ..core.parallel import Workers
from ..core.staging import Staging, refuse_shared_directory
from ..text.settings import check_languages
from .ngram import SPECIALS, NgramLM, SelectionVocab, words_of
from .settings import COUNT_UNITS, SelectConfig

BINS = 1 << 16


@dataclass(frozen=True)
class Corpus:
    """One parallel corpus: ``prefix.src`` and ``prefix.tgt`` (plain text)."""

    src: Path
    tgt: Path

    @classmethod
    def of(cls, prefix: str | Path, langs: tuple[str, str]) -> Corpus:
        return cls(Path(f"{prefix}.{langs[0]}"), Path(f"{prefix}.{langs[1]}"))


def read_pairs(corpus: Corpus, chunk_lines: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """Chunks of raw line pairs, each ended by a newline and a file's mark of UTF-8 dropped (the
    corpora's lines are joined into one text: a last line without one ran into the next file's
    first); a corpus whose sides differ in length is an error."""
    with open_binary(corpus.src) as fs, open_binary(corpus.tgt) as ft:
        n = 0
        while True:
            src = list(islice(fs, chunk_lines))
            tgt = [ft.readline() for _ in src]
            if tgt and not tgt[-1]:
                missing = tgt.index(b"")
                raise UserError(
                    f"parallel files differ in length: {corpus.tgt} ends at line {n + missing}, {corpus.src} goes on"
                )
            if not src:
                if ft.readline():
                    raise UserError(
                        f"parallel files differ in length: {corpus.src} ends at line {n}, {corpus.tgt} goes on"
                    )
                return
            for side in (src, tgt):
                side[0] = side[0].removeprefix(BOM.encode()) if n == 0 else side[0]
                side[-1] = side[-1] if side[-1].endswith(b"\n") else side[-1] + b"\n"
            n += len(src)
            yield src, tgt


def _text(lines: list[bytes], path: Path, first: int) -> str:
    """The lines as one string without the last newline; bad UTF-8 names its line."""
    try:
        text = b"".join(lines).decode("utf-8").removesuffix("\n")
        return text.removeprefix(BOM) if first == 1 else text  # the encoding's mark, as decode_line drops it
    except UnicodeDecodeError:
        for i, raw in enumerate(lines):
            decode_line(raw, path, first + i)  # raises, naming the line
        raise


# ---- the models -----------------------------------------------------------------------


def _reservoir(
    corpora: list[Corpus], k: int, seed: int, chunk_lines: int
) -> tuple[list[bytes], list[bytes], int, list[bool], int]:
    """A uniform sample of k pairs from all corpora in one pass (Algorithm R), the pair count,
    whether each side holds a line that is not empty, and the chunks the corpora are read in."""
    rng = random.Random(seed)
    src: list[bytes] = []
    tgt: list[bytes] = []
    seen = chunks = 0
    words = [False, False]
    with progress("pairs") as bar:
        task = bar.add_task("sample", total=None)
        for corpus in corpora:
            for s_chunk, t_chunk in read_pairs(corpus, chunk_lines):
                for s, t in zip(s_chunk, t_chunk):
                    if not words[0] and s.strip():
                        words[0] = True
                    if not words[1] and t.strip():
                        words[1] = True
                    if seen < k:
                        src.append(s)
                        tgt.append(t)
                    else:
                        j = rng.randrange(seen + 1)
                        if j < k:
                            src[j], tgt[j] = s, t
                    seen += 1
                chunks += 1
                bar.advance(task, len(s_chunk))
    return src, tgt, seen, words, chunks


def _refuse_blank(
    sides: Sequence[list[bytes]], which: str, corpora: list[Corpus], whole: Sequence[bool] = (False, False)
) -> None:
    """One line where a side's lines are all empty: a language model of nothing scores every pair
    alike. ``sides``: a sample of the corpus where ``whole`` says which sides hold words elsewhere."""
    for side, name, elsewhere in zip(sides, ("source", "target"), whole):
        if not any(line.strip() for line in side):
            said = f"a sample of {len(side):,} of its pairs holds" if elsewhere else "holds"
            more = ": give more in-domain text, which sets the sample's size" if elsewhere else ""
            raise UserError(f"the {which} corpus's {name} side: {said} only empty lines ({_named(corpora)}){more}")


def _named(corpora: list[Corpus]) -> str:
    return ", ".join(f"{c.src} and {c.tgt}" for c in corpora)


def build_models(
    in_domain: list[Corpus], general: list[Corpus], lm_dir: Path, cfg: SelectConfig
) -> tuple[dict[str, Any], int]:
    """Estimate the four LMs into ``lm_dir`` (src/tgt × in/gen) with their vocabularies: the
    report's figures, and the chunks the general corpora are read in."""
    sides: list[list[bytes]] = [[], []]
    extents = []  # each corpus's lines among them: a bad line is named in its own file
    for corpus in in_domain:
        start = len(sides[0])
        for s, t in read_pairs(corpus, cfg.chunk_lines):
            sides[0].extend(s)
            sides[1].extend(t)
        extents.append((corpus, start, len(sides[0])))
    if not sides[0]:
        raise UserError(f"the in-domain corpus is empty ({_named(in_domain)})")
    _refuse_blank(sides, "in-domain", in_domain)
    sample = _reservoir(general, len(sides[0]), cfg.seed, cfg.chunk_lines)
    if not sample[2]:
        raise UserError(f"the general-domain corpus is empty ({_named(general)})")
    _refuse_blank(sample[:2], "general-domain", general, sample[3])
    info: dict[str, Any] = {
        "in_domain_pairs": len(sides[0]),
        "general_pairs": sample[2],
        "sample_pairs": len(sample[0]),
    }
    for side, name in ((0, "src"), (1, "tgt")):
        in_text = "\n".join(_text(sides[side][a:b], (c.src, c.tgt)[side], 1) for c, a, b in extents if b > a)
        vocab = SelectionVocab.from_counts(Counter(w for line in words_of(in_text) for w in line))
        if len(vocab) == len(SPECIALS):  # every word <unk>: the models would rank the pairs by length alone
            raise UserError(
                f"no word of the in-domain {name} text ({_named(in_domain)}) occurs twice: its language model "
                "would know none, and rank by length alone; give more in-domain text"
            )
        # The scoring pass names any bad line; the sample only needs text.
        gen_text = b"".join(sample[0] if side == 0 else sample[1]).decode("utf-8", errors="replace").removesuffix("\n")
        d = lm_dir / name
        d.mkdir(parents=True, exist_ok=True)
        vocab.save(d / "vocab.txt")
        for domain, text in (("in", in_text), ("gen", gen_text)):
            lm = NgramLM.estimate([vocab.encode(text)[0]], len(vocab), cfg.order)
            lm.save(d / domain)
        info[f"{name}_vocab"] = len(vocab)
    return info, sample[4]


# ---- scoring (in worker processes) ----------------------------------------------------

_MODELS: dict[str, Any] = {}


def _load_models(lm_dir: str, moses_lang: str | None) -> None:
    for name in ("src", "tgt"):
        d = Path(lm_dir) / name
        _MODELS[name] = (SelectionVocab.load(d / "vocab.txt"), NgramLM.load(d / "in"), NgramLM.load(d / "gen"))
    _MODELS["moses"] = None
    if moses_lang is not None:
        from ..text.pipeline import Preprocessor
        from ..text.settings import TextConfig

        # preprocess's own cleaning and tokenizer, so that its token count of the kept text is the count kept
        _MODELS["moses"] = Preprocessor(TextConfig(moses_lang, normalize_punct=False))


def _moses_words(text: str) -> np.ndarray:
    pre = _MODELS["moses"]
    return np.array([len(pre.tokenize(pre.clean(line))) for line in text.split("\n")], dtype=np.int64)


def _score_side(name: str, text: str) -> tuple[np.ndarray, np.ndarray]:
    vocab, lm_in, lm_gen = _MODELS[name]
    seq, lengths = vocab.encode(text)
    diff = lm_gen.sentence_logprobs(seq) - lm_in.sentence_logprobs(seq)  # = n·(H_in − H_gen)
    return diff / (lengths + 1), lengths


def _score_chunk(job: tuple[list[bytes], list[bytes], Corpus, int]) -> tuple[np.ndarray, np.ndarray, int]:
    # Decoding happens here, not in the reading process, which is the pipeline's narrow end.
    src, tgt, corpus, first = job
    s_score, s_len = _score_side("src", _text(src, corpus.src, first))
    t_text = _text(tgt, corpus.tgt, first)
    t_score, t_len = _score_side("tgt", t_text)
    kept_words = t_len if _MODELS["moses"] is None else _moses_words(t_text)
    return (s_score + t_score).astype(np.float32), kept_words.astype(np.int32), int(s_len.sum() + t_len.sum())


def _jobs(corpora: list[Corpus], chunk_lines: int) -> Iterator[tuple[list[bytes], list[bytes], Corpus, int]]:
    for corpus in corpora:
        first = 1
        for s, t in read_pairs(corpus, chunk_lines):
            yield s, t, corpus, first
            first += len(s)


@dataclass
class Scores:
    score_path: Path
    words_path: Path
    pairs: int = 0
    scored_words: int = 0  # the selection's tokens, both sides
    tgt_words: int = 0  # as --count-words counts
    lo: float = float("inf")
    hi: float = float("-inf")
    seconds: float = 0.0


def score_corpora(
    general: list[Corpus], lm_dir: Path, out: Scores, cfg: SelectConfig, workers: int, tgt_lang: str
) -> Scores:
    """Score every pair; scores (float32) and target words (int32, as ``cfg.count`` counts) go to disk
    in input order."""
    start = time.perf_counter()
    with (
        open(out.score_path, "wb") as fs,
        open(out.words_path, "wb") as fw,
        Workers(workers, _load_models, (str(lm_dir), tgt_lang if cfg.count == "moses" else None)) as pool,
        progress("pairs") as bar,
    ):
        task = bar.add_task("score", total=None)
        for scores, words, scored_words in pool.map(_score_chunk, _jobs(general, cfg.chunk_lines)):
            fs.write(scores.tobytes())
            fw.write(words.tobytes())
            out.pairs += scores.size
            out.scored_words += scored_words
            out.tgt_words += int(words.sum())
            if scores.size:
                out.lo, out.hi = min(out.lo, float(scores.min())), max(out.hi, float(scores.max()))
            bar.advance(task, scores.size)
    out.seconds = time.perf_counter() - start
    return out


# ---- the cut --------------------------------------------------------------------------


def _blocks(path: Path, dtype: Any, block: int = 1 << 22) -> Iterator[np.ndarray]:
    data = np.memmap(path, dtype=dtype, mode="r") if path.stat().st_size else np.empty(0, dtype)
    for i in range(0, data.size, block):
        yield np.asarray(data[i : i + block])


def find_cut(scores: Scores, keep_words: int) -> tuple[float, float, int]:
    """(lo, hi, words below lo): keep every pair scoring below ``lo`` and, of those in [lo, hi),
    the first ones in input order until ``keep_words`` target words are reached (or just passed)."""
    if scores.tgt_words <= keep_words:
        return float("inf"), float("inf"), scores.tgt_words
    edges = np.linspace(scores.lo, scores.hi, BINS + 1)
    hist = np.zeros(BINS)
    for s, w in zip(_blocks(scores.score_path, np.float32), _blocks(scores.words_path, np.int32)):
        b = np.clip(np.searchsorted(edges, s.astype(np.float64), side="right") - 1, 0, BINS - 1)
        hist += np.bincount(b, weights=w, minlength=BINS)
    below = np.concatenate([[0.0], np.cumsum(hist)])
    cut = int(np.searchsorted(below, keep_words, side="right") - 1)
    hi = float(edges[cut + 1]) if cut + 1 < BINS else float("inf")
    return float(edges[cut]) if cut else float("-inf"), hi, int(below[cut])


def write_selection(
    general: list[Corpus],
    scores: Scores,
    cut: tuple[float, float, int],
    keep_words: int,
    stage: Staging,
    langs: tuple[str, str],
    chunk_lines: int,
) -> tuple[int, int]:
    lo, hi, room = cut[0], cut[1], keep_words - cut[2]
    kept = words_kept = 0
    s_iter = _blocks(scores.score_path, np.float32, chunk_lines)
    w_iter = _blocks(scores.words_path, np.int32, chunk_lines)
    buf_s, buf_w = np.empty(0, np.float32), np.empty(0, np.int32)
    with open(stage.path(f"train.{langs[0]}"), "wb") as out_s, open(stage.path(f"train.{langs[1]}"), "wb") as out_t:
        for corpus in general:
            for src, tgt in read_pairs(corpus, chunk_lines):
                while buf_s.size < len(src):
                    buf_s = np.concatenate([buf_s, next(s_iter)])
                    buf_w = np.concatenate([buf_w, next(w_iter)])
                sc, wc = buf_s[: len(src)].astype(np.float64), buf_w[: len(src)]
                buf_s, buf_w = buf_s[len(src) :], buf_w[len(src) :]
                keep = sc < lo
                edge = np.flatnonzero((sc >= lo) & (sc < hi))
                if edge.size and room > 0:
                    take = np.cumsum(wc[edge]) - wc[edge] < room
                    keep[edge[take]] = True
                    room -= int(wc[edge[take]].sum())
                for i in np.flatnonzero(keep):
                    out_s.write(src[i])
                    out_t.write(tgt[i])
                kept += int(keep.sum())
                words_kept += int(wc[keep].sum())
    return kept, words_kept


def _refuse_given_twice(in_domain: list[Corpus], general: list[Corpus]) -> None:
    """One line for a corpus given twice as one kind: as --general, its pairs were kept twice. (One
    corpus may be both kinds: the WMT'14 recipe selects from news-commentary with it as in-domain.)"""
    for flag, corpora in (("--in-domain", in_domain), ("--general", general)):
        seen: set[str] = set()
        for c in corpora:
            if (key := os.path.realpath(c.src)) in seen:
                raise UserError(f"{flag} {c.src}: given twice: give each corpus once")
            seen.add(key)


def select(
    in_domain: list[Corpus],
    general: list[Corpus],
    out_dir: Path,
    langs: tuple[str, str],
    cfg: SelectConfig,
    workers: int,
) -> dict[str, Any]:
    """Write ``out_dir/train.{src,tgt}`` (the kept pairs in input order) and ``select.json``."""
    check_languages(*langs)
    _refuse_given_twice(in_domain, general)
    refuse_streams([path for c in general for path in (c.src, c.tgt)])  # sampled, scored, then written
    refuse_overwriting(
        [("-d", str(out_dir / f"train.{lang}")) for lang in langs],
        [
            (flag, str(path))
            for flag, corpora in (("--in-domain", in_domain), ("--general", general))
            for c in corpora
            for path in (c.src, c.tgt)
        ],
    )
    corpora = [("--in-domain", c) for c in in_domain] + [("--general", c) for c in general]
    refuse_shared_directory(out_dir, "the selection", None, [(f"{flag} {c.src}", c.src.parent) for flag, c in corpora])
    with Staging(out_dir) as stage:
        lm_dir = stage.path("lm")
        t0 = time.perf_counter()
        info, chunks = build_models(in_domain, general, lm_dir, cfg)
        t1 = time.perf_counter()
        log(
            f"select: LMs from {info['in_domain_pairs']:,} in-domain pairs and a sample of "
            f"{info['sample_pairs']:,} of {info['general_pairs']:,} general pairs in {t1 - t0:.1f} s"
        )
        # one process per chunk at most: each loads both sides' models first
        workers = min(workers, chunks)
        scores = score_corpora(
            general, lm_dir, Scores(stage.path("scores.f32"), stage.path("words.i32")), cfg, workers, langs[1]
        )
        words = scores.scored_words
        log(
            f"select: scored {scores.pairs:,} pairs, {words:,} words in {scores.seconds:.1f} s "
            f"({words / max(scores.seconds, 1e-9):,.0f} words/s)"
        )
        cut = find_cut(scores, cfg.keep_words)
        kept, kept_words = write_selection(general, scores, cut, cfg.keep_words, stage, langs, cfg.chunk_lines)
        report = {
            "config": asdict(cfg),
            "langs": list(langs),
            **info,
            "in_domain": [str(c.src.with_suffix("")) for c in in_domain],
            "general": [str(c.src.with_suffix("")) for c in general],
            "pairs": scores.pairs,
            "scored_words": scores.scored_words,
            "tgt_words": scores.tgt_words,
            "kept_pairs": kept,
            "kept_tgt_words": kept_words,
            "threshold": cut[0] if np.isfinite(cut[0]) else None,
            "lm_seconds": round(t1 - t0, 2),
            "score_seconds": round(scores.seconds, 2),
            "score_words_per_s": round(words / max(scores.seconds, 1e-9)),
            "workers": workers,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        stage.path("select.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        stage.commit()
    log(
        f"select: kept {kept:,} of {scores.pairs:,} pairs, {kept_words:,} of {scores.tgt_words:,} "
        f"target words ({COUNT_UNITS[cfg.count]}) → {out_dir}"
    )
    return report
