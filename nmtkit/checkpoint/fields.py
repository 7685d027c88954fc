"""The checks of a loaded checkpoint's plain fields: each the value it must be, or one
:class:`~nmtkit.core.errors.FormatError` line saying what it is not."""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from ..core.errors import FormatError
from ..data.lexicon import Lexicon
from ..models.config import ModelConfig


def named_tensors(table: object) -> bool:
    return (
        isinstance(table, dict)
        and bool(table)
        and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in table.items())
    )


def lexicon(value: Any, model: ModelConfig) -> Lexicon | None:
    if value is None:
        return None
    table, frequent = value["table"], value["frequent"]
    if not (
        isinstance(table, torch.Tensor)
        and table.dim() == 2
        and table.shape[0] == model.src_vocab
        and not table.is_floating_point()
        and isinstance(frequent, int)
        and 0 <= frequent <= model.tgt_vocab
    ):
        raise FormatError("the lexicon is not a table of target ids per source word")
    if table.numel() and not 0 <= int(table.min()) <= int(table.max()) < model.tgt_vocab:
        raise FormatError("the lexicon names target ids outside the vocabulary")
    return Lexicon(frequent, table)


def averaged(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(
        isinstance(v, dict) and isinstance(v.get("name"), str) and type(v.get("step")) is int for v in value
    ):
        raise FormatError("the averaged checkpoints are not a list of names and updates")
    return value


def tokens(value: Any) -> list[str]:
    """A vocabulary's tokens, none twice: checked as the file is read, where its name is known, not
    first where a command builds the vocabulary."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise FormatError("a vocabulary is not a list of tokens")
    if len(set(value)) != len(value):
        twice = next(t for t, n in Counter(value).items() if n > 1)
        raise FormatError(f"a vocabulary lists a token twice ({twice!r})")
    return value


def window(found: Any) -> dict[str, Any] | None:
    """A saved window of losses (:meth:`~nmtkit.train.window.LossWindow.carry`), checked for its
    fields' types; None where there is none."""
    if found is None:
        return None
    numbers = (int, float)
    kinds: dict[str, type | tuple[type, ...]] = {"first": int, "tokens": int, "sents": int, "all_tokens": int}
    kinds |= {"seconds": numbers, "losses": list}
    if not (
        isinstance(found, dict)
        and all(isinstance(found.get(k), t) for k, t in kinds.items())
        and all(isinstance(v, numbers) for v in found["losses"])
        and isinstance(found.get("aligned"), list)
        and all(
            isinstance(a, list) and len(a) == 2 and all(isinstance(v, numbers) for v in a) for a in found["aligned"]
        )
    ):
        raise FormatError("the training state's window of losses is not one")
    return dict(found)


def names(value: Any, what: str) -> tuple[str, ...]:
    """A list of texts (the model's outside classes)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FormatError(f"the {what} are not a list of names")
    return tuple(value)


def optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise FormatError(f"expected text, found {type(value).__name__}")
    return value


def like(found: Any, default: Any, what: str) -> dict[str, Any]:
    """A saved record of plain values, each of the type of its field in the dataclass instance
    ``default`` (a whole number where a float goes); the names are left to the dataclass to check.
    A string where a number goes failed far later, in the middle of the run that resumed it."""
    if not isinstance(found, dict):
        raise FormatError(f"the {what} is not a record")
    for name, value in found.items():
        want = getattr(default, name, None)
        if isinstance(want, bool):
            right, kind = isinstance(value, bool), "true or false"
        elif isinstance(want, int):
            right, kind = isinstance(value, int) and not isinstance(value, bool), "a whole number"
        elif isinstance(want, float):
            right, kind = isinstance(value, int | float) and not isinstance(value, bool), "a number"
        else:
            continue
        if not right:
            raise FormatError(f"its {what}'s {name} is {value!r}, not {kind}")
    return found


def rng_states(found: Any) -> list[dict[str, torch.Tensor]]:
    """Each process's RNG states: a list of records whose ``torch`` (and ``cuda``, where there is
    one) is a byte tensor, as torch.get_rng_state gives it."""
    states = [] if found is None else found
    if not isinstance(states, list) or not all(
        isinstance(r, dict)
        and all(isinstance(r.get(k), torch.Tensor) and r[k].dtype == torch.uint8 for k in ("torch", "cuda") if k in r)
        and "torch" in r
        for r in states
    ):
        raise FormatError("the RNG states are not tensors")
    return states
