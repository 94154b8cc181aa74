"""Entropic optimal-transport attention (Fenchel-dual attention paper, Sec 9 and App. D, Eqs. (20)-(44)).

Templates A = {a_1..a_N} (rows of ``A``), a preference u on A (zeros allowed), a cost matrix M
(N x N, non-negative), an entropic weight gamma > 0 and a reliability alpha > 0.

  (20) W_gamma(p, u; M) = min_{X >= 0, X 1 = p, X^T 1 = u} <M, X> - gamma H(X),  H(X) = -sum X log X
  (21) primal   min_p (alpha/2) ||(mu~ + z) - A^T p||^2 + W_gamma(p, u; M)
  (33) W*_gamma(g; u, M) = gamma (H(u) + sum_t' u(t') log sum_t exp((g(t) - M(t, t'))/gamma))
       (printed with p(t) in the inner sum: an index typo)
  (34) grad W*: [grad]_t = sum_t' u(t') softmax_t((g - M[:, t'])/gamma)
  (35) p* = grad W*(A lambda*)
  (36) dual     max_lambda <mu~ + z, lambda> - ||lambda||^2/(2 alpha) - W*_gamma(A lambda)
  (37)-(38) Prop 1: u~ = argmin_p W_gamma(p, u; M) = K u with K[t, t'] = softmax_t(-M[:, t']/gamma),
       mu~ = A^T u~
  (22)/(44) OT attention: p*(t) ~ grad W*(alpha A z), i.e. lambda* ~ alpha z.

The inner sums run over the columns t' of M (the u-marginal); for a symmetric M (the paper's
assumption, footnote 9) rows and columns coincide.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

from attnlab.numerics.entropic_dual import SolverError
from attnlab.numerics.validate import as_matrix, as_vector, positive, probability_vector


def check_ot_instance(A, u, M, z, gamma, alpha=None):
    A = as_matrix(A, "A")
    N = A.shape[0]
    u = probability_vector(u, "u", N)
    M = as_matrix(M, "M", N)
    if M.shape[0] != N:
        raise ValueError(f"M must be N x N with N = {N}; got shape {M.shape}")
    z = as_vector(z, "z", A.shape[1])
    positive(gamma, "gamma")
    if alpha is not None:
        positive(alpha, "alpha")
    return A, u, M, z


def entropy(x) -> float:
    """H(x) = -sum_i x_i log x_i with 0 log 0 = 0, for finite x >= 0 (a measure, a plan); refuses others."""
    x = np.asarray(x, float).ravel()
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("entropy: x must be finite and >= 0 (a measure or a transport plan)")
    m = x > 0
    return float(-np.sum(x[m] * np.log(x[m])))


def prop1_true_preference(u, M, gamma):
    """Prop 1, (37): u~ = argmin_p W_gamma(p, u; M) = sum_t' u(t') softmax_t(-M[:, t']/gamma)."""
    M = as_matrix(M, "M")
    u = probability_vector(u, "u", M.shape[1])
    positive(gamma, "gamma")
    K = softmax(-M / gamma, axis=0)              # column t' is the conditional q(. | t')
    return K @ u


def prop1_mean(A, u, M, gamma):
    """Prop 1, (38): mu~ = sum_t u~(t) t."""
    return prop1_true_preference(u, M, gamma) @ as_matrix(A, "A")


def conjugate(g, u, M, gamma) -> float:
    """(33) with the index fixed: W*_gamma(g; u, M), including the constant gamma H(u)."""
    keep = u > 0
    inner = logsumexp((g[:, None] - M[:, keep]) / gamma, axis=0)      # over t, one per column t'
    return float(gamma * (entropy(u) + u[keep] @ inner))


def conjugate_grad(g, u, M, gamma) -> np.ndarray:
    """(34): grad_g W*_gamma = sum_t' u(t') softmax_t((g - M[:, t'])/gamma), a distribution on A."""
    keep = u > 0
    return softmax((g[:, None] - M[:, keep]) / gamma, axis=0) @ u[keep]


def check_plan_instance(p, u, M, gamma):
    """Validate (p, u, M, gamma) of (20) and return them as float64 arrays and a float: p and u probability
    vectors (zeros allowed), M finite of shape (len(p), len(u)), gamma a finite number > 0."""
    p, u, M = _check_transport(p, u, M)
    return p, u, M, positive(gamma, "gamma")


def _check_transport(p, u, M):
    """Validate the marginals and the cost of a transport problem, (20) at any gamma or exact_ot: p and u
    probability vectors (zeros allowed), M finite of shape (len(p), len(u)); returned as float64 arrays."""
    p = probability_vector(p, "p")
    u = probability_vector(u, "u")
    M = as_matrix(M, "M")
    if M.shape != (p.size, u.size):
        raise ValueError(f"M must have shape (len(p), len(u)) = ({p.size}, {u.size}); got {M.shape}")
    return p, u, M


def sinkhorn(p, u, M, gamma, tol: float = 1e-13, max_iter: int = 20000, _potentials=False):
    """W_gamma(p, u; M) of (20) by log-domain Sinkhorn (Cuturi 2013).  Returns (W, X).

    Zero-mass atoms of p or u are dropped (their rows/columns of X are 0).  The columns are exact after each
    g-update; the iteration stops when the row marginal is met to `tol` (max abs), and raises SolverError
    when it is not within max_iter iterations."""
    p, u, M, gamma = check_plan_instance(p, u, M, gamma)
    r, c = p > 0, u > 0
    Mr = M[np.ix_(r, c)]
    lp, lu = np.log(p[r]), np.log(u[c])
    f = np.zeros(r.sum())
    g = np.zeros(c.sum())
    for _ in range(max_iter):
        f = gamma * (lp - logsumexp((g[None, :] - Mr) / gamma, axis=1))
        g = gamma * (lu - logsumexp((f[:, None] - Mr) / gamma, axis=0))
        # columns are exact after the g-update; stop when the row marginal is met to tol
        rows = np.exp(logsumexp((f[:, None] + g[None, :] - Mr) / gamma, axis=1))
        if np.max(np.abs(rows - p[r])) < tol:
            break
    else:
        if not _potentials:                          # (a warm start may stop short; an answer may not)
            err = float(np.max(np.abs(rows - p[r])))
            raise SolverError(f"sinkhorn: the row marginal is still off by {err:.3g} (tol = {tol:g}) after max_iter = "
                              f"{max_iter} iterations; Sinkhorn slows like exp(-max M / gamma) (gamma = {gamma:g}): "
                              f"raise max_iter (and tol where float64 cannot meet it), or take a larger gamma; as "
                              f"gamma -> 0, W_gamma tends to exact_ot (0 <= W_0 - W_gamma <= gamma log(#entries))")
    if _potentials:
        return g
    logX = (f[:, None] + g[None, :] - Mr) / gamma
    X = np.zeros_like(M, dtype=float)
    X[np.ix_(r, c)] = np.exp(logX)
    W = float(np.sum(M * X) - gamma * entropy(X))
    return W, X


def entropic_ot_newton(p, u, M, gamma, tol: float = 1e-13, max_iter: int = 200):
    """W_gamma(p, u; M) of (20) by Newton on the semi-dual (f eliminated in closed form):

        W = max_g <g, u> - gamma sum_i p_i log sum_j exp((g_j - M_ij)/gamma) + gamma sum_i p_i log p_i

    (concave; invariant to g + c, fixed by g_0 = 0).  Quadratic convergence where Sinkhorn is slow
    (small gamma: its rate degrades like exp(-max M / gamma)) -- though not at every small gamma: where gamma is
    small against the costs (0.02 on the squared distances of six standard-normal points in the plane) its Hessian
    turns near-singular and it may stall where sinkhorn, slower, still converges (its SolverError says so).  Stops
    when the column marginal u is met to
    `tol` (max abs) at the point it returns; raises SolverError when it is not within max_iter steps, or
    when no step along Newton's direction raises the semi-dual any more while the marginal is still off
    (a singular Hessian: the least-squares step of a Hessian of condition 3e26 was taken, and W came back
    wrong with the marginal 0.05 off).  Returns (W, X)."""
    p, u, M, gamma = check_plan_instance(p, u, M, gamma)
    r, c = p > 0, u > 0
    Mr = M[np.ix_(r, c)]
    pr, uc = p[r], u[c]
    m = uc.size

    def val(g):
        return float(g @ uc - gamma * pr @ logsumexp((g[None, :] - Mr) / gamma, axis=1)
                     + gamma * pr @ np.log(pr))

    g = sinkhorn(p, u, M, gamma, max_iter=100, _potentials=True)   # warm start
    g = g - g[0]
    f0 = val(g)
    why = f"after max_iter = {max_iter} Newton steps"
    for _ in range(max_iter):
        P = softmax((g[None, :] - Mr) / gamma, axis=1)         # rows: conditional plans
        grad = uc - pr @ P
        if np.max(np.abs(grad)) < tol:                         # met at this g: the answer is this g
            break
        Hn = (np.diag(pr @ P) - (P * pr[:, None]).T @ P) / gamma   # minus the Hessian, PSD
        step = np.zeros(m)
        if m > 1:
            step[1:] = np.linalg.lstsq(Hn[1:, 1:], grad[1:], rcond=None)[0]
        t = 1.0
        while t >= 1e-10:
            fn = val(g + t * step)
            if fn >= f0 - 1e-15 * max(1.0, abs(f0)):
                break
            t *= 0.5
        else:                                                  # no step keeps the semi-dual: stalled
            why = "where no step along Newton's direction keeps the semi-dual (a singular Hessian)"
            break
        g, f0 = g + t * step, fn
    P = softmax((g[None, :] - Mr) / gamma, axis=1)
    off = float(np.max(np.abs(uc - pr @ P))) if m else 0.0
    if not off < tol:
        raise SolverError(f"entropic_ot_newton: the column marginal is still off by {off:.3g} (tol = {tol:g}) "
                          f"{why}; at small gamma sinkhorn (log-domain, slower) may still converge")
    X = np.zeros_like(M, dtype=float)
    X[np.ix_(r, c)] = P * pr[:, None]
    return float(np.sum(M * X) - gamma * entropy(X)), X


def primal_objective(p, A, u, M, z, gamma, alpha, method: str = "newton") -> float:
    """(21) at p, with W_gamma evaluated by semi-dual Newton ("newton") or Sinkhorn ("sinkhorn")."""
    b = prop1_mean(A, u, M, gamma) + z
    r = b - A.T @ p
    W = (entropic_ot_newton if method == "newton" else sinkhorn)(p, u, M, gamma)[0]
    return float(0.5 * alpha * r @ r + W)


def dual_objective(lam, A, u, M, z, gamma, alpha) -> float:
    """(36) with the constant gamma H(u) restored, so that it equals the primal optimum."""
    b = prop1_mean(A, u, M, gamma) + z
    return float(lam @ b - lam @ lam / (2 * alpha) - conjugate(A @ lam, u, M, gamma))


def solve_ot_dual_newton(A, u, M, z, gamma, alpha, tol: float = 1e-14, max_iter: int = 100):
    """lambda* of (36) by damped Newton (float64).  Gradient mu~ + z - lambda/alpha - A^T p(lambda),
    p = (34) at A lambda; negative Hessian I/alpha + (1/gamma) sum_t' u(t') Cov_{q_t'(lambda)}(a).
    Stops when a step is below tol relative to max(1, |lambda|) (max_iter steps at most: the step that meets
    the test counts); raises SolverError when none does.  Returns (lambda*, iterations)."""
    A, u, M, z = check_ot_instance(A, u, M, z, gamma, alpha)
    alpha, gamma = float(alpha), float(gamma)
    b = prop1_mean(A, u, M, gamma) + z
    keep = u > 0
    lam = alpha * z
    f = dual_objective(lam, A, u, M, z, gamma, alpha)
    d = A.shape[1]
    for it in range(1, max_iter + 1):
        Q = softmax(((A @ lam)[:, None] - M[:, keep]) / gamma, axis=0)     # N x |supp u|
        p = Q @ u[keep]
        g = b - lam / alpha - A.T @ p
        H = np.eye(d) / alpha
        means = Q.T @ A                                                   # per column t'
        for j, w in enumerate(u[keep]):
            C = A - means[j]
            H += w / gamma * (C.T @ (C * Q[:, j][:, None]))
        step = np.linalg.solve(H, g)
        t = 1.0
        while True:
            new = lam + t * step
            fn = dual_objective(new, A, u, M, z, gamma, alpha)
            if fn >= f - 1e-15 * max(1.0, abs(f)) or t < 1e-10:
                break
            t *= 0.5
        lam, f = new, fn
        if np.linalg.norm(t * step) <= tol * max(1.0, np.linalg.norm(lam)):
            return lam, it
    raise SolverError(f"solve_ot_dual_newton: the last step was still {np.linalg.norm(t * step):.3g} > tol = {tol:g} "
                      f"(relative to max(1, |lambda|)) after max_iter = {max_iter} Newton steps")


def ot_attention(A, u, M, z, gamma, alpha):
    """(22)/(44): the closed-form OT attention p(t) = sum_i u_i exp((alpha t^T z - M(t,t_i))/gamma)/Z_i
    (lambda* replaced by alpha z).  Returns (p, h)."""
    A, u, M, z = check_ot_instance(A, u, M, z, gamma, alpha)
    p = conjugate_grad(float(alpha) * (A @ z), u, M, float(gamma))
    return p, p @ A


def mean_cov_per_column(A, u, M, gamma):
    """mu_t and Sigma_t of q_t(t') = softmax_t'(-M(t, t')/gamma) (App. D, (39)-(42)), and the
    u-average Sigma-bar = sum_t u(t) Sigma_t."""
    Q = softmax(-M / gamma, axis=0)
    means = Q.T @ A
    S = np.zeros((A.shape[1], A.shape[1]))
    for j in range(A.shape[0]):
        if u[j] > 0:
            C = A - means[j]
            S += u[j] * (C.T @ (C * Q[:, j][:, None]))
    return means, S


def solve_ot_primal_cvxpy(A, u, M, z, gamma, alpha, solver: str = "CLARABEL", **solver_opts):
    """(21) over (p, X) by cvxpy.  Returns (p*, X*, P*)."""
    import cvxpy as cp

    A, u, M, z = check_ot_instance(A, u, M, z, gamma, alpha)
    N = A.shape[0]
    b = prop1_mean(A, u, M, gamma) + z
    X = cp.Variable((N, N), nonneg=True)
    p = cp.sum(X, axis=1)
    obj = (alpha / 2 * cp.sum_squares(b - A.T @ p) + cp.sum(cp.multiply(M, X))
           - gamma * cp.sum(cp.entr(X)))
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(X, axis=0) == u])
    prob.solve(solver=solver, **solver_opts)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy OT primal status {prob.status}")
    Xv = np.clip(X.value, 0, None)
    return Xv.sum(1), Xv, float(prob.value)


def solve_ot_dual_cvxpy(A, u, M, z, gamma, alpha, solver: str = "CLARABEL", **solver_opts):
    """(36) by cvxpy, with gamma H(u) restored.  Returns (lambda*, D*)."""
    import cvxpy as cp

    A, u, M, z = check_ot_instance(A, u, M, z, gamma, alpha)
    b = prop1_mean(A, u, M, gamma) + z
    lam = cp.Variable(A.shape[1])
    # shift each column's cost by its minimum (taken out of the log-sum-exp as a constant) so that the
    # exponential cones see O(1) numbers
    cols = [j for j in range(A.shape[0]) if u[j] > 0]
    shift = np.array([M[:, j].min() for j in cols])
    terms = [u[j] * cp.log_sum_exp((A @ lam - (M[:, j] - s)) / gamma) for j, s in zip(cols, shift)]
    const = -gamma * entropy(u) + float(u[cols] @ shift)
    obj = b @ lam - cp.sum_squares(lam) / (2 * alpha) + const - gamma * cp.sum(cp.hstack(terms))
    prob = cp.Problem(cp.Maximize(obj))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver=solver, **solver_opts)
        if prob.status == "optimal_inaccurate" and solver == "CLARABEL" and not solver_opts:
            # CLARABEL stalls on some small-gamma instances; SCS at eps 1e-9 is the fallback
            prob.solve(solver="SCS", eps=1e-9)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy OT dual status {prob.status}")
    return np.asarray(lam.value), float(prob.value)


def prop1_cvxpy(u, M, gamma, solver: str = "CLARABEL"):
    """Prop 1 by cvxpy: argmin_X <M, X> - gamma H(X) s.t. X^T 1 = u; returns X 1 (= u~)."""
    import cvxpy as cp

    M = as_matrix(M, "M")
    X = cp.Variable(M.shape, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(M, X)) - gamma * cp.sum(cp.entr(X))),
                      [cp.sum(X, axis=0) == u])
    prob.solve(solver=solver)
    if prob.status != "optimal":
        raise RuntimeError(f"cvxpy Prop 1 status {prob.status}")
    return np.clip(X.value, 0, None).sum(1)


def exact_ot(p, u, M):
    """Unregularised OT cost min_{X in U(p,u)} <M, X> by linear programming (scipy HiGHS); p and u probability
    vectors, M finite of shape (len(p), len(u)), as for sinkhorn (an unbalanced p came back as 'infeasible')."""
    from scipy.optimize import linprog

    p, u, M = _check_transport(p, u, M)
    N1, N2 = M.shape
    Aeq = np.vstack([np.kron(np.eye(N1), np.ones(N2)), np.kron(np.ones(N1), np.eye(N2))])
    res = linprog(M.ravel(), A_eq=Aeq, b_eq=np.concatenate([p, u]), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog status {res.status}: {res.message}")
    return float(res.fun)
