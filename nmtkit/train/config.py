"""Settings of a training run: plain values, which the command line fills and the checkpoint
stores, and the check of what they ask of each other. How ``nmtkit train``'s flags and named
recipes resolve into them is :mod:`nmtkit.cli.train_settings`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UserError
from ..core.settings import LOGITS_BLAS, Settings, checking, setting
from ..models.config import FAMILIES, ModelConfig, RNNSearchConfig

# Each optimizer's learning rate when none is given: Adadelta's 1 is the paper's (Appendix B: the
# rate scales a step Adadelta already adapts), Adam's 5e-4 (Kingma & Ba's 1e-3 halved: RNNsearch
# diverged at 1e-3 in the CPU trials), plain SGD's 1 (Luong et al.'s).
DEFAULT_LR = {"adadelta": 1.0, "adam": 5e-4, "sgd": 1.0}
OPTIMIZERS = tuple(DEFAULT_LR)
LR_DECAYS = ("none", "linear", "cosine", "inverse-sqrt", "plateau")
BUDGETED = ("linear", "cosine")  # the decays that fall to 0 at the budget's end
BEST_BY = ("bleu", "nll")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


@dataclass(frozen=True)
class TrainConfig(Settings):
    """Appendix B by default: Adadelta (ρ=0.95, ε=1e-6), clip 1, 80 sentences, pools of 20."""

    def __post_init__(self) -> None:
        if self.lr is None:  # the optimizer's own rate (DEFAULT_LR), decided here and nowhere else
            object.__setattr__(self, "lr", DEFAULT_LR.get(self.optimizer))
        super().__post_init__()
        # the fields no option sets, which a library caller may: refused here, not at the first update
        if checking() and not (0 <= self.rho <= 1 and self.eps > 0):
            raise UserError(
                f"TrainConfig rho {self.rho}, eps {self.eps}: Adadelta's rho lies in [0, 1], its eps above 0"
            )
        if checking() and self.logits_blas not in LOGITS_BLAS:
            raise UserError(f"TrainConfig logits_blas '{self.logits_blas}': one of {', '.join(LOGITS_BLAS)}")

    @property
    def chosen_by(self) -> str:
        """The dev score that picks best.pt in fact: NLL where no dev BLEU is computed (--no-valid-bleu)."""
        return self.best_by if self.valid_bleu else "nll"

    optimizer: str = setting(
        "adadelta", "Adadelta (rho 0.95, eps 1e-6: the paper's), Adam (fused), or plain SGD.", choices=OPTIMIZERS
    )
    # None in the declaration only: __post_init__ puts the optimizer's rate there, so an instance
    # always holds a float (a replace() keeps the rate it was made with, whatever its optimizer)
    lr: float = setting(
        None,
        "Learning rate (0 trains nothing: the loss and its logs alone).",
        ge=0,
        default_help="by --optimizer: " + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_LR.items()),
    )
    decay_after: int = setting(0, "Multiply the learning rate by --decay every epoch after this many (0: never).", ge=0)
    decay: float = setting(0.5, "The factor of --decay-after and of --lr-decay plateau.", ge=0, le=1)
    lr_decay: str = setting(
        "none",
        "Lower the learning rate: to 0 at the end of the budget, linearly or by a cosine (budgeted "
        "training, Li et al. 2020; with --max-minutes alone, the updates that fit are estimated "
        "from the pace so far at every log line); as 1/sqrt(update) from the end of --warmup "
        "(inverse-sqrt, fairseq's inverse_sqrt); or by --decay each time more than --decay-patience "
        "validations in a row find no better dev score (plateau, torch's ReduceLROnPlateau).",
        choices=LR_DECAYS,
    )
    decay_patience: int = setting(
        2,
        "With --lr-decay plateau: the validations in a row without a better dev score that are borne before "
        "a decay (torch's patience; 0: each such validation decays, as fairseq's --lr-patience 0).",
        ge=0,
    )
    warmup: int = setting(0, "Raise the learning rate linearly from 0 over the first N updates.", ge=0)
    label_smoothing: float = setting(
        0.0,
        "Train toward 1-e on the reference word and e spread over the vocabulary (fairseq and "
        "Marian use 0.1); the logged NLL stays the plain one.",
        ge=0,
        lt=1,
    )
    ema_decay: float = setting(
        0.0,
        "Keep an exponential moving average of the weights, D × average + (1 - D) × weights after "
        "every update, D warming up as min(D, (1 + t) / (10 + t)) after update t (OpenNMT-py's "
        "-average_decay is 1 - D): validation scores it and every checkpoint translates with it (0: off).",
        ge=0,
        lt=1,
    )
    guided_alignment_weight: float = setting(
        0.0,
        "Guided alignment (Chen et al. 2016, Marian's --guided-alignment): add this times the "
        "attention's cross-entropy with the corpus's word links (preprocess --align-suffix) to each"
        " linked target word's loss, so that the attention aligns as the statistical aligner does "
        "(0: off).",
        ge=0,
    )
    head_only: bool = setting(
        False,
        "Train the alignment head alone, the translation model frozen (with --init-from a model, "
        "--alignment-head and --guided-alignment-weight): its links learned longer, or from other "
        "links (self-training), at about the cost of a forward pass; the translations stay the "
        "model's. A model trained without a head gets a new one. Each validation's head is best.pt.",
    )
    rho: float = 0.95
    eps: float = 1e-6
    clip: float = setting(1.0, "Gradient L2 norm limit (0: off).", ge=0)
    batch_size: int = setting(
        80,
        "Sentences per minibatch, in total over all GPUs (the paper's 80): with torchrun each of N "
        "processes takes 1/N of every minibatch, so N changes nothing but the speed.",
        ge=1,
    )
    max_tokens: int = setting(0, "Minibatches by target tokens instead, in total over all GPUs (0: off).", ge=0)
    update_freq: int = setting(
        1,
        "Accumulate the gradients of N passes per update: an update is N times --batch-size (or "
        "--max-tokens), computed a piece at a time, in 1/N of the memory.",
        ge=1,
    )
    shortlist: int = setting(
        0,
        "Jean et al. (2015)'s sampled softmax in training: over the minibatch's target words and "
        "others drawn at random, this many in all (0: the full softmax, as the paper).",
        ge=0,
        flag="--sampled-softmax",
        old="--shortlist",
    )
    pool: int = setting(20, "Minibatches per length-sorted pool.", ge=1)
    max_len: int = setting(
        50,
        "Leave out the training pairs with a side longer than this, counted in the data-bin's units: subword "
        "units where it has BPE (0: keep every pair; the paper's 30 and 50 count words).",
        ge=0,
    )
    max_updates: int = setting(0, "Stop after this many updates (0: no limit).", ge=0)
    max_epochs: int = setting(0, "Stop after this many passes over the training pairs (0: no limit).", ge=0)
    max_minutes: float = setting(
        0.0, "Stop after this many minutes of training, validations included (0: no limit).", ge=0
    )
    valid_every: int = setting(1000, "Validate, and save last.pt (and best.pt when better), every N updates.", ge=1)
    save_every: int = setting(
        0,
        "Save last.pt every N updates as well, without validating (0: at validations only): a run killed "
        "outright (kill -9, a lost machine) resumes from there.",
        ge=0,
    )
    valid_bleu: bool = setting(True, "Greedy dev BLEU at validation.")
    best_by: str = setting(
        "bleu",
        "The dev score that picks best.pt and counts for --patience: greedy BLEU (the paper's), or "
        "NLL (no search needed: with --no-valid-bleu, validation is teacher forcing alone).",
        choices=BEST_BY,
    )
    valid_max_sentences: int = setting(0, "Validate on the first N dev sentences only (0: all).", ge=0)
    patience: int = setting(10, "Validations without improvement before stopping (0: never).", ge=0)
    keep_validations: bool = setting(
        False,
        "Also keep the model of every validation as SAVE_DIR/update-N.pt (weights only, no optimizer state): "
        "for learning curves, e.g. test BLEU against minutes.",
    )
    keep_last: int = setting(
        0,
        "Keep the models of the last N validations as update-N.pt (weights only; 0: none, or every "
        "one with --keep-validations), e.g. to average them.",
        ge=0,
    )
    keep_best: int = setting(0, "Keep the N best validated models (by --best-by) as best-STEP.pt, weights only.", ge=0)
    log_every: int = setting(50, "Log the training loss and speed every N updates.", ge=1)
    seed: int = setting(1234, "Seed of the initial weights, the batch order and dropout.", ge=0, le=2**63 - 1)
    init_from: str | None = None  # start from this checkpoint's weights (fresh optimizer)
    device: str | None = None  # None: the process's GPU when there is one (see runtime)
    threads: int = 0  # 0: torch's default
    bf16: bool = False
    tf32: bool = True  # on GPUs: fp32 matrix products on tensor cores
    logits_blas: str = "auto"  # CPUs: the BLAS of the output layer's logits (nmtkit.core.blas)
    compile: bool = setting(
        False,
        "Compile the recurrences' per-word steps with torch.compile (rnnsearch, rnnencdec): fused kernels, "
        "for GPUs, where the eager step is bound by kernel launches. The first updates wait for the compiler.",
    )
    compile_mode: str = setting(
        "default",
        "torch.compile's mode, with --compile: reduce-overhead replays each step as a CUDA graph (recorded "
        "once per shape: combine with --pad-to-multiple); max-autotune also tunes the kernels.",
        choices=COMPILE_MODES,
    )
    cuda_graphs: bool = setting(
        False,
        "GPUs: capture the whole update (forward, backward, clipping, optimizer step) as one CUDA graph "
        "per batch shape and replay it, batches padded to a few shapes fitted to the run's batches (a "
        "batch none holds runs eagerly). On a CPU the padded update runs eagerly.",
    )
    pad_to_multiple: int = setting(
        1,
        "Pad each training batch's source and target lengths up to a multiple of N: fewer shapes "
        "for CUDA graphs and compiled kernels, at the cost of computing the padding.",
        ge=1,
    )
    fused_steps: bool = setting(
        False,
        "The recurrences (the encoder's GRU, the decoders of RNNsearch and RNNencdec) as whole sequences whose "
        "backward is written by hand: fewer, larger products (on a GPU, fewer kernels for --cuda-graphs to "
        "replay), equal to the reference to rounding. A recurrence without such passes keeps its loop, and "
        "the run says which.",
        flag="--fused-steps/--no-fused-steps",
        default_help="off; --schedule cpu: on",
    )


@dataclass(frozen=True)
class Schedule:
    """A named training recipe: the settings it gives, each unless a flag names it."""

    summary: str
    train: Mapping[str, Any] = field(default_factory=dict)
    # the model's: a size preset and model settings by flag name (models.config.model_config)
    model: Mapping[str, Any] = field(default_factory=dict)
    # what changes for a model with dropout (Luong et al. train it longer)
    with_dropout: Mapping[str, Any] = field(default_factory=dict)

    def settings(self, dropout: float) -> dict[str, Any]:
        """Everything this recipe sets, model and training, for a model with this ``dropout``."""
        return {**self.model, **self.train, **(self.with_dropout if dropout else {})}

    def flags(self, dropout: float = 0.0) -> str:
        """This recipe as the flags it stands for (``--optimizer adam --lr 0.005 ...``), for a
        model with this ``dropout``."""
        out = []
        for k, v in self.settings(dropout).items():
            flag = "--" + k.replace("_", "-")
            out.append(flag if v is True else f"{flag} {v:g}" if isinstance(v, float) else f"{flag} {v}")
        return " ".join(out)


# The named recipes of ``nmtkit train --schedule``. ``cpu`` is the demo's, chosen by the CPU trials
# of docs/cpu-training.md for the most BLEU in a fixed time on few cores.
SCHEDULES: dict[str, Schedule] = {
    "appendix-b": Schedule("Bahdanau et al.'s Appendix B, the defaults"),
    "luong": Schedule(
        "Luong et al.'s section 4.1, as for their model with its dropout (without dropout, the GRU models' "
        "default and --dropout 0: 10 epochs, halved after the 5th)",
        train={
            "optimizer": "sgd",
            "lr": 1.0,
            "clip": 5.0,
            "batch_size": 128,
            "max_len": 50,
            "max_epochs": 10,
            "decay_after": 5,
            "decay": 0.5,
        },
        with_dropout={"max_epochs": 12, "decay_after": 8},
    ),
    "cpu": Schedule(
        "the demo's, for a few CPU cores and a budget",
        model={"preset": "small", "tie_embeddings": True},
        train={
            "optimizer": "adam",
            "lr": 5e-3,
            "lr_decay": "cosine",
            "warmup": 50,
            "label_smoothing": 0.1,
            "best_by": "nll",
            "fused_steps": True,
        },
    ),
}
DEFAULT_SCHEDULE = "appendix-b"  # the paper's


def ended_in_warmup(cfg: TrainConfig, step: int) -> str | None:
    """A warning where a run stopped inside its warm-up (a short --max-minutes, before any model
    that learned much), unless :func:`warmup_outlasts` said so at its start."""
    if step < cfg.warmup and warmup_outlasts(cfg) is None:
        return (
            f"warning: the run stopped at update {step:,}, inside --warmup {cfg.warmup:,}: its learning rate never "
            f"reached --lr {cfg.lr:g}; give it more time, or a shorter --warmup"
        )
    return None


def warmup_outlasts(cfg: TrainConfig) -> str | None:
    """A warning where the warm-up takes the whole budget (not refused: a test run may mean it)."""
    if cfg.lr_decay in BUDGETED and cfg.max_updates and cfg.warmup >= cfg.max_updates:
        return (
            f"warning: --warmup {cfg.warmup} is not below --max-updates {cfg.max_updates}: the rate rises the whole "
            f"run and --lr-decay {cfg.lr_decay} never begins (a --schedule gives its own --warmup)"
        )
    return None


def check_run(model: ModelConfig, cfg: TrainConfig) -> None:
    """Refuse, in one line naming the flags, a run these configs cannot train as asked: what the
    settings ask of each other (a decaying rate needs a budget to decay over; guided alignment,
    attention). :func:`nmtkit.train.loop.train` checks it before it starts."""
    arch = model.arch
    if cfg.compile and not model.compilable:  # before a save directory is made, not at the model's build
        raise UserError(f"--compile: the {arch} model has no per-position step to compile")
    if cfg.guided_alignment_weight and not model.attends():
        raise UserError(
            f"--guided-alignment-weight trains the attention: --arch {arch} "
            f"{'--attention none ' if 'attention' in FAMILIES[arch].flags() else ''}has none"
        )
    if cfg.head_only and not (isinstance(model, RNNSearchConfig) and model.alignment_head and cfg.init_from):
        raise UserError(
            "--head-only trains the alignment head of a trained model: give --init-from MODEL.pt, "
            "--alignment-head and --guided-alignment-weight"
        )
    if cfg.lr_decay != "none" and cfg.decay_after:
        raise UserError("--lr-decay and --decay-after are two schedules: give one")
    if cfg.save_every and cfg.save_every % cfg.valid_every == 0:
        raise UserError(
            f"--save-every {cfg.save_every} falls on validations alone (--valid-every {cfg.valid_every}), "
            f"which save last.pt anyway: give a number that is not a multiple of it"
        )
    if cfg.lr_decay == "plateau" and cfg.patience and cfg.patience <= cfg.decay_patience + 1:
        raise UserError(
            f"--lr-decay plateau lowers the rate after {cfg.decay_patience + 1} validations without a better dev "
            f"score, and --patience {cfg.patience} stops the run by then: give a --decay-patience of "
            f"{cfg.patience - 2} at most"
            if cfg.patience >= 2
            else f"--lr-decay plateau lowers the rate after validations without a better dev score, and "
            f"--patience {cfg.patience} stops the run at the first: give a larger --patience"
        )
    if cfg.lr_decay == "plateau" and cfg.decay == 0:
        raise UserError("--lr-decay plateau --decay 0 would stop learning at the first plateau: give a --decay above 0")
    if cfg.decay_after and cfg.decay == 0:  # every update after it would change nothing
        raise UserError(
            f"--decay-after {cfg.decay_after} --decay 0 would stop learning after epoch {cfg.decay_after}: "
            "give a --decay above 0"
        )
    if cfg.lr_decay in BUDGETED and not (cfg.max_updates or cfg.max_minutes or cfg.max_epochs):
        raise UserError(
            f"--lr-decay {cfg.lr_decay} falls to 0 at the end of a budget: give --max-updates, "
            f"--max-minutes or --max-epochs"
        )
