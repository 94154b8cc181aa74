"""Convergence tools for quadrature studies: log-log slopes, successive error ratios, rate
classification, and the Euler-Maclaurin prediction of the trapezoid error of a kinked integrand.

    loglog_slope(x, err)                      least-squares slope of log err against log x
    successive_ratios(err)                    err[k+1]/err[k] (for grids refined by a factor 2)
    classify_rate(err)                        'exponential' | 'algebraic' (from successive ratios)
    bernoulli2_periodic(theta)                B~2(theta) = theta^2 - theta + 1/6 of frac(theta)
    euler_maclaurin_kink_error(h, kinks, jumps, x0, ...)
        I_h - I ~= -(h^2/2) sum_k J_k B~2((x_k - x0)/h)  [+ (h^2/12)(w'(b) - w'(a)) on [a, b]]
        for a piecewise-smooth w whose derivative jumps by J_k = w'(x_k+) - w'(x_k-) at x_k, with x0
        any grid node.  With x_k on a node (theta = 0) it reduces to -(h^2/12) J_k, the sum of the
        two one-sided Euler-Maclaurin endpoint terms.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["loglog_slope", "successive_ratios", "classify_rate", "bernoulli2_periodic",
           "euler_maclaurin_kink_error"]


def _pos_vec(x, name):
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size < 2:
        raise ValueError(f"{name} must be a 1-D sequence of >= 2 values")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and > 0 (got min {a.min() if a.size else None})")
    return a


def loglog_slope(x, err) -> float:
    """Slope p of the least-squares fit log err = p log x + c (err = O(x^p))."""
    x, e = _pos_vec(x, "x"), _pos_vec(err, "err")
    if x.size != e.size:
        raise ValueError("x and err must have the same length")
    return float(np.polyfit(np.log(x), np.log(e), 1)[0])


def successive_ratios(err) -> np.ndarray:
    """err[k+1]/err[k]: tends to 2^-p for O(h^p) when h halves, and to 0 for exponential rates."""
    e = _pos_vec(err, "err")
    return e[1:] / e[:-1]


def classify_rate(err, last: int = 3, algebraic_floor: float = 1 / 64) -> str:
    """'exponential' when the last `last` successive ratios (h halving each step) decrease strictly
    and the final one is below `algebraic_floor` (an O(h^p) rate keeps them near 2^-p; p <= 6 gives
    ratios >= 1/64); otherwise 'algebraic'."""
    r = successive_ratios(err)
    if r.size < 1:
        raise ValueError("need at least two errors")
    tail = r[-last:]
    decreasing = bool(np.all(np.diff(tail) < 0)) if tail.size > 1 else True
    return "exponential" if decreasing and tail[-1] < algebraic_floor else "algebraic"


def bernoulli2_periodic(theta):
    th = np.mod(np.asarray(theta, dtype=float), 1.0)
    return th * th - th + 1.0 / 6.0


def euler_maclaurin_kink_error(h: float, kinks, jumps, x0: float = 0.0,
                               endpoint_derivatives: tuple[float, float] | None = None) -> float:
    """Leading trapezoid error I_h - I of a piecewise-smooth integrand (see module docstring).

    kinks: locations x_k; jumps: J_k = w'(x_k+) - w'(x_k-); x0: a grid node;
    endpoint_derivatives: (w'(a), w'(b)) on a finite interval [a, b] (None on R, where w decays).
    """
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"h must be a finite number > 0; got {h!r}")
    xk = np.asarray(kinks, dtype=float).ravel()
    J = np.asarray(jumps, dtype=float).ravel()
    if xk.shape != J.shape:
        raise ValueError("kinks and jumps must have the same length")
    err = -(h * h / 2.0) * float(np.sum(J * bernoulli2_periodic((xk - x0) / h)))
    if endpoint_derivatives is not None:
        da, db = endpoint_derivatives
        err += (h * h / 12.0) * (db - da)
    return err
