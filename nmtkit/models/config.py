"""A model's architecture and sizes, as the checkpoint records them, and the size presets."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import UserError
from ..core.settings import Settings, setting

# The architectures, by name (models.MODELS builds them; a test keeps the two alike): Bahdanau et
# al.'s RNNsearch and Cho et al.'s RNNencdec share the GRU family's flags, Luong et al.'s model has
# the stacked-LSTM family's (LUONG_ONLY).
ARCHS = ("rnnsearch", "rnnencdec", "luong")
READOUTS = ("prev", "next")
ENCODERS = ("paper", "cudnn")
COVERAGES = ("none", "linguistic", "neural")
MAX_FERTILITY = 2.0  # Tu et al.'s N, as they trained it
NEURAL_COVERAGE_DIM = 10  # Tu et al.'s d: the units of each source word's neural coverage


# Luong et al.'s attention: where it looks, and how it scores a source word.
WINDOWS = ("global", "local-m", "local-p")
SCORES = ("dot", "general", "concat", "location")


@dataclass(frozen=True)
class ModelConfig(Settings):
    """Architecture and sizes; the defaults are the paper's (Appendix A.2.3).

    ``readout`` picks the state the deep output sees: ``prev`` follows the
    equation t̃_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i (default); ``next``
    uses s_i, as the appendix's ``p(y_i | s_i, y_{i-1}, c_i)`` could be read.
    ``encoder`` is ``paper`` (the appendix's GRU) or ``cudnn`` (torch's fused
    GRU, whose reset gate acts after the recurrent product: faster on GPUs).

    The fields after ``encoder`` are the ``luong`` architecture's (Luong et
    al. 2015): 4 layers, dropout 0.2, reversed source, input feeding, D = 10
    and the general score, as their best single model (Table 1), with local-m
    attention, their best aligner (Table 6), where that model has local-p:
    in the demo's 20 minutes on a 2-core CPU local-m learnt and aligned best
    of the three windows (AER 49.0, against 61.3 for global and 64.6 for
    local-p with its window renormalised). ``max_src`` is how many positions
    the location score knows; training sets it to its --max-len + 1 (for ``</s>``).
    """

    arch: str = setting(
        "rnnsearch",
        "Bahdanau et al.'s RNNsearch, Cho et al.'s RNNencdec, or Luong et al.'s stacked LSTM.",
        choices=ARCHS,
    )
    src_vocab: int = 0
    tgt_vocab: int = 0
    emb: int = 620  # m
    hidden: int = 1000  # n
    align: int = 1000  # n'
    maxout: int = 500  # l
    readout: str = setting("prev", "Deep output from s_{i-1} (the paper's equation) or s_i.", choices=READOUTS)
    encoder: str = setting(
        "paper",
        "The appendix's GRU, or torch's fused GRU (cuDNN; reset gate after U s): faster on GPUs.",
        choices=ENCODERS,
    )
    layers: int = 4
    dropout: float = setting(0.2, "luong: dropout on the non-recurrent connections.", ge=0, lt=1)
    attention: str = setting(
        "local-m",
        "luong: where to attend (local-p: the paper's best single model; local-m aligned best in a "
        "20-minute CPU run; none: the paper's non-attentional base).",
        choices=(*WINDOWS, "none"),
    )
    score: str = setting("general", "luong: the alignment score function.", choices=SCORES)
    input_feed: bool = setting(True, "luong: feed h̃_{t-1} with the next input word.")
    reverse_source: bool = setting(True, "luong: read the source backwards.")
    window: int = setting(10, "luong: local attention's half-width D.", ge=1)
    max_src: int = 50
    # local-p: weights divided by their sum after the Gaussian (not the paper's). Off here, as in
    # files written before it existed; ``nmtkit train`` turns it on for a new local-p model.
    window_renorm: bool = False
    tie_embeddings: bool = setting(
        False,
        "Score the output with the target embedding matrix (Press & Wolf 2017): one matrix fewer; the "
        "maxout units then number --emb. Not the paper's.",
        flag="--tie-embeddings/--no-tie-embeddings",
        default_help="off; --schedule cpu: on",
    )
    layer_norm: bool = setting(
        False,
        "Layer-normalised GRUs (Ba et al. 2016), each product normalised as in Nematus. A change of "
        "model, saved in the checkpoint; not the paper's.",
    )
    alignment_head: bool = setting(
        False,
        "rnnsearch, with --guided-alignment-weight: train a head beside the attention on the word "
        "links instead of the attention itself; it reads each target word once known (target "
        "foresight, Peter et al. 2017), and align, --alignments and --replace-unk read it. The "
        "translation model gets no gradient from it. Not the paper's.",
    )
    coverage: str = setting(
        "none",
        f"rnnsearch: a coverage vector the attention reads, against under- and over-translation: Tu "
        f"et al. (2016)'s linguistic one (each source word's attention so far over its learnt "
        f"fertility) or neural one (a {NEURAL_COVERAGE_DIM}-unit GRU per source word, fed its "
        f"attention, its annotation and the decoder state). Trains through the reference loop, not "
        f"--fused-steps. Not the paper's.",
        choices=COVERAGES,
    )
    max_fertility: float = setting(
        MAX_FERTILITY,
        "rnnsearch, --coverage linguistic: Tu et al.'s N, the most target words a source word may "
        "cover (its fertility is N times a sigmoid).",
        gt=0,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_fertility != MAX_FERTILITY and self.coverage != "linguistic":
            raise UserError("--max-fertility bounds the linguistic coverage: add --coverage linguistic")


def coverage_dim(coverage: str) -> int:
    """How many numbers the coverage of one source word takes in the decoder state (0: none)."""
    return {"none": 0, "linguistic": 1, "neural": NEURAL_COVERAGE_DIM}[coverage]


def is_luong(arch: str) -> bool:
    """Whether an architecture takes the stacked-LSTM family's flags (LUONG_ONLY)."""
    return arch == "luong"


# Sizes for a CPU run; "bench" is the size of the peer comparison of make bench.
DEFAULT_PRESET = "paper"
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
    if is_luong(arch) and preset == "paper":
        sizes["emb"] = 1000
    return sizes


# Flags that belong to one family only: given to the other, they are refused rather than ignored.
LUONG_ONLY = frozenset(
    {"layers", "dropout", "attention", "score", "input_feed", "reverse_source", "window", "window_renorm"}
)
RNNSEARCH_ONLY = frozenset(
    {"maxout", "readout", "encoder", "tie_embeddings", "layer_norm", "alignment_head", "coverage", "max_fertility"}
)
SIZES = ("emb", "hidden", "align", "maxout", "layers")
