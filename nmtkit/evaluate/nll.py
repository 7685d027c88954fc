"""Negative log-likelihood of reference translations: the paper's Table 2 "Dev NLL".

``scored_batches`` is the loop that training's validation and ``nmtkit
score -m … --data …`` share: length-sorted batches of a binarized split,
each encoded once and scored by teacher forcing (the fused softmax + NLL
that training uses, so no B×T×K tensor is made).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import checkpoint
from ..core.runtime import keeping, setup
from ..core.settings import RuntimeConfig
from ..data.batching import collate, to_device
from ..data.binarized import Corpus, TokenArray
from ..data.vocab import PAD
from ..models.base import EncoderOut, Seq2Seq


def eval_batches(sizes: np.ndarray, limit: int, batch_size: int) -> Iterator[np.ndarray]:
    idx = np.argsort(sizes[:limit] if limit else sizes, kind="stable")
    for i in range(0, len(idx), batch_size):
        yield idx[i : i + batch_size]


def scored_batches(
    model: Seq2Seq, src: TokenArray, tgt: TokenArray, device: torch.device, batch_size: int, limit: int = 0
) -> Iterator[tuple[np.ndarray, EncoderOut, torch.Tensor, int]]:
    """(sentence ids, their encoding, summed NLL, target tokens with </s>) per batch; pairs with
    an empty side are skipped, as training never sees them."""
    for idx in eval_batches(src.sizes, limit, batch_size):
        idx = idx[(src.sizes[idx] > 0) & (tgt.sizes[idx] > 0)]
        if not len(idx):
            continue
        batch = to_device(collate(src, tgt, idx, right_to_left=model.cfg.right_to_left), device)
        enc = model.encode(batch["src"], batch["src_mask"])
        loss = model.output_nll(model.teacher_forced(enc, batch["tgt_in"])[0], batch["tgt_out"])
        yield idx, enc, loss, int((batch["tgt_out"] != PAD).sum())


@keeping
def corpus_nll(
    model_path: str | Path, data_bin: str | Path, split: str, batch_size: int = 64, runtime: RuntimeConfig | None = None
) -> dict[str, Any]:
    """NLL per sentence and per token and perplexity of a checkpoint on a binarized split; the
    process' threads as the caller had them after it, as :func:`~nmtkit.train.loop.train` leaves them."""
    if batch_size < 1:
        raise ValueError(f"corpus_nll: batch_size {batch_size}: at least 1")
    run = setup(runtime or RuntimeConfig())
    dev = run.device
    corpus = Corpus(data_bin)
    ckpt = checkpoint.load(model_path)
    corpus.check_vocab(ckpt.text.vocab_sha256, f"the checkpoint {model_path}", ckpt.text.langs)
    model = checkpoint.model_of(ckpt, model_path, dev)
    src, tgt = corpus.split(split)
    total, tokens, n = 0.0, 0, 0
    with torch.inference_mode(), run.autocast():
        for idx, _, loss, count in scored_batches(model, src, tgt, dev, batch_size):
            total, tokens, n = total + float(loss), tokens + count, n + len(idx)
    return {
        "split": split,
        "sentences": n,
        "left_out_empty": len(src.sizes) - n,  # scored_batches skips the pairs with an empty side
        "tokens": tokens,
        "nll": total / max(n, 1),
        "nll_token": total / max(tokens, 1),
        "perplexity": math.exp(total / max(tokens, 1)),
    }
