"""High-precision (mpmath) references for 1-D attention integrals, split at the support's kinks.

    find_sign_changes(g, a, b, n_scan)   brackets of the roots of a float function g on [a, b]
    mp_roots(g_mp, brackets, dps)        the roots refined by mpmath (Illinois / bisection hybrid)
    mp_integrate(fn, a, b, breakpoints, dps, unit_split, rel_tol, return_error)
                                         mp.quad over [a, b] split at the breakpoints (and at every
                                         integer when unit_split, so that tanh-sinh sees short pieces);
                                         pieces whose error estimate is too large are bisected, and
                                         InaccurateReference is raised when the estimate stays above
                                         rel_tol |integral| (default 10^-(dps-10))
    mp_context_reference(...)            Z = int u and c = int V u / Z at `dps` digits for
                                         u = q0 exp(f) or q0 exp_{2-alpha}(f)

Kinks: for exp_{2-alpha}, u vanishes where 1 + (alpha-1) f(t) <= 0; the roots of 1 + (alpha-1) f are
where u (alpha = 2) or its derivatives (alpha < 2) are not smooth.  tanh-sinh quadrature converges at
full precision on each smooth piece, so splitting there is what makes the reference exact.

Narrow features: f has bumps of width 1/sqrt(bandwidth) at the inducing points and V of width
1/sqrt(basis_bandwidth) at the basis centres; tanh-sinh on a piece much wider than a bump can miss it
entirely and still report a small error (at bandwidth 1e5 a plain split gave a context off by 26 %).
So every inducing point and centre gets breakpoints at a ladder of multiples of its width, every piece
is at most MAX_PIECE wide, and the result carries mpmath's error estimate, checked against what the
reference claims.  That estimate assumes tanh-sinh's double-exponential convergence; where the levels
show slower convergence (a kink no breakpoint names) the plain difference of the last two levels is
taken instead (_CautiousTanhSinh), and the piece is bisected.
"""
from __future__ import annotations

import math

import numpy as np
from mpmath.calculus.quadrature import TanhSinh

__all__ = ["find_sign_changes", "mp_roots", "mp_integrate", "mp_context_reference", "reference_breakpoints",
           "count_pieces", "check_resolvable",
           "REAL_LINE_HALF_WIDTH", "InaccurateReference", "feature_breakpoints"]

# the narrowest feature, relative to max(1, |t|) over the domain and the centres, that float64 breakpoints
# centre +- k width (k >= 1/4) resolve with room to spare (float64 spacing 2.2e-16)
RESOLVABLE = 2.0 ** -40
MAX_PIECE = 1.0                  # widest piece handed to tanh-sinh (the normal base has width 1)
WIDTH_LADDER = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)   # multiples of a feature's width


class InaccurateReference(ArithmeticError):
    """The quadrature's own error estimate exceeds what the reference claims: no number is returned."""

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


def feature_breakpoints(centres, width: float, a: float, b: float) -> list[float]:
    """centre ± k·width for k in WIDTH_LADDER, for every centre, clipped to (a, b), thinned so that
    no two are closer than width/4 (dense centres would otherwise give many needlessly short pieces)."""
    pts = sorted({float(c + sgn * k * width) for c in centres for k in WIDTH_LADDER for sgn in (-1, 1)})
    out = []
    for x in pts:
        if a < x < b and (not out or x - out[-1] >= width / 4):
            out.append(x)
    return out


class _CautiousTanhSinh(TanhSinh):
    """mpmath's tanh-sinh rule with an error estimate that does not assume what it cannot see.  mpmath
    extrapolates |I - I_k| from the last three levels as if every level doubled the digits (true for an
    integrand analytic on the piece); over a kink that no breakpoint names the digits grow by a constant
    per level instead, and the extrapolation reported 2.5e-11 for an error of 2.2e-7 (|sin 13 t| on [0, 2]
    in pieces of 1/8).  Here, when the last levels gained less than 1.5 times the digits
    (log|I_k - I_k-1| / log|I_k - I_k-2| < 1.5), the estimate is |I_k - I_k-1| itself, which bounds the
    error of a rule that converges at least linearly; mp_integrate then bisects the piece."""

    def estimate_error(self, results, prec, epsilon):
        est = TanhSinh.estimate_error(self, results, prec, epsilon)
        if len(results) >= 3:
            d1, d2 = abs(results[-1] - results[-2]), abs(results[-1] - results[-3])
            if d1 and (not d2 or d1 >= 1 or d2 >= 1 or self.ctx.log(d1) / self.ctx.log(d2) < 1.5):
                return max(est, d1)
        return est


def _tanh_sinh_rule(ctx):
    """The rule mp_integrate hands mp.quad as ``method`` (mp.quad calls it with its context): one
    _CautiousTanhSinh per context, kept on the context (as mpmath keeps its own rules), so that its nodes
    are computed once."""
    rule = getattr(ctx, "_attnlab_tanh_sinh", None)
    if rule is None:
        rule = ctx._attnlab_tanh_sinh = _CautiousTanhSinh(ctx)
    return rule


def mp_integrate(fn, a, b, breakpoints=(), dps: int = 50, unit_split: bool = False,
                 rel_tol: float | None = None, return_error: bool = False, max_piece: float | None = None,
                 max_bisections: int = 10, on_piece=None, closed=None):
    """int_a^b fn(t) dt by mp.quad (tanh-sinh), split at breakpoints (and integers if unit_split, and
    into pieces no wider than max_piece).  Each piece's error estimate (mp.quad(..., error=True)) is
    checked: pieces over their share of rel_tol·(sum of |piece values|) are bisected, up to
    max_bisections times; if the total estimate still exceeds rel_tol·max(|sum|, 10^-(dps+5)),
    InaccurateReference is raised (an integral below 10^-(dps+5) is held to that absolute floor).
    rel_tol defaults to 10^-(dps-10).  on_piece(), when given, is called after each piece.
    closed(lo, hi), when given, returns the integral over a piece in closed form where fn is known
    there (or None): such a piece is not handed to tanh-sinh, and its error is its rounding at the
    working precision.  Returns the integral, or (integral, error estimate)."""
    import mpmath as mp

    rel = mp.mpf(10) ** (-(dps - 10)) if rel_tol is None else mp.mpf(rel_tol)
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
        if max_piece is not None:
            fine = [pts[0]]
            for lo, hi in zip(pts[:-1], pts[1:]):
                n = max(1, int(math.ceil(float((hi - lo) / max_piece))))
                fine += [lo + (hi - lo) * k / n for k in range(1, n)] + [hi]
            pts = fine

        def piece(lo, hi):
            v = None if closed is None else closed(lo, hi)
            if v is not None:
                if on_piece is not None:
                    on_piece()
                return [lo, hi, v, abs(v) * mp.mpf(10) ** (-(dps + 8))]
            v, e = mp.quad(fn, [lo, hi], error=True, method=_tanh_sinh_rule)
            if on_piece is not None:
                on_piece()
            return [lo, hi, v, abs(e)]

        pieces = [piece(lo, hi) for lo, hi in zip(pts[:-1], pts[1:])]
        for _ in range(max_bisections + 1):
            scale = mp.fsum(abs(p[2]) for p in pieces)
            target = rel * max(scale, mp.mpf(10) ** (-(dps + 5)))
            err = mp.fsum(p[3] for p in pieces)
            if err <= target:
                break
            share = target / len(pieces)
            bad = [p for p in pieces if p[3] > share]
            if not bad:
                break
            keep = [p for p in pieces if p[3] <= share]
            for lo, hi, _, _ in bad:
                mid = (lo + hi) / 2
                keep += [piece(lo, mid), piece(mid, hi)]
            pieces = sorted(keep, key=lambda p: p[0])
        total = mp.fsum(p[2] for p in pieces)
        err = mp.fsum(p[3] for p in pieces)
        if err > rel * max(abs(total), mp.mpf(10) ** (-(dps + 5))):
            raise InaccurateReference(
                f"mpmath's error estimate {mp.nstr(err, 3)} exceeds the claimed {mp.nstr(rel, 3)} x |integral| "
                f"= {mp.nstr(rel * abs(total), 3)} on [{mp.nstr(a, 8)}, {mp.nstr(b, 8)}] after {max_bisections} "
                "bisections: no reference returned")
        return (total, err) if return_error else total


def check_resolvable(inducing, bandwidth, basis_centers, basis_bandwidth, a, b) -> None:
    """InaccurateReference when a feature is narrower than the breakpoints can resolve.  A feature narrower
    than the float64 spacing at its centre cannot be split around (centre +- k width rounds to the
    centre), and tanh-sinh on a wider piece misses it while reporting a tiny error (at basis_bandwidth
    1e300 the context came out 1.2 with an estimate of 1e-101, true ~1e-150)."""
    for what, bw, centres in (("bandwidth", bandwidth, inducing), ("basis_bandwidth", basis_bandwidth, basis_centers)):
        width = 1.0 / math.sqrt(float(bw))
        where = max([1.0, abs(float(a)), abs(float(b))] + [abs(float(x)) for x in centres])
        if width < RESOLVABLE * where:
            raise InaccurateReference(
                f"{what} {float(bw):g}: its features, 1/sqrt({what}) = {width:.2g} wide, are narrower than the "
                f"breakpoints of the reference can resolve at |t| up to {where:g} (>= {RESOLVABLE:g} x {where:g} "
                f"needed: {what} <= {(1.0 / (RESOLVABLE * where)) ** 2:.3g}); no reference returned")


def reference_breakpoints(inducing, bandwidth, basis_centers, basis_bandwidth, base, a, b, kinks=()):
    """The breakpoints of every integral of mp_context_reference on [a, b]: the kinks exactly, and the
    feature_breakpoints of every inducing point and basis centre (and of 0 for the normal base) thinned
    to at least a quarter of the narrowest width apart."""
    feats = (feature_breakpoints(inducing, 1.0 / math.sqrt(float(bandwidth)), a, b)
             + feature_breakpoints(basis_centers, 1.0 / math.sqrt(float(basis_bandwidth)), a, b)
             + (feature_breakpoints([0.0], 1.0, a, b) if base == "normal" else []))
    gap = min(1.0 / math.sqrt(float(bandwidth)), 1.0 / math.sqrt(float(basis_bandwidth)), 1.0) / 4
    import bisect

    brk = list(kinks)
    ks = sorted(float(y) for y in kinks)
    last = None                                 # feats are taken in order: the nearest kept one is the last
    for x in sorted(feats):
        i = bisect.bisect_left(ks, x)
        near = [abs(x - ks[j]) for j in (i - 1, i) if 0 <= j < len(ks)] + ([x - last] if last is not None else [])
        if not near or min(near) >= gap:
            brk.append(x)
            last = x
    return brk


def count_pieces(a: float, b: float, breakpoints, max_piece: float = MAX_PIECE) -> int:
    """How many tanh-sinh pieces mp_integrate(..., max_piece=max_piece) starts from on [a, b]."""
    pts = sorted({float(a), float(b)} | {float(x) for x in breakpoints if a < x < b})
    return sum(max(1, math.ceil((hi - lo) / max_piece)) for lo, hi in zip(pts[:-1], pts[1:]))


def mp_context_reference(gamma, inducing, bandwidth, B, basis_centers, basis_bandwidth, *,
                         family: str = "kernel-softmax", alpha: float | None = None,
                         base: str = "normal", domain=(0.0, 1.0), dps: int = 50,
                         half_width: float = REAL_LINE_HALF_WIDTH, rel_tol: float | None = None,
                         progress=None, on_piece=None):
    """(Z, c, kinks, error) at `dps` digits for the instance of `attnlab compare kernel-quadrature`:
    f(t) = sum_i gamma_i exp(-bandwidth (t - t_i)^2); u = q0 exp(f) (kernel-softmax) or
    q0 exp_{2-alpha}(f) (kernel-deformed, Algorithm 1 with f as f~, no max shift);
    V(t) = B psi(t), psi_n(t) = exp(-basis_bandwidth (t - c_n)^2); q0 = N(0,1) pdf or 1;
    Z = int u, c = int V u / Z over the domain ([a, b], or R as [-half_width, half_width] for the normal
    base; the caller chooses half_width so that the tails are below the accuracy wanted).

    Every integral is split at the kinks and at feature_breakpoints of every inducing point and basis
    centre (and of 0 for the normal base), in pieces of at most MAX_PIECE; `error` is the estimated
    relative error of the context (from mpmath's estimates of Z and of the N basis integrals), and
    InaccurateReference is raised when any integral's estimate exceeds rel_tol (default 10^-(dps-10)).
    u(t) is cached by node, so the N + 1 integrals evaluate f once per tanh-sinh node.
    progress(k, N+1), when given, is called after each integral, and on_piece() after each tanh-sinh
    piece of every integral (reference_breakpoints gives the pieces of one integral before any work)."""
    import mpmath as mp

    from attnlab.numerics.deformed_exp import check_alpha

    if base not in ("normal", "uniform"):
        raise ValueError(f"base must be 'normal' or 'uniform'; got {base!r}")
    if family not in ("kernel-softmax", "kernel-deformed"):
        raise ValueError(f"family must be 'kernel-softmax' or 'kernel-deformed'; got {family!r}")
    if family == "kernel-deformed":
        if alpha is None or isinstance(alpha, (str, bool)):
            raise ValueError(f"alpha must lie in (1, 2] for kernel-deformed; got {alpha!r}")
        check_alpha(alpha)
    g = np.asarray(gamma, float)
    s = np.asarray(inducing, float)
    Bm = np.asarray(B, float)
    cn = np.asarray(basis_centers, float)
    on_R = domain is None or (isinstance(domain, str) and domain.upper() == "R")
    if on_R:
        a, b = -float(half_width), float(half_width)
    else:
        a, b = float(domain[0]), float(domain[1])
    check_resolvable(s, bandwidth, cn, basis_bandwidth, a, b)
    with mp.workdps(dps + 10):
        gm = [mp.mpf(float(x)) for x in g]
        sm = [mp.mpf(float(x)) for x in s]
        z = mp.mpf(float(bandwidth))
        zb = mp.mpf(float(basis_bandwidth))
        cm = [mp.mpf(float(x)) for x in cn]
        Bmp = [[mp.mpf(float(x)) for x in row] for row in Bm]
        inv_sqrt2pi = 1 / mp.sqrt(2 * mp.pi)

        # a term gamma_i exp(-x) with x above `cut` is below 10^-(dps+20) / n in absolute value: dropping it
        # moves f, and so log u, by less than 10^-(dps+20), far below the working precision's 10^-(dps+10)
        # (a float pre-test with a margin of 1 skips the far terms without multi-precision work: its
        # rounding error in x is below 1e-2 for every feature check_resolvable lets through)
        cut = mp.mpf((dps + 20) * math.log(10)) + mp.log(max(mp.fsum(abs(gi) for gi in gm), 1) * max(len(gm), 1))
        terms = [(gi, si, float(si)) for gi, si in zip(gm, sm)]
        z_f, cut_f = float(bandwidth), float(cut) + 1.0

        def f(t):
            acc, tf = mp.mpf(0), float(t)
            for gi, si, sf in terms:
                if z_f * (tf - sf) ** 2 < cut_f:
                    x = z * (t - si) ** 2
                    if x < cut:
                        acc += gi * mp.exp(-x)
            return acc

        def q0(t):
            return inv_sqrt2pi * mp.exp(-t * t / 2) if base == "normal" else mp.mpf(1)

        kinks = []
        if family == "kernel-softmax":
            def u_raw(t):
                return q0(t) * mp.exp(f(t))
        else:
            am = mp.mpf(float(alpha))

            def arg(t):
                return 1 + (am - 1) * f(t)

            def u_raw(t):
                x = arg(t)
                return mp.mpf(0) if x <= 0 else q0(t) * x ** (1 / (am - 1))

            def arg_np(x):
                return 1 + (float(alpha) - 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)

            # f decays like exp(-bandwidth d^2) away from the inducing points: roots lie within
            # 8/sqrt(bandwidth) of them; the scan resolves features 1/sqrt(bandwidth) wide
            width = 1.0 / math.sqrt(float(bandwidth))
            brackets = []
            for si in sorted(set(s.tolist())):
                lo_scan, hi_scan = max(a, si - 12 * width), min(b, si + 12 * width)
                if hi_scan > lo_scan:
                    brackets += find_sign_changes(arg_np, lo_scan, hi_scan, 4001)
            brackets = sorted(set(brackets))
            kinks = mp_roots(arg, brackets, dps)

        cache = {}

        def u(t):
            v = cache.get(t)
            if v is None:
                v = cache[t] = u_raw(t)
            return v

        brk = reference_breakpoints(s, bandwidth, cn, basis_bandwidth, base, a, b, kinks)
        total = len(cm) + 1
        # where every node fails the pre-test of every term, f(t) is 0 as computed and u(t) is q0(t) (both
        # families): on a piece that far from every inducing point the integral of u is that of q0, in
        # closed form (a margin of 1e-9 keeps the float pre-test's rounding on the far side)
        reach = math.sqrt(cut_f / z_f) * (1 + 1e-9)
        sqrt2 = mp.sqrt(2)

        def q0_integral(lo, hi):
            if base != "normal":
                return hi - lo
            if lo >= 0:                                   # tails by erfc: no cancellation
                return (mp.erfc(lo / sqrt2) - mp.erfc(hi / sqrt2)) / 2
            if hi <= 0:
                return (mp.erfc(-hi / sqrt2) - mp.erfc(-lo / sqrt2)) / 2
            return (mp.erf(hi / sqrt2) - mp.erf(lo / sqrt2)) / 2

        def far(lo, hi, centres, r):
            return all(float(lo) > c + r or float(hi) < c - r for c in centres)

        def u_closed(lo, hi):
            return q0_integral(lo, hi) if far(lo, hi, s.tolist(), reach) else None

        Z, eZ = mp_integrate(u, a, b, brk, dps, rel_tol=rel_tol, return_error=True, max_piece=MAX_PIECE,
                             on_piece=on_piece, closed=u_closed)
        if progress:
            progress(1, total)
        # psi_n(t) below 10^-(dps+20) is taken as 0: at every node that drops at most 10^-(dps+20) u(t), so
        # the integral moves by at most 10^-(dps+20) (Z + its error) (positive weights), added to its estimate
        psi_cut = mp.mpf((dps + 20) * math.log(10))
        psi_cut_f, zb_f, drop = float(psi_cut) + 1.0, float(basis_bandwidth), mp.mpf(10) ** (-(dps + 20))

        def u_psi(t, c, c_f):
            if zb_f * (float(t) - c_f) ** 2 >= psi_cut_f:
                return mp.mpf(0)
            x = zb * (t - c) ** 2
            return mp.mpf(0) if x >= psi_cut else u(t) * mp.exp(-x)

        reach_psi = math.sqrt(psi_cut_f / zb_f) * (1 + 1e-9)     # beyond it u_psi is 0 as computed

        psi_int, psi_err = [], []
        for k, c in enumerate(cm):
            v, e = mp_integrate(lambda t, c=c, c_f=float(c): u_psi(t, c, c_f), a, b, brk, dps,
                                rel_tol=rel_tol, return_error=True, max_piece=MAX_PIECE, on_piece=on_piece,
                                closed=lambda lo, hi, c_f=float(c): mp.mpf(0) if far(lo, hi, [c_f], reach_psi)
                                else None)
            psi_int.append(v)
            psi_err.append(e + drop * (abs(Z) + eZ))
            if progress:
                progress(k + 2, total)
        ctx = [mp.fsum(Bij * pj for Bij, pj in zip(row, psi_int)) / Z for row in Bmp]
        # relative error of c_d = (sum_n B_dn P_n) / Z: |B| errors of the P_n, plus |c_d| eZ / Z
        err = max((mp.fsum(abs(Bij) * ej for Bij, ej in zip(row, psi_err)) / abs(Z) + abs(cd) * eZ / abs(Z))
                  / max(abs(cd), mp.mpf(10) ** (-(dps + 5))) for row, cd in zip(Bmp, ctx))
        # mpmath's estimate can be far below what `dps` digits carry (4.9e-256 at Z ~ 1e257): the
        # reference is given to dps digits, so its relative error is never stated finer than 10^-dps
        return Z, ctx, kinks, max(float(err), 10.0 ** (-dps))
