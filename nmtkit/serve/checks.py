"""What a request asks, checked before it joins a batch: its sentences' and its phrases' sizes
(413), what the model cannot do (422), and what it can do only in part (the answer's warnings).
A refusal here fails one request; the same one inside a batch would fail the batch's others."""

from __future__ import annotations

from dataclasses import replace

from fastapi import HTTPException

from ..data.vocab import UNK
from ..translate.glossary import Glossary, Overlaid, Terms, with_terms
from ..translate.settings import SearchConfig
from ..translate.translator import Translator
from .batching import Beside
from .settings import Limits

# Characters a sentence may have per subword unit of the limit, checked before tokenizing it.
CHARS_PER_UNIT = 16


def check_size(translator: Translator, sentences: list[str], limits: Limits) -> None:
    """:class:`HTTPException` (413) for more sentences than the limit, or the first one the
    model would read as more than ``limits.max_length`` units."""
    if len(sentences) > limits.max_sentences:
        raise HTTPException(413, f"{len(sentences)} sentences; at most {limits.max_sentences} a request")
    chars = CHARS_PER_UNIT * limits.max_length
    for k, s in enumerate(sentences):
        # a unit has a character or more: this bounds the tokenizer's work before it is asked
        if len(s) > chars:
            raise HTTPException(413, f"sentence {k} has {len(s):,} characters; at most {chars:,}")
        n = translator.source_length(s)
        if n > limits.max_length:
            raise HTTPException(413, f"sentence {k} has {n:,} subword units; at most {limits.max_length:,}")


def check_beside(
    translator: Translator, beside: Beside, limits: Limits, no_unk: bool = False
) -> tuple[Beside, list[str]]:
    """``beside`` with the prefixes that force nothing (no target unit) given as none, and the
    warnings of its answer: a phrase or a prefix with a unit out of the target vocabulary (the
    phrase is left out; the prefix forces <unk>, or under ``no_unk`` stops before it). Or
    :class:`HTTPException` (413) for a sentence's phrases, or its prefix, of more target units in
    all than a sentence may have source units (every one is a step of its search), checked
    first by characters (16 a unit) so that the tokenizer's work is bounded too."""
    chars_at_most = CHARS_PER_UNIT * limits.max_length
    prefixes = None if beside.prefixes is None else [[p] for p in beside.prefixes]
    warnings: list[str] = []
    forced = 0  # a prefix's units, in all
    for what, texts in (("phrases", beside.constraints), ("a prefix", prefixes)):
        for k, each in enumerate(texts or []):
            if what == "phrases" and len(each) > limits.max_phrases:
                raise HTTPException(413, _too_many(k, len(each), "phrases", limits))
            chars = sum(map(len, each))
            if chars > chars_at_most:
                raise HTTPException(413, f"sentence {k} has {what} of {chars:,} characters; at most {chars_at_most:,}")
            tgt = translator.sides.tgt
            units = [tgt.tokens(p) for p in each]
            n = sum(map(len, units))
            if n > limits.max_length:
                raise HTTPException(
                    413, f"sentence {k} has {what} of {n:,} subword units; at most {limits.max_length:,}"
                )
            forced += n if what == "a prefix" else 0
            for text, ids in zip(each, map(tgt.ids, units)):
                if UNK in ids:
                    warnings.append(f"sentence {k}: {_unknown(what, text, no_unk)}")
    if not forced:
        return replace(beside, prefixes=None), warnings
    if translator.model.cfg.right_to_left:  # refused here: in a batch, it would fail the others' sentences too
        raise HTTPException(422, "prefixes: the model writes right to left, from a translation's last word")
    return beside, warnings


def _too_many(k: int, n: int, what: str, limits: Limits) -> str:
    return f"sentence {k} has {n:,} {what} to hold; at most {limits.max_phrases:,}"


def _unknown(what: str, text: str, no_unk: bool) -> str:
    if what == "phrases":
        return f"the phrase {text!r} has a unit out of the vocabulary: left out"
    if no_unk:
        return "the prefix has a word out of the vocabulary, which no_unk bans: only what comes before it is forced"
    return "the prefix has a word out of the vocabulary: the translation holds <unk> there"


def with_glossary(
    translator: Translator,
    sentences: list[str],
    beside: Beside,
    terms: Terms | None,
    server: Glossary | None,
    search: SearchConfig,
    limits: Limits,
) -> tuple[Beside, list[str]]:
    """``beside`` with the translations of the glossary terms each sentence holds among its
    constraints, the request's ``terms`` over the ``server``'s glossary (:class:`Overlaid`); and
    the warnings of the request's terms left out. Or :class:`HTTPException`: 413 for a term of
    more characters than a sentence may have or a sentence whose phrases come to more units than
    it may have, 422 beside ordered constraints."""
    own, warnings = None, []
    if terms:
        chars_at_most = CHARS_PER_UNIT * limits.max_length
        for source, target in terms:
            if (chars := max(len(source), len(target))) > chars_at_most:
                raise HTTPException(413, f"glossary: {source!r} has {chars:,} characters; at most {chars_at_most:,}")
        own = Glossary(terms, translator.sides, quiet=True)
        warnings = list(own.left_out)
    glossary = own if server is None else server if own is None else Overlaid(own, server)
    if glossary is None:
        return beside, warnings
    if search.ordered_constraints:
        raise HTTPException(422, "glossary terms have no order in the output: ordered_constraints cannot be asked")
    src, tgt = translator.sides.src, translator.sides.tgt
    constraints = with_terms(beside.constraints, [src.tokens(s) for s in sentences], glossary)
    for k, phrases in enumerate(constraints):  # the terms held count as the phrases given do
        if len(phrases) > limits.max_phrases:
            raise HTTPException(413, _too_many(k, len(phrases), "phrases and terms", limits))
        if (n := sum(len(tgt.tokens(p)) for p in phrases)) > limits.max_length:
            raise HTTPException(
                413, f"sentence {k} has phrases and terms of {n:,} subword units; at most {limits.max_length:,}"
            )
    return replace(beside, constraints=constraints), warnings
