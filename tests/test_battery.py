"""The third battery (issue 46): bad or extreme inputs across the subcommands, each answered with one
line and exit code 2, or with an honest answer; nothing silently wrong, nothing lost."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attnlab import cli


def _one_line_exit_2(capsys, argv, *fragments):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("attnlab: error: "), err
    for f in fragments:
        assert f in err, err
    return err


def _instance(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return str(path)


# --------------------------------------------------------------------------- silently wrong: compare fenchel
def _fenchel_instance(seed=2, scale=3.0, alphas=(1e308, 1e12, 1.0)):
    rng = np.random.default_rng(seed)
    T = rng.normal(size=(8, 4))
    u = rng.dirichlet(np.ones(8))
    z = rng.normal(size=4) * scale
    return {"T": T.tolist(), "u": u.tolist(), "z": z.tolist(), "alphas": list(alphas)}


def test_fenchel_huge_alpha_is_not_reported_converged(tmp_path, capsys):
    """At alpha = 1e308 Newton's own flag said converged at |g| = 7 (its rounding floor grows with alpha):
    the row is not converged, and nothing in it is NaN."""
    inst = _instance(tmp_path, "i.json", _fenchel_instance(alphas=(1e308,)))
    assert cli.main(["compare", "fenchel", "--instance", inst, "--no-cvxpy", "--json", "-"]) == 0
    cap = capsys.readouterr()
    (row,) = json.loads(cap.out)
    assert row["newton_converged"] is False
    assert "did not converge" in cap.err
    for k, v in row.items():
        assert not (isinstance(v, float) and not math.isfinite(v)), (k, v)


def test_fenchel_overflow_gives_null_not_nan(tmp_path, capsys):
    inst = _instance(tmp_path, "i.json", _fenchel_instance(seed=0, scale=1.0, alphas=(1e308, 1e200)))
    assert cli.main(["compare", "fenchel", "--instance", inst, "--no-cvxpy", "--json", "-"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    rows = json.loads(text)
    assert all(r["newton_converged"] is False for r in rows)
    assert rows[0]["rel_dev"] is None                  # was 0.0 (NaN > 0 is False)


def test_fenchel_reports_a_scale_free_error(tmp_path, capsys):
    """At alpha = 1e12 the gradient norm is the logits' rounding noise (~1e-3) while h is right to
    ~1e-15: the row carries the scale-free estimate newton_rel_error, which says so."""
    from attnlab.numerics import entropic_dual as ed

    inst = _fenchel_instance(seed=0, scale=1.0, alphas=(1e12,))
    path = _instance(tmp_path, "i.json", inst)
    assert cli.main(["compare", "fenchel", "--instance", path, "--no-cvxpy", "--json", "-"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["newton_grad_norm"] > 1e-5
    assert row["newton_converged"] and row["newton_rel_error"] < 1e-13
    T, u, z = (np.asarray(inst[k]) for k in ("T", "u", "z"))
    h_lim = ed.project_onto_hull(T, u @ T + z)         # within ~1e-12 of h* at alpha = 1e12
    assert np.linalg.norm(np.subtract(row["h_newton"], h_lim)) < 1e-11


def test_fenchel_help_states_cvxpy_accuracy_honestly(capsys):
    with pytest.raises(SystemExit):
        cli.main(["compare", "fenchel", "--help"])
    out = capsys.readouterr().out
    assert "~1e-8" not in out and "1e-6" in out


def test_fenchel_negative_seed(capsys):
    _one_line_exit_2(capsys, ["compare", "fenchel", "--seed", "-1"], "--seed")
