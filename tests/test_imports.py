"""Imports flow one way (docs/structure.md): a module imports its own stage and the layers below,
never above; no module imports itself back through others; a function-level import of nmtkit
says why; the command line and the text and data code never load torch; no module or function
outgrows its limit."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from nmtkit.models.build import MODELS
from nmtkit.models.config import ARCHS
from nmtkit.recipes.structure import RANK, cycles, graph, sizes, stage_of, upward

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


def test_a_function_level_import_of_nmtkit_says_why():
    silent = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree, lines = ast.parse(text), text.splitlines()
        top = {id(n) for n in tree.body}
        typing_only = {
            id(n)
            for s in tree.body
            if isinstance(s, ast.If) and "TYPE_CHECKING" in ast.unparse(s.test)
            for n in ast.walk(s)
        }
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.ImportFrom)
                and n.level
                and id(n) not in top
                and id(n) not in typing_only
                and "#" not in lines[n.end_lineno - 1]
            ):
                silent.append(f"{path.relative_to(ROOT)}:{n.lineno}")
    assert silent == [], "import at the top, or say on the line why not"


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
    """The command line (so that --help and completion answer at once), and the text and data
    code (so that preprocessing never pays for torch)."""
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_command_line_loads_no_heavy_library_before_a_command_runs():
    """--help and shell completion answer in a fraction of a second (timed in make bench): the
    numerical and text libraries load inside the commands that use them."""
    heavy = ("torch", "numpy", "sacremoses", "subword_nmt", "matplotlib", "sacrebleu", "sentencepiece", "yaml")
    code = f"import sys, nmtkit.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
