"""The base of every typed settings class, and the one declaration of each setting.

A setting is a dataclass field made by :func:`setting`: its default, bounds, choices, help text
and former spelling live there and nowhere else. The command line's options
(:mod:`nmtkit.cli.options`), serve's request model and its OpenAPI page
(:mod:`nmtkit.serve.schema`), ``--config``/``--dump-config`` and the CLI reference are derived
from these declarations, as fairseq derives its parser from its dataclasses' metadata.
:class:`Settings` checks a declared field's bounds and choices whenever a config is made, so a
config built in Python is held to the same limits as one built from flags.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Iterator
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from typing import Any

from .errors import FormatError, UserError


@dataclass(frozen=True)
class Declared:
    """What a setting declares beside its default (see :func:`setting`)."""

    help: str
    choices: tuple[str, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    flag: str | None = None
    old: str | None = None
    default_help: str | None = None

    def refusal(self, value: Any) -> str | None:
        """Why ``value`` is outside this setting's choices or bounds, or None when it is inside."""
        if value is None or isinstance(value, bool):
            return None
        if self.choices is not None:
            return None if value in self.choices else f"'{value}' is not one of {', '.join(self.choices)}"
        if not isinstance(value, (int, float)):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return f"{value} is not a finite number"
        for bound, inside, says in (
            (self.ge, value >= (self.ge or 0), ">="),
            (self.gt, value > (self.gt or 0), ">"),
            (self.le, value <= (self.le or 0), "<="),
            (self.lt, value < (self.lt or 0), "<"),
        ):
            if bound is not None and not inside:
                return f"{value:g} is not {says} {bound:g}"
        return None


def setting(
    default: Any,
    help: str,
    *,
    choices: tuple[str, ...] | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    flag: str | None = None,
    old: str | None = None,
    default_help: str | None = None,
) -> Any:
    """A settings field with everything a user sees of it: its ``default``, ``help`` text,
    ``choices`` or numeric bounds (``ge``, ``gt``, ``le``, ``lt``), the command line's spelling
    when not the field's name (``flag``, e.g. ``--max-output-ratio`` for ``max_ratio``), a former
    spelling still read with a warning (``old``), and what --help says of a default that another
    setting decides (``default_help``, for a None default)."""
    declared_ = Declared(help, choices, ge, gt, le, lt, flag, old, default_help)
    return field(default=default, metadata={"nmtkit": declared_})


def declared(cls: type, name: str) -> tuple[Field[Any], Declared]:
    """The field ``name`` of the settings class ``cls`` and its declaration."""
    for f in fields(cls):
        if f.name == name:
            if "nmtkit" not in f.metadata:
                raise KeyError(f"{cls.__name__}.{name} is not declared with setting()")
            return f, f.metadata["nmtkit"]
    raise KeyError(f"{cls.__name__} has no field {name}")


def flag_of(name: str, d: Declared) -> str:
    """The command line's spelling of the setting ``name``: ``--max-output-ratio`` for ``max_ratio``,
    ``--tf32/--no-tf32`` where the declaration gives a pair."""
    return d.flag or "--" + name.replace("_", "-")


def declared_names(cls: type) -> list[str]:
    """The fields of ``cls`` made by :func:`setting`, in their order."""
    return [f.name for f in fields(cls) if "nmtkit" in f.metadata]


def default_of(f: Field[Any]) -> Any:
    """A field's default value (its factory's product for a mutable default)."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise ValueError(f"{f.name} has no default")


def check_declared(config: Any) -> None:
    """Refuse, in one line, a value of ``config`` of another kind than its field's (``beam=2.5``,
    ``lr="1e-3"``: a config built in Python, or a config file) or outside its declared choices or
    bounds."""
    for f in fields(config):
        declared_ = f.metadata.get("nmtkit")
        value = getattr(config, f.name)
        why = _mistyped(f, value) or (declared_.refusal(value) if declared_ else None)
        if why:
            raise UserError(f"{flag_of(f.name, declared_) if declared_ else f.name}: {why}")


def check_choices(config: Any) -> None:
    """Refuse, as a format error, a stored value outside its declared choices, in ``config`` or its
    sub-configs: it names a model this nmtkit does not have (a newer one's, or a file edited), which
    would otherwise fail later with a traceback, or run as another."""
    for f in fields(config):
        declared_ = f.metadata.get("nmtkit")
        value = getattr(config, f.name)
        if isinstance(value, Settings):
            check_choices(value)
        elif declared_ and declared_.choices is not None and value is not None and value not in declared_.choices:
            spelling = declared_.flag or "--" + f.name.replace("_", "-")
            raise FormatError(
                f"{spelling} {value!r} is not one this nmtkit knows ({', '.join(declared_.choices)}): "
                "a newer nmtkit's model, or an edited file"
            )


# Off while a stored config is read back (from_dict): a file keeps the values it was written
# with, also those an older nmtkit let through (1.1 took --max-minutes inf), so that a checkpoint
# that translated still translates. A model's choices are checked all the same (check_choices).
_CHECKING = contextvars.ContextVar("checking", default=True)


def checking() -> bool:
    """Whether configs made now are checked against their bounds (not read back from a file)."""
    return _CHECKING.get()


class Settings:
    """to_dict/from_dict for the frozen dataclasses below; unknown keys are a format error. A
    declared field's value is checked against its bounds and choices when the config is made,
    except when it is read back from a file (:meth:`from_dict`)."""

    def __post_init__(self) -> None:
        if _CHECKING.get():
            _as_plain_numbers(self)
            check_declared(self)

    def to_dict(self) -> dict[str, Any]:
        fields_: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return fields_

    @classmethod
    def from_dict(cls, d: dict[str, Any]):  # type: ignore[no-untyped-def]
        with as_written():
            kw = known_fields(cls, d, f"{cls.__name__} field")
            for f in fields(cls):  # type: ignore[arg-type]
                sub = sub_config(f)
                if sub is not None and isinstance(kw.get(f.name), dict):
                    kw[f.name] = sub.from_dict(kw[f.name])
                elif f.name in kw and (why := _mistyped(f, kw[f.name])):
                    raise FormatError(f"its {f.name} is {why}: an edited or damaged file")
            return cls(**kw)


_KINDS = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}
_KIND_NAMES = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "a str"}


def _mistyped(f: Field[Any], value: Any) -> str | None:
    """Why a stored value is not of its field's kind (a number, a flag, a name) as its annotation
    names it; None where it is, or where the annotation is another (a list, a union)."""
    held = sub_config(f) or (type(f.default) if isinstance(f.default, Settings) else None)
    if held is not None:  # a sub-config (RNNsearch's coverage, translate's search): a str or dict failed later
        return None if isinstance(value, held) else f"{value!r}, not a {held.__name__}"
    kind, _, none = str(f.type).partition(" | ")
    if kind not in _KINDS or none not in ("", "None") or (value is None and none):
        return None
    if isinstance(value, _KINDS[kind]) and (kind == "bool" or not isinstance(value, bool)):
        return None
    return f"{value!r}, not {_KIND_NAMES[kind]}"


def _as_plain_numbers(config: Any) -> None:
    """numpy's numbers and flags (a sweep's computed sizes) made Python's, and paths made str, as
    a checkpoint keeps them and ``torch.load(weights_only=True)`` reads them back."""
    for f in fields(config):
        value, kind = getattr(config, f.name), str(f.type).partition(" | ")[0]
        if type(value) in (bool, int, float, str):  # numpy's float64 is a float, but pickles as numpy's
            continue
        if kind in ("bool", "int", "float") and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
            object.__setattr__(config, f.name, value.item())  # a numpy scalar (a 0-d tensor) as Python's
        elif kind == "str" and isinstance(value, os.PathLike):
            object.__setattr__(config, f.name, os.fspath(value))


@contextlib.contextmanager
def as_written() -> Iterator[None]:
    """Within: configs are made without checking their declared bounds (a stored one, read back)."""
    token = _CHECKING.set(False)
    try:
        yield
    finally:
        _CHECKING.reset(token)


def sub_config(f: Field[Any]) -> type[Any] | None:
    """The settings class of a field that holds one (its default is made by that class), else None."""
    factory = f.default_factory
    return factory if isinstance(factory, type) and issubclass(factory, Settings) else None


def known_fields(cls: type, d: dict[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise FormatError(f"unknown {what}: {', '.join(sorted(unknown))}")
    return {k: v for k, v in d.items() if k in names}


DEVICES = "cpu, cuda, cuda:N"
LOGITS_BLAS = ("auto", "torch", "numpy")  # see nmtkit.core.blas


@dataclass(frozen=True)
class RuntimeConfig(Settings):
    device: str | None = setting(
        None, f"Where to compute: {DEVICES}.", default_help="the GPU of this process when there is one, else cpu"
    )
    # a bound where torch's thread pool still starts: 99,999 crashed it
    threads: int = setting(0, "CPU threads (0: torch's default, one per core).", ge=0, le=1024)
    bf16: bool = setting(
        False, "bfloat16 autocast: on GPUs, and on CPUs with native bfloat16 (AVX512-BF16 or AMX; refused elsewhere)."
    )
    tf32: bool = setting(
        True,
        "On GPUs, float32 matrix products in TensorFloat-32 (tensor cores; 10-bit mantissa, float32 range "
        "and sums). No effect on CPUs.",
    )
    logits_blas: str = setting(
        "auto",
        "CPUs, float32 training: the library of the output layer's logits product, the widest of an update: "
        "torch's (oneMKL in its x86 builds) or numpy's (OpenBLAS). auto: "
        "numpy's on AMD CPUs without AVX-512 (Zen 3 and before), torch's elsewhere.",
        choices=LOGITS_BLAS,
    )
    int8: bool = setting(
        False,
        "CPUs: the linear layers in int8 (torch's dynamic quantization, a scale per output row): faster "
        "products, a quarter of their memory, at a cost in BLEU (docs/benchmarks.md). Translation only.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if checking() and self.int8 and self.bf16:  # torch's int8 layers take float32, and autocast gave them bfloat16
            raise UserError("--int8 and --bf16: give one of them (int8's layers compute from float32)")
