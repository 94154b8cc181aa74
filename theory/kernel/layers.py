"""Claims that the continuous-attention layers users put in their models compute the kernel paper's
Eq. (1) as the paper builds it (Sec. 3, Eq. (1), (2), (6), (8); Sec. 5.2; App. E.1; Algorithm 1).

The layers (numerics.continuous_layers: continuous_attention, ContinuousMultiheadAttention,
ContinuousAttention, GaussianBasis, ridge_value_coefficients, moments_from_discrete) are held to a
transcription written from the paper's text, not from the code: for each query the scores
s_j = scale <q, k_j> at the positions t_j = j/(S-1) of [0, 1]; the density (Gaussian or truncated parabola
with the moments of softmax(s) over the positions, normalised on R by root finding, integrated by adaptive
quadrature whose own error estimate is checked; or the kernel exponential / deformed family
f(t) = sum_j s_j k(t, t_j) on the grid, shifted by its maximum as App. E.1 prescribes, by the trapezoid
rule of Algorithm 1); the ridge value function B = H F^T (F F^T + lambda I)^{-1} of Eq. (6) over the
allowed keys; and c = B E_p[Psi].  The sequence layer's and the networks' (kernel.networks) oracle pieces
compute in float64 (written-out sums, one ridge solve per query); the per-head module's kernel densities
in mpmath.
"""
from __future__ import annotations

import math

import numpy as np

from attnlab.theory._errors import worse as _worse
from attnlab.catalog import claim, holds_if
from attnlab.theory._errors import finite_or_inf as _finite_or_inf
from attnlab.theory._inputs import at_run_time

#: float64 layer against the transcription (relative to the largest entry of the output)
LAYER_TOL = 1e-10


def _mp():
    import mpmath as mp

    return mp


def _psi(t, c, s):
    mp = _mp()
    return mp.exp(-(t - c) ** 2 / (2 * s * s)) / (s * mp.sqrt(2 * mp.pi))


def _quad(fn, knots):
    """int fn over the pieces between the knots by scipy.integrate.quad (float64, adaptive Gauss-Kronrod),
    the summed error estimate held below 1e-13 + 1e-12 |total| (the integrals here are E_p[psi_n] <= 4, and
    the claim's tolerance is 1e-10 of the largest output): else no number (ArithmeticError)."""
    import warnings

    from scipy.integrate import IntegrationWarning, quad

    total, err = 0.0, 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)     # (its estimate is checked below instead)
        for lo, hi in zip(knots[:-1], knots[1:]):
            v, e = quad(fn, lo, hi, epsabs=1e-17, epsrel=1e-13, limit=200)
            total, err = total + v, err + e
    if not err <= 1e-13 + 1e-12 * abs(total):
        raise ArithmeticError(f"the oracle's quadrature error estimate {err:.2g} exceeds 1e-13 + 1e-12 x {total:.6g}")
    return total


def _parabola_tau(mu, var):
    """tau < 0 of the truncated parabola [-(t - mu)^2 / (2 var) - tau]_+ on R, by root finding on its
    normalisation (each mass by checked quadrature)."""
    from scipy.optimize import brentq

    mu, var = float(mu), float(var)

    def mass(tau):                                            # int [-(t-mu)^2/(2 var) - tau]_+ dt - 1, tau < 0
        a = math.sqrt(-2 * var * tau)
        return _quad(lambda t: -(t - mu) ** 2 / (2 * var) - tau, [mu - a, mu, mu + a]) - 1
    lo_tau = -1.0
    while mass(lo_tau) < 0:
        lo_tau *= 2
    return brentq(mass, lo_tau, -1e-12, xtol=1e-300, rtol=1e-15, maxiter=500)


def _unimodal_p(kind, mu, var):
    """(p, lo, hi): the density of the Gaussian N(mu, var) (continuous softmax) or of the truncated parabola
    [-(t - mu)^2 / (2 var) - tau]_+ (continuous sparsemax, tau by root finding on the normalisation) on R,
    in float64, and an interval outside which it is 0 (below 1e-300 of its mass for the Gaussian)."""
    import math

    mu, var = float(mu), float(var)
    if kind == "cts_softmax":
        def p(t):
            return math.exp(-(t - mu) ** 2 / (2 * var)) / math.sqrt(2 * math.pi * var)
        sd = math.sqrt(var)
        return p, mu - 40 * sd, mu + 40 * sd
    tau = _parabola_tau(mu, var)
    a = math.sqrt(-2 * var * tau)

    def p(t):
        return max(-(t - mu) ** 2 / (2 * var) - tau, 0.0)
    return p, mu - a, mu + a


def _unimodal_r(kind, mu, var, centres, widths):
    """E_p[psi_n] for the densities of :func:`_unimodal_p` on R, every integral by adaptive quadrature with its
    error estimate checked."""
    import math

    mu = float(mu)
    p, lo, hi = _unimodal_p(kind, mu, var)
    out = []
    for c, s in zip(centres, widths):
        c, s = float(c), float(s)
        knots = sorted({lo, hi, mu, *(x for x in (c - 8 * s, c, c + 8 * s) if lo < x < hi)})
        out.append(_quad(lambda t: p(t) * math.exp(-(t - c) ** 2 / (2 * s * s)) / (s * math.sqrt(2 * math.pi)),
                         knots))
    return [_mp().mpf(x) for x in out]


def _psi64(t, centres, widths):
    """psi_n(t) = N(t; c_n, s_n^2) in float64, (N, len(t))."""
    t, c, s = np.asarray(t, float), np.asarray(centres, float)[:, None], np.asarray(widths, float)[:, None]
    return np.exp(-(t[None, :] - c) ** 2 / (2 * s * s)) / (s * math.sqrt(2 * math.pi))


def _kern(a, b, kernel, bw):
    """k(a_i, b_j) (len(a), len(b)): Gaussian exp(-(a-b)^2/(2 bw^2)) or Laplace exp(-|a-b|/bw)."""
    d = np.asarray(a, float)[:, None] - np.asarray(b, float)[None, :]
    return np.exp(-d ** 2 / (2 * bw * bw)) if kernel == "gaussian" else np.exp(-np.abs(d) / bw)


def _base_q0(grid, base, mu, s2):
    """The base density q0 on the grid as the modules take it: 'gaussian' exp(-(t - mu)^2 / (2 s2)) (max 1),
    'parabola' the truncated parabola [(r^2 - (t - mu)^2) / (2 s2)]_+ with r^3 = 3 s2 / 2 (unit mass on R)."""
    if base == "gaussian":
        return np.exp(-(grid - mu) ** 2 / (2 * s2))
    r = (1.5 * s2) ** (1 / 3)
    return np.maximum((r * r - (grid - mu) ** 2) / (2 * s2), 0.0)


def _kernel_u(kind, f, grid, alpha=2.0, base=None, mu=None, s2=None):
    """The unnormalised density on the grid: kernel softmax q0 exp(f); kernel deformed (App. E.1)
    q0 exp_{2-alpha}(f - max f) = q0 [1 + (alpha-1)(f - max f)]_+^{1/(alpha-1)}, with the maximum taken where
    q0 >= 1e-3 max q0 (the modules' convention: where q0 vanishes the shifted deformed exponential could put
    all its mass); q0 = 1 without a base."""
    q0 = np.ones_like(f) if base is None else _base_q0(grid, base, mu, s2)
    if kind == "kernel_softmax":
        g = f + np.log(q0) if base == "gaussian" else f
        return np.exp(g - g.max())
    m = f[q0 >= 1e-3 * q0.max()].max()
    return q0 * np.maximum(1 + (alpha - 1) * (f - m), 0.0) ** (1 / (alpha - 1))


def _trapezoid_r(u, grid, centres, widths):
    """E_p[psi_n] for p proportional to u >= 0 on the grid, by the trapezoid rule (Algorithm 1)."""
    h = grid[1] - grid[0]
    w = np.full(len(grid), h)
    w[[0, -1]] = h / 2
    return _psi64(grid, centres, widths) @ (w * u) / (w @ u)


def _mixture_r(pi, mu, s2, centres, widths):
    """E_p[psi_n] for the Gaussian mixture sum_j pi_j N(mu_j, s2_j) on R, by checked quadrature."""
    out = []
    for c, s in zip(centres, widths):
        tot = 0.0
        for p_j, m, v in zip(pi, mu, s2):
            sd = math.sqrt(v)
            knots = sorted({m - 40 * sd, m, m + 40 * sd, *(x for x in (c - 8 * s, c, c + 8 * s) if abs(x - m) < 40 * sd)})
            tot += p_j * _quad(lambda t, m=m, v=v, c=c, s=s: math.exp(-(t - m) ** 2 / (2 * v)) / math.sqrt(2 * math.pi * v)
                               * math.exp(-(t - c) ** 2 / (2 * s * s)) / (s * math.sqrt(2 * math.pi)), knots)
        out.append(tot)
    return np.array(out)


def oracle_attention(q, k, v, allowed, kind, centres, widths, *, scale, kernel="gaussian", bandwidth=0.2,
                     alpha=2.0, ridge=0.1, grid_size=33, add=None, densities=None, padding=None):
    """The context of every query (L, Ev) for one head: q (L, E), k (S, E), v (S, Ev), allowed (L, S) bool,
    in float64 from the paper's definitions (module docstring): loops over queries and keys, the integrals
    on R by checked quadrature, the trapezoid rule written out, the ridge system solved per query.  add (L, S):
    a float mask's finite entries, added to the scores (SDPA's convention).  densities: a list that, for the
    kernel kinds, receives each query's density on the grid (normalised by the trapezoid rule; None for a
    query with no key).  padding (S,) bool: the keys that are not there (True); the others sit at j/(n-1) in their
    order (1/2 for one), whatever the queries' masks say (a key masked for every query keeps its position)."""
    L, S = q.shape[0], k.shape[0]
    present = [j for j in range(S) if padding is None or not padding[j]]
    t = np.zeros(S)
    for i, j in enumerate(present):
        t[j] = i / (len(present) - 1) if len(present) > 1 else 0.5
    grid = np.arange(grid_size) / (grid_size - 1)
    cen, wid = np.asarray(centres, float), np.asarray(widths, float)
    psi_t = _psi64(t, cen, wid)
    K = _kern(t, grid, kernel, bandwidth) if kind.startswith("kernel") else None     # k(t_j, grid)
    out = np.zeros((L, v.shape[1]))
    for l in range(L):
        A = [j for j in range(S) if allowed[l, j]]
        if not A:
            if densities is not None:
                densities.append(None)
            continue                                       # every key masked: output 0 (as SDPA)
        s = {j: scale * sum(float(a) * float(b) for a, b in zip(q[l], k[j])) + (0.0 if add is None else float(add[l, j]))
             for j in A}
        if kind.startswith("cts"):
            smax = max(s.values())
            e = {j: math.exp(s[j] - smax) for j in A}
            Zs = sum(e.values())
            mu = sum(e[j] * t[j] for j in A) / Zs
            var = max(sum(e[j] * t[j] ** 2 for j in A) / Zs - mu ** 2, 1e-4)
            r = np.array([float(x) for x in _unimodal_r(kind, mu, var, cen, wid)])
        else:
            f = sum(s[j] * K[j] for j in A)               # f(t) = sum_j s_j k(t, t_j) on the grid
            u = _kernel_u(kind, f, grid, alpha)
            r = _trapezoid_r(u, grid, cen, wid)
            if densities is not None:
                w_ = np.full(grid_size, 1.0 / (grid_size - 1))
                w_[[0, -1]] /= 2
                densities.append(u / (w_ @ u))
        F = psi_t[:, A]                                    # the allowed keys' basis values (N, |A|)
        x = np.linalg.solve(F @ F.T + ridge * np.eye(len(cen)), r)
        out[l] = (x @ F) @ v[A]                            # c = r (F F^T + lam I)^{-1} F V = B r
    return out


def _identity_projections(module) -> None:
    """In, key, value and out projections of a multi-head module set to the identity, biases to 0 (so that each
    head sees its slice of the input itself)."""
    import torch

    E = module.out_proj.weight.shape[0]
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.eye(E).repeat(3, 1))
        module.in_proj_bias.zero_()
        module.out_proj.weight.copy_(torch.eye(E))
        module.out_proj.bias.zero_()


def _rel(a, b):
    scale = max(float(np.max(np.abs(b))), 1e-300)
    return _finite_or_inf(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / scale)


KINDS = ("cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax")


def check_sequence_layer():
    """continuous_attention (each kind, both kernels for the kernel kinds, alpha 2 and 1.5, no mask / a bool
    mask / causal, S = 1, 2, 7; no key, no query) and ContinuousMultiheadAttention (2 heads, random projections and
    biases, cross attention, applied by the oracle) against
    oracle_attention; GaussianBasis, ridge_value_coefficients and moments_from_discrete on their own against
    their definitions."""
    import torch

    from attnlab.numerics.continuous_layers import (ContinuousMultiheadAttention, GaussianBasis,
                                                   SequenceContinuousAttention, continuous_attention,
                                                   moments_from_discrete, ridge_value_coefficients)

    rng = np.random.default_rng(11)
    basis = GaussianBasis(6, dtype=torch.float64)                   # widths 0.1 and 0.5, 3 centres each
    centres, widths = basis.mu.tolist(), basis.sigma.tolist()
    worst, per = {}, {}

    def note(label, err):
        per[label] = err
        worst[label.split(" /")[0]] = max(worst.get(label.split(" /")[0], 0.0), err)

    cases = []
    for kind in KINDS:
        for kernel in (("gaussian", "laplace") if kind.startswith("kernel") else ("gaussian",)):
            for alpha in ((2.0, 1.5) if kind == "kernel_sparsemax" else (2.0,)):
                for S, masking in ((7, "none"), (7, "bool"), (7, "causal"), (7, "float"), (7, "padding (S,)"),
                                   (7, "rows (L, 1)"), (2, "none"), (1, "none")):
                    cases.append((kind, kernel, alpha, S, masking))
    L, E, Ev = 3, 4, 2
    for kind, kernel, alpha, S, masking in cases:
        q, k, v = (rng.normal(size=(L, E)) * 1.5, rng.normal(size=(S, E)), rng.normal(size=(S, Ev)))
        if masking == "bool":
            allowed = rng.random((L, S)) > 0.35
            allowed[:, 0] = True
            allowed[1] = False                                       # one query with every key masked
        elif masking == "causal":
            allowed = np.tril(np.ones((L, S), bool))               # (L = 3 < S: keys 3-6 masked for every query,
        elif masking == "padding (S,)":                            # and there all the same)
            allowed = np.broadcast_to(rng.random(S) > 0.4, (L, S)).copy()
            allowed[:, 0] = True
        elif masking == "rows (L, 1)":                             # SDPA broadcasts it: whole rows masked
            allowed = np.broadcast_to(np.array([[True], [False], [True]]), (L, S)).copy()
        else:
            allowed = np.ones((L, S), bool)
        # a mask the same for every query is padding (the keys it masks are not there); one with a row per query
        # keeps every key's position
        padding = ~allowed[0] if masking == "padding (S,)" else None
        add = None
        if masking == "float":                                       # finite entries added to the scores, -inf masks
            add = rng.normal(size=(L, S))
            allowed = rng.random((L, S)) > 0.3
            allowed[:, 0] = True
            mask = torch.tensor(np.where(allowed, add, -np.inf))
        elif masking == "padding (S,)":
            mask = torch.tensor(allowed[0])
        elif masking == "rows (L, 1)":
            mask = torch.tensor(allowed[:, :1])
        else:
            mask = None if masking in ("none", "causal") else torch.tensor(allowed)
        kw = dict(kind=kind, basis=basis, grid_size=33, kernel=kernel, bandwidth=0.2, alpha=alpha, ridge=0.1)
        tq, tk, tv = (torch.tensor(x)[None, None] for x in (q, k, v))
        out = continuous_attention(tq, tk, tv, attn_mask=mask, is_causal=masking == "causal", **kw)[0, 0].numpy()
        ref = oracle_attention(q, k, v, allowed, kind, centres, widths, scale=1 / np.sqrt(E), kernel=kernel,
                               bandwidth=0.2, alpha=alpha, ridge=0.1, grid_size=33, add=add, padding=padding)
        note(f"continuous_attention / {kind} {kernel} alpha={alpha} S={S} mask={masking}", _rel(out, ref))
        if kind.startswith("kernel"):                      # the densities it returns on request (Algorithm 1, step 1)
            dens_ref = []
            oracle_attention(q, k, v, allowed, kind, centres, widths, scale=1 / np.sqrt(E), kernel=kernel,
                             bandwidth=0.2, alpha=alpha, ridge=0.1, grid_size=33, add=add, densities=dens_ref,
                             padding=padding)
            got = continuous_attention(tq, tk, tv, attn_mask=mask, is_causal=masking == "causal", return_density=True,
                                       **kw)[1][0, 0].numpy()
            rows_ = [i for i, d in enumerate(dens_ref) if d is not None]
            note(f"continuous_attention density / {kind} {kernel} alpha={alpha} S={S} mask={masking}",
                 _rel(got[rows_], np.stack([dens_ref[i] for i in rows_])) if rows_ else 0.0)
    # leading dimensions that broadcast (queries (2, 2, L, E) against keys and values (2, S, .), and (3, L, E) against
    # (1, S, .)): the same outputs as with the keys and values expanded (the folded-kernel fast path is for equal
    # leading dimensions only)
    for kind in KINDS:
        for alpha in ((2.0, 1.5) if kind == "kernel_sparsemax" else (2.0,)):
            kw = dict(kind=kind, basis=basis, grid_size=33, bandwidth=0.2, alpha=alpha, ridge=0.1)
            for qlead, klead in (((2, 2), (2,)), ((3,), (1,))):
                qb = torch.tensor(rng.normal(size=(*qlead, L, E)))
                kb, vb = torch.tensor(rng.normal(size=(*klead, 7, E))), torch.tensor(rng.normal(size=(*klead, 7, Ev)))
                note(f"continuous_attention broadcast / {kind} alpha={alpha} (queries {qlead}, keys {klead})",
                     _rel(continuous_attention(qb, kb, vb, **kw).numpy(),
                          continuous_attention(qb, kb.expand(*qlead, 7, E), vb.expand(*qlead, 7, Ev), **kw).numpy()))
    # the multi-head module, identity projections, 2 heads of width 2, batch_first, key padding
    for kind in KINDS:
        torch.manual_seed(0)
        mha = ContinuousMultiheadAttention(4, 2, batch_first=True, kind=kind, n_basis=6, grid_size=33,
                                           kernel="laplace", bandwidth=0.2, ridge=0.1, dtype=torch.float64)
        # random projections and biases, and cross attention (4 queries, 5 distinct keys and values): with identity
        # projections and mha(x, x, x), q = k = v in every head and a query/key swap, keys used as values or W^Q used
        # for all three could not show.  The oracle applies the projections itself.
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.tensor(rng.normal(size=(12, 4)) / 2))
            mha.in_proj_bias.copy_(torch.tensor(rng.normal(size=12) / 4))
            mha.out_proj.weight.copy_(torch.tensor(rng.normal(size=(4, 4)) / 2))
            mha.out_proj.bias.copy_(torch.tensor(rng.normal(size=4) / 4))
        Win, bin_ = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
        Wo, bo = mha.out_proj.weight.detach().numpy(), mha.out_proj.bias.detach().numpy()
        xq, xk, xv = rng.normal(size=(1, 4, 4)), rng.normal(size=(1, 5, 4)), rng.normal(size=(1, 5, 4))
        Q, K, Vv = (a[0] @ Win[4 * i:4 * i + 4].T + bin_[4 * i:4 * i + 4] for i, a in enumerate((xq, xk, xv)))
        pad = np.zeros((1, 5), bool)
        pad[0, 4] = True
        allowed = np.ones((4, 5), bool)
        allowed[:, 4] = False
        mc, mw = mha.basis.mu.tolist(), mha.basis.sigma.tolist()

        def projected_oracle(add=None):
            heads = [oracle_attention(Q[:, 2 * h:2 * h + 2], K[:, 2 * h:2 * h + 2], Vv[:, 2 * h:2 * h + 2], allowed,
                                      kind, mc, mw, scale=1 / np.sqrt(2), kernel="laplace", bandwidth=0.2, ridge=0.1,
                                      grid_size=33, add=add, padding=pad[0]) for h in range(2)]
            return np.concatenate(heads, -1) @ Wo.T + bo
        T_ = torch.tensor
        out, _ = mha(T_(xq), T_(xk), T_(xv), key_padding_mask=T_(pad))
        note(f"ContinuousMultiheadAttention / {kind} (2 heads, random projections, cross attention, key padding)",
             _rel(out[0].detach().numpy(), projected_oracle()))
        # a float attn_mask with the key padding: its finite entries added to the scores as given
        fm = rng.normal(size=(4, 5)) * 2
        out, _ = mha(T_(xq), T_(xk), T_(xv), key_padding_mask=T_(pad), attn_mask=T_(fm))
        note(f"ContinuousMultiheadAttention / {kind} (2 heads, random projections, key padding and a float mask)",
             _rel(out[0].detach().numpy(), projected_oracle(fm)))
    # padding changes nothing, as in nn.MultiheadAttention: three padded keys appended (random, not zeros) leave
    # every output as it is without them (the present keys keep their positions j/(n-1))
    for kind in KINDS:
        torch.manual_seed(1)
        m = ContinuousMultiheadAttention(4, 2, batch_first=True, kind=kind, n_basis=6, grid_size=33,
                                         dtype=torch.float64)
        x = torch.tensor(rng.normal(size=(2, 5, 4)))
        xp = torch.cat([x, torch.tensor(rng.normal(size=(2, 3, 4)) * 3)], 1)
        kpm = torch.tensor([[False] * 5 + [True] * 3] * 2)
        with torch.no_grad():
            plain, padded = m(x, x, x)[0], m(x, xp, xp, key_padding_mask=kpm)[0]
        note(f"ContinuousMultiheadAttention / {kind} (3 padded keys appended = no padding)",
             _rel(padded.numpy(), plain.numpy()))
    # the deprecated SequenceContinuousAttention: one head, the old call forward(query, key_padding_mask=...)
    import warnings

    for kind in KINDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            seq = SequenceContinuousAttention(4, kind=kind, n_basis=6, grid_size=33, kernel="laplace", bandwidth=0.2,
                                              ridge=0.1).double()
        _identity_projections(seq)
        x = rng.normal(size=(1, 5, 4))
        pad = np.zeros((1, 5), bool)
        pad[0, 1] = True
        out = seq(torch.tensor(x), key_padding_mask=torch.tensor(pad))
        allowed = np.ones((5, 5), bool)
        allowed[:, 1] = False
        # the basis n_basis documents, in float64 (the module is cast by .double(): its tables follow the dtype)
        exact = GaussianBasis(seq.basis.n, dtype=torch.float64)
        ref = oracle_attention(x[0], x[0], x[0], allowed, kind, exact.mu.tolist(), exact.sigma.tolist(),
                               scale=1 / 2.0, kernel="laplace", bandwidth=0.2, ridge=0.1, grid_size=33, padding=pad[0])
        note(f"SequenceContinuousAttention / {kind} (deprecated call, key padding)", _rel(out[0].detach().numpy(), ref))
    # its defaults are the one-head module's; the functional form's deprecated key_padding_mask= is attn_mask=~kpm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.manual_seed(4)
        seq = SequenceContinuousAttention(4).double()
        torch.manual_seed(4)
        one = ContinuousMultiheadAttention(4, 1, batch_first=True).double()
        x = torch.tensor(rng.normal(size=(2, 6, 4)))
        pad = torch.tensor([[False] * 6, [False, False, True, False, True, False]])
        with torch.no_grad():
            d_def = float((seq(x, key_padding_mask=pad) - one(x, x, x, key_padding_mask=pad)[0]).abs().max())
        q4, k4, v4 = (torch.tensor(rng.normal(size=(2, 1, 5, 3))) for _ in range(3))
        kw = dict(kind="kernel_softmax", basis=basis, grid_size=33, bandwidth=0.2)
        d_kpm = float((continuous_attention(q4[:, 0], k4[:, 0], v4[:, 0], key_padding_mask=pad[:, :5], **kw)
                       - continuous_attention(q4[:, 0], k4[:, 0], v4[:, 0], attn_mask=~pad[:, None, :5], **kw)).abs().max())
        # a float key_padding_mask (its -inf entries padding, its finite ones added to the scores) with a float
        # attn_mask: the padded keys are not there, the two masks' finite entries are added
        fm5 = torch.tensor(rng.normal(size=(5, 5)))
        fkpm = torch.tensor(np.where(pad[:, :5].numpy(), -np.inf, rng.normal(size=(2, 5))))
        got = continuous_attention(q4[:, 0], k4[:, 0], v4[:, 0], attn_mask=fm5, key_padding_mask=fkpm, **kw)
        d_fkpm = 0.0
        for b_ in range(2):
            keep_ = ~pad[b_, :5]
            want = continuous_attention(q4[b_, 0], k4[b_, 0][keep_], v4[b_, 0][keep_],
                                        attn_mask=(fm5 + fkpm[b_])[:, keep_], **kw)
            d_fkpm = max(d_fkpm, float((got[b_] - want).abs().max()))
    note("SequenceContinuousAttention() defaults = ContinuousMultiheadAttention(E, 1) defaults", d_def)
    note("continuous_attention key_padding_mask= = attn_mask=~kpm[:, None, :] (a mask the same for every query)", d_kpm)
    note("continuous_attention float key_padding_mask= with a float attn_mask = the padded keys dropped, the finite "
         "entries added", d_fkpm)
    # a float mask is added to the scores: -inf masks a key, nan and +inf mean nothing and are refused
    from attnlab.theory._inputs import refused as refused_with
    note("continuous_attention / a float attn_mask holding nan or +inf refused", 0.0 if all(
        refused_with(lambda b_=b_: continuous_attention(q4[0], k4[0], v4[0], attn_mask=fm5.index_fill(1, torch.tensor([2]), b_),
                                                        **kw), "attn_mask must hold finite numbers or -inf")
        for b_ in (float("nan"), float("inf"))) else math.inf)
    # a query shared over a leading dimension of the keys (broadcast as scaled_dot_product_attention does): query
    # (3, 3, E) against keys and values (3, 3, S, E), each (b, h) against the oracle with query h
    qb, kb, vb = rng.normal(size=(3, 3, 4)), rng.normal(size=(3, 3, 7, 4)), rng.normal(size=(3, 3, 7, 2))
    for kind in ("kernel_sparsemax", "kernel_softmax"):
        got = continuous_attention(torch.tensor(qb), torch.tensor(kb), torch.tensor(vb), kind=kind, basis=basis,
                                   grid_size=33, bandwidth=0.2, ridge=0.1).numpy()
        ref = np.stack([np.stack([oracle_attention(qb[h], kb[b, h], vb[b, h], np.ones((4, 7), bool)[:3], kind, centres,
                                                   widths, scale=1 / 2.0, kernel="gaussian", bandwidth=0.2, ridge=0.1,
                                                   grid_size=33) for h in range(3)]) for b in range(3)])
        note(f"continuous_attention / {kind} query (3, 3, E) broadcast against keys (3, 3, S, E)",
             _rel(got, ref) if got.shape == ref.shape else math.inf)
    # the functional form's defaults are the documented ones: kernel sparsemax (alpha 2), 32 basis functions,
    # a 256-point grid, the Gaussian kernel of bandwidth 0.05, ridge 0.1
    d_doc = float((continuous_attention(q4[0], k4[0], v4[0])
                   - continuous_attention(q4[0], k4[0], v4[0], kind="kernel_sparsemax", basis=GaussianBasis(32, dtype=torch.float64),
                                          grid_size=256, kernel="gaussian", bandwidth=0.05, alpha=2.0, ridge=0.1)).abs().max())
    note("continuous_attention() defaults = the documented ones", d_doc)
    # the deformed family's alpha outside (1, 2], or not a number, is refused with a ValueError naming it
    refused = 0
    for bad in (1.0, 2.5, "x", None, float("nan")):
        try:
            continuous_attention(q4[0], k4[0], v4[0], kind="kernel_sparsemax", basis=basis, grid_size=33, alpha=bad)
        except ValueError as exc:
            refused += "alpha" in str(exc)
    note("continuous_attention refuses alpha outside (1, 2] (5 values)", 0.0 if refused == 5 else math.inf)
    # no key (S = 0) or no query (L = 0): the output is 0 of shape (..., L, Ev), as scaled_dot_product_attention
    for kind in KINDS:
        for L0, S0 in ((3, 0), (0, 4)):
            # (entries 0.5, -0.5, 0.3: sums of either sign, not whole numbers)
            q0, k0, v0 = (torch.full((1, 2, n, 4), c, dtype=torch.float64, requires_grad=True)
                          for n, c in ((L0, 0.5), (S0, -0.5), (S0, 0.3)))
            out = continuous_attention(q0, k0, v0, kind=kind, basis=basis, grid_size=33)
            # (attached to the inputs' graph: a backward pass gives zero gradients of their shapes, finite)
            grads = torch.autograd.grad(out.sum(), (q0, k0, v0), allow_unused=True)
            note(f"continuous_attention / {kind} L={L0} S={S0}",
                 0.0 if out.shape == (1, 2, L0, 4) and not bool(out.abs().sum()) and all(
                     g_ is not None and g_.shape == x_.shape and not bool(g_.abs().sum())
                     for g_, x_ in zip(grads, (q0, k0, v0))) else math.inf)
    # the pieces: the basis (normalised Gaussian pdfs), Eq. 6's ridge fit, the discrete moments
    mp = _mp()
    tt = torch.linspace(0, 1, 9, dtype=torch.float64)
    Psi = basis(tt).numpy()
    Psi_ref = np.array([[float(_psi(mp.mpf(float(x)), mp.mpf(c), mp.mpf(s))) for x in tt] for c, s in zip(centres, widths)])
    note("GaussianBasis.forward / 9 points", _rel(Psi, Psi_ref))
    H = rng.normal(size=(2, 3, 9))
    for masked in (False, True):
        m = torch.ones(2, 9, dtype=torch.float64)
        if masked:
            m[1, 3:5] = 0
        B = ridge_value_coefficients(torch.tensor(H), tt, basis, 0.1, mask=m if masked else None).numpy()
        for b in range(2):
            keep = m[b].numpy() > 0
            Fk = mp.matrix(Psi_ref[:, keep].tolist())
            G = Fk * Fk.T + mp.mpf("0.1") * mp.eye(6)
            Bref = mp.matrix(H[b][:, keep].tolist()) * Fk.T * mp.inverse(G)
            note(f"ridge_value_coefficients / mask={masked} series {b}", _rel(B[b], np.array(Bref.tolist(), float)))
    # the ridge penalty is a finite number > 0: -0.1, 0, inf refused in one line naming lam
    from attnlab.theory._inputs import refused

    note("ridge_value_coefficients / H with a column more or fewer than positions refused", 0.0 if all(
        refused(lambda H_=H_: ridge_value_coefficients(H_, tt, basis, 0.1), "must equal len(positions)")
        for H_ in (torch.tensor(H)[..., :-1], torch.cat([torch.tensor(H), torch.tensor(H)[..., :1]], -1))) else math.inf)
    note("ridge_value_coefficients / lam not > 0 refused", 0.0 if all(
        refused(lambda v=v: ridge_value_coefficients(torch.tensor(H), tt, basis, v), "lam must be a finite number > 0")
        for v in (-0.1, 0.0, math.inf)) else math.inf)
    # the cached tables of a default basis (float64 Gram, F, M and WPsi: 8 n (n + S + G + 2) bytes) are capped at
    # 4 GiB: n_basis = 10^6 with S = 3, G = 8 needs ~7451 GiB and is refused before anything is allocated,
    # naming n_basis, the size and the cap
    qx = torch.zeros(1, 3, 2, dtype=torch.float64)
    need = 8 * 10 ** 6 * (10 ** 6 + 3 + 8 + 2) / 2 ** 30
    note("continuous_attention / n_basis over the 4 GiB table cap refused", 0.0 if refused(
        lambda: continuous_attention(qx, qx, qx, kind="kernel_softmax", n_basis=10 ** 6, grid_size=8),
        "n_basis = 1000000", f"~{need:.0f} GiB", "over 4 GiB") else math.inf)
    # the kernel bandwidth is a width on [0, 1] whose 1/(2 bandwidth^2) is a finite nonzero float64: 1e-101 and
    # 1e101 (just outside [1e-100, 1e100]) and 1e200 refused, naming bandwidth and that range
    note("continuous_attention / bandwidth outside [1e-100, 1e100] refused", 0.0 if all(refused(
        lambda b_=b_: continuous_attention(qx, qx, qx, kind="kernel_softmax", n_basis=4, grid_size=8, bandwidth=b_),
        "bandwidth must be in [1e-100, 1e+100]") for b_ in (1e-101, 1e101, 1e200)) else math.inf)
    # times of their own per series ([b, L]: irregular sampling, as the gesture network's), no mask
    t2 = torch.stack([tt, tt ** 1.5])
    B = ridge_value_coefficients(torch.tensor(H), t2, basis, 0.1).numpy()
    for b in range(2):
        Fb = mp.matrix([[float(_psi(mp.mpf(float(x)), mp.mpf(c), mp.mpf(s_))) for x in t2[b]] for c, s_ in zip(centres, widths)])
        Bref = mp.matrix(H[b].tolist()) * Fb.T * mp.inverse(Fb * Fb.T + mp.mpf("0.1") * mp.eye(6))
        note(f"ridge_value_coefficients / times per series {b}", _rel(B[b], np.array(Bref.tolist(), float)))
    p = torch.softmax(torch.tensor(rng.normal(size=(2, 3, 9))), -1)            # [..., L]: leading dims 2 x 3
    for positions in ("linspace", "index"):
        mu, s2 = moments_from_discrete(p, positions)
        pos = np.linspace(0, 1, 9) if positions == "linspace" else np.arange(1, 10) / 9
        P = p.numpy()
        mref = P @ pos
        vref = np.maximum(P @ pos ** 2 - mref ** 2, 1e-4)
        note(f"moments_from_discrete / {positions}", max(_rel(mu.numpy(), mref), _rel(s2.numpy(), vref)))
    # the layer's own backward passes (kernel sparsemax's fused moments, the deformed family's shifted relu) and
    # autograd's for the others, against central differences (h = 1e-6) of a weighted sum of the outputs
    grad_err = {}
    for kind, alpha, wrt in (("kernel_sparsemax", 2.0, (0, 1, 2)), ("kernel_sparsemax", 2.0, (1, 2)),
                             ("kernel_sparsemax", 1.5, (0, 1, 2)), ("kernel_softmax", 2.0, (0, 1, 2)),
                             ("cts_sparsemax", 2.0, (0, 1, 2))):     # (1, 2): the query without a gradient
        gen = torch.Generator().manual_seed(21)
        qkv = [torch.randn(1, 3, 3, generator=gen, dtype=torch.float64) for _ in range(3)]
        wout = torch.randn(1, 3, 3, generator=gen, dtype=torch.float64)

        def loss(q, k, v):
            return float((continuous_attention(q, k, v, kind=kind, basis=basis, grid_size=33, alpha=alpha) * wout).sum())
        leaves = [x.clone().requires_grad_(a in wrt) for a, x in enumerate(qkv)]
        grads = torch.autograd.grad((continuous_attention(*leaves, kind=kind, basis=basis, grid_size=33, alpha=alpha)
                                     * wout).sum(), [leaves[a] for a in wrt])
        grads = dict(zip(wrt, grads))
        err, h = 0.0, 1e-6
        for a in wrt:
            for j in range(qkv[a].numel()):
                up, dn = [x.clone() for x in qkv], [x.clone() for x in qkv]
                up[a].view(-1)[j] += h
                dn[a].view(-1)[j] -= h
                err = max(err, _finite_or_inf(abs(float(grads[a].reshape(-1)[j]) - (loss(*up) - loss(*dn)) / (2 * h))))
        grad_err[f"{kind} alpha={alpha:g} d/d{''.join('qkv'[a] for a in wrt)}"] = \
            err / max(1.0, max(float(g.abs().max()) for g in grads.values()))
    ok = all(v <= LAYER_TOL for v in worst.values()) and all(v <= GRAD_TOL for v in grad_err.values())
    return holds_if(ok, measured=dict(worst_relative_error=worst, gradient_vs_central_differences=grad_err),
                    tolerance=dict(relative=LAYER_TOL, gradients=GRAD_TOL),
                    explanation=f"{len(cases)} functional cases (4 kinds; Gaussian and Laplace kernels; alpha 2 and "
                                "1.5; no mask, a bool mask with a fully masked query, causal; S = 7, 2, 1), leading "
                                "dimensions that broadcast against the same with keys expanded, the "
                                "multi-head module with identity projections and key padding (and the deprecated "
                                "SequenceContinuousAttention in its old call), and the basis, ridge "
                                "fit (shared times, with a mask, and times per series) and discrete moments, float64 against a transcription of the paper's "
                                "definitions (written-out sums and trapezoid rule, the ridge system solved per query, "
                                "the integrals on R by scipy quad with error estimates below 1e-13 + 1e-12 of the "
                                "value); error relative to the largest output entry; the gradients with respect to "
                                "query, key and value against central differences (h = 1e-6; truncation ~h^2 and "
                                "rounding ~eps/h give ~1e-10), relative to max(1, |gradient|); a default basis whose "
                                "cached tables would pass the 4 GiB cap (n_basis = 10^6) refused before any "
                                "allocation, naming n_basis, the size and the cap; a bandwidth outside [1e-100, "
                                "1e100] refused; a query broadcast over a leading dimension of the keys; a float key "
                                "padding mask added to a float attn_mask; a float mask holding nan or +inf refused",
                    per_case=per)


GRAD_TOL = 1e-7


@claim("kernel.eq1.sequence-layer",
       reference="Sec. 3 Eq. (1), (2), (6); Eq. (8); Sec. 5.2; App. E.1; Algorithm 1",
       statement="The library's continuous-attention layer computes the paper's context c = B E_p[Psi] for every "
                 "query: scores scale <q, k_j> at positions t_j = j/(n-1) of the n keys present (padding, a "
                 "key_padding_mask or a mask the same for every query, is absent: appending padded keys changes "
                 "nothing; a mask with a row per query keeps every key's position, so that no query's output depends "
                 "on the other queries in the call); the continuous softmax / sparsemax "
                 "density with the moments of softmax over the positions, or the kernel exponential / deformed "
                 "family f(t) = sum_j s_j k(t, t_j) shifted by its maximum (App. E.1) with the trapezoid rule of "
                 "Algorithm 1; the ridge value function of Eq. (6) over the allowed keys -- in float64 within 1e-10 "
                 "of a transcription of those definitions, for every kind, both kernels, masks (a fully "
                 "masked query gives 0), S = 1, 2, 7 (no key or no query: 0, as SDPA), and in the multi-head "
                 "module.",
       method="mpmath",
       vouches_for=("numerics.continuous_layers.continuous_attention",
                    "numerics.continuous_layers.ContinuousMultiheadAttention.forward",
                    "numerics.continuous_layers.GaussianBasis.forward",
                    "numerics.continuous_layers.ridge_value_coefficients",
                    "numerics.continuous_layers.moments_from_discrete",
                    "numerics.continuous_layers.SequenceContinuousAttention.forward"))
def _sequence_layer():
    return check_sequence_layer()


def check_attention_module():
    """ContinuousAttention (the module the kernel experiments' networks train with: time warping, FordA,
    ECG, gestures, sentiment) against the transcription: E_p[psi_n] for given density parameters --
    cts_softmax / cts_sparsemax (mu, sigma^2) and the Gaussian mixture (weights, means, variances) on R by
    quadrature; kernel_softmax (with and without a Gaussian base density q0) and kernel_sparsemax (alpha 2
    and 1.5) from gamma at I inducing points linspace(0, 1, I), both kernels, by the trapezoid rule on the
    grid as Algorithm 1 does; and its density() on the grid (normalised by the same rule)."""
    import torch

    from attnlab.numerics.continuous_layers import ContinuousAttention, GaussianBasis

    mp = _mp()
    rng = np.random.default_rng(23)
    basis = GaussianBasis(6, dtype=torch.float64)
    centres, widths = basis.mu.tolist(), basis.sigma.tolist()
    worst, per = {}, {}
    G, I = 41, 5
    with mp.workdps(20):
        grid = [mp.mpf(i) / (G - 1) for i in range(G)]
        psi_g = [[_psi(x, mp.mpf(c), mp.mpf(s)) for x in grid] for c, s in zip(centres, widths)]
        h = grid[1] - grid[0]
        w = [h / 2 if i in (0, G - 1) else h for i in range(G)]
        for kind in ("cts_softmax", "cts_sparsemax"):
            mod = ContinuousAttention(kind, basis, grid_size=G, dtype=torch.float64)
            mu, s2 = rng.uniform(0.1, 0.9, size=(2, 3)), rng.uniform(0.005, 0.2, size=(2, 3))
            r = mod(mu=torch.tensor(mu), sigma2=torch.tensor(s2)).numpy()
            ref = np.array([[[float(x) for x in _unimodal_r(kind, mu[b, k], s2[b, k], centres, widths)]
                             for k in range(3)] for b in range(2)])
            per[kind] = _rel(r, ref)
            # density() on the grid: the density on R at the grid points (no renormalisation on [0, 1])
            dens = mod.density(mu=torch.tensor(mu), sigma2=torch.tensor(s2)).numpy()
            pdfs = [[_unimodal_p(kind, mu[b, k], s2[b, k])[0] for k in range(3)] for b in range(2)]
            dref = np.array([[[pdf(float(x)) for x in grid] for pdf in row] for row in pdfs])
            per[f"{kind} density"] = _rel(dens, dref)
        mod = ContinuousAttention("gaussian_mixture", basis, grid_size=G, dtype=torch.float64)
        logits, mu, s2 = rng.normal(size=(2, 4)), rng.uniform(0, 1, size=(2, 4)), rng.uniform(0.01, 0.1, size=(2, 4))
        kw = dict(weights_logits=torch.tensor(logits)[:, None], mu=torch.tensor(mu)[:, None],
                  sigma2=torch.tensor(s2)[:, None])
        r = mod(**kw)[:, 0].numpy()
        pi = np.exp(logits - logits.max(-1, keepdims=True))
        pi /= pi.sum(-1, keepdims=True)
        ref = np.stack([_mixture_r(pi[b], mu[b], s2[b], centres, widths) for b in range(2)])
        per["gaussian_mixture"] = _rel(r, ref)
        pdfs = [[_unimodal_p("cts_softmax", mu[b, k], s2[b, k])[0] for k in range(4)] for b in range(2)]
        dref = np.array([[sum(pi[b, k] * pdfs[b][k](float(x)) for k in range(4)) for x in grid] for b in range(2)])
        per["gaussian_mixture density"] = _rel(mod.density(**kw)[:, 0].numpy(), dref)
        ind = [mp.mpf(i) / (I - 1) for i in range(I)]
        for kind, alpha, kernel, base in (("kernel_softmax", 2.0, "gaussian", "none"),
                                          ("kernel_softmax", 2.0, "laplace", "gaussian"),
                                          ("kernel_sparsemax", 2.0, "gaussian", "none"),
                                          ("kernel_sparsemax", 1.5, "laplace", "none"),
                                          ("kernel_sparsemax", 1.5, "gaussian", "gaussian"),
                                          ("kernel_sparsemax", 1.5, "gaussian", "parabola")):
            mod = ContinuousAttention(kind, basis, grid_size=G, n_inducing=I, kernel=kernel, bandwidth=0.15,
                                      alpha=alpha, base=base, dtype=torch.float64)
            gamma = rng.normal(size=(2, I)) * 2
            mu, s2 = rng.uniform(0.2, 0.8, size=2), rng.uniform(0.02, 0.2, size=2)
            if kind == "kernel_sparsemax" and base == "gaussian":
                # a narrow base, so that f's largest value lies where q0 < 1e-3 max q0 (outside the region whose
                # maximum the deformed family is shifted by) for both rows
                mu, s2 = np.array([0.15, 0.85]), np.array([0.002, 0.003])
                gamma = np.array([[-1.0, 0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0, -1.0]])
            if base == "parabola":
                # a truncated parabola centred off [0, 1] whose support ends just past t = 1/2: there q0 is 0.0043 of
                # its largest value on the grid (kept: >= 1e-3), and f rises towards t = 1/2, so the shift is f(1/2)
                mu, s2 = np.array([-0.407, 1.407]), np.array([0.5, 0.5])
                gamma = np.array([[-1.0, 0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0, -1.0]])
            kw = dict(gamma=torch.tensor(gamma)[:, None])
            if base != "none":
                kw.update(mu=torch.tensor(mu)[:, None], sigma2=torch.tensor(s2)[:, None])
            r, dens = mod(**kw)[:, 0].numpy(), mod.density(**kw)[:, 0].numpy()
            bw = mp.mpf("0.15")
            rref, dref = np.zeros((2, 6)), np.zeros((2, G))
            for b in range(2):
                def kern(a, x):
                    return mp.exp(-(a - x) ** 2 / (2 * bw * bw)) if kernel == "gaussian" else mp.exp(-abs(a - x) / bw)
                f = [mp.fsum(mp.mpf(float(gamma[b, i])) * kern(ind[i], x) for i in range(I)) for x in grid]
                if kind == "kernel_softmax":
                    if base == "gaussian":                 # q0 = N(mu, sigma^2), up to a constant
                        f = [fx - (x - mp.mpf(mu[b])) ** 2 / (2 * mp.mpf(s2[b])) for fx, x in zip(f, grid)]
                    m = max(f)
                    u = [mp.exp(x - m) for x in f]
                else:
                    # q0 exp_{2-alpha}(f - max f), the maximum taken where q0 >= 1e-3 max q0 (the released
                    # code's shift, restricted to where the base is not negligible)
                    if base == "gaussian":
                        q0 = [mp.exp(-(x - mp.mpf(mu[b])) ** 2 / (2 * mp.mpf(s2[b]))) for x in grid]
                    elif base == "parabola":                 # [(r^2 - (t - mu)^2)/(2 sigma^2)]_+, r = (3 sigma^2/2)^(1/3)
                        r2 = (mp.mpf(3) * mp.mpf(s2[b]) / 2) ** (mp.mpf(2) / 3)
                        q0 = [max(r2 - (x - mp.mpf(mu[b])) ** 2, 0) / (2 * mp.mpf(s2[b])) for x in grid]
                    else:
                        q0 = [mp.mpf(1)] * G
                    m = max(fx for fx, qx in zip(f, q0) if qx >= mp.mpf("1e-3") * max(q0))
                    a1 = mp.mpf(alpha) - 1
                    u = [qx * max(1 + a1 * (x - m), 0) ** (1 / a1) for x, qx in zip(f, q0)]
                Z = mp.fsum(wi * ui for wi, ui in zip(w, u))
                dref[b] = [float(ui / Z) for ui in u]
                rref[b] = [float(mp.fsum(wi * ui * pg for wi, ui, pg in zip(w, u, row)) / Z) for row in psi_g]
            per[f"{kind} alpha={alpha} {kernel} base={base}"] = max(_rel(r, rref), _rel(dens, dref))
        # the family named by a string built at run time (as read from a config file), not the interned literal
        from attnlab.numerics.kernel_layer_math import kernel_density_on_grid

        f = torch.tensor(rng.normal(size=(2, mod.grid.shape[-1])))
        from attnlab.numerics.kernel_layer_math import kernel_matrix

        ind = torch.linspace(0, 1, 5, dtype=torch.float64)
        for kname in ("gaussian", "laplace"):
            per[f"kernel {kname} named at run time"] = _rel(
                kernel_matrix(ind, mod.grid, at_run_time(kname), 0.2).numpy(),
                kernel_matrix(ind, mod.grid, kname, 0.2).numpy())
        for fam in ("softmax", "sparsemax"):
            per[f"family {fam} named at run time"] = _rel(
                kernel_density_on_grid(f, mod.grid, at_run_time(fam)).numpy(),
                kernel_density_on_grid(f, mod.grid, fam).numpy())
        from attnlab.numerics.kernel_layer_math import unimodal_density_on_grid

        mu2, s22 = torch.tensor([0.3, 0.6], dtype=torch.float64), torch.tensor([0.01, 0.05], dtype=torch.float64)
        wl = torch.tensor([[0.2, -0.1], [0.0, 0.5]], dtype=torch.float64)
        for kname in ("cts_softmax", "cts_sparsemax", "gaussian_mixture"):
            m_, s_ = (mu2[None].expand(2, 2), s22[None].expand(2, 2)) if kname == "gaussian_mixture" else (mu2, s22)
            per[f"density kind {kname} named at run time"] = _rel(
                unimodal_density_on_grid(mod.grid, at_run_time(kname), m_, s_, wl).numpy(),
                unimodal_density_on_grid(mod.grid, kname, m_, s_, wl).numpy())
        from attnlab.numerics.kernel_layer_math import base_density

        mu, s2 = torch.tensor([0.3, 0.6], dtype=torch.float64), torch.tensor([0.01, 0.05], dtype=torch.float64)
        for bname in ("gaussian", "parabola"):
            per[f"base {bname} named at run time"] = _rel(
                base_density(mod.grid, mu, s2, at_run_time(bname)).numpy(), base_density(mod.grid, mu, s2, bname).numpy())
        # scores or a density on a grid of another size (one point short or over) are refused, naming G
        from attnlab.numerics.continuous_attention import expected_basis

        psi = torch.ones(6, G, dtype=torch.float64)
        refused = 0
        for n in (G - 1, G + 1):
            try:
                expected_basis(torch.ones(2, n, dtype=torch.float64), mod.grid, psi)
            except ValueError as exc:
                refused += f"last dim G={G}" in str(exc)
        per["a density of G - 1 or G + 1 points refused"] = 0.0 if refused == 2 else math.inf
        # the context c = B E_p[Psi] (Eq. 1) with B of N + 1 columns for N = 6 basis functions: refused, naming both
        from attnlab.numerics.continuous_attention import context_vector
        from attnlab.theory._inputs import refused as refused_with

        dens1 = torch.full((2, G), 1.0, dtype=torch.float64)
        per["context_vector: B of 7 columns for 6 basis functions refused"] = 0.0 if refused_with(
            lambda: context_vector(dens1, mod.grid, psi, torch.ones(3, 7, dtype=torch.float64)),
            "B's last dim (7)", "basis functions (6)") else math.inf
        c = context_vector(dens1, mod.grid, psi, torch.arange(18, dtype=torch.float64).reshape(3, 6))
        per["context_vector: B E_p[Psi] with Psi = 1, p = 1 on [0, 1]"] = _rel(
            c.numpy(), np.tile(np.arange(18.0).reshape(3, 6).sum(1), (2, 1)))
    worst = _worse(*per.values())
    return holds_if(worst <= LAYER_TOL, measured=dict(worst_relative_error=worst),
                    tolerance=dict(relative=LAYER_TOL),
                    explanation="ContinuousAttention for every kind (cts_softmax, cts_sparsemax, gaussian_mixture on "
                                "R by quadrature with checked error estimates; kernel_softmax without and with a "
                                "Gaussian base density, kernel_sparsemax at alpha 2 and 1.5, Gaussian and Laplace "
                                "kernels, by the trapezoid rule on a 41-point grid in mpmath), outputs and densities (those of "
                                "the closed-form kinds: the densities on R at the grid points), "
                                "float64 against the transcription; error relative to the largest entry",
                    per_case=per)


@claim("kernel.alg1.attention-module",
       reference="Algorithm 1; Sec. 3 Eq. (1), (2); Eq. (8); Sec. 5.2; App. A (mixture); App. E.1",
       statement="The library's per-head continuous-attention module (the one the kernel experiments' networks "
                 "train with) returns E_p[Psi] of the paper's densities: the Gaussian, the truncated parabola and "
                 "the Gaussian mixture on R for given parameters, and the kernel exponential / deformed families "
                 "from gamma at inducing points linspace(0, 1, I) (optionally times a Gaussian base density), "
                 "shifted by the maximum and integrated by the trapezoid rule as Algorithm 1 does -- in float64 "
                 "within 1e-10 of a transcription, outputs and densities on the grid.",
       method="mpmath",
       vouches_for=("numerics.continuous_layers.ContinuousAttention.forward",
                    "numerics.continuous_layers.ContinuousAttention.density",
                    "numerics.kernel_layer_math.kernel_density_on_grid",
                    "numerics.kernel_layer_math.expectation_on_grid",
                    "numerics.continuous_attention.context_vector",
                    "numerics.kernel_layer_math.unimodal_density_on_grid",
                    "numerics.kernel_layer_math.gaussian_expected_rbf",
                    "numerics.kernel_layer_math.parabola_expected_rbf",
                    "numerics.kernel_layer_math.mixture_expected_rbf"))
def _attention_module():
    return check_attention_module()


def check_unimodal_densities():
    """truncated_parabola_density and gaussian_mixture_density on R and on [a, b] (sparsemax's radius and the
    mixture's mass there found by the oracle itself: root finding on a quadrature of the clipped parabola,
    quadrature of each Gaussian over [a, b]), and value_function against sums written out."""
    from scipy.optimize import brentq

    import torch

    from attnlab.numerics.continuous_attention import (gaussian_mixture_density, gaussian_mixture_rbf_expectation,
                                                       gaussian_rbf_expectation, truncated_parabola_density,
                                                       truncated_parabola_rbf_expectation, value_function)

    cen, wid = np.array([0.1, 0.5, 0.9]), np.array([0.05, 0.2, 0.5])
    T = lambda x: torch.tensor(x, dtype=torch.float64)                                      # noqa: E731

    def expect(p, lo, hi, knots):
        """E_p[psi_n] for p on [lo, hi] (unnormalised), by checked quadrature: (N,)"""
        ks = sorted({lo, hi, *(k for k in knots if lo < k < hi)})
        Z = _quad(p, ks)
        return np.array([_quad(lambda x, c=c, w=w: p(x) * math.exp(-(x - c) ** 2 / (2 * w * w)) / (w * math.sqrt(2 * math.pi)),
                               sorted(set(ks) | {k for k in (c - 8 * w, c, c + 8 * w) if lo < k < hi})) / Z
                         for c, w in zip(cen, wid)])

    rng = np.random.default_rng(7)
    t = np.linspace(-0.5, 1.5, 81)
    per = {}
    # (a domain of width 1/2 and a parabola wider than it: the radius's bracket depends on b - a)
    for domain in (None, (0.0, 1.0), (0.25, 0.75)):
        for mu, s2 in ((0.4, 0.02), (0.95, 0.3), (-0.2, 0.05), (0.5, 1.0)):
            if domain is None:
                lo, hi = -math.inf, math.inf
            else:
                lo, hi = domain

            def mass(r):
                a, b = max(lo, mu - r), min(hi, mu + r)
                if b <= a:
                    return -1.0
                return _quad(lambda x: (r * r - (x - mu) ** 2) / (2 * s2), sorted({a, b, min(max(mu, a), b)})) - 1
            r_hi = 1.0
            while mass(r_hi) < 0:
                r_hi *= 2
            r = brentq(mass, 1e-12, r_hi, xtol=1e-15, rtol=1e-15)
            ref = np.where((t >= lo) & (t <= hi), np.maximum((r * r - (t - mu) ** 2) / (2 * s2), 0.0), 0.0)
            got = truncated_parabola_density(torch.tensor(t), torch.tensor(mu, dtype=torch.float64),
                                             torch.tensor(s2, dtype=torch.float64), domain).numpy()
            per[f"truncated parabola mu={mu} s2={s2} on {domain or 'R'}"] = _rel(got, ref)
            a, b = max(lo, mu - r), min(hi, mu + r)
            got = truncated_parabola_rbf_expectation(T(mu), T(s2), T(cen), T(wid), domain).numpy()
            per[f"E[psi] truncated parabola mu={mu} s2={s2} on {domain or 'R'}"] = _rel(
                got, expect(lambda x: max((r * r - (x - mu) ** 2) / (2 * s2), 0.0), a, b, [mu]))
        # the Gaussian, E[psi] on R or renormalised to the domain: inside, near an edge, far in the tail (the mass of
        # [0, 1] 13 standard deviations out) and wide against the domain (the interval mass integrated, not differenced)
        for mu, s2 in ((0.4, 0.02), (0.95, 0.3), (-3.0, 0.05), (0.5, 25.0)):
            sd = math.sqrt(s2)
            lo, hi = domain if domain is not None else (mu - 40 * sd, mu + 40 * sd)
            got = gaussian_rbf_expectation(T(mu), T(s2), T(cen), T(wid), domain).numpy()
            per[f"E[psi] Gaussian mu={mu} s2={s2} on {domain or 'R'}"] = _rel(
                got, expect(lambda x: math.exp(-(x - mu) ** 2 / (2 * s2) + (0.0 if domain is None else
                                                                           ((lo - mu) ** 2 / (2 * s2) if mu < lo else 0.0))),
                            lo, hi, [mu]))
        w = rng.dirichlet(np.ones(3))
        m, v = rng.uniform(-0.2, 1.2, 3), rng.uniform(0.01, 0.2, 3)
        comp = np.exp(-(t[:, None] - m) ** 2 / (2 * v)) / np.sqrt(2 * math.pi * v)
        if domain is None:
            ref = comp @ w
        else:
            lo, hi = domain
            Z = sum(wj * _quad(lambda x, mj=mj, vj=vj: math.exp(-(x - mj) ** 2 / (2 * vj)) / math.sqrt(2 * math.pi * vj),
                               sorted({lo, hi, min(max(mj, lo), hi)})) for wj, mj, vj in zip(w, m, v))
            ref = np.where((t >= lo) & (t <= hi), comp @ w / Z, 0.0)
        got = gaussian_mixture_density(torch.tensor(t), torch.tensor(w), torch.tensor(m), torch.tensor(v), domain).numpy()
        per[f"Gaussian mixture on {domain or 'R'}"] = _rel(got, ref)
        lo, hi = domain if domain is not None else (-10.0, 11.0)
        got = gaussian_mixture_rbf_expectation(T(w), T(m), T(v), T(cen), T(wid), domain).numpy()
        per[f"E[psi] Gaussian mixture on {domain or 'R'}"] = _rel(got, expect(
            lambda x: sum(wj * math.exp(-(x - mj) ** 2 / (2 * vj)) / math.sqrt(2 * math.pi * vj) for wj, mj, vj in zip(w, m, v)),
            lo, hi, list(m)))
    B, Psi = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 9))
    ref = np.array([[[sum(B[b, d, n] * Psi[n, g] for n in range(4)) for g in range(9)] for d in range(3)] for b in range(2)])
    per["value_function"] = _rel(value_function(torch.tensor(B), torch.tensor(Psi)).numpy(), ref)
    # mixture weights off the simplex (a negative weight with the sum 1; a sum of 0.9) are refused in one line
    from attnlab.theory._inputs import refused

    m3, v3 = T([0.2, 0.5, 0.8]), T([0.01, 0.02, 0.03])
    per["mixture weights off the simplex refused"] = 0.0 if all(
        refused(lambda w_=w_: gaussian_mixture_density(T(t), T(w_), m3, v3), "weights must be nonnegative")
        for w_ in ([-0.5, 1.0, 0.5], [0.3, 0.3, 0.3])) else math.inf
    worst = _worse(*per.values())
    return holds_if(worst <= 1e-12, measured=dict(worst_relative_error=worst), tolerance=dict(relative=1e-12),
                    explanation="the truncated parabola at three (mu, sigma^2) (mu inside, near the edge and outside "
                                "[0, 1]) and a 3-component mixture, on R and on [0, 1], at 81 points of [-0.5, 1.5], "
                                "against the oracle's radius and masses (root finding and quadrature with checked "
                                "error estimates); their E_p[psi_n] (and the Gaussian's: inside, near an edge, 13 sd "
                                "out in the tail, wide against [0, 1]) against E_p[psi_n] by quadrature over the "
                                "support; value_function against sums; error relative to the largest value; mixture "
                                "weights off the simplex refused",
                    per_case=per)


@claim("kernel.sec3.unimodal-densities",
       reference="Sec. 3 (continuous sparsemax: the truncated parabola), App. A (Gaussian mixture); Eq. (1)",
       statement="The library's closed-form densities are the paper's: the continuous-sparsemax truncated parabola "
                 "[(r^2 - (t - mu)^2)/(2 sigma^2)]_+ with the radius r that gives unit mass, on R and on a bounded "
                 "domain, and the Gaussian mixture renormalised to the domain; and V(t) = B Psi(t) -- within 1e-12 of "
                 "an oracle that finds the radius and the masses itself.",
       method="float64",
       vouches_for=("numerics.continuous_attention.truncated_parabola_density",
                    "numerics.continuous_attention.gaussian_mixture_density",
                    "numerics.continuous_attention.value_function",
                    "numerics.continuous_attention.gaussian_rbf_expectation",
                    "numerics.continuous_attention.truncated_parabola_rbf_expectation",
                    "numerics.continuous_attention.gaussian_mixture_rbf_expectation"))
def _unimodal_densities():
    return check_unimodal_densities()
