"""A training run's state, and how it starts: from scratch, from a checkpoint's weights
(``--init-from``), or resumed exactly from ``SAVE_DIR/last.pt``."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from .. import checkpoint
from ..checkpoint import Checkpoint, Progress, TextSides
from ..core.console import log
from ..core.errors import FormatError, UserError
from ..core.files import writing_into
from ..core.temporaries import remove_stale_temporaries
from ..core.wording import counted
from ..data.batching import Batches
from ..data.binarized import Corpus, TokenArray
from ..data.lexicon import Lexicon, lexicon_of
from ..data.manifest import MANIFEST
from ..models.base import Seq2Seq
from ..models.build import build_model
from ..models.config import LuongConfig, ModelConfig
from . import runlog
from .board import Board
from .config import TrainConfig
from .continued import resumed, started_from, with_head
from .ema import Average
from .optimizer import load_optimizer, optimizer, scheduled, set_rate
from .parts import Parallel
from .window import LossWindow

HEAD = "align_head."  # the alignment head's parameters (--head-only trains them alone)


@dataclass
class TrainState:
    """Everything the loop reads and advances."""

    cfg: TrainConfig
    model_cfg: ModelConfig
    model: Seq2Seq
    opt: torch.optim.Optimizer
    batches: Batches
    corpus: Corpus
    sides: TextSides
    save_dir: Path
    parallel: Parallel
    train_src: TokenArray
    train_tgt: TokenArray
    train_links: TokenArray | None = None  # with --guided-alignment-weight
    progress: Progress = field(default_factory=Progress)
    lexicon: Lexicon | None = None  # for translate --shortlist: built as the run starts, or resumed
    window: LossWindow = field(default_factory=lambda: LossWindow(1))
    clock: float = 0.0  # perf_counter() at the run's update 0, resumed time included
    board: Board = field(default_factory=Board)  # --tensorboard's copy of metrics.jsonl (rank 0)
    last_kept: bool = False  # whether save_dir/last.pt holds this run (resumed from it, or saved since)
    average: Average | None = None  # --ema-decay's
    trained_on: str | None = None  # the training split's fingerprint, saved in last.pt
    validated_on: str | None = None  # the valid split's
    carried: dict[str, Any] | None = None  # the window of losses a resumed last.pt saved between reports
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # a resumed run's is its last.pt's
    # what a resumed run says before it goes on (settings it changes or does not take): unsaid
    # when the run has nothing left to do, where none of them would be used
    notes: list[str] = field(default_factory=list)

    @property
    def device(self) -> torch.device:
        return self.parallel.device

    @property
    def scored(self) -> Seq2Seq:
        """The model that validation scores and the checkpoints translate with: the average of
        its weights with --ema-decay, else the model."""
        return self.average.model if self.average is not None else self.model

    def step(self) -> None:
        """The optimizer's step, then the average's."""
        self.opt.step()
        if self.average is not None:
            self.average.update()

    def finished(self) -> bool:
        """Whether a budget is spent: updates, epochs or minutes, the minutes with the time of the
        final validation kept back (``progress.validation_seconds``), so the run ends within them."""
        return any(self.spent())

    def spent(self) -> tuple[bool, bool, bool]:
        """Which budgets are spent: --max-updates, --max-epochs, --max-minutes (the first two the
        same on every process)."""
        cfg, progress = self.cfg, self.progress
        return (
            bool(cfg.max_updates and progress.step >= cfg.max_updates),
            bool(cfg.max_epochs and self.batches.epoch >= cfg.max_epochs),
            bool(cfg.max_minutes and progress.seconds + progress.validation_seconds >= 60 * cfg.max_minutes),
        )

    def patience_spent(self) -> bool:
        """Whether --patience validations in a row found no better dev score."""
        return bool(self.cfg.patience and self.progress.bad_evals >= self.cfg.patience)

    def counted_out(self) -> bool:
        """Whether the budget in updates or epochs is spent: the same on every process."""
        updates, epochs, _ = self.spent()
        return updates or epochs

    def tick(self) -> None:
        """One update done."""
        self.progress.step += 1
        self.progress.seconds = time.perf_counter() - self.clock


def start(
    data_dir: Path,
    save_dir: Path,
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    resume: bool,
    parallel: Parallel,
    typed: Collection[str] | None = None,
) -> TrainState:
    """The state of a new run, of one started from --init-from's weights, or of the run in
    SAVE_DIR/last.pt (resumed exactly: weights, optimizer, batch position, RNGs)."""
    corpus = _corpus(data_dir, save_dir)
    last, trained_on = save_dir / "last.pt", corpus.fingerprint("train")
    ckpt = _resumable(last, corpus, trained_on) if resume and last.exists() else None
    if ckpt is not None and cfg.init_from and parallel.rank == 0:
        log(
            f"--init-from {cfg.init_from} is ignored: {last} exists and that run resumes "
            f"(--reset starts over from {cfg.init_from})"
        )
    init = _init_from(cfg.init_from, corpus) if cfg.init_from and ckpt is None else None
    notes: list[str] = []
    if ckpt is not None:
        model_cfg, cfg, notes = resumed(ckpt, model_cfg, cfg, last, parallel.rank == 0, typed)
    elif init is not None:
        model_cfg = started_from(init, model_cfg, cfg, parallel.rank == 0, typed)
    else:
        derived: dict[str, Any] = {
            "src_vocab": len(corpus.vocab(corpus.src_lang)),
            "tgt_vocab": len(corpus.vocab(corpus.tgt_lang)),
        }
        if isinstance(model_cfg, LuongConfig) and cfg.max_len:
            derived["max_src"] = cfg.max_len + 1  # + </s>
        model_cfg = replace(model_cfg, **derived)
    torch.manual_seed(cfg.seed)
    model = build_model(model_cfg).to(parallel.device)
    if cfg.head_only:  # the optimizer gets the head's parameters alone
        for name, param in model.named_parameters():
            param.requires_grad_(name.startswith(HEAD))
        model.head_alone = True
    src, tgt = corpus.split("train")
    batches = Batches(
        src.sizes,
        tgt.sizes,
        cfg.batch_size,
        cfg.pool,
        cfg.max_len,
        cfg.seed,
        cfg.max_tokens,
        parallel.rank,
        parallel.world,
        cfg.update_freq,
    )
    longest = int(tgt.sizes[batches.keep].max()) + 1 if batches.keep.size else 0  # with </s>, as the cap counts
    if cfg.max_tokens and cfg.max_tokens < longest and parallel.rank == 0:
        log(
            f"warning: --max-tokens {cfg.max_tokens:,} is below the longest target ({longest:,} units with </s>): "
            "a sentence longer than it is a minibatch of its own, over the cap"
        )
    if not batches.epoch_batches(0):  # refused before any work, not at the first draw with a traceback
        cut = f"--max-tokens {cfg.max_tokens}" if cfg.max_tokens else f"--batch-size {cfg.batch_size}"
        raise UserError(
            f"no minibatch to train on: {len(batches.keep):,} of {len(src.sizes):,} training pairs fit --max-len "
            f"{cfg.max_len}, and none makes a minibatch of {cfg.update_freq * parallel.world} sentences or more "
            f"(--update-freq {cfg.update_freq} × {parallel.world} processes) under {cut}"
            if batches.keep.size
            else f"no training pair fits --max-len {cfg.max_len} (0 keeps every pair)"
        )
    state = TrainState(
        cfg,
        model_cfg,
        model,
        optimizer(model, cfg, capturable=graphed(cfg, parallel)),
        batches,
        corpus,
        TextSides.of(corpus),
        save_dir,
        parallel,
        src,
        tgt,
        _links(corpus, cfg, data_dir),
        notes=notes,
        trained_on=trained_on,
        validated_on=corpus.fingerprint("valid"),
    )
    if init is not None:
        _init(model, init, cfg)
    if ckpt is not None:
        _restore(state, ckpt)
        state.last_kept = True
    state.average = _average(model, cfg, ckpt, last)
    return state


def _average(model: Seq2Seq, cfg: TrainConfig, ckpt: Checkpoint | None, last: Path) -> Average | None:
    """--ema-decay's average: the resumed run's, where it kept one, else one of the present weights."""
    if not cfg.ema_decay:
        return None
    average = Average(model, cfg.ema_decay)
    if ckpt is not None and ckpt.training.raw_weights is not None:
        checkpoint.load_weights(average.model, ckpt, last)
    return average


def _init(model: Seq2Seq, init: Checkpoint, cfg: TrainConfig) -> None:
    """--init-from's weights (and a new alignment head for --head-only, if it had none)."""
    new_head = cfg.head_only and with_head(init.model) != init.model
    checkpoint.load_weights(model, init, str(cfg.init_from), new=HEAD if new_head else None)
    log(
        f"starting from the weights of {cfg.init_from} (update {init.training.progress.step:,} of its run), "
        f"with a fresh optimizer"
    )


def graphed(cfg: TrainConfig, parallel: Parallel) -> bool:
    """Whether the optimizer must be capturable: its update is captured as a CUDA graph."""
    return cfg.cuda_graphs and parallel.device.type == "cuda" and eager_reason(cfg, parallel.many) is None


def eager_reason(cfg: TrainConfig, many: bool) -> str | None:
    """Why a run's update cannot be one graph per shape (None: it can); ``many``: several
    processes train."""
    if many:
        return "several processes (DDP) keep the eager update"
    if cfg.update_freq > 1:
        return "--update-freq computes an update in several passes"
    if cfg.shortlist:
        return "--sampled-softmax draws other words for each batch"
    return None


def _links(corpus: Corpus, cfg: TrainConfig, data_dir: Path) -> TokenArray | None:
    """The training pairs' word links, which guided alignment needs."""
    if not cfg.guided_alignment_weight:
        return None
    links = corpus.links("train")
    if links is None:
        raise UserError(
            f"--guided-alignment-weight: {data_dir} has no word links; binarize it with "
            f"'preprocess --align-suffix links' after 'nmtkit word-align'"
        )
    return links


def _corpus(data_dir: Path, save_dir: Path) -> Corpus:
    """The corpus to train on, with the splits a run needs, and a save directory apart from it."""
    corpus = Corpus(data_dir)
    if (save_dir / MANIFEST).exists():  # the run's checkpoints and log would sit among a corpus's files
        raise UserError(f"--save-dir {save_dir}: a binarized corpus is there; give the run a directory of its own")
    for split in ("train", "valid"):
        if split not in corpus.splits:
            raise UserError(f"{data_dir}: has no '{split}' split")
    for split in ("train", "valid"):  # the files checked now, not when first read (the valid split's an hour in)
        corpus.split(split)
        corpus.links(split)
    corpus.check_texts("valid")
    return corpus


def open_save_dir(state: TrainState) -> None:
    """The save directory, ready for this run: created, rid of a killed writer's temporaries,
    and its log opened at the checkpoint's update."""
    if state.parallel.rank != 0:
        return
    with writing_into(state.save_dir):
        state.save_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(state.save_dir)
    if not state.progress.step and (state.save_dir / "last.pt").exists():  # --reset
        log(
            f"warning: --reset: this run starts over in {state.save_dir}, and replaces its last.pt at its first "
            "save and its best.pt at its first validation (give another --save-dir to keep them)"
        )
    elif not state.progress.step and (state.save_dir / "best.pt").exists():  # last.pt deleted
        log(
            f"warning: {state.save_dir / 'best.pt'} has no last.pt to go on from (an earlier run's, or this one's "
            "first validation cut short): this run starts over, and replaces it at its first validation (give "
            "another --save-dir to keep it)"
        )
    if not state.progress.step:  # a new run (--reset): an earlier run's kept models are not deleted unasked
        earlier = sorted(p.name for pattern in ("update-*.pt", "best-*.pt") for p in state.save_dir.glob(pattern))
        if earlier:
            named = ", ".join(earlier[:3]) + (", …" if len(earlier) > 3 else "")
            log(
                f"warning: {state.save_dir} holds {len(earlier)} kept models of an earlier run ({named}): they "
                f"stay beside this run's (nmtkit average leaves them out, by this run's log and id); remove them, or "
                f"give another --save-dir"
            )
    if state.lexicon is None:  # seconds: here, not in the first save, which a SIGTERM's grace period may have to hold
        state.lexicon = lexicon_of(state.corpus)
    runlog.open_log(state.save_dir, state.progress.step, state.progress.validation_owed, state.run_id)


def _new_dev_set(state: TrainState) -> None:
    """A run resumed over another valid split: its best dev score and --patience's count were
    another dev set's, which no validation to come can be compared with."""
    best = state.progress.best
    state.progress.best, state.progress.bad_evals = -math.inf, 0
    if state.parallel.rank == 0:
        log(
            f"warning: {state.corpus.path}'s valid split is not the one the run in {state.save_dir / 'last.pt'} "
            f"validated on: its dev scores are another set's, so the next validation's model replaces best.pt "
            f"(chosen on the other{'' if best == -math.inf else f', at {best:.4g}'}) and --patience counts from it"
        )


def _resumable(last: Path, corpus: Corpus, trained_on: str) -> Checkpoint:
    try:
        ckpt = checkpoint.load(last, lazy=False)
    except checkpoint.DamagedCheckpoint as err:  # not a newer format, say, where --reset would lose the run
        raise FormatError(f"{err}; --reset starts over (with --init-from SAVE_DIR/best.pt, from its weights)") from None
    if not ckpt.training.resumable:
        raise FormatError(f"{last}: holds no training state to resume from (use --reset to start over)")
    corpus.check_vocab(
        ckpt.text.vocab_sha256,
        f"the checkpoint {last}",
        ckpt.text.langs,
        f"resume it on its own corpus, train this one in another --save-dir, or start {last.parent} over (--reset)",
    )
    if ckpt.training.corpus_sha256 not in (None, trained_on):  # its batch position is in another corpus
        raise UserError(
            f"{last} was trained on another training split than {corpus.path}'s: resume it with its own "
            f"corpus, or start from its weights on this one (--init-from {last} with another --save-dir; "
            f"--reset starts this one over)"
        )
    return ckpt


def _init_from(path: str, corpus: Corpus) -> Checkpoint:
    ckpt = checkpoint.load(path)
    corpus.check_vocab(ckpt.text.vocab_sha256, f"the checkpoint {path}", ckpt.text.langs)
    return ckpt


def _restore(state: TrainState, ckpt: Checkpoint) -> None:
    """Weights, optimizer, batch position, progress and RNGs of ``last.pt``."""
    run, last = ckpt.training, state.save_dir / "last.pt"
    assert run.optimizer is not None and run.batches is not None  # _resumable checked
    # a run with --ema-decay saved the average as its weights and the training ones beside them
    trained = ckpt if run.raw_weights is None else replace(ckpt, weights=run.raw_weights)
    checkpoint.load_weights(state.model, trained, last)
    try:
        load_optimizer(state.opt, run.optimizer)
    except (ValueError, KeyError) as err:
        raise FormatError(
            f"{last}: its optimizer state does not fit its model ({str(err).splitlines()[0][:120]})"
        ) from None
    if scheduled(state.cfg):  # the rate of the last update, as the run kept it, until the next update sets its own
        set_rate(state.opt, float(run.optimizer["param_groups"][0]["lr"]))
    state.batches.load_state_dict(run.batches)
    state.progress = Progress(**vars(run.progress))
    if run.valid_sha256 not in (None, state.validated_on):  # its dev scores are another dev set's
        _new_dev_set(state)
    elif (was := run.config.chosen_by) != (by := state.cfg.chosen_by):  # its best and patience were by the other
        from .validate import dev_score

        owed = state.progress.validation_owed
        best, bad, at = runlog.best_of(state.save_dir, state.progress.step, lambda e: dev_score(e, by), owed)
        bad = 0 if state.cfg.head_only else bad  # as the loop counts: the head learns on, every validation better
        state.progress.best, state.progress.bad_evals = best, bad
        if state.parallel.rank == 0 and at is not None:
            log(
                f"best.pt was chosen by dev {was.upper()}: by dev {by.upper()}, the best so far is update {at:,}'s "
                f"({counted(bad, 'validation')} since, for --patience); one that beats it replaces best.pt"
            )
    state.carried, state.run_id = run.window, run.run_id or state.run_id
    state.lexicon = ckpt.lexicon  # the corpus's, which the vocabularies' check found the same
    state.parallel.restore_rng(run.rng)
