"""The exact identities of Theorem 1 and of the derivation of Theorem 2 (Fenchel-dual attention paper,
Eqs. (3), (7), (9), (10), (14), (16)), checked in float64 over random sizes including the edges
(n = 1, d = 1, n >= 100, near-ties, atoms outside supp u) with the library's solvers:

- Thm 1: at lambda* from the dual (7), the recovery (9) p(lambda*) = softmax(log u + T lambda*) is the
  primal optimum of (3) (its own KKT residual vanishes), the optimal values agree (zero duality gap),
  and lambda* = alpha (b - h-hat) with h-hat = T^T p(lambda*) (10);
- Thm 2's starting point: lambda* - alpha z = alpha (mu - h-hat) exactly, so ||lambda* - alpha z|| <=
  alpha diam(T); (16) is (10) at lambda = alpha z; z = 0 makes (14) and (16) exact.
"""
from __future__ import annotations

import numpy as np

from attnlab.catalog import claim, holds_if

TOL = 1e-12


def identity_cases(seed: int = 2026):
    """[(label, T, u, z, alpha)]: the edges, random sizes, n >= 100 and near-ties; alpha log-uniform in
    [0.01, 10], ||z|| over two decades."""
    rng = np.random.default_rng(seed)
    out = []

    def add(label, n, d, T=None, u=None, z=None):
        T = rng.normal(size=(n, d)) if T is None else T
        u = rng.dirichlet(np.ones(n)) if u is None else u
        z = rng.normal(size=d) * 10 ** rng.uniform(-1, 1) if z is None else z
        out.append((label, T, u, z, float(10 ** rng.uniform(-2, 1))))

    add("n=1,d=1", 1, 1)
    add("n=1,d=6", 1, 6)
    add("n=7,d=1", 7, 1)
    add("n=2,d=2", 2, 2)
    for _ in range(6):
        n, d = int(rng.integers(2, 40)), int(rng.integers(1, 12))
        add(f"n={n},d={d}", n, d)
    add("n=120,d=8", 120, 8)
    add("n=300,d=1", 300, 1)
    add("n=150,d=40", 150, 40)
    T = rng.normal(size=(9, 3))
    T[1] = T[0] + 1e-9 * rng.normal(size=3)
    add("near-duplicate templates", 9, 3, T=T)
    T = rng.normal(size=(10, 2))
    T[:5, 0] = 0.7                                   # five templates with the same logit <t_i, z>
    add("tied logits", 10, 2, T=T, z=np.array([1.0, 0.0]))
    u = rng.dirichlet(np.ones(12))
    u[[0, 5, 7]] = 0.0
    add("u with zeros", 12, 4, u=u / u.sum())
    return out


def _lambda_star(solver, T, u, z, alpha):
    """lambda* by one of the library's dual solvers: 'numpy' (solve_dual_newton), 'torch-lambda' and
    'torch-atoms' (solve_dual_newton_torch in float64, in the two coordinate systems)."""
    from attnlab.numerics import entropic_dual as ed

    if solver == "numpy":
        return ed.solve_dual_newton(T, u, z, alpha)[0]
    import torch

    with np.errstate(divide="ignore"):
        logu = torch.tensor(np.log(u))
    lam = ed.solve_dual_newton_torch(torch.tensor(T), logu, torch.tensor(z), alpha,
                                     space=solver.split("-")[1])
    return lam.numpy()


def thm1_residuals(T, u, z, alpha, lam) -> dict:
    """Relative residuals of Thm 1's identities at lambda (all 0 in exact arithmetic at lambda*)."""
    from attnlab.numerics import entropic_dual as ed

    b = u @ T + z
    p = ed.tilted(lam, T, u)                                                  # (9)
    D = ed.dual_objective(lam, T, u, z, alpha)                                # (7)
    P = ed.primal_objective(p, T, u, z, alpha)                                # (3)
    return dict(gap=abs(P - D) / max(1.0, abs(D)),
                foc=float(np.linalg.norm(lam - alpha * (b - p @ T)) / (alpha * max(1.0, np.linalg.norm(b)))),
                primal_kkt=ed.primal_kkt_residual(p, T, u, z, alpha),
                mass=abs(float(p.sum()) - 1.0) + float(np.abs(p[u == 0]).sum()))


def check_thm1_identities(cases=None, solvers=("numpy", "torch-lambda", "torch-atoms"), tol: float = TOL):
    from attnlab.numerics import entropic_dual as ed
    from attnlab.theory.fenchel.oracles import tilted_plain

    cases = identity_cases() if cases is None else cases
    worst, per = {"kkt_residual_at_u_vs_plain": 0.0}, {}
    for label, T, u, z, a in cases:
        # the residual itself, away from the optimum (at p = u), against its plain transcription
        b = u @ T + z
        plain = float(np.abs(u - np.array(tilted_plain(list(a * (b - u @ T)), T.tolist(), list(u)))).max())
        worst["kkt_residual_at_u_vs_plain"] = max(worst["kkt_residual_at_u_vs_plain"],
                                                  abs(ed.primal_kkt_residual(u, T, u, z, a) - plain))
        # and the dual one, ||b - lambda/alpha - h(lambda)||_inf, at lambda = alpha z (away from lambda*)
        lam0 = a * z
        h0 = np.array(tilted_plain(list(lam0), T.tolist(), list(u))) @ T
        plain_d = float(np.abs(b - lam0 / a - h0).max())
        worst["kkt_residual_at_u_vs_plain"] = max(worst["kkt_residual_at_u_vs_plain"],
                                                  abs(ed.dual_kkt_residual(lam0, T, u, z, a) - plain_d))
        lams = {s: _lambda_star(s, T, u, z, a) for s in solvers}
        ref = lams[solvers[0]]
        for s, lam in lams.items():
            r = thm1_residuals(T, u, z, a, lam)
            r["solvers_agree"] = float(np.linalg.norm(lam - ref) / max(1.0, np.linalg.norm(ref)))
            per[f"{label} [{s}]"] = r
            for k, v in r.items():
                worst[k] = max(worst.get(k, 0.0), v)
    return holds_if(all(v <= tol for v in worst.values()), measured=worst, tolerance=tol,
                    explanation=f"{len(cases)} instances (n = 1 .. 300, d = 1 .. 40, near-duplicate templates, "
                                "tied logits, u with zeros; alpha in [0.01, 10]) x solvers "
                                f"{', '.join(solvers)} (float64): |P(p(lambda*)) - D(lambda*)| / max(1, |D|); "
                                "||lambda* - alpha(b - T^T p)|| / (alpha max(1, ||b||)); primal KKT residual of "
                                "p(lambda*); |sum p - 1| + mass off supp u; solvers' lambda* against numpy's; "
                                "the KKT residual functions (primal at p = u, dual at lambda = alpha z) against their "
                                "plain transcriptions",
                    per_case=per)


@claim("fenchel.thm1.exact-identities",
       reference="Thm 1, Eqs. (3), (7), (9), (10)",
       statement="For every discrete u, templates T and evidence z: at the maximiser lambda* of the dual (7), "
                 "the recovery (9) p(lambda*) = softmax(log u + T lambda*) minimises the primal (3), the optimal "
                 "values are equal, and lambda* = alpha (b - h-hat) with h-hat = T^T p(lambda*) (10); p(lambda*) "
                 "puts no mass outside supp u.",
       method="float64",
       vouches_for=("numerics.entropic_dual.solve_dual_newton", "numerics.entropic_dual.solve_dual_newton_torch",
                    "numerics.entropic_dual.tilted", "numerics.entropic_dual.dual_objective",
                    "numerics.entropic_dual.primal_objective", "numerics.entropic_dual.primal_kkt_residual",
                    "numerics.entropic_dual.dual_kkt_residual"))
def _thm1_identities():
    return check_thm1_identities()


def check_kkt_identity(cases=None, tol: float = TOL):
    """Thm 2's exact starting point over `cases`, h-hat from the recovery (10) (never from b - lambda/alpha,
    which would make the identity hold for any lambda)."""
    import torch

    from attnlab.numerics import entropic_dual as ed
    from attnlab.numerics.fenchel_attention import fenchel_attention

    cases = identity_cases() if cases is None else cases
    worst = dict(identity=0.0, eq16_numpy_vs_torch=0.0, z0_lambda=0.0, z0_h_minus_mu=0.0)
    bound_ok = True
    for _, T, u, z, a in cases:
        lam = ed.solve_dual_newton(T, u, z, a)[0]
        h = ed.h_of_lambda(lam, T, u)                                           # (10)
        mu = u @ T
        lhs = lam - a * z
        scale = a * max(1.0, float(np.linalg.norm(T, axis=1).max()), float(np.linalg.norm(z)))
        worst["identity"] = max(worst["identity"], float(np.linalg.norm(lhs - a * (mu - h))) / scale)
        diam = float(np.sqrt(((T[:, None, :] - T[None, :, :]) ** 2).sum(-1)).max())
        bound_ok &= bool(np.linalg.norm(lhs) <= a * diam * (1 + 1e-12) + 1e-15)
        # (16) = (10) at lambda = alpha z: numpy's h_approx against the torch attention layer (exact=False)
        with np.errstate(divide="ignore"):
            lu = torch.tensor(np.log(u))
        Tt = torch.tensor(T)
        h16_t = fenchel_attention(torch.tensor(z)[None], Tt, Tt, alpha=a, log_u=lu, scale=1.0, exact=False)[0]
        h16 = ed.h_approx(T, u, z, a)
        worst["eq16_numpy_vs_torch"] = max(worst["eq16_numpy_vs_torch"],
                                           float(np.linalg.norm(h16 - h16_t.numpy())) / max(1.0, np.linalg.norm(h16)))
        # z = 0: lambda* = 0 = alpha z and h-hat = mu = (16) exactly
        lam0 = ed.solve_dual_newton(T, u, np.zeros_like(z), a)[0]
        worst["z0_lambda"] = max(worst["z0_lambda"], float(np.linalg.norm(lam0)) / a)
        worst["z0_h_minus_mu"] = max(worst["z0_h_minus_mu"], float(np.linalg.norm(ed.h_of_lambda(lam0, T, u) - mu)))
    ok = bound_ok and all(v <= tol for v in worst.values())
    return holds_if(ok, measured=dict(worst, bound_holds=bound_ok), tolerance=tol,
                    explanation=f"{len(cases)} instances (n = 1 .. 300, d = 1 .. 40, near-ties, u with zeros; "
                                "alpha in [0.01, 10]), float64 Newton: ||(lambda* - alpha z) - alpha(mu - h-hat)|| "
                                "with h-hat = T^T p(lambda*) (10), relative to alpha max(1, max||t_i||, ||z||); "
                                "||lambda* - alpha z|| <= alpha diam(T); (16) numpy vs the torch layer "
                                "(exact=False); z = 0")


@claim("fenchel.eq7.kkt-identity",
       reference="Eqs. (7), (10), (14), (16); Thm 2",
       statement="Exactly, lambda* - alpha z = alpha (mu - h-hat) with h-hat = T^T p(lambda*) (the first-order "
                 "condition of (7) read with (10)); hence ||lambda* - alpha z|| <= alpha diam(T) and the paper's "
                 "relative deviation ||lambda* - alpha z|| / ||lambda*|| is at most alpha diam(T) / ||lambda*||.  "
                 "(16) is (10) at lambda = alpha z, and z = 0 makes (14) and (16) exact (lambda* = 0, h-hat = mu).",
       method="float64",
       vouches_for=("numerics.entropic_dual.solve_dual_newton", "numerics.entropic_dual.h_of_lambda",
                    "numerics.entropic_dual.h_approx", "numerics.fenchel_attention.fenchel_attention"))
def _kkt_identity():
    return check_kkt_identity()
