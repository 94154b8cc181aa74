"""The example a user copies runs, trains, and the notebook holds the same code as the script."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_example_script_trains_both_layers():
    """A few steps of Adam reduce the validation MSE; the run is its seed's whatever the process drew before
    (the layers were built before the seed was set: after other tests in the process, the Fenchel layer's
    validation MSE went from 0.093 up to 0.095)."""
    import torch

    mod = runpy.run_path(str(ROOT / "examples" / "attention_layers.py"))
    res = mod["main"](["--steps", "40"])
    for name in ("fenchel", "kernel_sparsemax"):
        first, last = res[name]
        assert last < first, name
    torch.manual_seed(12345)
    torch.randn(1000)                            # another state of the global generator
    assert mod["main"](["--steps", "40"]) == res


def test_notebook_is_the_script():
    nb = json.loads((ROOT / "examples" / "attention_layers.ipynb").read_text())
    code = "".join(nb["cells"][1]["source"])
    script = (ROOT / "examples" / "attention_layers.py").read_text()
    assert code.strip() in script
    assert nb["cells"][2]["source"][0].startswith("results = main(")


def test_example_gives_the_callers_threads_and_generator_back():
    """Run in a notebook, the example left the kernel at one thread and its global generator reseeded."""
    import torch

    mod = runpy.run_path(str(ROOT / "examples" / "attention_layers.py"))
    threads = torch.get_num_threads()
    torch.manual_seed(7)
    state = torch.random.get_rng_state()
    try:
        torch.set_num_threads(2)
        mod["main"](["--steps", "2"])
        assert torch.get_num_threads() == 2
        assert torch.equal(torch.random.get_rng_state(), state)
    finally:
        torch.set_num_threads(threads)
