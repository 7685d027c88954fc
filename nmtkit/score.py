"""Corpus BLEU and chrF through sacreBLEU, with its reproducibility signatures.

Detokenised text with sacreBLEU's 13a tokeniser is what users compare
today; ``tokenized=True`` scores Moses tokens as they are (``tok:none``),
the multi-bleu style the paper reports. Several reference files score
against several references at once (the Bible test set has three French
versions). ``clean`` applies nmtkit's cleaning rules to the references, so
that scoring does not count, say, verse numbers that the model was trained
never to produce.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import UserError
from .files import read_lines
from .text.clean import apply_rules


def read_parallel(hyp: str | Path, refs: list[str | Path], clean: tuple[str, ...] = ()) -> tuple[list[str], list[list[str]]]:
    hyps = list(read_lines(hyp))
    if clean and "whitespace" not in clean:
        clean = (*clean, "whitespace")       # rules leave spaces where they cut; tidy them
    streams = []
    for ref in refs:
        lines = [apply_rules(line, clean)[0] if clean else line for line in read_lines(ref)]
        if len(lines) != len(hyps):
            raise UserError(f"{ref} has {len(lines)} lines but {hyp} has {len(hyps)}")
        streams.append(lines)
    return hyps, streams


def corpus_scores(hyps: list[str], refs: list[list[str]], tokenized: bool = False) -> dict[str, Any]:
    """BLEU and chrF of ``hyps`` against the reference streams ``refs`` (each as long as ``hyps``)."""
    from sacrebleu.metrics import BLEU, CHRF
    bleu = BLEU(tokenize="none" if tokenized else "13a")
    chrf = CHRF()
    b, c = bleu.corpus_score(hyps, refs), chrf.corpus_score(hyps, refs)
    return {"bleu": b.score, "bleu_detail": str(b), "bleu_signature": str(bleu.get_signature()),
            "chrf": c.score, "chrf_signature": str(chrf.get_signature()), "sentences": len(hyps),
            "references": len(refs)}
