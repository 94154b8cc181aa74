"""Suite-wide: the header says how many claims tests/test_claims.py judges on the records of the last
`attnlab verify` of this tree (attnlab.verdict_cache) rather than by running them; the `benchmark_script`
fixture loads a script of benchmarks/ as a module."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def pytest_report_header(config):
    from attnlab import catalog, verdict_cache

    kept = verdict_cache.load() or {}
    n = sum(c.id in kept for c in catalog.all_claims())
    if not n:
        return "claims: each run here (no attnlab verify of this tree and environment kept)"
    return (f"claims: {n} judged on the records of the last attnlab verify of this tree and environment "
            f"(ATTNLAB_RUN_CLAIMS=1 runs them all)")


@pytest.fixture
def benchmark_script(monkeypatch):
    """load(name): benchmarks/<name>.py as a module, registered in sys.modules for this test only (dataclasses
    look their module up there)."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, mod)
        spec.loader.exec_module(mod)
        return mod
    return load
