"""High-precision references for 1-D attention integrals (mpmath; Arb for the context reference), split at
the support's kinks.

    find_sign_changes(g, a, b, n_scan)   brackets of the roots of a float function g on [a, b]
    mp_roots(g_mp, brackets, dps)        the roots refined by mpmath (Illinois / bisection hybrid)
    mp_integrate(fn, a, b, breakpoints, dps, unit_split, rel_tol, return_error)
                                         mp.quad over [a, b] split at the breakpoints (and at every
                                         integer when unit_split, so that tanh-sinh sees short pieces);
                                         pieces whose error estimate is too large are bisected, and
                                         InaccurateReference is raised when the estimate stays above
                                         rel_tol |integral| (default 10^-(dps-10))
    mp_context_reference(...)            Z = int u and c = int V u / Z at `dps` digits for
                                         u = q0 exp(f) or q0 exp_{2-alpha}(f), by Arb's rigorous
                                         integration (python-flint acb.integral): balls that contain
                                         the integrals, the same pieces

Kinks: for exp_{2-alpha}, u vanishes where 1 + (alpha-1) f(t) <= 0; the roots of 1 + (alpha-1) f are
where u (alpha = 2) or its derivatives (alpha < 2) are not smooth.  tanh-sinh quadrature (and Arb's
Gauss-Legendre) converges at full precision on each smooth piece, so splitting there is what makes the
reference exact (and, for Arb, fast: its bounds need u analytic near the piece).

Narrow features: f has bumps of width 1/sqrt(bandwidth) at the inducing points and V of width
1/sqrt(basis_bandwidth) at the basis centres; tanh-sinh on a piece much wider than a bump can miss it
entirely and still report a small error (at bandwidth 1e5 a plain split gave a context off by 26 %).
So every inducing point and centre gets breakpoints at a ladder of multiples of its width, every piece
is at most MAX_PIECE wide, and mp_integrate's result carries mpmath's error estimate, checked against
what the reference claims.  That estimate assumes tanh-sinh's double-exponential convergence; where the
levels show slower convergence (a kink no breakpoint names) the plain difference of the last two levels
is taken instead (_CautiousTanhSinh), and the piece is bisected.  This is a heuristic, not a bound: it
reads the integrand only at the nodes, and levels that agree by chance fool it (|t - 0.3141| on [0, 1] in
one piece: two levels agree to 1e-8, and the estimate 1e-15 came back for an error of 2.5e-6; a bump
exp(-1e6 (t - 0.3141)^2) that no node comes near gave 6e-398 for 1.8e-3).  So mp_integrate's answer is as
good as its breakpoints: every kink and every feature narrower than a piece must be one (the library's
callers pass the roots they find and the feature ladders); for an integrand whose kinks are unknown it
is no reference.  mp_context_reference needs no estimate: Arb's balls are bounds (a feature it could miss
would widen the ball, not hide in it), and the same pieces keep them tight.
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
# mp_context_reference bounds (does not integrate) a piece where psi_n x max u < 10^-(dps + PSI_SKIP_DIGITS)
PSI_SKIP_DIGITS = 30
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
                 max_bisections: int = 10, on_piece=None):
    """int_a^b fn(t) dt by mp.quad (tanh-sinh), split at breakpoints (and integers if unit_split, and
    into pieces no wider than max_piece).  Each piece's error estimate (mp.quad(..., error=True)) is
    checked: pieces over their share of rel_tol·(sum of |piece values|) are bisected, up to
    max_bisections times; if the total estimate still exceeds rel_tol·max(|sum|, 10^-(dps+5)),
    InaccurateReference is raised (an integral below 10^-(dps+5) is held to that absolute floor).
    rel_tol defaults to 10^-(dps-10).  on_piece(), when given, is called after each piece.
    Returns the integral, or (integral, error estimate).

    The estimate is mpmath's extrapolation (made cautious over kinks by _CautiousTanhSinh), not a bound:
    it holds where every kink of fn and every feature narrower than a piece is at a breakpoint, and can
    be fooled elsewhere (module docstring: 1e-15 reported for an error of 2.5e-6 at an unnamed kink).
    For a verified integral use Arb (python-flint's acb.integral, as mp_context_reference does)."""
    import mpmath as mp

    rel = mp.mpf(10) ** (-(dps - 10)) if rel_tol is None else mp.mpf(rel_tol)
    with mp.workdps(dps + 10):
        a, b = mp.mpf(a), mp.mpf(b)
        ints = range(int(math.ceil(float(a))), int(math.floor(float(b))) + 1) if unit_split else ()
        pts = _knots(a, b, list(breakpoints) + list(ints), dps, max_piece)

        def piece(lo, hi):
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


def _arb_of(x):
    """x (a float or an mpmath number) as an exact Arb ball (its binary value, no rounding)."""
    import mpmath as mp
    from flint import arb

    sign, man, exp, _ = mp.mpf(x)._mpf_                 # (man_exp drops the sign)
    if not man:
        return arb(0)
    return arb(-int(man) if sign else int(man)) * arb(2) ** int(exp)


def _mpf_of(x):
    """The midpoint of the real Arb ball x as an mpmath number (exact)."""
    import mpmath as mp

    m, e = x.mid().man_exp()
    with mp.workprec(max(int(m).bit_length(), 53) + 10):
        return mp.mpf((int(m), int(e)))


def _knots(a, b, breakpoints, dps: int, max_piece: float | None = MAX_PIECE) -> list:
    """a, the breakpoints inside (a, b) and b, with pieces wider than max_piece (unless None) cut into equal
    parts, as mpmath numbers at dps + 10 digits (the pieces count_pieces counts): the pieces of mp_integrate
    and of mp_context_reference."""
    import mpmath as mp

    with mp.workdps(dps + 10):
        a, b = mp.mpf(a), mp.mpf(b)
        pts = sorted({a, b} | {mp.mpf(x) for x in breakpoints if a < mp.mpf(x) < b})
        if max_piece is None:
            return pts
        out = [pts[0]]
        for lo, hi in zip(pts[:-1], pts[1:]):
            n = max(1, int(math.ceil(float((hi - lo) / max_piece))))
            out += [lo + (hi - lo) * k / n for k in range(1, n)] + [hi]
    return out


def _check_context_instance(gamma, inducing, bandwidth, B, basis_centers, basis_bandwidth):
    """The arrays of mp_context_reference's instance, every one finite and the shapes agreeing: gamma and
    inducing (I), B (D x N) and basis_centers (N), the bandwidths > 0.  (NaN or inf became 0 in Arb's balls,
    and zip dropped the extra entries of a longer list.)"""
    out = []
    for name, x, ndim in (("gamma", gamma, 1), ("inducing", inducing, 1), ("B", B, 2),
                          ("basis_centers", basis_centers, 1)):
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of numbers; got {x!r}") from None
        if arr.ndim != ndim or arr.size == 0:
            raise ValueError(f"{name} must be a non-empty {'matrix (D x N)' if ndim == 2 else 'vector'}; "
                             f"got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite; got {x!r}")
        out.append(arr)
    g, s, Bm, cn = out
    if g.size != s.size:
        raise ValueError(f"gamma and inducing must have the same length; got {g.size} and {s.size}")
    if Bm.shape[1] != cn.size:
        raise ValueError(f"B must have one column per basis centre (N = {cn.size}); got shape {Bm.shape}")
    for name, bw in (("bandwidth", bandwidth), ("basis_bandwidth", basis_bandwidth)):
        if isinstance(bw, (bool, str)) or not (math.isfinite(float(bw)) and float(bw) > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {bw!r}")
    return g, s, Bm, cn


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

    The integrals are Arb's rigorous ones (python-flint's ``acb.integral``, Gauss-Legendre with error
    bounds from the integrand on complex ellipses around the path; F. Johansson, ICMS 2018) at dps + 10
    digits: each result is a ball guaranteed to contain the integral, and `error` is the error of the
    context that the radii of Z and of the N basis integrals allow, relative to the context's scale
    E_p[|B| psi] (componentwise at least |c|, so a bound on |c_d - c_d,true| / |c_d| wherever c_d does not
    cancel; a component that cancels to 0 gets an absolute bound on that scale instead of 1 / 0).  The kinks of exp_{2-alpha} (the
    roots of 1 + (alpha - 1) f, found by a scan and refined by mp_roots) are where u is not analytic: u is
    max(0, 1 + (alpha - 1) f)^(1/(alpha - 1)) on the path, and on the ellipses its analytic continuation
    where 1 + (alpha - 1) f keeps one sign, else no bound (Arb then bisects towards the kink).  Every
    integral is split at the kinks and at feature_breakpoints of every inducing point and basis centre (and
    of 0 for the normal base), in pieces of at most MAX_PIECE, so that each piece is short against the
    features (Arb's bounds stay tight and few bisections are needed).  A piece farther from a basis
    centre than psi_n can reach at this precision contributes at most its width x max u x psi_n there,
    which is added to the radius instead of integrating.  InaccurateReference is raised when any
    integral's radius exceeds rel_tol (default 10^-(dps-10)) of its value (floored at 10^-(dps+5)), and
    when a component's scale E_p[|B| psi]_d is below that floor (its error could only be stated absolutely).
    progress(k, N+1), when given, is called after each integral, and on_piece() after each piece of every
    integral (count_pieces gives the pieces of one integral before any work)."""
    import mpmath as mp
    from fractions import Fraction

    from flint import acb, arb, ctx

    from attnlab.numerics.deformed_exp import check_alpha

    if base not in ("normal", "uniform"):
        raise ValueError(f"base must be 'normal' or 'uniform'; got {base!r}")
    if family not in ("kernel-softmax", "kernel-deformed"):
        raise ValueError(f"family must be 'kernel-softmax' or 'kernel-deformed'; got {family!r}")
    if family == "kernel-deformed":
        if alpha is None or isinstance(alpha, (str, bool)):
            raise ValueError(f"alpha must lie in (1, 2] for kernel-deformed; got {alpha!r}")
        check_alpha(alpha)
    g, s, Bm, cn = _check_context_instance(gamma, inducing, bandwidth, B, basis_centers, basis_bandwidth)
    on_R = domain is None or (isinstance(domain, str) and domain.upper() == "R")
    if on_R:
        a, b = -float(half_width), float(half_width)
    else:
        if isinstance(domain, str) or len(domain) != 2:
            raise ValueError(f"domain must be 'R' or (a, b) with a < b; got {domain!r}")
        a, b = float(domain[0]), float(domain[1])
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"domain must be 'R' or (a, b) with finite a < b; got {(a, b) if not on_R else half_width!r}")
    check_resolvable(s, bandwidth, cn, basis_bandwidth, a, b)
    rel = mp.mpf(10) ** (-(dps - 10)) if rel_tol is None else mp.mpf(rel_tol)
    floor = mp.mpf(10) ** (-(dps + 5))
    kinks = []
    if family == "kernel-deformed":
        with mp.workdps(dps + 10):
            gm, sm, z, am = ([mp.mpf(float(x)) for x in g], [mp.mpf(float(x)) for x in s],
                             mp.mpf(float(bandwidth)), mp.mpf(float(alpha)))

            def arg(t):
                return 1 + (am - 1) * mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(gm, sm))

        def arg_np(x):
            return 1 + (float(alpha) - 1) * (np.exp(-float(bandwidth) * (x[:, None] - s[None, :]) ** 2) @ g)

        # f decays like exp(-bandwidth d^2) away from the inducing points: a root of 1 + (alpha - 1) f lies where
        # |f| has fallen to 1/(alpha - 1), within sqrt(log((alpha - 1) sum |gamma|)) widths of an inducing point
        # (12 widths covered sum |gamma| up to ~1e62 at alpha = 2; gamma = -1e80 put the roots 13.6 widths out,
        # unreported); the scan resolves features 1/sqrt(bandwidth) wide
        width = 1.0 / math.sqrt(float(bandwidth))
        reach = max(12.0, math.sqrt(max(math.log(max((float(alpha) - 1) * float(np.abs(g).sum()), 1.0)), 0.0)) + 2)
        brackets = []
        for si in sorted(set(s.tolist())):
            lo_scan, hi_scan = max(a, si - reach * width), min(b, si + reach * width)
            if hi_scan > lo_scan:
                brackets += find_sign_changes(arg_np, lo_scan, hi_scan, 4001)
        kinks = mp_roots(arg, sorted(set(brackets)), dps)
    brk = reference_breakpoints(s, bandwidth, cn, basis_bandwidth, base, a, b, kinks)
    knots = _knots(a, b, brk, dps)
    total = len(cn) + 1
    with ctx.workprec(int((dps + 10) * math.log2(10)) + 20):
        G, S = [_arb_of(float(x)) for x in g], [_arb_of(float(x)) for x in s]
        zeta, zeta_b = _arb_of(float(bandwidth)), _arb_of(float(basis_bandwidth))
        inv_sqrt2pi = 1 / (2 * arb.pi()).sqrt()
        pieces = [(_arb_of(lo), _arb_of(hi), float(lo), float(hi)) for lo, hi in zip(knots[:-1], knots[1:])]

        def f(t):
            acc = acb(0)
            for gi, si in zip(G, S):
                acc += gi * (-(zeta * (t - si) ** 2)).exp()
            return acc

        def q0(t):
            return inv_sqrt2pi * (-(t * t) / 2).exp() if base == "normal" else acb(1)

        if family == "kernel-softmax":
            def u(t, analytic):
                return inv_sqrt2pi * (f(t) - t * t / 2).exp() if base == "normal" else f(t).exp()
        else:
            am1 = _arb_of(float(alpha)) - 1
            power = 1 / (Fraction(float(alpha)) - 1)                 # exact: 2 at alpha = 1.5, 1 at alpha = 2
            p = int(power) if power.denominator == 1 else 1 / am1

            def u(t, analytic):
                x = 1 + am1 * f(t)
                if x.real > 0:                                       # one sign on the whole ball: analytic
                    return q0(t) * (x ** p if isinstance(p, int) else x.pow(p, analytic=analytic))
                if x.real < 0:
                    return acb(0)
                if analytic:                                         # a kink within reach: no bound here
                    return acb("nan")
                # on the path, across a kink: max(0, x)^p lies in [0, top^p]
                return q0(t) * arb(0).union(arb(x.real.upper()) ** p)

        def integral(fn, skip=None):
            """sum over the pieces of Arb's integral of fn, as (value, radius) in mpmath numbers; skip(piece)
            gives a bound of the piece's integral instead (added to the radius), or None."""
            tot, extra = acb(0), arb(0)
            for piece in pieces:
                bound = None if skip is None else skip(piece)
                if bound is not None:
                    extra += bound
                else:
                    tot += acb.integral(fn, piece[0], piece[1])
                if on_piece is not None:
                    on_piece()
            if not (tot.real.is_finite() and tot.imag.is_finite() and tot.imag.contains(0)):
                raise InaccurateReference(f"Arb's enclosure of an integral is not a finite real ball ({tot}): "
                                          "no reference returned")
            val = tot.real
            rad = arb(val.rad()) + abs(tot.imag).upper() + extra.upper()
            return _mpf_of(val), _mpf_of(arb(rad.upper()))

        def check(name, v, e):
            if e > rel * max(abs(v), floor):
                raise InaccurateReference(
                    f"Arb's enclosure of {name} is {mp.nstr(v, 8)} +- {mp.nstr(e, 3)}, wider than the claimed "
                    f"{mp.nstr(rel, 3)} x |integral| on [{a:g}, {b:g}]: no reference returned")

        with mp.workdps(dps + 10):
            Z, eZ = integral(u)
            check("Z", Z, eZ)
            if progress:
                progress(1, total)
            # u <= U = max q0 x exp_{2-alpha}(sum of the positive gamma_i) (exp for kernel softmax) everywhere;
            # on a piece at distance d from a basis centre with basis_bandwidth d^2 > cut, the integral of u psi_n
            # is at most its width x U exp(-basis_bandwidth d^2) < width x 10^-(dps + PSI_SKIP_DIGITS): that
            # bound is added to the radius, not integrated
            gpos = sum(gi for gi in G if gi > 0) + arb(0)
            top = gpos.exp() if family == "kernel-softmax" else (1 + am1 * gpos) ** p
            U = (inv_sqrt2pi if base == "normal" else arb(1)) * top
            cut = (dps + PSI_SKIP_DIGITS) * math.log(10) + max(float(U.upper().log()), 0.0)
            zb_f = float(basis_bandwidth)

            psi_int, psi_err = [], []
            for k, c in enumerate(cn):
                cb, c_f = _arb_of(float(c)), float(c)

                def skip(piece, c_f=c_f, cb=cb):
                    d = max(0.0, piece[2] - c_f, c_f - piece[3])
                    if not zb_f * d * d > cut:
                        return None
                    dist = piece[0] - cb if piece[2] > c_f else cb - piece[1]          # (exact)
                    return (piece[1] - piece[0]) * U * (-(zeta_b * dist ** 2)).exp()

                v, e = integral(lambda t, _, cb=cb: u(t, _) * (-(zeta_b * (t - cb) ** 2)).exp(), skip)
                check(f"the integral of u psi_{k + 1}", v, e)
                psi_int.append(v)
                psi_err.append(e)
                if progress:
                    progress(k + 2, total)
            Bmp = [[mp.mpf(float(x)) for x in row] for row in Bm]
            ctx_ = [mp.fsum(Bij * pj for Bij, pj in zip(row, psi_int)) / Z for row in Bmp]
            for d, row in enumerate(Bmp):
                scale_d = mp.fsum(abs(Bij) * pj for Bij, pj in zip(row, psi_int)) / abs(Z)
                if scale_d < floor and any(row):            # (a row of zeros is c_d = 0 exactly)
                    # the error below is relative to max(E_p[|B| psi]_d, floor): under the floor it is absolute, and a
                    # component whose every piece was bounded came back 0 with an "error" of 1e-44 (a basis centre
                    # 15 widths off [0, 1], true context 5.7e-100)
                    raise InaccurateReference(
                        f"context component {d + 1}: its scale E_p[|B| psi] = {mp.nstr(scale_d, 3)} is below "
                        f"10^-{dps + 5} (the basis functions it weighs lie too far from the domain): "
                        "no relative reference; move the basis centres towards the domain")
            # error of c_d = (sum_n B_dn P_n) / Z (|B| radii of the P_n, plus |c_d| eZ / Z) relative to c_d's
            # scale sum_n |B_dn| P_n / Z = E_p[|B| psi]_d, which is >= |c_d| (u, psi >= 0): so a component that
            # cancels to 0 (an odd integrand) has a finite relative error, not 1 / 0
            err = max((mp.fsum(abs(Bij) * ej for Bij, ej in zip(row, psi_err)) / abs(Z) + abs(cd) * eZ / abs(Z))
                      / max(mp.fsum(abs(Bij) * pj for Bij, pj in zip(row, psi_int)) / abs(Z), floor)
                      for row, cd in zip(Bmp, ctx_))
    # the reference is given to dps digits, so its relative error is never stated finer than 10^-dps
    return Z, ctx_, kinks, max(float(err), 10.0 ** (-dps))
