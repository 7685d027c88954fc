"""The metrics ``nmtkit score`` reports, built from sacreBLEU's own classes with the options it
passes through (BLEU's tokenizer and case, chrF's word order, sentence level): every figure and
signature is sacreBLEU's, computed by sacreBLEU; nothing here counts an n-gram.

The metric names are sacreBLEU's (``bleu``, ``chrf``, ``ter``) and one of nmtkit's own,
``bleu-tok``: the paper's tokenized BLEU (multi-bleu.perl on Moses tokens), which is sacreBLEU's
BLEU on those tokens as they are, unsmoothed. sacreBLEU is imported when a metric is built, not
with this module: the command line reads the settings here before any command runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.error import URLError

from ..core.errors import UserError

TOK_BLEU = "bleu-tok"
# the report when --metrics is not given: sacreBLEU's own metrics, so that a plain score costs what
# sacrebleu does (the paper's bleu-tok needs sacremoses, 0.4 s to load); tokenized input has no
# detokenized BLEU
DEFAULT = ("bleu", "chrf")
PAPER = ("bleu", TOK_BLEU, "chrf")  # both BLEUs, as the recipes and 1.0's default report them
DEFAULT_TOKENIZED = (TOK_BLEU, "chrf")
SACREBLEU_TEMPLATE = "sacreBLEU (detokenized, {tok}{case})"
TOKENIZED_TEMPLATE = "tokenized BLEU (Moses tokens, multi-bleu.perl style, as the paper{case})"
SENTENCE_WIDTH = 2  # decimals on a --sentence-level line (sacrebleu -w)


class _Held(logging.Filter):
    """Keeps the records a logger is given instead of letting them through."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False

    def release(self, logger: logging.Logger) -> None:
        """The records kept, handled by ``logger`` as they would have been (this filter removed)."""
        for record in self.records:
            logger.handle(record)


def _tokenizer_failure(err: BaseException, said: list[logging.LogRecord]) -> str | None:
    """Why sacreBLEU could not build a tokenizer, in a line (None: an error that is not its
    tokenizer's, whose traceback a defect needs): a missing extra or model, or the exit it makes
    after logging a failed download (``sys.exit(1)``)."""
    if isinstance(err, SystemExit):
        errors = [r.getMessage() for r in said if r.levelno >= logging.ERROR and r.getMessage().strip()]
        return errors[0].strip().splitlines()[0] if errors else f"sacreBLEU stopped (exit status {err.code})"
    if not isinstance(err, ImportError | RuntimeError | OSError):
        return None
    reason = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__).strip()
    if isinstance(err, URLError):  # its model, which sacreBLEU fetches on first use
        return f"sacreBLEU could not download the tokenizer's model ({reason}); run it once with a network"
    return reason


def sacrebleu_metrics() -> tuple[str, ...]:
    """sacreBLEU's metric names as its ``--metrics`` spells them."""
    from sacrebleu.metrics import METRICS

    return tuple(name.lower() for name in METRICS)


def metric_names() -> tuple[str, ...]:
    return (*sacrebleu_metrics(), TOK_BLEU)


def tokenizers() -> tuple[str, ...]:
    """sacreBLEU's BLEU tokenizers, as its ``--tokenize`` offers them."""
    from sacrebleu.metrics.bleu import BLEU

    return tuple(BLEU.TOKENIZERS)


def split_names(values: Iterable[str]) -> tuple[str, ...]:
    """Metric names from repeated and comma-separated values (``--metrics bleu,chrf --metrics ter``),
    each once, in order; ``bleu_tok`` (the JSON key) stands for ``bleu-tok``."""
    names = (n.strip().lower().replace("_", "-") for value in values for n in value.split(","))
    return tuple(dict.fromkeys(n for n in names if n))


def key(name: str) -> str:
    """The JSON key of a metric's figures (``bleu-tok`` → ``bleu_tok``)."""
    return name.replace("-", "_")


# chrF's word n-gram orders: 2 is chrF++; its character orders stop at 6
CHRF_WORD_ORDERS = 6


@dataclass(frozen=True)
class Metrics:
    """Which metrics, and sacreBLEU's options for them; ``names=None`` is the default set."""

    names: tuple[str, ...] | None = None
    tokenize: str | None = None  # BLEU's tokenizer; None: sacreBLEU's default (13a)
    lowercase: bool = False  # BLEU's, as sacrebleu --lowercase (and bleu-tok's, as multi-bleu -lc)
    chrf_word_order: int = 0  # 2: chrF++
    sentence_level: bool = False  # BLEU with effective order, as sacrebleu --sentence-level sets it

    def __post_init__(self) -> None:
        unknown = [n for n in self.names or () if n not in metric_names()]
        if unknown:
            raise UserError(f"unknown metric {unknown[0]!r}: choose from {', '.join(metric_names())}")
        if self.tokenize is not None and self.tokenize not in tokenizers():
            raise UserError(f"unknown tokenizer {self.tokenize!r}: choose from {', '.join(tokenizers())}")
        if not 0 <= self.chrf_word_order <= CHRF_WORD_ORDERS:  # sacreBLEU keeps a table per order
            raise UserError(
                f"--chrf-word-order {self.chrf_word_order}: give 0 (chrF), 2 (chrF++), at most {CHRF_WORD_ORDERS}"
            )

    def chosen(self, tokenized: bool = False) -> tuple[str, ...]:
        return self.names or (DEFAULT_TOKENIZED if tokenized else DEFAULT)

    def refuse_idle(self, tokenized: bool = False, also: Iterable[str] = ()) -> None:
        """Refuse, in one line, an option of a metric the report leaves out (beside ``also``, what
        else it computes): it would change nothing."""
        chosen = set(self.chosen(tokenized)) | set(also)
        for flag, given, read_by in (
            ("--tokenize", self.tokenize is not None, ("bleu",)),
            ("--lowercase", self.lowercase, ("bleu", TOK_BLEU)),
            ("--chrf-word-order", self.chrf_word_order != 0, ("chrf",)),
        ):
            if given and not chosen & set(read_by):
                raise UserError(
                    f"{flag} is {' and '.join(read_by)}'s, which the metrics ({', '.join(sorted(chosen))}) leave out: "
                    f"add {read_by[0]} to --metrics, or leave {flag} out"
                )

    def build(self, name: str) -> Any:
        """sacreBLEU's metric object for ``name``, set as these options say."""
        from sacrebleu.metrics.chrf import CHRF
        from sacrebleu.metrics.ter import TER

        if name == "chrf":
            return CHRF(word_order=self.chrf_word_order)
        if name == "ter":
            return TER()
        return self.bleu_tok() if name == TOK_BLEU else self.bleu()

    def bleu(self) -> Any:
        from sacrebleu.metrics.bleu import BLEU

        # sacreBLEU's log while it builds the tokenizer is held: said if it is built, or where an
        # error of ours follows (a traceback); dropped where the failure is said in one line
        held = _Held()
        logger = logging.getLogger("sacrebleu")
        logger.addFilter(held)
        try:
            bleu = BLEU(tokenize=self.tokenize, lowercase=self.lowercase, effective_order=self.sentence_level)
        except BaseException as err:
            logger.removeFilter(held)
            failed = _tokenizer_failure(err, held.records)
            if failed is None:
                held.release(logger)
                raise
            raise UserError(f"--tokenize {self.tokenize}: {failed}") from None
        logger.removeFilter(held)
        held.release(logger)
        return bleu

    def bleu_tok(self) -> Any:
        """BLEU on the tokens as given, unsmoothed: what multi-bleu.perl computes."""
        from sacrebleu.metrics.bleu import BLEU

        return BLEU(
            tokenize="none",
            smooth_method="none",
            force=True,
            lowercase=self.lowercase,
            effective_order=self.sentence_level,
        )

    def label(self, name: str) -> str:
        """What a figure is, wherever it is printed."""
        from sacrebleu.metrics.bleu import BLEU

        case = ", lowercased" if self.lowercase else ""
        if name == "bleu":
            return SACREBLEU_TEMPLATE.format(tok=self.tokenize or BLEU.TOKENIZER_DEFAULT, case=case)
        if name == TOK_BLEU:
            return TOKENIZED_TEMPLATE.format(case=case)
        return "chrF" + "+" * self.chrf_word_order if name == "chrf" else name.upper()

    def corpus_fields(self, name: str, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> dict[str, Any]:
        """One metric's corpus figure: score, sacreBLEU's own line, signature and label."""
        metric = self.build(name)
        score = metric.corpus_score(hyps, refs)
        k = key(name)
        return {
            k: score.score,
            f"{k}_detail": str(score),
            f"{k}_signature": str(metric.get_signature()),
            f"{k}_label": self.label(name),
        }


@dataclass
class SentenceScores:
    """Each sentence's score by each metric, with sacreBLEU's signatures (``--sentence-level``)."""

    name: str
    file: str
    references: int
    labels: dict[str, str]
    signatures: dict[str, str]
    rows: list[dict[str, Any]]  # per sentence: metric name → sacreBLEU's Score

    @classmethod
    def of(
        cls, name: str, file: str, texts: Mapping[str, tuple[Sequence[str], Sequence[Sequence[str]]]], metrics: Metrics
    ) -> SentenceScores:
        """``texts``: for each metric, the hypotheses and reference streams it scores."""
        built = {m: metrics.build(m) for m in texts}
        first_hyps, first_refs = next(iter(texts.values()))
        rows = [
            {m: built[m].sentence_score(hyps[i], [r[i] for r in refs]) for m, (hyps, refs) in texts.items()}
            for i in range(len(first_hyps))
        ]
        return cls(
            name,
            file,
            len(first_refs),
            {m: metrics.label(m) for m in texts},
            {m: str(b.get_signature()) for m, b in built.items()},
            rows,
        )

    def lines(self) -> list[str]:
        """sacrebleu --sentence-level's lines, the metrics of one sentence side by side (tab)."""
        return [
            "\t".join(s.format(SENTENCE_WIDTH, False, self.signatures[m]) for m, s in row.items()) for row in self.rows
        ]

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "name": self.name,
            "file": self.file,
            "sentences": len(self.rows),
            "references": self.references,
        }
        for m in self.labels:
            head |= {f"{key(m)}_signature": self.signatures[m], f"{key(m)}_label": self.labels[m]}
        return {**head, "sentence_scores": [{key(m): s.score for m, s in row.items()} for row in self.rows]}
