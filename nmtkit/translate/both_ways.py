"""The links of a translation with a model of each direction: the models that translated it give
its table (their attention, or alignment head, over words), the models of the other direction are
forced from the translation back to its source for theirs, and the two are combined as
``nmtkit align -m en-fr.pt -m fr-en.pt`` combines them (:mod:`nmtkit.align.combine`).
``translate --print-alignment`` (and ``--output-format jsonl``) and ``serve`` use it when given
models of both directions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from .. import checkpoint
from ..align.combine import combined_links
from ..align.files import EOS_LABEL
from ..align.links import pharaoh
from ..align.settings import LinkConfig
from ..align.words import WordAttention, word_attention
from ..core.errors import UserError
from ..core.settings import RuntimeConfig, declared, flag_of
from .translation import Forced, Translation
from .translator import Translator, ways_apart


def directions(model_paths: Sequence[str]) -> tuple[list[str | Path], list[str | Path]]:
    """The checkpoints of the first one's direction, and those of the opposite direction (none
    when all translate one way); a checkpoint of a third direction is a one-line UserError."""
    langs = [checkpoint.load(path).text.langs for path in model_paths]
    way = (langs[0]["src"], langs[0]["tgt"])
    forward: list[str | Path] = [p for p, lang in zip(model_paths, langs) if (lang["src"], lang["tgt"]) == way]
    backward: list[str | Path] = [p for p, lang in zip(model_paths, langs) if (lang["src"], lang["tgt"]) == way[::-1]]
    for path, lang in zip(model_paths, langs):
        if path not in forward + backward:
            raise UserError(
                f"{ways_apart(path, lang, model_paths[0], langs[0])}: "
                "give the models of one direction, or of both directions of one language pair"
            )
    return forward, backward


def read_as_named(
    forward: list[str | Path], backward: list[str | Path], source: str | Path, target: str | Path
) -> tuple[list[str | Path], list[str | Path]]:
    """:func:`directions`' two sides, swapped where ``source`` is named (PREFIX.LANG) in the
    backward models' source language, or, not named in either language (stdin, ``hyp.txt``),
    where ``target`` is named in their target's: a pair of models given in either order reads the
    files as their names say. Files named in neither language keep the first model's way."""
    if backward:
        langs = checkpoint.load(backward[0]).text.langs
        named = Path(source).suffix.lstrip(".")
        if named not in langs.values():
            named = {langs["tgt"]: langs["src"], langs["src"]: langs["tgt"]}.get(Path(target).suffix.lstrip("."), "")
        if named == langs["src"]:
            return backward, forward
    return forward, backward


def refuse_idle_links(backward: Sequence[str | Path], links: LinkConfig, typed: Collection[str] = ()) -> None:
    """Refuse, in one line, the settings of combined links where no model goes the other way:
    they would change nothing. ``typed``: those a command line typed, refused at their default too."""
    if backward:
        return
    default = LinkConfig()
    given = [
        flag_of(f.name, declared(LinkConfig, f.name)[1])
        for f in fields(LinkConfig)
        if getattr(links, f.name) != getattr(default, f.name) or f.name in typed
    ]
    if given:
        raise UserError(
            f"{', '.join(given)}: {'they combine' if len(given) > 1 else 'it combines'} the links of a model each "
            f"way: give one of each (-m en-fr.pt -m fr-en.pt), or leave {'them' if len(given) > 1 else 'it'} out"
        )


def warn_named_otherwise(path: str | Path, side: str, model: str | Path, hint: str = "") -> None:
    """:func:`~nmtkit.data.sides.warn_named_otherwise` of ``model``'s languages."""
    from ..data.sides import warn_named_otherwise as warn

    warn(path, side, checkpoint.load(model).text.langs, model, "model", hint)


def turned(forced: Forced) -> tuple[str, str]:
    """The pair the backward models force along ``forced``: its target words as their source, its
    source words as their target, as Moses tokens (``tokenized=True``). The forward models' words,
    not the raw text again: a backward model that tokenizes otherwise (``--aggressive-dash``,
    another cleaning) would make a table of other words, which no combination can lay over."""
    words = _words(forced)
    return " ".join(words.target[:-1]), " ".join(words.source[:-1])


def word_table(forced: Forced) -> np.ndarray:
    """A forced decoding's probabilities over words: a row per target word, a column per source
    word, then the source's </s>, which a word with no counterpart attends to (its NULL)."""
    return _words(forced).attention[:-1]


def _words(forced: Forced) -> WordAttention:
    source, target = [*forced.source_tokens, EOS_LABEL], [*forced.target_tokens, EOS_LABEL]
    return word_attention(source, target, forced.attention, forced.sentencepiece)


LINK_PART = 64  # translations forced back in one batch: a part of a block, between which serve may stop


class BothWays:
    """Pharaoh links of the forward models' translations, the ``backward`` models forced back."""

    def __init__(self, backward: Translator, links: LinkConfig):
        self.backward, self.links_cfg = backward, links

    @classmethod
    def load(cls, paths: list[str | Path], links: LinkConfig, runtime: RuntimeConfig | None) -> BothWays | None:
        """The linker of the backward models ``paths``; None where there are none."""
        if not paths:
            return None
        backward = Translator.from_checkpoints(paths, runtime)
        backward.require_attention("linking both ways", paths[0])  # its table is half of each link
        return cls(backward, links)

    def linked(self, t: Translation) -> Translation:
        """``t`` and its n-best list with their links (:attr:`Translation.links`)."""
        return self.linked_block([t])[0]

    def linked_block(
        self, ts: Sequence[Translation], done: Callable[[int], object] | None = None, size: int = LINK_PART
    ) -> list[Translation]:
        """``ts`` linked as :meth:`linked` links each, the backward models forced along ``size``
        translations at a time (one sentence a batch took most of a batch's time in serve); ``done``
        told the translations of each part once linked, so that a caller may stop between parts."""
        out: list[Translation] = []
        for start in range(0, len(ts), size):
            part = ts[start : start + size]
            # each translation, and those of its n-best list that are not it (the best, linked once)
            hyps = [h for t in part for h in (t, *(h for h in t.nbest if h.tokens != t.tokens))]
            found = iter(self._links(hyps))
            for t in part:
                links = next(found)
                nbest = [replace(h, links=links if h.tokens == t.tokens else next(found)) for h in t.nbest]
                out.append(replace(t, links=links, nbest=nbest))
            if done is not None:
                done(len(part))
        return out

    def _links(self, hyps: list[Translation]) -> list[str]:
        """Pharaoh links of each of ``hyps``: its table and the backward models' forced along it,
        combined ("" for one without attention or words)."""
        kept, ahead = [], []
        for h in hyps:
            if h.attention is not None and h.tokens:
                kept.append(h)
                ahead.append(Forced(h.source_tokens, h.tokens, h.score, h.attention, sentencepiece=h.sentencepiece))
        turns = [turned(a) for a in ahead]  # each translation's words back to its source's, as the search read them
        back = self.backward.force([s for s, _ in turns], [t for _, t in turns], tokenized=True, scored=False)
        made = {
            id(h): pharaoh(combined_links(word_table(a), word_table(b), self.links_cfg))
            for h, a, b in zip(kept, ahead, back)
        }
        return [made.get(id(h), "") for h in hyps]
