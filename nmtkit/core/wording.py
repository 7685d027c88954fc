"""How messages count things: "1 line", "2 lines"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun``, in the plural unless ``n`` is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
