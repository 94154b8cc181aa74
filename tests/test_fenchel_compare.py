"""Unit tests of `attnlab compare fenchel` (attnlab.theory.fenchel.compare)."""
import json

import numpy as np
import pytest

from attnlab import cli
from attnlab.numerics import entropic_dual as ed
from attnlab.theory.fenchel import compare as fc


def _cli(*args):
    return cli.main(["compare", "fenchel", *args])


def test_default_instance_json(capsys):
    assert _cli("--seed", "3", "--json", "-") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["alpha"] for r in rows] == list(fc.DEFAULT_ALPHAS)
    keys = {"alpha", "h_exact", "cvxpy_status", "cvxpy_kkt_residual", "h_newton", "newton_iterations",
            "newton_grad_norm", "newton_rel_error", "lambda_rel_error", "newton_converged", "h_approx", "h_refined", "h_limit", "lambda_star",
            "err_approx", "err_refined", "err_limit", "rel_dev", "tv"}
    assert all(set(r) == keys for r in rows)
    for r in rows:
        assert np.linalg.norm(np.subtract(r["h_exact"], r["h_newton"])) < 1e-6   # cvxpy vs Newton
        assert r["newton_converged"] and r["newton_grad_norm"] < 1e-12
        assert 0 <= r["tv"] <= 1
    # the approximation improves as alpha decreases
    assert rows[-1]["err_approx"] < rows[0]["err_approx"]


def test_instance_file(tmp_path, capsys):
    f = tmp_path / "inst.json"
    f.write_text(json.dumps({"T": [[1, 0], [0, 1], [-1, -1]], "u": [0.2, 0.3, 0.5], "z": [0.5, -0.2],
                             "alphas": [1, 0.1]}))
    assert _cli("--instance", str(f)) == 0
    out = capsys.readouterr().out
    assert "n = 3 templates in R^2" in out and "err_approx" in out


@pytest.mark.parametrize("inst,frag", [
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.6], "z": [1, 1], "alphas": [1]}, "u must be a probability vector"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1, 1], "alphas": [1]}, "z must have length 2"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [1, -2]}, "alphas[1]"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1]}, "lacks key(s) alphas"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [True]}, "alphas[0] must be a number; got true"),
    ({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": ["1.5"]}, 'alphas[0] must be a number; got "1.5"'),
    ({"T": [[], []], "u": [0.5, 0.5], "z": [], "alphas": [1]}, "at least one row and one column"),
    ({"T": [[1, 0], [0]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [1]}, "T is ragged"),
    ({"T": [[1, "a"], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [1]}, "T[0][1] must be a number"),
])
def test_invalid_instance_exit_2(tmp_path, capsys, inst, frag):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(inst))
    assert _cli("--instance", str(f)) == 2
    err = capsys.readouterr().err
    assert frag in err and len(err.strip().splitlines()) == 1, err


def test_unknown_keys_refused(tmp_path, capsys):
    """A misspelt key ("alpha" for "alphas") was ignored with a warning (issue 46: refused)."""
    f = tmp_path / "inst.json"
    f.write_text(json.dumps({"T": [[1, 0], [0, 1]], "u": [0.5, 0.5], "z": [1, 1], "alphas": [1], "alpha": 3}))
    assert _cli("--instance", str(f), "--json", "-") == 2
    assert "unknown key(s) alpha;" in capsys.readouterr().err


def test_size_guard_refuses_then_allows(tmp_path, capsys, monkeypatch):
    f = tmp_path / "big.json"
    rng = np.random.default_rng(0)
    n, d = 400, 3
    f.write_text(json.dumps({"T": rng.normal(size=(n, d)).tolist(), "u": (np.ones(n) / n).tolist(),
                             "z": [0.1, 0.2, 0.3], "alphas": [1]}))
    monkeypatch.setattr(fc, "LARGE_SECONDS", 1e-3)
    assert _cli("--instance", str(f)) == 2
    err = capsys.readouterr().err
    assert "--allow-large" in err and len(err.strip().splitlines()) == 1
    assert _cli("--instance", str(f), "--no-cvxpy", "--json", "-") == 0
    assert json.loads(capsys.readouterr().out)[0]["h_exact"] is None


def test_unwritable_json_refused_before_work(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    assert _cli("--json", str(tmp_path / "a-file" / "out.json")) == 2
    assert "--json" in capsys.readouterr().err


def test_cvxpy_failure_at_one_alpha_gives_null_not_abort(monkeypatch):
    real = ed.solve_primal_cvxpy

    def flaky(T, u, z, alpha, **kw):
        if alpha == 2.0:
            raise ed.SolverError("cvxpy primal (3): no answer (CLARABEL: infeasible_inaccurate)")
        return real(T, u, z, alpha, **kw)

    monkeypatch.setattr(ed, "solve_primal_cvxpy", flaky)
    T, u, z, alphas = fc.random_instance(0)
    rows = fc.compare(T, u, z, [4.0, 2.0, 1.0])
    assert [r["h_exact"] is None for r in rows] == [False, True, False]
    assert "infeasible_inaccurate" in rows[1]["cvxpy_status"]
    assert all(r["newton_converged"] for r in rows)


def test_large_alpha_tends_to_the_projection_onto_the_hull():
    """alpha -> infinity: h-hat -> the projection of mu + z onto conv{t_i}, at the rate 1/alpha where the
    projection lies inside an edge; Newton converges up to alpha = 1e13."""
    T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    u = np.array([0.2, 0.3, 0.5])
    z = np.array([1.0, 1.0]) - u @ T                      # mu + z = (1, 1): projection (1/2, 1/2)
    rows = fc.compare(T, u, z, [1e2, 1e4, 1e6, 1e10, 1e12, 1e13], cvxpy=False)
    assert all(r["newton_converged"] for r in rows)
    np.testing.assert_allclose(rows[0]["h_limit"], [0.5, 0.5], atol=1e-9)
    errs = [r["err_limit"] for r in rows]
    assert 50 < errs[0] / errs[1] < 200 and 50 < errs[1] / errs[2] < 200     # ~1/alpha
    assert max(errs[3:]) < 1e-8


def test_newton_reports_when_it_cannot_converge():
    rng = np.random.default_rng(0)
    T = rng.normal(size=(10, 4))
    u = rng.dirichlet(np.ones(10))
    z = rng.normal(size=4) * 3
    lam, info = ed.solve_dual_newton(T, u, z, 1e14, return_info=True)
    assert not info["converged"] and info["grad_norm"] > 1e-3
    lam, info = ed.solve_dual_newton(T, u, z, 1e14, max_iter=1, return_info=True)
    assert info["iterations"] == 1 and not info["converged"]


@pytest.mark.parametrize("scale", [1e-5, 1e-7, 1e-13, 1e13])
def test_instances_far_from_unit_scale(scale):
    """T and z of order 1e-13: Newton's absolute tolerance (1e-12 on the gradient, which is z at the start) stopped
    at lambda = 0, reported converged (h_newton = mu + z, rel_dev null); the projection onto the hull (cvxpy,
    absolute tolerances) came back half its size at 1e-7.  Both now solve at unit scale: lambda* is (13)'s
    alpha z / (1 + alpha s^2/4) to O(s^4), h = mu + z - lambda*, and the projection of mu + z = 1.5 s onto [0, s]
    is s."""
    T, u, z = np.array([[0.0], [scale]]), np.array([0.5, 0.5]), np.array([scale])
    (row,) = fc.compare(T, u, z, [1.0], cvxpy=False, limit=True)
    assert row["newton_converged"]
    if scale < 1:     # alpha Sigma = s^2/4 is small: the refined approximation (13) is exact to O(s^4)
        lam13 = ed.lambda_refined(T, u, z, 1.0)[0]
        assert abs(row["lambda_star"][0] - lam13) <= 1e-12 * scale
        assert abs(row["h_newton"][0] - (1.5 * scale - lam13)) <= 1e-12 * scale
    assert abs(row["h_limit"][0] - scale) <= 1e-9 * scale
    lam, info = ed.solve_dual_newton(T, u, z, 1.0, return_info=True)
    ref, _ = ed.solve_dual_newton(T / scale, u, z / scale, scale ** 2, return_info=True)
    assert info["converged"] and abs(lam[0] - ref[0] / scale) <= 1e-12 * abs(ref[0] / scale)


@pytest.mark.parametrize("scale, alpha", [(1e-200, 1.0), (1e-170, 1.0), (1e-100, 1e-130), (1e-150, 1.0)])
def test_templates_so_small_that_the_scaled_alpha_underflows(scale, alpha, monkeypatch):
    """|T| = 1e-200 at alpha = 1: the unit-scale problem's alpha s^2 underflows to 0, the rescaling was skipped, and
    Newton's absolute tol stopped at lambda = 0: h_newton = b (wrong at its own scale), reported converged with
    newton_rel_error 0 (relative to max(1, |b|): absolute), and err_limit 0 for an h_limit 7e-201 away (the norm's
    squares underflowed).  There nu* = z to within alpha |T|^2 |z| (below 1e-290 of it): h* = mu, lambda* = alpha z
    (the closed form of an instance where alpha Sigma is nothing in float64; at 1e-150 the rescaled solve runs)."""
    T = np.array([[1.0, 0.0], [0.0, 1.0]]) * scale
    u, z = np.array([0.5, 0.5]), np.array([1.0, 0.0]) * scale
    mu = u @ T
    sol = ed.solve(T, u, z, alpha)
    assert sol["info"]["converged"]
    assert np.abs(sol["h"] - mu).max() <= 1e-15 * scale
    assert np.abs(sol["lam"] - alpha * z).max() <= 1e-15 * alpha * scale
    (row,) = fc.compare(T, u, z, [alpha], cvxpy=False, limit=True)
    assert row["newton_converged"] and np.abs(np.subtract(row["h_newton"], mu)).max() <= 1e-15 * scale
    # |h - h_limit| at its own scale (h_limit, the projection of b onto the segment [t_1, t_2], is (s, 0) to the
    # QP's accuracy), not 0
    assert row["err_limit"] == pytest.approx(float(np.linalg.norm((np.array(row["h_limit"]) - mu) / scale)) * scale,
                                             rel=1e-12) and row["err_limit"] > 0.1 * scale
    # the row's error estimate can fail: a solver that answers h = b (the old one) is not converged
    real = ed.solve
    monkeypatch.setattr(ed, "solve", lambda T, u, z, a, **k: dict(real(T, u, z, a, **k), h=u @ T + z,
                                                                   lam=np.zeros_like(z)))
    (bad,) = fc.compare(T, u, z, [alpha], cvxpy=False, limit=False)
    assert not bad["newton_converged"] and bad["newton_rel_error"] > 0.1


def test_z_below_the_rounding_of_mu_is_not_called_converged(capsys, tmp_path):
    """T of order 1, z ~ 1e-13: lambda* cannot be resolved (z is lost in the rounding of mu + z) and Newton's
    absolute test stops at lambda = 0: the row is not converged (lambda_rel_error says why) and the command warns
    that rel_dev and tv are not to be trusted; rel_dev was null and tv 1.1e-13 against 5.6e-14, with no word."""
    T, u, z, _ = fc.random_instance(0)
    f = tmp_path / "inst.json"
    f.write_text(json.dumps({"T": np.asarray(T).tolist(), "u": np.asarray(u).tolist(),
                             "z": (np.asarray(z) * 1e-13).tolist(), "alphas": [1.0]}))
    assert _cli("--instance", str(f), "--no-cvxpy", "--json", "-") == 0
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    assert not row["newton_converged"] and row["lambda_rel_error"] is None         # infinite: lambda = 0
    assert "rel_dev and tv are not to be trusted" in captured.err
