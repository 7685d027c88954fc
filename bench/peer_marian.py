"""Marian's side of ``bin/bench-marian`` (:mod:`bench.bench_marian`): the demo's data-bin
as Marian's text and vocabularies, Marian's training on it (its settings beside the demo's recipe,
its speed read from its own logs, trained on in chunks), its int8 models, its lexical shortlist
and its decoding. Marian 1.12 is PyPI's pymarian, in $BENCH_DIR/marian/venv.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nmtkit.core.files import atomic_write
from nmtkit.data.binarized import Corpus
from nmtkit.data.vocab import SPECIALS
from nmtkit.text.pipeline import Preprocessor

from .bench_aer import eflomal_venv
from .bench_common import Site, fail, json_of, timed, write_lines, write_text
from .peer_recipes import Point, over

# Marian's side of the demo's recipe. Differences from `--schedule cpu`, each forced by Marian:
# conditional GRU decoder (Nematus) instead of the paper's GRU with maxout readout; no cosine decay
# (Marian has none): warm-up 50 updates, then the inverse square root of updates, Marian's usual
# schedule; best model by dev cross-entropy per word (nmtkit: dev NLL per sentence).
MARIAN_TRAIN = (
    "--type s2s --enc-type bidirectional --enc-cell gru --dec-cell gru --enc-depth 1 --dec-depth 1 "
    "--dim-emb 256 --dim-rnn 256 --tied-embeddings --mini-batch 80 --maxi-batch 100 --max-length 50 "
    "--optimizer adam --learn-rate 5e-3 --lr-warmup 50 --lr-decay-inv-sqrt 50 --label-smoothing 0.1 "
    "--cost-type ce-mean-words --clip-norm 1 --valid-freq 200 --valid-metrics ce-mean-words --keep-best "
    "--disp-freq 50 --save-freq 200 --overwrite --seed 42"
).split()
# fairseq learnt as fast as nmtkit per update once its rate stopped decaying (docs/benchmarks.md):
# Marian's 20 minutes again with the same change alone, a constant 5e-3 after the warm-up
MARIAN_CONSTANT = [("0" if prev == "--lr-decay-inv-sqrt" else a) for prev, a in zip(["", *MARIAN_TRAIN], MARIAN_TRAIN)]
# fbgemm's packed8avx512/packed8avx2 models convert but crash the decoder on an s2s model in
# pymarian 1.12.42 (segmentation fault on the first batch): intgemm8 is Marian's int8 path here
MARIAN_PATHS = {
    "fp32": ("fp32", False),
    "fp32 + shortlist": ("fp32", True),
    "intgemm8": ("intgemm8", False),
    "intgemm8 + shortlist": ("intgemm8", True),
}


def marian(site: Site, *args: object) -> list[object]:
    return [site.marian_py, "-m", "pymarian", *args]


# -- data -------------------------------------------------------------------------------------------


def marian_vocab(tokens: list[str]) -> list[str]:
    """Marian's .yml lines for nmtkit's units: </s> 0 and <unk> 1 (Marian's own ids for them),
    then nmtkit's units in nmtkit's order; keys as JSON strings, which YAML reads as they are."""
    units = ["</s>", "<unk>"] + [t for t in tokens if t not in SPECIALS]
    return [f"{json.dumps(t, ensure_ascii=False)}: {i}" for i, t in enumerate(units)]


def preprocessor(data_bin: Path, lang: str) -> Preprocessor:
    """nmtkit's text pipeline of one side of a data-bin: what `nmtkit translate` runs on a line."""
    codes = data_bin / "bpe.codes"
    return Preprocessor(
        Corpus(data_bin).manifest.text(lang), codes.read_text(encoding="utf-8") if codes.exists() else None
    )


def prepare(data_bin: Path, test_source: Path, out: Path) -> dict[str, Any]:
    """Marian's text and vocabularies from a data-bin (its train and valid pairs in the very units
    nmtkit trains on); the test source in Moses tokens (nmtkit's input) and in units (Marian's)."""
    done = out / "done.json"
    if done.exists():
        found: dict[str, Any] = json_of(done)
        return found
    out.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(data_bin)
    langs = (corpus.src_lang, corpus.tgt_lang)
    vocabs = {lang: corpus.vocab(lang) for lang in langs}
    for lang, vocab in vocabs.items():
        write_lines(out / f"vocab.{lang}.yml", marian_vocab(vocab.tokens))
    counts = {}
    for split in ("train", "valid"):
        arrays = corpus.split(split)
        for lang, array in zip(langs, arrays):
            table = np.array(vocabs[lang].tokens, dtype=object)
            write_lines(out / f"{split}.{lang}", [" ".join(table[array[i]]) for i in range(len(array))])
        counts[split] = len(arrays[0])
    src = preprocessor(data_bin, langs[0])
    raw = test_source.read_text(encoding="utf-8").splitlines()
    moses = [src.tokenize(src.clean(line)) for line in raw]
    write_lines(out / f"test.tok.{langs[0]}", [" ".join(t) for t in moses])
    write_lines(out / f"test.bpe.{langs[0]}", [" ".join(src.segment(t)) for t in moses])
    info = {"langs": list(langs), "pairs": counts, "test": len(raw), "vocab": {k: len(v) for k, v in vocabs.items()}}
    write_text(done, json.dumps(info))
    return info


def detokenized(units: list[str], data_bin: Path) -> list[str]:
    """Target units (Marian's or fairseq's output) → text, as `nmtkit translate` writes it."""
    tgt = preprocessor(data_bin, Corpus(data_bin).tgt_lang)
    return [tgt.decode(line.split()) for line in units]


# -- training ---------------------------------------------------------------------------------------


def train_marian(
    site: Site,
    minutes: float,
    threads: int,
    name: str = "marian",
    resume_from: str | None = None,
    settings: list[str] = MARIAN_TRAIN,
) -> dict[str, Any]:
    """Marian trained for ``minutes`` (`timeout -s TERM`: Marian saves and exits) into ``name``,
    from ``resume_from``'s model when given; its run and speed (kept: a rerun reads them back)."""
    result = site.work / f"train-{name}.json"
    if (done := site.kept(result, minutes, threads)) is not None:
        return done
    model = site.work / name
    model.mkdir(parents=True, exist_ok=True)
    if resume_from and not (model / "model.npz").exists():
        for f in (site.work / resume_from).iterdir():
            if f.name.startswith("model.npz"):
                with atomic_write(model / f.name, "wb") as fh:
                    fh.write(f.read_bytes())
    cmd = marian_train(site, model, threads, settings)
    log = site.work / f"train-{name}.stdout"
    run = timed(cmd, log, timeout_s=minutes * 60)
    if run["rc"] not in (0, 124):  # 124: stopped by the budget (Marian saved on SIGTERM)
        fail("bench-marian", f"marian train failed (rc {run['rc']}): see {log}")
    run.update(marian_speed(model), settings=" ".join(settings), minutes=minutes, threads=threads)
    write_text(result, json.dumps(run, indent=1))
    return run


def marian_train(site: Site, model: Path, threads: int, settings: Sequence[str]) -> list[object]:
    """Marian's training command on the demo's units into ``model`` (a directory)."""
    d = site.units
    return marian(
        site,
        *("train", "--model", model / "model.npz", "--train-sets", d / "train.en", d / "train.fr"),
        *("--vocabs", d / "vocab.en.yml", d / "vocab.fr.yml", "--valid-sets", d / "valid.en", d / "valid.fr"),
        *("--cpu-threads", threads, "--workspace", "2048", "--log", model / "train.log"),
        *("--valid-log", model / "valid.log", *settings),
    )


def marian_sweep_point(site: Site, point: Point, run_dir: Path, updates: int, threads: int) -> dict[str, Any]:
    """Marian trained ``updates`` updates with ``point``'s settings, validated at the last: its dev
    cross-entropy per target unit (``ce-mean-words``) from its validation log."""
    stop = ["--after", f"{updates}u", "--valid-freq", f"{updates}u", "--save-freq", f"{updates}u"]
    log = run_dir.parent / f"{run_dir.name}.log"  # a name may hold a dot (lr 1.0)
    run = timed(marian_train(site, run_dir, threads, over(point.flags, stop)), log)
    if run["rc"] != 0:
        fail("bench-sweep", f"marian train failed (rc {run['rc']}): see {log}")
    valid = (run_dir / "valid.log").read_text(errors="replace") if (run_dir / "valid.log").exists() else ""
    return {
        "updates": marian_speed(run_dir)["updates"],
        "dev_ce": marian_dev_ce(valid),
        "wall_s": run["wall_s"],
        "peak_rss_mb": run["peak_rss_mb"],
    }


def marian_dev_ce(valid_log: str) -> float | None:
    """The last dev cross-entropy per target unit in Marian's validation log (None: none, or not
    finite)."""
    found = re.findall(r"ce-mean-words : ([-\w.+]+)", valid_log)
    return finite(found[-1]) if found else None


def finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def marian_speed(model: Path) -> dict[str, Any]:
    """Updates and target tokens/s (labels, </s> included) as nmtkit counts its own: the mean of
    the logged windows' speeds (Marian's ``words/s``, every --disp-freq updates, validation left
    out); also labels over the wall time between "Training started" and the signal."""
    progress = (model / "model.npz.progress.yml").read_text()

    def field(name: str) -> int:
        found = re.search(rf"^{name}: (\d+)", progress, re.M)
        return int(found.group(1)) if found else 0

    log = (model / "train.log").read_text(errors="replace")
    stamps: dict[str, list[float]] = {}
    for line in log.splitlines():
        for key in ("Training started", "Training interrupted", "Training finished"):
            if key in line:
                moment = time.mktime(time.strptime(line[1:20], "%Y-%m-%d %H:%M:%S"))
                stamps.setdefault(key.split()[1], []).append(moment)
    spans = zip(stamps.get("started", []), sorted(stamps.get("interrupted", []) + stamps.get("finished", [])))
    seconds = sum(end - start for start, end in spans)
    rates = [float(x) for x in re.findall(r"([\d.]+) words/s", log)]
    wall = field("labels-total") / seconds if seconds else None
    return {
        "updates": field("batches"),
        "train_s": seconds,
        "tgt_tok_per_s": sum(rates) / len(rates) if rates else wall,
        "tgt_tok_per_s_wall": wall,
    }


def chunks(site: Site) -> list[dict[str, Any]]:
    """Marian's runs after its budgeted one ("marian-more"), each a chunk of minutes."""
    path = site.work / "marian-more" / "chunks.json"
    found: list[dict[str, Any]] = json_of(path) if path.exists() else []
    return found


def trained_more(site: Site) -> float:
    """Minutes Marian has trained on after its budgeted run."""
    return float(sum(c["minutes"] for c in chunks(site)))


def train_to_total(site: Site, total: float, chunk: float, threads: int) -> None:
    """Marian trained on in chunks of at most ``chunk`` minutes until its budgeted run (``chunk``
    minutes) and the chunks make ``total`` minutes; what an earlier call did is not redone."""
    while total > chunk + trained_more(site) + 0.5:
        train_more(site, min(chunk, total - chunk - trained_more(site)), threads)


def train_more(site: Site, minutes: float, threads: int) -> None:
    """Marian trained on from its budgeted model, ``minutes`` more (one chunk a call)."""
    more = site.work / "marian-more"
    (site.work / "train-marian-more.json").unlink(missing_ok=True)
    run = train_marian(site, minutes, threads, "marian-more", resume_from="marian")
    write_text(more / "chunks.json", json.dumps(chunks(site) + [{"minutes": minutes, **run}]))
    for f in [*(site.work / "decode").glob("marian-marian-more-*"), *more.glob("model.*.bin")]:
        f.unlink()  # decoded, or converted to int8, before this chunk


# -- decoding ---------------------------------------------------------------------------------------

MARIAN_DECODE = r"""
import json, resource, sys, time
from pymarian import Translator
spec = json.loads(sys.argv[1])
lines = open(spec["source"], encoding="utf-8").read().splitlines()
t0 = time.perf_counter()
tr = Translator(spec["cli"])
loaded = time.perf_counter() - t0
t0 = time.perf_counter()
out = tr.translate(lines)
seconds = time.perf_counter() - t0
out = out if isinstance(out, list) else out.splitlines()
print(json.dumps({"load_s": loaded, "seconds": seconds, "sentences": len(out),
                  "tokens": sum(len(o.split()) + 1 for o in out), "hyps": out,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def marian_decode(site: Site, model: Path, beam: int, threads: int, shortlist: Path | None) -> dict[str, Any]:
    """The test verses in units through pymarian's Translator, in a process of its own: search
    time (model loading apart), sentences, generated tokens (</s> included), peak RSS, outputs."""
    d = site.units
    cli = (
        f"--models {model} --vocabs {d / 'vocab.en.yml'} {d / 'vocab.fr.yml'} --beam-size {beam} "
        f"--cpu-threads {threads} --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --normalize 0 "
        f"--max-length-factor 2 --quiet --quiet-translation"
    )
    if shortlist:
        cli += f" --shortlist {shortlist} 100 100"
    spec = {"source": str(d / "test.bpe.en"), "cli": cli}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(
        [site.marian_py, "-c", MARIAN_DECODE, json.dumps(spec)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        fail("bench-marian", f"marian decoding failed: {done.stderr.strip()[-400:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def marian_models(site: Site, name: str) -> dict[str, Path]:
    """The fp32 model (``name``: a training directory's best by dev cross-entropy, or a model file
    of one) and its int8 conversions."""
    given = site.work / name
    if given.is_file():
        best, base, stem = given, given.parent, given.name
    else:
        best, base, stem = given / "model.npz.best-ce-mean-words.npz", given, "model"
        best = best if best.exists() else base / "model.npz"
    out = {"fp32": best}
    for gemm in ("intgemm8",):
        target = base / f"{stem}.{gemm}.bin"
        if not target.exists():
            cmd = marian(site, "convert", "-f", best, "-t", target, "--gemm-type", gemm)
            if subprocess.run(list(map(str, cmd)), capture_output=True, text=True).returncode != 0:
                print(f"bench-marian: marian convert --gemm-type {gemm} failed; row left out", file=sys.stderr)
                continue
        out[gemm] = target
    return out


def lexical_table(sources: Iterable[str], targets: Iterable[str], links: Iterable[str]) -> list[str]:
    """extract-lex's table (Marian's documented way to build a shortlist) from word-aligned pairs:
    p(target | source) = c(source, target) / c(source) over aligned pairs, an unaligned word paired
    with NULL, as Marian's lines ``target source probability``, sources sorted."""
    pair: Counter[tuple[str, str]] = Counter()
    single: Counter[str] = Counter()
    for s_line, t_line, a_line in zip(sources, targets, links):
        s, t = s_line.split(), t_line.split()
        aligned_s, aligned_t = set(), set()
        for link in a_line.split():
            i, j = map(int, link.split("-"))
            pair[s[i], t[j]] += 1
            single[s[i]] += 1
            aligned_s.add(i)
            aligned_t.add(j)
        for i in set(range(len(s))) - aligned_s:
            pair[s[i], "NULL"] += 1
            single[s[i]] += 1
        for j in set(range(len(t))) - aligned_t:
            pair["NULL", t[j]] += 1
            single["NULL"] += 1
    by_source = defaultdict(list)
    for (s_word, t_word), c in pair.items():
        by_source[s_word].append(f"{t_word} {s_word} {c / single[s_word]:.6f}")
    return [line for s_word in sorted(by_source) for line in sorted(by_source[s_word])]


def marian_shortlist(site: Site) -> Path:
    """Marian's lexical shortlist: eflomal's forward alignments of the training units (Marian's
    examples use fast_align, not on PyPI), then :func:`lexical_table`."""
    d = site.units
    table = d / "lex.s2t"
    if table.exists():
        return table
    links = d / "train.fwd"
    align = [eflomal_venv() / "bin" / "eflomal-align", "--overwrite", "-s", d / "train.en", "-t", d / "train.fr"]
    subprocess.run(list(map(str, [*align, "-f", links, "-r", d / "train.rev"])), check=True)
    with (
        open(d / "train.en", encoding="utf-8") as fs,
        open(d / "train.fr", encoding="utf-8") as ft,
        open(links, encoding="utf-8") as fl,
    ):
        write_lines(table, lexical_table(fs, ft, fl))
    return table
