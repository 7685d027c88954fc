"""Raw text in, raw text out, with nothing but a checkpoint.

``Translator.from_checkpoint(path)`` rebuilds the model and both
``Preprocessor`` objects from the checkpoint alone (vocabularies, text
settings, BPE codes), so a line goes exactly the way the training data
went: clean → Moses → BPE → ids → beam search → ids → words → de-BPE →
detokenise. Lines are read in blocks; each block is sorted by length and
cut into batches (little padding), and results come out in input order.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch

from . import checkpoint
from .config import ModelConfig, TextConfig
from .console import progress
from .data.batching import pad
from .data.vocab import PAD, Vocab
from .errors import UserError
from .files import STDIO, atomic_write, count_lines, read_lines
from .models import build_model
from .models.base import Seq2Seq
from .search import SearchConfig, beam_search
from .text.pipeline import Preprocessor


@dataclass
class Translation:
    text: str                      # detokenised output (or Moses tokens with tokenized=True)
    tokens: list[str]              # output tokens as the model wrote them (BPE included)
    source_tokens: list[str]
    score: float                   # log-probability, </s> included
    attention: np.ndarray | None = None   # (len(tokens) + 1, len(source_tokens) + 1)


class Translator:
    def __init__(self, model: Seq2Seq, src_vocab: Vocab, tgt_vocab: Vocab, src_text: Preprocessor,
                 tgt_text: Preprocessor, device: torch.device):
        self.model, self.src_vocab, self.tgt_vocab = model.eval(), src_vocab, tgt_vocab
        self.src_text, self.tgt_text, self.device = src_text, tgt_text, device

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | None = None) -> "Translator":
        ckpt = checkpoint.load(path)
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        model = build_model(ModelConfig.from_dict(ckpt["model"]))
        model.load_state_dict(ckpt["weights"])
        corpus = ckpt["corpus"]
        texts = [Preprocessor(TextConfig.from_dict(corpus["text"][side]), corpus["bpe_codes"][side])
                 for side in ("src", "tgt")]
        return cls(model.to(dev), Vocab(corpus["vocab"]["src"]), Vocab(corpus["vocab"]["tgt"]), *texts, dev)

    def translate(self, lines: Iterable[str], search: SearchConfig = SearchConfig(), batch_size: int = 64,
                  block: int = 1000, tokenized: bool = False, attention: bool = False) -> Iterator[Translation]:
        """Translations of ``lines`` in order; ``block`` lines are read before any is translated."""
        pending: list[str] = []
        for line in lines:
            pending.append(line)
            if len(pending) >= block:
                yield from self._block(pending, search, batch_size, tokenized, attention)
                pending = []
        if pending:
            yield from self._block(pending, search, batch_size, tokenized, attention)

    def _block(self, lines: list[str], search: SearchConfig, batch_size: int, tokenized: bool,
               attention: bool) -> list[Translation]:
        sources = [self.src_text.encode(line) for line in lines]
        ids = [np.asarray(self.src_vocab.encode(tokens), dtype=np.int64) for tokens in sources]
        out: list[Translation | None] = [None] * len(lines)
        order = sorted(range(len(lines)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            idx = [i for i in order[start:start + batch_size] if len(ids[i])]
            for i in order[start:start + batch_size]:
                if not len(ids[i]):                     # an empty line translates to an empty line
                    out[i] = Translation("", [], [], 0.0)
            if not idx:
                continue
            src = pad([ids[i] for i in idx]).to(self.device)
            with torch.inference_mode():
                hyps = beam_search(self.model, self.model.encode(src, src != PAD), search, attention)
            for k, i in enumerate(idx):
                tokens = self.tgt_vocab.decode(hyps.tokens[k])
                text = self.tgt_text.decode(tokens, detokenize=not tokenized)
                out[i] = Translation(text, tokens, sources[i], hyps.scores[k],
                                     hyps.attention[k] if hyps.attention is not None else None)
        return [t for t in out if t is not None]


def translate_file(model_path: str | Path, source: str, output: str | None, search: SearchConfig,
                   batch_size: int = 64, tokenized: bool = False, device: str | None = None) -> int:
    """``nmtkit translate``: lines of ``source`` ('-': stdin) to ``output`` (None: stdout).

    A file gets a progress bar; an interactive terminal is translated line by
    line; output to a file appears only once complete. Returns the line count.
    """
    translator = Translator.from_checkpoint(model_path, device)
    interactive = source == STDIO and sys.stdin.isatty()
    total = None if source == STDIO else count_lines(source)
    if total == 0:
        raise UserError(f"{source}: is empty")
    lines = read_lines(source)
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(atomic_write(output)) if output else sys.stdout
        bar = stack.enter_context(progress("sentences"))
        task = bar.add_task("translate", total=total)
        n = 0
        for n, t in enumerate(translator.translate(lines, search, batch_size, block=1 if interactive else 1000,
                                                   tokenized=tokenized), 1):
            sink.write(t.text + "\n")
            bar.advance(task)
            if interactive:
                sink.flush()
    return n
