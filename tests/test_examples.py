"""The example a user copies runs, trains, and the notebook holds the same code as the script."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_example_script_trains_both_layers():
    mod = runpy.run_path(str(ROOT / "examples" / "attention_layers.py"))
    res = mod["main"](["--steps", "40"])
    for name, (first, last) in res.items():
        assert last < first, name                 # a few steps of Adam reduce the validation MSE


def test_notebook_is_the_script():
    nb = json.loads((ROOT / "examples" / "attention_layers.ipynb").read_text())
    code = "".join(nb["cells"][1]["source"])
    script = (ROOT / "examples" / "attention_layers.py").read_text()
    assert code.strip() in script
    assert nb["cells"][2]["source"][0].startswith("results = main(")
