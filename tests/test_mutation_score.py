"""benchmarks/mutation_score.py: the listing of public functions no fast claim calls (read from a traced map)."""
import json

import pytest


def test_public_functions_are_read_from_the_source(benchmark_script):
    mod = benchmark_script("mutation_score")
    found = mod.public_functions()
    exact = found["numerics/exact.py"]
    assert "numerics.exact.softplus" in exact
    assert all(not n.rsplit(".", 1)[-1].startswith("_") for n in exact)
    layer = found["numerics/fenchel_attention.py"]
    assert "numerics.fenchel_attention.FenchelMultiheadAttention.forward" in layer
    assert not any("._ExactAttention" in n or n.endswith("._flat") for n in layer)
    assert set(found) <= {str(p.relative_to(mod.REPO)) for f in mod.MUTABLE for p in (mod.REPO / f).glob("*.py")}


def test_unreached_lists_what_the_map_never_saw(benchmark_script, tmp_path):
    mod = benchmark_script("mutation_score")
    every = mod.public_functions()
    called = [n for names in every.values() for n in names if n != "numerics.exact.softplus"]
    f = tmp_path / "map.json"
    f.write_text(json.dumps({"commit": "x", "reach": {}, "verdicts": {}, "seconds": {},
                             "functions": {n: ["some.claim"] for n in called}}))
    assert mod.unreached(f) == {"numerics/exact.py": ["numerics.exact.softplus"]}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"commit": "x", "reach": {}, "verdicts": {}, "seconds": {}}))
    with pytest.raises(SystemExit, match="traced before the map recorded functions"):
        mod.unreached(old)


def test_wilson_interval(benchmark_script):
    mod = benchmark_script("mutation_score")
    lo, hi = mod.wilson(27, 30)                 # 90%: the textbook 95% Wilson interval is [0.744, 0.965]
    assert lo == pytest.approx(0.7438, abs=1e-3) and hi == pytest.approx(0.9654, abs=1e-3)
    assert mod.wilson(30, 30)[1] == 1.0 and mod.wilson(0, 30)[0] == 0.0
    assert mod.wilson(0, 0) == (0.0, 1.0)


def test_sample_must_be_a_positive_count(benchmark_script, capsys):
    mod = benchmark_script("mutation_score")
    for bad in ("0", "-3", "x"):
        with pytest.raises(SystemExit) as exc:
            mod.main(["run", "numerics/exact.py", "--sample", bad])
        assert exc.value.code == 2
        assert "--sample: must be a whole number >= 1" in capsys.readouterr().err
