"""Imports flow one way: text and data code never pull in torch or the CLI."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["nmtkit.text.pipeline", "nmtkit.data.binarized", "nmtkit.data.bible",
                                    "nmtkit.preprocess", "nmtkit.build_vocab", "nmtkit.binarize", "nmtkit.plot",
                                    "nmtkit.score"])
def test_module_does_not_import_torch_or_cli(module):
    code = (f"import sys, {module}; bad = [m for m in ('torch', 'nmtkit.cli') if m in sys.modules]; "
            f"print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
