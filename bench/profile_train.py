"""Where the time of one training update goes, at a given model size, on a CPU or a GPU.

    bin/profile-train DATA_BIN [--preset small] [--updates 20] [--threads 2] [--bf16] [--top 15]
                      [--encoder paper|cudnn] [--sampled-softmax K] [--compile [--compile-mode M]]
                      [--cuda-graphs [--graph-warmup 400]] [--fused-steps] [--device cpu|cuda] [--json FILE]

Builds the model as ``nmtkit train`` does, draws minibatches the way training
does (Appendix B batches of 80 from length-sorted pools), and times each part
of an update separately, synchronously, after 5 warm-up updates: batching,
the encoder, the decoder recurrence (attention + GRU), the output layer and
its loss, the backward pass, gradient clipping and the optimizer step. Then
torch's profiler lists the operators that take the most time over as many
updates more, run as training runs them (no synchronisation between parts, so
that the GPU's idle time is the host's and not the timing's), and counts the
operator calls per update that run a kernel of their
own (the innermost computing operators, views and allocations aside; with
--compile, a compiled region's fused kernels count one each): on a GPU each
is a launch, so this is what a compiled step saves.
Target tokens per second count </s>, as training's log does. On a GPU
(--device cuda) each part is timed after a synchronisation, the kernels are
those the GPU ran (CUDA kernel events), and the GPU's busy share is their
summed duration over the wall time of the profiled updates: what is left is
the GPU waiting for Python. The speed is the profiled updates'. --json writes
the figures for bin/gpu-check.

With --cuda-graphs the updates are ``nmtkit train --cuda-graphs``'s own (its training state and
its whole update, each batch padded to its shape and replayed as one CUDA graph), with Adam as
above: no part is timed (a replay is one launch), updates run until every shape has been met and
captured (at most --graph-warmup), then --updates more are profiled. Beside the profiler's busy
share stands the one training logs (CUDA events around each replay over the wall time), measured
over the same updates: two ways to the same figure.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from nmtkit.core.distributed import Place
from nmtkit.core.runtime import setup
from nmtkit.core.settings import RuntimeConfig
from nmtkit.data.batching import Batches, collate
from nmtkit.data.binarized import Corpus
from nmtkit.data.vocab import PAD
from nmtkit.models.base import Seq2Seq
from nmtkit.models.build import build_model
from nmtkit.models.config import FAMILIES, ModelConfig, model_config
from nmtkit.models.fused import use_fused
from nmtkit.models.loss import shortlist
from nmtkit.train.config import TrainConfig
from nmtkit.train.graphs import WholeUpdate, updater
from nmtkit.train.parts import CompiledSteps, Parallel
from nmtkit.train.state import start
from nmtkit.train.window import LossWindow

from .bench_common import fail, write_text

# Operators that only make views or allocate: no kernel of their own.
NO_KERNEL = {
    f"aten::{name}"
    for name in (
        "as_strided as_strided_ resolve_conj resolve_neg view _unsafe_view reshape empty empty_strided empty_like "
        "lift_fresh detach detach_ alias t transpose expand unsqueeze squeeze slice select unbind permute split "
        "narrow promote_types result_type contiguous to _to_copy set_ unflatten flatten chunk numpy_T "
        "_reshape_alias split_with_sizes"
    ).split()
}


def kernels(prof: torch.profiler.profile) -> int:
    """Profiled calls that run a kernel: the innermost computing aten operators (views and
    allocations aside), and the compiled regions' fused kernels (named after what they fuse)."""

    def computes(e: Any) -> bool:
        return bool(e.name.startswith("aten::") and e.name not in NO_KERNEL)

    def innermost(e: Any) -> bool:
        below = list(e.cpu_children)
        while below:
            child = below.pop()
            if computes(child):
                return False
            below.extend(child.cpu_children)
        return True

    events = prof.events()  # type: ignore[no-untyped-call]
    leaf = sum(1 for e in events if computes(e) and innermost(e))
    fused = sum(1 for e in events if e.name.startswith(("cpp_fused", "triton_")))
    return leaf + fused


def cuda_kernels(prof: torch.profiler.profile) -> list[Any]:
    """The kernels the GPU ran while ``prof`` profiled (a graph's replayed ones included)."""
    events = prof.events()  # type: ignore[no-untyped-call]
    return [e for e in events if e.device_type == torch.profiler.DeviceType.CUDA]


class Updates:
    """Training updates of ``model`` on the corpus's batches, each part timed (after a
    synchronisation on a GPU) into :attr:`spent` when asked, and target tokens counted."""

    def __init__(self, args: argparse.Namespace, corpus: Corpus, model: Seq2Seq, cfg: ModelConfig):
        self.args, self.model, self.cfg = args, model, cfg
        self.device = torch.device(args.device)
        self.src, self.tgt = corpus.split("train")
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)  # as nmtkit train
        self.batches: Iterator[Any] = iter(Batches(self.src.sizes, self.tgt.sizes, args.batch_size, 20, 50, 1234))
        self.autocast = torch.autocast(self.device.type, torch.bfloat16, enabled=args.bf16)
        self.spent: dict[str, float] = defaultdict(float)
        self.tokens = 0  # of the updates since the count was last reset
        self.timed = False
        self.clock = 0.0

    def mark(self, name: str) -> None:
        if self.device.type == "cuda" and self.timed:
            torch.cuda.synchronize()  # a part's time is its kernels', not their launches'
        now = time.perf_counter()
        if self.timed:
            self.spent[name] += now - self.clock
        self.clock = now

    def __call__(self, timed: bool) -> None:
        self.timed, self.clock = timed, time.perf_counter()
        model, device = self.model, self.device
        batch = {k: v.to(device, non_blocking=True) for k, v in collate(self.src, self.tgt, next(self.batches)).items()}
        k = self.args.shortlist
        words = shortlist(batch["tgt_out"], self.cfg.tgt_vocab, k) if k else None
        self.mark("batching (memmap → padded tensors)")
        with self.autocast:
            enc = model.encode(batch["src"], batch["src_mask"])
            self.mark("encoder forward")
            t = model.teacher_forced(enc, batch["tgt_in"])[0]
            self.mark("decoder recurrence forward (attention, GRU, readout)")
            loss = model.output_nll(t, batch["tgt_out"], words)
            self.mark("output layer + softmax + NLL forward")
        self.opt.zero_grad(set_to_none=True)
        (loss / batch["src"].shape[0]).backward()  # type: ignore[no-untyped-call]
        self.mark("backward (all)")
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        self.mark("gradient clipping")
        self.opt.step()
        self.mark("optimizer step (Adam)")
        self.tokens += int((batch["tgt_out"] != PAD).sum())  # of the batch on the host: no wait


def parser() -> argparse.ArgumentParser:
    class Shown(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        """The module's text as written, and each option's default."""

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=Shown)
    ap.add_argument("data_bin")
    ap.add_argument("--arch", default="rnnsearch", help="nmtkit train --arch")
    ap.add_argument("--preset", default="small", help="nmtkit train --preset")
    ap.add_argument("--updates", type=int, default=20, help="updates profiled")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    ap.add_argument("--batch-size", type=int, default=80, help="sentences per update")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--encoder", default="paper", choices=["paper", "cudnn"], help="nmtkit train --encoder")
    ap.add_argument(
        "--sampled-softmax", dest="shortlist", type=int, default=0, help="Jean et al.'s sampled softmax over K words"
    )
    ap.add_argument("--top", type=int, default=15, help="operators listed")
    ap.add_argument("--compile", action="store_true", help="the recurrences' steps through torch.compile")
    ap.add_argument("--compile-mode", default="default", help="with --compile: torch.compile's mode")
    ap.add_argument("--cuda-graphs", action="store_true", help="nmtkit train --cuda-graphs's whole update")
    ap.add_argument("--fused-steps", action="store_true", help="the recurrences' hand-written passes (train's flag)")
    ap.add_argument(
        "--graph-warmup", type=int, default=400, help="updates at most (and at least 5) before every shape is captured"
    )
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures to this file")
    return ap


def sized(args: argparse.Namespace, corpus: Corpus) -> ModelConfig:
    """The model's config at the preset's sizes and the corpus's vocabularies."""
    family = FAMILIES[args.arch]
    return model_config(
        args.arch,
        **family.preset_sizes(args.preset),
        **({"encoder": args.encoder} if "encoder" in family.flags() else {}),
        src_vocab=len(corpus.vocab(corpus.src_lang)),
        tgt_vocab=len(corpus.vocab(corpus.tgt_lang)),
    )


def built(args: argparse.Namespace, corpus: Corpus) -> tuple[Seq2Seq, ModelConfig]:
    """The model as ``nmtkit train`` builds it, on the device, its steps compiled if asked."""
    cfg = sized(args, corpus)
    model = build_model(cfg).to(torch.device(args.device)).train()
    use_fused(model, args.fused_steps)
    if args.compile:
        import torch._inductor.config as inductor  # torch's compiler: loaded only to compile

        inductor.cpp.enable_kernel_profile = True  # each fused C++ kernel a profiled call
        model.compile_steps(args.compile_mode)
    return model, cfg


def graph_updates(args: argparse.Namespace, save_dir: Path) -> tuple[Callable[[], int], WholeUpdate | None]:
    """Updates as ``nmtkit train --cuda-graphs`` runs them, on a training state of its own: each
    call runs the next batch's and returns its target tokens (``</s>`` counted); and the whole
    update (None where the run keeps the eager one)."""
    cfg = TrainConfig(
        optimizer="adam",
        lr=1e-3,
        batch_size=args.batch_size,
        valid_bleu=False,
        device=args.device,
        threads=args.threads,
        bf16=args.bf16,
        cuda_graphs=True,
        fused_steps=args.fused_steps,
    )
    runtime = setup(RuntimeConfig(cfg.device, cfg.threads, cfg.bf16, cfg.tf32, logits_blas=cfg.logits_blas))
    data = Path(args.data_bin)
    state = start(data, save_dir, sized(args, Corpus(data)), cfg, False, Parallel(Place(), runtime))
    update = updater(state, state.parallel.wrap(state.model), CompiledSteps(state.model, cfg))
    use_fused(state.model, cfg.fused_steps)  # as the training loop switches them
    state.model.train()
    batches = iter(state.batches)

    def step() -> int:
        idx = next(batches)
        update(idx)
        return int(state.train_tgt.sizes[idx].sum()) + len(idx)

    return step, update if isinstance(update, WholeUpdate) else None


def settled(whole: WholeUpdate | None) -> bool:
    """Whether every shape has been met and captured (or refused): each update now replays."""
    if whole is None or not whole.capture:
        return True
    done = all(shape.graph is not None or shape.refused for shape in whole.shapes.values())
    return done and len(whole.shapes) == len(whole.fitted.shapes)


def profile_graphs(args: argparse.Namespace) -> None:
    """--cuda-graphs: the whole update's kernels, speed and busy share, two ways."""
    on_gpu = torch.device(args.device).type == "cuda"
    with tempfile.TemporaryDirectory() as tmp:
        step, whole = graph_updates(args, Path(tmp))
        met = 0
        while met < 5 or (met < args.graph_warmup and not settled(whole)):
            step()
            met += 1
        if whole is not None:  # the training log's own measure, over the profiled updates alone
            whole.state.window = LossWindow(1)
        activities = [torch.profiler.ProfilerActivity.CPU]
        activities += [torch.profiler.ProfilerActivity.CUDA] if on_gpu else []
        with torch.profiler.profile(activities=activities) as prof:
            started, tokens = time.perf_counter(), 0
            for _ in range(args.updates):
                tokens += step()
            if on_gpu:
                torch.cuda.synchronize()
            total = time.perf_counter() - started
    figures: dict[str, Any] = {
        "arch": args.arch,
        "preset": args.preset,
        "device": args.device,
        "bf16": args.bf16,
        "cuda_graphs": True,
        "fused_steps": args.fused_steps,
        "warmup_updates": met,
        "captured": 0 if whole is None else whole.captured,
        "every_shape_captured": settled(whole) and on_gpu,
        "updates_per_s": args.updates / total,
        "tok_per_s": tokens / total,
    }
    if not on_gpu:
        figures["kernels_per_update"] = kernels(prof) / args.updates
    elif whole is not None:
        ran = cuda_kernels(prof)
        replays = whole.state.window.replays
        figures |= {
            "kernels_per_update": len(ran) / args.updates,
            "gpu_busy_share": sum(e.device_time for e in ran) / 1e6 / total,
            "replay_busy_share": sum(a.elapsed_time(b) for a, b in replays) / 1000 / total,
            "replayed": len(replays),
        }
    print(
        f"{args.arch} --preset {args.preset} --cuda-graphs, batch {args.batch_size}"
        f"{', bf16' if args.bf16 else ''}{', fused steps' if args.fused_steps else ''}: "
        f"{figures['captured']} shapes captured in {met} updates, then "
        f"{figures['updates_per_s']:.2f} updates/s, {figures['tok_per_s']:,.0f} target tok/s (profiler on)"
    )
    if "gpu_busy_share" in figures:
        print(
            f"GPU kernels per update: {figures['kernels_per_update']:,.0f}; the GPU busy "
            f"{100 * figures['gpu_busy_share']:.0f}% of the wall time by the profiler's kernels, "
            f"{100 * figures['replay_busy_share']:.0f}% by the replays' CUDA events "
            f"({figures['replayed']} of {args.updates} updates replayed)"
        )
    if args.json_out:
        write_text(Path(args.json_out), json.dumps(figures, indent=1))
    order = "self_device_time_total" if on_gpu else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=order, row_limit=args.top, max_name_column_width=40))


def figures_of(args: argparse.Namespace, update: Updates, prof: torch.profiler.profile, total: float) -> dict[str, Any]:
    """What --json writes: speed, each part's milliseconds, kernels per update (and on a GPU its
    busy share); the kernels' line printed."""
    figures: dict[str, Any] = {
        "arch": args.arch,
        "preset": args.preset,
        "device": args.device,
        "bf16": args.bf16,
        "fused_steps": args.fused_steps,
        "compile": args.compile and args.compile_mode,
        "updates_per_s": args.updates / total,
        "tok_per_s": update.tokens / total,
        "parts_ms": {k: 1000 * v / args.updates for k, v in update.spent.items()},
    }
    if update.device.type == "cuda":
        ran = cuda_kernels(prof)
        busy = sum(e.device_time for e in ran) / 1e6  # µs → s
        figures |= {"kernels_per_update": len(ran) / args.updates, "gpu_busy_share": busy / total}
        print(
            f"GPU kernels per update: {figures['kernels_per_update']:,.0f}; the GPU busy "
            f"{100 * figures['gpu_busy_share']:.0f}% of the wall time (kernels' summed duration)"
        )
    else:
        figures["kernels_per_update"] = kernels(prof) / args.updates
        print(
            f"kernels per update: {figures['kernels_per_update']:,.0f} "
            f"(computing operators and compiled kernels; on a GPU, one launch each)"
        )
    return figures


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    on_gpu = torch.device(args.device).type == "cuda"
    if on_gpu and not torch.cuda.is_available():
        fail("profile-train", "no CUDA GPU here (--device cpu profiles on the CPU)")
    if args.cuda_graphs and (args.compile or args.shortlist):
        raise SystemExit("profile-train: --cuda-graphs captures the plain update (no --compile, no --sampled-softmax)")
    if args.fused_steps and args.compile:
        raise SystemExit("profile-train: --fused-steps and --compile are two ways to speed the same loops: give one")
    if args.cuda_graphs:
        return profile_graphs(args)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    corpus = Corpus(args.data_bin)
    model, cfg = built(args, corpus)
    update = Updates(args, corpus, model, cfg)
    for _ in range(5):  # the same batches with and without --compile, which compiles here
        update(False)
    for _ in range(args.updates):  # each part timed on its own, synchronised
        update(True)
    update.tokens = 0
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if on_gpu else [])
    with torch.profiler.profile(activities=activities) as prof:
        started = time.perf_counter()
        for _ in range(args.updates):
            update(False)
        if on_gpu:
            torch.cuda.synchronize()
        total = time.perf_counter() - started
    params = sum(p.numel() for p in model.parameters())
    print(
        f"{args.arch} --preset {args.preset} ({params:,} parameters, target vocabulary {cfg.tgt_vocab:,}), "
        f"batch {args.batch_size}, {args.threads} threads{', bf16' if args.bf16 else ''}, "
        f"encoder {args.encoder}{f', shortlist {args.shortlist}' if args.shortlist else ''}"
        f"{f', compiled ({args.compile_mode})' if args.compile else ''}{', fused steps' if args.fused_steps else ''}: "
        f"{args.updates / total:.2f} updates/s, {update.tokens / total:,.0f} target tok/s (profiler on)"
    )
    figures = figures_of(args, update, prof, total)
    if args.json_out:
        write_text(Path(args.json_out), json.dumps(figures, indent=1))
    print("\n| part of an update | ms | share |\n|---|---|---|")
    timed = sum(update.spent.values())  # the synchronised updates': their parts add up to it
    for name, seconds in update.spent.items():
        print(f"| {name} | {1000 * seconds / args.updates:.1f} | {100 * seconds / timed:.1f}% |")
    print(f"\nTop operators by self CPU time over {args.updates} updates:\n")
    order = "self_device_time_total" if on_gpu else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=order, row_limit=args.top, max_name_column_width=40))
