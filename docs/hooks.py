"""mkdocs hooks (mkdocs.yml: ``hooks``), three of them.

The docstrings are written for Sphinx (``:class:`Corpus```, ``:func:`~.load```); mkdocstrings renders
such a role as its name and a code span. :func:`on_page_content` shows the code span alone, and for a
``~`` name only its last part, as Sphinx does.

The command-line reference (docs/cli.md): :func:`on_page_markdown` renders the ``::: mkdocs-click``
block itself, from the click commands, before Markdown sees the page. The block keeps mkdocs-click's
syntax and options (``:module:``, ``:command:``, ``:prog_name:``, ``:depth:``, ``:style: table``,
``:list_subcommands:``, ``:show_hidden:``), but mkdocs-click (0.9) is no longer what renders it, for
it cannot be made to render these commands right, in either style, and its output cannot be mended
afterwards:

- its table writes ``option.default`` as it is: click 8.2+'s ``Sentinel.UNSET`` for an option with no
  default, ``True`` where ``--help`` says ``tf32``, the build machine's core count where it says
  ``(number of cores)``, and nothing where the default is 0;
- it writes the help texts into the table's Markdown unescaped: a ``|`` ends the cell (translate's
  ``--length-penalty`` stopped at "GNMT's ((5+" with "y" for its default), ``</s>`` and ``<unk>`` go out
  as HTML tags the browser hides, ``*`` and ``_`` may become emphasis; the commands' descriptions too;
- it leaves out each command's epilog (the examples of ``--help``);
- ``style: plain`` avoids the escaping by putting the options into a text block, but still drops the
  examples, and it has no other setting for any of this;
- mending its Markdown in ``on_page_markdown`` is impossible: mkdocs-click is a Markdown preprocessor,
  so that the page the hook gets still holds the directive, and once expanded a ``|`` of a help text
  cannot be told from a cell's border.

So the rendering here is small and takes what ``--help`` takes: each option's default and range from
click's own ``get_help_extra`` (what ``[default: ...]`` shows, blank where it shows none), every text
escaped for Markdown and HTML, a description's ``\\b`` paragraphs and each epilog's examples in code
blocks. tests/test_cli_reference.py builds the site and reads the page back against the commands.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

import click
from mkdocs.exceptions import PluginError

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if match.group(1) else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_code, html)


# --- the command-line reference ----------------------------------------------------------------------

# "::: mkdocs-click" and its indented ":key: value" lines, as mkdocs-click reads them
_DIRECTIVE = re.compile(r"^::: mkdocs-click[ \t]*\n((?:[ \t]+:[^\n]*(?:\n|\Z))*)", re.M)
_OPTION = re.compile(r"^\s+:(?P<key>[^:]+):(?:\s+(?P<value>.*\S))?\s*$")
_KEYS = {"module", "command", "prog_name", "depth", "style", "list_subcommands", "show_hidden"}

# Markdown's escapable characters (Python-Markdown's ESCAPED_CHARS, | with the tables extension); & < >
# become HTML entities. Text escaped so shows as written in a paragraph and in a table cell alike.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|])")


def on_page_markdown(markdown: str, **_: Any) -> str:
    markdown = _SETTINGS.sub(_settings, markdown)
    return _DIRECTIVE.sub(lambda block: "\n".join(_reference(block.group(1))) + "\n", markdown)


def _reference(block: str) -> Iterator[str]:
    options: dict[str, str] = {}
    for line in block.splitlines():
        match = _OPTION.match(line)
        if match is None:
            raise PluginError(f"mkdocs-click block: cannot read {line!r}")
        options[match.group("key").strip()] = match.group("value") or ""
    unknown = set(options) - _KEYS
    if unknown or not {"module", "command"} <= set(options):
        raise PluginError(
            f"mkdocs-click block: docs/hooks.py renders it and takes {sorted(_KEYS)}, "
            f"module and command required; got {sorted(options)}"
        )
    if options.get("style", "table") != "table":
        raise PluginError("mkdocs-click block: docs/hooks.py renders style: table only")
    # an error inside the import keeps its traceback
    command = getattr(importlib.import_module(options["module"]), options["command"], None)
    if not isinstance(command, click.Command):
        raise PluginError(f"mkdocs-click block: {options['module']}:{options['command']} is no click command")
    yes = {"true", "yes", "1"}
    yield from _command(
        command,
        options.get("prog_name") or command.name or options["command"],
        None,
        depth=int(options.get("depth", 0)),
        list_subcommands=options.get("list_subcommands", "").lower() in yes,
        show_hidden=options.get("show_hidden", "").lower() in yes,
    )
    yield ""


def _command(
    command: click.Command,
    name: str,
    parent: click.Context | None,
    *,
    depth: int,
    list_subcommands: bool,
    show_hidden: bool,
) -> Iterator[str]:
    if command.hidden and not show_hidden:
        return
    ctx = command.context_class(command, info_name=name, parent=parent, **command.context_settings)
    # the heading as mkdocs-click wrote it: its id (#translate) is what links to the page use
    yield f"{'#' * (depth + 1)} {name}"
    yield ""
    yield from _paragraphs(command.help or command.short_help or "")

    formatter = ctx.make_formatter()
    formatter.write_usage(ctx.command_path, " ".join(command.collect_usage_pieces(ctx)), prefix="")
    yield "**Usage:**"
    yield ""
    yield from _fence(formatter.getvalue().strip().splitlines(), "text")

    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and (show_hidden or not p.hidden)]
    if options:
        yield "**Options:**"
        yield ""
        yield "| Name | Type | Description | Default |"
        yield "| ---- | ---- | ----------- | ------- |"
        yield from (_row(option, ctx) for option in options)
        yield ""

    yield from _paragraphs(command.epilog or "", examples=True)

    if isinstance(command, click.Group):
        children = [
            (n, c)
            for n in command.list_commands(ctx)
            if (c := command.get_command(ctx, n)) is not None and (show_hidden or not c.hidden)
        ]
        if list_subcommands and children:
            yield "**Subcommands:**"
            yield ""
            for child_name, child in children:
                yield f"- [{child_name}](#{child_name}): {_text(_summary(child))}"
            yield ""
        for child_name, child in children:
            yield from _command(
                child, child_name, ctx, depth=depth + 1, list_subcommands=list_subcommands, show_hidden=show_hidden
            )


def _row(option: click.Option, ctx: click.Context) -> str:
    extra = _help_extra(option, ctx)
    names = ", ".join(_literal(name) for name in option.opts)
    if option.secondary_opts:
        names += " / " + ", ".join(_literal(name) for name in option.secondary_opts)
    if option.is_flag or option.count:
        kind = "flag" if option.is_flag else "count"
    else:
        kind = _literal(_metavar(option, ctx))
    if extra.get("range"):
        kind += f" ({_text(extra['range'])})"
    description = _text(" ".join((option.help or "").split()))
    if extra.get("envvars"):
        description += " Environment variable: " + ", ".join(_literal(v) for v in extra["envvars"]) + "."
    if extra.get("default"):
        default = _literal(extra["default"])
    else:
        default = "*required*" if extra.get("required") else ""
    return f"| {names} | {kind} | {description} | {default} |"


def _help_extra(option: click.Option, ctx: click.Context) -> dict[str, Any]:
    """What --help shows in brackets after the help: default, range, required, environment variables.
    click 8.2+ says it (get_help_extra); before, it is read off the help record's brackets."""
    if hasattr(option, "get_help_extra"):
        return dict(option.get_help_extra(ctx))
    record = option.get_help_record(ctx)
    match = re.search(r"(?:^|  )\[([^\[\]]*)\]$", record[1]) if record else None
    extra: dict[str, Any] = {}
    for part in match.group(1).split("; ") if match else []:
        if part == "required":
            extra["required"] = "required"
        elif part.startswith("default: "):
            extra["default"] = part[len("default: ") :]
        elif part.startswith("env var: "):
            extra["envvars"] = part[len("env var: ") :].split(", ")
        else:
            extra["range"] = part
    return extra


def _metavar(option: click.Option, ctx: click.Context) -> str:
    # click 8.2+ takes the context
    if "ctx" in inspect.signature(option.make_metavar).parameters:
        return option.make_metavar(ctx)
    return option.make_metavar()  # type: ignore[call-arg]


def _summary(command: click.Command) -> str:
    """The command's first paragraph (click's own short help stops at the first full stop: "et al.")."""
    if command.short_help:
        return command.short_help
    first = inspect.cleandoc(command.help or "").partition("\f")[0].split("\n\n")[0]
    return " ".join(word for word in first.split() if word != "\b")


def _paragraphs(text: str, examples: bool = False) -> Iterator[str]:
    """A help text or an epilog as click's --help lays it out: paragraphs, and the \\b ones verbatim
    (in a code block). In an epilog, a \\b paragraph is examples: its indented lines (the commands)
    go into a shell code block, the lines around them (the "Examples:" label, a note) are text."""
    text = inspect.cleandoc(text).partition("\f")[0]
    for paragraph in re.split(r"\n[ \t]*\n", text):
        lines = paragraph.splitlines()
        if not lines or not paragraph.strip():
            continue
        if lines[0].strip() != "\b":
            yield _text(" ".join(paragraph.split()))
            yield ""
        elif not examples:
            yield from _fence(_dedent(lines[1:]), "text")
        else:
            run: list[str] = []
            for line in [*lines[1:], ""]:
                if line.strip() and run and line[:1].isspace() == run[0][:1].isspace():
                    run.append(line)
                    continue
                if run and run[0][:1].isspace():
                    yield from _fence(_dedent(run), "sh")
                elif run:
                    prose = _text(" ".join(" ".join(run).split()))
                    yield f"**{prose}**" if len(run) == 1 and run[0].rstrip().endswith(":") else prose
                    yield ""
                run = [line] if line.strip() else []


def _dedent(lines: list[str]) -> list[str]:
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return [line[indent:].rstrip() for line in lines]


def _fence(lines: list[str], language: str) -> Iterator[str]:
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    yield f"{fence}{language}"
    yield from lines
    yield fence
    yield ""


def _text(text: str) -> str:
    """Plain text as Markdown that shows it as written, in a paragraph or a table cell."""
    text = _MARKDOWN.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _literal(text: str) -> str:
    return f"<code>{_text(text)}</code>"


# --- the settings of the library's configs (docs/api.md) -----------------------------------------------

# "::: nmtkit-settings nmtkit.train.config.TrainConfig": a table of the class's declared settings, each
# with the option it is on the command line, its default and its help, from its declaration (setting()),
# as --help has them; the field names are what Python takes, which are not always the flags' spelling.
_SETTINGS = re.compile(r"^::: nmtkit-settings[ \t]+(?P<cls>[\w.]+)[ \t]*$", re.M)


def settings_table(cls: type) -> str:
    """The Markdown table of the settings class ``cls``."""
    from nmtkit.core.settings import declared, declared_names, default_of, flag_of, sub_config

    rows = ["| field | option | default | what it sets |", "|---|---|---|---|"]
    for name in declared_names(cls):
        f, d = declared(cls, name)
        inner = sub_config(f)
        if inner is not None:  # its fields are options of their own: its table is its class's
            rows.append(f"| {_literal(name)} | | {_literal(inner.__name__ + '()')} | {_text(d.help)} |")
            continue
        default = d.default_help if d.default_help is not None else repr(default_of(f))
        says = [" ".join(d.help.split())]
        if d.choices is not None:
            says.append(f"One of: {', '.join(d.choices)}.")
        bounds = [
            f"{sign} {b:g}" for sign, b in ((">=", d.ge), (">", d.gt), ("<=", d.le), ("<", d.lt)) if b is not None
        ]
        if bounds:
            says.append(f"Bounds: {', '.join(bounds)}.")
        rows.append(
            f"| {_literal(name)} | {_literal(flag_of(name, d))} | {_literal(default)} | {_text(' '.join(says))} |"
        )
    return "\n".join(rows) + "\n"


def _settings(match: re.Match[str]) -> str:
    module, _, name = match.group("cls").rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise PluginError(f"::: nmtkit-settings {match.group('cls')}: {e}") from e
    return settings_table(cls)
