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

from attnlab.numerics.validate import as_matrix, as_vector, positive, probability_vector


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

    Gradient b - lambda/alpha - h(lambda); Hessian -I/alpha - Cov_{p(lambda)}(t).  Starts at the
    approximation (14) lambda = alpha z; backtracking (Armijo) line search.  Returns
    (lambda*, number of iterations).
    """
    T, u, z = check_instance(T, u, z, alpha)
    alpha = float(alpha)
    keep = u > 0                       # atoms outside supp(u) never carry mass (9)
    Tk = T[keep]
    lu = np.log(u[keep])
    b = u @ T + z
    d = T.shape[1]
    eye_a = np.eye(d) / alpha

    def f_and_s(lam):
        s = lu + Tk @ lam
        m = s.max()
        e = np.exp(s - m)
        S = e.sum()
        return lam @ b - lam @ lam / (2 * alpha) - (m + np.log(S)), e / S

    lam = alpha * z
    f, p = f_and_s(lam)
    for it in range(1, max_iter + 1):
        h = p @ Tk
        g = b - lam / alpha - h
        C = Tk - h
        step = np.linalg.solve(eye_a + C.T @ (C * p[:, None]), g)
        slope = g @ step
        t = 1.0
        while True:
            new = lam + t * step
            fn, pn = f_and_s(new)
            if fn >= f + 1e-4 * t * slope - 1e-15 * max(1.0, abs(f)) or t < 1e-10:
                break
            t *= 0.5
        lam, f, p = new, fn, pn
        if np.linalg.norm(t * step) <= tol * max(1.0, np.linalg.norm(lam)):
            return lam, it
    return lam, max_iter


# CLARABEL options that give the primal p* to ~1e-8 (the defaults give ~1e-5); the exponential-cone
# dual is less accurate (lambda to ~1e-6) and may be reported optimal_inaccurate at these settings.
TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)


def solve_primal_cvxpy(T, u, z, alpha, solver: str = "CLARABEL", **solver_opts):
    """Primal (3) on the simplex by cvxpy. Returns (p*, P*).  solver_opts go to prob.solve (e.g.
    CLARABEL's tol_gap_abs / tol_gap_rel / tol_feas, see TIGHT)."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z
    p = cp.Variable(T.shape[0], nonneg=True)
    obj = alpha / 2 * cp.sum_squares(b - T.T @ p) + cp.sum(cp.rel_entr(p, u))
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(p) == 1])
    prob.solve(solver=solver, **solver_opts)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy primal status {prob.status}")
    return np.clip(p.value, 0, None), float(prob.value)


def solve_dual_cvxpy(T, u, z, alpha, solver: str = "CLARABEL", **solver_opts):
    """Dual (7) by cvxpy. Returns (lambda*, D*).  solver_opts go to prob.solve (see TIGHT)."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z
    keep = u > 0
    lam = cp.Variable(T.shape[1])
    obj = b @ lam - cp.sum_squares(lam) / (2 * alpha) - cp.log_sum_exp(T[keep] @ lam + np.log(u[keep]))
    prob = cp.Problem(cp.Maximize(obj))
    prob.solve(solver=solver, **solver_opts)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy dual status {prob.status}")
    return np.asarray(lam.value), float(prob.value)


# ---------------------------------------------------------------------------------------------
# Closed forms and approximations (Sec 5, Sec 6: Eqs. (11)-(16))
# ---------------------------------------------------------------------------------------------

def moments(T, u):
    """Mean mu = sum_i u_i t_i and covariance Sigma = sum_i u_i (t_i - mu)(t_i - mu)^T of u (Eq. 11)."""
    T = as_matrix(T, "T")
    u = probability_vector(u, "u", T.shape[0])
    mu = u @ T
    C = T - mu
    return mu, C.T @ (C * u[:, None])


def lambda_first_order(z, alpha) -> np.ndarray:
    """(14): lambda* ~ alpha z (alpha -> 0)."""
    positive(alpha, "alpha")
    return float(alpha) * as_vector(z, "z")


def lambda_refined(T, u, z, alpha) -> np.ndarray:
    """(13): lambda* ~ alpha (I_d + alpha Sigma)^{-1} z, from the second-order cumulant expansion (12)."""
    T, u, z = check_instance(T, u, z, alpha)
    _, S = moments(T, u)
    return float(alpha) * np.linalg.solve(np.eye(T.shape[1]) + float(alpha) * S, z)


def h_of_lambda(lam, T, u) -> np.ndarray:
    """h(lambda) = T^T softmax(log u + T lambda) = grad log M(lambda)  (Eq. 10)."""
    return tilted(lam, T, u) @ T


def h_approx(T, u, z, alpha) -> np.ndarray:
    """Theorem 2, (16): h ~ sum_i t_i u_i exp(alpha <t_i,z>) / sum_j u_j exp(alpha <t_j,z>)."""
    T, u, z = check_instance(T, u, z, alpha)
    return h_of_lambda(float(alpha) * z, T, u)


def h_refined(T, u, z, alpha) -> np.ndarray:
    """h evaluated at the refined multiplier (13): h(alpha (I + alpha Sigma)^{-1} z)."""
    return h_of_lambda(lambda_refined(T, u, z, alpha), *check_instance(T, u, z, alpha)[:2])


def gaussian_closed_form(mu, z, alpha):
    """Sec 5, u = N(mu, I): lambda* = alpha/(1+alpha) (b - mu) = alpha z/(1+alpha),
    p* = N(mu + lambda*, I), h = (mu + alpha b)/(1 + alpha).  Returns (lambda*, h)."""
    mu = as_vector(mu, "mu")
    z = as_vector(z, "z", mu.shape[0])
    a = positive(alpha, "alpha")
    lam = a / (1 + a) * z
    return lam, mu + lam


def solve(T, u, z, alpha):
    """Exact solution by float64 Newton: dict(lam, p, h) (Eqs. (7), (9), (10))."""
    lam, _ = solve_dual_newton(T, u, z, alpha)
    T, u, z = check_instance(T, u, z, alpha)
    p = tilted(lam, T, u)
    return dict(lam=lam, p=p, h=p @ T)


# ---------------------------------------------------------------------------------------------
# Batched Newton for the dual (7) in torch (float32 / float64, any device)
# ---------------------------------------------------------------------------------------------

def _torch_check(T, logu, z, alpha):
    import torch

    for name, x in (("T", T), ("logu", logu), ("z", z)):
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
        if x.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"{name} must have dtype float32 or float64; got {x.dtype}")
    if T.dim() < 2:
        raise ValueError(f"T must have shape (..., n, d); got {tuple(T.shape)}")
    n, d = T.shape[-2], T.shape[-1]
    if logu.dim() < 1 or logu.shape[-1] != n:
        raise ValueError(f"logu must have shape (..., n) with n = {n}; got {tuple(logu.shape)}")
    if z.dim() < 1 or z.shape[-1] != d:
        raise ValueError(f"z must have shape (..., d) with d = {d}; got {tuple(z.shape)}")
    if not bool(torch.isfinite(T).all()):
        raise ValueError("T must be finite (no NaN/inf)")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("z must be finite (no NaN/inf)")
    if bool(torch.isnan(logu).any()) or bool((logu == float("inf")).any()):
        raise ValueError("logu must be < +inf and not NaN (use -inf for atoms outside supp(u))")
    if bool((logu == float("-inf")).all(-1).any()):
        raise ValueError("logu must have at least one finite entry per problem (u must not be all zero)")
    alpha = torch.as_tensor(alpha, dtype=z.dtype, device=z.device)
    if not bool(torch.isfinite(alpha).all()) or bool((alpha <= 0).any()):
        raise ValueError("alpha must be finite and > 0")
    return alpha


def dual_objective_torch(lam, T, logu, z, alpha):
    """(7) at lambda, batched: <lambda, mu + z> - |lambda|^2/(2 alpha) - log M(lambda).

    logu may be unnormalised (log M only shifts by a constant, which is removed here so that the
    value equals (7) with the normalised u)."""
    import torch

    logw = logu - torch.logsumexp(logu, -1, keepdim=True)
    mu = (torch.softmax(logu, -1).unsqueeze(-2) @ T).squeeze(-2)
    s = logw + (T @ lam.unsqueeze(-1)).squeeze(-1)
    return ((lam * (mu + z)).sum(-1) - (lam * lam).sum(-1) / (2 * alpha)
            - torch.logsumexp(s, -1))


def solve_dual_newton_torch(T, logu, z, alpha, *, tol: float | None = None, max_iter: int = 50,
                            return_info: bool = False):
    """lambda* of the dual (7), batched over leading dimensions, by damped Newton in torch.

    Parameters (leading dimensions ``...`` broadcast against each other):
      T     (..., n, d)  templates t_i as rows
      logu  (..., n)     log preference weights log u_i; need not be normalised (log M(lambda) only
                         shifts by a constant, Eq. (8)); -inf marks an atom outside supp(u)
      z     (..., d)     evidence
      alpha float or tensor broadcastable to (...): reliability alpha > 0 (per problem, e.g. per query)
    dtype float32 or float64 (all three must agree); any device.  Returns lambda* with shape
    (..., d), the broadcast leading shape; with ``return_info=True`` also a dict with
    ``iterations``, ``grad_norm`` (max over the batch of ||b - lambda/alpha - h(lambda)||) and
    ``converged`` (bool tensor, per problem).

    Method: the dual is (1/alpha)-strongly concave with gradient b - lambda/alpha - h(lambda)
    (b = mu + z, mu the mean of the normalised u, h = T^T softmax(log u + T lambda), Eq. (10)) and
    negative Hessian I/alpha + Cov_{p(lambda)}(t); Newton from the approximation (14) lambda = alpha z,
    with a per-problem backtracking (Armijo) line search.  Default tol: 1e-12 (float64) or 1e-5
    (float32), on the step relative to 1 + |lambda|.  No gradient is tracked (see
    attnlab.numerics.fenchel_attention for the implicit-function derivative).

    Conditioning: the dual is only (1/alpha)-strongly concave, so for very large alpha (>~ 1e3 times
    1/lambda_max(Cov)) Newton needs more iterations and h(lambda) becomes sensitive to lambda; there,
    use float64, raise max_iter, and check ``grad_norm`` (float32 at alpha = 1e4 stalls near 1e-3).
    """
    import torch

    alpha = _torch_check(T, logu, z, alpha)
    if not (T.dtype == logu.dtype == z.dtype):
        raise ValueError(f"T, logu, z must share one dtype; got {T.dtype}, {logu.dtype}, {z.dtype}")
    if tol is None:
        tol = 1e-12 if z.dtype == torch.float64 else 1e-5
    with torch.no_grad():
        lead = torch.broadcast_shapes(T.shape[:-2], logu.shape[:-1], z.shape[:-1], alpha.shape)
        d = T.shape[-1]
        logw = logu - torch.logsumexp(logu, -1, keepdim=True)   # normalised log u (for mu and (7))
        mu = (logw.exp().unsqueeze(-2) @ T).squeeze(-2)
        b = (mu + z).expand(*lead, d)
        a = alpha.expand(lead).unsqueeze(-1)                      # (..., 1)
        eye = torch.eye(d, dtype=z.dtype, device=z.device)
        eps = torch.finfo(z.dtype).eps

        def parts(lam):
            s = logw + (T @ lam.unsqueeze(-1)).squeeze(-1)
            lse = torch.logsumexp(s, -1)
            f = (lam * b).sum(-1) - (lam * lam).sum(-1) / (2 * a.squeeze(-1)) - lse
            return s, lse, f

        lam = (a * z).expand(*lead, d).clone()                    # start at (14)
        converged = torch.zeros(lead, dtype=torch.bool, device=z.device)
        it = 0
        for it in range(1, max_iter + 1):
            s, lse, f = parts(lam)
            p = torch.exp(s - lse.unsqueeze(-1))
            h = (p.unsqueeze(-2) @ T).squeeze(-2)
            g = b - lam / a - h
            Tc = T - h.unsqueeze(-2)                              # (..., n, d)
            H = Tc.transpose(-1, -2) @ (p.unsqueeze(-1) * Tc) + eye / a.unsqueeze(-1)
            L, info = torch.linalg.cholesky_ex(H)
            step = torch.cholesky_solve(g.unsqueeze(-1), L).squeeze(-1)
            # a failed factorisation (possible in float32 for huge alpha) falls back to the scaled
            # gradient step alpha g, which the line search then safeguards
            step = torch.where((info == 0).unsqueeze(-1), step, a * g)
            slope = (g * step).sum(-1)                            # Newton decrement^2 >= 0
            t = torch.ones(lead, dtype=z.dtype, device=z.device)
            slack = 16 * eps * (f.abs() + lse.abs() + 1)
            for _ in range(40):                                   # backtracking, per problem
                new = lam + t.unsqueeze(-1) * step
                fn = parts(new)[2]
                ok = fn >= f + 1e-4 * t * slope - slack
                if bool(ok.all()):
                    break
                t = torch.where(ok, t, 0.5 * t)
            delta = (t.unsqueeze(-1) * step)
            lam = lam + delta
            small = delta.abs().amax(-1) <= tol * (1 + lam.abs().amax(-1))
            converged = converged | small
            if bool(converged.all()):
                break
        if not return_info:
            return lam
        s, lse, _ = parts(lam)
        h = (torch.softmax(s, -1).unsqueeze(-2) @ T).squeeze(-2)
        gn = (b - lam / a - h).norm(dim=-1)
        return lam, dict(iterations=it, grad_norm=float(gn.max()) if gn.numel() else 0.0,
                         converged=converged)


def h_of_lambda_torch(lam, T, logu):
    """h(lambda) = T^T softmax(log u + T lambda) (Eq. 10), batched in torch."""
    import torch

    s = logu + (T @ lam.unsqueeze(-1)).squeeze(-1)
    return (torch.softmax(s, -1).unsqueeze(-2) @ T).squeeze(-2)
