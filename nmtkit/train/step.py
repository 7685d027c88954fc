"""One update of Appendix B's recipe, as the loop runs it eagerly: forward and backward over each
piece of the minibatch (``update_freq`` pieces accumulate), the gradient L2 norm clipped, one
optimizer step. The cost is the summed target NLL per sentence, averaged over the minibatch.

:func:`piece_loss` and :func:`clip` are shared with the whole update captured as a CUDA graph
(:mod:`.graphs`), so that both paths compute the same update."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.console import log
from ..core.errors import UserError
from ..data.batching import collate, to_device
from ..data.vocab import PAD
from ..models.base import ModelOutput
from ..models.loss import shortlist
from .optimizer import learning_rate, scheduled, set_rate
from .parts import CompiledSteps
from .state import TrainState


@dataclass
class PieceLoss:
    """What one piece of a minibatch gives: ``loss``, the sum to take the gradient of (label
    smoothing and guided alignment included); ``nll``, the plain summed NLL that is logged; and
    guided alignment's summed loss and guided words (None without links). Tensors on the device."""

    loss: torch.Tensor
    nll: torch.Tensor
    align: tuple[torch.Tensor, torch.Tensor] | None = None


def piece_loss(
    state: TrainState,
    net: torch.nn.Module,
    batch: dict[str, torch.Tensor],
    words: torch.Tensor | None = None,
    capturing: bool = False,
) -> PieceLoss:
    """The summed loss of one collated batch on the device, under the run's autocast."""
    cfg = state.cfg
    with state.parallel.runtime.autocast(cached=not capturing):
        out: ModelOutput = net(
            batch["src"],
            batch["src_mask"],
            batch["tgt_in"],
            batch["tgt_out"],
            words,
            cfg.label_smoothing,
            batch.get("guide"),
        )
    assert out.loss is not None and out.nll is not None  # given targets, forward gives both
    if out.align_loss is None or out.align_positions is None:
        return PieceLoss(out.loss, out.nll)
    # a guided batch: each linked target word, its NLL and weight × its alignment loss
    loss = out.loss + cfg.guided_alignment_weight * out.align_loss
    return PieceLoss(loss, out.nll, (out.align_loss.detach(), out.align_positions))


def set_scheduled_rate(state: TrainState) -> None:
    """The rate of the coming update, when the schedule moves it, and the share of its weights in
    the average of --ema-decay."""
    cfg = state.cfg
    if state.average is not None:
        state.average.prepare(state.progress.step + 1)
    if scheduled(cfg):
        set_rate(
            state.opt,
            learning_rate(
                cfg, state.batches.drawn_epoch, state.progress.step + 1, state.progress.budget, state.progress.decays
            ),
        )


def lower_on_plateau(state: TrainState) -> None:
    """``--lr-decay plateau``, after a validation is counted: one more decay each time more than
    ``--decay-patience`` validations in a row have found no better dev score (torch's
    ReduceLROnPlateau without a cooldown), none during the warm-up (as fairseq's); the count is
    saved with the run, so a resumed run keeps its rate."""
    cfg, progress = state.cfg, state.progress
    every = cfg.decay_patience + 1
    if cfg.lr_decay != "plateau" or progress.step < cfg.warmup or not progress.bad_evals or progress.bad_evals % every:
        return
    progress.decays += 1
    rate = learning_rate(cfg, state.batches.drawn_epoch, progress.step + 1, progress.budget, progress.decays)
    said = f"{progress.bad_evals} validation{'s' if progress.bad_evals > 1 else ''}"
    log(f"no better dev score in {said}: the learning rate × {cfg.decay:g}, now {rate:.3g}")


def update(state: TrainState, net: torch.nn.Module, steps: CompiledSteps, idx: np.ndarray) -> None:
    """Forward and backward over this process's share of each piece of minibatch ``idx``, then
    the optimizer step; the summed loss and gradient norm go to the window."""
    cfg, device, world = state.cfg, state.device, state.parallel.world
    set_scheduled_rate(state)
    src, tgt = state.train_src, state.train_tgt
    pieces = state.batches.share(idx)
    loss_total: torch.Tensor | None = None
    ntok = nsent = 0
    state.opt.zero_grad(set_to_none=True)
    for k, mine in enumerate(pieces):
        steps.new_forward()
        batch = collate(src, tgt, mine, cfg.pad_to_multiple, state.train_links, state.model_cfg.right_to_left)
        ntok, nsent = ntok + int((batch["tgt_out"] != PAD).sum()), nsent + len(mine)
        if cfg.shortlist:  # to the device with the batch, through pinned memory
            batch["words"] = shortlist(batch["tgt_out"], state.model_cfg.tgt_vocab, cfg.shortlist, PAD)
        batch = to_device(batch, device)
        words = batch.pop("words", None)
        try:
            with state.parallel.quiet(k, len(pieces)):
                got = piece_loss(state, net, batch, words)
                if got.align is not None:
                    state.window.add_alignment(*got.align)
                # scaled so that the gradients are those of the whole minibatch's summed NLL per
                # sentence (DDP divides by the world); --head-only, a batch without links: none
                if got.loss.requires_grad:
                    (got.loss * world / len(idx)).backward()  # type: ignore[no-untyped-call]
        except torch.cuda.OutOfMemoryError:
            raise out_of_memory(len(mine), batch["tgt_in"].shape[1]) from None
        nll = got.nll.detach()
        loss_total = nll if loss_total is None else loss_total + nll  # logged: plain NLL
    assert loss_total is not None  # share() gives at least one piece
    norm = clip(state.model, cfg.clip) if cfg.clip else None
    state.step()
    state.window.add(loss_total, norm, ntok, nsent, int(tgt.sizes[idx].sum()) + len(idx))


def out_of_memory(sentences: int, tokens: int) -> UserError:
    return UserError(
        f"out of GPU memory on a batch of {sentences} sentences × {tokens} tokens; lower --batch-size "
        f"(or --max-tokens), raise --update-freq, or lower --max-len"
    )


def clip(model: torch.nn.Module, limit: float) -> torch.Tensor:
    """Clip the gradient's L2 norm to ``limit`` and return the norm before. An alignment head is
    clipped on its own, so that its gradient never scales down the translation model's (whose
    norm is the one returned and logged)."""
    head = getattr(model, "align_head", None)
    apart = set() if head is None else {id(p) for p in head.parameters()}
    if head is not None and any(p.grad is not None for p in head.parameters()):
        torch.nn.utils.clip_grad_norm_(head.parameters(), limit)
    rest = [p for p in model.parameters() if id(p) not in apart and p.grad is not None]
    # none (--head-only): clip_grad_norm_'s zero would be a CPU tensor, beside the device's losses
    if not rest:
        return torch.zeros((), device=next(model.parameters()).device)
    return torch.nn.utils.clip_grad_norm_(rest, limit)
