"""Paired bootstrap resampling (Koehn 2004) of systems against a baseline, sacreBLEU's own test
(its ``PairedTest``, as ``sacrebleu --paired-bs``): every metric of a report on the same
resamples, and a tie with the baseline reported as no evidence of a difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import UserError
from .metrics import TOK_BLEU, Metrics, key

if TYPE_CHECKING:
    from .score import Texts


def paired_bootstrap(
    systems: dict[str, list[str]],
    refs: list[list[str]],
    samples: int = 1000,
    tokenized: bool = False,
    metrics: Metrics | None = None,
) -> dict[str, Any]:
    """:func:`paired_bootstraps` of sacreBLEU's BLEU (the multi-bleu-style BLEU for tokenized input)."""
    bleu = TOK_BLEU if tokenized else "bleu"
    return paired_bootstraps(systems, refs, [bleu], samples, metrics)[bleu]


def paired_bootstraps(
    systems: dict[str, list[str]],
    refs: list[list[str]],
    names: Sequence[str],
    samples: int = 1000,
    metrics: Metrics | None = None,
) -> dict[str, dict[str, Any]]:
    """Paired bootstrap resampling of every system against the first (the baseline) by each
    metric of ``names``, on the same resamples, as sacrebleu --paired-bs: by metric, each system's
    score (``bleu`` too, for a BLEU), p-value against the baseline, and bootstrap mean with the
    half-width of its 95% interval."""
    from sacrebleu.significance import PairedTest

    metrics = metrics or Metrics()
    built = {name: metrics.build(name) for name in names}
    test = PairedTest(list(systems.items()), built, refs, test_type="bs", n_samples=samples)
    signatures, results = test()  # both by sacreBLEU's names of the metrics (BLEU, chrF2), in their order
    out = {}
    columns: list[list[Any]] = list(results.values())[1:]  # sacreBLEU's Result objects, a list a metric
    for name, scored, signature in zip(names, columns, signatures.values(), strict=True):
        rows = [  # chrF's mean and interval come as numpy's float32, which JSON does not take
            {
                "system": system,
                "score": r.score,
                "p_value": _p_value(r, scored[0]),
                "mean": float(r.mean),
                "ci95": float(r.ci),
            }
            for system, r in zip(results["System"], scored)
        ]
        if name in ("bleu", TOK_BLEU):  # 1.1's JSON had BLEU's alone, its figure so named
            rows = [row | {"bleu": row["score"]} for row in rows]
        out[name] = {
            "baseline": rows[0]["system"],
            "samples": samples,
            "metric": name,
            "signature": str(signature),
            "label": metrics.label(name),
            "systems": rows,
        }
    return out


def _p_value(result: Any, baseline: Any) -> float | None:
    """sacreBLEU's p-value, but 1 where the system's score equals the baseline's (the same output, or
    another that ties by chance): its test counts the resamples whose centred difference exceeds
    the real one, strictly, so that a tie whose resamples all tie too (the same output, or BLEU 0
    for both) came out as 1/(samples+1), "significant". No difference is no evidence of one."""
    if result is baseline:
        return None
    return 1.0 if result.score == baseline.score else float(result.p_value)


def bootstraps(
    systems: dict[str, list[str]],
    refs: list[list[str]],
    texts: dict[str, Texts],
    samples: int,
    tokenized: bool,
    metrics: Metrics,
) -> dict[str, Any]:
    """Paired bootstrap on both BLEUs, as the other analyses give them (only the tokenized one
    for tokenized input), and on each other metric asked for: ``bootstrap`` (sacreBLEU's BLEU,
    else the tokenized), ``bootstrap_tok`` (the paper's BLEU, on the same Moses tokens as
    bleu_tok) and ``bootstrap_chrf``, ``bootstrap_ter``."""
    if len(systems) < 2:
        raise UserError("--bootstrap compares systems: give two or more hypothesis files")
    bleu = TOK_BLEU if tokenized else "bleu"
    others = [name for name in metrics.chosen(tokenized) if name not in ("bleu", TOK_BLEU)]
    found = paired_bootstraps(systems, refs, [bleu, *others], samples, metrics)
    out = {"bootstrap": found[bleu]}
    if not tokenized:
        first = next(iter(texts.values()))
        tokens = {n: t.hyps_tok for n, t in texts.items()}
        out["bootstrap_tok"] = paired_bootstrap(tokens, first.refs_tok, samples, True, metrics)
    return out | {f"bootstrap_{key(name)}": found[name] for name in others}
