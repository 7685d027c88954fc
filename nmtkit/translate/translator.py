"""Raw text in, raw text out, with nothing but a checkpoint (or several, as an ensemble).

``Translator.from_checkpoints(paths)`` rebuilds the models and both text
pipelines from the checkpoints alone (vocabularies, text settings, BPE
codes), so a line goes exactly the way the training data went: clean →
Moses → BPE → ids → beam search → ids → words → de-BPE → detokenise.
Lines come in blocks; each block is sorted by length and cut into batches
under a token budget (little padding, and one 1,000-word line gets a batch
of its own), and results come out in input order, one per input line.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .. import checkpoint
from ..core.console import log
from ..core.errors import UserError
from ..core.runtime import Runtime, setup
from ..core.settings import RuntimeConfig
from ..data.batching import pad
from ..data.lexicon import Lexicon
from ..data.sides import Sides
from ..data.target_order import model_order, reading_order, reading_order_array
from ..data.vocab import PAD, SPECIALS
from ..models.base import EncoderOut, Seq2Seq
from ..models.ensemble import Ensemble
from ..models.int8 import quantize_int8
from ..text.bpe import UnitKinds
from .beside import LinesBeside, refuse_non_phrases, refuse_non_text
from .constraints import (
    Phrases,
    constraint_batch,
    constraint_ids,
    refuse_sampling,
    splice,
    unheld,
    unplaced,
    word_edges,
)
from .cropping import cropped_tokens
from .glossary import Glossaries, with_terms
from .prefixes import prefix_batch, prefix_ids
from .sampling import sample
from .search import Hypotheses, alignment, aligns_as_it_searches, beam_search, force, log_probs
from .settings import TranslateOptions
from .translation import Forced, Translation
from .unknown_words import replace_unk

# Python's str.splitlines() breaks at these; an output line must never contain one.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Sentence batches hold at most batch_size sentences and batch_size × this many source tokens.
_TOKENS_PER_SENTENCE = 50
# The default batch on a CPU: 32 sentences, or fewer for wide beams, at most this many search rows
# (sentences × beam). Wider batches were no faster on a CPU and cost memory (bin/bench-translate).
CPU_ROWS = 160
# Token batches by default on a GPU: source tokens (padding included) per batch, times the beam in
# rows; sentence batches of 32 leave a large GPU mostly idle.
GPU_MAX_TOKENS = 8000


def ways_apart(path: str | Path, langs: dict[str, str], first_path: str | Path, first: dict[str, str]) -> str:
    """The start of the line that refuses a model of another direction than the first's."""
    return f"{path} translates {langs['src']}→{langs['tgt']} but {first_path} {first['src']}→{first['tgt']}"


def load_models(
    paths: list[str | Path], device: torch.device, int8: bool = False
) -> tuple[Seq2Seq, Sides, Lexicon | None]:
    """The models of ``paths`` (an ensemble for several), their text sides and their lexicons'
    union (:meth:`Lexicon.union`; None unless each has one); ``int8``: with int8 linear layers (CPUs only)."""
    if int8 and device.type != "cpu":
        raise UserError(f"--int8 is for CPUs (torch's int8 kernels); on {device.type} use --bf16")
    models: list[Seq2Seq] = []
    lexicons: list[Lexicon] = []
    sides, first = None, None
    for path in paths:
        ckpt = checkpoint.load(path)
        lexicons += [ckpt.lexicon] if ckpt.lexicon is not None else []
        these = ckpt.text.sides()
        langs = ckpt.text.langs
        first = first or langs
        if (langs["src"], langs["tgt"]) != (first["src"], first["tgt"]):
            raise UserError(f"{ways_apart(path, langs, paths[0], first)}: an ensemble is of models of one direction")
        if sides is not None and these.signature() != sides.signature():
            raise UserError(
                f"{path}: cannot ensemble with {paths[0]}: their vocabularies, text settings or BPE codes differ"
            )
        sides = sides or these
        model = checkpoint.model_of(ckpt, path, device)
        if models and model.cfg.right_to_left != models[0].cfg.right_to_left:
            raise UserError(
                f"{path}: cannot ensemble with {paths[0]}: one writes right to left, the other left to right "
                f"(each can score an n-best list in a run of its own, a feature each: rescore --nbest-list)"
            )
        models.append(quantize_int8(model) if int8 else model)
    assert sides is not None
    lexicon = Lexicon.union(lexicons) if len(lexicons) == len(models) else None  # --shortlist: each member's
    return (models[0] if len(models) == 1 else Ensemble(models).eval()), sides, lexicon


def bf16_weights(model: Seq2Seq, runtime: Runtime) -> Seq2Seq:
    """With --bf16 on a CPU, the model's float weights in bfloat16, cast once. Autocast would cast
    the same weights to the same bfloat16 values (round to nearest) at every call: it caches casts
    only of weights that train, and a search step's casts cost more than its bfloat16 products
    save (--bf16 then translated slower than float32). Autocast
    stays on around search, so the operators it keeps in float32 (softmax, log_softmax) still
    are. An int8 model keeps its float32 parts: torch's int8 layers take float32 (the command line
    refuses --int8 with --bf16)."""
    if (
        not runtime.bf16
        or runtime.device.type != "cpu"
        or any("quantized" in type(m).__module__ for m in model.modules())
    ):
        return model
    return model.to(torch.bfloat16)


class Translator:
    """Raw text in, raw text out: one model or an ensemble, with both text pipelines.

    Build one with :meth:`from_checkpoints`; :meth:`translate` then cleans, tokenizes and
    applies BPE to each line exactly as the training data was, runs batched beam search, and
    undoes BPE and tokenization. Results come in input order, one per input line (an empty
    line gives an empty translation).

    Example:
        ```python
        from nmtkit.translate.settings import SearchConfig, TranslateOptions
        from nmtkit.translate.translator import Translator

        translator = Translator.from_checkpoints("runs/demo/best.pt", "cpu")
        options = TranslateOptions(search=SearchConfig(beam=5))
        for t in translator.translate(["And God said, Let there be light."], options):
            print(t.text, t.score)
        ```
    """

    def __init__(self, model: Seq2Seq, sides: Sides, runtime: Runtime, lexicon: Lexicon | None = None):
        self.model, self.sides, self.runtime = model.eval(), sides, runtime
        self.device = runtime.device
        self.lexicon = None if lexicon is None else lexicon.to(self.device)
        self.glossaries = Glossaries(sides)

    @property
    def attends(self) -> bool:
        """Whether a model here has an attention (alignments, attention maps, --replace-unk)."""
        members = self.model.models if isinstance(self.model, Ensemble) else [self.model]
        return any(m.cfg.attends() for m in members)

    @property
    def unit_kinds(self) -> UnitKinds:
        """Whether the source's and the target's units are SentencePiece's, as the codes say."""
        return self.sides.src.text.sentencepiece, self.sides.tgt.text.sentencepiece

    def require_attention(self, what: str, where: str | Path) -> None:
        """Refuse ``what`` in one line where the models of ``where`` have no attention to read."""
        if not self.attends:
            raise UserError(f"{what} reads the attention: {where} has none")

    @classmethod
    def from_checkpoints(
        cls, paths: list[str | Path] | str | Path, runtime: RuntimeConfig | torch.device | str | None = None
    ) -> Translator:
        """The models of ``paths`` (several: an ensemble) set up by ``runtime`` (or just a device
        name); with ``runtime.int8``, their linear layers in int8 (:mod:`nmtkit.models.int8`)."""
        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        if not paths:
            raise ValueError("Translator.from_checkpoints: no checkpoint given")
        device = None if runtime is None else str(runtime)  # a torch.device as its name
        cfg = runtime if isinstance(runtime, RuntimeConfig) else RuntimeConfig(device=device)
        # the search's output layer is its own (inference_linear): numpy's BLAS serves training's loss
        run = setup(replace(cfg, logits_blas="torch"))
        model, sides, lexicon = load_models(paths, run.device, cfg.int8)
        return cls(bf16_weights(model, run), sides, run, lexicon)  # its own models: cast in place

    def translate(
        self,
        lines: Iterable[str],
        options: TranslateOptions = TranslateOptions(),
        block: int = 1000,
        prefixes: Iterable[str] | None = None,
        done: Callable[[int], object] = lambda n: None,
        constraints: Iterable[list[str]] | None = None,
    ) -> Iterator[Translation]:
        """Translations of ``lines`` in order; ``block`` lines are read before any is translated.
        ``prefixes``: a line per line of ``lines``, the start each output is forced to have;
        ``done``: told the lines of each batch as it ends, before its block's lines come out;
        ``constraints``: per line of ``lines``, the phrases (raw target text) its output must hold."""
        if isinstance(lines, str):  # else each of its characters would be a line
            raise TypeError("Translator.translate takes lines (a list or a file), not one str: use [line]")
        if block < 1:
            raise ValueError(f"Translator.translate: block {block}: at least one line")
        self._refuse_unmet(options)  # now, not at the first line read: a generator runs late
        forced, wanted = LinesBeside(prefixes), LinesBeside(constraints, "--constraints")
        return self._translate(iter(lines), options, block, forced, wanted, done)

    def _translate(
        self,
        lines: Iterator[str],
        options: TranslateOptions,
        block: int,
        forced: LinesBeside[str],
        wanted: LinesBeside[list[str]],
        done: Callable[[int], object],
    ) -> Iterator[Translation]:
        read = 0
        while pending := list(itertools.islice(lines, block)):
            n = len(pending)
            yield from self.translate_block(pending, options, read + 1, forced.take(n), done, wanted.take(n))
            read += n
        forced.finish()
        wanted.finish()

    def source_length(self, line: str, tokenized: bool = False) -> int:
        """How many subword units the model would read of ``line`` (``</s>`` not counted)."""
        return len(self.sides.src.tokens(line, tokenized))

    def _batches(self, lengths: list[int], batch_size: int, max_tokens: int | None = 0) -> Iterator[list[int]]:
        """Indices of non-empty lines, shortest first, in batches: of at most ``max_tokens``
        source tokens (</s> and padding counted) when it is > 0, else under the sentence and token
        budgets of ``batch_size``; ``None``: token batches on a GPU, sentence batches elsewhere."""
        if max_tokens is None:
            max_tokens = GPU_MAX_TOKENS if self.device.type == "cuda" else 0
        budget = max_tokens or batch_size * _TOKENS_PER_SENTENCE
        order = sorted((i for i, n in enumerate(lengths) if n), key=lambda i: lengths[i])
        batch: list[int] = []
        for i in order:
            if batch and (
                (not max_tokens and len(batch) == batch_size) or (len(batch) + 1) * (lengths[i] + 1) > budget
            ):
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch

    def translate_block(
        self,
        lines: list[str],
        options: TranslateOptions,
        first_line: int = 1,
        prefixes: list[str] | None = None,
        done: Callable[[int], object] = lambda n: None,
        constraints: list[list[str]] | None = None,
        warn: Callable[[str], object] = log,
    ) -> list[Translation]:
        """Translations of ``lines``, numbered from ``first_line`` (in the warnings, which go to
        ``warn``, and as the sampling's keys); each starts with its line of ``prefixes`` when given,
        and holds the phrases of its ``constraints``. ``done`` is told how many lines each batch
        translated, as it ends (a progress bar's advance)."""
        self._refuse_unmet(options)
        refuse_non_text(lines, first_line)
        refuse_non_text(prefixes or [], first_line, "the prefix of line")
        refuse_non_phrases(constraints or [], first_line)
        if constraints is not None:
            refuse_sampling(options.search)
        src_side, tgt_side = self.sides.src, self.sides.tgt
        kinds = self.unit_kinds
        sources = [
            cropped_tokens(src_side, line, options.tokenized, options.max_length, first_line + k)
            for k, line in enumerate(lines)
        ]
        if options.glossary:  # the translations of the terms its source holds join each line's constraints
            constraints = with_terms(constraints, sources, self.glossaries.of(options.glossary, options.tokenized))
        backwards = self.model.cfg.right_to_left  # the model writes each output last unit first
        starts = None if prefixes is None else prefix_ids(prefixes, tgt_side, options, backwards, first_line, warn)
        musts, edges = None, None
        if constraints is not None:
            musts = constraint_ids(constraints, tgt_side, options.tokenized, backwards, first_line, warn)
            edges = word_edges(tgt_side.vocab.tokens, backwards, self.device, tgt_side.text.sentencepiece)
        out = [_empty(tokens, options.search.nbest, options.token_scores, kinds) for tokens in sources]  # empty in
        attention = (options.attention or options.replace_unk) and self.attends  # else no links, no maps
        done(sum(not s for s in sources))  # empty lines, in no batch: translated already
        batch_size = options.batch_size or max(1, min(32, CPU_ROWS // options.search.width))
        max_tokens = 0 if options.batch_size else options.max_tokens  # sentences asked (not both: check())
        for idx in self._batches([len(s) for s in sources], batch_size, max_tokens):
            src = pad([np.asarray(src_side.ids(sources[i]), dtype=np.int64) for i in idx]).to(self.device)
            prefix = prefix_batch(starts, idx, self.device)
            must = (
                None
                if musts is None
                else constraint_batch([musts[i] for i in idx], self.device, edges, options.search.ordered_constraints)
            )
            keys = torch.tensor([first_line + i for i in idx])  # the sampling's: batching changes nothing
            hyps, maps = self._search(src, options, attention, prefix, must, keys)
            unheld, n = {idx[q] for q in hyps.unheld}, hyps.nbest
            for i in sorted(unheld):
                warn(
                    f"line {first_line + i}: no output within the output limit holds every constraint: "
                    "translated without them"
                )
            for row in range(len(hyps.tokens)):
                i = idx[row // n]
                if row % n and not np.isfinite(hyps.scores[row]):
                    continue  # fewer than n hypotheses exist
                ids = reading_order(hyps.tokens[row], len(hyps.tokens[row]), backwards)
                alpha = (
                    None
                    if maps is None
                    else reading_order_array(
                        maps[row, : len(ids) + 1, : len(sources[i]) + 1].float().cpu().numpy(), len(ids), backwards
                    )
                )
                tokens = tgt_side.vocab.decode(ids)
                if options.replace_unk and alpha is not None:
                    tokens = replace_unk(tokens, ids, sources[i], alpha, options.unk_dict, kinds)
                text = _LINE_BREAKS.sub(" ", tgt_side.text.decode(tokens, detokenize=not options.tokenized))
                each = None if hyps.token_scores is None else reading_order(hyps.token_scores[row], len(ids), backwards)
                t = Translation(
                    text,
                    tokens,
                    sources[i],
                    hyps.scores[row],
                    hyps.ranking[row],
                    alpha if options.attention else None,
                    token_scores=each,
                    unheld=i in unheld,
                    sentencepiece=kinds,
                )
                if row % n == 0:
                    out[i] = t
                if n > 1:  # the first a copy: a list holding its own owner defeats dataclasses.asdict
                    out[i].nbest.append(t if row % n else replace(t, nbest=[]))
            done(len(idx))
        return out

    def _search(
        self,
        src: torch.Tensor,
        options: TranslateOptions,
        attention: bool,
        prefix: torch.Tensor | None,
        must: Phrases | None,
        keys: torch.Tensor,
    ) -> tuple[Hypotheses, torch.Tensor | None]:
        """The outputs of one batch of sources (B, S) and, when ``attention`` is asked, their
        attention maps: the search's own, or each output walked through the models again."""
        with torch.inference_mode(), self.runtime.autocast():
            enc = self.model.encode(src, src != PAD)
            vocab = self.lexicon.candidates(src) if options.shortlist and self.lexicon is not None else None
            if vocab is not None and not bool((vocab >= len(SPECIALS)).any()):  # no word: -inf outputs, empty
                vocab = None  # (a lexicon of --frequent 0 and unknown words alone): the whole vocabulary
            if vocab is not None:  # a forced or required word must be scored
                given = [t.flatten() for t in (prefix, None if must is None else must.ids) if t is not None]
                vocab = torch.unique(torch.cat([vocab, *given]))
            own = attention and aligns_as_it_searches(self.model)  # else walked again, by force
            if options.search.sampling:
                hyps = sample(self.model, enc, options.search, vocab, prefix, keys, options.token_scores)
            else:
                # first without the phrases: an output that holds them unasked is kept (a search
                # sharing its beam among the phrases' counts found worse ones for such sentences)
                first = None if options.search.plain_first else must
                hyps = beam_search(self.model, enc, options.search, vocab, own, prefix, options.token_scores, first)
                if must is not None:
                    hyps = self._with_phrases(hyps, enc, must, options, vocab, own, prefix)
            maps = hyps.attention if own else None
            if attention and maps is None:
                maps = self._align(enc.repeat(hyps.nbest), hyps.tokens)
        return hyps, maps

    def _with_phrases(
        self,
        hyps: Hypotheses,
        enc: EncoderOut,
        must: Phrases,
        options: TranslateOptions,
        vocab: torch.Tensor | None,
        own: bool,
        prefix: torch.Tensor | None,
    ) -> Hypotheses:
        """``hyps``, the batch's outputs searched without their phrases (``plain_first``), with those
        of the sentences whose outputs do not hold them searched again with them; or searched with
        them, those that no hypothesis could complete within the output limit searched again
        without. Either way such a sentence gets its plain output, marked ``unheld`` (the caller warns)."""
        plain = options.search.plain_first
        again = unheld(hyps, must) if plain else unplaced(hyps, must)
        if not again:
            return hyps
        rows = torch.tensor(again, device=self.device)
        forced, sub = None if prefix is None else prefix[rows], replace(must, ids=must.ids[rows]) if plain else None
        got = beam_search(self.model, enc.select(rows), options.search, vocab, own, forced, options.token_scores, sub)
        lost = set(unplaced(got, sub) if sub is not None else range(len(again)))  # warned of by the caller
        out = splice(hyps, got, [None if plain and q in lost else i for q, i in enumerate(again)])
        return replace(out, unheld=[again[q] for q in sorted(lost)])

    def _refuse_unmet(self, options: TranslateOptions) -> None:
        """Refuse, in a line, what these models cannot do, from the command line or a caller's config."""
        if not isinstance(options, TranslateOptions):  # a SearchConfig goes inside one
            raise TypeError(f"options is a {type(options).__name__}: give a TranslateOptions(search=SearchConfig(…))")
        options.check()
        units = len(self.sides.tgt.vocab)
        if not options.search.sampling and options.search.beam > units:
            raise UserError(f"--beam {options.search.beam}: the model's target side has {units:,} units, no more")
        if options.replace_unk and not self.attends:
            raise UserError("--replace-unk puts the most attended source word in place: this model has no attention")
        if options.shortlist and self.lexicon is None:
            raise UserError(
                "--shortlist: the checkpoint (or one of the ensemble's) holds no lexicon (it was trained by an "
                "older nmtkit); add one with 'nmtkit lexicon'"
            )

    def _align(self, enc: EncoderOut, outputs: list[list[int]]) -> torch.Tensor:
        """Each output's alignment (rows, Ty, Tx), by walking it through the models again: how a
        model's attention aligns words depends on the model (``search.force``)."""
        return alignment(self.model, enc, pad([np.asarray(ids, dtype=np.int64) for ids in outputs]).to(self.device))

    def force(
        self,
        sources: list[str],
        targets: list[str],
        tokenized: bool = False,
        batch_size: int = 32,
        scored: bool = True,
        aligned: bool = True,
        crop: tuple[int, int] = (0, 1),
    ) -> list[Forced]:
        """Score given translations (and get their attention) with the search's own decoder step,
        ``batch_size`` sentences a batch on a CPU, :data:`GPU_MAX_TOKENS` tokens on a GPU (of the
        longer side of each pair, padding counted). ``tokenized``: both ``sources`` and ``targets``
        are Moses tokens (BPE still applied), as ``TranslateOptions.tokenized`` reads input lines.
        Each token's score comes with the sentence's. Not ``scored``: their alignments alone
        (:func:`~.search.alignment`), each score NaN and no token's; not ``aligned``: the scores
        alone, each attention empty (0 × 0), as a model without attention (rnnencdec) must be
        asked. ``crop``: the units each side keeps (0: all), and the first pair's line number,
        for the warning of a line cropped."""
        if isinstance(sources, str) or isinstance(targets, str):
            raise TypeError("Translator.force takes lists of lines, not one str: use [line]")
        if len(sources) != len(targets):
            raise UserError(f"{len(sources):,} sources but {len(targets):,} translations: one a source")
        if not (scored or aligned):
            raise ValueError("Translator.force: scored=False, aligned=False asks for nothing")
        if aligned and not self.attends:  # its maps were zeros, which word_alignment linked to word 0
            raise UserError("Translator.force aligns by the attention, which this model has none of: aligned=False")
        limit, first = crop
        refuse_non_text(sources, first, "source")
        refuse_non_text(targets, first, "translation")
        src_tok, tgt_tok = (
            [cropped_tokens(side, line, tokenized, limit, first + k, "scoring") for k, line in enumerate(lines)]
            for side, lines in ((self.sides.src, sources), (self.sides.tgt, targets))
        )
        out: list[Forced | None] = [None] * len(sources)
        backwards = self.model.cfg.right_to_left  # the model reads each target last unit first
        # a batch walks its longest target, and holds its longest source's attention
        lengths = [max(len(s), len(t), 1) for s, t in zip(src_tok, tgt_tok)]
        for idx in self._batches(lengths, batch_size, None):  # a GPU's: by tokens, as translate's
            src = pad([np.asarray(self.sides.src.ids(src_tok[i]), dtype=np.int64) for i in idx]).to(self.device)
            tgt = pad(
                [model_order(np.asarray(self.sides.tgt.ids(tgt_tok[i]), dtype=np.int64), backwards) for i in idx]
            ).to(self.device)
            with torch.inference_mode(), self.runtime.autocast():
                enc = self.model.encode(src, src != PAD)
                words = None
                if not aligned:
                    (scores, words), maps = log_probs(self.model, enc, tgt), None
                elif scored:
                    scores, words, maps = force(self.model, enc, tgt)
                else:
                    scores, maps = torch.full((len(idx),), math.nan), alignment(self.model, enc, tgt)
            values = scores.float().tolist()
            each = None if words is None else words.float().tolist()
            for row, i in enumerate(idx):
                units = len(tgt_tok[i])
                alpha = (
                    np.zeros((0, 0), dtype=np.float32)
                    if maps is None
                    else reading_order_array(
                        maps[row, : units + 1, : len(src_tok[i]) + 1].float().cpu().numpy(), units, backwards
                    )
                )
                tokens = None if each is None else reading_order(each[row][: units + 1], units, backwards)
                out[i] = Forced(src_tok[i], tgt_tok[i], values[row], alpha, tokens, self.unit_kinds)
        return [f for f in out if f is not None]


def _empty(source_tokens: list[str], nbest: int, token_scores: bool, kinds: UnitKinds) -> Translation:
    """An empty line's translation: empty (not searched: no </s> scored), and where n-best lists
    are asked for, the one in its list."""
    each: list[float] | None = [] if token_scores else None
    t = Translation("", [], source_tokens, 0.0, 0.0, token_scores=each, sentencepiece=kinds)
    if nbest > 1:
        t.nbest.append(replace(t, nbest=[]))
    return t
