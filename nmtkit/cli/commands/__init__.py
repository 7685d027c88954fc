"""The ``nmtkit`` commands, a module each (``build-vocab`` in ``build_vocab``, the command named
like its module). The group in :mod:`nmtkit.cli` imports a module only when its command runs or
shows its help; a module imports what it needs at its top, and never another command."""
