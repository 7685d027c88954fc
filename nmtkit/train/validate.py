"""Validation: dev NLL (teacher forcing), greedy dev BLEU (the search translate runs), and
where local-p's window looks; the score that picks best.pt."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from ..core.console import log
from ..data.binarized import Corpus
from ..data.target_order import reading_order
from ..evaluate.nll import scored_batches
from ..evaluate.score import multi_bleu
from ..models.base import Seq2Seq
from ..text.bpe import SPM_HEADER, is_sentencepiece, merge_subwords
from ..translate.search import greedy
from .config import TrainConfig
from .window_watch import WindowWatch


@torch.no_grad()
def validate(
    model: Seq2Seq, corpus: Corpus, cfg: TrainConfig, device: torch.device, tgt_tokens: list[str]
) -> dict[str, float]:
    """Dev NLL per sentence and per token; tokenized BLEU of greedy output (see :func:`dev_bleu`);
    where local-p's window looks (:mod:`window_watch`)."""
    model.eval()
    src, tgt = corpus.split("valid")
    total, tokens, n = 0.0, 0, 0
    outputs: dict[int, list[int]] = {}
    with WindowWatch(model) as window:
        for idx, enc, loss, count in scored_batches(model, src, tgt, device, cfg.batch_size, cfg.valid_max_sentences):
            total, tokens, n = total + float(loss), tokens + count, n + len(idx)  # enc serves the search too
            window.take(src.sizes[idx] + 1, tgt.sizes[idx] + 1)
            if cfg.valid_bleu:
                with window.paused():
                    found, backwards = greedy(model, enc).tokens, model.cfg.right_to_left
                    outputs.update((int(i), reading_order(t, len(t), backwards)) for i, t in zip(idx, found))
    model.train()
    metrics = {"dev_nll": total / max(n, 1), "dev_nll_token": total / max(tokens, 1), **window.metrics()}
    if outputs:
        metrics["dev_bleu_tok"] = dev_bleu(corpus, "valid", outputs, tgt_tokens)
    return metrics


@functools.cache  # once a run, not at every validation
def _say_no_reference(corpus: str, split: str) -> None:
    log(
        f"{corpus}: no reference text for '{split}' (binarized, or reversed from a corpus binarized, by "
        f"an older nmtkit): dev BLEU is counted against ids, where rare words are <unk>; re-run "
        f"preprocess --vocab to fix"
    )


def dev_bleu(corpus: Corpus, split: str, outputs: dict[int, list[int]], tgt_tokens: list[str]) -> float:
    """Tokenized BLEU (the paper's, unsmoothed) of output ids per sentence of ``split`` against
    the split's clean tokenized text, so a rare word the vocabulary maps to <unk> counts as
    missed when the model writes <unk>. Corpora binarized without that text fall back to
    references rebuilt from ids, with a warning."""
    keys = sorted(outputs)
    found = corpus.references(split)
    merged = _merger(corpus)
    refs: dict[int, str]
    if found is None:
        _say_no_reference(str(corpus.path), split)
        _, tgt = corpus.split(split)
        refs = {k: " ".join(merged([tgt_tokens[t] for t in tgt[k]])) for k in keys}
    else:
        refs = dict(enumerate(found))
    hyps = [" ".join(merged([tgt_tokens[t] for t in outputs[k]])) for k in keys]
    return float(multi_bleu().corpus_score(hyps, [[refs[k] for k in keys]]).score)


def _merger(corpus: Corpus) -> Callable[[list[str]], list[str]]:
    """How the corpus's target units become words, as its codes say: words as they are, BPE's or
    SentencePiece's merged (the units' own look would take a word that starts with ``▁`` for
    SentencePiece's, and run the sentence together)."""
    name = corpus.manifest.bpe_codes.get(corpus.tgt_lang)
    if not name:
        return list
    try:
        with open(corpus.path / name, encoding="utf-8") as fh:
            spm: bool | None = is_sentencepiece(fh.read(len(SPM_HEADER)))
    except (OSError, UnicodeDecodeError):  # the units tell, as they did before the codes were asked
        spm = None
    return lambda units: merge_subwords(units, spm)


def dev_score(metrics: dict[str, float], best_by: str) -> float:
    """The validation's score, higher is better: dev BLEU, or minus dev NLL."""
    if best_by == "bleu" and "dev_bleu_tok" in metrics:
        return metrics["dev_bleu_tok"]
    return -metrics["dev_nll"]
