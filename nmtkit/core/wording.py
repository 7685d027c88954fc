"""How messages word things: counts ("1 line", "2 lines"), a user's text within one line."""

from __future__ import annotations

import unicodedata


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun``, in the plural unless ``n`` is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def one_line(text: str) -> str:
    """``text`` with what would break it or the terminal escaped: a file name's newline or control
    characters (an error was two lines), and its bytes that are no UTF-8 (``\\xe9``, not ``\\udce9``)."""
    return "".join(
        f"\\x{ord(c) - 0xDC00:02x}"
        if 0xDC80 <= ord(c) <= 0xDCFF
        else c.encode("unicode_escape").decode("ascii")
        if unicodedata.category(c) == "Cc"
        else c
        for c in text
    )
