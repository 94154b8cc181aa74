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


# --------------------------------------------------------------------------- silently wrong: converge
def test_converge_unresolvable_basis_bandwidth_refused(tmp_path, capsys):
    """basis_bandwidth 1e300 answered c_ref = 1.1999 with 'estimated error 2.4e-101' (true ~1e-150)."""
    inst = _instance(tmp_path, "i.json", {"basis_bandwidth": 1e300})
    _one_line_exit_2(capsys, ["converge", "--instance", inst], "basis_bandwidth", "no reference")


def test_converge_unresolvable_bandwidth_refused(tmp_path, capsys):
    inst = _instance(tmp_path, "i.json", {"bandwidth": 1e200, "domain": [0, 1], "grids": [3, 5], "base": "uniform"})
    _one_line_exit_2(capsys, ["converge", "--instance", inst], "bandwidth")


_HUGE_Z = {"gamma": [590.0], "inducing": [0.0], "bandwidth": 1.0, "B": [[1.0]], "basis_centers": [0.0],
           "basis_bandwidth": 1.0, "base": "uniform", "domain": [-1, 1], "grids": [5, 9, 17]}


def test_converge_text_keeps_the_exponent_and_no_false_precision(tmp_path, capsys):
    """Z ~ 1e256: the text cut the reference to 25 characters (the exponent dropped), and the relative error
    was stated as ~1e-256, finer than 50 digits know."""
    import mpmath as mp

    inst = _instance(tmp_path, "i.json", _HUGE_Z)
    assert cli.main(["converge", "--instance", inst, "--json", "-"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["ref_error_estimate"] >= 1e-50
    assert cli.main(["converge", "--instance", inst]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "Z_ref =" in x)
    shown = mp.mpf(line.split("=", 1)[1].strip())
    assert abs(shown / mp.mpf(res["Z_ref"]) - 1) < 1e-15, line


def test_converge_text_mid_range_z_not_cut(tmp_path, capsys):
    import mpmath as mp

    inst = _instance(tmp_path, "i.json", dict(_HUGE_Z, gamma=[70.0]))          # Z ~ 1e30
    assert cli.main(["converge", "--instance", inst, "--json", "-"]) == 0
    ref = mp.mpf(json.loads(capsys.readouterr().out)["Z_ref"])
    assert cli.main(["converge", "--instance", inst]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "Z_ref =" in x)
    assert abs(mp.mpf(line.split("=", 1)[1].strip()) / ref - 1) < 1e-15, line
