"""Each model family's config (its architecture and sizes, as the checkpoint records them), how one is
made from flags, and the size presets."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from dataclasses import Field, dataclass, field, fields, replace
from typing import Any, ClassVar

from ..core.errors import FormatError, UserError
from ..core.settings import Settings, as_written, check_choices, checking, setting, sub_config

READOUTS = ("prev", "next")
ENCODERS = ("paper", "cudnn")
COVERAGES = ("none", "linguistic", "neural")
MAX_FERTILITY = 2.0  # Tu et al.'s N, as they trained it
NEURAL_COVERAGE_DIM = 10  # Tu et al.'s d: the units of each source word's neural coverage


# Luong et al.'s attention: where it looks, and how it scores a source word.
WINDOWS = ("global", "local-m", "local-p")
SCORES = ("dot", "general", "concat", "location")


@dataclass(frozen=True)
class CoverageConfig(Settings):
    """Tu et al. (2016)'s coverage, which RNNsearch's attention reads (:mod:`.coverage`)."""

    kind: str = setting(
        "none",
        f"rnnsearch: a coverage vector the attention reads, against under- and over-translation: Tu "
        f"et al. (2016)'s linguistic one (each source word's attention so far over its learnt "
        f"fertility) or neural one (a {NEURAL_COVERAGE_DIM}-unit GRU per source word, fed its "
        f"attention, its annotation and the decoder state). Trains through the reference loop, not "
        f"--fused-steps. Not the paper's.",
        choices=COVERAGES,
        flag="--coverage",
    )
    max_fertility: float = setting(
        MAX_FERTILITY,
        "rnnsearch, --coverage linguistic: Tu et al.'s N, the most target words a source word may "
        "cover (its fertility is N times a sigmoid).",
        gt=0,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_fertility != MAX_FERTILITY and self.kind != "linguistic":
            raise UserError("--max-fertility bounds the linguistic coverage: add --coverage linguistic")


_MOST_UNITS = 2**20  # units of a layer, at most
_MOST = {"layers": 64}


@dataclass(frozen=True)
class ModelConfig(Settings):
    """What every architecture has: its name (``arch``, a class constant stored with the fields),
    the vocabularies, and the sizes of the embeddings (m), the states (n) and the alignment model
    (n'). A family is a subclass (:data:`FAMILIES`) that holds only its own settings, so that a
    model's module reads its fields without asking which family it is (``models/rnnsearch.py``,
    which makes RNNencdec too, asks once, for the attention's); :func:`model_config` makes
    one from flags and refuses a flag of another family. A field whose default is made by a
    settings class is a sub-config (RNNsearch's ``coverage``): its fields are flags of their own,
    named by their declaration (``--coverage`` for ``CoverageConfig.kind``)."""

    arch: ClassVar[str]
    # whether train's hand-written fused passes (--fused-steps) exist for the family: decided here,
    # without torch, so that a recipe leaves the flag out for a family without them
    fusable: ClassVar[bool] = True
    # whether the family has per-position steps for --compile to compile (Seq2Seq.step_functions)
    compilable: ClassVar[bool] = True
    # the family's dropout when none is given: Luong et al. used 0.2, Bahdanau et al. none
    default_dropout: ClassVar[float] = 0.0
    # settings that shape training alone, never the weights: a run may go on, or start, from a
    # checkpoint with others, and checkpoints that differ in them alone average
    TRAINING_ONLY: ClassVar[tuple[str, ...]] = ("dropout", "weight_drop")
    # sizes a preset gives, so not declared with setting(); held to their options' bound here
    SIZES: ClassVar[tuple[str, ...]] = ("emb", "hidden", "align")
    src_vocab: int = 0
    tgt_vocab: int = 0
    emb: int = 620  # m
    hidden: int = 1000  # n
    align: int = 1000  # n'
    # None in the declaration only: __post_init__ puts the family's default_dropout there, so an
    # instance always holds a float
    dropout: float = setting(
        None,
        "Dropout on the non-recurrent connections (Zaremba et al. 2015): luong: each LSTM layer's input "
        "and h̃_t; rnnsearch, rnnencdec: the source and target embeddings and the deep output (not the "
        "paper's).",
        ge=0,
        lt=1,
        default_help="luong 0.2, Luong et al.'s; rnnsearch and rnnencdec 0, the paper's",
    )
    right_to_left: bool = setting(
        False,
        "Generate each translation from its last word to its first (Liu et al. 2016; Sennrich et al. "
        "2016's reranker): a model of its own, whose outputs, scores and alignments nmtkit puts back "
        "in reading order; with 'rescore --nbest-list' it reranks a left-to-right model's n-best "
        "lists. Not the paper's.",
    )

    def __post_init__(self) -> None:
        if type(self) not in FAMILIES.values():
            if type(self) not in (ModelConfig, GRUConfig):  # a family of the caller's, not registered (yet)
                raise TypeError(
                    f"{type(self).__name__} is not in models.config.FAMILIES: register it there (and its model in "
                    f"models.build.MODELS) before making one"
                )
            raise TypeError(f"{type(self).__name__} is a base: make one of {', '.join(FAMILY_NAMES)}")
        if self.dropout is None:
            object.__setattr__(self, "dropout", self.default_dropout)
        super().__post_init__()
        for name in self.SIZES if checking() else ():
            value = getattr(self, name)
            try:
                whole = not isinstance(value, bool) and operator.index(value) >= 1
            except TypeError:
                whole = False
            if not whole:
                raise UserError(f"--{name}: {value} is not a whole number >= 1")
            most = _MOST.get(name, _MOST_UNITS)
            if value > most:  # torch's sizes overflowed past 2**63 (a traceback); 100,000 layers never built
                raise UserError(f"--{name}: {value} is more than the {most:,} a model of nmtkit's may have")
            object.__setattr__(self, name, operator.index(value))  # a plain int, as a checkpoint keeps

    def to_dict(self) -> dict[str, Any]:
        """The fields, sub-configs as dicts, with the family's name first (the checkpoint's record)."""
        return {"arch": self.arch, **super().to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """The family ``d["arch"]`` names, from what :meth:`to_dict` wrote."""
        rest = dict(d)
        arch = rest.pop("arch", None)
        if isinstance(arch, str) and arch not in FAMILIES:
            raise UnknownFamily(
                f"a model of architecture {arch!r}, which this nmtkit does not have (it has {', '.join(FAMILIES)}): "
                "a newer nmtkit's, or a family the code that trained it added"
            )
        family = _family(arch, "the model's architecture", FormatError)
        if not issubclass(family, cls):
            raise FormatError(f"a {family.arch} model, not a {cls.__name__}")
        made: ModelConfig = super(ModelConfig, family).from_dict(rest)
        check_choices(made)
        return made

    @classmethod
    def flags(cls) -> dict[str, tuple[type[Settings], str]]:
        """Every setting of this family by its flag's name (``coverage``, ``max_fertility``):
        the settings class that declares it and the field's name there."""
        return {flag: (sub_config(f) or cls, (g or f).name) for flag, f, g in _settings(cls)}

    def flat(self) -> dict[str, Any]:
        """The values by flag name, ``arch`` first: what :func:`model_config` takes back."""
        out: dict[str, Any] = {"arch": self.arch}
        for flag, f, g in _settings(type(self)):
            value = getattr(self, f.name)
            out[flag] = value if g is None else getattr(value, g.name)
        return out

    @classmethod
    def preset_sizes(cls, preset: str) -> dict[str, int]:
        """A size preset's sizes that this family has."""
        if preset not in MODEL_PRESETS:
            raise UserError(f"--preset {preset!r}: not one of {', '.join(MODEL_PRESETS)}")
        own = cls.flags()
        return {k: v for k, v in MODEL_PRESETS[preset].items() if k in own}

    def attends(self) -> bool:
        """Whether the model has an attention (what the guided alignment trains)."""
        raise NotImplementedError

    def weights_alike(self) -> ModelConfig:
        """This config with its :data:`TRAINING_ONLY` settings at the family's defaults: two models
        whose weights are interchangeable have equal ones."""
        defaults = type(self)()
        return replace(self, **{k: getattr(defaults, k) for k in self.TRAINING_ONLY if hasattr(self, k)})

    def idle(self) -> dict[str, str]:
        """The settings (by flag name) that this model never reads, each with why: a typed one is
        refused, and --dump-config leaves them out."""
        return {}


@dataclass(frozen=True)
class GRUConfig(ModelConfig):
    """The GRU family's settings, shared by RNNencdec and RNNsearch (the appendix's decoder).

    ``readout`` picks the state the deep output sees: ``prev`` follows the equation
    t̃_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i (default); ``next`` uses s_i, as the appendix's
    ``p(y_i | s_i, y_{i-1}, c_i)`` could be read. ``encoder`` is ``paper`` (the appendix's GRU) or
    ``cudnn`` (torch's fused GRU, whose reset gate acts after the recurrent product: faster on
    GPUs). The defaults are the paper's (Appendix A.2.3).
    """

    SIZES: ClassVar[tuple[str, ...]] = (*ModelConfig.SIZES, "maxout")
    maxout: int = 500  # l
    readout: str = setting("prev", "Deep output from s_{i-1} (the paper's equation) or s_i.", choices=READOUTS)
    encoder: str = setting(
        "paper",
        "The appendix's GRU, or torch's fused GRU (cuDNN; reset gate after U s): faster on GPUs.",
        choices=ENCODERS,
    )
    output_rank: int = setting(
        0,
        "Factor the output layer through this many units: W_o t becomes W_o (W_r t), as the paper's code "
        "(GroundHog's rank_n_approx, 620) did; with --tie-embeddings it must equal --emb, W_o being the "
        "embeddings. 0: the appendix's one matrix.",
        ge=0,
        le=_MOST_UNITS,
    )
    tie_embeddings: bool = setting(
        False,
        "Score the output with the target embedding matrix (Press & Wolf 2017): one matrix fewer; the "
        "maxout units (or --output-rank) then number --emb. Not the paper's.",
        flag="--tie-embeddings/--no-tie-embeddings",
        default_help="off; --schedule cpu: on",
    )
    layer_norm: bool = setting(
        False,
        "Layer-normalised GRUs (Ba et al. 2016), each product normalised as in Nematus. A change of "
        "model, saved in the checkpoint; not the paper's.",
    )
    weight_drop: float = setting(
        0.0,
        "rnnsearch, rnnencdec: dropout inside the recurrence, DropConnect on the encoder's and the "
        "decoder's recurrent matrices (Merity et al. 2018's weight drop), each forward pass zeroing this "
        "share of their weights with one mask for the whole batch and every time step. Not the paper's.",
        ge=0,
        lt=1,
    )


@dataclass(frozen=True)
class RNNEncDecConfig(GRUConfig):
    """Cho et al. (2014a)'s RNN encoder-decoder, Bahdanau et al.'s baseline: c_i fixed to the
    encoder's last state, no attention."""

    arch: ClassVar[str] = "rnnencdec"

    def attends(self) -> bool:
        return False

    def idle(self) -> dict[str, str]:
        return {"align": "it sizes the attention, and --arch rnnencdec has none"}


@dataclass(frozen=True)
class RNNSearchConfig(GRUConfig):
    """Bahdanau et al. (2015)'s RNNsearch: the GRU family with a bidirectional encoder and the
    additive attention, and what reads or trains that attention: a coverage (a sub-config: kind
    and fertility bound) and an alignment head (on or off: one setting, so a field)."""

    arch: ClassVar[str] = "rnnsearch"
    alignment_head: bool = setting(
        False,
        "rnnsearch, with --guided-alignment-weight: train a head beside the attention on the word "
        "links instead of the attention itself; it reads each target word once known (target "
        "foresight, Peter et al. 2017), and align, --alignments and --replace-unk read it. The "
        "translation model gets no gradient from it. Not the paper's.",
    )
    coverage: CoverageConfig = field(default_factory=CoverageConfig)

    def attends(self) -> bool:
        return True


@dataclass(frozen=True)
class LuongConfig(ModelConfig):
    """Luong et al. (2015)'s stacked LSTMs with global or local attention.

    The defaults: 4 layers, dropout 0.2, reversed source, input feeding, D = 10 and the general
    score, as their best single model (Table 1), with local-m attention, their best aligner
    (Table 6), where that model has local-p: in the demo's budget local-m learnt and aligned best
    of the three windows (docs/luong.md). ``max_src`` is how many positions the location score
    knows; training sets it to its --max-len + 1 (for ``</s>``).
    """

    arch: ClassVar[str] = "luong"
    fusable: ClassVar[bool] = False  # stacked LSTMs: no hand-written passes
    compilable: ClassVar[bool] = False  # cuDNN's LSTMs run the whole sentence: no step to compile
    default_dropout: ClassVar[float] = 0.2
    SIZES: ClassVar[tuple[str, ...]] = (*ModelConfig.SIZES, "layers")
    layers: int = 4
    attention: str = setting(
        "local-m",
        "luong: where to attend (local-p: the paper's best single model; none: the paper's non-attentional base).",
        choices=(*WINDOWS, "none"),
    )
    score: str = setting("general", "luong: the alignment score function.", choices=SCORES)
    # on in a config made in Python; nmtkit train leaves it off for --attention none unless typed
    input_feed: bool = setting(
        True, "luong: feed h̃_{t-1} with the next input word (train: off for --attention none, the paper's base)."
    )
    reverse_source: bool = setting(True, "luong: read the source backwards.")
    window: int = setting(10, "luong: local attention's half-width D.", ge=1)
    max_src: int = 50
    # local-p: weights divided by their sum after the Gaussian (not the paper's). Off here, as in
    # files written before it existed; ``nmtkit train`` turns it on for a new local-p model.
    window_renorm: bool = False

    @classmethod
    def preset_sizes(cls, preset: str) -> dict[str, int]:
        """Luong et al.'s paper size is 4 × 1000 with 1000-dimensional embeddings (section 4.1)."""
        sizes = super().preset_sizes(preset)
        if preset == "paper":
            sizes["emb"] = 1000
        return sizes

    def attends(self) -> bool:
        return self.attention != "none"

    def idle(self) -> dict[str, str]:
        if self.attention == "none":
            return dict.fromkeys(("score", "window", "align"), "--attention none has no attention")
        idle = {"window": "--attention global has no window"} if self.attention == "global" else {}
        if self.score != "concat" and self.attention != "local-p":
            idle["align"] = f"it sizes the concat score and local-p's p_t, and --score {self.score} has no such layer"
        return idle


# The architectures, by name; models.build.MODELS builds them (a test keeps the two alike).
FAMILIES: dict[str, type[ModelConfig]] = {c.arch: c for c in (RNNSearchConfig, RNNEncDecConfig, LuongConfig)}
FAMILY_NAMES = tuple(c.__name__ for c in FAMILIES.values())
ARCHS = tuple(FAMILIES)
DEFAULT_ARCH = "rnnsearch"
ARCH_HELP = "Bahdanau et al.'s RNNsearch, Cho et al.'s RNNencdec, or Luong et al.'s stacked LSTM."


def model_config(arch: str = DEFAULT_ARCH, **values: Any) -> ModelConfig:
    """The config of the family ``arch`` from values by flag name, as ``nmtkit train`` gives them
    (``coverage="linguistic", max_fertility=3``); what is not given keeps its default. A setting
    of another family is refused in one line, never ignored."""
    family = _family(arch, "--arch", UserError)
    refuse_foreign(arch, values)
    kw: dict[str, Any] = {}
    subs: dict[str, dict[str, Any]] = {f.name: {} for f in fields(family) if sub_config(f)}
    for flag, f, g in _settings(family):
        if flag in values:
            if g is None:
                kw[f.name] = values[flag]
            else:
                subs[f.name][g.name] = values[flag]
    return family(**kw, **{name: sub_config_of(family, name)(**given) for name, given in subs.items()})


def refuse_foreign(arch: str, names: Iterable[str]) -> None:
    """Refuse, in one line, a setting in ``names`` that the family ``arch`` lacks and another has
    (``--dropout`` for RNNsearch); a name no family has is a TypeError (a caller's mistake)."""
    own, every = _family(arch, "--arch", UserError).flags(), every_model_flag()
    for name in sorted(set(names) - set(own)):
        if name in every:
            raise UserError(f"--{name.replace('_', '-')} does not apply to --arch {arch}")
        raise TypeError(f"no model setting {name}")


def from_flat_record(record: dict[str, Any]) -> ModelConfig:
    """The config of a checkpoint of format 1 or 2 (nmtkit 0.1, and 0.2 to 1.1): one record of
    every family's fields. A field of another family was never read (train refused its flag,
    though the record held a value for it, such as ``max_src`` or a dropout of 0 for RNNsearch), so
    it is dropped; the values are read as written (no bounds)."""
    every = every_model_flag()
    unknown = set(record) - set(every) - {"arch"}
    if unknown:
        raise FormatError(f"unknown ModelConfig field: {', '.join(sorted(unknown))}")
    arch = record.get("arch", DEFAULT_ARCH)
    own = _family(arch, "the model's architecture", FormatError).flags()
    with as_written():
        made = model_config(arch, **{k: v for k, v in record.items() if k in own})
    check_choices(made)
    return made


def every_model_flag() -> dict[str, tuple[type[Settings], str]]:
    """The flags of every family, each once, in the families' order: train's model options. A flag
    two families share is one declaration (a test holds it)."""
    out: dict[str, tuple[type[Settings], str]] = {}
    for family in FAMILIES.values():
        out |= {k: v for k, v in family.flags().items() if k not in out}
    return out


def sub_config_of(cls: type[ModelConfig], name: str) -> type[Any]:
    """The settings class of the sub-config field ``name`` of ``cls``."""
    made = next(sub_config(f) for f in fields(cls) if f.name == name)
    assert made is not None
    return made


def _settings(cls: type[ModelConfig]) -> Iterator[tuple[str, Field[Any], Field[Any] | None]]:
    """(flag name, field of ``cls``, field of its sub-config or None) for every setting of ``cls``:
    a sub-config's field is named by its declared flag (``--coverage``), else by its own name."""
    for f in fields(cls):
        sub = sub_config(f)
        if sub is None:
            yield f.name, f, None
            continue
        for g in fields(sub):
            spelled = g.metadata["nmtkit"].flag if "nmtkit" in g.metadata else None
            yield (spelled.split("/")[0][2:].replace("-", "_") if spelled else g.name), f, g


class UnknownFamily(FormatError):
    """A whole record of a model whose family this nmtkit lacks: not damaged, not nmtkit's to read."""


def _family(arch: Any, what: str, error: type[Exception]) -> type[ModelConfig]:
    if arch not in FAMILIES:
        raise error(f"{what}: {arch!r} is not one of {', '.join(FAMILIES)}")
    return FAMILIES[arch]


# Sizes for a CPU run; "bench" is the size of the peer comparison of make bench. A family takes
# the sizes it has (ModelConfig.preset_sizes).
DEFAULT_PRESET = "paper"
MODEL_PRESETS: dict[str, dict[str, int]] = {
    "paper": {"emb": 620, "hidden": 1000, "align": 1000, "maxout": 500, "layers": 4},
    "small": {"emb": 256, "hidden": 256, "align": 256, "maxout": 256, "layers": 2},
    "bench": {"emb": 256, "hidden": 256, "align": 256, "maxout": 256, "layers": 2},
    "tiny": {"emb": 32, "hidden": 32, "align": 32, "maxout": 32, "layers": 2},
}
SIZES = ("emb", "hidden", "align", "maxout", "layers")
