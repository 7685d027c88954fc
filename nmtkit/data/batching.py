"""Minibatches as Appendix B.2 makes them, with a state for exact resume.

Each epoch the kept pairs are shuffled (seeded by seed and epoch, so the
order needs no stored RNG), cut into pools of ``pool × batch_size`` pairs,
each pool sorted by length and split into minibatches, whose order inside
the pool is shuffled. Pairs over ``max_len`` on either side, or empty, are
never drawn. ``max_tokens`` > 0 cuts by target tokens instead of sentences.
With several ranks (DDP) the minibatches are the same as with one, and each
rank takes every ``world``-th sentence of each: ``batch_size`` is the total,
as in the paper. With ``update_freq`` N (gradient accumulation) an update's
minibatch is that of ``N × batch_size`` (or ``N × max_tokens``), cut into N
consecutive pieces of its length-sorted sentences, computed one after the
other: the same update as one N times larger batch, in 1/N of the memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from .binarized import too_long
from .target_order import mirrored_links, model_order
from .vocab import BOS, EOS, PAD


class Batches:
    def __init__(
        self,
        src_sizes: np.ndarray,
        tgt_sizes: np.ndarray,
        batch_size: int = 80,
        pool: int = 20,
        max_len: int = 50,
        seed: int = 1234,
        max_tokens: int = 0,
        rank: int = 0,
        world: int = 1,
        update_freq: int = 1,
    ):
        self.src_sizes, self.tgt_sizes = np.asarray(src_sizes), np.asarray(tgt_sizes)
        ok = (self.src_sizes > 0) & (self.tgt_sizes > 0)
        if max_len:
            ok &= (self.src_sizes <= max_len) & (self.tgt_sizes <= max_len)
        self.keep = np.flatnonzero(ok)
        self.too_long = too_long(self.src_sizes, self.tgt_sizes, max_len)
        self.pieces = update_freq
        self.batch_size, self.max_tokens = batch_size * update_freq, max_tokens * update_freq
        self.pool, self.seed = pool, seed
        self.rank, self.world = rank, world
        self.epoch, self.index = 0, 0
        self.drawn_epoch = 0
        self._planned: tuple[tuple[int, int], list[np.ndarray]] | None = None

    def _cut(self, ids: np.ndarray) -> list[np.ndarray]:
        if not self.max_tokens:
            return [ids[i : i + self.batch_size] for i in range(0, len(ids), self.batch_size)]
        out, start, longest = [], 0, 0
        for i, j in enumerate(ids):
            longest = max(longest, int(self.tgt_sizes[j]) + 1)
            if i > start and longest * (i - start + 1) > self.max_tokens:
                out.append(ids[start:i])
                start, longest = i, int(self.tgt_sizes[j]) + 1
        out.append(ids[start:])
        return out

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's minibatches, in their order; the last epoch's kept, as a start's checks and
        its first draw both ask for it (seconds at WMT's millions of pairs)."""
        if self._planned is None or self._planned[0] != (epoch, self.seed):
            self._planned = ((epoch, self.seed), self._plan(epoch))
        return self._planned[1]

    def _plan(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(self.keep)
        step = self.pool * (
            self.batch_size
            if not self.max_tokens
            else max(1, self.max_tokens // max(1, int(np.median(self.tgt_sizes[self.keep])) + 1))
        )
        batches: list[np.ndarray] = []
        for start in range(0, len(order), step):
            chunk = order[start : start + step]
            chunk = chunk[np.lexsort((self.src_sizes[chunk], self.tgt_sizes[chunk]))]
            cut = _joined_small(self._cut(chunk), self.world * self.pieces)
            batches.extend(cut[k] for k in rng.permutation(len(cut)))
        # every process takes a share of each piece, so none may be smaller than the world
        return [b for b in batches if len(b) >= self.world * self.pieces]

    def share(self, batch: np.ndarray) -> list[np.ndarray]:
        """This process's part of each of a minibatch's ``update_freq`` pieces (consecutive runs of
        its length-sorted sentences): every world-th sentence of each (similar lengths for all)."""
        return [piece[self.rank :: self.world] for piece in np.array_split(batch, self.pieces)]

    def __iter__(self) -> Iterator[np.ndarray]:
        """Batches from the current position on, forever (epoch after epoch). The position moves
        on before a batch is handed out, so after an epoch's last batch it is already (next epoch,
        0): a stop there resumes at the next epoch, and ``epoch`` counts the epochs done.
        ``drawn_epoch`` is the epoch of the batch handed out last."""
        while True:
            batches = self.epoch_batches(self.epoch)
            if not batches:
                raise ValueError("no training pair fits the length limit")
            if self.index >= len(batches):  # a position past this epoch's end (a corpus changed under it)
                self.epoch, self.index = self.epoch + 1, 0
                continue
            for i in range(self.index, len(batches)):
                self.drawn_epoch = self.epoch
                self.index = i + 1
                if self.index == len(batches):
                    self.epoch, self.index = self.epoch + 1, 0
                yield batches[i]

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "index": self.index, "seed": self.seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.index, self.seed = int(state["epoch"]), int(state["index"]), int(state["seed"])
        self.drawn_epoch = self.epoch - (self.index == 0 and self.epoch > 0)  # the last batch's, before the save


def pad(seqs: list[np.ndarray], bos: bool = False, eos: bool = True, multiple: int = 1) -> torch.Tensor:
    """Right-padded (B, T) int64 ids, optionally with <s> before and </s> after each sentence;
    T rounded up to a multiple of ``multiple``."""
    longest = -(-(max(len(s) for s in seqs) + bos + eos) // multiple) * multiple
    out = torch.full((len(seqs), longest), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        row = torch.from_numpy(np.asarray(s, dtype=np.int64))
        out[i, bos : bos + len(s)] = row
        if bos:
            out[i, 0] = BOS
        if eos:
            out[i, bos + len(s)] = EOS
    return out


def collate(
    src_arr: Any,
    tgt_arr: Any,
    idx: np.ndarray,
    multiple: int = 1,
    links: Any = None,
    right_to_left: bool = False,
) -> dict[str, torch.Tensor]:
    """src (with </s>), its mask, tgt_in (<s> y) and tgt_out (y </s>) for sentences ``idx``;
    with ``links`` (a corpus's :meth:`~nmtkit.data.binarized.Corpus.links`), ``guide`` too
    (:func:`guide`). ``multiple`` > 1 pads both lengths up to a multiple of it: fewer distinct
    shapes, so that CUDA graphs, recorded once per shape, are replayed rather than recorded again.
    ``right_to_left``: each y turned around, and its links with it (:mod:`.target_order`)."""
    src = pad([src_arr[i] for i in idx], multiple=multiple)
    tgt = [model_order(tgt_arr[i], right_to_left) for i in idx]
    batch = {
        "src": src,
        "src_mask": src != PAD,
        "tgt_in": pad(tgt, bos=True, eos=False, multiple=multiple),
        "tgt_out": pad(tgt, multiple=multiple),
    }
    if links is not None:
        batch["guide"] = guide(
            [mirrored_links(links[i], len(t)) if right_to_left else links[i] for i, t in zip(idx, tgt)],
            [len(src_arr[i]) for i in idx],
            [len(t) for t in tgt],
            (batch["tgt_out"].shape[1], src.shape[1]),
        )
    return batch


def guide(links: list[np.ndarray], src_lens: list[int], tgt_lens: list[int], shape: tuple[int, int]) -> torch.Tensor:
    """The alignment that guided training pulls the attention towards: (B, Ty, Tx), row i the
    distribution over source positions that target position i (y_i, then </s>) should attend
    to, spread evenly over its links; </s> is linked with </s>. A word the aligner left
    unlinked has a row of zeros, which the loss skips."""
    out = torch.zeros(len(links), *shape)
    for b, (pairs, m, n) in enumerate(zip(links, src_lens, tgt_lens)):
        st = torch.from_numpy(np.asarray(pairs, dtype=np.int64)).view(-1, 2)
        out[b, st[:, 1], st[:, 0]] = 1.0
        out[b, n, m] = 1.0
    return out / out.sum(-1, keepdim=True).clamp(min=1.0)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """The batch on ``device``. To a GPU through pinned memory: a copy from pageable memory
    would first wait for everything queued on the GPU, once per tensor and update."""
    if device.type == "cuda":
        return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
    return {k: v.to(device) for k, v in batch.items()}


def _joined_small(cut: list[np.ndarray], least: int) -> list[np.ndarray]:
    """The minibatches of a length-sorted cut, each of fewer than ``least`` sentences (the
    processes times --update-freq: each piece needs a sentence a process) joined to its neighbour
    of like lengths, where it was left out of the epoch without a word."""
    if least <= 1 or len(cut) < 2:
        return cut
    out: list[np.ndarray] = []
    for batch in cut:
        if out and (len(batch) < least or len(out[-1]) < least):
            out[-1] = np.concatenate([out[-1], batch])
        else:
            out.append(batch)
    return out
