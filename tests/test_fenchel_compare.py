"""Unit tests of `attnlab compare fenchel` (attnlab.theory.fenchel.compare)."""
import json

import numpy as np
import pytest

from attnlab.theory.fenchel import compare as fc


def test_default_instance_json(capsys):
    assert fc.main(["--seed", "3", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["alpha"] for r in rows] == list(fc.DEFAULT_ALPHAS)
    keys = {"alpha", "h_exact", "h_newton", "h_approx", "h_refined", "lambda_star", "err_approx",
            "err_refined", "rel_dev", "tv"}
    assert all(set(r) == keys for r in rows)
    for r in rows:
        assert np.linalg.norm(np.subtract(r["h_exact"], r["h_newton"])) < 1e-4   # cvxpy vs Newton
        assert 0 <= r["tv"] <= 1
    # the approximation improves as alpha decreases
    assert rows[-1]["err_approx"] < rows[0]["err_approx"]


def test_instance_file(tmp_path, capsys):
    f = tmp_path / "inst.json"
    f.write_text(json.dumps({"T": [[1, 0], [0, 1], [-1, -1]], "u": [0.2, 0.3, 0.5], "z": [0.5, -0.2],
                             "alphas": [1, 0.1]}))
    assert fc.main(["--instance", str(f)]) == 0
    out = capsys.readouterr().out
    assert "n = 3 templates in R^2" in out and "err_approx" in out


@pytest.mark.parametrize("inst,frag", [
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.6], "z": [1, 1], "alphas": [1]}, "u must be a probability vector"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1, 1], "alphas": [1]}, "z must have length 2"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [1, -2]}, "alphas[1]"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1]}, "lacks key(s) alphas"),
])
def test_invalid_instance_exit_2(tmp_path, capsys, inst, frag):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(inst))
    assert fc.main(["--instance", str(f)]) == 2
    err = capsys.readouterr().err
    assert frag in err and len(err.strip().splitlines()) == 1
