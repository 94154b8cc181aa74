"""The verified (Arb) reference of `attnlab compare kernel-quadrature` against independent references (scipy
quad with breakpoints in float64; closed forms), at narrow kernels and on wide domains, and its refusal
to return a number its own error estimate does not support."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from attnlab.numerics.mp_reference import InaccurateReference, mp_context_reference, mp_integrate


def _scipy_context(g, s, bw, B, c, bb, base, a, b):
    from scipy.integrate import quad

    def u(t):
        f = sum(gi * np.exp(-bw * (t - si) ** 2) for gi, si in zip(g, s))
        q0 = np.exp(-t * t / 2) / math.sqrt(2 * math.pi) if base == "normal" else 1.0
        return q0 * np.exp(f)

    w = 1 / math.sqrt(bw)
    pts = sorted({x for si in list(s) + list(c) for k in (0, 1, 2, 4, 8) for x in (si - k * w, si + k * w)
                  if a < x < b} | ({0.0} if a < 0 < b else set()))
    edges = [a] + pts + [b]

    def integral(fn):
        return sum(quad(fn, lo, hi, limit=200, epsabs=0, epsrel=1e-13)[0] for lo, hi in zip(edges[:-1], edges[1:]))

    Z = integral(u)
    P = [integral(lambda t, cc=cc: u(t) * np.exp(-bb * (t - cc) ** 2)) for cc in c]
    return Z, [sum(Bi * p for Bi, p in zip(row, P)) / Z for row in B]


CASES = [(bw, dom, base) for bw in (1.0, 1e2, 1e4, 1e6) for dom in ((0.0, 1.0), (-100.0, 100.0), "R")
         for base in ("normal",)] + [(10.0, (-100.0, 100.0), "uniform")]
FAST = {(1e4, (0.0, 1.0), "normal"), (1e6, "R", "normal"), (10.0, (-100.0, 100.0), "uniform")}


@pytest.mark.parametrize("bw,dom,base", [pytest.param(*c, marks=() if c in FAST else pytest.mark.slow)
                                         for c in CASES])
def test_reference_agrees_with_scipy(bw, dom, base):
    g, s, B, c = [1.5, -2.0, 1.0], [0.2, 0.5, 0.8], [[1.0, -0.5]], [0.3, 0.7]
    a, b = (-17.0, 17.0) if dom == "R" else dom
    Z, ctx, _, est = mp_context_reference(g, s, bw, B, c, bw, base=base, domain=None if dom == "R" else dom,
                                          dps=50, half_width=17.0)
    Zs, cs = _scipy_context(g, s, bw, B, c, bw, base, a, b)
    assert est < 1e-40                                   # what the reference claims, by its own estimate
    assert abs(float(Z) - Zs) <= 1e-13 * abs(Zs)         # scipy's float64 accuracy
    assert abs(float(ctx[0]) - cs[0]) <= 1e-12 * abs(cs[0]) + 1e-16


@pytest.mark.parametrize("bb", [1.0, 1e2, 1e4, 1e6])
def test_reference_against_closed_form(bb):
    """f = 0, normal base on R: Z = 1, int N(t) exp(-bb (t-c)^2) dt = exp(-bb c^2/(1+2bb)) / sqrt(1+2bb)."""
    c = [0.3, -1.1]
    Z, ctx, _, est = mp_context_reference([0.0], [0.0], 1.0, [[1.0, 0.0], [0.0, 1.0]], c, bb, domain=None,
                                          dps=50, half_width=17.0)
    with mp.workdps(50):
        exact = [mp.exp(-bb * mp.mpf(ci) ** 2 / (1 + 2 * bb)) / mp.sqrt(1 + 2 * bb) for ci in c]
        assert abs(Z - 1) < mp.mpf(10) ** -40
        for got, ref in zip(ctx, exact):
            assert abs(got - ref) < mp.mpf(10) ** -40 * abs(ref)
    assert est < 1e-40


def test_refuses_what_its_error_estimate_does_not_support():
    """A kink inside a piece: tanh-sinh converges slowly and says so; with no bisections allowed the
    estimate stays above the claim, and no number is returned.  Split at the kink, it is exact."""
    kink = lambda t: abs(t - mp.mpf("0.3"))   # noqa: E731
    with pytest.raises(InaccurateReference, match="no reference returned"):
        mp_integrate(kink, 0, 1, (), dps=30, max_bisections=0)
    v, e = mp_integrate(kink, 0, 1, (mp.mpf("0.3"),), dps=30, return_error=True)
    with mp.workdps(40):
        assert abs(v - mp.mpf(29) / 100) < mp.mpf(10) ** -28 and e < 1e-20


def test_unnamed_kinks_are_bisected_not_trusted():
    """|sin 13 t| on [0, 2] in pieces of 1/8 (8 kinks no breakpoint names): mpmath's own estimate (digits
    doubling per level) stated 2.5e-11 for an error of 2.2e-7; the value returned must be within the stated
    estimate of the closed form, and that within the claimed 1e-10 relative (or no value at all)."""
    n = int(26 / math.pi)
    with mp.workdps(40):
        exact = (2 * n + 1 - mp.cos(26 - n * mp.pi)) / 13
    try:
        v, e = mp_integrate(lambda t: abs(mp.sin(13 * t)), 0, 2, dps=20, max_piece=mp.mpf(1) / 8, return_error=True)
    except InaccurateReference:
        return
    with mp.workdps(40):
        assert abs(v - exact) <= max(e, mp.mpf(10) ** -25) and abs(v - exact) <= mp.mpf(10) ** -10 * exact


def test_describe_rate_rules():
    from attnlab.numerics.convergence import describe_rate

    h = np.array([1, 0.5, 0.25, 0.125, 0.0625])
    assert describe_rate(h, h ** 2, 1e-13)[0] == "algebraic (slope 2.00)"
    assert describe_rate(h, np.exp(-2 * np.pi / h), 1e-13)[0] == "exponential; at floor from h=0.125"
    hs = np.array([1.0, 0.8, 0.6, 0.5])
    assert describe_rate(hs, np.exp(-3 / hs ** 2), 1e-13)[0] == "super-exponential"
    # one halving from 1e-5 to the floor: no slope is fitted through the floor
    label, slope = describe_rate(h, [1e-5, 4e-16, 4e-16, 3e-16, 4e-16], 1e-13)
    assert label == "at floor from h=0.5" and slope is None
    assert describe_rate(h, [1e-16] * 5, 1e-13, labels=[f"G={g}" for g in range(5)])[0] == "at floor from G=0"


def test_narrow_kernel_claim_fails_with_an_unverified_quadrature(monkeypatch):
    """The claim can fail: with Arb's bounded integration replaced by a fixed three-point Gauss rule per piece
    that states no error (the narrow features between its nodes are missed), it does."""
    from flint import acb, arb

    from attnlab import catalog

    nodes = [(-arb(3 / 5).sqrt(), arb(5) / 9), (arb(0), arb(8) / 9), (arb(3 / 5).sqrt(), arb(5) / 9)]

    def gauss3(fn, a, b, **_):
        mid, half = (a + b) / 2, (b - a) / 2
        v = sum((w * fn(acb(mid + half * x), False) for x, w in nodes), acb(0)) * half
        return acb(v.real.mid(), v.imag.mid())                        # an exact ball: no error stated

    c = catalog.get_claim("kernel.ref.narrow-kernel")
    assert catalog.run_claim(c).verdict == "holds"
    monkeypatch.setattr(acb, "integral", staticmethod(gauss3))
    assert catalog.run_claim(c).verdict == "fails"


@pytest.mark.parametrize("family,alpha,base,domain", [("kernel-softmax", None, "uniform", (-40.0, 40.0)),
                                                      ("kernel-softmax", None, "normal", "R"),
                                                      ("kernel-deformed", 1.5, "normal", (-12.0, 9.0)),
                                                      ("kernel-deformed", 1.3, "uniform", (-12.0, 9.0))])
def test_bounded_far_pieces_change_nothing(monkeypatch, family, alpha, base, domain):
    """Far from a basis centre u psi is below 10^-(dps + 30) of max u: those pieces are bounded (the bound added
    to the radius), not integrated.  Integrated instead, the reference agrees to 45 of its 50 digits, and
    within the errors the two state; bounding saved Arb some integrals."""
    from flint import acb

    from attnlab.numerics import mp_reference as mr

    real, calls = acb.integral, [0]

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(acb, "integral", staticmethod(counted))
    gamma = [1.5, -2.0, 1.0] if family == "kernel-softmax" or alpha == 1.5 else [3.0, -4.0, 2.0]
    args = (gamma, [0.2, 0.5, 0.8], 10.0, [[1.0, -0.5]], [0.3, -3.0], 4.0)
    kw = dict(family=family, alpha=alpha, base=base, domain=domain, dps=50)
    Z, c, _, e = mr.mp_context_reference(*args, **kw)
    bounded = calls[0]
    monkeypatch.setattr(mr, "PSI_SKIP_DIGITS", 10 ** 9)
    calls[0] = 0
    Z0, c0, _, e0 = mr.mp_context_reference(*args, **kw)
    assert calls[0] > bounded
    with mp.workdps(60):
        assert abs(Z - Z0) <= mp.mpf(10) ** -45 * abs(Z0)
        assert abs(c[0] - c0[0]) <= min(mp.mpf(10) ** -45, mp.mpf(e + e0)) * abs(c0[0])


def test_a_context_below_the_floor_is_refused_not_returned_as_zero():
    """A basis centre 15 widths off [0, 1] (psi <= e^-225 there): every piece of its integral is bounded, not
    integrated, so the reference came back c = 0 with an error of 5e-44 (relative to the floor 1e-55, not to c =
    5.7e-100) and `converge` showed the trapezoid's own value as its error.  Refused now; a row of zeros in B is
    c_d = 0 exactly and still given."""
    args = dict(base="uniform", domain=(0.0, 1.0), dps=50)
    with pytest.raises(InaccurateReference, match=r"context component 1: its scale E_p\[\|B\| psi\]"):
        mp_context_reference([1.0], [0.5], 1.0, [[1.0]], [16.0], 1.0, **args)
    with pytest.raises(InaccurateReference, match="context component 2"):
        mp_context_reference([1.0], [0.5], 1.0, [[1.0, 0.0], [0.0, 1.0]], [0.5, 16.0], 1.0, **args)
    Z, c, _, err = mp_context_reference([1.0], [0.5], 1.0, [[1.0], [0.0]], [0.5], 1.0, **args)
    assert c[1] == 0 and c[0] > 0.5 and err < 1e-40


def test_kinks_far_from_the_inducing_points_are_found():
    """gamma = -1e80 at alpha = 2: 1 + f = 0 at |t - 0.5| = sqrt(log 1e80) = 13.57 widths, beyond the 12 widths
    the scan for kinks covered: the reference stayed right (Arb bisects at the kink) but reported no kink.  The
    scan reaches sqrt(log((alpha - 1) sum |gamma|)) + 2 widths now."""
    _, _, kinks, _ = mp_context_reference([-1e80], [0.5], 1.0, [[1.0]], [13.5], 1.0, family="kernel-deformed",
                                          alpha=2.0, base="uniform", domain=(-20.0, 20.0), dps=50)
    root = math.sqrt(math.log(1e80))
    assert len(kinks) == 2 and all(abs(float(k) - x) < 1e-12 for k, x in zip(sorted(kinks), (0.5 - root, 0.5 + root)))
