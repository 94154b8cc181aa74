"""Claims of "Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions" (`fenchel.*`).

Instance I-rand (docs/instances.md) is the small random
instance: rng = default_rng(0); T = normal(5x3); u = dirichlet(1_5); z = normal(3).
"""
from __future__ import annotations

import numpy as np

from attnlab.catalog import claim, holds_if

ALPHAS_S3 = (0.5, 1.0, 2.0, 4.0)
# P* = D* on I-rand as computed once with cvxpy 1.9.3 / CLARABEL (docs/instances.md), 8 decimals.
S3_REFERENCE = {0.5: 0.50112418, 1.0: 0.87816463, 2.0: 1.42282609, 4.0: 2.19004108}


def instance_i_rand():
    """(T, u, z) of instance I-rand, drawn in this order."""
    rng = np.random.default_rng(0)
    T = rng.normal(size=(5, 3))
    u = rng.dirichlet(np.ones(5))
    z = rng.normal(size=3)
    return T, u, z


@claim("fenchel.thm1.strong-duality",
       reference="Thm 1, Eqs. (3), (7), (9)",
       statement="The primal (3) and the Fenchel dual (7) have equal optimal values, and the primal "
                 "optimum is recovered from lambda* by (9): p* = softmax(log u + T lambda*).",
       method="cvxpy",
       vouches_for=("numerics.entropic_dual.solve_primal_cvxpy", "numerics.entropic_dual.solve_dual_cvxpy",
                    "numerics.entropic_dual.solve_dual_newton", "numerics.entropic_dual.tilted",
                    "numerics.entropic_dual.dual_objective", "numerics.entropic_dual.primal_objective"))
def _thm1_strong_duality():
    from attnlab.numerics import entropic_dual as ed

    T, u, z = instance_i_rand()
    b = u @ T + z
    per = {}
    ok = True
    worst = dict(gap=0.0, recovery=0.0, foc=0.0, primal_at_lam=0.0, ref=0.0)
    for a in ALPHAS_S3:
        p_cvx, P = ed.solve_primal_cvxpy(T, u, z, a)
        _, D = ed.solve_dual_cvxpy(T, u, z, a)
        lam, _ = ed.solve_dual_newton(T, u, z, a)
        p_lam = ed.tilted(lam, T, u)
        h = p_lam @ T
        D_newton = ed.dual_objective(lam, T, u, z, a)
        m = dict(gap=abs(P - D),                                   # cvxpy primal vs cvxpy dual
                 recovery=float(np.max(np.abs(p_cvx - p_lam))),    # (9) against the cvxpy primal
                 foc=float(np.linalg.norm(lam - a * (b - h))),     # first-order condition
                 primal_at_lam=abs(ed.primal_objective(p_lam, T, u, z, a) - D_newton),
                 ref=abs(D_newton - S3_REFERENCE[a]))
        per[a] = dict(m, P=P, D=D, D_newton=D_newton)
        for k in worst:
            worst[k] = max(worst[k], m[k])
    tol = dict(gap=1e-7, recovery=1e-4, foc=1e-12, primal_at_lam=1e-10, ref=5e-9)
    # the retry: a first attempt cut to 8 interior-point iterations, then the solver's defaults; the answer returned
    # is the attempt of smallest KKT residual (each attempt's residual is listed in info, 3 digits), and the residual
    # it states is that of the lambda it returns, recomputed here from the gradient of (7) with scipy's softmax
    import re

    from scipy.special import softmax

    retry = {}
    for a in ALPHAS_S3:
        lam_c, _, info = ed.solve_dual_cvxpy(T, u, z, a, return_info=True, max_iter=8)
        grad = b - lam_c / a - softmax(np.log(u) + T @ lam_c) @ T
        own = float(np.abs(grad).max())
        listed = [float(x) for x in re.findall(r"KKT residual ([0-9.e+-]+)", "; ".join(info["attempts"]))]
        # only an 'optimal' first answer within the bound ends the attempts: after any other, the defaults run too
        retried = len(info["attempts"]) == 2 or info["attempts"][0].startswith("CLARABEL tight: optimal, ")
        retry[a] = dict(attempts=info["attempts"], stated=info["kkt_residual"], recomputed=own,
                        smallest=bool(listed) and own <= min(listed) * (1 + 5e-3) + 1e-15 and retried
                        and abs(info["kkt_residual"] - own) <= 1e-12 + 1e-9 * own)
    per["retry (first attempt cut to 8 iterations)"] = retry
    # the solver named as a program reads it (an equal string, not the interned literal) gets the same tight first
    # attempt as the default
    from attnlab.theory._inputs import at_run_time

    _, _, info_rt = ed.solve_primal_cvxpy(T, u, z, 1.0, solver=at_run_time("CLARABEL"), return_info=True)
    tight_first = info_rt["attempts"][0].startswith("CLARABEL tight:")
    per["solver name read at run time: tight first attempt"] = tight_first
    ok = all(worst[k] < tol[k] for k in tol) and all(r["smallest"] for r in retry.values()) and tight_first
    worst = dict(worst, retry_keeps_smallest_residual=all(r["smallest"] for r in retry.values()))
    return holds_if(ok, measured=worst, tolerance=tol,
                    explanation="I-rand, alpha in {0.5,1,2,4}: |P*-D*| (cvxpy CLARABEL), "
                                "max|p_cvx - p(lambda*)| with lambda* by float64 Newton, "
                                "||lambda* - alpha(b - h*)||, |P(p(lambda*)) - D(lambda*)|, "
                                "|D* - reference (8 decimals)|; the dual solved with its first attempt cut to 8 "
                                "iterations: the defaults run after any first answer but an 'optimal' one, and the "
                                "answer returned is the attempt of smallest KKT residual, as recomputed from the "
                                "gradient of (7); the solver's name given as an equal string built at run time gets "
                                "the same tight first attempt",
                    per_alpha=per)


@claim("fenchel.sec5.gaussian-closed-form",
       reference="Sec 5",
       statement="For u = N(mu, 1) the dual (7) is solved by lambda* = alpha (b - mu)/(alpha + 1), so "
                 "p* = N((mu + alpha b)/(1 + alpha), 1) and h = (alpha b + mu)/(alpha + 1).",
       method="sympy",
       vouches_for=("numerics.entropic_dual.gaussian_closed_form",))
def _sec5_gaussian_sympy():
    """sympy derives M(lambda), lambda* and h-hat (completing the square: u(a) e^{a lambda} =
    e^{lambda mu + lambda^2/2} N(a; mu + lambda, 1), and the two Gaussian integrals by sympy), then the
    library's gaussian_closed_form (u = N(mu, I), any d) is held to the derived lambda*, h-hat at random
    rational points, coordinate by coordinate (N(mu, I) factorises), alpha from 1e-3 to 1e3."""
    from fractions import Fraction

    import sympy as sp

    from attnlab.numerics.entropic_dual import gaussian_closed_form

    a, lam, mu, b, x = sp.symbols("a lambda mu b x", real=True)
    alpha = sp.symbols("alpha", positive=True)
    square = sp.expand(-(a - mu) ** 2 / 2 + a * lam - (-(a - mu - lam) ** 2 / 2 + lam * mu + lam ** 2 / 2)) == 0
    I0 = sp.integrate(sp.exp(-x ** 2 / 2), (x, -sp.oo, sp.oo))             # sqrt(2 pi)
    I1 = sp.integrate(x * sp.exp(-x ** 2 / 2), (x, -sp.oo, sp.oo))         # 0
    M = sp.exp(lam * mu + lam ** 2 / 2) * I0 / sp.sqrt(2 * sp.pi)          # int u(a) e^{a lambda} da, x = a - mu - lambda
    m_ok = bool(square) and sp.simplify(M - sp.exp(lam * (lam + 2 * mu) / 2)) == 0
    dual = lam * b - lam ** 2 / (2 * alpha) - sp.log(M)
    sol = sp.solve(sp.Eq(sp.diff(dual, lam), 0), lam)
    lam_star = sp.simplify(sol[0]) if len(sol) == 1 else None
    lam_ok = lam_star is not None and sp.simplify(lam_star - alpha / (alpha + 1) * (b - mu)) == 0
    concave = sp.simplify(sp.diff(dual, lam, 2) - (-1 / alpha - 1)) == 0
    # mean of the tilted density u(a) e^{a lambda} / M(lambda) = N(a; mu + lambda, 1), then at lambda*
    tilted_mean = sp.simplify(((mu + lam) * I0 + I1) / I0)
    mean = sp.simplify(tilted_mean.subs(lam, lam_star)) if lam_ok else None
    h_ok = mean is not None and sp.simplify(mean - (alpha * b + mu) / (alpha + 1)) == 0
    lib_err = float("inf")
    if lam_ok and h_ok:
        rng = np.random.default_rng(5)
        lib_err = 0.0
        for d in (1, 2, 3, 5):
            m_v = [Fraction(int(k), 64) for k in rng.integers(-512, 512, size=d)]
            z_v = [Fraction(int(k), 64) for k in rng.integers(-512, 512, size=d)]
            al = Fraction(10) ** int(rng.integers(-3, 4)) * Fraction(int(rng.integers(1, 10)), 4)
            got_lam, got_h = gaussian_closed_form([float(v) for v in m_v], [float(v) for v in z_v], float(al))
            for k in range(d):
                env = {mu: sp.Rational(m_v[k]), b: sp.Rational(m_v[k] + z_v[k]), alpha: sp.Rational(al)}
                ref_l, ref_h = float(lam_star.subs(env)), float(mean.subs(env))
                lib_err = max(lib_err, abs(float(got_lam[k]) - ref_l) / max(1.0, abs(ref_l)),
                              abs(float(got_h[k]) - ref_h) / max(1.0, abs(ref_h)))
    ok = bool(m_ok and lam_ok and concave and h_ok) and lib_err < 1e-14
    return holds_if(ok, measured=dict(M_closed_form=bool(m_ok), lambda_star=str(lam_star),
                                      strictly_concave=bool(concave), h_hat=str(mean), library_rel_err=lib_err),
                    tolerance=dict(sympy="exact (simplify == 0)", library_rel_err=1e-14),
                    explanation="sympy: M(lambda) = exp(lambda(lambda+2mu)/2) by completing the square; "
                                "stationary point of (7); mean of the tilted Gaussian; "
                                "numerics.entropic_dual.gaussian_closed_form against the derived lambda*, h-hat "
                                "(exact rationals, d = 1, 2, 3, 5)")


@claim("fenchel.sec5.gaussian-grid",
       reference="Sec 5",
       statement="Numerically, with u = N(0.3, 1) discretised on [-12, 12] (4001 points) and b = 2, the "
                 "dual solution has mean (mu + alpha b)/(1 + alpha) and variance 1.",
       method="float64",
       vouches_for=("numerics.entropic_dual.solve", "numerics.entropic_dual.gaussian_closed_form"))
def _sec5_gaussian_grid():
    """The library's exact solver on the discretised Gaussian against brentq on the one-dimensional dual
    gradient (a plain transcription of (7)'s first-order condition, the oracle), and both against Sec 5's
    closed form, as transcribed here and as the library gives it (gaussian_closed_form)."""
    from scipy.optimize import brentq
    from scipy.special import logsumexp, softmax

    from attnlab.numerics import entropic_dual as ed

    g = np.linspace(-12, 12, 4001)
    mu, b = 0.3, 2.0
    logu = -0.5 * (g - mu) ** 2
    logu -= logsumexp(logu)
    u = np.exp(logu)
    mu_d = float(u @ g)  # the discretised mean (equal to mu to ~1e-16 here)
    z = np.array([b - mu_d])
    errs = {}
    for alpha in (0.5, 1.0, 4.0):
        def grad(lam):
            p = softmax(logu + g * lam)
            return b - lam / alpha - p @ g
        lam_ref = brentq(grad, -50, 50, xtol=1e-15, rtol=1e-15)           # the oracle
        sol = ed.solve(g[:, None], u, z, alpha)                            # the library
        p = sol["p"]
        mean = float(sol["h"][0])
        var = float(p @ (g - p @ g) ** 2)
        lam_cf, h_cf = ed.gaussian_closed_form([mu_d], z, alpha)
        closed = (mu_d + alpha * b) / (1 + alpha)                           # Sec 5, as printed
        errs[alpha] = dict(mean=mean, mean_err=abs(mean - closed), var_err=abs(var - 1.0),
                           lambda_vs_brentq=abs(float(sol["lam"][0]) - lam_ref),
                           p_mean_vs_brentq=abs(float(p @ g) - float(softmax(logu + g * lam_ref) @ g)),
                           closed_form_lambda=abs(float(lam_cf[0]) - alpha * (b - mu_d) / (1 + alpha)),
                           closed_form_h=abs(float(h_cf[0]) - closed))
    worst = max(max(e[k] for k in e if k != "mean") for e in errs.values())
    return holds_if(worst < 1e-10, measured=worst, tolerance=1e-10,
                    explanation="u = N(0.3, 1) on 4001 grid points, b = 2, alpha in {0.5, 1, 4}: the library's "
                                "float64 Newton (numerics.entropic_dual.solve) against brentq on the 1-D dual "
                                "gradient (lambda*, mean of p), its mean against (mu + alpha b)/(1 + alpha) and "
                                "its variance against 1; numerics.entropic_dual.gaussian_closed_form against the "
                                "closed form of Sec 5",
                    per_alpha=errs)
