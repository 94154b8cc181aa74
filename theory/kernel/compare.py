"""`attnlab compare kernel-quadrature` (alias `attnlab converge`): the batched torch trapezoid rule
against a >= 50-digit verified reference (Arb's rigorous integrals, numerics.mp_reference) for the
context vector of kernel continuous attention.

Instance (JSON; every key optional, defaults = the Cor E.3 instance of the paper on R):
    family          "kernel-softmax"  (u = q0 exp(f))  |  "kernel-deformed" (u = q0 exp_{2-alpha}(f):
                    Algorithm 1 with f in the role of f~, no max shift); "alpha" in (1, 2] for the latter
                    (alpha = 2 is kernel sparsemax)
    gamma, inducing, bandwidth     f(t) = sum_i gamma_i exp(-bandwidth (t - inducing_i)^2)
    base            "normal" (q0 = standard normal pdf) | "uniform" (q0 = 1; only on [a, b])
    domain          [a, b] with "grids" (numbers of grid points G), or "R" with "steps" (spacings h)
    B (D x N), basis_centers (N), basis_bandwidth    V(t) = B psi(t), psi_n = exp(-basis_bandwidth (t - c_n)^2)
    dps             digits of the reference (50 to 200; default 50)

Output per grid: Z = int u, c = int V u / Z (trapezoid, float64 torch), the references Z_ref and
c_ref (Arb, split at the kinks of the support), the errors, the fitted log-log slope of the context
error against h (against 1/G on [a, b]) and the rate judged from the local orders
log(e_k/e_k+1)/log(h_k/h_k+1) of the errors above the float64 floor (attnlab.numerics.convergence.rate_parts:
faster than any power when the last exceeds 6 and none falls by 0.5 or more from the one before; otherwise
'algebraic'), for err_context and err_Z.  Where the integrand has kinks (kernel sparsemax's support ends)
the trapezoid rule is O(h^2) as h -> 0: a faster rate measured there is pre-asymptotic, and ``rate_note``
says so.

On R the trapezoid sum runs over the nodes k h with |k h| <= L, L = max(17, the smallest L whose
normal tail times exp(sum_i max(gamma_i, 0)) times max|V| is below 1e-60); the reference integrates
over the same [-L, L].  Dropping the tails changes neither side by more than 1e-60, far below float64.
"""
from __future__ import annotations

from attnlab.errors import ArgumentParser, UsageError
from attnlab.numerics.mp_reference import MAX_PIECE

import json
import math
import sys

def _default_instance() -> dict:
    """The Cor E.3 instance: gamma, B ~ U(-1, 1) from default_rng(0), 10 inducing points
    linspace(0, 1, 10), zeta2 = 10, V = sum_i B_i k(., t_i) (D = 1, basis = the kernel sections)."""
    from attnlab.theory.kernel.instances import INDUCING, ZETA2, draw

    g, B = draw(0)
    return {"family": "kernel-softmax", "gamma": [float(x) for x in g],
            "inducing": [float(x) for x in INDUCING], "bandwidth": ZETA2, "base": "normal", "domain": "R",
            "steps": [1.0, 0.5, 0.25, 0.125, 0.0625], "B": [[float(x) for x in B]],
            "basis_centers": [float(x) for x in INDUCING], "basis_bandwidth": ZETA2}


class InstanceError(ValueError):
    pass


MAX_NODES = 2_000_000            # trapezoid nodes per grid (float64 torch: 16 MB per vector)
MAX_BYTES = 2 * 2 ** 30          # the trapezoid's G x I kernel matrix and N x G basis (float64), with temporaries
MAX_PIECES = 20_000              # pieces of one reference integral
LARGE_SECONDS = 120.0            # estimated reference time beyond which --allow-large is needed
# the reference's cost: N + 1 integrals x pieces x Arb's evaluations of u per piece (~30 at 50 digits) x
# (I + 2) exponentials at `dps` digits, ~5 us each at 50 digits, growing like dps^2 (fitted: the Cor E.3
# instance, 104 pieces, I = N = 10: 2.0 s)
_EVALS_PER_PIECE = 30
_SECONDS_PER_EXP = 5e-6


def _num_list(inst, key, positive=False, integer=False, min_len=1):
    v = inst.get(key)
    if not isinstance(v, list) or len(v) < min_len or not all(isinstance(x, (int, float))
                                                               and not isinstance(x, bool) for x in v):
        raise InstanceError(f"{key} must be a list of >= {min_len} numbers; got {_json_words(v)}")
    if not all(math.isfinite(x) for x in v):
        raise InstanceError(f"{key} must be finite")
    if positive and not all(x > 0 for x in v):
        raise InstanceError(f"{key} must be > 0")
    if integer and not all(float(x).is_integer() and x >= 2 for x in v):
        raise InstanceError(f"{key} must be integers >= 2 (numbers of grid points)")
    return [float(x) for x in v]


def _positive(inst, key):
    v = inst.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
        raise InstanceError(f"{key} must be a number > 0; got {_json_words(v)}")
    return float(v)


def _json_words(v) -> str:
    """A value of the instance as its JSON reads (null, true; not Python's None, True), cut at 60 characters."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(inst: dict) -> dict:
    """Check an instance; returns a normalized copy or raises InstanceError (one line)."""
    if not isinstance(inst, dict):
        raise InstanceError("the instance must be a JSON object")
    defaults = _default_instance()
    out = dict(defaults)
    explicit_domain = "domain" in inst
    out.update(inst)
    if explicit_domain and inst["domain"] != "R":
        # a domain [a, b] must come with its own grids (the default steps are for R, where {"domain": "R"} keeps
        # them: it was refused with "steps must be a list of >= 2 numbers; got null")
        out.pop("steps" if "steps" not in inst else "_", None)
        out.pop("grids" if "grids" not in inst else "_", None)
    known = set(defaults) | {"alpha", "grids", "dps"}
    unknown = sorted(set(inst) - known)
    if unknown:
        raise InstanceError(f"unknown key(s) {unknown}; allowed: {sorted(known)}")
    fam = out["family"]
    if fam not in ("kernel-softmax", "kernel-deformed"):
        raise InstanceError(f"family must be one of kernel-softmax, kernel-deformed; got {_json_words(fam)}")
    if fam == "kernel-deformed":
        a = out.get("alpha")
        if not isinstance(a, (int, float)) or isinstance(a, bool) or not (1.0 < a <= 2.0):
            shown = "no alpha" if "alpha" not in out else _json_words(a)   # (JSON's words)
            raise InstanceError(f"alpha must be a number in (1, 2] for kernel-deformed; got {shown}")
        out["alpha"] = float(a)
    else:
        if out.get("alpha") is not None:       # (it was dropped, and the record said alpha null)
            raise InstanceError(f"alpha is the index of family kernel-deformed; family {fam} has none: leave it "
                                f"out, or give family kernel-deformed (got alpha {_json_words(out['alpha'])})")
        out["alpha"] = None
    g = _num_list(out, "gamma")
    s = _num_list(out, "inducing")
    if len(g) != len(s):
        raise InstanceError(f"gamma (length {len(g)}) and inducing (length {len(s)}) must have the same length")
    out["bandwidth"] = _positive(out, "bandwidth")
    out["basis_bandwidth"] = _positive(out, "basis_bandwidth")
    c = _num_list(out, "basis_centers")
    B = out.get("B")
    if (not isinstance(B, list) or not B or not all(isinstance(r, list) for r in B)
            or not all(len(r) == len(c) for r in B)):
        raise InstanceError(f"B must be a D x N list of lists with N = len(basis_centers) = {len(c)}")
    for r in B:
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in r):
            raise InstanceError("B must hold finite numbers")
        if sum(abs(x) for x in r) > 1e100:      # c = B E_p[psi] overflowed to inf at B ~ 1e308
            raise InstanceError(f"B: a row's entries sum to {sum(abs(x) for x in r):.3g} in absolute value, "
                                "beyond 1e100 (the context and its errors must stay finite in float64); rescale B")
    if out["base"] not in ("normal", "uniform"):
        raise InstanceError(f"base must be one of normal, uniform; got {_json_words(out['base'])}")
    dom = out["domain"]
    if isinstance(dom, str) and dom.upper() == "R":
        if out["base"] == "uniform":
            raise InstanceError("base uniform is not a probability measure on R: use domain [a, b] or base normal")
        out["domain"] = "R"
        if "grids" in inst:                     # (ignored without a word: the rule on R takes steps)
            raise InstanceError("grids are the trapezoid's points on a domain [a, b]; on R give steps (the "
                                "spacings h), or give domain [a, b]")
        out["steps"] = sorted(_num_list(out, "steps", positive=True, min_len=2), reverse=True)   # coarse to fine
    elif isinstance(dom, list) and len(dom) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                         and math.isfinite(x) for x in dom) and dom[1] > dom[0]:
        out["domain"] = [float(dom[0]), float(dom[1])]
        if "steps" in inst:
            raise InstanceError("steps are the trapezoid's spacings on R; on a domain [a, b] give grids (numbers of "
                                "points), or give domain \"R\"")
        if "grids" not in inst:
            raise InstanceError("a domain [a, b] needs grids: the numbers of trapezoid points G, at least two")
        out["grids"] = sorted(int(x) for x in _num_list(out, "grids", integer=True, min_len=2))   # coarse to fine
    else:
        raise InstanceError(f"domain must be \"R\" or [a, b] with a < b; got {_json_words(dom)}")
    # what float64 and the trapezoid can take (the reference is Arb's and has no such limits)
    gpos = sum(max(x, 0.0) for x in out["gamma"])
    if fam == "kernel-softmax" and gpos > 700:
        raise InstanceError(f"gamma: the positive gamma_i sum to {gpos:g}, so exp(f) can reach exp({gpos:g}), "
                            "beyond float64 (max exp(709)); scale gamma down")
    if fam == "kernel-deformed":
        a = out["alpha"]
        growth = math.log1p((a - 1) * gpos) / (a - 1)      # log of exp_{2-alpha}(sum gamma+)
        if growth > 700:                                    # u overflowed: Z = inf and a NaN context, exit 0
            raise InstanceError(f"gamma: the positive gamma_i sum to {gpos:g}, so exp_(2-alpha)(f) can reach "
                                f"exp({growth:.4g}), beyond float64 (max exp(709)); scale gamma down")
    neg = sum(min(x, 0.0) for x in out["gamma"])
    if neg < -1e300:
        raise InstanceError(f"gamma: the negative gamma_i sum to {neg:g}, beyond float64's range; scale gamma down")
    if out["domain"] == "R":
        L = _half_width(out)
        hs = out["steps"]
        if len(set(hs)) != len(hs):
            raise InstanceError(f"steps must be distinct (a repeated step gives a meaningless slope); got {hs}")
        if max(hs) > L / 2:
            raise InstanceError(f"steps must be <= {L / 2:g} (half the truncation half-width {L:g}: at least "
                                f"5 nodes); got {max(hs):g}")
        if 2 * L / min(hs) > MAX_NODES:
            raise InstanceError(f"steps must be >= {2 * L / MAX_NODES:.2g} (at most {MAX_NODES:,} nodes on "
                                f"[-{L:g}, {L:g}]); got {min(hs):g}")
    else:
        G = out["grids"]
        if len(set(G)) != len(G):
            raise InstanceError(f"grids must be distinct (a repeated grid gives a meaningless slope); got {G}")
        if max(G) > MAX_NODES:
            raise InstanceError(f"grids must be <= {MAX_NODES:,} points; got {max(G):,}")
        import torch

        from attnlab.numerics.quadrature import uniform_grid

        a, b = out["domain"]
        if not bool((uniform_grid(a, b, max(G), dtype=torch.float64).diff() > 0).all()):
            # (the trapezoid's weights refused the grid with a traceback: [1, 1 + 2^-52] holds two float64 numbers)
            raise InstanceError(f"domain [{a!r}, {b!r}] is too narrow for {max(G):,} distinct float64 grid points; "
                                "widen it or use fewer points")
    dps = out.get("dps", 50)
    if not isinstance(dps, int) or isinstance(dps, bool) or dps < 50 or dps > 200:
        raise InstanceError(f"dps must be an integer in [50, 200]; got {_json_words(dps)}")
    out["dps"] = dps
    cost = estimate(out)
    if cost["bytes"] > MAX_BYTES:
        raise InstanceError(f"the trapezoid needs ~{cost['bytes'] / 2 ** 30:.1f} GiB ({cost['nodes']:,} grid points x "
                            f"({len(out['inducing'])} inducing points + {len(out['basis_centers'])} basis centres) in "
                            f"float64), over {MAX_BYTES / 2 ** 30:g} GiB: use fewer points, a coarser finest grid or fewer "
                            "inducing points / centres")
    if cost["pieces"] > MAX_PIECES:
        raise InstanceError(f"the reference would split each integral into ~{cost['pieces']:.3g} pieces (the "
                            f"domain's width over {MAX_PIECE:g}, and ~22 breakpoints per inducing point and centre), over "
                            f"{MAX_PIECES:,}: use a narrower domain or fewer inducing points / centres")
    return out


def estimate(inst: dict) -> dict:
    """What an instance costs before any work: the finest grid's nodes, the trapezoid's bytes, the
    reference's pieces per integral and its estimated seconds (all sizes: nodes, inducing points I,
    centres N, the domain's width, the features' widths, dps)."""
    from attnlab.numerics.mp_reference import (InaccurateReference, check_resolvable, count_pieces,
                                               reference_breakpoints)

    if inst["domain"] == "R":
        L = _half_width(inst)
        a, b = -L, L
        nodes = int(2 * L / min(inst["steps"])) + 1
        all_nodes = sum(int(2 * L / h) + 1 for h in inst["steps"])
    else:
        a, b = inst["domain"]
        nodes = int(max(inst["grids"]))
        all_nodes = sum(int(G) for G in inst["grids"])
    try:
        check_resolvable(inst["inducing"], inst["bandwidth"], inst["basis_centers"], inst["basis_bandwidth"], a, b)
    except InaccurateReference as exc:
        raise InstanceError(f"the reference for this instance cannot be trusted: {exc}") from None
    n_ind, n_cen = len(inst["inducing"]), len(inst["basis_centers"])
    nbytes = 8 * nodes * (n_ind + n_cen + 4) * 2
    if (b - a) / MAX_PIECE > MAX_PIECES:           # do not build a list of 1e300 pieces to count them
        pieces = (b - a) / MAX_PIECE
    else:
        pieces = count_pieces(a, b, reference_breakpoints(inst["inducing"], inst["bandwidth"], inst["basis_centers"],
                                                          inst["basis_bandwidth"], inst["base"], a, b))
    scale = (inst["dps"] / 50) ** 2
    seconds = (n_cen + 1) * pieces * _EVALS_PER_PIECE * scale * (n_ind + 2) * _SECONDS_PER_EXP
    # the trapezoid: every grid's nodes x (I + N) kernel evaluations, ~20 ns each in float64 torch
    seconds += all_nodes * (n_ind + n_cen + 2) * 2e-8
    return dict(nodes=nodes, bytes=nbytes, pieces=pieces, seconds=seconds, integrals=n_cen + 1)


def _half_width(inst) -> float:
    """Truncation of R (see the module docstring)."""
    gpos = sum(max(x, 0.0) for x in inst["gamma"])
    if inst["family"] == "kernel-deformed":
        a = inst["alpha"]
        growth = math.log(max(1.0, 1 + (a - 1) * gpos)) / (a - 1)      # log of exp_{2-alpha}(sum gamma+)
    else:
        growth = gpos
    vmax = sum(abs(x) for row in inst["B"] for x in row) + 1.0
    L = 17.0
    while _log_normal_tail(L) + growth + math.log(vmax) > math.log(1e-60) - 1 and L < 60:
        L += 0.5
    return L


def _log_normal_tail(x: float) -> float:
    """log erfc(x / sqrt 2) = log(2 P(N(0,1) > x)), without underflow for large x (the asymptotic
    series of erfc beyond x = 30, where erfc underflows float64)."""
    if x < 30:
        return math.log(math.erfc(x / math.sqrt(2)))
    return -x * x / 2 - math.log(x) + 0.5 * math.log(2 / math.pi) + math.log1p(-1 / (x * x))


def trapezoid_context(inst):
    """Per grid: (label, h, Z, context, scale) as the library's kernel attention computes them in float64: f =
    kernel_expansion of gaussian_kernel sections, the density and Z by
    numerics.continuous_attention.kernel_softmax (Z = exp A, log q0 passed) or kernel_deformed (Algorithm 1,
    q0 passed), the context by context_vector with Psi the basis' Gaussian sections, and its scale E_p[|B| psi]
    (the same with |B|: at least |c| componentwise, and what the rounding of c is relative to)."""
    import torch

    from attnlab.numerics import continuous_attention as ca
    from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion
    from attnlab.numerics.quadrature import real_line_grid, uniform_grid

    dt = torch.float64
    gam = torch.tensor(inst["gamma"], dtype=dt)
    ind = torch.tensor(inst["inducing"], dtype=dt)
    cen = torch.tensor(inst["basis_centers"], dtype=dt)
    B = torch.tensor(inst["B"], dtype=dt)
    if inst["domain"] == "R":
        L = _half_width(inst)
        grids = [(f"h={h:g}", h, real_line_grid(h, L)) for h in inst["steps"]]
    else:
        a, b = inst["domain"]
        grids = [(f"G={G}", (b - a) / (G - 1), uniform_grid(a, b, G)) for G in inst["grids"]]
    out = []
    for label, h, t in grids:
        f = kernel_expansion(gam, gaussian_kernel(t, ind, inst["bandwidth"]))
        Psi = gaussian_kernel(t, cen, inst["basis_bandwidth"])          # psi_n(t) = exp(-bw (t - c_n)^2)
        far = (" (the normal base q0 = phi(t) is below float64's 1e-308 wherever |t| > 37.6: move the domain "
               "towards 0 or use base uniform)" if inst["base"] == "normal" else "")
        if inst["family"] == "kernel-softmax":     # (exp(f) > 0 everywhere: only q0 or exp(f)'s range can vanish)
            empty = UsageError(f"--instance: the density is zero on the whole grid {label}: u = q0 exp(f) underflows "
                               f"float64 on every node{far or '; raise gamma'}")
        else:
            empty = UsageError(f"--instance: the density is zero on the whole grid {label} (u = q0 exp_(2-alpha)(f) "
                               "vanishes where 1 + (alpha-1) f <= 0): its support is empty or narrower than "
                               f"the grid spacing; refine the grid or raise gamma{far}")
        if inst["family"] == "kernel-softmax":
            log_q0 = -t * t / 2 - 0.5 * math.log(2 * math.pi) if inst["base"] == "normal" else None
            dens, A = ca.kernel_softmax(f, t, log_q0)
            Z = torch.exp(A)
        else:
            q0 = torch.exp(-t * t / 2) / math.sqrt(2 * math.pi) if inst["base"] == "normal" else None
            try:
                dens, Z = ca.kernel_deformed(f, t, inst["alpha"], q0)
            except ValueError:                          # Z = 0: an empty support on this grid
                raise empty from None
        if not float(Z) > 0:
            raise empty
        if float(Z) < sys.float_info.min:          # (a subnormal Z: then the context overflowed, said as the density's)
            raise UsageError(f"--instance: the trapezoid on the grid {label} gives Z = {float(Z):g}, below float64's "
                             "normal range (2.2e-308): the domain is too narrow or the density too small to integrate "
                             "in float64; widen the domain or raise gamma")
        ctx = ca.context_vector(dens, t, Psi, B)
        scale = ca.context_vector(dens, t, Psi, B.abs())          # E_p[|B| psi] >= |c|: the context's scale
        if not (math.isfinite(float(Z)) and bool(torch.isfinite(ctx).all())):
            raise UsageError(f"--instance: the trapezoid on the grid {label} is not finite in float64 (Z = {float(Z):g}): "
                             "the density overflows; scale gamma or B down")
        out.append((label, h, float(Z), [float(x) for x in ctx], [float(x) for x in scale]))
    return out


def _progress(cost: dict):
    """Progress of the reference on stderr, piece by piece from the first integral on, when its estimated
    time (estimate()) exceeds 5 s; the estimate is printed first."""
    from attnlab.progress import Progress

    if cost["seconds"] <= 5.0:
        return None
    total = int(cost["pieces"]) * cost["integrals"]
    print(f"attnlab compare kernel-quadrature: the reference needs {cost['integrals']} integrals of "
          f"~{int(cost['pieces']):,} pieces each, ~{cost['seconds']:.0f} s in all (estimated)", file=sys.stderr, flush=True)
    bar = Progress(total, "reference, piece")
    done = [0]

    def on_piece():
        done[0] += 1
        bar.update(min(done[0], total))      # bisected pieces come on top of the count

    return on_piece


def compare(inst: dict, progress=None, on_piece=None) -> dict:
    import mpmath as mp
    import numpy as np

    from attnlab.numerics.convergence import rate_parts
    from attnlab.numerics.mp_reference import InaccurateReference, mp_context_reference

    rows = trapezoid_context(inst)
    dom = None if inst["domain"] == "R" else inst["domain"]
    L = _half_width(inst) if dom is None else None
    try:
        Zr, cr, kinks, ref_err = mp_context_reference(
            inst["gamma"], inst["inducing"], inst["bandwidth"], inst["B"], inst["basis_centers"],
            inst["basis_bandwidth"], family=inst["family"], alpha=inst["alpha"], base=inst["base"], domain=dom,
            dps=inst["dps"], progress=progress, on_piece=on_piece, **({} if L is None else {"half_width": L}))
    except InaccurateReference as exc:
        raise UsageError(f"--instance: the reference for this instance cannot be trusted: {exc}") from None
    if ref_err > 1e-25:             # float64 errors down to ~1e-16 need a reference far finer than that
        raise UsageError(f"--instance: the reference for this instance cannot be trusted: its stated relative error "
                         f"{ref_err:.1e} is above 1e-25, too coarse to measure float64 errors against (integrals "
                         f"of size Z = {mp.nstr(Zr, 3)} sit near the absolute floor of the quadrature); rescale "
                         "the instance")
    Zrf = float(Zr)
    err_Z = [abs(float(mp.mpf(z) - Zr)) for _, _, z, _, _ in rows]
    err_c = [max(abs(float(mp.mpf(x) - y)) for x, y in zip(c, cr)) for _, _, _, c, _ in rows]
    hs = np.array([h for _, h, _, _, _ in rows])
    xs = hs if dom is None else 1.0 / np.array(inst["grids"], float)
    labels = [r[0] for r in rows]
    # errors at the float64 floor say nothing about the rate (numerics.convergence.rate_parts).  The floor is
    # relative to what the sums are made of: Z is a sum of positive terms (1e3 eps |Z|), and c = B P / Z rounds
    # relative to its scale E_p[|B| psi] on the finest grid (>= |c|; a component that cancels to 0 keeps the
    # rounding of its terms).  A floor of 1e3 eps max(1, |c|) called 100 % errors "at floor" where |c| ~ 1e-21.
    floor = 1e3 * np.finfo(float).eps * max(min(rows, key=lambda r: r[1])[4])
    floor_Z = 1e3 * np.finfo(float).eps * abs(Zrf)
    # one value per key: the rate's kind, its slope, the grid from which the errors are at the floor
    fit, fit_Z = rate_parts(xs, err_c, floor, labels), rate_parts(xs, err_Z, floor_Z, labels)
    kinks = list(dict.fromkeys(mp.nstr(k, 20) for k in kinks))     # (each integral reported its own: 2 as 8)
    fast = [r for r in (fit["rate"], fit_Z["rate"]) if r.endswith("exponential")]
    note = (f"the integrand has {len(kinks)} kink(s), where the trapezoid rule is O(h^2) as h -> 0 (App. E.3): the "
            f"{fast[0]} rate of these grids is pre-asymptotic; finer grids show the h^2 rate" if kinks and fast else None)
    return dict(instance={k: v for k, v in inst.items()}, grids=labels,
                Z=[r[2] for r in rows], Z_ref=mp.nstr(Zr, inst["dps"]), context=[r[3] for r in rows],
                context_ref=[mp.nstr(x, inst["dps"]) for x in cr], ref_error_estimate=ref_err,
                err_Z=err_Z, err_context=err_c,
                slope=fit["slope"], slope_against="h" if dom is None else "1/G", rate=fit["rate"],
                floor_from=fit["floor_from"], rate_Z=fit_Z["rate"], slope_Z=fit_Z["slope"],
                floor_from_Z=fit_Z["floor_from"],
                rate_note=note, kinks=kinks, truncation_half_width=L,
                float64_floor=floor, points_in_fit=int(sum(e > floor for e in err_c)))


def short_number(text: str, digits: int) -> str:
    """A reference printed with `dps` digits, shortened to `digits` significant digits (rounded, with its
    exponent: cutting the string would drop the exponent of 1.04e257 or print 1e30 as a cut integer)."""
    import mpmath as mp

    with mp.workdps(max(digits, 15) + 5):
        return mp.nstr(mp.mpf(text), digits)


def rate_text(res: dict, suffix: str = "") -> str:
    """The rate of a result's err_context (or, with suffix '_Z', of err_Z) as one line for a reader."""
    from attnlab.numerics.convergence import rate_text as text

    return text({k: res[k + suffix] for k in ("rate", "slope", "floor_from")})


def _print_text(res):
    inst = res["instance"]
    fam = inst["family"] + (f" (alpha={inst['alpha']:g})" if inst["alpha"] else "")
    dom = "R" if inst["domain"] == "R" else f"[{inst['domain'][0]:g}, {inst['domain'][1]:g}]"
    print(f"{fam}, base {inst['base']}, domain {dom}"
          + (f" (truncated to [-{res['truncation_half_width']:g}, {res['truncation_half_width']:g}])"
             if inst["domain"] == "R" else ""))
    print(f"reference ({inst['dps']} digits, split at {len(res['kinks'])} kink(s) and at every inducing point "
          f"and centre; relative error <= {res['ref_error_estimate']:.1e} by Arb's radii, c's against its scale "
          "E_p[|B| psi]):")
    print(f"  Z_ref = {short_number(res['Z_ref'], 20)}")
    print(f"  c_ref = [{', '.join(short_number(x, 17) for x in res['context_ref'])}]")
    print(f"{'grid':>10}  {'Z':>22}  {'err_Z':>9}  {'err_c':>9}  context")
    for g, z, ez, ec, c in zip(res["grids"], res["Z"], res["err_Z"], res["err_context"], res["context"]):
        print(f"{g:>10}  {z:22.16g}  {ez:9.2e}  {ec:9.2e}  [{', '.join(f'{x:.12g}' for x in c)}]")
    sl = "n/a" if res["slope"] is None else f"{res['slope']:.3f}"
    print(f"log-log slope of err_context against {res['slope_against']}: {sl} "
          f"({res['points_in_fit']} grids above the float64 floor {res['float64_floor']:.1e}); "
          f"rate of err_context: {rate_text(res)}; of err_Z: {rate_text(res, '_Z')}")
    if res.get("rate_note"):
        print(f"note: {res['rate_note']}")


def main(argv: list[str] | None = None, prog: str = "attnlab compare kernel-quadrature") -> int:
    p = ArgumentParser(
        prog=prog, description="Trapezoid rule (batched torch, float64) against a >= 50-digit verified (Arb) "
        "reference for Z and the context vector c = E_p[V] of kernel continuous attention.",
        epilog="FILE keys: family (kernel-softmax | kernel-deformed), alpha (in (1, 2], kernel-deformed), gamma, "
               "inducing, bandwidth, base (normal | uniform), domain (\"R\" | [a, b]), steps (on R) or grids "
               "(on [a, b]), B (D x N), basis_centers (N), basis_bandwidth, dps (50 to 200). Without --instance: the "
               "paper's Cor E.3 instance on R.")
    p.add_argument("--instance", metavar="FILE.json", help="the instance (JSON); default: built-in Cor E.3 instance")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON ('-' for stdout)")
    p.add_argument("--allow-large", action="store_true",
                   help=f"run even when the reference is estimated to take more than {LARGE_SECONDS:g} s")
    args = p.parse_args(argv)
    try:
        if args.instance is not None:
            if not args.instance.strip():     # '' was read as "no instance": the built-in one, silently
                raise InstanceError("--instance is empty; give a JSON file (or leave --instance out for the "
                                    "built-in Cor E.3 instance)")
            from attnlab.atomic_io import read_json

            try:
                raw = read_json(args.instance)  # unreadable, binary, not JSON, nested too deeply, 1e400
            except ValueError as exc:
                raise InstanceError(f"--instance: {exc}") from None
        else:
            raw = {}
        inst = validate(raw)
    except InstanceError as exc:
        raise UsageError(str(exc) if str(exc).startswith("--instance") else f"--instance: {exc}") from None
    from attnlab.atomic_io import check_json_dest, write_json_dest

    check_json_dest(args.json)                 # before the work, not after it
    cost = estimate(inst)
    if cost["seconds"] > LARGE_SECONDS and not args.allow_large:
        raise UsageError(f"--instance: this comparison is estimated at ~{cost['seconds']:.0f} s (the trapezoid on "
                         f"{len(inst.get('grids') or inst.get('steps'))} grids of up to {cost['nodes']:,} points, and the "
                         f"reference: {cost['integrals']} integrals of ~{int(cost['pieces']):,} pieces at "
                         f"{inst['dps']} digits, {len(inst['inducing'])} inducing points); pass --allow-large to run "
                         "it anyway")
    res = compare(inst, on_piece=_progress(cost))
    if args.json == "-":
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        _print_text(res)
        write_json_dest(args.json, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
