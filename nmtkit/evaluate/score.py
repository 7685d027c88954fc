"""Corpus BLEU, chrF and TER through sacreBLEU, with its reproducibility signatures.

Two BLEUs, always labelled, never mixed up:

- ``bleu``: sacreBLEU on detokenised text (13a tokeniser unless ``--tokenize``
  says another, its signature), what users compare today;
- ``bleu_tok``: tokenized BLEU as the paper counts it (multi-bleu.perl):
  hypotheses and references in Moses tokens (sacremoses), scored on those
  tokens as they are, with no smoothing. ``<unk>`` stays one token, as it
  was in the tokenized output the paper scored.

The metrics reported, and sacreBLEU's options for them, are a
:class:`~.metrics.Metrics`: by default sacreBLEU's BLEU and chrF (``PAPER``
adds the tokenized BLEU, 1.0's default). ``tokenized=True`` takes files already in Moses tokens: then
the tokenized BLEU is the default one. Several reference files score against
several references at once (the Bible test set has three French versions).
``clean`` applies nmtkit's cleaning rules to hypotheses and references
alike, so that scoring does not count, say, verse numbers that the model
was trained never to produce.

Both BLEUs are also given per source-length bucket (the paper's Figure 2)
and on the No-UNK subset (Table 1's second column); paired bootstrap
resampling compares systems (Koehn 2004, sacreBLEU's implementation).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.console import short_names
from ..core.errors import UserError
from ..core.files import display_name, read_lines
from ..core.settings import RuntimeConfig
from ..core.wording import counted
from ..text.clean import apply_rules
from .metrics import SACREBLEU_TEMPLATE, TOK_BLEU, TOKENIZED_TEMPLATE, Metrics, SentenceScores
from .significance import bootstraps

# what each BLEU is under sacreBLEU's defaults (Metrics.label says it under other options)
SACREBLEU_LABEL = SACREBLEU_TEMPLATE.format(tok="13a", case="")
TOKENIZED_LABEL = TOKENIZED_TEMPLATE.format(case="")
# words the models write that a tokenizer must not split (<unk> would become '< unk >')
_PROTECTED = [r"<unk>"]
Streams = tuple[list[str], list[list[str]]]  # hypotheses and reference streams


def read_cleaned(path: str | Path, clean: tuple[str, ...] = ()) -> list[str]:
    """The lines of a file after the cleaning rules ``clean``; hypotheses and references
    alike go through this, so both sides of a score are normalised the same way."""
    if clean and "whitespace" not in clean:
        clean = (*clean, "whitespace")  # rules leave spaces where they cut; tidy them
    return [apply_rules(line, clean)[0] if clean else line for line in read_lines(path)]


def read_references(refs: Sequence[str | Path], n: int, against: str, clean: tuple[str, ...] = ()) -> list[list[str]]:
    """Each reference file's lines, as many as ``against``'s ``n``. A file given twice would count
    as two references (sacreBLEU's nrefs) and one of blank lines scores every system 0: both are
    a command line's slip, refused."""
    seen: dict[str, str | Path] = {}
    streams = []
    for ref in refs:
        same = seen.get(key := _same_file_key(ref))
        if same is not None:
            raise UserError(
                f"-r {ref} is given twice{'' if str(same) == str(ref) else f' (as {same})'}: give each reference once"
            )
        seen[key] = ref
        lines = read_cleaned(ref, clean)
        if len(lines) != n:
            raise UserError(
                f"{display_name(ref)} has {counted(len(lines), 'line')} but {display_name(against)} has {n}"
            )
        if lines and not any(line.strip() for line in lines):
            raise UserError(f"reference {ref} has only blank lines: every system would score 0")
        streams.append(lines)
    return streams


def _same_file_key(path: str | Path) -> str:
    """What names one file however it is spelled: its device and inode, or '-' for stdin."""
    if str(path) == "-":
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return str(path)  # read_lines says what is wrong with it
    return f"{st.st_dev}:{st.st_ino}"


def read_systems(
    hyp_paths: Sequence[str], ref_paths: Sequence[str], names: Sequence[str] = (), clean: tuple[str, ...] = ()
) -> tuple[dict[str, list[str]], list[list[str]]]:
    """Each hypothesis file's lines under its name, and the reference streams, all as long."""
    given = bool(names)
    names = list(names) or [str(p) for p in hyp_paths]
    if len(names) != len(hyp_paths):
        raise UserError(f"{len(names)} names for {len(hyp_paths)} hypothesis files")
    twice = next((name for k, name in enumerate(names) if name in names[:k]), None)
    if twice is not None:  # one would stand for both, the other's scores lost
        raise UserError(f"--name {twice} is given twice" if given else f"{twice} is given twice: give each system once")
    systems = {name: read_cleaned(p, clean) for name, p in zip(names, hyp_paths)}
    n = len(next(iter(systems.values())))
    for name, p in zip(names, hyp_paths):
        if len(systems[name]) != n:
            shown = display_name(p), display_name(hyp_paths[0])
            raise UserError(f"{shown[0]} has {counted(len(systems[name]), 'line')} but {shown[1]} has {n}")
    return systems, read_references(ref_paths, n, str(hyp_paths[0]), clean)


# Endings of two or three letters that name what a file holds, not its language.
_NOT_LANGUAGES = frozenset("txt tok ref hyp out src tgt trg sys tc lc raw bpe log tsv csv sgm".split())


def language_of(path: str | Path, default: str = "en") -> str:
    """The language code a file name ends with (test.fr → fr), else ``default``."""
    suffix = Path(path).suffix.lstrip(".").lower()
    return suffix if 2 <= len(suffix) <= 3 and suffix.isalpha() and suffix not in _NOT_LANGUAGES else default


def target_language(
    ref_paths: Sequence[str], tokenized: bool, lang: str | None, needed_by: str = "the tokenized BLEU"
) -> str | None:
    """The language whose Moses tokens the tokenized BLEU counts (None: the files are tokens). A
    reference whose name gives none is refused where the Moses tokens are needed (``needed_by``
    says what needs them; "": nothing): another language's rules would count other tokens without
    a word."""
    if tokenized or lang:
        return None if tokenized else lang
    named = next((code for code in (language_of(path, "") for path in ref_paths) if code), "")
    if not named and needed_by:
        raise UserError(
            f"-r {ref_paths[0]}: {needed_by} tokenizes with the target language's Moses rules, which no "
            "reference's name gives (as a name ending in .fr would): give --lang, or --tokenized for text "
            "that is Moses tokens already"
        )
    return named or "en"


def moses_tokens(lines: list[str], lang: str) -> list[str]:
    from ..text.settings import moses_language
    from ..text.tokenize import MosesText  # here: sacremoses takes 0.15 s to load, for the tokenized BLEU only

    moses = MosesText(moses_language(lang), normalize_punct=False)
    return [" ".join(moses.tokenize(line, _PROTECTED)) for line in lines]


def sacre_bleu() -> Any:
    return Metrics().bleu()


def multi_bleu() -> Any:
    """BLEU on the tokens as given, unsmoothed: what multi-bleu.perl computes."""
    return Metrics().bleu_tok()


@dataclass
class Texts:
    """Hypotheses and reference streams, detokenized (None when given as tokens) and in Moses tokens,
    with the options their BLEUs take (None: sacreBLEU's defaults)."""

    hyps: list[str] | None
    refs: list[list[str]] | None
    hyps_tok: list[str]
    refs_tok: list[list[str]]
    metrics: Metrics | None = None

    @classmethod
    def of(
        cls, hyps: list[str], refs: list[list[str]], tokenized: bool, lang: str | None, metrics: Metrics | None = None
    ) -> Texts:
        if tokenized:
            return cls(None, None, hyps, refs, metrics)
        return cls(hyps, refs, moses_tokens(hyps, lang or "en"), [moses_tokens(r, lang or "en") for r in refs], metrics)

    def subset(self, keep: Sequence[int]) -> Texts:
        def pick(lines: list[str]) -> list[str]:
            return [lines[i] for i in keep]

        return Texts(
            None if self.hyps is None else pick(self.hyps),
            None if self.refs is None else [pick(r) for r in self.refs],
            pick(self.hyps_tok),
            [pick(r) for r in self.refs_tok],
            self.metrics,
        )

    def bleus(self) -> dict[str, float]:
        """Both BLEUs (only the tokenized one for tokenized input); NaN for no sentence."""
        if not self.hyps_tok:
            return {"bleu_tok": float("nan")} | ({} if self.hyps is None else {"bleu": float("nan")})
        metrics = self.metrics or Metrics()
        out = {"bleu_tok": metrics.bleu_tok().corpus_score(self.hyps_tok, self.refs_tok).score}
        if self.hyps is not None and self.refs is not None:
            out["bleu"] = metrics.bleu().corpus_score(self.hyps, self.refs).score
        return out


def metric_texts(
    chosen: Sequence[str],
    hyps: list[str],
    refs: list[list[str]],
    tokenized: bool = False,
    lang: str | None = None,
    texts: Texts | None = None,
) -> dict[str, Streams]:
    """What each metric scores: Moses tokens for the tokenized BLEU, tokenized only when it is
    asked for (sacremoses alone takes longer to load than sacreBLEU scores a test set), and for
    sacreBLEU's own metrics the lines as given, which they tokenize themselves."""
    if TOK_BLEU in chosen and texts is None:
        texts = Texts.of(hyps, refs, tokenized, lang)
    return {m: (texts.hyps_tok, texts.refs_tok) if m == TOK_BLEU and texts else (hyps, refs) for m in chosen}


def corpus_scores(
    hyps: list[str],
    refs: list[list[str]],
    tokenized: bool = False,
    lang: str | None = None,
    texts: Texts | None = None,
    metrics: Metrics | None = None,
) -> dict[str, Any]:
    """Each metric's figure, sacreBLEU's line, signature and label, for ``hyps`` against the
    reference streams ``refs`` (each as long as ``hyps``); ``lang`` is the language whose Moses
    tokens the tokenized BLEU counts."""
    if isinstance(refs, str) or not all(isinstance(r, (list, tuple)) for r in refs):
        raise TypeError("refs: reference streams, each a list of lines as long as hyps ([refs] for one)")
    if not hyps or any(len(r) != len(hyps) for r in refs):
        lengths = ", ".join(f"{len(r):,}" for r in refs)
        raise UserError(f"{len(hyps):,} hypotheses and reference streams of {lengths} lines: one a hypothesis")
    metrics = metrics or Metrics()
    result: dict[str, Any] = {"tokenized": tokenized, "sentences": len(hyps), "references": len(refs)}
    for name, (h, r) in metric_texts(metrics.chosen(tokenized), hyps, refs, tokenized, lang, texts).items():
        result |= metrics.corpus_fields(name, h, r)
    return result


def sentence_scores(
    hyp_paths: Sequence[str],
    ref_paths: Sequence[str],
    names: Sequence[str] = (),
    clean: tuple[str, ...] = (),
    tokenized: bool = False,
    lang: str | None = None,
    metrics: Metrics | None = None,
) -> SentenceScores:
    """Each sentence of one hypothesis file by each metric, as sacrebleu --sentence-level scores it."""
    if len(hyp_paths) != 1:
        raise UserError("--sentence-level scores one hypothesis file: give one")
    metrics = replace(metrics or Metrics(), sentence_level=True)
    systems, refs = read_systems(hyp_paths, ref_paths, names, clean)
    ((name, hyps),) = systems.items()
    chosen = metrics.chosen(tokenized)
    needed_by = "the tokenized BLEU" if TOK_BLEU in chosen else ""
    texts = metric_texts(chosen, hyps, refs, tokenized, target_language(ref_paths, tokenized, lang, needed_by))
    return SentenceScores.of(name, str(hyp_paths[0]), texts, metrics)


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


def no_unk_indices(
    sides_path: str | Path,
    sources: list[str],
    refs: list[list[str]],
    tokenized: bool = False,
    named: Sequence[tuple[str | Path, str]] = (),
) -> list[int]:
    """Sentences with no word outside the vocabularies of a checkpoint or build-vocab
    directory, neither in the source nor in any reference (Table 1's "No UNK"). A file of
    ``named`` (path, side) whose name says the other side's language is warned of: the other
    direction's vocabularies leave few sentences, or none."""
    from ..data.manifest import read_vocab_meta
    from ..data.sides import Sides, warn_named_otherwise  # here: sacremoses and subword-nmt, for this only

    if Path(sides_path).is_dir():
        sides = Sides.from_vocab_dir(sides_path)
        langs = dict(zip(("src", "tgt"), read_vocab_meta(Path(sides_path)).langs))
    else:
        from .. import checkpoint  # here only: scoring text alone never loads torch

        text = checkpoint.load(sides_path).text
        sides, langs = text.sides(), text.langs
    for path, side in named:
        warn_named_otherwise(path, side, langs, sides_path, "vocabularies")
    return [
        i
        for i, src in enumerate(sources)
        if not sides.src.has_unknown(src, tokenized) and not any(sides.tgt.has_unknown(r[i], tokenized) for r in refs)
    ]


def hypothesis_nll(
    model_paths: Sequence[str | Path],
    sources: list[str],
    hyps: list[str],
    tokenized: bool = False,
    runtime: RuntimeConfig | None = None,
) -> list[float]:
    """Each hypothesis' NLL under the model(s), </s> included: minus translate's score for it."""
    from ..translate.translator import Translator  # here only: scoring text alone never loads torch

    translator = Translator.from_checkpoints(list(model_paths), runtime)
    return [-f.score for f in translator.force(sources, hyps, tokenized, aligned=False)]


def read_sources(source: str | None, n: int, against: str, needs: dict[str, Any]) -> list[str] | None:
    """The source lines, as many as the hypotheses, where an option in ``needs`` is on."""
    sources = None
    if source:
        sources = list(read_lines(source))
        if len(sources) != n:
            shown = display_name(source), display_name(against)
            raise UserError(f"{shown[0]} has {counted(len(sources), 'line')} but {shown[1]} has {n}")
    needing = [flag for flag, on in needs.items() if on]
    if needing and sources is None:
        raise UserError(f"{needing[0]} needs the source text: give --source FILE")
    return sources


def evaluate(  # noqa: PLR0913 (score's options, one per flag)
    hyp_paths: Sequence[str],
    ref_paths: Sequence[str],
    names: Sequence[str] = (),
    source: str | None = None,
    clean: tuple[str, ...] = (),
    tokenized: bool = False,
    lang: str | None = None,
    bucket_width: int = 0,
    no_unk: str | None = None,
    bootstrap: int = 0,
    model_paths: Sequence[str] = (),
    runtime: RuntimeConfig | None = None,
    metrics: Metrics | None = None,
) -> dict[str, Any]:
    """Everything ``nmtkit score`` reports on hypothesis files, as one JSON-ready dict."""
    metrics = metrics or Metrics()
    systems, refs = read_systems(hyp_paths, ref_paths, names, clean)
    n = len(next(iter(systems.values())))
    sources = read_sources(
        source, n, str(hyp_paths[0]), {"--by-length": bucket_width, "--no-unk-vocab": no_unk, "-m/--model": model_paths}
    )
    if model_paths and source:  # here only: scoring text alone never loads torch
        from ..translate.both_ways import warn_named_otherwise

        for path, side in ((source, "src"), *((h, "tgt") for h in hyp_paths)):
            warn_named_otherwise(path, side, model_paths[0])
    # the analyses give both BLEUs, the tokenized one too
    asked: list[tuple[str, object]] = [("--metrics bleu-tok", TOK_BLEU in metrics.chosen(tokenized))]
    asked += [("--by-length", bucket_width), ("--no-unk-vocab", no_unk), ("--bootstrap", bootstrap)]
    needed_by = next((f"the tokenized BLEU ({flag})" for flag, on in asked if on), "")
    lang = target_language(ref_paths, tokenized, lang, needed_by)
    result: dict[str, Any] = {"systems": []}
    keep = None
    if no_unk and sources is not None:
        # -m's model warned of these already where it is the same file
        warned = bool(model_paths) and Path(no_unk).resolve() == Path(model_paths[0]).resolve()
        named = [] if warned else [(source or "", "src"), *((r, "tgt") for r in ref_paths)]
        keep = no_unk_indices(no_unk, sources, refs, tokenized, named)
    # Moses tokens, for the analyses that give both BLEUs; without them only the tokenized BLEU needs them
    texts = (
        {name: Texts.of(hyps, refs, tokenized, lang, metrics) for name, hyps in systems.items()}
        if bucket_width or keep is not None or bootstrap
        else {}
    )
    for (name, hyps), path in zip(systems.items(), hyp_paths):
        entry = {
            "name": name,
            "file": str(path),
            **corpus_scores(hyps, refs, tokenized, lang, texts.get(name), metrics),
        }
        if keep is not None:
            # none left (the other direction's vocabularies, say): no figure, where JSON would have NaN
            entry["no_unk"] = {**(texts[name].subset(keep).bleus() if keep else {}), "sentences": len(keep)}
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
        result |= bootstraps(systems, refs, texts, bootstrap, tokenized, metrics)
    return result


def metric_lines(entry: dict[str, Any]) -> list[str]:
    """Each metric's figure, in the order scored: label, score, sacreBLEU's line for the BLEUs
    (their n-gram precisions and brevity penalty), and the signature as sacrebleu prints it."""
    lines = []
    for k in (k.removesuffix("_signature") for k in entry if k.endswith("_signature")):
        lines.append(f"  {entry[k + '_label']}: {entry[k]:.2f}")
        lines += [f"    {entry[k + '_detail']}"] if k.startswith("bleu") else []
        lines.append(f"    {entry[k + '_signature']}")
    return lines


def format_report(result: dict[str, Any], metrics: Metrics | None = None) -> str:
    """The human-readable form of ``evaluate``'s result (``metrics``: its options, for the
    labels): every BLEU says which it is."""
    labels = metrics or Metrics()
    lines = []
    for s in result["systems"]:
        n, r = s["sentences"], s["references"]
        lines.append(f"{display_name(s['name'])}: {counted(n, 'sentence')}, {counted(r, 'reference')}")
        lines += metric_lines(s)
        if "no_unk" in s:
            u = s["no_unk"]
            said = (
                _both(u, labels)
                if u["sentences"]
                else "none to score: every sentence has a word outside the vocabularies"
            )
            lines.append(f"  No-UNK subset ({u['sentences']} sentences): " + said)
        if "nll" in s:
            lines.append(
                f"  NLL under the model: {s['nll']['per_sentence']:.3f} per sentence, "
                f"{s['nll']['per_word']:.3f} per output word (</s> counted)"
            )
    if "by_length" in result:
        names = [s["name"] for s in result["systems"]]
        kinds = [k for k in ("bleu", "bleu_tok") if any(k in row for row in result["by_length"]["rows"])]
        for kind in kinds:
            label = labels.label("bleu" if kind == "bleu" else TOK_BLEU)
            lines.append(f"{label} by source length (Moses tokens, buckets of {result['by_length']['width']}):")
            heads = short_names(names)
            w = max(8, *map(len, heads))  # a column as wide as the name that tells its system apart
            lines.append(f"  {'length':>9} {'sentences':>9}  " + "  ".join(f"{h:>{w}}" for h in heads))
            for row in result["by_length"]["rows"]:
                span = f"{row['lo']}-{row['hi']}" if row["hi"] else "empty"
                lines.append(
                    f"  {span:>9} {row['sentences']:>9}  " + "  ".join(f"{row[kind][n]:>{w}.2f}" for n in names)
                )
    for b in (value for name, value in result.items() if name.startswith("bootstrap")):
        lines.append(f"paired bootstrap against {b['baseline']} ({b['samples']} samples, {b['label']}):")
        short = "BLEU" if b["metric"] in ("bleu", TOK_BLEU) else b["label"]
        for row in b["systems"]:
            verdict = (
                "baseline"
                if row["p_value"] is None
                else f"p = {row['p_value']:.4f}, "
                + ("significant at p < 0.05" if row["p_value"] < 0.05 else "not significant")
            )
            lines.append(
                f"  {row['system']}: {short} {row['score']:.2f}, "
                f"95% CI {row['mean']:.2f} ± {row['ci95']:.2f} ({verdict})"
            )
    if "corpus_nll" in result:
        c = result["corpus_nll"]
        lines.append(
            f"{c['split']}: NLL {c['nll']:.3f} per sentence, {c['nll_token']:.4f} per token, "
            f"perplexity {c['perplexity']:.2f} ({counted(c['sentences'], 'sentence')}, "
            f"{c['tokens']:,} tokens "
            f"with </s>)"
            + (f"; {counted(n, 'pair')} with an empty side left out" if (n := c.get("left_out_empty", 0)) else "")
        )
    return "\n".join(lines)


def _both(scores: dict[str, float], labels: Metrics) -> str:
    parts = [f"{labels.label('bleu')} {scores['bleu']:.2f}"] if "bleu" in scores else []
    return "  ".join(parts + [f"{labels.label(TOK_BLEU)} {scores['bleu_tok']:.2f}"])
