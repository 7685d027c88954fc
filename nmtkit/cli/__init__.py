"""The ``nmtkit`` command: a thin click layer over the library, a module per command.

Each command, in :mod:`nmtkit.cli.commands`, declares its options (defaults read from the typed
configs they fill), makes one library call and reports. Errors become one line and exit status 2
in :mod:`nmtkit.core.command`. The group imports a command's module only when that command runs or
shows its help: ``nmtkit --help`` and the completion of a command's name read each command's
docstring from its source, and never load torch or the text libraries. A command's module imports
what its options need at its top (click, the typed configs); the library calls it makes, which
load torch or the text libraries, are imported in the command's function where they are made, so that
``nmtkit COMMAND --help`` and the completion of its options answer in a fraction of a second too.
"""

from __future__ import annotations

import click

from .. import __version__
from ..core.command import LazyGroup

# The commands, in the order `nmtkit --help` lists them; each is the function NAME of the module
# nmtkit.cli.commands.NAME (build-vocab: build_vocab), whose docstring is its help.
COMMANDS = (
    "fetch-bible",
    "preprocess",
    "tokenize",
    "build-vocab",
    "select",
    "reverse",
    "word-align",
    "train",
    "translate",
    "score",
    "rescore",
    "rerank",
    "align",
    "align-plot",
    "score-align",
    "info",
    "average",
    "lexicon",
    "serve",
)


def _version(ctx: click.Context, _param: click.Parameter, asked: bool) -> None:
    """nmtkit's version and torch's as installed, read from the package metadata: importing
    torch would take a second and more (the device a run uses: any command's -v)."""
    if not asked or ctx.resilient_parsing:
        return
    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch = version("torch")
    except PackageNotFoundError:
        torch = "not installed"
    click.echo(f"nmtkit {__version__} (torch {torch}; Python {platform.python_version()})")
    ctx.exit()


@click.group(
    "nmtkit",
    cls=LazyGroup,
    package=f"{__name__}.commands",
    names=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show nmtkit's version, torch's and Python's, and exit.",
)
def main() -> None:
    """Attention-based neural machine translation (Bahdanau et al. 2015) from the shell.

    \b
    Pipeline:    preprocess → build-vocab → preprocess --vocab → train → translate → score
    Data:        fetch-bible (the Bible En–Fr corpus), select (data selection), tokenize (a filter), reverse
    Checkpoints: info, average, lexicon (translate --shortlist's lists); serve (over HTTP)
    Rescoring:   rescore (log p of given translations: n-best features, filtering), rerank (n-best lists)
    Alignments:  align, align-plot, word-align (eflomal), score-align (AER)
    Run 'nmtkit COMMAND --help' for a command's options and an example.
    """
