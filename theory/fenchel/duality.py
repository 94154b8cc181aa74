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
       method="cvxpy")
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
    ok = all(worst[k] < tol[k] for k in tol)
    return holds_if(ok, measured=worst, tolerance=tol,
                    explanation="I-rand, alpha in {0.5,1,2,4}: |P*-D*| (cvxpy CLARABEL), "
                                "max|p_cvx - p(lambda*)| with lambda* by float64 Newton, "
                                "||lambda* - alpha(b - h*)||, |P(p(lambda*)) - D(lambda*)|, "
                                "|D* - reference (8 decimals)|",
                    per_alpha=per)


@claim("fenchel.sec5.gaussian-closed-form",
       reference="Sec 5",
       statement="For u = N(mu, 1) the dual (7) is solved by lambda* = alpha (b - mu)/(alpha + 1), so "
                 "p* = N((mu + alpha b)/(1 + alpha), 1) and h = (alpha b + mu)/(alpha + 1).",
       method="sympy")
def _sec5_gaussian_sympy():
    import sympy as sp

    a, lam, mu, b = sp.symbols("a lambda mu b", real=True)
    alpha = sp.symbols("alpha", positive=True)
    density = sp.exp(-(a - mu) ** 2 / 2) / sp.sqrt(2 * sp.pi)
    M = sp.simplify(sp.integrate(density * sp.exp(a * lam), (a, -sp.oo, sp.oo)))
    m_ok = sp.simplify(M - sp.exp(lam * (lam + 2 * mu) / 2)) == 0
    dual = lam * b - lam ** 2 / (2 * alpha) - sp.log(M)
    sol = sp.solve(sp.Eq(sp.diff(dual, lam), 0), lam)
    lam_star = sp.simplify(sol[0]) if len(sol) == 1 else None
    lam_ok = lam_star is not None and sp.simplify(lam_star - alpha / (alpha + 1) * (b - mu)) == 0
    concave = sp.simplify(sp.diff(dual, lam, 2) - (-1 / alpha - 1)) == 0
    # mean of the tilted density u(a) e^{a lambda} / M(lambda), as a function of lambda, then at lambda*
    tilted_mean = sp.simplify(sp.integrate(a * density * sp.exp(a * lam), (a, -sp.oo, sp.oo)) / M)
    mean = sp.simplify(tilted_mean.subs(lam, lam_star)) if lam_ok else None
    h_ok = mean is not None and sp.simplify(mean - (alpha * b + mu) / (alpha + 1)) == 0
    ok = bool(m_ok and lam_ok and concave and h_ok)
    return holds_if(ok, measured=dict(M_closed_form=bool(m_ok), lambda_star=str(lam_star),
                                      strictly_concave=bool(concave), h_hat=str(mean)),
                    tolerance="exact (sympy simplify == 0)",
                    explanation="sympy: M(lambda) = exp(lambda(lambda+2mu)/2); stationary point of (7); "
                                "mean of the tilted Gaussian")


@claim("fenchel.sec5.gaussian-grid",
       reference="Sec 5",
       statement="Numerically, with u = N(0.3, 1) discretised on [-12, 12] (4001 points) and b = 2, the "
                 "dual solution has mean (mu + alpha b)/(1 + alpha) and variance 1.",
       method="float64")
def _sec5_gaussian_grid():
    from scipy.optimize import brentq
    from scipy.special import logsumexp, softmax

    g = np.linspace(-12, 12, 4001)
    mu, b = 0.3, 2.0
    logu = -0.5 * (g - mu) ** 2
    logu -= logsumexp(logu)
    mu_d = float(np.exp(logu) @ g)  # the discretised mean (equal to mu to ~1e-16 here)
    errs = {}
    for alpha in (0.5, 1.0, 4.0):
        def grad(lam):
            p = softmax(logu + g * lam)
            return b - lam / alpha - p @ g
        lam = brentq(grad, -50, 50, xtol=1e-15, rtol=1e-15)
        p = softmax(logu + g * lam)
        mean = p @ g
        var = p @ (g - mean) ** 2
        errs[alpha] = dict(mean=float(mean), mean_err=abs(mean - (mu_d + alpha * b) / (1 + alpha)),
                           var_err=abs(var - 1.0))
    worst = max(max(e["mean_err"], e["var_err"]) for e in errs.values())
    return holds_if(worst < 1e-10, measured=worst, tolerance=1e-10,
                    explanation="brentq on the 1-D dual gradient; max over alpha in {0.5,1,4} of "
                                "|mean - (mu+alpha b)/(1+alpha)| and |var - 1|",
                    per_alpha=errs)
