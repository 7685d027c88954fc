"""The WMT'14 run's report: its Table 1, Figure 2, Figure 3 and Table 2 beside the paper's.

Every run figure is read from a file the recipe wrote (score JSON, training
metrics, checkpoints, select.json); a missing one is an error, never a blank
or a default (but select.json, which a run on Schwenk's release has not).
The paper's figures are quoted from Bahdanau et al. (2015).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from nmtkit import checkpoint
from nmtkit.align.heatmap import from_alignment_file, plot
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write, read_json
from nmtkit.data.batching import Batches
from nmtkit.data.binarized import Corpus
from nmtkit.selection.settings import COUNT_UNITS
from nmtkit.train import runlog

# Table 1 (BLEU, All / No UNK) and Table 2 (updates ×10⁵, epochs, hours, GPU, train NLL, dev NLL).
PAPER_BLEU = {
    "rnnencdec-30": (13.93, 24.19),
    "rnnsearch-30": (21.50, 31.44),
    "rnnencdec-50": (17.82, 26.71),
    "rnnsearch-50": (26.75, 34.16),
}
PAPER_STATS = {
    "rnnencdec-30": (8.46, 6.4, 109, "TITAN BLACK", 28.1, 53.0),
    "rnnencdec-50": (6.00, 4.5, 108, "Quadro K-6000", 44.0, 43.6),
    "rnnsearch-30": (4.71, 3.6, 113, "TITAN BLACK", 26.7, 47.2),
    "rnnsearch-50": (2.88, 2.2, 111, "Quadro K-6000", 40.7, 38.1),
}
TITLES = {
    "rnnencdec-30": "RNNencdec-30",
    "rnnencdec-50": "RNNencdec-50",
    "rnnsearch-30": "RNNsearch-30",
    "rnnsearch-50": "RNNsearch-50",
}


def _json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise UserError(f"{path}: missing ({what}); run the step that makes it")
    return read_json(path, what)


def _title(name: str) -> str:
    return TITLES.get(name, name)


def _last(entries: list[dict[str, Any]], key: str) -> dict[str, Any]:
    for e in reversed(entries):
        if key in e:
            return dict(e)
    raise UserError(f"training metrics hold no '{key}' entry")


def train_stats(run: Path, data_bin: Path) -> dict[str, Any]:

    trained = checkpoint.load(run / "last.pt").training
    cfg, progress = trained.config, trained.progress
    metrics = runlog.entries(run)
    src, tgt = Corpus(data_bin).split("train")
    max_len = cfg.max_len or 10**9
    pairs = int(np.count_nonzero((src.sizes <= max_len) & (tgt.sizes <= max_len)))
    step = progress.step
    return {
        "updates": step,
        "epochs": _epochs(trained.batches, src.sizes, tgt.sizes, cfg),
        "hours": progress.seconds / 3600,
        "train_nll": _last(metrics, "train_nll")["train_nll"],
        "train_pairs": pairs,
        "batch_size": cfg.batch_size,
        "bf16": cfg.bf16,
    }


def _epochs(position: dict[str, int] | None, src_sizes: Any, tgt_sizes: Any, cfg: Any) -> float | None:
    """The epochs the run went through: those done and the share of the one in progress, counted
    in its own batches (a partial last batch, the length buckets) as training cut them."""
    if position is None:
        return None
    batches = Batches(
        src_sizes, tgt_sizes, cfg.batch_size, cfg.pool, cfg.max_len, cfg.seed, cfg.max_tokens, 0, 1, cfg.update_freq
    )
    batches.load_state_dict(position)
    return batches.epoch + batches.index / max(len(batches.epoch_batches(batches.epoch)), 1)


def _searches(runs: Path, models: list[str]) -> str:
    """The translate options each model's test set was translated with (the recipe's
    RUNS/NAME/translate-options), said once where they are the same."""
    said = {
        m: (runs / m / "translate-options").read_text(encoding="utf-8").strip()
        for m in models
        if (runs / m / "translate-options").is_file()
    }
    if not said:
        return "the recipe's options (not recorded)"
    if len(set(said.values())) == 1:
        return f"`{next(iter(said.values()))}`"
    return ", ".join(f"`{options}` ({_title(m)})" for m, options in said.items())


def _f(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def write_report(
    work: Path, runs: Path, models: list[str], data_bin: Path, figure3: list[int], device: str, out: Path
) -> None:
    scores = {m: _json(runs / m / "score.json", "test BLEU")["systems"][0] for m in models}
    no_unk = {m: _json(runs / m / "score-nounk.json", "No-UNK BLEU")["systems"][0]["no_unk"] for m in models}
    dev = {m: _json(runs / m / "dev-nll.json", "dev NLL")["corpus_nll"] for m in models}
    by_length = _json(work / "by-length.json", "BLEU by length")["by_length"]
    stats = {m: train_stats(runs / m, data_bin) for m in models}
    best = {m: checkpoint.load(runs / m / "best.pt").training.progress.step for m in models}  # what translated
    selection = work / "selected" / "select.json"
    lines = [
        "# WMT'14 English→French: this run beside Bahdanau et al. (2015)",
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M')} by `make reproduce`; every run figure below comes "
        "from this run's files. Paper figures: Tables 1 and 2 of the paper.",
        "",
    ]
    if selection.is_file():
        s = read_json(selection, "selection report")
        in_domain = ", ".join(Path(p).name for p in s["in_domain"])
        lines += [
            f"**Data.** Bilingual Moore–Lewis selection with {in_domain} as in-domain text "
            f"kept {s['kept_pairs']:,} of {s['pairs']:,} pairs ({s['kept_tgt_words']:,} of {s['tgt_words']:,} "
            f"target words in {COUNT_UNITS[s['config']['count']]}; the paper: 348M of 850M words), scoring "
            f"{s['score_words_per_s']:,} words/s of both sides with {s['workers']} worker process(es).",
            "",
        ]
    lines += [
        "## Table 1: BLEU on newstest2014",
        "",
        "All: tokenized BLEU (Moses tokens, as the paper's multi-bleu.perl) and sacreBLEU (detokenized, "
        "13a). No UNK: tokenized BLEU on the sentences with no word outside the shortlists in the source or "
        "the reference, translated with `--no-unk` as in the paper.",
        "",
        "| Model | All, tokenized (run) | All, sacreBLEU (run) | All (paper) | No UNK (run) | No UNK (paper) "
        "| No-UNK sentences |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in models:
        paper = PAPER_BLEU.get(m, (None, None))
        lines.append(
            f"| {_title(m)} | {_f(scores[m]['bleu_tok'])} | {_f(scores[m]['bleu'])} | {_f(paper[0])} | "
            f"{_f(no_unk[m]['bleu_tok'])} | {_f(paper[1])} | {no_unk[m]['sentences']:,} of "
            f"{scores[m]['sentences']:,} |"
        )
    first = scores[models[0]]
    lines += [
        "",
        f"Searched with {_searches(runs, models)}. sacreBLEU's signatures: `{first['bleu_signature']}` "
        f"(sacreBLEU), `{first['bleu_tok_signature']}` (tokenized).",
        "",
        "## Figure 2: BLEU by source sentence length",
        "",
        "![BLEU by length](fig2-bleu-by-length.png)",
        "",
        "Tokenized BLEU (as the paper's) per bucket of source length in Moses tokens.",
        "",
        "| words | sentences | " + " | ".join(_title(m) for m in models) + " |",
        "|---|---|" + "---|" * len(models),
    ]
    for row in by_length["rows"]:
        lines.append(
            f"| {row['lo']}–{row['hi']} | {row['sentences']} | "
            + " | ".join(_f(row["bleu_tok"].get(m)) for m in models)
            + " |"
        )
    attention = [m for m in models if m.startswith("rnnsearch")]
    lines += ["", f"## Figure 3: alignments ({_title(attention[-1]) if attention else 'none'})", ""]
    if attention:
        maps = from_alignment_file(runs / attention[-1] / "test.align", figure3)
        for path in plot(maps, work / "fig3-align.png"):
            lines.append(f"![alignment]({path.name})")
        lines.append("")
        lines.append(
            f"Test sentences {', '.join(map(str, figure3))}: rows are generated words, columns source "
            "words, white is weight 1."
        )
    else:
        lines.append(f"No RNNsearch model among this run's ({', '.join(models)}): only its attention is drawn.")
    lines += [
        "",
        "## Table 2: learning statistics",
        "",
        "NLL: mean negative log-probability per sentence; train NLL is the mean over the last logged "
        "updates, dev NLL is newstest2012+2013 under best.pt, which translated, saved at the update in "
        "brackets (the other columns: the run's last update). Epochs: those the "
        "run finished and the share of the one in progress, in its own batches.",
        "",
        "| Model | Updates (run / paper) | Epochs (run / paper) | Hours (run / paper) | Device (run / paper) "
        "| Train NLL (run / paper) | Dev NLL (run / paper) |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in models:
        st, p = stats[m], PAPER_STATS.get(m, (None,) * 6)
        paper_updates = f"{p[0] * 1e5:,.0f}" if p[0] is not None else "–"
        lines.append(
            f"| {_title(m)} | {st['updates']:,} / {paper_updates} | {_f(st['epochs'], 2)} / {_f(p[1], 1)} | "
            f"{st['hours']:.2f} / {p[2] if p[2] is not None else '–'} | {device} / {p[3] or '–'} | "
            f"{st['train_nll']:.1f} / {_f(p[4], 1)} | {dev[m]['nll']:.1f} ({best[m]:,}) / {_f(p[5], 1)} |"
        )
    lines.append("")
    with atomic_write(out) as fh:
        fh.write("\n".join(lines))
