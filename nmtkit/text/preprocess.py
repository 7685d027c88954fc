"""``nmtkit preprocess`` in text mode: raw parallel text → clean Moses tokens.

For each split ``PREFIX.{src,tgt}`` it writes ``OUT/<split>.{src,tgt}``
(space-separated tokens), ``OUT/<split>.lines`` (the raw line number of
every kept pair) and ``OUT/preprocess.json`` (the settings and, per split,
what each cleaning rule changed and each filter dropped). Filters (empty,
length, ratio, duplicates) apply to the training split only: evaluation
splits keep every line so that they stay aligned with their references.

Work is spread over processes in chunks, in order, with bounded look-ahead
(:mod:`nmtkit.core.parallel`); everything is written to a staging directory and
moved into place only when every split has succeeded.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from .. import __version__
from ..core.arriving import ArrivingLines
from ..core.console import log, progress
from ..core.errors import FormatError, UserError
from ..core.files import fingerprint, open_binary, read_json, read_lines, refuse_overwriting, write_json
from ..core.line_counts import check_parallel_prefix, count_lines
from ..core.parallel import Workers, chunked, needed
from ..core.staging import Staging, refuse_shared_directory
from ..core.streams import is_stream
from ..core.wording import counted
from .pipeline import Preprocessor
from .settings import FilterConfig, TextConfig, check_languages

SETTINGS_FILE = "preprocess.json"
CHUNK = 2000
SHARED_PIECE = 16  # the fewest lines of a pipe's read sent to a worker: fewer cost more to send
TRAIN = "train"

_sides: list[Preprocessor] = []


def _init(cfg_dicts: list[dict[str, Any]], codes: str | None) -> None:
    _sides[:] = [Preprocessor(TextConfig.from_dict(d), codes) for d in cfg_dicts]


def _encode_chunk(chunk: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], list[dict[str, int]]]:
    """Rows ``(lineno, text, …)`` → ``(lineno, tokens, …)``, one text per side; plus rule counts."""
    out = [(row[0], *(" ".join(p.encode(t)) for p, t in zip(_sides, row[1:]))) for row in chunk]
    fired = [dict(p.fired) for p in _sides]
    for p in _sides:
        p.fired.clear()
    return out, fired


def _ntokens(line: str) -> int:
    return line.count(" ") + 1 if line else 0


class PairFilter:
    """Moses clean-corpus-n style filters plus exact-duplicate removal; counts what each drops."""

    def __init__(self, cfg: FilterConfig):
        self.cfg = cfg
        self.seen: set[int] = set()
        self.dropped: Counter[str] = Counter()

    def reason(self, src: str, tgt: str) -> str | None:
        ls, lt = _ntokens(src), _ntokens(tgt)
        cfg = self.cfg
        if ls == 0 or lt == 0:
            return "empty"
        if cfg.max_len and max(ls, lt) > cfg.max_len:
            return "too-long"
        if min(ls, lt) < cfg.min_len:
            return "too-short"
        if cfg.max_ratio and max(ls, lt) > cfg.max_ratio * min(ls, lt):
            return "ratio"
        if cfg.dedup:
            key = hash((src, tgt))
            if key in self.seen:
                return "duplicate"
            self.seen.add(key)
        return None

    def keep(self, src: str, tgt: str) -> bool:
        why = self.reason(src, tgt)
        if why:
            self.dropped[why] += 1
        return why is None


def settings_dict(texts: tuple[TextConfig, TextConfig], filters: FilterConfig) -> dict[str, Any]:
    return {"text": {t.lang: t.to_dict() for t in texts}, "filters": filters.to_dict()}


def text_fingerprint(text_settings: dict[str, Any]) -> str:
    """Fingerprint of how raw text becomes tokens (what translate must repeat)."""
    return fingerprint(text_settings)


def preprocess_corpus(
    splits: dict[str, Path],
    out_dir: Path,
    texts: tuple[TextConfig, TextConfig],
    filters: FilterConfig,
    workers: int = 1,
) -> dict[str, Any]:
    """Clean and tokenize each split's pair of files; returns the written ``preprocess.json``.

    No BPE here: a corpus's codes belong to its vocabulary directory and are
    applied when binarizing, so that they travel with the vocabulary.
    """
    src_lang, tgt_lang = texts[0].lang, texts[1].lang
    check_languages(src_lang, tgt_lang)
    counts = {name: check_parallel_prefix(p, (src_lang, tgt_lang)) for name, p in splits.items()}
    langs = (src_lang, tgt_lang)
    refuse_overwriting(  # -d beside the raw text, same split names: the staged directory would replace it
        [("-d", str(out_dir / f"{name}.{lang}")) for name in splits for lang in langs],
        [(f"--{name}", f"{p}.{lang}") for name, p in splits.items() for lang in langs],
    )
    inputs = [(f"--{name} {p}", Path(p).parent) for name, p in splits.items()]
    refuse_shared_directory(out_dir, "the clean text", SETTINGS_FILE, inputs)
    settings = settings_dict(texts, filters)
    report: dict[str, Any] = {"nmtkit": __version__, **settings, "splits": {}}
    stale: tuple[str, ...] = ()
    if (out_dir / SETTINGS_FILE).exists():
        previous = read_report(out_dir, "")
        # a split written again in another language pair drops the other's: they stayed under a report without them
        stale = tuple(f"{name}.{lang}" for name in splits for lang in previous["text"] if lang not in langs)
        if settings_dict_of(previous) == settings:
            report["splits"] = {k: v for k, v in previous.get("splits", {}).items() if k not in splits}
        elif set(previous.get("splits", {})) - set(splits):
            raise UserError(
                f"{out_dir} holds text preprocessed with other settings "
                f"({', '.join(previous['splits'])}); write to another directory"
            )
    init_args = ([t.to_dict() for t in texts], None)
    workers = needed(workers, max(counts.values()), CHUNK)
    with Staging(out_dir, owned=stale) as stage, Workers(workers, _init, init_args) as pool, progress() as bar:
        for name, prefix in splits.items():
            task = bar.add_task(f"preprocess {name}", total=counts[name])
            report["splits"][name] = _preprocess_split(
                name,
                prefix,
                stage,
                langs=(src_lang, tgt_lang),
                pool=pool,
                pair_filter=PairFilter(filters) if name == TRAIN else None,
                advance=functools.partial(bar.advance, task),
            )
            if name == TRAIN and not report["splits"][name]["pairs"]:  # before anything is written
                dropped = ", ".join(f"{k} {v:,}" for k, v in report["splits"][name].get("dropped", {}).items())
                raise UserError(
                    f"{prefix}: every pair of its {counts[name]:,} lines was filtered out (dropped: {dropped}); "
                    f"loosen --max-len, --min-len or --max-ratio"
                )
        write_json(stage.path(SETTINGS_FILE), report)
        stage.commit()
    for name in splits:
        if empty := report["splits"][name].get("kept_empty"):
            log(
                f"warning: {name}: {counted(empty, 'pair')} with an empty side, kept (only train's pairs "
                f"are filtered: {name} stays line for line with its references)"
            )
    return report


def read_report(directory: Path, missing: str) -> dict[str, Any]:
    """The ``preprocess.json`` of a directory of clean text: the only reader of the file.
    ``missing``: what to tell a user whose directory has none."""
    path = directory / SETTINGS_FILE
    if not path.exists():
        raise UserError(f"{path}: missing; {missing}")
    report = read_json(path, "preprocess settings")
    if not (
        isinstance(report, dict) and isinstance(report.get("text"), dict) and isinstance(report.get("splits"), dict)
    ):
        raise FormatError(f"{path}: not a preprocessing report (written by nmtkit preprocess)")
    return report


def settings_dict_of(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report.get(k) for k in ("text", "filters")}


def _preprocess_split(
    name: str,
    prefix: Path,
    stage: Staging,
    langs: tuple[str, str],
    pool: Workers,
    pair_filter: PairFilter | None,
    advance: Callable[[int], None],
) -> dict[str, Any]:
    inputs = [read_lines(f"{prefix}.{lang}") for lang in langs]
    numbered = ((i, *row) for i, row in enumerate(zip(*inputs), 1))
    fired: list[Counter[str]] = [Counter(), Counter()]
    tokens = [0, 0]
    lines_in = kept = empty = 0
    outs = [open(stage.path(f"{name}.{lang}"), "w", encoding="utf-8") for lang in langs]
    with outs[0], outs[1], open(stage.path(f"{name}.lines"), "w", encoding="utf-8") as lines_out:
        for rows, chunk_fired in pool.map(_encode_chunk, chunked(numbered, CHUNK)):
            for counter, add in zip(fired, chunk_fired):
                counter.update(add)
            for lineno, src, tgt in rows:
                if pair_filter is not None and not pair_filter.keep(src, tgt):
                    continue
                empty += not src or not tgt
                outs[0].write(src + "\n")
                outs[1].write(tgt + "\n")
                lines_out.write(f"{lineno}\n")
                tokens[0] += _ntokens(src)
                tokens[1] += _ntokens(tgt)
                kept += 1
            lines_in += len(rows)
            advance(len(rows))
    report: dict[str, Any] = {
        "source": str(prefix),
        "lines": lines_in,
        "pairs": kept,
        "tokens": dict(zip(langs, tokens)),
        "rules": {lang: dict(sorted(c.items())) for lang, c in zip(langs, fired)},
    }
    if pair_filter is not None:
        report["dropped"] = {
            k: pair_filter.dropped.get(k, 0) for k in ("empty", "too-long", "too-short", "ratio", "duplicate")
        }
    else:
        report["kept_empty"] = empty
    return report


def preprocess_stream(
    cfg: TextConfig, source: str | Path, out: IO[str], bpe_codes: str | None = None, workers: int = 1
) -> Counter[str]:
    """One side, line for line: every input line gives exactly one output line.

    A file (named, or on stdin) goes through the workers in chunks, its text checked first: a line
    that is not UTF-8 stops it before its first result, not after as many chunks as the workers had
    done. A pipe's lines go as they arrive, in blocks of what its writer is ahead by, each written
    and flushed before the next is read, so that a line typed is answered at once. The workers
    start once a chunk has come, so that ``zcat … |`` keeps them busy and a short pipe waits for no
    process to start.
    """
    fired: Counter[str] = Counter()
    initargs = ([cfg.to_dict()], bpe_codes)

    def write(pool: Workers, chunks: Iterable[list[tuple[int, str]]]) -> None:
        for rows, chunk_fired in pool.map(_encode_chunk, chunks):
            fired.update(chunk_fired[0])
            out.write("".join(row[1] + "\n" for row in rows))

    if not is_stream(source):
        with Workers(needed(workers, count_lines(source, utf8=True), CHUNK), _init, initargs) as pool:
            write(pool, chunked(enumerate(read_lines(source)), CHUNK))
        return fired
    with contextlib.ExitStack() as stack:
        stream = open_binary(source)
        if str(source) != "-":
            stack.enter_context(stream)
        here, shared, seen = Workers(1, _init, initargs), None, 0
        arriving = ArrivingLines(stream, str(source), most=CHUNK)
        for lines in arriving:
            seen += len(lines)
            if shared is None and workers > 1 and seen >= CHUNK:
                shared = stack.enter_context(Workers(workers, _init, initargs))
                arriving.most = workers * CHUNK
            pool = shared if shared is not None and len(lines) >= 2 * SHARED_PIECE else here
            write(pool, chunked(enumerate(lines), max(SHARED_PIECE, -(-len(lines) // pool.n))))
            out.flush()
    return fired
