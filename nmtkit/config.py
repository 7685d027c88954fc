"""Typed settings shared by the command line, the corpus files and the checkpoint.

The click options read their defaults from these dataclasses, and the same
values are written into ``preprocess.json``, the corpus manifest and (later)
the checkpoint, so that ``translate`` processes raw text exactly as the
training data was.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import FormatError, UserError
from .text.clean import PRESETS


class _Settings:
    """to_dict/from_dict for the frozen dataclasses below; unknown keys are a format error."""

    def to_dict(self) -> dict[str, Any]:
        fields_: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return fields_

    @classmethod
    def from_dict(cls, d: dict[str, Any]):  # type: ignore[no-untyped-def]
        return cls(**_known(cls, d, f"{cls.__name__} field"))


@dataclass(frozen=True)
class TextConfig(_Settings):
    """How one language's raw text becomes tokens (the order is the pipeline's).

    clean rules → Moses punctuation normalisation → Moses tokenisation
    (optionally aggressive hyphen splitting) → optional lowercasing →
    optional BPE (the codes travel separately, as a string).
    """

    lang: str
    clean: tuple[str, ...] = PRESETS["default"]   # the Bible's rules are the "bible" preset
    normalize_punct: bool = True
    aggressive_dash: bool = False
    lowercase: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"clean": list(self.clean)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TextConfig":
        return cls(**_known(cls, d, "TextConfig field") | {"clean": tuple(d.get("clean", ()))})


@dataclass(frozen=True)
class FilterConfig(_Settings):
    """Which training pairs preprocessing drops (Moses clean-corpus-n style).

    Lengths are counted in output tokens. ``max_ratio`` bounds
    longer/shorter; 0 disables a limit. Evaluation splits are never filtered.
    """

    max_len: int = 50
    min_len: int = 1
    max_ratio: float = 2.5
    dedup: bool = True


@dataclass(frozen=True)
class VocabConfig(_Settings):
    """The paper's shortlist: the ``size`` most frequent tokens per language."""

    size: int = 30000
    min_count: int = 1
    bpe_merges: int = 0
    joint_bpe: bool = True         # one set of subword codes for both languages
    spm: str = ""                  # "unigram" | "bpe": SentencePiece instead of subword-nmt
    spm_size: int = 8000           # SentencePiece pieces per model


def _known(cls: type, d: dict[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise FormatError(f"unknown {what}: {', '.join(sorted(unknown))}")
    return {k: v for k, v in d.items() if k in names}


@dataclass(frozen=True)
class ModelConfig(_Settings):
    """Architecture and sizes; the defaults are the paper's (Appendix A.2.3).

    ``readout`` picks the state the deep output sees: ``prev`` follows the
    equation t̃_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i (default); ``next``
    uses s_i, as the appendix's ``p(y_i | s_i, y_{i-1}, c_i)`` could be read.
    ``encoder`` is ``paper`` (the appendix's GRU) or ``cudnn`` (torch's fused
    GRU, whose reset gate acts after the recurrent product: faster on GPUs).

    The fields after ``encoder`` are the ``luong`` architecture's (Luong et
    al. 2015; the defaults are their best single model, Table 1: 4 layers,
    dropout 0.2, reversed source, local-p attention with the general score,
    input feeding, D = 10). ``max_src`` is how many positions the location
    score knows; training sets it to its --max-len + 1 (for ``</s>``).
    """

    arch: str = "rnnsearch"
    src_vocab: int = 0
    tgt_vocab: int = 0
    emb: int = 620            # m
    hidden: int = 1000        # n
    align: int = 1000         # n'
    maxout: int = 500         # l
    readout: str = "prev"
    encoder: str = "paper"
    layers: int = 4
    dropout: float = 0.2
    attention: str = "local-p"     # global | local-m | local-p | none
    score: str = "general"         # dot | general | concat | location
    input_feed: bool = True
    reverse_source: bool = True
    window: int = 10               # D
    max_src: int = 50
    # local-p: weights divided by their sum after the Gaussian (not the paper's). Off here, as in
    # files written before it existed; ``nmtkit train`` turns it on for a new local-p model.
    window_renorm: bool = False


# Luong et al.'s attention: where it looks, and how it scores a source word.
WINDOWS = ("global", "local-m", "local-p")
SCORES = ("dot", "general", "concat", "location")


# Sizes for a CPU run; "bench" is the size of the peer comparison of make bench.
MODEL_PRESETS: dict[str, dict[str, int]] = {
    "paper": {"emb": 620, "hidden": 1000, "align": 1000, "maxout": 500, "layers": 4},
    "small": {"emb": 256, "hidden": 256, "align": 256, "maxout": 256, "layers": 2},
    "bench": {"emb": 256, "hidden": 256, "align": 256, "maxout": 256, "layers": 2},
    "tiny": {"emb": 32, "hidden": 32, "align": 32, "maxout": 32, "layers": 2},
}


def preset_sizes(arch: str, preset: str) -> dict[str, int]:
    """A preset's sizes for this architecture: Luong et al.'s paper size is 4 × 1000 with
    1000-dimensional embeddings (section 4.1)."""
    sizes = dict(MODEL_PRESETS[preset])
    if arch == "luong" and preset == "paper":
        sizes["emb"] = 1000
    return sizes


def schedule(name: str, dropout: float) -> dict[str, Any]:
    """TrainConfig fields of a named training recipe. ``luong`` is section 4.1: plain SGD at 1.0,
    10 epochs, halving every epoch after the 5th (with dropout: 12 epochs, after the 8th),
    batches of 128, gradient norm rescaled above 5, pairs over 50 words dropped. ``appendix-b``
    is Bahdanau et al.'s, the TrainConfig defaults."""
    if name == "appendix-b":
        return {}
    if name == "luong":
        return {"optimizer": "sgd", "lr": 1.0, "clip": 5.0, "batch_size": 128, "max_len": 50,
                "max_epochs": 12 if dropout else 10, "decay_after": 8 if dropout else 5, "decay": 0.5}
    raise ValueError(f"unknown schedule '{name}'")


SCHEDULES = ("appendix-b", "luong")


@dataclass(frozen=True)
class TrainConfig(_Settings):
    """Appendix B by default: Adadelta (ρ=0.95, ε=1e-6), clip 1, 80 sentences, pools of 20."""

    optimizer: str = "adadelta"    # adadelta | adam | sgd
    lr: float = 1.0
    decay_after: int = 0           # >0: multiply lr by ``decay`` every epoch after this many
    decay: float = 0.5
    rho: float = 0.95
    eps: float = 1e-6
    clip: float = 1.0
    batch_size: int = 80
    max_tokens: int = 0            # >0: batches by target tokens instead of sentences
    update_freq: int = 1           # minibatch pieces whose gradients are accumulated per update
    shortlist: int = 0             # >0: Jean et al.'s sampled softmax over this many target words
    pool: int = 20
    max_len: int = 50
    max_updates: int = 0           # 0: no limit
    max_epochs: int = 0
    max_minutes: float = 0.0
    valid_every: int = 1000
    valid_bleu: bool = True
    best_by: str = "bleu"          # bleu | nll: which dev score picks best.pt and early stopping
    valid_max_sentences: int = 0   # 0: the whole valid split
    patience: int = 10
    keep_validations: bool = False  # also keep each validated model as update-N.pt (learning curves)
    keep_last: int = 0             # >0: keep the models of the last N validations (update-N.pt)
    keep_best: int = 0             # >0: keep the N best validated models (best-N.pt)
    log_every: int = 50
    seed: int = 1234
    init_from: str | None = None   # start from this checkpoint's weights (fresh optimizer)
    device: str | None = None      # None: the process's GPU when there is one (see runtime)
    threads: int = 0               # 0: torch's default
    bf16: bool = False
    tf32: bool = True              # on GPUs: fp32 matrix products on tensor cores
    compile: bool = False          # the recurrences' steps through torch.compile
    compile_mode: str = "default"  # torch.compile's mode: default | reduce-overhead | max-autotune
    pad_to_multiple: int = 1       # training batches' lengths rounded up to a multiple of this




# Vocabulary selection (nmtkit.lexicon): the most frequent target words always listed, and the
# translations listed per source word (Marian's default is 100 and 100 over 50k words).
LEXICON_FREQUENT = 1000
LEXICON_PER_SOURCE = 20


# Flags that belong to one family only: given to the other, they are refused rather than ignored.
LUONG_ONLY = frozenset({"layers", "dropout", "attention", "score", "input_feed", "reverse_source", "window",
                        "window_renorm"})
RNNSEARCH_ONLY = frozenset({"maxout", "readout", "encoder"})
SIZES = ("emb", "hidden", "align", "maxout", "layers")


def train_settings(arch: str, preset: str, schedule_name: str, values: dict[str, Any],
                   given: set[str]) -> tuple[ModelConfig, TrainConfig]:
    """The model and training configs of ``nmtkit train``: the preset's sizes, the named
    schedule, then ``values`` (every option, by field name; None: not set). Of the schedule's
    fields, only those not in ``given`` (the flags typed) are taken; a flag of the other
    family is refused, and Adam's rate defaults to 5e-4, the others' to 1."""
    foreign = given & (RNNSEARCH_ONLY if arch == "luong" else LUONG_ONLY)
    if foreign:
        raise UserError(f"--{sorted(foreign)[0].replace('_', '-')} does not apply to --arch {arch}")
    if "compile_mode" in given and not values.get("compile"):
        raise UserError("--compile-mode applies to a compiled step: add --compile")
    if values.get("window_renorm") and values.get("attention") != "local-p":
        raise UserError("--window-renorm applies to --attention local-p")
    if values.get("window_renorm") is None:
        # on for a new local-p model: the paper's unnormalised window does not learn where to look
        values = {**values, "window_renorm": arch == "luong" and values.get("attention") == "local-p"}
    model_fields = {f.name for f in fields(ModelConfig)}
    sizes = preset_sizes(arch, preset) | {k: values[k] for k in SIZES if values.get(k) is not None}
    model = ModelConfig(arch=arch, **sizes, **{k: v for k, v in values.items()
                                               if k in model_fields and k not in SIZES})
    train = {k: v for k, v in values.items() if k not in model_fields}
    train |= {k: v for k, v in schedule(schedule_name, model.dropout if arch == "luong" else 0.0).items()
              if k not in given}
    if train.get("lr") is None:
        train["lr"] = 5e-4 if train.get("optimizer", TrainConfig.optimizer) == "adam" else 1.0
    return model, TrainConfig(**train)
