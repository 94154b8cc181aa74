"""Convergence tools for quadrature studies: log-log slopes, successive error ratios, rate
classification, and the Euler-Maclaurin prediction of the trapezoid error of a kinked integrand.

    loglog_slope(x, err)                      least-squares slope of log err against log x
    successive_ratios(err)                    err[k+1]/err[k] (for grids refined by a factor 2)
    local_orders(h, err)                      apparent orders log(e_k/e_k+1)/log(h_k/h_k+1)
    classify_rate(err, h=None)                'exponential' | 'algebraic' (from successive ratios)
    rate_parts(h, err, floor, labels)         {rate: 'super-exponential' | 'exponential' | 'algebraic' |
                                              'at floor', slope, floor_from}, from the errors above the floor
    describe_rate(h, err, floor, labels)      the same as one label: 'algebraic (slope s)', '...; at floor from <label>'
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

__all__ = ["loglog_slope", "successive_ratios", "local_orders", "classify_rate", "rate_parts", "rate_text", "describe_rate",
           "bernoulli2_periodic", "euler_maclaurin_kink_error"]


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


def rate_parts(h, err, floor: float, labels=None, order_threshold: float = 6.0) -> dict:
    """The convergence rate of errors err_k on grids of spacing h_k (in any order), judged only from the
    errors above `floor` (the float64 floor: a point at the floor says nothing about the rate, and a
    slope is never fitted through one), as one value per key: ``rate`` ('super-exponential' |
    'exponential' | 'algebraic' | 'at floor'), ``slope`` (the log-log slope of the points above the floor;
    None with fewer than 2) and ``floor_from`` (the label of the first point at the floor; None when none
    is).  The rule:

    - fewer than two errors above the floor before the first point at it: 'at floor' (nothing to fit);
    - local orders p_k = log(e_k/e_k+1)/log(h_k/h_k+1) of the points above the floor: when the last of
      them exceeds order_threshold and none falls by 0.5 or more from the one before (an O(h^p) rate
      keeps them near p <= 4
      for the trapezoid rule), the rate is faster than any power: 'exponential' when log e grows like
      1/h (the exponent order q, the slope of log|log e| against log(1/h), below 1.5), and
      'super-exponential' when it grows faster (q >= 1.5, e.g. exp(-c/h^2)); with one local order only,
      'exponential' (at least);
    - otherwise 'algebraic'."""
    h = np.asarray(h, dtype=float)
    e = np.asarray(err, dtype=float)
    labels = list(labels) if labels is not None else [f"h={x:g}" for x in h]
    # from the coarsest grid to the finest, in whatever order they were given (the local orders and "the first
    # point at the floor" are read along the refinement)
    order = np.argsort(-h, kind="stable")
    h, e, labels = h[order], e[order], [labels[i] for i in order]
    above = [i for i in range(e.size) if e[i] > floor]
    # the points above the floor that come before the first point at the floor
    first_floor = next((i for i in range(e.size) if e[i] <= floor), None)
    run = [i for i in above if first_floor is None or i < first_floor]
    floor_from = None if first_floor is None else str(labels[first_floor])
    if len(run) < 2:
        return {"rate": "at floor", "slope": None, "floor_from": floor_from}
    hh, ee = h[run], e[run]
    slope = loglog_slope(hh, ee)
    p = local_orders(hh, ee)
    if p[-1] > order_threshold and (p.size == 1 or np.all(np.diff(p) > -0.5)):
        if p.size >= 2 and np.all(ee < 1):
            q = float(np.polyfit(np.log(1 / hh), np.log(-np.log(ee)), 1)[0])
            rate = "super-exponential" if q >= 1.5 else "exponential"
        else:
            rate = "exponential"
    else:
        rate = "algebraic"
    return {"rate": rate, "slope": slope, "floor_from": floor_from}


def rate_text(parts: dict) -> str:
    """:func:`rate_parts` as one line for a reader: 'algebraic (slope 2.00)', 'exponential; at floor from
    h=0.125', 'at floor from G=0'."""
    if parts["rate"] == "at floor":
        return "at floor" + (f" from {parts['floor_from']}" if parts["floor_from"] is not None else "")
    label = f"algebraic (slope {parts['slope']:.2f})" if parts["rate"] == "algebraic" else parts["rate"]
    return label + (f"; at floor from {parts['floor_from']}" if parts["floor_from"] is not None else "")


def describe_rate(h, err, floor: float, labels=None, order_threshold: float = 6.0) -> tuple[str, float | None]:
    """(:func:`rate_text`, slope) of :func:`rate_parts`: the rate as one label, e.g. 'algebraic (slope 2.00)',
    'exponential; at floor from h=0.125', 'at floor from G=0'."""
    parts = rate_parts(h, err, floor, labels, order_threshold)
    return rate_text(parts), parts["slope"]


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
