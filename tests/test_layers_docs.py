"""attnlab.layers is documented like torch: every public layer has Args / Shape / Returns / Example and
the paper's equation, forward is documented, the examples run (doctest), and the API reference builds
from the docstrings (mkdocs build --strict, when the `docs` extra is installed)."""
from __future__ import annotations

import doctest
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab import layers

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = [layers.fenchel_attention, layers.continuous_attention, layers.efa_attention,
          layers.FenchelMultiheadAttention, layers.ContinuousMultiheadAttention, layers.EFAMultiheadAttention]


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_public_layers_have_torch_style_sections_and_the_equation(obj):
    doc = obj.__doc__
    sections = ("Args:", "Shape:", "Example:") if isinstance(obj, type) else ("Args:", "Shape:", "Returns:", "Example:")
    for section in sections:
        assert f"\n    {section}\n" in doc or f"\n{section}\n" in doc, (obj.__name__, section)
    assert "Eq." in doc
    if isinstance(obj, type):
        fwd = obj.forward.__doc__
        assert fwd and "Args:" in fwd and "Returns:" in fwd, obj.__name__
        for arg in ("key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal"):
            assert arg in fwd, (obj.__name__, arg)


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_docstring_examples_run(obj):
    import torch

    torch.manual_seed(0)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(obj, obj.__name__, globs={})
    assert tests and tests[0].examples
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
                    reason="mkdocs, mkdocs-material, mkdocstrings[python] (the test and docs extras) are not installed")
def test_api_reference_builds_strict(tmp_path):
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    cmd = [exe] if exe else [sys.executable, "-m", "mkdocs"]
    r = subprocess.run([*cmd, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    page = (tmp_path / "site" / "layers" / "index.html").read_text()
    for name in ("fenchel_attention", "continuous_attention", "efa_attention", "FenchelMultiheadAttention",
                 "ContinuousMultiheadAttention", "EFAMultiheadAttention", "forward"):
        assert name in page, name
