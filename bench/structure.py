"""The package's structure, read from its imports: the layers and their rules, the figures of
docs/structure.md (Mermaid and a picture), and the measures a test holds the code to.

A module belongs to a stage, its subpackage (``nmtkit.train.loop`` → ``train``), except the
plain-value settings of a stage (its ``settings.py`` or ``config.py``), which form a layer of
their own just above ``core`` so that the command line and the checkpoint can read every
stage's settings without importing the stage. Stages sit in :data:`LAYERS`, bottom up: a
module imports its own stage and the layers below, never above, and no module imports itself
back through others (no circle), inside functions included.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import click

from nmtkit.core.command import Command
from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write
from nmtkit.core.plot import pyplot, save_figure

PACKAGE = "nmtkit"
# Bottom up; stages on one row do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("nmtkit",),
    ("core",),
    ("settings",),
    ("text",),
    ("align", "selection"),
    ("data",),
    ("models",),
    ("checkpoint",),
    ("translate",),
    ("evaluate",),
    ("train",),
    ("serve",),
    ("cli",),
    ("__main__",),
)
SETTINGS = ("settings", "config")
RANK = {stage: row for row, stages in enumerate(LAYERS) for stage in stages}
BEGIN, END = "<!-- structure:begin -->", "<!-- structure:end -->"
Graph = dict[str, dict[str, str]]  # module -> {imported module: "top" | "lazy"}


def stage_of(module: str) -> str:
    """nmtkit.train.loop → train; nmtkit.models.config → settings; nmtkit → nmtkit."""
    parts = module.split(".")
    if len(parts) == 1:
        return PACKAGE
    if len(parts) >= 3 and parts[-1] in SETTINGS and parts[1] != "core":
        return "settings"
    return parts[1]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(module: str, is_package: bool, node: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules an import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = module.split(".")
        if node.level:
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target for alias in node.names]
    else:
        return set()
    return {n for n in names if n in modules and n != module}


def graph(root: Path) -> Graph:
    """Who imports whom inside the package at ``root`` (its directory), module by module, at run
    time: "top" at import time (under a ``try`` or an ``if`` at the module's level too), "lazy" inside
    a function only; imports under ``if TYPE_CHECKING:`` are for the type checker only and are left out."""
    files = sorted(root.rglob("*.py"))
    modules = {_module_name(p, root) for p in files}
    edges: Graph = {m: {} for m in modules}
    for path in files:
        module = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typing_only = {
            id(n)
            for stmt in tree.body
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
            for n in ast.walk(stmt)
        }
        # inside a function: run when it is called; anywhere else (a try or an if included), at import
        in_functions = {
            id(n)
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(fn)
        }
        for n in ast.walk(tree):
            if id(n) in typing_only:
                continue
            kind = "lazy" if id(n) in in_functions else "top"
            for target in _targets(module, path.name == "__init__.py", n, modules):
                if edges[module].get(target) != "top":
                    edges[module][target] = kind
    return edges


def upward(edges: Graph) -> list[tuple[str, str]]:
    """Imports of a stage higher than the importer's."""
    return sorted(
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if RANK.get(stage_of(b), -1) > RANK.get(stage_of(a), len(LAYERS))
    )


def cycles(edges: Graph) -> list[list[str]]:
    """The groups of modules that import each other, through any path (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def levels(edges: Graph) -> int:
    """Rows of the import-time graph: 1 + the longest chain of modules importing one another."""
    depth: dict[str, int] = {}

    def of(v: str, seen: frozenset[str]) -> int:
        if v not in depth:
            below = [of(w, seen | {v}) for w, kind in edges[v].items() if kind == "top" and w not in seen]
            depth[v] = 1 + max(below, default=0)
        return depth[v]

    return max((of(v, frozenset()) for v in edges), default=0)


@dataclass
class Measures:
    modules: int
    stages: int
    levels: int
    upward: int
    cycles: int
    lazy_internal: int
    longest_module: tuple[str, int]
    longest_function: tuple[str, int]


def sizes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Lines of every module, and of every function (module:qualified.name)."""
    modules, functions = {}, {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = _module_name(path, root)
        modules[name] = len(text.splitlines())
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([n.lineno] + [d.lineno for d in n.decorator_list])
                functions[f"{name}:{n.name}"] = (n.end_lineno or n.lineno) - start + 1
    return modules, functions


def measure(root: Path) -> Measures:
    edges = graph(root)
    modules, functions = sizes(root)
    return Measures(
        len(modules),
        len({stage_of(m) for m in edges}),
        levels(edges),
        len(upward(edges)),
        len(cycles(edges)),
        sum(kind == "lazy" for ts in edges.values() for kind in ts.values()),
        max(modules.items(), key=lambda kv: kv[1]),
        max(functions.items(), key=lambda kv: kv[1]),
    )


def stage_graph(edges: Graph) -> Graph:
    """The module graph folded into stages: an arrow when any module of one imports the other."""
    out: Graph = {stage_of(m): {} for m in edges}
    for a, targets in edges.items():
        for b, kind in targets.items():
            sa, sb = stage_of(a), stage_of(b)
            if sa != sb and out[sa].get(sb) != "top":
                out[sa][sb] = kind
    return out


def mermaid(edges: Graph) -> str:
    stages = stage_graph(edges)
    lines = ["```mermaid", "flowchart BT"]
    for row, members in enumerate(LAYERS):
        present = [s for s in members if s in stages]
        if present:
            lines.append(f"  %% layer {row}: {' & '.join(present)}")
    for source in sorted(stages, key=lambda s: (RANK[s], s)):
        for target, kind in sorted(stages[source].items()):
            lines.append(f"  {_box(source)} {'-->' if kind == 'top' else '-.->'} {_box(target)}")
    return "\n".join(lines + ["```"])


def _box(stage: str) -> str:
    return "pkg" if stage == PACKAGE else stage.strip("_")


def draw(edges: Graph, out: Path) -> None:
    """The stages in their layers, bottom up, and the imports between them."""
    plt = pyplot()
    stages = stage_graph(edges)
    rows = [[s for s in members if s in stages] for members in LAYERS]
    rows = [r for r in rows if r]
    pos = {s: ((i + 1) / (len(r) + 1), y) for y, r in enumerate(rows) for i, s in enumerate(r)}
    fig, ax = plt.subplots(figsize=(10, 0.7 * len(rows) + 1))
    for source, targets in stages.items():
        for target, kind in targets.items():
            (x0, y0), (x1, y1) = pos[source], pos[target]
            # arcs bow out by how many rows they cross, to the left from even rows, right from odd
            bow = (0.12 if y0 % 2 else -0.12) * min(abs(y0 - y1), 6) / 2
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={
                    "arrowstyle": "->",
                    "alpha": 0.35 if kind == "top" else 0.25,
                    "linestyle": "-" if kind == "top" else "--",
                    "shrinkA": 12,
                    "shrinkB": 12,
                    "color": "tab:blue" if kind == "top" else "tab:gray",
                    "connectionstyle": f"arc3,rad={bow:.2f}",
                },
            )
    for s, (x, y) in pos.items():
        ax.text(
            x,
            y,
            _box(s),
            ha="center",
            va="center",
            fontsize=9,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "black"},
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.axis("off")
    ax.set_title("nmtkit's stages, bottom up (solid: imported at import time; dashed: inside a function)", fontsize=9)
    save_figure(fig, out)


def into_doc(doc: Path, block: str) -> None:
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise UserError(f"{doc}: no {BEGIN} … {END} lines to write the graph between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with atomic_write(doc) as fh:
        fh.write(f"{head}{BEGIN}\n{block}\n{END}{tail}")


@click.command("structure", cls=Command)
@click.option(
    "--doc", type=click.Path(dir_okay=False, path_type=Path), help="Markdown file with the structure markers."
)
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), help="The picture.")
@click.option(
    "--measure",
    "measure_root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Print the measures of the package at this directory instead (any nmtkit tree).",
)
def main(doc: Path | None, plot_path: Path | None, measure_root: Path | None) -> None:
    """Write the import graph of the installed package into DOC and draw it in PLOT."""
    if measure_root is not None:
        click.echo(measure(measure_root))
        return
    if doc is None or plot_path is None:
        raise UserError("give --doc and --plot (or --measure DIR)")
    edges = graph(Path(__file__).resolve().parents[1] / PACKAGE)
    into_doc(doc, mermaid(edges))
    draw(edges, plot_path)


if __name__ == "__main__":
    main()
