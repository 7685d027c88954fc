"""Imports flow one way (docs/structure.md): a module imports its own stage and the layers below,
never above; no module imports itself back through others; a command imports the library at its
top, and no other command; the command group and the text and data code never load torch; no
module or function outgrows its limit."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.structure import RANK, cycles, graph, sizes, stage_of, upward
from nmtkit.cli import COMMANDS as CLI_COMMANDS
from nmtkit.models.build import MODELS
from nmtkit.models.config import ARCHS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nmtkit"
# measured on ruff-formatted code; a function is held by ruff's rules instead (complexity, branches,
# statements, arguments: pyproject.toml), which say more of it than a count of its lines
MAX_MODULE_LINES = 500


@pytest.fixture(scope="module")
def edges():
    return graph(PACKAGE)


def test_no_module_imports_itself_back(edges):
    assert cycles(edges) == []


def test_no_import_runs_back_up(edges):
    assert upward(edges) == []
    assert {stage_of(m) for m in edges} <= set(RANK), "a stage without a layer: add it to LAYERS"


def reaches_out(path: Path) -> list[str]:
    """What a module of the toolkit does that would not work from an installed wheel: import the
    laboratory (bench/) or the tests, run a script of bin/, or look for its own checkout."""
    text = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        found += [
            f"imports {n}" for n in names if n.split(".")[0] in ("bench", "tests") or n.startswith("nmtkit.recipes")
        ]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("bin/"):
            found.append(f"names {node.value}")
    found += [f"looks for its checkout ({k})" for k in (".parents[", "parent.parent") if k in text]
    return found


def test_the_toolkit_never_reaches_into_the_laboratory_or_its_checkout(tmp_path):
    assert {str(p.relative_to(ROOT)): reaches_out(p) for p in PACKAGE.rglob("*.py") if reaches_out(p)} == {}
    planted = tmp_path / "planted.py"  # the check can fail
    planted.write_text(
        "from pathlib import Path\nfrom bench.gpu_cells import PATHS\n"
        "ROOT = Path(__file__).parents[2]\nSCRIPT = 'bin/gpu-check'\n",
        encoding="utf-8",
    )
    assert reaches_out(planted) == [
        "imports bench.gpu_cells",
        "names bin/gpu-check",
        "looks for its checkout (.parents[)",
    ]


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "nmtkit" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "nmtkit"


def test_the_checks_catch_a_circle_and_an_import_back_up(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "train/__init__.py": "",
            "core/files.py": "def f():\n    from ..train import loop  # a lazy import still counts\n",
            "train/loop.py": "from ..core import files\n",
            "text/__init__.py": "",
            "text/a.py": "from . import b\n",
            "text/b.py": "from . import a\n",
        },
    )
    edges = graph(package)
    assert upward(edges) == [("nmtkit.core.files", "nmtkit.train.loop")]
    assert sorted(cycles(edges)) == [["nmtkit.core.files", "nmtkit.train.loop"], ["nmtkit.text.a", "nmtkit.text.b"]]


COMMANDS = PACKAGE / "cli" / "commands"
# the imports of nmtkit left inside a command beyond its body's opening, and why: score's extras,
# asked for by a flag, so that a plain score loads neither torch nor numpy (test_score_sacrebleu):
# the corpus NLL (-m --data, torch) and the plot (--plot, numpy and matplotlib)
STILL_INSIDE = {("score.py", "nmtkit.evaluate.nll"), ("score.py", "nmtkit.core.plot")}


def _command_s_own(tree: ast.Module, command: str) -> set[int]:
    """The import statements (ids) inside the function ``command``, the command itself: where
    a command imports the library it calls (:mod:`nmtkit.cli`'s one rule for them)."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == command), None)
    return set() if fn is None else {id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}


def imports_inside_functions(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """The imports of nmtkit inside the functions of the module at ``path`` in ``package`` (line,
    what), importlib's included, but for those of a command's own function (:func:`_command_s_own`)."""
    # the package a relative import starts from: the module's own, or the package itself for __init__
    here = ["nmtkit", *path.relative_to(package).parent.parts]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    opening = _command_s_own(tree, path.stem)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for n in ast.walk(fn):
            if id(n) in opening:
                continue
            if isinstance(n, ast.ImportFrom):
                base = here[: len(here) - n.level + 1] if n.level else []
                target = ".".join(base + ([n.module] if n.module else []))
                if target.split(".")[0] == "nmtkit":
                    found.append((n.lineno, target))
            elif isinstance(n, ast.Import):
                found += [(n.lineno, a.name) for a in n.names if a.name.split(".")[0] == "nmtkit"]
            elif isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] in ("import_module", "__import__"):
                found.append((n.lineno, ast.unparse(n)))
    return found


def test_a_command_imports_its_library_calls_in_its_own_function_and_nowhere_else():
    """A command's module imports what its options need at its top; the library calls that load
    torch or the text libraries are imported in the command's function, where they are made; no
    other function of a command module imports nmtkit."""
    inside = {
        (path.name, what): line
        for path in sorted(COMMANDS.glob("*.py"))
        for line, what in imports_inside_functions(path)
    }
    assert set(inside) == STILL_INSIDE, inside


def test_the_check_finds_an_import_inside_a_function_but_not_in_the_command_s_own(tmp_path):
    text = (
        'from ... import core\n\ndef x():\n    "doc"\n    from ...data import vocab\n    y = 1\n'
        "    from ...train import loop\n\ndef f():\n    from ...core import files\n    import nmtkit.text\n"
    )
    package = write_package(tmp_path, {"cli/commands/x.py": text})
    found = imports_inside_functions(package / "cli" / "commands" / "x.py", package)
    assert [what for _, what in found] == ["nmtkit.core", "nmtkit.text"]


@pytest.mark.parametrize("name", sorted(CLI_COMMANDS))
def test_a_command_s_help_loads_no_heavy_library(name):
    """`nmtkit COMMAND --help` answers in a fraction of a second: it imports the command's module
    alone, and neither torch nor the text libraries (score: sacreBLEU's metrics, numpy)."""
    heavy, commands = loaded(name, "--help")
    assert commands == [name.replace("-", "_")]
    assert set(heavy) <= {"numpy", "sacrebleu"}, heavy


def test_no_module_imports_a_command(edges):
    """A command is imported by the group alone, by name: no command imports another, and no
    other module imports one (shared options live in cli/options.py and its siblings)."""
    commands = {m for m in edges if m.startswith("nmtkit.cli.commands.")}
    assert len(commands) == len(list(COMMANDS.glob("*.py"))) - 1
    assert [(a, b) for a, targets in edges.items() for b in targets if b in commands] == []


def test_modules_stay_within_their_limit():
    modules, _ = sizes(PACKAGE)
    assert [m for m, n in modules.items() if n > MAX_MODULE_LINES] == []


def test_model_names_are_one_list():
    assert tuple(MODELS) == ARCHS


@pytest.mark.parametrize(
    "module",
    [
        "nmtkit.cli",
        "nmtkit.text.pipeline",
        "nmtkit.data.binarized",
        "nmtkit.data.bible",
        "nmtkit.text.preprocess",
        "nmtkit.data.build_vocab",
        "nmtkit.data.binarize",
        "nmtkit.core.plot",
        "nmtkit.evaluate.score",
        "nmtkit.data.manifest",
    ],
)
def test_module_does_not_import_torch(module):
    """The command group (so that --help and completion answer at once), and the text and data
    code (so that preprocessing never pays for torch)."""
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


HEAVY = ("torch", "numpy", "sacremoses", "subword_nmt", "matplotlib", "sacrebleu", "sentencepiece", "yaml")


def loaded(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """The heavy libraries and the command modules a fresh ``nmtkit ARGS`` has imported when it exits."""
    found = f"sorted(m for m in sys.modules if m in {HEAVY!r} or m.startswith('nmtkit.cli.commands.'))"
    code = (
        f"import atexit, sys\natexit.register(lambda: print({found}, file=sys.__stderr__))\n"
        f"from nmtkit.cli import main\nmain({list(args)!r})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120
    )
    assert out.returncode == 0, out.stderr
    names = ast.literal_eval(out.stderr.strip().splitlines()[-1])
    return [m for m in names if m in HEAVY], [m.rsplit(".", 1)[1] for m in names if m not in HEAVY]


def test_the_command_line_loads_no_heavy_library_before_a_command_runs():
    """`nmtkit --help` and the completion of a command's name answer in a fraction of a second
    (timed in make bench): the group lists the commands from its table, and imports none."""
    assert loaded("--help") == ([], [])
    completing = {"_NMTKIT_COMPLETE": "zsh_complete", "COMP_WORDS": "nmtkit s", "COMP_CWORD": "1"}
    assert loaded(env=completing) == ([], [])
    code = f"import sys, nmtkit.cli; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_command_imports_its_own_module_alone_when_asked():
    """`nmtkit score --help` imports score's module, not another command's nor torch; `nmtkit
    translate --help`, translate's module alone."""
    heavy, commands = loaded("score", "--help")
    assert commands == ["score"] and "torch" not in heavy
    assert loaded("translate", "--help") == ([], ["translate"])


def test_no_line_is_longer_than_the_configured_length():
    """ruff's E501 lets a line that ends in a pragma (noqa, type: ignore) run long: this does not."""
    import tomllib

    limit = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["line-length"]
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "bench").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    files += (ROOT / "bin").iterdir()
    long = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in files
        if path.is_file()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > limit
    ]
    assert long == []
