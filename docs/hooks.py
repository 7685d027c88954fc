"""mkdocs hook: the docstrings are written for Sphinx (``:class:`Corpus```, ``:func:`~.load```);
mkdocstrings renders such a role as its name and a code span. Show the code span alone, and for a
``~`` name only its last part, as Sphinx does."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if match.group(1) else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_code, html)
