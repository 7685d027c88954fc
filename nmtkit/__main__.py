"""``python -m nmtkit`` is the ``nmtkit`` command."""

from .cli import main

main()
