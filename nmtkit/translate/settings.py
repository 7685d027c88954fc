"""What a translation asks for: the search (beam, length penalty, output limits) and the handling
of the text around it. Plain values, without torch, so that the command line reads its defaults
here and ``translate`` and ``serve`` share them."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.settings import Settings, checking, setting

LENGTH_PENALTIES = ("none", "average", "power", "gnmt")
OUTPUT_FORMATS = ("text", "jsonl")  # translate's: plain lines, or a JSON object per line


MAX_EXTRA = 10  # words an output may have beyond --max-output-ratio times its source's


@dataclass(frozen=True)
class SearchConfig(Settings):
    """Beam search's settings, each declared once: the command line's options, serve's request
    fields and their --help, OpenAPI and --dump-config texts all come from these declarations.
    :meth:`check` refuses an impossible combination in one line. The defaults are the paper's."""

    beam: int = setting(12, "Beam width (1: greedy).", ge=1)
    length_penalty: str = setting(
        "none",
        "Rank finished hypotheses by raw log-probability (the paper), by log-probability per word, over "
        "|y|^alpha (fairseq's --lenpen, Marian's --normalize), or over GNMT's ((5+|y|)/6)^alpha.",
        choices=LENGTH_PENALTIES,
    )
    # at most 10: beyond, the penalty alone ranks (40 ** 30 is past float32's range; search.ranking
    # divides such lengths in float64)
    alpha: float = setting(0.6, "The exponent of --length-penalty power and gnmt.", ge=0, le=10)
    coverage_penalty: float = setting(
        0.0,
        "Wu et al. (2016)'s coverage penalty beta: add beta times the sum over source units (end of sentence "
        "included) of log min(attention received, 1) to each finished hypothesis' rank, a penalty (never "
        "positive) on translations that leave source words out (0: off; GNMT used 0.2 with --length-penalty gnmt).",
        ge=0,
        le=10,  # beta times a log must stay within float32's range, or every rank is NaN
    )
    max_ratio: float = setting(
        2.0,
        f"Output limit: this times the source length, plus {MAX_EXTRA} (fairseq's --max-len-a, Marian's "
        "--max-length-factor).",
        ge=0,
        le=100,  # 25,000 words for the longest line; past int64, the product wrapped to a limit of 1
        flag="--max-output-ratio",
        old="--max-ratio",
    )
    max_extra: int = MAX_EXTRA  # the constant of the output limit (not an option)
    nbest: int = 1
    no_unk: bool = setting(False, "Never produce <unk> (the paper's Table 1, last column).")
    min_len: int = setting(
        1,
        "Words before </s> at least (1, as fairseq's --min-len: no empty translation).",
        ge=0,
        le=100_000,  # past the longest output limit anyway; a bound keeps it in int64
        flag="--min-output-len",
        old="--min-len",
    )
    min_ratio: float = setting(
        0.0,
        "Words before </s> at least this times the source length (its units, </s> included), rounded down; "
        "the larger of this and --min-output-len holds (GroundHog's sampler asked for 0.5).",
        ge=0,
        le=100,  # past the output limit anyway; a bound keeps its product in int64
        flag="--min-output-ratio",
    )
    ordered_constraints: bool = setting(
        False,
        "Hold each output's constraints in the order given, each after the end of the one before (fairseq's "
        "--constraints ordered); without it, in any order, overlapping or not.",
    )
    plain_first: bool = setting(
        True,
        "With constraints (phrases, a glossary's terms): search each batch without them first and keep the "
        "outputs that hold them already; the others are searched with them. Off: the constrained search "
        "alone, faster where few outputs hold their phrases unasked.",
    )
    sampling: bool = setting(
        False,
        "Draw each output word by word from the model's distribution instead of searching, for "
        "back-translation (fairseq's --sampling, Marian's --output-sampling); --nbest N draws N independent "
        "samples per line, written best first.",
    )
    temperature: float = setting(
        1.0,
        "With --sampling: draw from softmax(log p / T), sharper below 1, flatter above.",
        ge=1e-6,  # log p / T must stay within float32's range, or the draws leave the vocabulary
        le=1e6,
    )
    top_k: int = setting(
        0, "With --sampling: draw among the K most probable words only (0: the whole vocabulary).", ge=0
    )
    seed: int = setting(
        0, "With --sampling: the seed; a line's samples depend on it and the line's number alone.", ge=0, le=2**63 - 1
    )

    def check(self, names: tuple[str, str] = ("nbest", "beam"), typed: Collection[str] = ()) -> SearchConfig:
        """This config, or :class:`UserError` when it asks for more than the search can give;
        ``names``: what the asker calls nbest and beam (``--nbest``, ``'nbest'``); ``typed``: the
        fields the asker gave, which are refused where idle even at their defaults."""
        if self.nbest < 1:
            raise UserError(f"{names[0]} {self.nbest}: at least 1 hypothesis a sentence")
        if self.max_extra < 0:  # not an option: a library caller's
            raise UserError(f"SearchConfig max_extra {self.max_extra}: the output limit's constant is 0 or more")
        if not self.sampling and self.nbest > self.beam:
            raise UserError(f"{names[0]} {self.nbest} is more than {names[1]} {self.beam} can give")
        if not self.sampling and (self.temperature != 1.0 or self.top_k or self.seed or set(typed) & _DRAWS):
            raise UserError("--temperature, --top-k and --seed shape sampling's draws: add --sampling")
        if self.sampling and (self.coverage_penalty or "coverage_penalty" in typed):
            raise UserError("--coverage-penalty ranks beam search's hypotheses: --sampling draws them")
        if self.sampling and "beam" in typed:  # a config file's, written for beam search, is unused
            raise UserError(f"{names[1]} is beam search's width: --sampling draws {names[0]} samples instead")
        return self

    @property
    def width(self) -> int:
        """Rows per sentence: the beam's, or the samples drawn."""
        return self.nbest if self.sampling else self.beam


# The search's settings as translate and serve offer them, in this order (nbest is each command's
# own: translate writes n-best lines, serve's requests ask for it; serve offers no sampling).
SEARCH_OPTIONS = (
    "beam",
    "length_penalty",
    "alpha",
    "coverage_penalty",
    "max_ratio",
    "min_len",
    "min_ratio",
    "no_unk",
    "ordered_constraints",
    "plain_first",
)
SAMPLING_OPTIONS = ("sampling", "temperature", "top_k", "seed")
_DRAWS = frozenset(SAMPLING_OPTIONS[1:])  # what shapes sampling's draws, idle without it


# Source subword units a line may have: longer ones are cropped (translate) or refused (serve).
# Search time grows with the square of the length (the output limit grows with the source): one
# 5,000-unit line held a beam of 12 for 8 minutes. 250 units is five times training's 50 words.
MAX_LENGTH = 250


@dataclass(frozen=True)
class TranslateOptions(Settings):
    """How ``translate`` reads, batches and writes, around the search; its options are made from
    these declarations (:data:`BATCHING_OPTIONS`)."""

    search: SearchConfig = SearchConfig()
    batch_size: int | None = setting(
        None,
        "Sentences per batch (the search holds --beam rows per sentence; long sentences get smaller batches).",
        ge=1,
        default_help="32, fewer for beams over 5: at most 160 rows",
    )
    max_tokens: int | None = setting(
        None,
        "Batches of at most N source tokens, </s> and padding counted, instead of --batch-size sentences (the "
        "search then holds --beam rows per sentence, so N times the beam source tokens); 0: sentence batches.",
        ge=0,
        default_help="8,000 on GPUs without --batch-size, else 0",
    )
    shortlist: bool = setting(
        False,
        "Vocabulary selection: each batch scores only its candidate words (the lexicon's most frequent "
        "target words and its translations of each of the batch's source words; the lexicon is the one "
        "training or nmtkit lexicon stored in the checkpoint, an ensemble's its members' together): a smaller "
        "output layer.",
    )
    tokenized: bool = setting(False, "Input and output in Moses tokens (BPE still applied and undone).")
    attention: bool = False  # keep each output's attention matrix (asked for by what is written)
    token_scores: bool = setting(
        False,
        "Each output's subword units ('tokens') and the log-probability of each, </s> last ('token_scores', "
        "summing to 'score'), as fairseq's positional scores and Marian's --word-scores.",
    )
    replace_unk: bool = setting(False, "Replace each <unk> by the source word it attends to most.")
    unk_dict: dict[str, str] | None = None  # ... translated through this dictionary (--unk-dict FILE)
    glossary: tuple[tuple[str, str], ...] | None = None  # (source, target) terms (--glossary FILE)
    max_length: int = setting(
        MAX_LENGTH,
        "Source subword units read of each line: a longer line is cropped to its first N, with a warning, "
        "and still gives one output line (0: no limit; Marian's --max-length-crop). Search time grows with "
        "the square of the length.",
        ge=0,
        flag="--crop-len",
        old="--max-length",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if checking() and self.glossary is not None:  # as serve's request and a glossary file are held
            object.__setattr__(self, "glossary", _terms(self.glossary))
        if checking() and self.unk_dict is not None and not _all_str(self.unk_dict):
            raise UserError(f"unk_dict: {self.unk_dict!r}, not a dict of words (str) to their translations (str)")

    def check(self) -> TranslateOptions:
        """These options, or :class:`UserError` where they ask what no search can give, or two ways
        to cut batches."""
        self.search.check()
        if self.batch_size and self.max_tokens:
            raise UserError("--batch-size and --max-tokens are two ways to cut batches: give one")
        if self.replace_unk and self.search.no_unk:
            raise UserError("--replace-unk replaces <unk>, which --no-unk never gives: give one of them")
        if self.glossary:
            refuse_beside_glossary(self.search)
        return self


def _all_str(d: object) -> bool:
    return isinstance(d, dict) and all(isinstance(x, str) for pair in d.items() for x in pair)


def _terms(given: object) -> tuple[tuple[str, str], ...]:
    """A glossary given in Python, as a file's terms are held: (source term, translation) pairs of
    text with a word each, a term once; a list of lists is taken as the tuples it stands for."""
    pairs = list(given.items()) if isinstance(given, dict) else given
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, (list, tuple)):
        raise UserError(f"glossary: {given!r}, not (source term, translation) pairs")
    terms: list[tuple[str, str]] = []
    for pair in pairs:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise UserError(f"glossary: {pair!r} is no (source term, translation) pair of text")
        if not all(x.strip() for x in pair):
            raise UserError(f"glossary: {tuple(pair)!r}: a term and its translation hold a word each")
        if any(pair[0].strip() == t.strip() for t, _ in terms):
            raise UserError(f"glossary: the term {pair[0].strip()!r} is given twice")
        terms.append((pair[0], pair[1]))
    return tuple(terms)


def refuse_beside_glossary(search: SearchConfig) -> None:
    """What a glossary's terms cannot stand beside, refused in a line (also before its file is read,
    whose warnings would come first)."""
    if search.sampling:
        raise UserError("--glossary's terms guide the beam search: sampling draws each word and cannot place them")
    if search.ordered_constraints:
        raise UserError("--glossary's terms have no order in the output: constraints cannot be ordered beside it")


# The options translate makes from TranslateOptions' declarations, in this order.
BATCHING_OPTIONS = ("batch_size", "max_tokens", "tokenized", "max_length", "shortlist")


@dataclass(frozen=True)
class RescoreConfig(Settings):
    """What ``nmtkit rescore`` writes of each given translation; its options are made from these
    declarations and from the length penalty's in :class:`SearchConfig`, whose score it writes."""

    penalty: SearchConfig = SearchConfig()  # its length_penalty and alpha: the score is ranked as the search ranks
    backward: bool = setting(
        False,
        "The models translate the other way, from --target's language into --source's: score each source "
        "given its translation (the channel model of noisy-channel reranking).",
    )
    feature: str = setting(
        "Fscore",
        "With --nbest-list: the name of the feature added to each hypothesis' features, as 'NAME= score' "
        "(Marian's --n-best-feature; translate's own log p is F0).",
        flag="--nbest-feature",
    )
    crop: int = MAX_LENGTH  # units each side keeps (TranslateOptions declares it, as --crop-len)
    jsonl: bool = False  # a JSON object a line (--output-format jsonl) rather than plain lines
    token_scores: bool = False  # with jsonl, each token's log-probability (TranslateOptions declares it)

    def __post_init__(self) -> None:
        super().__post_init__()
        if checking() and (not self.feature or any(c.isspace() or c in "|=" for c in self.feature)):
            raise UserError(f"--nbest-feature '{self.feature}': a name without spaces, '|' or '=' (rescore adds '=')")
        if checking() and self.feature == "words":  # nbest.WORDS: settings import no stage
            raise UserError("--nbest-feature words: the name rerank gives the word count; give another")
        if checking() and self.token_scores and not self.jsonl:
            raise UserError("--token-scores are written in --output-format jsonl; add that")
