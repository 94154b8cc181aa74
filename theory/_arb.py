"""Rigorous integrals for the claims' oracles: Arb's ball arithmetic (python-flint's ``acb.integral``;
F. Johansson, "Numerical integration in arbitrary-precision ball arithmetic", ICMS 2018).  A result is an
enclosure mid +- rad guaranteed to contain the exact value, so an oracle built on it cannot be off by more
than the radius it states.  The library's own context reference (numerics.mp_reference) uses Arb too; these
helpers are written apart from it (their own pieces, integrands and conversions), so that a fault there
is not repeated here.

Conventions: work inside ``with digits(dps):`` (Arb's working precision is global; every ball operation
rounds to it); an integrand is a function of one ``acb`` ball (Arb bounds the error from the integrand's
values on ellipses around the path), built from ``acb``/``arb`` operations only; Python floats enter as
the exact binary numbers they are (as ``mp.mpf(x)`` does); an integral over a list of knots is the sum
over consecutive pieces; ``enclosure`` turns a ball into mpmath numbers (mid, rad).
"""
from __future__ import annotations

import math
from contextlib import contextmanager


@contextmanager
def digits(dps: int):
    """Arb's working precision at `dps` decimal digits (and 20 guard bits) inside the block."""
    from flint import ctx

    old = ctx.prec
    ctx.prec = int(dps * math.log2(10)) + 20
    try:
        yield
    finally:
        ctx.prec = old


def integral(fn, knots):
    """The integral of fn over [knots[0], knots[-1]], piece by piece, as a real ``arb`` ball; ValueError
    (one line) where Arb's enclosure is not finite or not real (an integrand that is not analytic near the
    path, or one that overflows)."""
    from flint import acb, arb

    total = acb(0)
    for a, b in zip(knots[:-1], knots[1:]):
        total += acb.integral(lambda t, _: fn(t), arb(a), arb(b))
    if not (total.real.is_finite() and total.imag.is_finite() and total.imag.contains(0)):
        raise ValueError(f"Arb's enclosure of the integral is not a finite real ball: {total}")
    # the imaginary part is 0: its ball widens the real one
    return total.real + arb(0, abs(total.imag.mid()) + total.imag.rad())


def enclosure(x):
    """(mid, rad) of the real ball x as mpmath numbers: the exact value lies in [mid - rad, mid + rad]."""
    import mpmath as mp

    with mp.workprec(max(x.mid().bits(), 53) + 10):
        mid = mp.mpf(tuple(int(v) for v in x.mid().man_exp()))
    rad = mp.mpf(tuple(int(v) for v in x.rad().upper().man_exp()))      # (the radius has a short mantissa)
    return mid, rad
