"""Independent oracles for the Fenchel-dual claims: plain transcriptions of the paper's equations, in
mpmath at 50 digits or in loops of Python floats, written without the library (attnlab.numerics) so that a
claim can hold the library's function against them.  None of this is the thing under test.

- :func:`mp_dual` solves the dual (7) by damped Newton at `dps` digits (log M by (8), recovery (9), h by
  (10)) and returns lambda*, p*, h-hat and both optimal values (3) and (7) with the duality gap;
- :func:`tilted_plain` and :func:`foc_residual_plain` transcribe (9) and the first-order condition of (7)
  in float64 loops (log-sum-exp by its definition), so that a claim can test a library lambda* or p(lambda);
- :func:`ot_attention_plain`, :func:`ot_grad_plain`, :func:`prop1_plain`, :func:`column_moments_plain` and
  :func:`ot_foc_residual_plain` do the same for the OT attention of Sec 9 and App. D ((22), (34), (36)-(42)).
"""
from __future__ import annotations

import math


def _mp():
    import mpmath as mp

    return mp


def mp_dual(T, u, z, alpha, dps: int = 50, max_iter: int = 400):
    """The maximiser of (7) at `dps` digits for discrete u (atoms with u_i = 0 carry no mass, (9)).

    Damped Newton on the scaled dual F(nu) = <nu, b> - |nu|^2/2 - (1/alpha) log M(alpha nu) (1-strongly
    concave, so the step is well scaled at every alpha), from nu = z (the approximation (14)), with Armijo
    backtracking (up to F's rounding), until |grad| < 10^-(dps - 8).  Returns a dict of mpf lists/values: lam, p (all n atoms),
    h, P (the primal (3) at p), D (the dual (7) at lam), gap = |P - D|, grad (the final gradient norm).
    """
    mp = _mp()
    with mp.workdps(dps):
        n, d = len(T), len(T[0])
        Tm = [[mp.mpf(float(T[i][k])) for k in range(d)] for i in range(n)]
        um = [mp.mpf(float(x)) for x in u]
        zm = [mp.mpf(float(x)) for x in z]
        a = mp.mpf(float(alpha))
        supp = [i for i in range(n) if um[i] > 0]
        tot = mp.fsum(um)
        um = [x / tot for x in um]
        mu = [mp.fsum(um[i] * Tm[i][k] for i in supp) for k in range(d)]
        b = [mu[k] + zm[k] for k in range(d)]

        def logits(nu):
            return {i: mp.log(um[i]) + a * mp.fsum(Tm[i][k] * nu[k] for k in range(d)) for i in supp}

        def lse(s):
            m = max(s.values())
            return m + mp.log(mp.fsum(mp.exp(v - m) for v in s.values()))

        def F(nu):
            return mp.fsum(nu[k] * b[k] for k in range(d)) - mp.fsum(x * x for x in nu) / 2 - lse(logits(nu)) / a

        def weights(nu):
            s = logits(nu)
            L = lse(s)
            return {i: mp.exp(s[i] - L) for i in supp}

        nu = list(zm)
        tol = mp.mpf(10) ** -(dps - 8)
        f = F(nu)
        g_norm = mp.inf
        for _ in range(max_iter):
            p = weights(nu)
            h = [mp.fsum(p[i] * Tm[i][k] for i in supp) for k in range(d)]
            g = [b[k] - nu[k] - h[k] for k in range(d)]
            g_norm = mp.sqrt(mp.fsum(x * x for x in g))
            if g_norm < tol:
                break
            H = mp.matrix(d, d)
            for k in range(d):
                for l in range(d):
                    H[k, l] = a * mp.fsum(p[i] * (Tm[i][k] - h[k]) * (Tm[i][l] - h[l]) for i in supp)
                H[k, k] += 1
            step = mp.lu_solve(H, mp.matrix(g))
            slope = mp.fsum(g[k] * step[k] for k in range(d))
            t = mp.mpf(1)
            slack = mp.mpf(10) ** -(dps - 6) * (1 + abs(f))      # F's own rounding at this precision
            while True:
                new = [nu[k] + t * step[k] for k in range(d)]
                fn = F(new)
                if fn >= f + mp.mpf("1e-4") * t * slope - slack or t < mp.mpf(10) ** -30:
                    break
                t /= 2
            nu, f = new, fn
        p = weights(nu)
        lam = [a * x for x in nu]
        h = [mp.fsum(p[i] * Tm[i][k] for i in supp) for k in range(d)]
        s = {i: mp.log(um[i]) + mp.fsum(Tm[i][k] * lam[k] for k in range(d)) for i in supp}
        D = mp.fsum(lam[k] * b[k] for k in range(d)) - mp.fsum(x * x for x in lam) / (2 * a) - lse(s)
        P = a / 2 * mp.fsum((b[k] - h[k]) ** 2 for k in range(d)) + mp.fsum(
            p[i] * mp.log(p[i] / um[i]) for i in supp if p[i] > 0)
        return dict(lam=lam, p=[p.get(i, mp.mpf(0)) for i in range(n)], h=h, P=P, D=D, gap=abs(P - D),
                    grad=g_norm)


def mp_h16(T, u, z, alpha, dps: int = 50):
    """(16) at `dps` digits: sum_i t_i u_i exp(alpha <t_i, z>) / sum_j u_j exp(alpha <t_j, z>)."""
    mp = _mp()
    with mp.workdps(dps):
        n, d = len(T), len(T[0])
        a = mp.mpf(float(alpha))
        s = {i: mp.log(mp.mpf(float(u[i]))) + a * mp.fsum(mp.mpf(float(T[i][k])) * mp.mpf(float(z[k])) for k in range(d))
             for i in range(n) if u[i] > 0}
        m = max(s.values())
        w = {i: mp.exp(v - m) for i, v in s.items()}
        W = mp.fsum(w.values())
        return [mp.fsum(w[i] * mp.mpf(float(T[i][k])) for i in w) / W for k in range(d)]


def tilted_plain(lam, T, u):
    """(9) by its definition in float64 loops: p_i = u_i exp(<t_i, lam>) / sum_j u_j exp(<t_j, lam>) (the
    largest exponent taken out; u_i = 0 gives p_i = 0)."""
    s = [None if u[i] <= 0 else math.log(u[i]) + sum(T[i][k] * lam[k] for k in range(len(lam)))
         for i in range(len(u))]
    m = max(v for v in s if v is not None)
    w = [0.0 if v is None else math.exp(v - m) for v in s]
    W = math.fsum(w)
    return [x / W for x in w]


def foc_residual_plain(lam, T, u, z, alpha) -> float:
    """max_k |lam_k - alpha (b_k - h_k(lam))| / (alpha max(1, |b|_inf)): the first-order condition of (7),
    with b = mu + z and h(lam) = T^T p(lam) by :func:`tilted_plain` (0 exactly at lambda*)."""
    n, d = len(u), len(lam)
    tot = math.fsum(u)
    mu = [math.fsum(u[i] * T[i][k] for i in range(n)) / tot for k in range(d)]
    b = [mu[k] + z[k] for k in range(d)]
    p = tilted_plain(lam, T, u)
    h = [math.fsum(p[i] * T[i][k] for i in range(n)) for k in range(d)]
    scale = alpha * max(1.0, max(abs(x) for x in b))
    return max(abs(lam[k] - alpha * (b[k] - h[k])) for k in range(d)) / scale


# ---------------------------------------------------------------------------------------------
# OT attention (Sec 9, App. D), plain transcriptions
# ---------------------------------------------------------------------------------------------

def _lse(xs) -> float:
    m = max(xs)
    return m + math.log(math.fsum(math.exp(x - m) for x in xs))


def ot_grad_plain(g, u, M, gamma):
    """(34): [grad W*_gamma(g)]_t = sum_t' u(t') exp((g(t) - M(t, t'))/gamma) / sum_s exp((g(s) - M(s, t'))/gamma)."""
    N = len(u)
    p = [0.0] * N
    for c in range(N):
        if u[c] <= 0:
            continue
        e = [(g[t] - M[t][c]) / gamma for t in range(N)]
        L = _lse(e)
        for t in range(N):
            p[t] += u[c] * math.exp(e[t] - L)
    return p


def ot_attention_plain(A, u, M, z, gamma, alpha):
    """(22)/(44) as printed: p(t) = sum_i u_i exp((alpha t^T z - M(t, t_i))/gamma) / Z_i."""
    g = [alpha * math.fsum(a * c for a, c in zip(row, z)) for row in A]
    return ot_grad_plain(g, u, M, gamma)


def prop1_plain(u, M, gamma):
    """(37): u~(t) = sum_t' u(t') exp(-M(t, t')/gamma) / sum_t'' exp(-M(t'', t')/gamma)."""
    return ot_grad_plain([0.0] * len(u), u, M, gamma)


def ot_foc_residual_plain(lam, A, u, M, z, gamma, alpha) -> float:
    """The first-order condition of (36), lambda = alpha (mu~ + z - A^T p(lambda)) with p = (34) at A lambda
    and mu~ = A^T u~ (37)-(38): max_k |residual_k| / (alpha max(1, |mu~ + z|_inf)); 0 exactly at lambda*."""
    N, d = len(u), len(z)
    ut = prop1_plain(u, M, gamma)
    b = [math.fsum(ut[t] * A[t][k] for t in range(N)) + z[k] for k in range(d)]
    p = ot_grad_plain([math.fsum(A[t][k] * lam[k] for k in range(d)) for t in range(N)], u, M, gamma)
    h = [math.fsum(p[t] * A[t][k] for t in range(N)) for k in range(d)]
    return max(abs(lam[k] - alpha * (b[k] - h[k])) for k in range(d)) / (alpha * max(1.0, max(abs(x) for x in b)))


def column_moments_plain(A, u, M, gamma):
    """(41)-(42): for each column t' of M, q_t'(t) = exp(-M(t, t')/gamma) / Z(t'), its mean mu_t' and covariance;
    returns ([mu_t'], Sigma-bar = sum_t' u(t') Sigma_t') as lists."""
    N, d = len(u), len(A[0])
    means, Sbar = [], [[0.0] * d for _ in range(d)]
    for c in range(N):
        e = [-M[t][c] / gamma for t in range(N)]
        L = _lse(e)
        q = [math.exp(x - L) for x in e]
        m = [math.fsum(q[t] * A[t][k] for t in range(N)) for k in range(d)]
        means.append(m)
        if u[c] > 0:
            for k in range(d):
                for l in range(d):
                    Sbar[k][l] += u[c] * math.fsum(q[t] * (A[t][k] - m[k]) * (A[t][l] - m[l]) for t in range(N))
    return means, Sbar


def ot_dual_newton_plain(A, u, M, z, gamma, alpha, tol: float, max_iter: int = 50):
    """Newton's method on (36) with full steps, written out from (34), (37)-(38) and (41): gradient
    mu~ + z - lambda/alpha - A^T p(lambda), negative Hessian I/alpha + (1/gamma) sum_t' u(t') Cov_{q_t'}(a) with
    q_t'(t) proportional to exp((a_t . lambda - M(t, t'))/gamma); start alpha z; stop after the first step of norm
    <= tol max(1, |lambda|) (lambda after the step).  Returns (lambda, steps), or (None, max_iter) when no step
    meets the test."""
    N, d = len(u), len(z)
    ut = prop1_plain(u, M, gamma)
    b = [math.fsum(ut[t] * A[t][k] for t in range(N)) + z[k] for k in range(d)]
    lam = [alpha * x for x in z]
    for it in range(1, max_iter + 1):
        s = [math.fsum(A[t][k] * lam[k] for k in range(d)) for t in range(N)]
        p = ot_grad_plain(s, u, M, gamma)
        g = [b[k] - lam[k] / alpha - math.fsum(p[t] * A[t][k] for t in range(N)) for k in range(d)]
        H = [[(1.0 / alpha if k == l else 0.0) for l in range(d)] for k in range(d)]
        for c in range(N):
            if u[c] <= 0:
                continue
            e = [(s[t] - M[t][c]) / gamma for t in range(N)]
            L = _lse(e)
            q = [math.exp(x - L) for x in e]
            m = [math.fsum(q[t] * A[t][k] for t in range(N)) for k in range(d)]
            for k in range(d):
                for l in range(d):
                    H[k][l] += u[c] / gamma * math.fsum(q[t] * (A[t][k] - m[k]) * (A[t][l] - m[l]) for t in range(N))
        step = _solve_plain(H, g)
        lam = [a + b_ for a, b_ in zip(lam, step)]
        if math.sqrt(math.fsum(x * x for x in step)) <= tol * max(1.0, math.sqrt(math.fsum(x * x for x in lam))):
            return lam, it
    return None, max_iter


def _solve_plain(H, g):
    """H x = g by Gaussian elimination with partial pivoting (H symmetric positive definite, small)."""
    n = len(g)
    a = [list(row) + [g[i]] for i, row in enumerate(H)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[piv] = a[piv], a[c]
        for r in range(c + 1, n):
            f = a[r][c] / a[c][c]
            for k in range(c, n + 1):
                a[r][k] -= f * a[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - math.fsum(a[r][k] * x[k] for k in range(r + 1, n))) / a[r][r]
    return x
