"""The training losses of the updates since the last report, kept on the device."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ..core import distributed


class LossWindow:
    """Training losses (and gradient norms) of the updates since the last report, kept on the device.

    Reading a loss (``float(loss)``) waits for the GPU; so the losses of a
    window are read together, every ``log_every`` updates and before any
    checkpoint, summed over the processes (every rank closes the same
    windows), and a non-finite one is then traced to its update: on every
    rank at once, so that all of them stop together.
    """

    def __init__(self, first_step: int):
        self.first, self.tokens, self.sents, self.all_tokens = first_step, 0, 0, 0
        self.losses: list[torch.Tensor] = []
        self.norms: list[torch.Tensor] = []
        self.aligned: list[torch.Tensor] = []  # guided alignment's loss and its guided words, summed
        self.captures, self.capture_seconds = 0, 0.0  # --cuda-graphs: the shapes captured in the window
        self.refusals = 0  # and those refused, their update waiting for the host
        self.replays: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []  # and each replay's span
        self.started = time.perf_counter()

    def add(self, loss: torch.Tensor, norm: torch.Tensor | None, tokens: int, sents: int, all_tokens: int) -> None:
        """This process's summed loss over its ``tokens`` and ``sents``, the update's gradient
        norm (if clipped); ``all_tokens``: the whole minibatch's, over every process."""
        self.losses.append(loss.detach().float())
        if norm is not None:
            self.norms.append(norm.detach().float())
        self.tokens, self.sents = self.tokens + tokens, self.sents + sents
        self.all_tokens += all_tokens

    def restart_clock(self) -> None:
        """The clock started again while the window holds no update yet: a validation or a save
        just before it is not counted in its speed."""
        if not self.losses:
            self.started = time.perf_counter()

    def add_alignment(self, loss: torch.Tensor, words: torch.Tensor) -> None:
        """Guided alignment's summed loss over this process's ``words`` guided target words
        (tensors on the device: read with the window)."""
        self.aligned.append(torch.stack([loss.float(), words.float()]))

    def add_capture(self, seconds: float) -> None:
        """A batch shape's update captured as a CUDA graph in this window, in ``seconds``: logged,
        so that the windows of captures can be told from those of replays."""
        self.captures, self.capture_seconds = self.captures + 1, self.capture_seconds + seconds

    def add_refusal(self) -> None:
        """A batch shape refused a CUDA graph in this window (its update waits for the host)."""
        self.refusals += 1

    def add_replay(self, began: torch.cuda.Event, ended: torch.cuda.Event) -> None:
        """An update replayed as a CUDA graph between these two events: when every update of the
        window replayed, the share of its wall time the GPU spent replaying is logged."""
        self.replays.append((began, ended))

    def _read(self, world: int) -> tuple[list[float], float, float]:
        """Each update's loss and the token and sentence counts, summed over every process;
        Diverged naming the first update whose loss (or gradient norm) is not finite."""
        n, device = len(self.losses), self.losses[0].device
        norms = torch.stack(self.norms) if len(self.norms) == n else torch.zeros(n, device=device)
        counts = torch.tensor([self.tokens, self.sents], dtype=torch.float32, device=device)
        everything = distributed.summed(torch.cat([torch.stack(self.losses), norms, counts]), world).tolist()
        values, grads, (tokens, sents) = everything[:n], everything[n : 2 * n], everything[2 * n :]
        for k, (v, g) in enumerate(zip(values, grads)):
            if not (math.isfinite(v) and math.isfinite(g)):
                raise Diverged(self.first + k, *((v, "loss") if not math.isfinite(v) else (g, "gradient norm")))
        return values, tokens, sents

    def carry(self, world: int) -> dict[str, Any] | None:
        """The window as plain values, summed over every process (every rank calls it), for a
        last.pt saved between two reports: the resumed run's first report then averages the
        updates the uninterrupted run's would have. None for an empty window."""
        if not self.losses:
            return None
        values, tokens, sents = self._read(world)
        aligned = distributed.summed(torch.stack(self.aligned), world).tolist() if self.aligned else []
        seconds = time.perf_counter() - self.started
        return {"first": self.first, "losses": values, "tokens": int(tokens), "sents": int(sents)} | {
            "all_tokens": self.all_tokens,
            "aligned": aligned,
            "seconds": seconds,
        }

    @classmethod
    def carried_over(cls, carried: dict[str, Any], rank: int, device: torch.device) -> LossWindow:
        """The window :meth:`carry` saved, on this process: rank 0 holds its sums, the others
        zeros in their place (the reports sum over the processes)."""
        window, keep = cls(int(carried["first"])), float(rank == 0)
        window.losses = [torch.tensor(v * keep, dtype=torch.float32, device=device) for v in carried["losses"]]
        window.norms = [torch.zeros((), device=device) for _ in window.losses]
        window.aligned = [torch.tensor(a, device=device) * keep for a in carried["aligned"]]
        window.tokens, window.sents = (int(carried["tokens"]), int(carried["sents"])) if rank == 0 else (0, 0)
        window.all_tokens = int(carried["all_tokens"])  # the whole minibatches', on every process alike
        window.started = time.perf_counter() - float(carried["seconds"])
        return window

    def close(self, world: int) -> dict[str, float]:
        """Averages of the window over every process; Diverged naming the first update whose loss
        (or gradient norm) is not finite."""
        n = len(self.losses)
        if not n:
            return {}
        values, tokens, sents = self._read(world)
        seconds = max(time.perf_counter() - self.started, 1e-9)
        extra: dict[str, float] = {}
        if self.aligned:  # logged on its own: the attention's cross-entropy per guided word
            total, words = distributed.summed(torch.stack(self.aligned).sum(0), world).tolist()
            extra = {"train_align_ce": total / max(words, 1)}
        if self.captures:
            extra |= {"graphs_captured": self.captures, "capture_s": self.capture_seconds}
        if self.refusals:
            extra["graphs_refused"] = self.refusals
        if self.replays and len(self.replays) == n:  # the events have passed: the losses were read
            busy = sum(a.elapsed_time(b) for a, b in self.replays) / 1000
            extra["gpu_busy_share"] = busy / seconds
        return extra | {
            "train_nll": sum(values) / max(sents, 1),
            "train_nll_token": sum(values) / max(tokens, 1),
            "tgt_tokens_per_s": self.all_tokens / seconds,
            "updates_per_s": n / seconds,
        }


class Diverged(Exception):
    def __init__(self, step: int, value: float, what: str = "loss"):
        self.step, self.value, self.what = step, value, what
