"""The package's structure, read from its imports: docs/structure.md (Mermaid) and a picture.

Modules are the nodes (a subpackage counts as one: models, data, text,
selection, recipes); an arrow A → B says that A imports B, solid when at
import time, dashed when only inside a function (a lazy import, which keeps
torch out of the commands that do not need it). Layers go bottom up: a
module sits one row above the highest module it imports at import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import click

from ..command import Command
from ..errors import UserError
from ..files import atomic_write

PACKAGE = "nmtkit"
SUBPACKAGES = ("models", "data", "text", "selection", "recipes")
EVERYWHERE = ("errors",)          # imported by nearly every module: its arrows only hide the others
BEGIN, END = "<!-- structure:begin -->", "<!-- structure:end -->"
Graph = dict[str, dict[str, str]]          # node -> {imported node: "top" | "lazy"}


def node_of(module: str) -> str | None:
    """nmtkit.models.rnnsearch → models; nmtkit.cli → cli; the package itself → None."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return None
    return parts[1]


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute names an ``from X import a, b`` in ``module`` refers to (a, b may be modules)."""
    if node.level:
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{alias.name}" for alias in node.names]


def graph(root: Path) -> Graph:
    """Who imports whom inside the package at ``root`` (its directory), at run time: imports
    under ``if TYPE_CHECKING:`` are for the type checker only and are left out."""
    files = sorted(root.rglob("*.py"))
    nodes = {name for path in files if (name := node_of(_module_name(path, root)))}
    edges: Graph = {n: {} for n in nodes}
    for path in files:
        module = _module_name(path, root)
        source = node_of(module)
        if source is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typing_only = {id(n) for stmt in tree.body if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
                       for n in ast.walk(stmt)}
        top_level = {id(n) for n in tree.body}
        for n in ast.walk(tree):
            if id(n) in typing_only:
                continue
            if isinstance(n, ast.ImportFrom):
                names = _resolve(module, path.name == "__init__.py", n)
            elif isinstance(n, ast.Import):
                names = [alias.name for alias in n.names]
            else:
                continue
            kind = "top" if id(n) in top_level else "lazy"
            for target in {t for name in names if (t := node_of(name)) in nodes and t != source}:
                if edges[source].get(target) != "top":
                    edges[source][target] = kind
    return edges


def layers(edges: Graph) -> dict[str, int]:
    """Row of each module: 0 for those that import nothing of the package at import time, else
    one above the highest they import. Modules that import each other (a cycle, through a
    subpackage) share a row."""
    top = {n: sorted(d for d, kind in ts.items() if kind == "top") for n, ts in edges.items()}
    reach = {n: _reachable(n, top) for n in top}
    group = {n: frozenset(m for m in reach[n] | {n} if n in reach[m] or m == n) for n in top}
    row: dict[frozenset[str], int] = {}

    def visit(g: frozenset[str]) -> int:
        if g not in row:
            below = {group[d] for n in g for d in top[n]} - {g}
            row[g] = 1 + max((visit(b) for b in below), default=-1)
        return row[g]

    return {n: visit(group[n]) for n in sorted(top)}


def _reachable(start: str, top: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(top[start])
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(top[n])
    return seen


def mermaid(edges: Graph) -> str:
    rows = layers(edges)
    lines = ["```mermaid", "flowchart BT"]
    for level in sorted(set(rows.values())):
        members = " & ".join(sorted(n for n, r in rows.items() if r == level))
        lines.append(f"  %% row {level}: {members}")
    for source in sorted(edges):
        for target, kind in sorted(edges[source].items()):
            lines.append(f"  {source} {'-->' if kind == 'top' else '-.->'} {target}")
    return "\n".join(lines + ["```"])


def draw(edges: Graph, out: Path) -> None:
    from ..plot import _pyplot, _save
    plt = _pyplot()
    rows = layers(edges)
    height = max(rows.values()) + 1
    by_row = {r: sorted(n for n, v in rows.items() if v == r) for r in range(height)}
    width = max(len(v) for v in by_row.values())
    pos = {n: ((i + 0.5) * width / len(members), r) for r, members in by_row.items() for i, n in enumerate(members)}
    fig, ax = plt.subplots(figsize=(max(12, 2.2 * width), 1.1 * height + 1))
    for source, targets in edges.items():
        for target, kind in targets.items():
            if target in EVERYWHERE:
                continue
            (x0, y0), (x1, y1) = pos[source], pos[target]
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "->", "alpha": 0.35 if kind == "top" else 0.2,
                                    "linestyle": "-" if kind == "top" else "--", "shrinkA": 12, "shrinkB": 12,
                                    "color": "tab:blue" if kind == "top" else "tab:gray"})
    for n, (x, y) in pos.items():
        ax.text(x, y, n, ha="center", va="center", fontsize=9,
                bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "black"})
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-0.6, height - 0.4)
    ax.axis("off")
    ax.set_title("nmtkit: modules and what imports what (solid: at import time; dashed: inside a function; "
                 f"arrows into {', '.join(EVERYWHERE)} left out)", fontsize=10)
    _save(fig, out)


def into_doc(doc: Path, block: str) -> None:
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise UserError(f"{doc}: no {BEGIN} … {END} lines to write the graph between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with atomic_write(doc) as fh:
        fh.write(f"{head}{BEGIN}\n{block}\n{END}{tail}")


@click.command("structure", cls=Command)
@click.option("--doc", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Markdown file with the structure markers.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), required=True)
def main(doc: Path, plot_path: Path) -> None:
    """Write the import graph of the installed package into DOC and draw it."""
    edges = graph(Path(__file__).resolve().parent.parent)
    into_doc(doc, mermaid(edges))
    draw(edges, plot_path)


if __name__ == "__main__":
    main()
