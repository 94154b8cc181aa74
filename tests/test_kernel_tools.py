"""Unit tests of the convergence tools, the high-precision references and `attnlab compare kernel-quadrature`."""
import json
import math

import numpy as np
import pytest

from attnlab.cli import call

from attnlab.numerics.convergence import (bernoulli2_periodic, classify_rate, euler_maclaurin_kink_error,
                                  local_orders, loglog_slope, successive_ratios)
from attnlab.numerics.mp_reference import find_sign_changes, mp_integrate, mp_roots
from attnlab.numerics.quadrature import piecewise_gauss_legendre


def test_loglog_slope_and_ratios_on_power_law():
    h = 0.5 ** np.arange(6)
    e = 3.0 * h ** 2.5
    assert abs(loglog_slope(h, e) - 2.5) < 1e-12
    assert np.allclose(successive_ratios(e), 2 ** -2.5)
    assert np.allclose(local_orders(h, e), 2.5)
    assert classify_rate(e) == "algebraic"


def test_classify_rate_exponential_and_general_grids():
    h = np.array([1.0, 0.5, 0.25, 0.125, 0.0625])
    assert classify_rate(np.exp(-2.0 / h)) == "exponential"
    G = np.array([9, 17, 33, 65, 129])
    assert classify_rate(1.0 / (G - 1.0) ** 2, h=1.0 / G) == "algebraic"
    with pytest.raises(ValueError, match="err"):
        classify_rate([1e-3, 0.0, 1e-5])


def test_euler_maclaurin_kink_prediction_simple_ramp():
    # w = max(0, x) e^{-x}: jump of w' at 0 is 1; measured error matches -(h^2/2) J B2~(theta)
    h, x0 = 1e-3, 0.37e-3
    k = np.arange(0, int(60 / h))
    x = x0 + k * h
    err = h * math.fsum(x * np.exp(-x)) - 1.0
    pred = euler_maclaurin_kink_error(h, [0.0], [1.0], x0=x0)
    assert abs(err / pred - 1) < 1e-2
    assert abs(bernoulli2_periodic(0.0) - 1 / 6) < 1e-15
    with pytest.raises(ValueError, match="same length"):
        euler_maclaurin_kink_error(0.1, [0.0, 1.0], [1.0])


def test_roots_and_piecewise_references_agree_with_mpmath():
    import mpmath as mp

    g = lambda x: np.cos(3 * np.asarray(x)) - 0.2
    br = find_sign_changes(g, 0, 3)
    roots = mp_roots(lambda x: mp.cos(3 * x) - mp.mpf("0.2"), br, dps=40)
    with mp.workdps(40):
        a = mp.acos(mp.mpf("0.2"))
        exact = [a / 3, (2 * mp.pi - a) / 3, (2 * mp.pi + a) / 3]
        assert len(roots) == 3 and all(abs(r - e) < mp.mpf(10) ** -35 for r, e in zip(roots, exact))
    f = lambda x: np.maximum(g(x), 0) * np.exp(-np.asarray(x))
    gl = piecewise_gauss_legendre(f, [0.0] + [float(r) for r in roots] + [3.0])
    with mp.workdps(30):
        ref = mp_integrate(lambda x: max(mp.cos(3 * x) - mp.mpf("0.2"), 0) * mp.exp(-x), 0, 3, roots, 30)
    assert abs(gl - float(ref)) < 1e-14


def test_compare_validation_errors(tmp_path, capsys):
    from attnlab.theory.kernel.compare import main

    cases = {"bad_family": {"family": "kernel-x"},
             "bad_alpha": {"family": "kernel-deformed", "alpha": 1.0},
             "uniform_on_R": {"base": "uniform"},
             "shapes": {"gamma": [1.0, 2.0]},
             "B_shape": {"B": [[1.0, 2.0]]},
             "grids_missing": {"domain": [0, 1]},
             "unknown_key": {"gama": [1.0]}}
    for name, inst in cases.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(inst))
        assert call(main, ["--instance", str(p)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "error" in err, (name, err)


RATES = ("super-exponential", "exponential", "algebraic", "at floor")


def test_compare_small_instance_json(tmp_path, capsys):
    from attnlab.theory.kernel.compare import main

    inst = {"family": "kernel-deformed", "alpha": 2, "gamma": [1.5, -2.5, 1.0], "inducing": [0.0, 0.5, 1.0],
            "bandwidth": 20.0, "base": "uniform", "domain": [0, 1], "grids": [17, 33, 65, 129],
            "B": [[1.0, -0.5]], "basis_centers": [0.2, 0.8], "basis_bandwidth": 10.0}
    p = tmp_path / "inst.json"
    p.write_text(json.dumps(inst))
    assert main(["--instance", str(p), "--json", "-"]) == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("Z", "Z_ref", "context", "context_ref", "err_Z", "err_context", "slope", "rate", "floor_from",
                "rate_Z", "slope_Z", "floor_from_Z"):
        assert key in res
    # one value per key: the rate's kind alone (its slope and the grid where the floor starts have their own)
    assert res["rate"] in RATES and res["rate_Z"] in RATES
    assert len(res["Z"]) == 4 and len(res["context"][0]) == 1
    # a kinked integrand on fixed grids: erratic context errors (one lucky grid), but Z's error shows
    # the algebraic rate, so the verdict is algebraic
    assert res["rate_Z"] == "algebraic" and math.isfinite(res["slope"]) and math.isfinite(res["slope_Z"])
    assert 1.5 < loglog_slope(1.0 / np.array(inst["grids"]), res["err_Z"]) < 3.5
    assert len(res["kinks"]) >= 1 and res["err_context"][-1] < 1e-3


def test_attnlab_converge_alias(tmp_path, capsys):
    from attnlab.cli import main as cli_main

    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"family": "kernel-deformed", "alpha": 2.5}))
    assert cli_main(["converge", "--instance", str(p)]) == 2
    assert "alpha must be a number in (1, 2]" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:                       # argparse's --help exits 0
        cli_main(["converge", "--help"])
    assert exc.value.code == 0 and "--instance" in capsys.readouterr().out


@pytest.mark.parametrize("inst,frag", [
    ({"gamma": [400.0, 400.0], "inducing": [0.0, 0.5]}, "beyond float64"),
    ({"family": "kernel-deformed", "alpha": 2, "gamma": [-5.0, -5.0, -5.0], "inducing": [0.0, 0.5, 1.0],
      "bandwidth": 1.0, "B": [[1.0]], "basis_centers": [0.5], "domain": [0, 1], "grids": [11, 21],
      "base": "uniform"}, "support is empty"),
    ({"domain": "R", "steps": [1e6, 0.5]}, "steps must be <="),
    ({"domain": "R", "steps": [0.5, 1e-7]}, "steps must be >="),
    ({"domain": "R", "steps": [0.5, 0.5]}, "steps must be distinct"),
    ({"domain": [0, 1], "grids": [33, 33]}, "grids must be distinct"),
    ({"domain": [0, 1], "grids": [33, 10 ** 8]}, "grids must be <="),
    # narrower than float64 can split (a traceback from the trapezoid's weights)
    ({"domain": [1, 1.0000000000000002], "grids": [5, 9]}, "too narrow for 9 distinct float64 grid points"),
    ({"domain": [0, 5e-324], "grids": [5, 9]}, "too narrow for 9 distinct float64 grid points"),
    # the normal base underflows out there (the message blamed the deformed family's support and said raise gamma)
    ({"domain": [40, 41], "grids": [9, 17]}, "u = q0 exp(f) underflows float64 on every node (the normal base"),
])
def test_compare_bad_instances_one_line(tmp_path, capsys, inst, frag):
    from attnlab.cli import main as cli_main

    p = tmp_path / "inst.json"
    p.write_text(json.dumps(inst))
    assert cli_main(["compare", "kernel-quadrature", "--instance", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert frag in err and len(err.splitlines()) == 1 and err.startswith("attnlab: error: --instance"), err


def test_large_gamma_sum_on_R_has_a_half_width():
    """sum gamma ~ 560: the tail bound no longer underflows into a math domain error."""
    from attnlab.theory.kernel.compare import _half_width, _log_normal_tail, validate

    assert abs(_log_normal_tail(29.9) - math.log(math.erfc(29.9 / math.sqrt(2)))) < 1e-3
    L = _half_width(validate({"gamma": [280.0, 280.0], "inducing": [0.0, 0.5]}))
    assert 35 < L <= 60


def _converge_json(tmp_path, capsys, inst):
    from attnlab.theory.kernel.compare import main

    p = tmp_path / "inst.json"
    p.write_text(json.dumps(inst))
    assert main(["--instance", str(p), "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_converge_rate_does_not_depend_on_the_order_of_the_grids(tmp_path, capsys):
    """The same grids listed coarse-to-fine, fine-to-coarse or shuffled give the same rows (coarse to fine) and
    the same rate: read along the order given, the local orders of an O(h^2) rule were called 'exponential'."""
    base = {"family": "kernel-softmax", "gamma": [1.0, -0.5], "inducing": [0.3, 0.7], "bandwidth": 10.0,
            "base": "uniform", "domain": [0, 1], "B": [[1.0, -0.5]], "basis_centers": [0.2, 0.8],
            "basis_bandwidth": 10.0}
    outs = [_converge_json(tmp_path, capsys, dict(base, grids=g))
            for g in ([9, 17, 33, 65], [65, 33, 17, 9], [17, 65, 9, 33])]
    assert all(o["grids"] == ["G=9", "G=17", "G=33", "G=65"] for o in outs)
    assert {(o["rate"], o["rate_Z"], o["slope"]) for o in outs} == {(outs[0]["rate"], outs[0]["rate_Z"],
                                                                     outs[0]["slope"])}
    assert outs[0]["rate"] == "algebraic"          # the trapezoid on [a, b] without end corrections: O(h^2)
    steps = [_converge_json(tmp_path, capsys, {"steps": s}) for s in ([1, 0.5, 0.25, 0.125], [0.125, 0.25, 1, 0.5])]
    assert steps[0]["grids"] == steps[1]["grids"] and steps[0]["rate"] == steps[1]["rate"] == "exponential"


def test_converge_floor_scales_with_the_context(tmp_path, capsys):
    """B scaled by 1e-20 scales every context error by 1e-20: the verdict is the default instance's, not 'at
    floor' from the first grid (a floor of 1e3 eps max(1, |c|) did that, with 100 % errors at h = 1)."""
    from attnlab.theory.kernel.compare import _default_instance

    ref = _converge_json(tmp_path, capsys, {})
    small = _converge_json(tmp_path, capsys, {"B": [[x * 1e-20 for x in _default_instance()["B"][0]]]})
    assert (small["rate"], small["floor_from"]) == (ref["rate"], ref["floor_from"])
    assert small["points_in_fit"] == ref["points_in_fit"] >= 3
    assert small["float64_floor"] == pytest.approx(ref["float64_floor"] * 1e-20, rel=1e-6)


def test_converge_takes_a_context_that_cancels_to_zero(tmp_path, capsys):
    """An odd integrand (c_1 = 0 exactly) was refused as 'cannot be trusted' (its error relative to |c_1| = 0);
    the reference's error is relative to the context's scale E_p[|B| psi], and the run goes on."""
    res = _converge_json(tmp_path, capsys, {"gamma": [1, 1], "inducing": [-1, 1], "B": [[1, -1], [1, 1]],
                                            "basis_centers": [-1, 1], "steps": [1, 0.5, 0.25, 0.125]})
    assert res["ref_error_estimate"] < 1e-25 and abs(float(res["context_ref"][0])) < 1e-40
    assert res["err_context"][-1] < 1e-6


@pytest.mark.parametrize("change,frag", [
    (dict(gamma=[float("nan"), -0.7, 2.1]), "gamma must be finite"),
    (dict(gamma=[float("inf"), -0.7, 2.1]), "gamma must be finite"),
    (dict(gamma=[1.3, -0.7, 2.1, 5.0]), "gamma and inducing must have the same length"),
    (dict(B=[[1.0, 2.0, 3.0]]), "B must have one column per basis centre"),
    (dict(basis_centers=[float("nan"), 0.7]), "basis_centers must be finite"),
    (dict(domain=(1.0, 0.0)), "domain must be"),
    (dict(bandwidth=float("nan")), "bandwidth must be a finite number > 0"),
])
def test_mp_context_reference_refuses_what_it_cannot_mean(change, frag):
    """A NaN or inf gamma became 0 in Arb's balls (Z as for gamma = 0, 'error 1e-15'), zip dropped the extra
    entries of a longer list, and a reversed domain was integrated forwards: each now a ValueError naming it."""
    from attnlab.numerics.mp_reference import mp_context_reference

    kw = dict(gamma=[1.3, -0.7, 2.1], inducing=[0.2, 0.5, 0.8], bandwidth=10.0, B=[[1.0, -0.5]],
              basis_centers=[0.3, 0.7], basis_bandwidth=20.0, domain=(0.0, 1.0), base="uniform", dps=15)
    kw.update(change)
    with pytest.raises(ValueError, match=frag.replace("(", r"\(")):
        mp_context_reference(**kw)
