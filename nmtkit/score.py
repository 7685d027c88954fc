"""Corpus BLEU and chrF through sacreBLEU, with its reproducibility signatures.

Detokenised text with sacreBLEU's 13a tokeniser is what users compare
today; the paper reports BLEU on Moses tokens (multi-bleu.perl). Both are
given for detokenised hypotheses: ``bleu`` (sacreBLEU 13a) and ``bleu_tok``
(hypotheses and references Moses-tokenised with sacremoses, then scored
with ``tok:none``). ``tokenized=True`` takes files already in Moses tokens
and scores them as they are. Several reference files score against several
references at once (the Bible test set has three French versions).
``clean`` applies nmtkit's cleaning rules to the references, so that
scoring does not count, say, verse numbers that the model was trained
never to produce.

Also here: BLEU per source-length bucket (the paper's Figure 2), the No-UNK
subset (Table 1's second column) and paired bootstrap resampling between
systems (Koehn 2004, sacreBLEU's implementation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .errors import UserError
from .files import read_lines
from .text.clean import apply_rules


def read_references(refs: Sequence[str | Path], n: int, against: str,
                    clean: tuple[str, ...] = ()) -> list[list[str]]:
    if clean and "whitespace" not in clean:
        clean = (*clean, "whitespace")       # rules leave spaces where they cut; tidy them
    streams = []
    for ref in refs:
        lines = [apply_rules(line, clean)[0] if clean else line for line in read_lines(ref)]
        if len(lines) != n:
            raise UserError(f"{ref} has {len(lines)} lines but {against} has {n}")
        streams.append(lines)
    return streams


def language_of(path: str | Path, default: str = "en") -> str:
    """The language code a file name ends with (test.fr → fr), else ``default``."""
    suffix = Path(path).suffix.lstrip(".")
    return suffix if 2 <= len(suffix) <= 3 and suffix.isalpha() else default


def moses_tokens(lines: list[str], lang: str) -> list[str]:
    from .text.tokenize import MosesText
    moses = MosesText(lang, normalize_punct=False)
    return [" ".join(moses.tokenize(line)) for line in lines]


def corpus_scores(hyps: list[str], refs: list[list[str]], tokenized: bool = False,
                  lang: str | None = None) -> dict[str, Any]:
    """BLEU and chrF of ``hyps`` against the reference streams ``refs`` (each as long as ``hyps``);
    with ``lang``, also BLEU on Moses tokens of that language (the paper's tokenized BLEU)."""
    from sacrebleu.metrics import BLEU, CHRF
    bleu = BLEU(tokenize="none" if tokenized else "13a", force=tokenized)
    chrf = CHRF()
    b, c = bleu.corpus_score(hyps, refs), chrf.corpus_score(hyps, refs)
    result = {"tokenized": tokenized, "bleu": b.score, "bleu_detail": str(b), "bleu_signature": str(bleu.get_signature()),
              "chrf": c.score, "chrf_signature": str(chrf.get_signature()), "sentences": len(hyps),
              "references": len(refs)}
    if tokenized:
        result["bleu_tok"] = b.score
    elif lang:
        tok = BLEU(tokenize="none", force=True)
        result["bleu_tok"] = tok.corpus_score(moses_tokens(hyps, lang),
                                              [moses_tokens(r, lang) for r in refs]).score
    return result


def subset_bleu(hyps: list[str], refs: list[list[str]], keep: Sequence[int], tokenized: bool) -> float:
    from sacrebleu.metrics import BLEU
    if not keep:
        return float("nan")
    return BLEU(tokenize="none" if tokenized else "13a", force=tokenized).corpus_score(
        [hyps[i] for i in keep], [[r[i] for i in keep] for r in refs]).score


def length_buckets(lengths: list[int], width: int) -> list[tuple[int, int, list[int]]]:
    """Sentences grouped by length: (lo, hi, indices) for lo ≤ length ≤ hi, buckets of ``width``
    words (1–10, 11–20, ... for width 10); empty lines form a bucket of their own."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(0 if n == 0 else (n - 1) // width + 1, []).append(i)
    return [(0, 0, groups[b]) if b == 0 else ((b - 1) * width + 1, b * width, groups[b]) for b in sorted(groups)]


def bleu_by_length(systems: dict[str, list[str]], refs: list[list[str]], lengths: list[int], width: int,
                   tokenized: bool = False) -> list[dict[str, Any]]:
    """One row per source-length bucket: its bounds, sentence count, and each system's BLEU."""
    return [{"lo": lo, "hi": hi, "sentences": len(idx),
             "bleu": {name: subset_bleu(hyps, refs, idx, tokenized) for name, hyps in systems.items()}}
            for lo, hi, idx in length_buckets(lengths, width)]


def no_unk_indices(sides_path: str | Path, sources: list[str], refs: list[list[str]],
                   tokenized: bool = False) -> list[int]:
    """Sentences with no word outside the vocabularies of a checkpoint or build-vocab
    directory, neither in the source nor in any reference (Table 1's "No UNK")."""
    from .text.sides import Sides
    sides = Sides.load(sides_path)
    return [i for i, src in enumerate(sources)
            if not sides.src.has_unknown(src, tokenized)
            and not any(sides.tgt.has_unknown(r[i], tokenized) for r in refs)]


def paired_bootstrap(systems: dict[str, list[str]], refs: list[list[str]], samples: int = 1000,
                     tokenized: bool = False) -> dict[str, Any]:
    """Paired bootstrap resampling of every system against the first (the baseline)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest
    test = PairedTest(list(systems.items()), {"BLEU": BLEU(tokenize="none" if tokenized else "13a", force=tokenized)}, refs,
                      test_type="bs", n_samples=samples)
    signatures, results = test()
    rows = [{"system": name, "bleu": r.score, "p_value": r.p_value}
            for name, r in zip(results["System"], results["BLEU"])]
    return {"baseline": rows[0]["system"], "samples": samples, "signature": str(signatures["BLEU"]),
            "systems": rows}


def hypothesis_nll(model_paths: Sequence[str | Path], sources: list[str], hyps: list[str],
                   tokenized: bool = False, device: str | None = None) -> list[float]:
    """Each hypothesis' NLL under the model(s), </s> included: minus translate's score for it."""
    from .translate import Translator
    translator = Translator.from_checkpoints(list(model_paths), device)
    return [-f.score for f in translator.force(sources, hyps, tokenized)]


def evaluate(hyp_paths: Sequence[str], ref_paths: Sequence[str], names: Sequence[str] = (),
             source: str | None = None, clean: tuple[str, ...] = (), tokenized: bool = False,
             lang: str | None = None, bucket_width: int = 0, no_unk: str | None = None,
             bootstrap: int = 0, model_paths: Sequence[str] = ()) -> dict[str, Any]:
    """Everything ``nmtkit score`` reports on hypothesis files, as one JSON-ready dict."""
    names = list(names) or [str(p) for p in hyp_paths]
    if len(names) != len(hyp_paths):
        raise UserError(f"{len(names)} names for {len(hyp_paths)} hypothesis files")
    systems = {name: list(read_lines(p)) for name, p in zip(names, hyp_paths)}
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
    for (name, hyps), path in zip(systems.items(), hyp_paths):
        entry = {"name": name, "file": str(path), **corpus_scores(hyps, refs, tokenized, lang)}
        if keep is not None:
            entry["no_unk"] = {"bleu": subset_bleu(hyps, refs, keep, tokenized), "sentences": len(keep)}
        if model_paths and sources is not None:
            nll = hypothesis_nll(model_paths, sources, hyps, tokenized)
            tokens = sum(len(h.split()) + 1 for h in hyps)
            entry["nll"] = {"per_sentence": sum(nll) / n, "sentences": nll, "per_word": sum(nll) / tokens}
        result["systems"].append(entry)
    if bucket_width and sources is not None:
        src_lang = language_of(source or "", "en")
        lengths = [len(s.split()) for s in (sources if tokenized else moses_tokens(sources, src_lang))]
        result["by_length"] = {"width": bucket_width,
                               "rows": bleu_by_length(systems, refs, lengths, bucket_width, tokenized)}
    if bootstrap:
        if len(systems) < 2:
            raise UserError("--bootstrap compares systems: give two or more hypothesis files")
        result["bootstrap"] = paired_bootstrap(systems, refs, bootstrap, tokenized)
    return result


def format_report(result: dict[str, Any]) -> str:
    """The human-readable form of ``evaluate``'s result."""
    lines = []
    for s in result["systems"]:
        if s["tokenized"]:
            head = f"{s['name']}: BLEU {s['bleu']:.2f} (Moses tokens as given, tok:none)"
        else:
            head = f"{s['name']}: BLEU {s['bleu']:.2f} (sacreBLEU 13a, detokenized)"
            if "bleu_tok" in s:
                head += f"  tokenized BLEU {s['bleu_tok']:.2f} (Moses tokens, as the paper)"
        lines.append(head + f"  chrF {s['chrf']:.2f}  ({s['sentences']} sentences, {s['references']} reference(s))")
        lines.append(f"  {s['bleu_detail']}\n  {s['bleu_signature']}\n  {s['chrf_signature']}")
        if "no_unk" in s:
            lines.append(f"  No-UNK subset: BLEU {s['no_unk']['bleu']:.2f} on {s['no_unk']['sentences']} sentences")
        if "nll" in s:
            lines.append(f"  NLL under the model: {s['nll']['per_sentence']:.3f} per sentence, "
                         f"{s['nll']['per_word']:.3f} per output word (</s> counted)")
    if "by_length" in result:
        names = [s["name"] for s in result["systems"]]
        lines.append(f"BLEU by source length (Moses tokens, buckets of {result['by_length']['width']}):")
        lines.append(f"  {'length':>9} {'sentences':>9}  " + "  ".join(f"{Path(n).name[-14:]:>14}" for n in names))
        for row in result["by_length"]["rows"]:
            label = f"{row['lo']}-{row['hi']}" if row["hi"] else "empty"
            lines.append(f"  {label:>9} {row['sentences']:>9}  " + "  ".join(f"{row['bleu'][n]:>14.2f}" for n in names))
    if "bootstrap" in result:
        b = result["bootstrap"]
        lines.append(f"paired bootstrap against {b['baseline']} ({b['samples']} samples):")
        for row in b["systems"][1:]:
            verdict = "significant at p < 0.05" if row["p_value"] < 0.05 else "not significant"
            lines.append(f"  {row['system']}: BLEU {row['bleu']:.2f}  p = {row['p_value']:.4f} ({verdict})")
    if "corpus_nll" in result:
        c = result["corpus_nll"]
        lines.append(f"{c['split']}: NLL {c['nll']:.3f} per sentence, {c['nll_token']:.4f} per token, "
                     f"perplexity {c['perplexity']:.2f} ({c['sentences']} sentences, {c['tokens']} tokens "
                     f"with </s>)")
    return "\n".join(lines)
