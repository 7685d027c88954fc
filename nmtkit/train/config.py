"""Settings of a training run: plain values, which the command line fills and the checkpoint
stores. How ``nmtkit train``'s flags and named recipes resolve into them is
:mod:`nmtkit.cli.train_settings`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import Settings

SCHEDULES = ("appendix-b", "luong", "cpu")
DEFAULT_SCHEDULE = "appendix-b"  # the paper's
OPTIMIZERS = ("adadelta", "adam", "sgd")
LR_DECAYS = ("none", "linear", "cosine")
BEST_BY = ("bleu", "nll")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


@dataclass(frozen=True)
class TrainConfig(Settings):
    """Appendix B by default: Adadelta (ρ=0.95, ε=1e-6), clip 1, 80 sentences, pools of 20."""

    optimizer: str = "adadelta"  # adadelta | adam | sgd
    lr: float = 1.0
    decay_after: int = 0  # >0: multiply lr by ``decay`` every epoch after this many
    decay: float = 0.5
    lr_decay: str = "none"  # linear | cosine: the rate falls to 0 at the end of the budget
    warmup: int = 0  # updates over which the rate rises linearly from 0 to lr
    label_smoothing: float = 0.0  # ε: the target distribution is 1−ε on the word, ε over all words
    guided_alignment_weight: float = 0.0  # >0: the attention's cross-entropy with the corpus's word links
    rho: float = 0.95
    eps: float = 1e-6
    clip: float = 1.0
    batch_size: int = 80
    max_tokens: int = 0  # >0: batches by target tokens instead of sentences
    update_freq: int = 1  # minibatch pieces whose gradients are accumulated per update
    shortlist: int = 0  # >0: Jean et al.'s sampled softmax over this many target words
    pool: int = 20
    max_len: int = 50
    max_updates: int = 0  # 0: no limit
    max_epochs: int = 0
    max_minutes: float = 0.0
    valid_every: int = 1000
    valid_bleu: bool = True
    best_by: str = "bleu"  # bleu | nll: which dev score picks best.pt and early stopping
    valid_max_sentences: int = 0  # 0: the whole valid split
    patience: int = 10
    keep_validations: bool = False  # also keep each validated model as update-N.pt (learning curves)
    keep_last: int = 0  # >0: keep the models of the last N validations (update-N.pt)
    keep_best: int = 0  # >0: keep the N best validated models (best-N.pt)
    log_every: int = 50
    seed: int = 1234
    init_from: str | None = None  # start from this checkpoint's weights (fresh optimizer)
    device: str | None = None  # None: the process's GPU when there is one (see runtime)
    threads: int = 0  # 0: torch's default
    bf16: bool = False
    tf32: bool = True  # on GPUs: fp32 matrix products on tensor cores
    compile: bool = False  # the recurrences' steps through torch.compile
    compile_mode: str = "default"  # torch.compile's mode: default | reduce-overhead | max-autotune
    pad_to_multiple: int = 1  # training batches' lengths rounded up to a multiple of this
    fused_steps: bool = False  # CPU: the recurrences' forward and backward by hand (models.fused)
