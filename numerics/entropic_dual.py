"""The KL-regularized mean-estimation problem and its Fenchel dual (Fenchel-dual attention paper,
Sec 3-6), for a discrete preference distribution u on templates t_1..t_n (rows of T).

Primal (3):  min_{p in simplex}  (alpha/2) ||b - T^T p||^2 + KL(p || u),     b = mu + z
Dual   (7):  max_lambda  <lambda, b> - ||lambda||^2 / (2 alpha) - log M(lambda),
             log M(lambda) = logsumexp_i(log u_i + <t_i, lambda>)                      (8)
Recovery (9): p*(lambda*) = softmax(log u + T lambda*);  h-hat = T^T p*                (10)
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

from numerics.validate import as_matrix, as_vector, positive, probability_vector


def check_instance(T, u, z, alpha=None):
    """Validate (T, u, z[, alpha]) and return them as float64 arrays."""
    T = as_matrix(T, "T")
    u = probability_vector(u, "u", T.shape[0])
    z = as_vector(z, "z", T.shape[1])
    if alpha is not None:
        positive(alpha, "alpha")
    return T, u, z


def _log_u(u):
    with np.errstate(divide="ignore"):
        return np.log(u)


def log_mgf(lam, T, u) -> float:
    """log M(lambda) of (8) for discrete u."""
    return float(logsumexp(_log_u(u) + T @ lam))


def tilted(lam, T, u) -> np.ndarray:
    """p(lambda) = softmax(log u + T lambda), the recovery map (9)."""
    return softmax(_log_u(u) + T @ lam)


def primal_objective(p, T, u, z, alpha) -> float:
    """(3) at a point p of the simplex (0 log 0 = 0)."""
    b = u @ T + z
    r = b - T.T @ p
    m = p > 0
    return float(0.5 * alpha * r @ r + np.sum(p[m] * np.log(p[m] / u[m])))


def dual_objective(lam, T, u, z, alpha) -> float:
    """(7) at lambda."""
    b = u @ T + z
    return float(lam @ b - lam @ lam / (2 * alpha) - log_mgf(lam, T, u))


def solve_dual_newton(T, u, z, alpha, tol: float = 1e-14, max_iter: int = 100):
    """lambda* by damped Newton on the (1/alpha)-strongly concave dual (7), float64.

    Gradient b - lambda/alpha - h(lambda); Hessian -I/alpha - Cov_{p(lambda)}(t).  Returns
    (lambda*, number of iterations).
    """
    T, u, z = check_instance(T, u, z, alpha)
    alpha = float(alpha)
    b = u @ T + z
    d = T.shape[1]
    lam = np.zeros(d)
    f = dual_objective(lam, T, u, z, alpha)
    for it in range(1, max_iter + 1):
        p = tilted(lam, T, u)
        h = p @ T
        g = b - lam / alpha - h
        C = (T - h).T @ ((T - h) * p[:, None])
        H = np.eye(d) / alpha + C
        step = np.linalg.solve(H, g)
        t = 1.0
        while True:
            new = lam + t * step
            fn = dual_objective(new, T, u, z, alpha)
            if fn >= f - 1e-15 * max(1.0, abs(f)) or t < 1e-10:
                break
            t *= 0.5
        lam, f = new, fn
        if np.linalg.norm(t * step) <= tol * max(1.0, np.linalg.norm(lam)):
            return lam, it
    return lam, max_iter


def solve_primal_cvxpy(T, u, z, alpha, solver: str = "CLARABEL"):
    """Primal (3) on the simplex by cvxpy. Returns (p*, P*)."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z
    p = cp.Variable(T.shape[0], nonneg=True)
    obj = alpha / 2 * cp.sum_squares(b - T.T @ p) + cp.sum(cp.rel_entr(p, u))
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(p) == 1])
    prob.solve(solver=solver)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy primal status {prob.status}")
    return np.clip(p.value, 0, None), float(prob.value)


def solve_dual_cvxpy(T, u, z, alpha, solver: str = "CLARABEL"):
    """Dual (7) by cvxpy. Returns (lambda*, D*)."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z
    keep = u > 0
    lam = cp.Variable(T.shape[1])
    obj = b @ lam - cp.sum_squares(lam) / (2 * alpha) - cp.log_sum_exp(T[keep] @ lam + np.log(u[keep]))
    prob = cp.Problem(cp.Maximize(obj))
    prob.solve(solver=solver)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy dual status {prob.status}")
    return np.asarray(lam.value), float(prob.value)
