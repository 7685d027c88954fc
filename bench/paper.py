"""``make paper``: the paper's finding on the Bible corpus, RNNsearch against RNNencdec by length.

``make paper`` trains RNNencdec-30, RNNencdec-50, RNNsearch-30 and
RNNsearch-50 (training pairs of up to 30 and 50 words) with one recipe and
one budget in updates, translates two test sets, the King James → Segond
test verses and passages of consecutive verses (``passages``, for long
sentences), and ``report`` writes ``report.md`` with its pictures:

- Table 1: tokenized BLEU (the paper's) and sacreBLEU, on All and on the
  No-UNK subset (no word outside the 30,000 most frequent of each side), with
  95% bootstrap intervals, and paired bootstrap p-values of RNNsearch-50 and
  RNNsearch-30 against RNNencdec-50;
- Figure 2: tokenized BLEU against source length, both test sets pooled,
  buckets of 10 words with their sentence counts and bootstrap error bars,
  and per system the fitted slope (BLEU lost per 10 more words);
- Figure 3: RNNsearch-50's alignments for test verses of 10 to 20 words with
  no unknown word, as the paper chose them, and one long passage.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from nmtkit import checkpoint
from nmtkit.align.heatmap import from_alignment_file, plot
from nmtkit.core.command import Group
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write, read_lines
from nmtkit.core.machine import MACHINE, describe
from nmtkit.core.plot import pyplot
from nmtkit.data.passages import write_passages
from nmtkit.evaluate.score import Texts, moses_tokens, multi_bleu, no_unk_indices, read_cleaned
from nmtkit.evaluate.significance import paired_bootstrap

from .gpu_cells import fastest_flags, measured

MODELS = ("rnnencdec-30", "rnnencdec-50", "rnnsearch-30", "rnnsearch-50")
TITLES = {
    "rnnencdec-30": "RNNencdec-30",
    "rnnencdec-50": "RNNencdec-50",
    "rnnsearch-30": "RNNsearch-30",
    "rnnsearch-50": "RNNsearch-50",
}
BASELINE = "rnnencdec-50"
SETS = {"test": "test verses", "test-long": "test passages"}
CLEAN = ("verse-markers",)


def _texts(raw: Path, runs: Path, name: str, models: tuple[str, ...]) -> dict[str, Any]:
    """Sources, Segond references and every model's output for one test set, cleaned as scored."""
    refs = [read_cleaned(raw / f"{name}.fr", CLEAN)]
    sources = list(read_lines(raw / f"{name}.en"))
    hyps = {}
    for m in models:
        path = runs / m / f"{name}.hyp.fr"
        if not path.is_file():
            raise UserError(f"{path}: missing; run make paper")
        hyps[m] = read_cleaned(path, CLEAN)
        if len(hyps[m]) != len(sources):
            raise UserError(f"{path} has {len(hyps[m])} lines but {raw / f'{name}.en'} has {len(sources)}")
    return {
        "sources": sources,
        "refs": refs,
        "hyps": hyps,
        "texts": {m: Texts.of(h, refs, False, "fr") for m, h in hyps.items()},
        "lengths": [len(t.split()) for t in moses_tokens(sources, "en")],
    }


def table1(data: dict[str, Any], keep: list[int], samples: int, order: list[str]) -> dict[str, Any]:
    """Both BLEUs with 95% intervals and p-values against the baseline, on All and No-UNK."""
    out: dict[str, Any] = {}
    for subset, idx in (("all", list(range(len(data["sources"])))), ("no_unk", keep)):
        if not idx:
            empty = {m: {"system": m, "bleu": math.nan, "ci95": math.nan, "p_value": None} for m in order}
            out[subset] = {"sentences": 0, "bleu": empty, "bleu_tok": empty, "signature": "", "signature_tok": ""}
            continue
        texts = {m: data["texts"][m].subset(idx) for m in order}
        first = texts[order[0]]
        sacre = paired_bootstrap({m: t.hyps for m, t in texts.items()}, first.refs, samples)
        tok = paired_bootstrap({m: t.hyps_tok for m, t in texts.items()}, first.refs_tok, samples, tokenized=True)
        out[subset] = {
            "sentences": len(idx),
            "bleu": {r["system"]: r for r in sacre["systems"]},
            "bleu_tok": {r["system"]: r for r in tok["systems"]},
            "signature": sacre["signature"],
            "signature_tok": tok["signature"],
        }
    return out


def bucket_rows(
    lengths: list[int], texts: dict[str, Any], width: int, top: int, samples: int, seed: int = 12345
) -> list[dict[str, Any]]:
    """Tokenized BLEU per bucket of source length (the last bucket is open: ``top``+), with
    the 2.5 and 97.5 percentiles of ``samples`` bootstrap resamples of the bucket's sentences."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        if n:
            groups.setdefault(min((n - 1) // width, top // width), []).append(i)
    rng = random.Random(seed)
    bleu = multi_bleu()
    # each sentence's n-gram counts once, each resample their sum, as sacrebleu's own bootstrap does
    # (significance._bootstrap_resample), rather than every resample's sentences counted again
    stats = {
        m: np.array(bleu._extract_corpus_statistics(t.hyps_tok, t.refs_tok), dtype=np.int64) for m, t in texts.items()
    }
    rows = []
    for b in sorted(groups):
        idx = groups[b]
        lo, hi = b * width + 1, (b + 1) * width if b < top // width else None
        row: dict[str, Any] = {
            "lo": lo,
            "hi": hi,
            "sentences": len(idx),
            "mid": lo + (width - 1) / 2,
            "bleu_tok": {},
            "low": {},
            "high": {},
        }
        draws = [[rng.choice(idx) for _ in idx] for _ in range(samples)]
        for m in texts:

            def score(sel: list[int], m: str = m) -> float:
                return float(bleu._compute_score_from_stats(stats[m][sel].sum(0).tolist()).score)

            row["bleu_tok"][m] = score(idx)
            boot = sorted(score(d) for d in draws)
            row["low"][m], row["high"][m] = boot[int(0.025 * (samples - 1))], boot[int(0.975 * (samples - 1))]
        rows.append(row)
    return rows


def slope(rows: list[dict[str, Any]], model: str) -> float:
    """BLEU change per 10 more source words: least squares over buckets, weighted by sentences."""
    w = [r["sentences"] for r in rows]
    x = [r["mid"] for r in rows]
    y = [r["bleu_tok"][model] for r in rows]
    mx, my = sum(a * b for a, b in zip(w, x)) / sum(w), sum(a * b for a, b in zip(w, y)) / sum(w)
    var = sum(a * (b - mx) ** 2 for a, b in zip(w, x))
    return 10 * sum(a * (b - mx) * (c - my) for a, b, c in zip(w, x, y)) / var if var else math.nan


def figure2(rows: list[dict[str, Any]], models: tuple[str, ...], out: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, m in enumerate(models):
        x = [r["mid"] + (k - 1.5) * 0.6 for r in rows]
        y = [r["bleu_tok"][m] for r in rows]
        err = [[v - r["low"][m] for r, v in zip(rows, y)], [r["high"][m] - v for r, v in zip(rows, y)]]
        ax.errorbar(
            x,
            y,
            yerr=err,
            marker="o" if "search" in m else "s",
            capsize=2,
            linestyle="-" if m.endswith("50") else "--",
            label=TITLES.get(m, m),
        )
    ax.set_xticks(
        [r["mid"] for r in rows],
        [f"{r['lo']}–{r['hi']}\n({r['sentences']})" if r["hi"] else f"{r['lo']}+\n({r['sentences']})" for r in rows],
        fontsize=7,
    )
    ax.set(
        xlabel="source length in words (sentences)",
        ylabel="BLEU (tokenized)",
        title="BLEU by source length, test verses and passages",
    )
    ax.set_ylim(bottom=0)  # BLEU: a range of zeros ran the axis to -0.05
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _f(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def _cell(r: dict[str, Any]) -> str:
    return "–" if math.isnan(r["bleu"]) else f"{r['bleu']:.2f} ± {r['ci95']:.2f}"


def _p(r: dict[str, Any]) -> str:
    if math.isnan(r["bleu"]):
        return "–"
    return "baseline" if r["p_value"] is None else f"{r['p_value']:.4f}"


def trained(ckpt: checkpoint.Checkpoint, gpu: bool = False) -> str:
    """How one run was trained, as its last checkpoint says: updates, batch, optimizer, size,
    and where the budget was minutes, the minutes and the path (precision, update);
    ``gpu``: it trained on a GPU, where TF32 applies."""
    cfg, progress = ckpt.training.config, ckpt.training.progress
    batch = f"{cfg.max_tokens:,} target tokens" if cfg.max_tokens else f"{cfg.batch_size} pairs"
    text = f"{progress.step:,} updates of {batch}, {cfg.optimizer} {cfg.lr:g}, {ckpt.model.hidden} hidden units"
    if cfg.max_minutes:
        gpu = gpu and cfg.device != "cpu"  # the record says a GPU was there, not that the run used it
        if cfg.cuda_graphs and gpu:  # elsewhere its padded update runs eagerly
            step = "the whole update as CUDA graphs" + (" with the hand-written passes" if cfg.fused_steps else "")
        elif cfg.compile:
            step = "compiled as CUDA graphs" if cfg.compile_mode == "reduce-overhead" else "compiled"
        else:
            step = "eager"
        precision = "bf16" if cfg.bf16 else "TF32" if gpu and cfg.tf32 else "fp32"
        text += f", {progress.seconds / 60:.1f} minutes, {precision}, {step}"
    return text


def budget(runs: Path, models: tuple[str, ...]) -> str:
    """How the runs were trained, read from their last checkpoints and machine records."""
    seen = {m: trained(checkpoint.load(runs / m / "last.pt"), bool(_recorded(runs / m).get("gpu"))) for m in models}
    kinds = set(seen.values())
    return f"{kinds.pop()} each" if len(kinds) == 1 else "; ".join(f"{TITLES.get(m, m)}: {v}" for m, v in seen.items())


def _recorded(run: Path) -> dict[str, Any]:
    """The machine a run trained on (``machine.json``), or nothing where it is missing."""
    found = run / MACHINE
    return json.loads(found.read_text()) if found.exists() else {}


def _machine(runs: Path, models: tuple[str, ...]) -> str:
    """Where the runs trained, as the first one recorded it (``machine.json``)."""
    found = _recorded(runs / models[0])
    return f" Trained on: {describe(found)}." if found else ""


def write_report(
    runs: Path,
    raw: Path,
    vocab_words: Path,
    models: tuple[str, ...],
    samples: int,
    beam: int,
    made_by: str = "make paper",
) -> Path:
    order = [BASELINE, *(m for m in models if m != BASELINE)] if BASELINE in models else list(models)
    trained = budget(runs, models)
    data = {name: _texts(raw, runs, name, models) for name in SETS}
    lines = [
        "# RNNsearch against RNNencdec on the Bible corpus",
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M')} by `{made_by}`: {len(models)} systems, "
        f"{trained}.{_machine(runs, models)} Every figure below is computed from this run's translations "
        f"(beam {beam}) against Segond.",
        "",
    ]
    tables = {}
    for name in SETS:
        d = data[name]
        keep = no_unk_indices(vocab_words, d["sources"], d["refs"])
        tables[name] = table1(d, keep, samples, order)
    lines += [
        "## Table 1: BLEU",
        "",
        f"BLEU ± the half-width of its 95% bootstrap interval ({samples} resamples); p: paired bootstrap "
        f"against {TITLES.get(order[0], order[0])}. No UNK: sentences with no word outside the word lists of "
        f"`{vocab_words}`, on either side ({_list_sizes(vocab_words)}; the paper's lists have 30,000).",
        "",
    ]
    for name, label in SETS.items():
        t = tables[name]
        lines += [
            f"**{label}** ({len(data[name]['sources'])} sentences; No UNK: {t['no_unk']['sentences']})",
            "",
            "| Model | All, tokenized | p | All, sacreBLEU | p | No UNK, tokenized | p | No UNK, sacreBLEU | p |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m in order:
            a, n = t["all"], t["no_unk"]
            lines.append(
                f"| {TITLES.get(m, m)} | {_cell(a['bleu_tok'][m])} | {_p(a['bleu_tok'][m])} | "
                f"{_cell(a['bleu'][m])} | {_p(a['bleu'][m])} | {_cell(n['bleu_tok'][m])} | "
                f"{_p(n['bleu_tok'][m])} | {_cell(n['bleu'][m])} | {_p(n['bleu'][m])} |"
            )
        lines += ["", f"sacreBLEU: `{t['all']['signature']}`; tokenized: `{t['all']['signature_tok']}`", ""]
    pooled_lengths = data["test"]["lengths"] + data["test-long"]["lengths"]
    pooled = {m: _concat(data["test"]["texts"][m], data["test-long"]["texts"][m]) for m in models}
    rows = bucket_rows(pooled_lengths, pooled, 10, 80, max(samples // 5, 100))
    figure2(rows, models, runs / "fig2-bleu-by-length.png")
    lines += [
        "## Figure 2: BLEU by source length",
        "",
        "![BLEU by length](fig2-bleu-by-length.png)",
        "",
        "Tokenized BLEU per bucket of source length (Moses tokens), the test verses and passages "
        "together; error bars: 2.5–97.5 percentiles of bootstrap resamples within the bucket. Slope: "
        "least-squares change of BLEU per 10 more words, buckets weighted by their sentences.",
        "",
        "| words | sentences | " + " | ".join(TITLES.get(m, m) for m in models) + " |",
        "|---|---|" + "---|" * len(models),
    ]
    for r in rows:
        span = f"{r['lo']}–{r['hi']}" if r["hi"] else f"{r['lo']}+"
        lines.append(f"| {span} | {r['sentences']} | " + " | ".join(_f(r["bleu_tok"][m]) for m in models) + " |")
    lines.append("| **slope per 10 words** | | " + " | ".join(_f(slope(rows, m)) for m in models) + " |")
    lines += _figure3(runs, models, data, vocab_words)
    with atomic_write(runs / "table1.json") as fh:  # Table 1's figures, for results/ (make paper)
        fh.write(json.dumps(tables) + "\n")
    out = runs / "report.md"
    with atomic_write(out) as fh:
        fh.write("\n".join(lines) + "\n")
    return out


def _list_sizes(vocab_words: Path) -> str:
    """'lists of 30,000 words' (or 'of 2,000 and 1,900 words'): the sizes of the lists that define
    the No-UNK subset, special tokens included as build-vocab's --size counts them."""
    from nmtkit import checkpoint
    from nmtkit.data.sides import Sides

    sides = Sides.from_vocab_dir(vocab_words) if vocab_words.is_dir() else checkpoint.load(vocab_words).text.sides()
    sizes = sorted({len(sides.src.vocab), len(sides.tgt.vocab)}, reverse=True)
    return f"lists of {' and '.join(f'{n:,}' for n in sizes)} words"


def _figure3(runs: Path, models: tuple[str, ...], data: dict[str, Any], vocab_words: Path) -> list[str]:
    """Figure 3's section: the attention of an RNNsearch on three short verses and a long passage."""
    attention = "rnnsearch-50" if "rnnsearch-50" in models else next((m for m in models if "search" in m), None)
    if not attention:
        return []
    lines: list[str] = []
    d = data["test"]
    clean = set(no_unk_indices(vocab_words, d["sources"], d["refs"]))
    fits = [i for i in range(len(d["sources"])) if 10 <= d["lengths"][i] <= 20]
    short = [i + 1 for i in fits if i in clean][:3]
    chosen = "the first with 10 to 20 words and no unknown word"
    if not short:  # a corpus too small to have one: say so under the picture
        short, chosen = (
            [i + 1 for i in (fits or range(len(d["sources"])))][:3],
            "none has 10 to 20 words and no unknown word; the first of 10 to 20 words",
        )
    lengths = data["test-long"]["lengths"]
    long = max((i for i, n in enumerate(lengths) if n <= 80), key=lambda i: lengths[i], default=None)
    lines += ["", f"## Figure 3: alignments of {TITLES.get(attention, attention)}", ""]
    pictures = plot(from_alignment_file(runs / attention / "test.align", short), runs / "fig3-align.png")
    if long is not None:
        pictures += plot(from_alignment_file(runs / attention / "test-long.align", [long + 1]), runs / "fig3-long.png")
    lines += [f"![alignment]({p.name})" for p in pictures]
    lines += [
        "",
        f"Test verses {', '.join(map(str, short))} ({chosen}) and passage "
        f"{long + 1 if long is not None else '–'} ({lengths[long] if long is not None else 0} "
        "words). Rows are generated words, columns source words (a word's subword pieces merged, their "
        "weights summed over its source pieces and averaged over its output pieces); white is weight 1.",
        "",
    ]
    return lines


def _concat(a: Any, b: Any) -> Any:
    return Texts(a.hyps + b.hyps, [a.refs[0] + b.refs[0]], a.hyps_tok + b.hyps_tok, [a.refs_tok[0] + b.refs_tok[0]])


@click.group("paper", cls=Group)
def main() -> None:
    """The Bible study of make paper: its long test set and its report."""


@main.command()
@click.argument("raw", type=click.Path(exists=True, file_okay=False, path_type=Path))
def passages(raw: Path) -> None:
    """Write RAW/test-long.* (passages of consecutive test verses) and print their lengths."""
    buckets = write_passages(raw)
    print("test-long: " + ", ".join(f"{k} words: {v}" for k, v in buckets.items()))


@main.command()
@click.option("--runs", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--raw", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option(
    "--no-unk-vocab",
    type=click.Path(exists=True, path_type=Path),
    required=True,
    help="A 30,000-word build-vocab directory, or a checkpoint trained on one: its lists define the No-UNK subset.",
)
@click.option("--models", default=" ".join(MODELS), show_default=True)
@click.option("--samples", type=click.IntRange(10), default=1000, show_default=True)
@click.option("--beam", type=int, default=5, show_default=True, help="The beam the translations used.")
@click.option("--made-by", default="make paper", show_default=True, help="The command the report names.")
def report(runs: Path, raw: Path, no_unk_vocab: Path, models: str, samples: int, beam: int, made_by: str) -> None:
    """Write RUNS/report.md, Figure 2 and Figure 3 from the runs' translations."""
    print(write_report(runs, raw, no_unk_vocab, tuple(models.split()), samples, beam, made_by))


LONG = 60  # words: where under-translation shows (issue: passages over 60 words)


def length_ratio(texts: Any, idx: list[int]) -> float:
    """Words out over words in the reference (Moses tokens), summed over sentences ``idx``."""
    out = sum(len(texts.hyps_tok[i].split()) for i in idx)
    return out / max(sum(len(texts.refs_tok[0][i].split()) for i in idx), 1)


def repeated(texts: Any, idx: list[int], n: int = 4) -> float:
    """The share of the outputs' n-grams (Moses tokens) that repeat an earlier one of the same
    sentence, over sentences ``idx``: a long output can reach the reference's length by looping."""
    grams = [[tuple(t[k : k + n]) for k in range(len(t) - n + 1)] for t in (texts.hyps_tok[i].split() for i in idx)]
    return sum(len(g) - len(set(g)) for g in grams) / max(sum(len(g) for g in grams), 1)


def long_rows(runs: Path, raw: Path, models: tuple[str, ...], width: int = 20) -> list[str]:
    """One table row per model: test sacreBLEU, passages' tokenized BLEU by source length, the
    output/reference length ratio of the passages up to LONG words and over, and how much of the
    output over LONG words repeats itself (:func:`repeated`)."""
    test, long = _texts(raw, runs, "test", models), _texts(raw, runs, "test-long", models)
    buckets = bucket_rows(long["lengths"], long["texts"], width, 4 * width, 10)
    short_idx = [i for i, n in enumerate(long["lengths"]) if n <= LONG]
    long_idx = [i for i, n in enumerate(long["lengths"]) if n > LONG]
    head = " | ".join(f"{r['lo']}–{r['hi'] or ''} ({r['sentences']})" for r in buckets)
    lines = [
        f"| run | test BLEU (tok.) | passages BLEU by source words: {head} | ratio ≤{LONG} ({len(short_idx)}) | "
        f"ratio >{LONG} ({len(long_idx)}) | repeated 4-grams >{LONG} |",
        "|---|---:|" + "---:|" * len(buckets) + "---:|---:|---:|",
    ]
    for m in models:
        bleu = multi_bleu().corpus_score(test["texts"][m].hyps_tok, test["texts"][m].refs_tok).score
        cells = " | ".join(f"{r['bleu_tok'][m]:.2f}" for r in buckets)
        lines.append(
            f"| {m} | {bleu:.2f} | {cells} | {length_ratio(long['texts'][m], short_idx):.2f} | "
            f"{length_ratio(long['texts'][m], long_idx):.2f} | {100 * repeated(long['texts'][m], long_idx):.1f}% |"
        )
    return lines


@main.command("long")
@click.option("--runs", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--raw", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--models", required=True, help="Run names under --runs, space-separated.")
def long_table(runs: Path, raw: Path, models: str) -> None:
    """Print the under-translation table: passages by length, and how long the outputs are."""
    print("\n".join(long_rows(runs, raw, tuple(models.split()))))


@main.command()
@click.argument("arch")
@click.option(
    "--bench",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A gpu-check report.json or bin/bench-gpu's JSON (absent: nothing measured).",
)
def path(arch: str, bench: Path | None) -> None:
    """Print ARCH's fastest training flags on this GPU (one batch for the whole study)."""
    import torch  # here only: the report never needs it

    if torch.cuda.is_available():
        chosen, why = fastest_flags(measured(bench), arch)
    else:
        chosen, why = [], "no CUDA GPU: eager float32 on the CPU"
    click.echo(f"paper: {arch}: {why}", err=True)
    click.echo(" ".join(chosen))


if __name__ == "__main__":
    main()
