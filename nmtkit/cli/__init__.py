"""The ``nmtkit`` command: a thin click layer over the library, a module per command family.

Each command module declares its options (defaults read from the typed configs they fill),
makes one library call and reports. Errors become one line and exit status 2 in
:mod:`nmtkit.core.command`. The library is imported inside each command's body, not at the
top of its module: ``nmtkit --help`` and shell completion then never load torch.
"""

from __future__ import annotations

import click

from .. import __version__
from ..core.command import Group
from . import align, checkpoints, evaluate, prepare, select, serve, train, translate


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


@click.group("nmtkit", cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
    Pipeline:  preprocess → build-vocab → preprocess --vocab → train → translate → score
    Around it: select (data selection), tokenize (one side as a filter), align-plot.
    Run 'nmtkit COMMAND --help' for a command's options and an example.
    """


for _family in (prepare, select, train, translate, evaluate, align, checkpoints, serve):
    for _command in _family.COMMANDS:
        main.add_command(_command)
