"""What a translation asks for: the search (beam, length penalty, output limits) and the handling
of the text around it. Plain values, without torch, so that the command line reads its defaults
here and ``translate`` and ``serve`` share them."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import UserError

LENGTH_PENALTIES = ("none", "average", "gnmt")
OUTPUT_FORMATS = ("text", "jsonl")  # translate's: plain lines, or a JSON object per line


@dataclass(frozen=True)
class SearchConfig:
    """Beam search's settings; :func:`check` refuses an impossible combination in one line.

    The defaults are ``nmtkit translate``'s, which are the paper's.

    Attributes:
        beam: Beam width (the paper's 12); 1 is greedy search.
        length_penalty: How finished hypotheses are ranked: ``none`` (raw log-probability, the
            paper), ``average`` (per word) or ``gnmt`` (GNMT's ((5+|y|)/6)^alpha).
        alpha: GNMT's exponent.
        coverage_penalty: β of Wu et al. (2016)'s coverage penalty, added to the ranking of a
            finished hypothesis: β Σ_i log min(Σ_j α_ij, 1) over the source units i (</s>
            included), Σ_j the attention it received over the output; 0: off.
        max_ratio: Output limit: ``max_ratio`` × the source length + ``max_extra`` units.
        max_extra: See ``max_ratio``.
        nbest: Hypotheses kept per sentence, best first (at most ``beam``).
        no_unk: Never emit ``<unk>`` (the paper's Table 1, RNNsearch-50* rows).
        min_len: Words before ``</s>`` at least (1: no empty translation of a non-empty line).
        sampling: Draw each output word by word from the model's distribution instead of
            searching (:mod:`nmtkit.translate.sampling`); ``nbest`` samples per sentence, and
            ``beam`` unused.
        temperature: Sampling from softmax(log p / T): below 1 sharper, above 1 flatter.
        top_k: Sampling from the K most probable words only (0: all).
        seed: Sampling's seed; a sentence's samples depend on it and the sentence's line alone.
    """

    beam: int = 12  # the paper's width (arXiv v1)
    length_penalty: str = "none"  # none | average | gnmt
    alpha: float = 0.6  # GNMT's exponent
    coverage_penalty: float = 0.0  # β of Wu et al.'s coverage penalty (0: off)
    max_ratio: float = 2.0  # output limit: max_ratio × source length + max_extra
    max_extra: int = 10
    nbest: int = 1
    no_unk: bool = False  # never emit <unk> (Table 1's RNNsearch-50* rows)
    min_len: int = 1  # words before </s>
    sampling: bool = False  # draw instead of searching (back-translation)
    temperature: float = 1.0  # sampling from softmax(log p / T)
    top_k: int = 0  # sampling from the K most probable words (0: all)
    seed: int = 0  # sampling's seed

    def check(self, names: tuple[str, str] = ("nbest", "beam")) -> SearchConfig:
        """This config, or :class:`UserError` when it asks for more than the search can give;
        ``names``: what the asker calls nbest and beam (``--nbest``, ``'nbest'``)."""
        if not self.sampling and self.nbest > self.beam:
            raise UserError(f"{names[0]} {self.nbest} is more than {names[1]} {self.beam} can give")
        if not self.sampling and (self.temperature != 1.0 or self.top_k):
            raise UserError("--temperature and --top-k shape sampling's draws: add --sampling")
        if self.sampling and self.coverage_penalty:
            raise UserError("--coverage-penalty ranks beam search's hypotheses: --sampling draws them")
        if self.temperature <= 0:
            raise UserError(f"--temperature {self.temperature}: must be above 0 (1: the model's distribution)")
        return self

    @property
    def width(self) -> int:
        """Rows per sentence: the beam's, or the samples drawn."""
        return self.nbest if self.sampling else self.beam


# Source subword units a line may have: longer ones are cropped (translate) or refused (serve).
# Search time grows with the square of the length (the output limit grows with the source): one
# 5,000-unit line held a beam of 12 for 8 minutes. 250 units is five times training's 50 words.
MAX_LENGTH = 250


@dataclass(frozen=True)
class TranslateOptions:
    """How ``translate`` reads, batches and writes, around the search."""

    search: SearchConfig = SearchConfig()
    batch_size: int | None = None  # sentences per batch; None: 32, at most CPU_ROWS // beam
    max_tokens: int | None = None  # >0: batches by source tokens; 0: by sentences; None: tokens on GPUs
    shortlist: bool = False  # search over the lexicon's candidates for each batch (nmtkit.lexicon)
    tokenized: bool = False  # input and output in Moses tokens
    attention: bool = False  # keep each output's attention matrix
    replace_unk: bool = False  # copy the most attended source word into each <unk>
    unk_dict: dict[str, str] | None = None  # ... translated through this dictionary when listed
    max_length: int = MAX_LENGTH  # source subword units kept of each line, the rest cropped (0: all)
