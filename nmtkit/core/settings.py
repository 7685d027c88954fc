"""The base of every typed settings class: to/from plain dicts, unknown keys refused."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import FormatError


class Settings:
    """to_dict/from_dict for the frozen dataclasses below; unknown keys are a format error."""

    def to_dict(self) -> dict[str, Any]:
        fields_: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return fields_

    @classmethod
    def from_dict(cls, d: dict[str, Any]):  # type: ignore[no-untyped-def]
        return cls(**known_fields(cls, d, f"{cls.__name__} field"))


def known_fields(cls: type, d: dict[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise FormatError(f"unknown {what}: {', '.join(sorted(unknown))}")
    return {k: v for k, v in d.items() if k in names}


DEVICES = "cpu, cuda, cuda:N"


@dataclass(frozen=True)
class RuntimeConfig:
    device: str | None = None  # None: the GPU of this process when there is one, else the CPU
    threads: int = 0  # CPU threads; 0: torch's default (one per core)
    bf16: bool = False  # bfloat16 autocast
    tf32: bool = True  # on GPUs: float32 matrix products in TensorFloat-32
