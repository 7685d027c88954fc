"""The interface every model offers to training and to search.

``encode(src, mask) -> EncoderOut``, ``init_state(enc) -> state``,
``step(y_prev, state, enc) -> (logp, state, attn)`` for one target position,
and ``teacher_forced(enc, tgt_in) -> (t, attn)``, the readout features of every
target position and the attention weights, built from the same recurrence and readout as
``step``.
``logits(t)``, ``output_nll(t, tgt_out)`` and, in ``step``, ``next_word_logp`` apply the
output softmax of ``output_layer()``;
``forward`` chains them for training and returns a :class:`ModelOutput`. Models see ids
and sizes only, never text or vocabulary files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import cast

import torch
from torch import nn

from ..core.errors import UserError
from .config import ModelConfig
from .fused import Fusable
from .layers import inference_linear, restricted_output
from .loss import alignment_cross_entropy, linear_cross_entropy, shortlisted_cross_entropy, unlinked_to_end


@dataclass
class EncoderOut:
    """Annotations ``h`` (B, Tx, 2n), the mask (B, Tx), what the decoder's context needs
    precomputed once per sentence (``keys``: U_a h (B, Tx, n') for attention, C c (B, 3n) for
    RNNencdec's fixed context), a summary of the sentence for the initial state, and with a
    coverage model what it precomputes of ``h`` (:meth:`.coverage.Coverage.precompute`: each
    source word's fertility Φ (B, Tx), linguistic, or W_h h + b (B, Tx, 3d), neural)."""

    h: torch.Tensor
    mask: torch.Tensor
    keys: torch.Tensor | None = None
    summary: torch.Tensor | None = None
    coverage: torch.Tensor | None = None

    def _rows(self, take: Callable[[torch.Tensor], torch.Tensor]) -> EncoderOut:
        optional = {f.name: getattr(self, f.name) for f in fields(self)[2:]}
        return EncoderOut(
            take(self.h), take(self.mask), **{k: None if v is None else take(v) for k, v in optional.items()}
        )

    def repeat(self, k: int) -> EncoderOut:
        """Each sentence k times in a row (for k beams): row i·k + j is sentence i."""
        return self if k == 1 else self._rows(lambda v: v.repeat_interleave(k, 0))

    def select(self, rows: torch.Tensor) -> EncoderOut:
        """These rows only (search drops the sentences it has finished)."""
        return self._rows(lambda v: v.index_select(0, rows))


@dataclass(frozen=True)
class ModelOutput:
    """What :meth:`Seq2Seq.forward` returns, whichever arguments it was given.

    Without targets, ``logits`` (B, Ty, K) and nothing else. With targets ``tgt_out``, no
    logits (no B×Ty×K tensor is ever made) but float32 sums over the target words: ``loss``,
    what training takes the gradient of (label-smoothed when asked), and ``nll``, the plain
    NLL that is logged (the same tensor as ``loss`` without smoothing). With a guide too,
    ``align_loss``, the alignment's cross-entropy (:func:`~.loss.alignment_cross_entropy`), and
    ``align_positions``, how many target positions it covers; both None without a guide."""

    logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None
    nll: torch.Tensor | None = None
    align_loss: torch.Tensor | None = None
    align_positions: torch.Tensor | None = None


class Seq2Seq(Fusable):
    cfg: ModelConfig
    # restrict_output's cut of the output layer, as a function of the readout features: held as a
    # callable rather than as the cut nn.Module, which assigning would make a submodule (into the
    # model's state_dict and parameters, though it is search's and never trained)
    restricted: Callable[[torch.Tensor], torch.Tensor] | None = None
    # train --head-only: the frozen model runs as search runs it (no dropout drawn), the head alone
    # as in training, so that the head learns from the attention that translation will give it
    head_alone: bool = False

    def train(self, mode: bool = True) -> Seq2Seq:
        super().train(mode and not self.head_alone)
        head = getattr(self, "align_head", None)
        if self.head_alone and head is not None:
            head.train(mode)
        return self

    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> EncoderOut:
        raise NotImplementedError

    def init_state(self, enc: EncoderOut) -> torch.Tensor:
        raise NotImplementedError

    def step(
        self, y_prev: torch.Tensor, state: torch.Tensor, enc: EncoderOut
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Log-probabilities of the next word, the new state and α."""
        raise NotImplementedError

    def teacher_forced(self, enc: EncoderOut, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Readout features (B, Ty, ·) of every position of ``tgt_in`` and α (B, Ty, Tx) or None."""
        raise NotImplementedError

    def step_functions(self) -> list[tuple[nn.Module, str]]:
        """The methods run once per position in teacher forcing, as (module, name): what
        :meth:`compile_steps` compiles, each replaced on its instance by the compiled one. None
        by default."""
        return []

    def compile_steps(self, mode: str = "default") -> None:
        """Run each of :meth:`step_functions` through ``torch.compile`` (dynamic shapes, so one
        compilation serves every batch size and sentence length): each step's elementwise work
        becomes a few fused kernels instead of dozens of launches, forward and backward.
        ``mode`` is torch.compile's: "reduce-overhead" replays each step as a CUDA graph on
        GPUs (one graph per distinct shape; a CPU ignores it)."""
        found = self.step_functions()
        if not found:
            raise UserError(f"--compile: the {self.cfg.arch} model has no per-position step to compile")
        for module, name in found:
            # an instance attribute of the method's own name, so the loops that call the method call
            # the compiled one; a function, not a Module, so nothing is registered
            setattr(module, name, torch.compile(getattr(module, name), dynamic=True, mode=mode))

    def attention_follows_input(self) -> bool:
        """Whether the attention of step t aligns the word fed in at t (y_{t−1}) rather than the
        word predicted at t. The latter for Bahdanau et al. (α_ij weighs the annotations for
        y_i); Luong et al.'s content-based scores say the former (their footnote 14)."""
        return False

    def output_layer(self) -> nn.Linear:
        """The linear map from readout features to target-vocabulary logits."""
        raise NotImplementedError

    def next_word_logp(self, t: torch.Tensor) -> torch.Tensor:
        """log p(y) from one step's readout features t (B, ·): over every target word, or over
        the rows chosen by :meth:`restrict_output` (column j is then the j-th of them)."""
        restricted = self.restricted
        # a cut of a few thousand rows: MKL's plain product, which beat oneDNN's blocked one there
        logits = inference_linear(self.output_layer(), t) if restricted is None else restricted(t)
        return torch.log_softmax(logits.float(), -1)

    def tie_weights(self) -> None:
        """Make parameters that the model shares one tensor again (after weights are assigned)."""

    def restrict_output(self, rows: torch.Tensor | None) -> None:
        """Let :meth:`next_word_logp` score only the target words ``rows`` (sorted ids, e.g. a
        :meth:`~nmtkit.data.lexicon.Lexicon.candidates` list), or every word again (None)."""
        self.restricted = None if rows is None else restricted_output(self.output_layer(), rows).__call__

    def logits(self, t: torch.Tensor) -> torch.Tensor:
        return cast(torch.Tensor, self.output_layer()(t))

    def output_nll(
        self, t: torch.Tensor, tgt_out: torch.Tensor, words: torch.Tensor | None = None, smoothing: float = 0.0
    ) -> torch.Tensor:
        """Summed NLL of ``tgt_out``; over the shortlist ``words`` only, if given (training). With
        label ``smoothing``: [smoothed loss, NLL] (:func:`~.loss.linear_cross_entropy`)."""
        out = self.output_layer()
        if words is not None:
            return shortlisted_cross_entropy(
                t.flatten(0, 1), out.weight, out.bias, tgt_out.flatten(), words, ignore_index=0, smoothing=smoothing
            )
        return linear_cross_entropy(
            t.flatten(0, 1), out.weight, out.bias, tgt_out.flatten(), ignore_index=0, smoothing=smoothing
        )  # <pad>

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_out: torch.Tensor | None = None,
        words: torch.Tensor | None = None,
        smoothing: float = 0.0,
        guide: torch.Tensor | None = None,
    ) -> ModelOutput:
        """The logits for the target prefix ``tgt_in`` (B, Ty); or, given the targets ``tgt_out``
        (B, Ty), the loss and the NLL, with the softmax over the target words ``words`` if given
        (Jean et al.'s shortlist) and label ``smoothing`` ε; and given a ``guide`` (B, Ty, Tx;
        guided alignment) the alignment loss too. :class:`ModelOutput` says which field holds
        what."""
        enc = self.encode(src, src_mask)
        t, alpha = self.teacher_forced(enc, tgt_in)
        if tgt_out is None:
            return ModelOutput(logits=self.logits(t))
        out = self.output_nll(t, tgt_out, words, smoothing)
        loss, nll = (out[0], out[1]) if smoothing else (out, out)
        if guide is None:
            return ModelOutput(loss=loss, nll=nll)
        if alpha is None:
            raise UserError(f"guided alignment needs attention; the {self.cfg.arch} model has none")
        head = self.head_alignment_logp(enc, t, tgt_out, alpha)
        if head is not None:  # the links train the head; the attention stays translation's
            align, positions = alignment_cross_entropy(head, unlinked_to_end(guide, src_mask, tgt_out), logp=True)
        else:
            fed = tgt_in != 0 if self.attention_follows_input() else None  # <pad> is 0
            align, positions = alignment_cross_entropy(alpha, guide, fed)
        return ModelOutput(loss=loss, nll=nll, align_loss=align, align_positions=positions)

    def head_alignment_logp(
        self, enc: EncoderOut, t: torch.Tensor, tgt_out: torch.Tensor, alpha: torch.Tensor | None
    ) -> torch.Tensor | None:
        """log A (B, Ty, Tx) of the alignment head (:mod:`.alignment_head`) for the words
        ``tgt_out`` predicted from the readouts ``t``, or None for a model without one."""
        return None

    def has_alignment_head(self) -> bool:
        return getattr(self, "align_head", None) is not None

    @torch.no_grad()
    def head_alignment(self, enc: EncoderOut, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor | None:
        """The alignment head's A (B, Ty, Tx) along given targets, by teacher forcing (forced
        decoding knows every word in advance), or None for a model without a head."""
        if not self.has_alignment_head():
            return None
        t, alpha = self.teacher_forced(enc, tgt_in)
        logp = self.head_alignment_logp(enc, t, tgt_out, alpha)
        return None if logp is None else logp.exp()
