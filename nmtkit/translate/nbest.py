"""Moses n-best lists, ``i ||| text ||| features ||| score``: the lines ``translate --nbest`` writes,
``rescore --nbest-list`` adds a feature to and ``rerank`` chooses from.

The features are Moses': ``NAME= value`` pairs, a name ending in ``=`` followed by one value or
more (``LM0= -12.5 TM0= -1 -2``); translate writes its models' log-probability as ``F0``, as
Marian's decoder does. The fields are parted by ``|||``: a text's ``|||`` is written ``&#124;&#124;&#124;``, as
Moses escapes a pipe, and read back as it was.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.files import display_name, read_lines
from ..core.wording import counted

NBEST_FORM = "'i ||| text ||| features ||| score'"
SEARCH_FEATURE = "F0"  # the name of translate's log-probability
_FIELDS = re.compile(r" ?\|\|\| ?")  # what parts an n-best line's fields, an empty field too


_PIPES, _ESCAPED = re.compile(r"\|{3,}"), re.compile(r"(?:&#124;){3,}")

WORDS = "words"  # rerank's name of the output's word count, which no list may give a feature


def escaped(text: str) -> str:
    """A text's runs of three pipes or more as Moses escapes a pipe (``&#124;``): a copied source
    token ``|||`` (--replace-unk) parted the line's fields where no field ends."""
    return _PIPES.sub(lambda run: "&#124;" * len(run[0]), text)


def unescaped(text: str) -> str:
    return _ESCAPED.sub(lambda run: "|" * (len(run[0]) // len("&#124;")), text)


def nbest_line(index: int, text: str, score: float, ranking: float) -> str:
    """The line ``translate --nbest`` writes of a hypothesis: its log-probability as the feature
    ``F0``, the length penalty's ranking as the total."""
    return f"{index} ||| {escaped(text)} ||| {SEARCH_FEATURE}= {score:.4f} ||| {ranking:.4f}"


def features_of(text: str) -> dict[str, list[float]]:
    """Moses features, ``NAME= v [v …] NAME2= v …``, by name, in their order; ValueError with
    what is wrong where they are not (a value with no name before it, a name without a value or
    given twice, a value that is no number)."""
    found: dict[str, list[float]] = {}
    name = ""
    for token in text.split():
        if token.endswith("="):
            name = token[:-1]
            if not name or name in found:
                raise ValueError(f"the feature name '{token}' is {'empty' if not name else 'given twice'}")
            found[name] = []
            continue
        if "=" in token:
            name_, _, value_ = token.partition("=")
            raise ValueError(f"'{token}': a space after the '=', as Moses writes features ('{name_}= {value_}')")
        if not name:
            raise ValueError(f"the value '{token}' has no feature name before it ('NAME= {token}')")
        try:
            value = float(token)
        except ValueError:
            value = math.nan
        if "_" in token or not math.isfinite(value):  # float() reads "1_0", "nan" and "inf" too
            raise ValueError(f"'{token}' is not a finite number (the feature {name}=)")
        found[name].append(value)
    if empty := [n for n, values in found.items() if not values]:
        raise ValueError(f"the feature {empty[0]}= has no value")
    return found


@dataclass(frozen=True)
class NbestLine:
    """A Moses n-best line: its source line's number (from 0), its text, its features, and the
    fields after them (the total score, and whatever a tool added), kept as they were; ``values``:
    the features read (:func:`features_of`)."""

    index: int
    text: str
    features: str
    rest: tuple[str, ...]
    values: dict[str, list[float]]

    def with_feature(self, name: str, score: float) -> str:
        features = f"{self.features} {name}= {score:.4f}".strip()
        return " ||| ".join((str(self.index), escaped(self.text), features, *self.rest))


def read_nbest(path: str, sentences: int | None = None, source: str = "", feature: str = "") -> Iterator[NbestLine]:
    """The lines of a Moses n-best list, as they are read, each of one of ``source``'s
    ``sentences`` lines (None: any line number), its features as :func:`features_of` reads them;
    one that has the ``feature`` to be added already is refused."""
    where = display_name(path)
    layout: list[tuple[str, int]] | None = None  # the first line's features, every line's (rerank weighs them)
    for lineno, line in enumerate(read_lines(path), 1):
        fields = _FIELDS.split(line)
        if len(fields) < 3:
            raise UserError(f"{where}: line {lineno} is no Moses n-best line {NBEST_FORM}")
        number = fields[0].strip()
        if not (number.isascii() and number.isdecimal()):
            raise UserError(f"{where}: line {lineno} starts with '{number}', not a line number from 0")
        index = int(number)
        if sentences is not None and index >= sentences:
            raise UserError(
                f"{where}: line {lineno} is of source line {index} (from 0), "
                f"but {display_name(source)} has {counted(sentences, 'line')}"
            )
        found = _check_features(fields[2], f"{where}: line {lineno}")
        if WORDS in found:
            raise UserError(f"{where}: line {lineno} has a feature {WORDS}=, the name rerank gives the word count")
        shape = [(name, len(values)) for name, values in found.items()]
        layout = shape if layout is None else layout
        if shape != layout:
            raise UserError(
                f"{where}: line {lineno} has the features {said_features(shape)}, line 1 {said_features(layout)}: "
                f"every hypothesis needs the same, in the same order"
            )
        if feature and f"{feature}=" in fields[2].split():
            raise UserError(
                f"{where}: line {lineno} has a feature {feature}= already: give --nbest-feature another name"
            )
        rest = tuple(f.strip() for f in fields[3:])
        if rest and not rest[0]:
            raise UserError(f"{where}: line {lineno} has a fourth field with no total score in it {NBEST_FORM}")
        if rest and not _is_number(rest[0]):
            raise UserError(f"{where}: line {lineno}'s fourth field '{rest[0]}' is no total score {NBEST_FORM}")
        yield NbestLine(index, unescaped(fields[1].strip()), fields[2].strip(), rest, found)


def _is_number(text: str) -> bool:
    """Whether a total score reads as one: float() takes "1_0" and "nan" too, which no writer of
    n-best lists writes; "-inf" is a hypothesis' score where every other was refused."""
    try:
        return "_" not in text and not math.isnan(float(text))
    except ValueError:
        return False


def said_features(layout: list[tuple[str, int]]) -> str:
    """The features' names, with the number of values of a feature of several."""
    return ", ".join(f"{name}=" + (f" ({k} values)" if k > 1 else "") for name, k in layout) or "none"


def _check_features(text: str, where: str) -> dict[str, list[float]]:
    """Refuse features that rerank could not read, where they are read first: rescore would
    otherwise pass them on, a model's scoring later."""
    head = text.split()[:1]
    if head and "=" not in head[0]:  # 'F0=-1' has its name: features_of says what is wrong with it
        raise UserError(
            f"{where}: the value '{head[0]}' has no feature name before it (an older nmtkit's translate --nbest "
            f"wrote its log p so: put '{SEARCH_FEATURE}= ' before it)"
        )
    try:
        return features_of(text)
    except ValueError as err:
        raise UserError(f"{where}: {err}") from None
