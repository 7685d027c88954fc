"""Corpus BLEU and chrF through sacreBLEU, with its reproducibility signatures.

Two BLEUs, always labelled, never mixed up:

- ``bleu``: sacreBLEU on detokenised text (13a tokeniser, its signature),
  what users compare today;
- ``bleu_tok``: tokenized BLEU as the paper counts it (multi-bleu.perl):
  hypotheses and references in Moses tokens (sacremoses), scored on those
  tokens as they are, with no smoothing. ``<unk>`` stays one token, as it
  was in the tokenized output the paper scored.

``tokenized=True`` takes files already in Moses tokens: then only the
tokenized BLEU exists. Several reference files score against several
references at once (the Bible test set has three French versions).
``clean`` applies nmtkit's cleaning rules to hypotheses and references
alike, so that scoring does not count, say, verse numbers that the model
was trained never to produce.

Both BLEUs are also given per source-length bucket (the paper's Figure 2)
and on the No-UNK subset (Table 1's second column); paired bootstrap
resampling compares systems (Koehn 2004, sacreBLEU's implementation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..core.errors import UserError
from ..core.files import read_lines
from ..core.settings import RuntimeConfig
from ..data.sides import Sides
from ..text.clean import apply_rules
from ..text.tokenize import MosesText
from .settings import BUCKET_WIDTH

# what each figure is, wherever one is printed
SACREBLEU_LABEL = "sacreBLEU (detokenized, 13a)"
TOKENIZED_LABEL = "tokenized BLEU (Moses tokens, multi-bleu.perl style, as the paper)"
# words the models write that a tokenizer must not split (<unk> would become '< unk >')
_PROTECTED = [r"<unk>"]


def read_cleaned(path: str | Path, clean: tuple[str, ...] = ()) -> list[str]:
    """The lines of a file after the cleaning rules ``clean``; hypotheses and references
    alike go through this, so both sides of a score are normalised the same way."""
    if clean and "whitespace" not in clean:
        clean = (*clean, "whitespace")       # rules leave spaces where they cut; tidy them
    return [apply_rules(line, clean)[0] if clean else line for line in read_lines(path)]


def read_references(refs: Sequence[str | Path], n: int, against: str,
                    clean: tuple[str, ...] = ()) -> list[list[str]]:
    streams = []
    for ref in refs:
        lines = read_cleaned(ref, clean)
        if len(lines) != n:
            raise UserError(f"{ref} has {len(lines)} lines but {against} has {n}")
        streams.append(lines)
    return streams


def language_of(path: str | Path, default: str = "en") -> str:
    """The language code a file name ends with (test.fr → fr), else ``default``."""
    suffix = Path(path).suffix.lstrip(".")
    return suffix if 2 <= len(suffix) <= 3 and suffix.isalpha() else default


def moses_tokens(lines: list[str], lang: str) -> list[str]:
    moses = MosesText(lang, normalize_punct=False)
    return [" ".join(moses.tokenize(line, _PROTECTED)) for line in lines]


def sacre_bleu() -> Any:
    from sacrebleu.metrics.bleu import BLEU
    return BLEU(tokenize="13a")


def multi_bleu() -> Any:
    """BLEU on the tokens as given, unsmoothed: what multi-bleu.perl computes."""
    from sacrebleu.metrics.bleu import BLEU
    return BLEU(tokenize="none", smooth_method="none", force=True)


@dataclass
class Texts:
    """Hypotheses and reference streams, detokenized (None when given as tokens) and in Moses tokens."""

    hyps: list[str] | None
    refs: list[list[str]] | None
    hyps_tok: list[str]
    refs_tok: list[list[str]]

    @classmethod
    def of(cls, hyps: list[str], refs: list[list[str]], tokenized: bool, lang: str | None) -> "Texts":
        if tokenized:
            return cls(None, None, hyps, refs)
        return cls(hyps, refs, moses_tokens(hyps, lang or "en"), [moses_tokens(r, lang or "en") for r in refs])

    def subset(self, keep: Sequence[int]) -> "Texts":
        def pick(lines: list[str]) -> list[str]:
            return [lines[i] for i in keep]
        return Texts(None if self.hyps is None else pick(self.hyps),
                     None if self.refs is None else [pick(r) for r in self.refs],
                     pick(self.hyps_tok), [pick(r) for r in self.refs_tok])

    def bleus(self) -> dict[str, float]:
        """Both BLEUs (only the tokenized one for tokenized input); NaN for no sentence."""
        if not self.hyps_tok:
            return {"bleu_tok": float("nan")} | ({} if self.hyps is None else {"bleu": float("nan")})
        out = {"bleu_tok": multi_bleu().corpus_score(self.hyps_tok, self.refs_tok).score}
        if self.hyps is not None and self.refs is not None:
            out["bleu"] = sacre_bleu().corpus_score(self.hyps, self.refs).score
        return out


def corpus_scores(hyps: list[str], refs: list[list[str]], tokenized: bool = False,
                  lang: str | None = None, texts: Texts | None = None) -> dict[str, Any]:
    """Both BLEUs and chrF of ``hyps`` against the reference streams ``refs`` (each as long as
    ``hyps``); ``lang`` is the language whose Moses tokens the tokenized BLEU counts."""
    from sacrebleu.metrics.chrf import CHRF
    texts = texts or Texts.of(hyps, refs, tokenized, lang)
    tok = multi_bleu()
    t = tok.corpus_score(texts.hyps_tok, texts.refs_tok)
    chrf = CHRF()
    c = chrf.corpus_score(hyps, refs)
    result = {"tokenized": tokenized, "bleu_tok": t.score, "bleu_tok_detail": str(t),
              "bleu_tok_signature": str(tok.get_signature()), "bleu_tok_label": TOKENIZED_LABEL,
              "chrf": c.score, "chrf_signature": str(chrf.get_signature()), "sentences": len(hyps),
              "references": len(refs)}
    if texts.hyps is not None and texts.refs is not None:
        sacre = sacre_bleu()
        b = sacre.corpus_score(texts.hyps, texts.refs)
        result |= {"bleu": b.score, "bleu_detail": str(b), "bleu_signature": str(sacre.get_signature()),
                   "bleu_label": SACREBLEU_LABEL}
    return result


def length_buckets(lengths: list[int], width: int) -> list[tuple[int, int, list[int]]]:
    """Sentences grouped by length: (lo, hi, indices) for lo ≤ length ≤ hi, buckets of ``width``
    words (1–10, 11–20, ... for width 10); empty lines form a bucket of their own."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(0 if n == 0 else (n - 1) // width + 1, []).append(i)
    return [(0, 0, groups[b]) if b == 0 else ((b - 1) * width + 1, b * width, groups[b]) for b in sorted(groups)]


def bleu_by_length(systems: dict[str, Texts], lengths: list[int], width: int) -> list[dict[str, Any]]:
    """One row per source-length bucket: its bounds, sentence count, and each system's BLEUs
    (``bleu``, ``bleu_tok``: {system: value})."""
    rows = []
    for lo, hi, idx in length_buckets(lengths, width):
        row: dict[str, Any] = {"lo": lo, "hi": hi, "sentences": len(idx)}
        for name, texts in systems.items():
            for kind, value in texts.subset(idx).bleus().items():
                row.setdefault(kind, {})[name] = value
        rows.append(row)
    return rows


def no_unk_indices(sides_path: str | Path, sources: list[str], refs: list[list[str]],
                   tokenized: bool = False) -> list[int]:
    """Sentences with no word outside the vocabularies of a checkpoint or build-vocab
    directory, neither in the source nor in any reference (Table 1's "No UNK")."""
    if Path(sides_path).is_dir():
        sides = Sides.from_vocab_dir(sides_path)
    else:
        from .. import checkpoint  # here only: scoring text alone never loads torch
        sides = checkpoint.load(sides_path).text.sides()
    return [i for i, src in enumerate(sources)
            if not sides.src.has_unknown(src, tokenized)
            and not any(sides.tgt.has_unknown(r[i], tokenized) for r in refs)]


def paired_bootstrap(systems: dict[str, list[str]], refs: list[list[str]], samples: int = 1000,
                     tokenized: bool = False) -> dict[str, Any]:
    """Paired bootstrap resampling of every system against the first (the baseline), on
    sacreBLEU (on the multi-bleu-style BLEU for tokenized input): each system's p-value
    against the baseline, and its bootstrap mean with the half-width of its 95% interval."""
    from sacrebleu.significance import PairedTest
    test = PairedTest(list(systems.items()), {"BLEU": multi_bleu() if tokenized else sacre_bleu()}, refs,
                      test_type="bs", n_samples=samples)
    signatures, results = test()
    scored: list[Any] = list(results["BLEU"])        # sacrebleu's Result objects
    rows = [{"system": name, "bleu": r.score, "p_value": r.p_value, "mean": r.mean, "ci95": r.ci}
            for name, r in zip(results["System"], scored)]
    return {"baseline": rows[0]["system"], "samples": samples, "signature": str(signatures["BLEU"]),
            "label": TOKENIZED_LABEL if tokenized else SACREBLEU_LABEL, "systems": rows}


def hypothesis_nll(model_paths: Sequence[str | Path], sources: list[str], hyps: list[str],
                   tokenized: bool = False, runtime: RuntimeConfig | None = None) -> list[float]:
    """Each hypothesis' NLL under the model(s), </s> included: minus translate's score for it."""
    from ..translate.translator import Translator  # here only: scoring text alone never loads torch
    translator = Translator.from_checkpoints(list(model_paths), runtime)
    return [-f.score for f in translator.force(sources, hyps, tokenized)]


def evaluate(hyp_paths: Sequence[str], ref_paths: Sequence[str], names: Sequence[str] = (),
             source: str | None = None, clean: tuple[str, ...] = (), tokenized: bool = False,
             lang: str | None = None, bucket_width: int = 0, no_unk: str | None = None,
             bootstrap: int = 0, model_paths: Sequence[str] = (),
             runtime: RuntimeConfig | None = None) -> dict[str, Any]:
    """Everything ``nmtkit score`` reports on hypothesis files, as one JSON-ready dict."""
    names = list(names) or [str(p) for p in hyp_paths]
    if len(names) != len(hyp_paths):
        raise UserError(f"{len(names)} names for {len(hyp_paths)} hypothesis files")
    systems = {name: read_cleaned(p, clean) for name, p in zip(names, hyp_paths)}
    n = len(next(iter(systems.values())))
    for name, p in zip(names, hyp_paths):
        if len(systems[name]) != n:
            raise UserError(f"{p} has {len(systems[name])} lines but {hyp_paths[0]} has {n}")
    refs = read_references(ref_paths, n, str(hyp_paths[0]), clean)
    sources = list(read_lines(source)) if source else None
    if sources is not None and len(sources) != n:
        raise UserError(f"{source} has {len(sources)} lines but {hyp_paths[0]} has {n}")
    needs_source = [flag for flag, on in (("--by-length", bucket_width), ("--no-unk", no_unk),
                                          ("-m/--model", model_paths)) if on]
    if needs_source and sources is None:
        raise UserError(f"{needs_source[0]} needs the source text: give --source FILE")
    lang = None if tokenized else (lang or language_of(ref_paths[0]))
    result: dict[str, Any] = {"systems": []}
    keep = no_unk_indices(no_unk, sources, refs, tokenized) if no_unk and sources is not None else None
    texts = {name: Texts.of(hyps, refs, tokenized, lang) for name, hyps in systems.items()}
    for (name, hyps), path in zip(systems.items(), hyp_paths):
        entry = {"name": name, "file": str(path), **corpus_scores(hyps, refs, tokenized, lang, texts[name])}
        if keep is not None:
            entry["no_unk"] = {**texts[name].subset(keep).bleus(), "sentences": len(keep)}
        if model_paths and sources is not None:
            nll = hypothesis_nll(model_paths, sources, hyps, tokenized, runtime)
            tokens = sum(len(h.split()) + 1 for h in hyps)
            entry["nll"] = {"per_sentence": sum(nll) / n, "sentences": nll, "per_word": sum(nll) / tokens}
        result["systems"].append(entry)
    if bucket_width and sources is not None:
        src_lang = language_of(source or "", "en")
        lengths = [len(s.split()) for s in (sources if tokenized else moses_tokens(sources, src_lang))]
        result["by_length"] = {"width": bucket_width, "rows": bleu_by_length(texts, lengths, bucket_width)}
    if bootstrap:
        if len(systems) < 2:
            raise UserError("--bootstrap compares systems: give two or more hypothesis files")
        result["bootstrap"] = paired_bootstrap(systems, refs, bootstrap, tokenized)
        if not tokenized:     # the paper's BLEU too, on the same Moses tokens as bleu_tok
            first = next(iter(texts.values()))
            result["bootstrap_tok"] = paired_bootstrap({n: t.hyps_tok for n, t in texts.items()},
                                                       first.refs_tok, bootstrap, tokenized=True)
    return result


def format_report(result: dict[str, Any]) -> str:
    """The human-readable form of ``evaluate``'s result: every BLEU says which it is."""
    lines = []
    for s in result["systems"]:
        lines.append(f"{s['name']}: {s['sentences']} sentences, {s['references']} reference(s)")
        if "bleu" in s:
            lines.append(f"  {SACREBLEU_LABEL}: {s['bleu']:.2f}\n    {s['bleu_detail']}\n    {s['bleu_signature']}")
        lines.append(f"  {TOKENIZED_LABEL}: {s['bleu_tok']:.2f}\n    {s['bleu_tok_detail']}")
        lines.append(f"  chrF: {s['chrf']:.2f}\n    {s['chrf_signature']}")
        if "no_unk" in s:
            u = s["no_unk"]
            lines.append(f"  No-UNK subset ({u['sentences']} sentences): " + _both(u))
        if "nll" in s:
            lines.append(f"  NLL under the model: {s['nll']['per_sentence']:.3f} per sentence, "
                         f"{s['nll']['per_word']:.3f} per output word (</s> counted)")
    if "by_length" in result:
        names = [s["name"] for s in result["systems"]]
        kinds = [k for k in ("bleu", "bleu_tok") if any(k in row for row in result["by_length"]["rows"])]
        for kind in kinds:
            label = SACREBLEU_LABEL if kind == "bleu" else TOKENIZED_LABEL
            lines.append(f"{label} by source length (Moses tokens, buckets of {result['by_length']['width']}):")
            lines.append(f"  {'length':>9} {'sentences':>9}  " + "  ".join(f"{Path(n).name[-14:]:>14}" for n in names))
            for row in result["by_length"]["rows"]:
                span = f"{row['lo']}-{row['hi']}" if row["hi"] else "empty"
                lines.append(f"  {span:>9} {row['sentences']:>9}  " + "  ".join(f"{row[kind][n]:>14.2f}" for n in names))
    for key in ("bootstrap", "bootstrap_tok"):
        if key not in result:
            continue
        b = result[key]
        lines.append(f"paired bootstrap against {b['baseline']} ({b['samples']} samples, {b['label']}):")
        for row in b["systems"]:
            verdict = ("baseline" if row["p_value"] is None else
                       f"p = {row['p_value']:.4f}, {'significant at p < 0.05' if row['p_value'] < 0.05 else 'not significant'}")
            lines.append(f"  {row['system']}: BLEU {row['bleu']:.2f}, 95% CI {row['mean']:.2f} ± {row['ci95']:.2f} "
                         f"({verdict})")
    if "corpus_nll" in result:
        c = result["corpus_nll"]
        lines.append(f"{c['split']}: NLL {c['nll']:.3f} per sentence, {c['nll_token']:.4f} per token, "
                     f"perplexity {c['perplexity']:.2f} ({c['sentences']} sentences, {c['tokens']} tokens "
                     f"with </s>)")
    return "\n".join(lines)


def _both(scores: dict[str, float]) -> str:
    parts = [f"{SACREBLEU_LABEL} {scores['bleu']:.2f}"] if "bleu" in scores else []
    return "  ".join(parts + [f"{TOKENIZED_LABEL} {scores['bleu_tok']:.2f}"])
