"""The command-line reference page (docs/cli.md, rendered by docs/hooks.py) says what the commands
say: the site is built and the page's HTML is read back against each command's own --help: every
option with its help text whole (in one table cell, characters such as | < > * _ as written) and
the default --help shows, the command's description, and its examples (the epilog) in a code block."""

from __future__ import annotations

import html
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("mkdocs", "material", "mkdocstrings")),
    reason="the docs extra is not installed: pip install -e '.[docs]' (make docs installs it)",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return site


@pytest.fixture(scope="module")
def page(site: Path) -> str:
    return (site / "cli" / "index.html").read_text(encoding="utf-8")


def commands() -> Iterator[tuple[click.Command, click.Context]]:
    """nmtkit's group and its visible commands, each with the context its --help is made in."""
    from nmtkit.cli import main

    root = main.context_class(main, info_name="nmtkit", **main.context_settings)
    yield main, root
    for name in main.list_commands(root):
        command = main.get_command(root, name)
        assert command is not None
        if not command.hidden:
            yield command, command.context_class(command, info_name=name, parent=root, **command.context_settings)


def section(page: str, name: str) -> str:
    """The HTML from the command's heading (its id is the command's name) to the next heading."""
    start = re.search(rf'<h[1-6] id="{re.escape(name)}"', page)
    assert start is not None, f"no heading for {name} on the page"
    end = re.compile(r"<h[1-6][ >]").search(page, start.end())
    return page[start.start() : end.start() if end else len(page)]


def text(fragment: str) -> str:
    """What a browser shows of an HTML fragment (a raw <unk> is a tag and shows nothing), whitespace
    folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]*>", "", fragment)).split())


def fold(s: str) -> str:
    return " ".join(s.split())


def rows(fragment: str) -> list[list[str]]:
    return [
        [text(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", fragment, re.S)
    ]


def shown(option: click.Option, ctx: click.Context) -> tuple[str, str, str] | None:
    """What --help shows of an option: its names (and metavar), its help, the default it shows
    ('' where none) and whether it is required; None for a hidden option."""
    record = option.get_help_record(ctx)
    if record is None:
        return None
    extra = re.search(r"(?:^|  )\[([^\[\]]*)\]$", record[1])
    parts = extra.group(1).split("; ") if extra else []
    default = next((p[len("default: ") :] for p in parts if p.startswith("default: ")), "")
    return record[0], default, "required" if "required" in parts else ""


def test_the_page_shows_no_sentinel_and_no_help_text_as_html(page: str) -> None:
    body = page[page.index('<h2 id="commands"') :]
    assert "Sentinel" not in page, "a default shown as click's UNSET sentinel"
    for tag in ("</s>", "<unk>", "<pad>", "<split>"):
        assert tag not in body, f"{tag} went out as HTML (the browser hides it)"
    assert "&lt;/s&gt;" in body and "&lt;unk&gt;" in body


def test_a_pipe_in_a_help_text_stays_in_its_cell(page: str) -> None:
    table = rows(section(page, "translate"))
    row = next(r for r in table if "--length-penalty" in r[0])
    assert "over |y|^alpha (fairseq's --lenpen, Marian's --normalize), or over GNMT's ((5+|y|)/6)^alpha." in row[2], row
    assert len(row) == 4 and row[3] == "none", row


def test_every_option_of_every_command_is_on_the_page_with_its_whole_help_and_its_default(page: str) -> None:
    problems = []
    for command, ctx in commands():
        where = ctx.command_path
        table = rows(section(page, ctx.info_name or ""))
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option) or (record := shown(param, ctx)) is None:
                continue
            _, default, required = record
            names = set(param.opts) | set(param.secondary_opts)
            row = next((r for r in table if r and names <= set(re.findall(r"--?[\w-]+", r[0]))), None)
            if row is None:
                problems.append(f"{where}: {'/'.join(sorted(names))} is in --help but not on the page")
                continue
            if len(row) != 4:
                problems.append(f"{where} {param.opts[-1]}: {len(row)} cells: {row}")
                continue
            if fold(param.help or "") not in row[2]:
                problems.append(
                    f"{where} {param.opts[-1]}: help\n    --help: {fold(param.help or '')}\n    page:   {row[2]}"
                )
            if row[3] != (default or required):
                problems.append(
                    f"{where} {param.opts[-1]}: default {row[3]!r}, --help shows {default!r}"
                    f"{' (required)' if required else ''}"
                )
    assert not problems, f"{len(problems)} options:\n" + "\n".join(problems)


def test_every_command_has_its_description_and_its_examples_in_a_code_block(page: str) -> None:
    problems = []
    for command, ctx in commands():
        where = ctx.command_path
        part = section(page, ctx.info_name or "")
        shown_text = text(part)
        code = "\n".join(
            html.unescape(re.sub(r"<[^>]*>", "", block)) for block in re.findall(r"<pre[^>]*>(.*?)</pre>", part, re.S)
        )
        description = inspect.cleandoc(command.help or "").partition("\f")[0]
        for line in description.splitlines():
            if line.strip() not in ("", "\b") and fold(line) not in shown_text:
                problems.append(f"{where}: description line missing: {line.strip()}")
        epilog = inspect.cleandoc(command.epilog or "")
        if command is not ctx.find_root().command:
            assert epilog, f"{where} has no examples (epilog)"
        for line in epilog.splitlines():
            if line.strip() in ("", "\b"):
                continue
            if fold(line) not in shown_text:
                problems.append(f"{where}: epilog line missing: {line.strip()}")
            elif line.startswith(" ") and line.strip() not in code:
                problems.append(f"{where}: example not in a code block: {line.strip()}")
    assert not problems, f"{len(problems)} lines:\n" + "\n".join(problems)


def test_the_hook_shows_what_markdown_and_html_would_take_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Characters no nmtkit help text has today, through docs/hooks.py and Markdown as the site has it."""
    import markdown

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)

    written = r"*a* **b** _c_ __d__ a|b|c <unk> </s> & &amp; `e` [f](g) {: #h } \ back\slash ~~i~~ #1 !j"

    @click.command("toy", epilog="\b\nExamples:\n  toy --x '*a*|b' <in >out   # `x`\n\nSee <a> & *b*.")
    @click.option("--x", default="a|*b*", show_default=True, help=written)
    @click.option("--y", type=click.Choice(["p|q", "<r>"]), required=True, help="- not a list")
    def toy(x: str, y: str) -> None:
        """1. not a list <cmd>

        # not a heading, a|b"""

    module = types.ModuleType("nmtkit_docs_toy")
    module.toy = toy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    source = hooks.on_page_markdown(f"::: mkdocs-click\n    :module: {module.__name__}\n    :command: toy\n")
    out = markdown.markdown(
        source,
        extensions=[
            "admonition",
            "tables",
            "attr_list",
            "md_in_html",
            "toc",
            "pymdownx.highlight",
            "pymdownx.superfences",
        ],
    )  # mkdocs.yml's

    table = rows(out)
    assert [len(row) for row in table] == [4, 4, 4, 4], table
    assert table[1] == ["--x", "TEXT", fold(written), "a|*b*"]
    assert table[2] == ["--y", "[p|q|<r>]", "- not a list", "required"]
    cells = re.findall(r"<td>(.*?)</td>", out, re.S)
    assert not [
        c for c in cells if re.search(r"<(em|strong|a|del|h[1-6]|ol|ul|unk|/s|r)\b", c) and c != "<em>required</em>"
    ]
    assert text(out.split("<table>")[0]).startswith("toy 1. not a list <cmd> # not a heading, a|b Usage:")
    examples = re.findall(r"<pre[^>]*>(.*?)</pre>", out, re.S)[-1]
    assert "toy --x '*a*|b' <in >out   # `x`" in html.unescape(re.sub(r"<[^>]*>", "", examples))
    assert text(out).endswith("See <a> & *b*.")


def test_the_library_page_gives_each_config_field_with_its_option_default_and_help(site: Path) -> None:
    from nmtkit.core.settings import declared, declared_names, flag_of, sub_config
    from nmtkit.models.config import CoverageConfig, LuongConfig, RNNSearchConfig
    from nmtkit.train.config import TrainConfig
    from nmtkit.translate.settings import SearchConfig, TranslateOptions

    table: dict[str, list[list[str]]] = {}
    for r in rows((site / "api" / "index.html").read_text(encoding="utf-8")):
        if len(r) == 4:
            table.setdefault(r[0], []).append(r)
    for cls in (TrainConfig, SearchConfig, TranslateOptions, RNNSearchConfig, LuongConfig, CoverageConfig):
        for name in declared_names(cls):
            f, d = declared(cls, name)
            flag = "" if sub_config(f) else flag_of(name, d)
            found = [r for r in table.get(name, []) if r[1] == flag and r[3].startswith(fold(d.help))]
            assert found and all(r[2] for r in found), f"{cls.__name__}.{name} is not on the page with {flag}"
    assert table["max_ratio"][0][1] == "--max-output-ratio"  # a field named otherwise than its flag
