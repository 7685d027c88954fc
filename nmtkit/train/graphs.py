"""The whole update as one CUDA graph per batch shape (``train --cuda-graphs``).

An RNN's update is thousands of small kernels, one target word after another; launched from Python
one at a time, they leave a GPU idle most of the time. Captured once with ``torch.cuda.graph`` and
replayed, the forward, the backward, the clipping and the optimizer step run without the host.

A graph holds fixed shapes, so each batch is padded to one of a few fitted to the run's batches
(:mod:`.shapes`): its source and target lengths, and its sentences with empty sentences (a lone
``</s>`` to read, nothing to predict), which the loss and the counts ignore. The first
``WARMUP`` batches of a shape run eagerly (cuBLAS's workspaces, the optimizer's state) with any
wait for the host refused (a shape whose update waits runs eagerly from then on, said once), the
next is captured, and every later one replays its graph; the graphs share one memory pool (they
never run at once and read none of each other's outputs). A batch no shape holds runs eagerly,
said once. The loss, the gradient norm and the
counts stay on the device until the loop's report reads them; the learning rate is a tensor
there, written in place (:func:`.optimizer.set_rate`).

The model runs host-free (:mod:`~nmtkit.models.host_free`): the encoders that pack sentences by
length for cuDNN take each direction over the padded batch instead, and the output layer computes
padded rows and weighs them 0 rather than finding them.

Without a GPU the padded update runs eagerly: the same arithmetic, which the CPU tests hold
against the unpadded update.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.console import log
from ..core.errors import UserError
from ..data.batching import collate, to_device
from ..data.vocab import BOS, EOS, PAD
from ..models.host_free import host_free
from .parts import CompiledSteps
from .shapes import FittedShapes, fit_shapes
from .state import TrainState, eager_reason
from .step import clip, out_of_memory, piece_loss, set_scheduled_rate, update

WARMUP = 2


def padded(batch: dict[str, torch.Tensor], rows: int, src_len: int, tgt_len: int) -> dict[str, torch.Tensor]:
    """``batch`` (:func:`~nmtkit.data.batching.collate`'s) padded to ``rows`` sentences of
    ``src_len`` source and ``tgt_len`` target positions. An added sentence reads ``</s>`` and is
    fed ``<s>``; its targets are all padding, so that it adds nothing to the loss, the gradients
    or the counts, and its attention has a position to fall on."""
    n, s = batch["src"].shape
    t = batch["tgt_in"].shape[1]
    src = torch.full((rows, src_len), PAD, dtype=torch.long)
    src[:n, :s], src[n:, 0] = batch["src"], EOS
    tgt_in = torch.full((rows, tgt_len), PAD, dtype=torch.long)
    tgt_in[:n, :t], tgt_in[n:, 0] = batch["tgt_in"], BOS
    tgt_out = torch.full((rows, tgt_len), PAD, dtype=torch.long)
    tgt_out[:n, :t] = batch["tgt_out"]
    out = {"src": src, "src_mask": src != PAD, "tgt_in": tgt_in, "tgt_out": tgt_out}
    if "guide" in batch:
        guide = torch.zeros(rows, tgt_len, src_len)
        guide[:n, :t, :s] = batch["guide"]
        out["guide"] = guide
    return out


def timing_event() -> torch.cuda.Event:
    """A CUDA event that keeps its time: one before and one after a replay time it on the GPU."""
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def updater(state: TrainState, net: torch.nn.Module, steps: CompiledSteps) -> Callable[[np.ndarray], None]:
    """What the loop calls for each minibatch: the whole update as CUDA graphs when asked for and
    possible, else the eager update (:func:`.step.update`)."""
    if state.cfg.cuda_graphs:
        why = eager_reason(state.cfg, state.parallel.many)
        if why is None:
            return WholeUpdate(state, net)
        log(f"warning: --cuda-graphs: {why}; the update runs eagerly")
    return functools.partial(update, state, net, steps)


@dataclass
class UpdateOutputs:
    """What an update leaves on the device for the window: the summed NLL, the gradient norm
    (None unclipped), guided alignment's summed loss and guided words (None without links)."""

    nll: torch.Tensor
    norm: torch.Tensor | None
    align: tuple[torch.Tensor, torch.Tensor] | None

    def copied(self) -> UpdateOutputs:
        """Copies, on the device: the graph's own outputs are overwritten by its next replay."""
        return UpdateOutputs(
            self.nll.clone(),
            None if self.norm is None else self.norm.clone(),
            None if self.align is None else (self.align[0].clone(), self.align[1].clone()),
        )


@dataclass
class ShapeGraph:
    """One padded batch shape: its inputs on the device, read by its graph once captured."""

    inputs: dict[str, torch.Tensor]
    seen: int = 0
    graph: torch.cuda.CUDAGraph | None = None
    outputs: UpdateOutputs | None = None
    refused: bool = False  # its update waits for the host: it runs eagerly
    recaptured: bool = False  # its first capture began optimizer state, and was dropped


@dataclass
class WholeUpdate:
    """The update the loop calls for each minibatch with ``--cuda-graphs``."""

    state: TrainState
    net: torch.nn.Module
    fitted: FittedShapes = field(init=False)
    shapes: dict[tuple[int, int, int], ShapeGraph] = field(default_factory=dict)
    captured: int = 0
    said_eager: bool = False
    stepped: UpdateOutputs | None = None  # the update being computed, once its optimizer step has begun

    def __post_init__(self) -> None:
        cfg, state = self.state.cfg, self.state
        sizes = state.train_src.sizes, state.train_tgt.sizes
        limits = (1 + (cfg.max_len or int(sizes[0].max())), 1 + (cfg.max_len or int(sizes[1].max())))  # + </s>
        by_tokens = bool(cfg.max_tokens)
        self.fitted = fit_shapes(state.batches.epoch_batches(0), *sizes, limits, 0 if by_tokens else cfg.batch_size)
        log(
            f"--cuda-graphs: batches padded to {len(self.fitted.shapes)} shapes (sentences×source×target: "
            f"{', '.join('×'.join(map(str, f)) for f in self.fitted.shapes)}); "
            f"{100 * self.fitted.real_share:.1f}% of the target positions an epoch computes are tokens, not padding"
        )
        self.capture = state.device.type == "cuda"
        if self.capture:  # torch calls the mode the warm-ups set a prototype; here it is only their guard
            warnings.filterwarnings("ignore", "Synchronization debug mode", UserWarning)
        self.pool = torch.cuda.graph_pool_handle() if self.capture else None
        # one side stream for every eager update: the caching allocator reuses a freed block only
        # on the stream it came from, and a new stream each time (torch's pool turns over 32)
        # would leave each update's activations cached on another
        self.side = torch.cuda.Stream(state.device) if self.capture else None  # type: ignore[no-untyped-call]
        self.scale = torch.zeros((), device=state.device)

    def __call__(self, idx: np.ndarray) -> None:
        state = self.state
        set_scheduled_rate(state)
        batch = collate(state.train_src, state.train_tgt, idx, 1, state.train_links, state.model_cfg.right_to_left)
        tokens = int((batch["tgt_out"] != PAD).sum())
        key = self.key(batch, len(idx))
        self.scale.fill_(state.parallel.world / len(idx))
        try:
            out = self.run(key, batch) if key is not None else self.unshaped(batch)
        except torch.cuda.OutOfMemoryError:
            raise out_of_memory(len(idx), batch["tgt_in"].shape[1]) from None
        if out.align is not None:
            state.window.add_alignment(*out.align)
        state.window.add(out.nll, out.norm, tokens, len(idx), tokens)

    def unshaped(self, batch: dict[str, torch.Tensor]) -> UpdateOutputs:
        """A batch no shape holds, as the eager path computes it."""
        inputs = to_device(batch, self.state.device)
        return self.eager(inputs, hostless=False) if self.capture else self.body(inputs, hostless=False)

    def key(self, batch: dict[str, torch.Tensor], sentences: int) -> tuple[int, int, int] | None:
        """The padded shape (sentences, source, target) of a batch; None if no shape holds it."""
        s, t = batch["src"].shape[1], batch["tgt_in"].shape[1]
        key = self.fitted.of(sentences, s, t)
        if key is None and not self.said_eager:
            log(
                f"--cuda-graphs: a batch of shape {sentences}×{s}×{t} is held by none of the fitted shapes: "
                "such batches run eagerly"
            )
            self.said_eager = True
        return key

    def run(self, key: tuple[int, int, int], batch: dict[str, torch.Tensor]) -> UpdateOutputs:
        device = self.state.device
        host = padded(batch, *key)
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = ShapeGraph(to_device(host, device))
        else:  # straight from the host into the buffers the graph reads, through pinned memory:
            # from pageable memory a copy would wait for the replay queued before it
            for name, value in host.items():
                shape.inputs[name].copy_(value.pin_memory() if self.capture else value, non_blocking=True)
        if not self.capture:  # a CPU: the padded update, host-free as a GPU's would be
            return self.body(shape.inputs)
        if shape.graph is None and not shape.refused:
            if shape.seen < WARMUP:
                shape.seen += 1
                return self.warm_up(key, shape)
            self.record(key, shape)
        if shape.graph is not None and shape.outputs is not None:
            began, ended = timing_event(), timing_event()
            began.record()
            shape.graph.replay()
            ended.record()
            self.state.window.add_replay(began, ended)
            return shape.outputs.copied()
        return self.eager(shape.inputs, hostless=False)

    def warm_up(self, key: tuple[int, int, int], shape: ShapeGraph) -> UpdateOutputs:
        """An eager update of a shape before its capture, in which any wait for the host raises:
        such a shape is refused before a capture could fail on it (a failed capture leaves the
        stream and the random generator in capture mode), and runs eagerly from then on."""
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        self.stepped = None  # a wait before the body begins must not find the last batch's step
        try:
            return self.eager(shape.inputs)
        except RuntimeError as err:
            if "synchroniz" not in str(err):
                raise
            torch.cuda.synchronize()  # what the refused update launched ends before the batch runs again
            applied = self.stepped
            why = (str(err).strip().splitlines() or ["?"])[0][:200]
            partly = "; that batch's optimizer step stopped at the wait" if applied is not None else ""
            self.refuse(key, shape, f"waits for the host ({why}){partly}")
        finally:
            torch.cuda.set_sync_debug_mode(previous)
        # refused in the optimizer's step, the batch's update stands as far as it went: run again,
        # it would move the weights stepped before the wait twice
        return applied if applied is not None else self.eager(shape.inputs, hostless=False)

    def refuse(self, key: tuple[int, int, int], shape: ShapeGraph, why: str) -> None:
        """From now on, ``shape``'s batches run eagerly, said once with ``why``."""
        shape.refused = True
        self.state.window.add_refusal()
        log(f"warning: --cuda-graphs: the update of {key[0]}×{key[1]}×{key[2]} {why}; such batches run eagerly")

    def eager(self, inputs: dict[str, torch.Tensor], hostless: bool = True) -> UpdateOutputs:
        """The update without a graph, on a side stream as a capture's warm-up must be;
        ``hostless``: as its graph will compute it, else as the eager path does (a shape that
        is never captured)."""
        side = self.side
        assert side is not None
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out = self.body(inputs, hostless=hostless)
        torch.cuda.current_stream().wait_stream(side)
        return out

    def body(self, inputs: dict[str, torch.Tensor], capturing: bool = False, hostless: bool = True) -> UpdateOutputs:
        """Forward, backward, clipping and the optimizer step: with ``hostless``, nothing here
        reads a tensor on the host."""
        state = self.state
        self.stepped = None
        state.opt.zero_grad(set_to_none=True)  # the backward writes fresh gradients, in the graph's pool
        with host_free() if hostless else contextlib.nullcontext():
            got = piece_loss(state, self.net, inputs, capturing=capturing)
        if got.loss.requires_grad:  # --head-only, a batch without links: nothing to learn from
            (got.loss * self.scale).backward()  # type: ignore[no-untyped-call]
        norm = clip(state.model, state.cfg.clip) if state.cfg.clip else None
        self.stepped = UpdateOutputs(got.nll.detach(), None if norm is None else norm.detach(), got.align)
        state.step()
        return self.stepped

    def record(self, key: tuple[int, int, int], shape: ShapeGraph) -> None:
        """Capture the update of this shape once (said once, with its time and memory)."""
        torch.cuda.synchronize()
        before, started = torch.cuda.memory_reserved(), time.perf_counter()
        opt = self.state.opt
        stateless = [p for group in opt.param_groups for p in group["params"] if not opt.state.get(p)]
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self.pool):
                outputs = self.body(shape.inputs, capturing=True)
        except torch.cuda.OutOfMemoryError:
            raise
        except RuntimeError as err:  # what the warm-ups did not meet: the run cannot go on
            cause = err.__context__ or err  # the capture's own end hides what broke it
            raise UserError(
                f"--cuda-graphs: capturing the update of {key[0]}×{key[1]}×{key[2]} failed "
                f"({(str(cause).strip().splitlines() or ['?'])[0][:200]}); train without --cuda-graphs"
            ) from err
        made = [p for p in stateless if opt.state.get(p)]
        if made:  # its first step was captured, not run: each replay would start its moments again
            for p in made:
                del opt.state[p]  # made afresh by the next eager step
            began = f"began the optimizer's state of {len(made)} weights in its capture"
            if shape.recaptured:
                self.refuse(key, shape, f"{began} again")
            else:  # their first gradients came in this shape: its warm-ups make their state now
                shape.recaptured, shape.seen = True, 0
                log(f"--cuda-graphs: the update of {key[0]}×{key[1]}×{key[2]} {began}: captured after warm-ups again")
            return
        shape.graph, shape.outputs = graph, outputs
        self.captured += 1
        grown, seconds = (torch.cuda.memory_reserved() - before) / 2**30, time.perf_counter() - started
        self.state.window.add_capture(seconds)
        log(
            f"--cuda-graphs: captured the update of {key[0]}×{key[1]}×{key[2]} (shape {self.captured}) in "
            f"{seconds:.2f} s, {grown:+.2f} GiB reserved"
        )
