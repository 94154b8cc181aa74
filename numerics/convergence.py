"""Convergence tools for quadrature studies: log-log slopes, successive error ratios, rate
classification, and the Euler-Maclaurin prediction of the trapezoid error of a kinked integrand.

    loglog_slope(x, err)                      least-squares slope of log err against log x
    successive_ratios(err)                    err[k+1]/err[k] (for grids refined by a factor 2)
    local_orders(h, err)                      apparent orders log(e_k/e_k+1)/log(h_k/h_k+1)
    classify_rate(err, h=None)                'exponential' | 'algebraic' (from successive ratios)
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

__all__ = ["loglog_slope", "successive_ratios", "local_orders", "classify_rate", "bernoulli2_periodic",
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


def local_orders(h, err) -> np.ndarray:
    """p_k = log(err_k/err_{k+1}) / log(h_k/h_{k+1}): the apparent order between successive grids."""
    h, e = _pos_vec(h, "h"), _pos_vec(err, "err")
    if h.size != e.size:
        raise ValueError("h and err must have the same length")
    return np.log(e[:-1] / e[1:]) / np.log(h[:-1] / h[1:])


def classify_rate(err, h=None, last: int = 3, order_threshold: float = 6.0) -> str:
    """'exponential' or 'algebraic', judged from the successive error ratios.

    With local orders p_k between successive grids (h halving when h is None, so p_k = -log2 of the
    ratio err_{k+1}/err_k): 'exponential' when the last `last` local orders increase strictly and the
    final one exceeds `order_threshold` (an O(h^p) rate keeps them near p; the trapezoid rule with
    kinks gives p = 2 or 3, smooth functions on [a, b] p = 2); otherwise 'algebraic'.
    """
    e = _pos_vec(err, "err")
    hh = 0.5 ** np.arange(e.size) if h is None else _pos_vec(h, "h")
    p = local_orders(hh, e)
    tail = p[-last:]
    increasing = bool(np.all(np.diff(tail) > 0)) if tail.size > 1 else True
    return "exponential" if increasing and tail[-1] > order_threshold else "algebraic"


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
