"""Claim of "Kernel Multimodal Continuous Attention" (`kernel.*`) on the trapezoid rule itself (App. E):
the rule the paper analyses -- I_h = h sum_k w(x0 + kh) on R (Thm E.1) and the composite rule on a grid of
[a, b] (App. E.4; Algorithm 1 computes every integral with it) -- is what numerics.quadrature computes,
on uniform and on non-uniform grids (irregularly sampled series), and the float64 reference the
convergence claims use (piecewise Gauss-Legendre) is as accurate as they assume.

Oracles: exact rational arithmetic (fractions.Fraction on the float64 nodes, so no rounding at all in the
oracle) for the rule, its weights and its nodes; mpmath (erfc, split quadrature at 30 digits) for the tail
width and the reference.  Allowances are float64 rounding bounds: a few ulps per weight or node, (G + 4) eps
of sum |w y| for a sum of G terms.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from attnlab.catalog import claim, holds_if

EPS = np.finfo(float).eps


def _exact_weights(t):
    """Composite trapezoid weights of the grid t (floats), as exact Fractions."""
    x = [Fraction(float(v)) for v in t]
    w = [Fraction(0)] * len(x)
    for g in range(len(x) - 1):
        d = (x[g + 1] - x[g]) / 2
        w[g] += d
        w[g + 1] += d
    return w


def _grids():
    """Strictly increasing float64 grids: G = 2 and 3, random non-uniform ones (spacings over six decades),
    a graded grid (t = s^3 on [0, 1]), a uniform one on [-3, 5]."""
    rng = np.random.default_rng(0)
    grids = {"G=2": np.array([-0.25, 1.5]), "G=3": np.array([0.0, 1e-6, 1.0])}
    for G in (7, 50):
        d = 10.0 ** rng.uniform(-6, 0, G - 1)
        grids[f"random G={G}"] = np.concatenate([[-1.3], -1.3 + np.cumsum(d)])
    grids["graded s^3"] = np.linspace(0.0, 1.0, 41) ** 3
    grids["uniform [-3, 5]"] = np.linspace(-3.0, 5.0, 33)
    return grids


def check_trapezoid_rule():
    import mpmath as mp
    import torch

    from attnlab.numerics import quadrature as q

    rows, worst = {}, {}

    def note(key, dev):
        worst[key] = max(worst.get(key, 0.0), float(dev))

    rng = np.random.default_rng(1)
    for name, t in _grids().items():
        tt = torch.as_tensor(t)
        G = len(t)
        # (a) the weights, each to 4 ulps of its exact value
        w_exact = _exact_weights(t)
        w_lib = q.trapezoid_weights(tt).numpy()
        note("weights", max(abs(Fraction(float(a)) - b) / (4 * EPS * abs(b)) for a, b in zip(w_lib, w_exact)))
        # (b) the rule, batched along the last dim [3, G] and along dim 0 [G, 2]
        y = rng.normal(size=(3, G)) * 10.0 ** rng.uniform(-3, 3, size=(3, G))
        for arr, dim in ((y, -1), (y[:2].T.copy(), 0)):
            lib = q.trapezoid(torch.as_tensor(arr), tt, dim=dim).numpy()
            cols = arr if dim == -1 else arr.T
            for v, row in zip(np.atleast_1d(lib), cols):
                exact = sum(wg * Fraction(float(yg)) for wg, yg in zip(w_exact, row))
                scale = sum(wg * abs(Fraction(float(yg))) for wg, yg in zip(w_exact, row))
                note("rule", abs(Fraction(float(v)) - exact) / ((G + 4) * EPS * scale))
        rows[name] = dict(G=G, min_spacing=float(np.diff(t).min()), max_spacing=float(np.diff(t).max()))
    # (c) uniform_grid: both ends exact, every node within 4 ulps of a + k (b - a)/(G - 1)
    for a, b, G in ((0.0, 1.0, 2), (0.0, 1.0, 257), (-3.0, 5.0, 33), (-1e3, 1e-3, 101), (0.1, 0.7, 7)):
        t = q.uniform_grid(a, b, G).numpy()
        fa, fb = Fraction(a), Fraction(b)
        dev = max(abs(Fraction(float(x)) - (fa + k * (fb - fa) / (G - 1))) for k, x in enumerate(t))
        note("uniform_grid", dev / (4 * EPS * max(abs(a), abs(b))) + (0 if (t[0] == a and t[-1] == b and len(t) == G)
                                                                        else math.inf))
        # trapezoid_fn: the composite rule of fn on that grid
        fn = lambda x: torch.sin(3 * x) + x * x          # noqa: E731
        lib = float(q.trapezoid_fn(fn, a, b, G))
        vals = [Fraction(float(v)) for v in fn(torch.as_tensor(t)).numpy()]
        wx = _exact_weights(t)
        exact = sum(wg * v for wg, v in zip(wx, vals))
        scale = sum(wg * abs(v) for wg, v in zip(wx, vals))
        note("trapezoid_fn", abs(Fraction(lib) - exact) / ((G + 16) * EPS * scale))
    # (d) real_line_grid: exactly the k with |(k + shift) h| <= L, nodes center + (k + shift) h; and
    # real_line_trapezoid = h sum_k fn(node) (equal weights: the rule on R, Thm E.1)
    for h, L, c, sh in ((0.25, 3.0, 0.0, 0.0), (0.25, 3.0, 0.0, 0.5), (0.1, 1.0, -0.7, 0.37), (1.0, 1.0, 0.0, 0.0),
                        (0.3, 12.0, 2.5, 0.9), (2.0 ** -4, 8.0, 0.0, 0.0)):
        t = q.real_line_grid(h, L, center=c, shift=sh).numpy()
        fh, fL, fs, fc = Fraction(h), Fraction(L), Fraction(sh), Fraction(c)
        k_lo = math.ceil(-fL / fh - fs)
        k_hi = math.floor(fL / fh - fs)
        ks = range(k_lo, k_hi + 1)
        same = len(t) == len(ks)
        dev = max(abs(Fraction(float(x)) - (fc + (k + fs) * fh)) for k, x in zip(ks, t)) if same else math.inf
        note("real_line_grid", dev / (4 * EPS * (abs(c) + L)))
        fn = lambda x: torch.exp(-(x - 0.3) ** 2) * (1 + x)      # noqa: E731
        lib = float(q.real_line_trapezoid(fn, h, L, center=c, shift=sh))
        vals = [Fraction(float(v)) for v in fn(torch.as_tensor(t)).numpy()]
        exact = fh * sum(vals)
        scale = fh * sum(abs(v) for v in vals)
        note("real_line_trapezoid", abs(Fraction(lib) - exact) / ((len(t) + 16) * EPS * scale))
    # (e) normal_tail_half_width: the first L in 1, 1.25, 1.5, ... with 2 P(N(0, 1) > L) < eps, times scale
    with mp.workdps(30):
        for eps, scale in ((1e-3, 1.0), (1e-16, 1.0), (1e-40, 1.0), (1e-40, 2.5), (1e-64, 0.3)):
            L = mp.mpf(1)
            while mp.erfc(L / mp.sqrt(2)) >= eps:
                L += mp.mpf(1) / 4
            lib = q.normal_tail_half_width(eps, scale)
            note("normal_tail_half_width", 0 if lib == float(L) * scale else math.inf)
            rows[f"tail eps={eps:g},scale={scale:g}"] = lib
            if scale == 1.0:                              # the default scale is the standard normal's
                note("normal_tail_half_width", 0 if q.normal_tail_half_width(eps) == float(L) else math.inf)
            if eps == 1e-40 and scale == 1.0:             # and the default eps is 1e-40
                note("normal_tail_half_width", 0 if q.normal_tail_half_width() == float(L) else math.inf)
    # a grid of one node (or none, or a fraction of one) has no spacing: refused, naming G and ">= 2"
    from attnlab.theory._inputs import refused as refused_with
    note("uniform_grid", 0 if all(refused_with(lambda G_=G_: q.uniform_grid(0.0, 1.0, G_), "G (number of grid points)",
                                               "integer >= 2") for G_ in (1, 0, 2.5)) else math.inf)
    refused = 0
    for eps in (0.0, 1.0, -1e-3, 2.0, float("nan")):                 # eps outside (0, 1): refused, naming eps
        try:
            q.normal_tail_half_width(eps)
        except ValueError as exc:
            refused += "eps" in str(exc)
    note("normal_tail_half_width", 0 if refused == 5 else math.inf)
    refused = 0
    for h in (0.0, -0.5, float("inf")):                              # a grid spacing that is not > 0: refused, named
        try:
            q.real_line_grid(h, 3.0)
        except ValueError as exc:
            refused += "h (grid spacing)" in str(exc)
    for L_ in (0.0, -0.5, float("nan")):                              # a half width that is not > 0: refused, named
        try:
            q.real_line_grid(0.1, L_)
        except ValueError as exc:
            refused += "half_width must be a finite number > 0" in str(exc)
    note("real_line_grid refusals", 0 if refused == 6 else math.inf)
    # (f) the piecewise Gauss-Legendre reference on integrands with kinks, against mpmath (30 digits, split)
    cases = [(lambda x: np.maximum(0.0, x - 0.3) * np.cos(5 * x) + np.exp(-x * x),
              lambda x: mp.mpf(max(0, x - 0.3)) * mp.cos(5 * x) + mp.exp(-x * x), [-2.0, 0.3, 3.0]),
             (lambda x: np.abs(np.sin(3 * x)) * np.exp(x),
              lambda x: abs(mp.sin(3 * x)) * mp.exp(x), [0.0, math.pi / 3, 2 * math.pi / 3, 2.5])]
    with mp.workdps(30):
        for k, (fnp, fmp, br) in enumerate(cases):
            lib = q.piecewise_gauss_legendre(fnp, br, 40)
            pts = [mp.mpf(b) for b in br]
            ref = mp.quad(fmp, pts)
            scale = mp.quad(lambda x: abs(fmp(x)), pts)
            note("piecewise_gauss_legendre", abs(lib - ref) / scale / 1e-14)
        # pieces no longer than max_piece (0.5 by default): cos(80 x) e^{-x/10} on [0, 20] (255 oscillations) takes
        # 40 pieces of 6 oscillations each, against its closed form; the scale is int e^{-x/10} >= int |w|
        k_, c_, L_ = mp.mpf(80), mp.mpf(1) / 10, mp.mpf(20)
        exact = (c_ - mp.exp(-c_ * L_) * (c_ * mp.cos(k_ * L_) - k_ * mp.sin(k_ * L_))) / (c_ ** 2 + k_ ** 2)
        lib = q.piecewise_gauss_legendre(lambda x: np.cos(80 * x) * np.exp(-x / 10), [0.0, 20.0], 40)
        note("piecewise_gauss_legendre", abs(lib - exact) / ((1 - mp.exp(-c_ * L_)) / c_) / 1e-14)
    # the fewest nodes a piece may take, n = 2: Gauss-Legendre with 2 nodes is exact for cubics (int_-1^2 of
    # x^3 - 2x^2 + 1 = 15/4 - 6 + 3 = 3/4, over 6 pieces); fewer nodes (1, 0) refused, naming n and ">= 2"
    lib = q.piecewise_gauss_legendre(lambda x: x ** 3 - 2 * x ** 2 + 1, [-1.0, 2.0], 2)
    note("piecewise_gauss_legendre", abs(lib - 0.75) / 1e-14)
    note("piecewise_gauss_legendre", 0 if all(refused_with(lambda n_=n_: q.piecewise_gauss_legendre(
        np.cos, [0.0, 1.0], n_), "n (nodes per piece)", ">= 2") for n_ in (1, 0)) else math.inf)
    ok = all(v <= 1 for v in worst.values())
    return holds_if(ok, measured=dict(deviation_in_allowances=worst), rows=rows,
                    tolerance=dict(weights="4 ulps of each exact weight", rule="(G + 4) eps of sum |w y|",
                                   uniform_grid="4 ulps of max(|a|, |b|); ends exact",
                                   real_line_grid="the exact set of k; 4 ulps of |center| + L",
                                   trapezoid_fn="(G + 16) eps of sum |w y|",
                                   real_line_trapezoid="(G + 16) eps of h sum |y|",
                                   normal_tail_half_width="exact",
                                   piecewise_gauss_legendre="1e-14 of int |w|"),
                    explanation="numerics.quadrature (trapezoid_weights, trapezoid batched along either dim, "
                                "trapezoid_fn, uniform_grid, real_line_grid with centre and shift, "
                                "real_line_trapezoid, normal_tail_half_width, piecewise_gauss_legendre) against "
                                "exact rational arithmetic on the float64 nodes (fractions), mpmath erfc and 30-digit "
                                "split mpmath quadrature (and the closed form of int_0^20 cos(80 x) e^{-x/10} dx, which "
                                "needs the pieces cut to max_piece), its 2-node rule on a cubic (exact) and its refusal of "
                                "fewer nodes; grids with G = 2, 3, random non-uniform spacings over six "
                                "decades, a graded grid s^3, uniform ones; lattices with L/h an integer (nodes on "
                                "+-L), shifted and centred; deviations in units of their allowance (<= 1 passes)")


@claim("kernel.appE.trapezoid-rule",
       reference="App. E (Thm E.1: I_h = h sum_k w(kh) on R; App. E.4: the composite rule on [0, 1]); Algorithm 1 "
                 "(every integral by the trapezoid rule on a grid)",
       statement="The trapezoid rule the paper analyses -- I_h = h sum_{k in Z} w(x0 + kh) on R, truncated where w is "
                 "negligible (Thm E.1), and the composite rule sum_g (t_{g+1} - t_g)(w(t_g) + w(t_{g+1}))/2 on a grid "
                 "of [a, b] (App. E.4), uniform or not (irregularly sampled series) -- is what the library computes, "
                 "to float64 rounding, on grids from 2 nodes to lattices of 257; its split Gauss-Legendre reference "
                 "integrates piecewise-analytic integrands to 1e-14.",
       method="mpmath",
       vouches_for=("numerics.quadrature.trapezoid_weights", "numerics.quadrature.trapezoid",
                    "numerics.quadrature.trapezoid_fn", "numerics.quadrature.uniform_grid",
                    "numerics.quadrature.real_line_grid", "numerics.quadrature.real_line_trapezoid",
                    "numerics.quadrature.normal_tail_half_width", "numerics.quadrature.piecewise_gauss_legendre"))
def _trapezoid_rule():
    return check_trapezoid_rule()
