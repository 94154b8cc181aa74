"""High-precision (mpmath) references for 1-D attention integrals, split at the support's kinks.

    find_sign_changes(g, a, b, n_scan)   brackets of the roots of a float function g on [a, b]
    mp_roots(g_mp, brackets, dps)        the roots refined by mpmath (Illinois / bisection hybrid)
    mp_integrate(fn, a, b, breakpoints, dps, unit_split)
                                         mp.quad over [a, b] split at the breakpoints (and at every
                                         integer when unit_split, so that tanh-sinh sees short pieces)
    mp_context_reference(...)            Z = int u and c = int V u / Z at `dps` digits for
                                         u = q0 exp(f) or q0 exp_{2-alpha}(f)

Kinks: for exp_{2-alpha}, u vanishes where 1 + (alpha-1) f(t) <= 0; the roots of 1 + (alpha-1) f are
where u (alpha = 2) or its derivatives (alpha < 2) are not smooth.  tanh-sinh quadrature converges at
full precision on each smooth piece, so splitting there is what makes the reference exact.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["find_sign_changes", "mp_roots", "mp_integrate", "mp_context_reference",
           "REAL_LINE_HALF_WIDTH"]

# For a standard-normal base measure: 2 P(N(0,1) > 17) ~ 1e-64, below any tolerance used (dps <= 60);
# the integrand is q0 times exp(f) with |f| bounded by sum |gamma|, so the tail stays below
# exp(sum |gamma|) * 1e-64.
REAL_LINE_HALF_WIDTH = 17.0


def find_sign_changes(g, a: float, b: float, n_scan: int = 20001):
    """Brackets (lo, hi) where the float function g changes sign on a fine scan of [a, b]."""
    x = np.linspace(a, b, int(n_scan))
    y = np.asarray(g(x), dtype=float)
    s = np.sign(y)
    idx = np.nonzero(s[:-1] * s[1:] < 0)[0]
    return [(float(x[i]), float(x[i + 1])) for i in idx]


def mp_roots(g_mp, brackets, dps: int = 50):
    import mpmath as mp

    out = []
    with mp.workdps(dps + 10):
        for lo, hi in brackets:
            lo, hi = mp.mpf(lo), mp.mpf(hi)
            glo = g_mp(lo)
            # bisection to shrink, then secant polish (g is smooth and simple-rooted here)
            for _ in range(40):
                mid = (lo + hi) / 2
                gm = g_mp(mid)
                if (gm > 0) == (glo > 0):
                    lo, glo = mid, gm
                else:
                    hi = mid
            try:
                r = mp.findroot(g_mp, (lo, hi), solver="anderson")
            except (ValueError, ZeroDivisionError):
                r = (lo + hi) / 2
            if not (lo - (hi - lo) <= r <= hi + (hi - lo)):
                r = (lo + hi) / 2
            out.append(r)
    return out


def mp_integrate(fn, a, b, breakpoints=(), dps: int = 50, unit_split: bool = False):
    """int_a^b fn(t) dt by mp.quad, split at breakpoints (and integers if unit_split)."""
    import mpmath as mp

    with mp.workdps(dps + 10):
        a, b = mp.mpf(a), mp.mpf(b)
        pts = {a, b}
        for x in breakpoints:
            x = mp.mpf(x)
            if a < x < b:
                pts.add(x)
        if unit_split:
            for k in range(int(math.ceil(float(a))), int(math.floor(float(b))) + 1):
                if a < k < b:
                    pts.add(mp.mpf(k))
        pts = sorted(pts)
        return mp.fsum(mp.quad(fn, [lo, hi]) for lo, hi in zip(pts[:-1], pts[1:]))


def mp_context_reference(gamma, inducing, bandwidth, B, basis_centers, basis_bandwidth, *,
                         family: str = "kernel-softmax", alpha: float | None = None,
                         base: str = "normal", domain=(0.0, 1.0), dps: int = 50,
                         half_width: float = REAL_LINE_HALF_WIDTH):
    """(Z, c, kinks) at `dps` digits for the instance of `attnlab compare kernel-quadrature`:
    f(t) = sum_i gamma_i exp(-bandwidth (t - t_i)^2); u = q0 exp(f) (kernel-softmax) or
    q0 exp_{2-alpha}(f) (kernel-deformed, Algorithm 1 with f as f~, no max shift);
    V(t) = B psi(t), psi_n(t) = exp(-basis_bandwidth (t - c_n)^2); q0 = N(0,1) pdf or 1;
    Z = int u, c = int V u / Z over the domain ([a, b], or R as [-half_width, half_width] for the normal
    base; the caller chooses half_width so that the tails are below the accuracy wanted)."""
    import mpmath as mp

    g = np.asarray(gamma, float)
    s = np.asarray(inducing, float)
    Bm = np.asarray(B, float)
    cn = np.asarray(basis_centers, float)
    on_R = domain is None or (isinstance(domain, str) and domain.upper() == "R")
    if on_R:
        a, b = -float(half_width), float(half_width)
    else:
        a, b = float(domain[0]), float(domain[1])
    with mp.workdps(dps + 10):
        gm = [mp.mpf(float(x)) for x in g]
        sm = [mp.mpf(float(x)) for x in s]
        z = mp.mpf(float(bandwidth))
        zb = mp.mpf(float(basis_bandwidth))
        cm = [mp.mpf(float(x)) for x in cn]
        Bmp = [[mp.mpf(float(x)) for x in row] for row in Bm]
        inv_sqrt2pi = 1 / mp.sqrt(2 * mp.pi)

        def f(t):
            return mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(gm, sm))

        def q0(t):
            return inv_sqrt2pi * mp.exp(-t * t / 2) if base == "normal" else mp.mpf(1)

        kinks = []
        if family == "kernel-softmax":
            def u(t):
                return q0(t) * mp.exp(f(t))
        else:
            am = mp.mpf(float(alpha))

            def arg(t):
                return 1 + (am - 1) * f(t)

            def u(t):
                x = arg(t)
                return mp.mpf(0) if x <= 0 else q0(t) * x ** (1 / (am - 1))

            def arg_np(x):
                return 1 + (float(alpha) - 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)

            # f decays like exp(-bandwidth d^2) away from the inducing points: roots lie within
            # 8/sqrt(bandwidth) of them
            reach = 8.0 / math.sqrt(float(bandwidth)) + 1.0
            lo_scan, hi_scan = max(a, float(s.min()) - reach), min(b, float(s.max()) + reach)
            kinks = mp_roots(arg, find_sign_changes(arg_np, lo_scan, hi_scan, 200001), dps)
        # split at the kinks, and on R at a ladder of points (tanh-sinh wants short, smooth pieces)
        lo_s, hi_s = float(min(s.min(), cn.min(), 0.0)), float(max(s.max(), cn.max(), 0.0))
        ladder = [lo_s - d for d in (0.5, 1, 2, 4, 8)] + [hi_s + d for d in (0.5, 1, 2, 4, 8)]
        ladder += list(np.linspace(lo_s, hi_s, max(2, int(hi_s - lo_s) * 2 + 2)))
        brk = list(kinks) + (ladder if on_R else [])
        Z = mp_integrate(u, a, b, brk, dps)
        psi_int = []
        for c in cm:
            psi_int.append(mp_integrate(lambda t, c=c: u(t) * mp.exp(-zb * (t - c) ** 2), a, b, brk, dps))
        ctx = [mp.fsum(Bij * pj for Bij, pj in zip(row, psi_int)) / Z for row in Bmp]
        return Z, ctx, kinks
