"""The KL-regularized mean-estimation problem and its Fenchel dual (Fenchel-dual attention paper,
Sec 3-6), for a discrete preference distribution u on templates t_1..t_n (rows of T).

Primal (3):  min_{p in simplex}  (alpha/2) ||b - T^T p||^2 + KL(p || u),     b = mu + z
Dual   (7):  max_lambda  <lambda, b> - ||lambda||^2 / (2 alpha) - log M(lambda),
             log M(lambda) = logsumexp_i(log u_i + <t_i, lambda>)                      (8)
Recovery (9): p*(lambda*) = softmax(log u + T lambda*);  h-hat = T^T p*                (10)
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.linalg import lapack
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
    """(3) at a point p of the simplex (0 log 0 = 0; +inf where p puts mass on an atom with u = 0)."""
    b = u @ T + z
    r = b - T.T @ p
    m = p > 0
    if np.any(u[m] <= 0):
        return math.inf
    return float(0.5 * alpha * r @ r + np.sum(p[m] * np.log(p[m] / u[m])))


def dual_objective(lam, T, u, z, alpha) -> float:
    """(7) at lambda."""
    b = u @ T + z
    return float(lam @ b - lam @ lam / (2 * alpha) - log_mgf(lam, T, u))


_EPS = float(np.finfo(float).eps)
_BORDER: dict = {}                     # diag(0, 1, ..., 1) by size, for solve_dual_newton


class NewtonInfo(dict):
    """iterations; grad_norm (||g||_2, g = b - nu - h the gradient of the scaled dual at the answer; it
    bounds ||nu - nu*||); decrement (the Newton decrement sqrt(g^T H^-1 g) at the answer, or its upper
    bound ||g||_2 when the gradient test stopped the iteration); tolerance (the one the decrement was held
    to: tol or the rounding floor); converged."""


def _scale_exponent(T, *vectors) -> int:
    """k with 2^k the power of two nearest max(|T|, |v|) when that lies outside [2^-8, 2^8], else 0: the solvers'
    absolute tolerances (Newton's 1e-12 on the gradient, CLARABEL's) are meant for templates of order 1."""
    m = max([float(np.abs(T).max(initial=0.0))] + [float(np.abs(v).max(initial=0.0)) for v in vectors])
    if not (0.0 < m < math.inf):
        return 0
    k = round(math.log2(m))
    return k if abs(k) > 8 else 0


def solve_dual_newton(T, u, z, alpha, tol: float = 1e-12, max_iter: int = 200, return_info: bool = False):
    """lambda* of the dual (7) by damped Newton in float64, in the scaled variable nu = lambda / alpha.

    Scaled dual:  max_nu  F(nu) = <nu, b> - ||nu||^2 / 2 - (1/alpha) log M(alpha nu)   (= (7) / alpha),
    gradient g = b - nu - h(alpha nu), Hessian -(I + alpha Cov_{p(alpha nu)}(t)).  F is 1-strongly concave
    for every alpha, so the iteration is equally well scaled at alpha = 1e-3 and alpha = 1e12 (in lambda
    the curvature 1/alpha vanishes and the steps and tolerances lose all meaning at large alpha), and
    ||nu - nu*|| <= ||g||: the gradient bounds the error.  Well scaled is not few steps: far from nu* at large
    alpha the line search shortens them (on random n = 5, d = 3 problems the slowest took ~100 steps at
    alpha = 300 and ~160 at 1e3, and some exhaust max_iter at 1e10), which info['converged'] reports.

    Start at nu = 0, where p = u and the Hessian is I + alpha Sigma, so that the first (full) Newton step
    is the refined approximation (13), lambda = alpha (I + alpha Sigma)^{-1} z; Armijo backtracking
    (the full step once the decrement is below 1e-3).  Stop when ||g||_2 <= tol (tested before the
    Hessian is formed, so the last pass costs no solve), or at the rounding floor: the decrement
    sqrt(g^T (-H)^-1 g) <= max(tol, 64 eps sqrt(1 + alpha) |b| |T|) and ||g|| within the rounding of the
    logits (64 eps |s| |T|); there the last Newton step is kept if it does not increase ||g||.  As
    alpha -> infinity, (1/alpha) log M(alpha nu) -> max_i <t_i, nu> and h-hat = b - nu* tends to the
    Euclidean projection of b = mu + z onto conv{t_i}.

    Small problems (n = 10, d = 4: tens of microseconds) cost numpy's per-call overhead, not arithmetic,
    so an iteration is a dozen calls: with a_i = (1, t_i) and the weights e_i = exp(s_i - max s),
    one product e^T [a_i a_i^T] gives S = sum e_i, S h and S E_p[t t^T] at once, and the Newton step
    solves the bordered system [[alpha, alpha h^T], [alpha h, I + alpha E_p[t t^T]]] (x0, x) = (0, g),
    whose Schur complement is I + alpha Cov_p(t) (LAPACK Cholesky, dposv).  That forms Cov_p(t) as
    E[t t^T] - h h^T, which loses ~eps alpha |t|^2 to cancellation; where alpha |T|_F^2 > 1e6 the
    iteration uses the centred Cov_p(t) = sum_i p_i (t_i - h)(t_i - h)^T instead, as it does for d > 16
    (where the n x (d+1)^2 products would cost memory).

    Templates far from unit scale (max |t_ij| outside [2^-8, 2^8]) are solved at unit scale: with s the power
    of two nearest that maximum, (T/s, z/s, alpha s^2) has lambda* s; tol then bounds the gradient in units of
    s (at |T|, |z| ~ 1e-13, tol = 1e-12 held absolutely stopped at lambda = 0).

    Where alpha s^2 underflows (|T| = 1e-200 at alpha = 1: the scaled problem's alpha is 0 in float64), the
    scaled dual is F(nu) = <nu, z/s> - |nu|^2/2 to within alpha s^2 |T/s|^2 |z/s| (below 2^-1058 |z/s|): nu* = z,
    lambda* = alpha z, with the gradient there as computed (0 up to rounding).  (Newton ran unscaled there, its
    absolute tol met at nu = 0: lambda* = 0, h = b, reported converged with error 0.)

    Returns (lambda*, iterations) or, with return_info, (lambda*, NewtonInfo).  Does not raise when the
    tolerance is not met: info['converged'] says so, and callers must report it.
    """
    T, u, z = check_instance(T, u, z, alpha)
    nu, info = _newton_nu(T, u, z, float(alpha), float(tol), max_iter)
    lam = float(alpha) * nu
    return (lam, info) if return_info else (lam, info["iterations"])


def _newton_nu(T, u, z, alpha: float, tol: float, max_iter: int):
    """(nu* = lambda*/alpha, NewtonInfo) of :func:`solve_dual_newton` for a checked instance: nu is what the
    iteration solves for, and h-hat = b - nu (:func:`solve`) takes it without the round trip through lambda
    (lambda = alpha nu underflows where alpha |z| does)."""
    k = _scale_exponent(T)
    if k and math.ldexp(alpha, 2 * k) == 0.0:
        # the scaled problem's alpha underflows: nu* = z to within 2^-1058 |z| (solve_dual_newton)
        Tk, zk = np.ldexp(T, -k), np.ldexp(z, -k)
        gs = (u @ Tk + zk) - zk - u @ Tk                 # its gradient b - nu - h(0) at nu = z, in units of s
        gn = math.ldexp(math.sqrt(float(gs @ gs)), k)
        return z.copy(), NewtonInfo(iterations=0, grad_norm=gn, decrement=gn, tolerance=math.ldexp(tol, k),
                                    converged=True)
    if k and math.ldexp(alpha, 2 * k) < math.inf:
        # templates far from unit scale (|T|, |z| ~ 1e-13), where the absolute tol stopped Newton at its start
        # (||g|| = ||z|| <= 1e-12) and lambda* came back 0: solved at unit scale, (T, z, alpha) -> (T/s, z/s, alpha s^2)
        # with s = 2^k (exact in float64), whose nu is nu*/s; the gradient and the decrement scale back by s
        # (the scale is the templates', in whose units h and the gradient are; evidence far from them, |z| >> |T|,
        # is the scaled dual's own regime)
        nu, info = _newton_nu(np.ldexp(T, -k), u, np.ldexp(z, -k), math.ldexp(alpha, 2 * k), tol, max_iter)
        info = NewtonInfo(iterations=info["iterations"], grad_norm=math.ldexp(info["grad_norm"], k),
                          decrement=math.ldexp(info["decrement"], k), tolerance=math.ldexp(info["tolerance"], k),
                          converged=info["converged"])
        return np.ldexp(nu, k), info
    if min(u.tolist()) > 0:
        Tk, uk = T, u
    else:                              # atoms outside supp(u) never carry mass (9)
        keep = u > 0
        Tk, uk = T[keep], u[keep]
    n, d = Tk.shape
    m = d + 1
    A = np.empty((n, m))               # a_i = (1, t_i)
    A[:, 0] = 1.0
    A[:, 1:] = Tk
    tt = Tk.ravel()
    centred = d > 16 or alpha * float(tt.dot(tt)) > 1e6      # (|T|_F >= max |t_ij|)
    # rows a_i a_i^T (bordered) or a_i (centred): q = e^T P starts with (S, S h) either way
    P = A if centred else (A[:, :, None] * A[:, None, :]).reshape(n, m * m)
    Aa = alpha * A                     # logits s = log u + Aa nu~ with nu~ = (0, nu)
    Aa[:, 0] = 0.0
    lu = np.log(uk)
    tmax = None                        # max(1, max |t_ij|), for the rounding floor
    D = _BORDER.get(m)
    if D is None:
        D = _BORDER.setdefault(m, np.diag(np.r_[0.0, np.ones(d)]))
    tol = float(tol)
    floor = None                       # the decrement's rounding floor, computed when first needed

    def weights(x):
        """At nu~ = x: the shifted logits' exponentials e, q = e^T P (q[0] = S, q[1:m] = S h), the shift c."""
        s = lu + Aa.dot(x)
        c = max(s.tolist())
        e = np.exp(s - c)
        return e, e.dot(P), c

    def objective(x, S, c):            # F at nu~ = x
        v = x[1:]
        a = Aa.dot(x)                  # alpha <t_i, nu>
        if float(np.abs(a).max()) < 0.5:
            # log M = log1p(sum_i u_i expm1(alpha <t_i, nu>)) keeps the O(alpha) terms that c + log S rounds
            # away at small alpha (at alpha = 1e-20, F was flat in float64 and Newton stalled at nu = 0)
            lm = math.log1p(float(uk.dot(np.expm1(a))))
        else:
            lm = c + math.log(S)
        return float(v.dot(bt[1:] - 0.5 * v)) - lm / alpha

    x = np.zeros(m)                    # nu~ = (0, nu): nu = 0, where p = u
    e, q, c = uk, uk.dot(P), 0.0
    bt = q[:m] / q[0]                  # (1, mu) with mu = sum_i u_i t_i
    bt[1:] += z                        # (1, b)
    f = None                           # F at x, computed when a line search needs it
    it, dec, converged = 0, math.inf, False
    for it in range(1, max_iter + 1):
        S = q.item(0)
        g = bt - x - q[:m] / S         # (0, b - nu - h)
        g[0] = 0.0
        gn = math.sqrt(g.dot(g))
        if gn <= tol:
            dec, converged = gn, True  # the decrement is <= ||g||_2
            break
        if centred:
            K = np.zeros((m, m))
            K[0, 0] = 1.0
            C = Tk - q[1:m] / S
            K[1:, 1:] = (C.T * e).dot(C) * (alpha / S)
            K += D
        else:
            K = q.reshape(m, m) * (alpha / S)
            K += D
        step, bad = lapack.dposv(K, g)[1:]
        slope = float(g.dot(step))     # decrement^2 >= 0
        if bad or not 0.0 <= slope < math.inf:
            step, slope = g, gn * gn   # the gradient step (F is 1-strongly concave, -H >= I)
        step[0] = 0.0
        dec = math.sqrt(slope)
        if dec < 1e-3:
            # The decrement cannot go below the rounding of the exponents alpha <t_i, nu> (relative eps):
            # the gradient then carries noise ~ alpha eps |nu| |T|, the decrement ~ sqrt(alpha) of it.  The
            # floor (max-norms) is computed only when dec is below its cheap bound (2-norms).
            if floor is None and dec <= max(tol, 64 * _EPS * math.sqrt((1.0 + alpha) * bt.dot(bt) * (1.0 + tt.dot(tt)))):
                tmax = max(1.0, float(np.abs(Tk).max()))
                floor = max(tol, 64 * _EPS * math.sqrt(1.0 + alpha) * max(1.0, float(np.abs(bt).max())) * tmax)
            # At the rounding floor the step is below resolution and the gradient is noise: the logits s
            # carry an error ~ eps |s|, so h (and g) one ~ eps |s| |T| (a small decrement alone is not
            # enough: far from lambda* at huge alpha, I + alpha Cov makes it small too).  There, keep
            # the last Newton step if it does not increase the gradient (it still helps at huge alpha).
            # (g = b - nu - h is a difference of terms of size |b|: its own rounding, eps |b|, is part of the floor;
            # without it Newton never stopped at |z| = 1e7, alpha = 1e-6, with g at 1e-9 from rounding alone)
            if floor is not None and dec <= floor and gn <= 64 * _EPS * (
                    (1.0 + float(np.abs(lu + Aa.dot(x)).max())) * tmax + float(np.abs(bt).max())):
                converged = True
                new = x + step
                en, qn, cn = weights(new)
                gnew = bt - new - qn[:m] / qn.item(0)
                gnew[0] = 0.0
                if gnew.dot(gnew) <= gn * gn:
                    x, e, q, c, g, gn = new, en, qn, cn, gnew, math.sqrt(gnew.dot(gnew))
                break
            x = x + step               # quadratic-convergence region: the full step (F's rounding,
            e, q, c = weights(x)       # ~eps/alpha, would blur an Armijo test here)
            f = None
            continue
        if f is None:
            f = objective(x, S, c)
        t = 1.0
        slack = 4e-16 * max(1.0, abs(f))
        while True:
            new = x + t * step
            en, qn, cn = weights(new)
            fn = objective(new, qn.item(0), cn)
            if fn >= f + 1e-4 * t * slope - slack or t < 1e-12:
                break
            t *= 0.5
        if fn < f - slack:             # no ascent even at the smallest step: rounding floor
            break
        x, e, q, c, f = new, en, qn, cn, fn
    else:                              # max_iter exhausted: the gradient at the returned point
        g = bt - x - q[:m] / q.item(0)
        g[0] = 0.0
        gn = math.sqrt(g.dot(g))
    if floor is None:
        floor = max(tol, 64 * _EPS * math.sqrt(1.0 + alpha) * max(1.0, float(np.abs(bt).max()))
                    * max(1.0, float(np.abs(Tk).max())))
    return x[1:], NewtonInfo(iterations=it, grad_norm=gn, decrement=dec, tolerance=floor, converged=bool(converged))


# CLARABEL options that give the primal p* to ~1e-8 (the defaults give ~1e-5); the exponential-cone
# dual is less accurate (lambda to ~1e-6).  Whether CLARABEL reports `optimal` or `optimal_inaccurate`
# at these settings depends on the BLAS kernel, so a status string never decides: the answer is judged
# by its own KKT residual (below).
TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
ACCEPT = ("optimal", "optimal_inaccurate")


class SolverError(RuntimeError):
    """A solver gave no answer that meets its tolerance (cvxpy's KKT residual, the entropic OT iterations'
    marginals); the message says why."""


def primal_kkt_residual(p, T, u, z, alpha) -> float:
    """max_i |p_i - p_i(lambda(p))|: (9) at the multiplier lambda(p) = alpha (b - T^T p) of the primal
    constraint (the first-order condition of (3)); 0 exactly at p*."""
    p = np.asarray(p, float)
    b = u @ T + z
    return float(np.abs(p - tilted(alpha * (b - T.T @ p), T, u)).max())


def dual_kkt_residual(lam, T, u, z, alpha) -> float:
    """||b - lambda/alpha - h(lambda)||_inf, the gradient of (7); 0 exactly at lambda*."""
    b = u @ T + z
    return float(np.abs(b - np.asarray(lam, float) / alpha - tilted(lam, T, u) @ T).max())


def _solve_judged(build, residual, what: str, solver: str, solver_opts: dict, kkt_tol: float):
    """Solve with the given options, then (unless that answer is `optimal` with a KKT residual <= kkt_tol)
    once more at the solver's default tolerances; return the answer of smallest KKT residual, if it is
    <= kkt_tol (an `optimal_inaccurate` answer counts when its residual meets the bound), else raise
    SolverError.  Returns (value, objective, info) with info = {status, kkt_residual, attempts}."""
    import cvxpy as cp

    attempts, best = [], None
    first = solver_opts or (TIGHT if solver == "CLARABEL" else {})
    for opts in ([first, {}] if first else [{}]):
        prob, var = build()
        try:
            with warnings.catch_warnings():      # "Solution may be inaccurate": judged below instead
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=solver, **opts)
        except cp.error.SolverError as exc:
            attempts.append(f"{solver}{' tight' if opts else ''}: {exc}".splitlines()[0])
            continue
        status = prob.status
        if status not in ACCEPT or var.value is None:
            attempts.append(f"{solver}{' tight' if opts else ''}: {status}")
            continue
        res = residual(var.value)
        attempts.append(f"{solver}{' tight' if opts else ''}: {status}, KKT residual {res:.2e}")
        if best is None or res < best[2]["kkt_residual"]:
            best = (var.value, float(prob.value), {"status": status, "kkt_residual": res})
        if status == "optimal" and res <= kkt_tol:
            break
    if best is None or best[2]["kkt_residual"] > kkt_tol:
        raise SolverError(f"cvxpy {what}: no answer with KKT residual <= {kkt_tol:g} ({'; '.join(attempts)})")
    best[2]["attempts"] = attempts
    return best


def solve_primal_cvxpy(T, u, z, alpha, solver: str = "CLARABEL", kkt_tol: float = 1e-6,
                       return_info: bool = False, **solver_opts):
    """Primal (3) on the simplex by cvxpy. Returns (p*, P*) [, info].  solver_opts go to prob.solve
    (e.g. CLARABEL's tol_gap_abs / tol_gap_rel / tol_feas; default TIGHT for CLARABEL).  The answer is accepted when its
    KKT residual (:func:`primal_kkt_residual`) is <= kkt_tol, whatever the status string; otherwise
    the solve is retried at the solver's defaults, and SolverError is raised if neither meets it."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z

    def build():
        p = cp.Variable(T.shape[0], nonneg=True)
        obj = alpha / 2 * cp.sum_squares(b - T.T @ p) + cp.sum(cp.rel_entr(p, u))
        return cp.Problem(cp.Minimize(obj), [cp.sum(p) == 1]), p

    def residual(v):
        return primal_kkt_residual(np.clip(v, 0, None) / np.clip(v, 0, None).sum(), T, u, z, alpha)

    p, val, info = _solve_judged(build, residual, "primal (3)", solver, solver_opts, kkt_tol)
    p = np.clip(p, 0, None)
    out = (p, val, info) if return_info else (p, val)
    return out


def solve_dual_cvxpy(T, u, z, alpha, solver: str = "CLARABEL", kkt_tol: float = 1e-4,
                     return_info: bool = False, **solver_opts):
    """Dual (7) by cvxpy. Returns (lambda*, D*) [, info].  Judged like :func:`solve_primal_cvxpy`, by
    the gradient of (7) (:func:`dual_kkt_residual`)."""
    import cvxpy as cp

    T, u, z = check_instance(T, u, z, alpha)
    b = u @ T + z
    keep = u > 0

    def build():
        lam = cp.Variable(T.shape[1])
        obj = b @ lam - cp.sum_squares(lam) / (2 * alpha) - cp.log_sum_exp(T[keep] @ lam + np.log(u[keep]))
        return cp.Problem(cp.Maximize(obj)), lam

    lam, val, info = _solve_judged(build, lambda v: dual_kkt_residual(v, T, u, z, alpha), "dual (7)",
                                   solver, solver_opts, kkt_tol)
    return (np.asarray(lam), val, info) if return_info else (np.asarray(lam), val)


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


def solve(T, u, z, alpha, tol: float = 1e-12):
    """Exact solution by float64 Newton: dict(lam, p, h, info) (Eqs. (7), (9), (10)).

    h is taken from the first-order condition of (7), h-hat = b - nu* (nu* = lambda*/alpha), which equals the
    recovery (10) T^T p(lambda*) at the optimum: it carries the accuracy of nu = lambda/alpha, while the
    weights p(lambda*) at large alpha are sensitive to the rounding of alpha <t_i, nu> (at alpha = 1e12
    T^T p is off by up to 1e-1 where b - nu is right to 1e-12).  info (NewtonInfo) holds the
    iterations, the final gradient norm and the Newton decrement; info['converged'] is False when the
    tolerance was not met."""
    T, u, z = check_instance(T, u, z, alpha)
    nu, info = _newton_nu(T, u, z, float(alpha), float(tol), 200)
    lam = float(alpha) * nu
    p = tilted(lam, T, u)
    return dict(lam=lam, p=p, h=u @ T + z - nu, info=info)


def project_onto_hull(T, y, u=None) -> np.ndarray:
    """The Euclidean projection of y onto conv{t_i} (rows of T): the alpha -> infinity limit of h-hat.
    With `u` (the base weights of (3)), onto the hull of the templates u gives weight to, conv{t_i : u_i > 0}:
    p in (3) cannot put mass where u_i = 0 (K(p, u) = +inf), so that hull is where h-hat goes as alpha grows.
    Solved as a small QP over the simplex by cvxpy, for checks, not for speed: in coordinates centred at the
    templates' mean c and at their own scale (a power of two), as min_w |T_c^T w|^2 - 2 <T_c (y - c), w>
    divided by the size of its linear term, so that |y - c|^2 is never formed (at |y| = 1e12 the solver's
    absolute tolerances met an objective of 1e24 and gave a point 0.74 from the projection).  The QP's answer is
    then polished: the projection onto the affine hull of the templates it weighs (w_i > 1e-6 max w), kept where
    its weights are >= 0 and its error bound (below) no larger: that is the projection itself to rounding where the
    QP found the right face (the QP alone was 3e-7 off on the hull's boundary, y = (0.8, 0.2) in the unit
    triangle, and passed the optimality test then used, which is second order in the error).  Certified: with F
    the face spanned by the weighed templates, r = y - p split into r_F along F and r_N across it, p is the
    projection of y - r_F onto the hull to within sqrt(2 G), G = max(0, max_i <r_N, t_i - p>) over the other
    templates (the Frank-Wolfe gap: f = |y' - q|^2 / 2 is 1-strongly convex and f(p) - f(p*) <= G), so
    |p - p*| <= |r_F| + sqrt(2 G) (a projection moves no more than its point); refused with a SolverError where
    that bound exceeds 1e-6 diam (diam the largest |t_i - p|) or, for y so far that its own rounding moves the
    projection more, 1e3 eps |y - c|."""
    import cvxpy as cp

    T = as_matrix(T, "T")
    y = as_vector(y, "y", T.shape[1])
    if u is not None:
        T = T[probability_vector(u, "u", T.shape[0]) > 0]
    c = T.mean(0)
    Tc, d = T - c, y - c
    k = _scale_exponent(Tc)
    Tc, d = np.ldexp(Tc, -k), np.ldexp(d, -k)     # exact (powers of two): the hull at unit size
    if not np.any(Tc):                             # one point (or all alike): the hull is that point
        return T[0].copy()
    g = Tc @ d
    s = max(1.0, float(np.abs(g).max()))
    w = cp.Variable(T.shape[0], nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Tc.T @ w) / s - 2 * (g / s) @ w), [cp.sum(w) == 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver="CLARABEL", **TIGHT)
    if prob.status not in ACCEPT or w.value is None:
        raise SolverError(f"projection onto the convex hull: cvxpy status {prob.status}")
    wv = np.clip(w.value, 0, None)
    x = Tc.T @ (wv / wv.sum())                    # p - c, at unit size
    bound = _projection_error_bound(Tc, d, x, wv > 0)
    support = wv > 1e-6 * wv.max()
    polished = _affine_projection(Tc, d, support)
    if polished is not None:
        bound_p = _projection_error_bound(Tc, d, polished, support)
        if bound_p <= bound:
            x, bound = polished, bound_p
    diam = float(np.linalg.norm(Tc - x, axis=1).max())
    if not bound <= max(1e-6 * diam, 1e3 * np.finfo(float).eps * float(np.linalg.norm(d))):
        raise SolverError(f"projection onto the convex hull: the answer is not certified (its error bound "
                          f"{bound:.3g} at unit size is above 1e-6 of the hull's size {diam:.3g})")
    return c + np.ldexp(x, k)


def _projection_error_bound(Tc, d, x, face) -> float:
    """|x - proj(d)| <= |r_F| + sqrt(2 G) for x in the hull of the rows Tc (project_onto_hull): r = d - x split
    along the span F of the rows Tc[face] - x and across it (r_N), G = max(0, max <r_N, t_i - x>) over the rows
    outside the face (on it <r_N, t_i - x> is 0 by construction, its computed value rounding noise)."""
    r = d - x
    D = Tc[face] - x
    r_f = np.zeros_like(r)
    if D.size:
        _, sv, Vt = np.linalg.svd(D, full_matrices=False)
        if sv.size and sv[0] > 0:
            Q = Vt[sv > 1e-12 * sv[0]]
            r_f = Q.T @ (Q @ r)
    out = ~face
    G = max(0.0, float(((Tc[out] - x) @ (r - r_f)).max())) if out.any() else 0.0
    return float(np.linalg.norm(r_f)) + math.sqrt(2 * G)


def _affine_projection(Tc, d, support):
    """The projection of d onto the affine hull of the rows Tc[support], a0 + Q Q^T (d - a0) with Q an orthonormal
    basis of their differences from a0 (by SVD: the normal equations square the condition, and an edge 0.003 long
    came back 3e-13 off), or None where it is not a convex combination of them (to 1e-12: the QP's support was not
    the projection's face)."""
    A = Tc[support]
    a0, D = A[0], A[1:] - A[0]
    if not D.size:
        return a0.copy()
    _, sv, Vt = np.linalg.svd(D, full_matrices=False)
    if not sv[0] > 0:
        return a0.copy()
    Q = Vt[sv > 1e-12 * sv[0]]
    x = a0 + Q.T @ (Q @ (d - a0))
    if not np.all(np.isfinite(x)):
        return None
    # x in conv(A): weights w >= 0 with A^T w = x, sum w = 1 (non-negative least squares: rows affinely dependent,
    # 5 templates in the plane, have least-squares weights of mixed sign for a point inside their hull)
    from scipy.optimize import nnls

    _, res = nnls(np.vstack([A.T, np.ones(A.shape[0])]), np.r_[x, 1.0])
    return x if res <= 1e-12 * max(1.0, float(np.abs(A).max())) else None


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


#: solve_dual_newton_torch's second stopping rule: this many full Newton steps in a row whose predicted gain
#: (the squared decrement) is below the rounding of the dual's value (16 eps (|f| + |log M| + 1), the line
#: search's slack).  Where the step rule's tol lies below what the instance's conditioning resolves (float32 at
#: alpha |t|^2 ~ 2.5e5), the iterates only wander there; a well-resolved problem meets the step rule within one
#: or two steps of reaching the floor, so where the step rule stops, it still stops at the same iterate.
FLOOR_RUN = 3


def _centred(T, logu):
    """The templates centred at mu = sum_i u_i t_i (u the normalised exp(logu)), without a gradient: lambda* of
    (7) is the same for T and T - mu (b and h(lambda) move alike)."""
    import torch

    with torch.no_grad():
        return T - torch.softmax(logu, -1).unsqueeze(-2) @ T


def solve_dual_newton_torch(T, logu, z, alpha, *, tol: float | None = None, max_iter: int = 200,
                            return_info: bool = False, space: str = "auto"):
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
    (float32), on the step relative to 1 + |lambda|; a problem also stops at its rounding floor, after
    FLOOR_RUN (3) full steps in a row whose predicted gain is below the rounding of the dual's value (there
    a step below tol cannot be resolved).  The templates are centred first, at mu: lambda* is
    invariant under a translation of the templates (b and h(lambda) move alike), and the logits
    <t_i - mu, lambda> keep the digits that |mu| would take (templates ~1e3 from the origin: lambda lost two to three
    digits and, where the step stays at the rounding of such logits, never met the step rule).  No gradient is
    tracked (see attnlab.numerics.fenchel_attention for the implicit-function derivative).

    ``space`` picks the coordinates of the Newton iteration: ``"lambda"`` (d unknowns, the (d, d)
    Hessian above) or ``"atoms"`` (n unknowns, see :func:`_newton_atoms`); both produce the same
    iterates in exact arithmetic.  ``"auto"`` (default) takes ``"atoms"`` when n < d, which is the case
    of an attention head (n keys, d = model width).

    Conditioning: the dual is only (1/alpha)-strongly concave, so at large alpha Newton needs more
    iterations (where p(lambda) is nearly one-hot the Hessian is nearly I/alpha and the line search
    shortens the steps: on 3,000 random problems n = 5, d = 3 in float64 the slowest took 13 iterations at
    alpha = 10, 38 at 100, 103 at 1e3, and more than 2,000 for some at 1e4) and h(lambda) becomes sensitive
    to lambda; there, use float64, raise max_iter, and check ``grad_norm`` (float32 at alpha = 1e4 stalls
    near 1e-3).  Problems left unconverged after ``max_iter`` iterations are counted in a RuntimeWarning
    (without ``return_info``; with it, ``converged`` says which and the caller reports them).
    """
    import torch

    alpha = _torch_check(T, logu, z, alpha)
    if not (T.dtype == logu.dtype == z.dtype):
        raise ValueError(f"T, logu, z must share one dtype; got {T.dtype}, {logu.dtype}, {z.dtype}")
    if space not in ("auto", "lambda", "atoms"):
        raise ValueError(f"space must be 'auto', 'lambda' or 'atoms'; got {space!r}")
    if tol is None:
        tol = 1e-12 if z.dtype == torch.float64 else 1e-5
    T = _centred(T, logu)
    if space == "atoms" or (space == "auto" and T.shape[-2] < T.shape[-1]):
        return _newton_atoms(T, logu, z, alpha, tol, max_iter, return_info)
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
        floor_run = torch.zeros(lead, dtype=torch.long, device=z.device)   # full steps in a row at the floor
        it = 0
        for it in range(1, max_iter + 1):
            s, lse, f = parts(lam)
            p = torch.softmax(s, -1)
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
            small = step.abs().amax(-1) <= tol * (1 + lam.abs().amax(-1))
            floor_run = torch.where((slope <= slack) & (t == 1), floor_run + 1, 0)
            converged = converged | small | (floor_run >= FLOOR_RUN)
            if bool(converged.all()):
                break
        if not return_info:
            _warn_unconverged(converged, max_iter)
            return lam
        s, lse, _ = parts(lam)
        h = (torch.softmax(s, -1).unsqueeze(-2) @ T).squeeze(-2)
        gn = (b - lam / a - h).norm(dim=-1)
        return lam, dict(iterations=it, grad_norm=float(gn.max()) if gn.numel() else 0.0,
                         converged=converged)


def _warn_unconverged(converged, max_iter: int, stacklevel: int = 3) -> None:
    """A RuntimeWarning counting the problems whose Newton iteration did not settle in max_iter steps (their
    lambda was returned as if solved: at alpha = 300, 2 of 3,000 random problems 10x off after 50 steps)."""
    n_bad = int((~converged).sum())
    if n_bad:
        import warnings

        warnings.warn(f"solve_dual_newton_torch: {n_bad} of {converged.numel()} problems did not converge in "
                      f"max_iter = {max_iter} Newton iterations; their lambda is not lambda* (raise max_iter, or "
                      "use return_info=True to see which)", RuntimeWarning, stacklevel=stacklevel)


def _newton_atoms(T, logu, z, alpha, tol, max_iter, return_info):
    """Newton on (7) in atom coordinates: lambda = alpha z + T^T c, c in R^n.

    At the maximiser lambda* = alpha (b - h(lambda*)) = alpha z + alpha T^T (w - p*) (w the normalised u),
    so lambda* lies on the affine set alpha z + range(T^T); from the start (14) c = 0 every Newton
    step of the lambda-space iteration stays on it (the gradient T^T(w - p) - (lambda - alpha z)/alpha
    and the Hessian I/alpha + T^T Sigma T both keep range(T^T)).  With the Gram matrix G = T T^T the
    objective becomes, up to a constant,
        f(c) = c^T G w - c^T G c / (2 alpha) - logsumexp(log w + alpha T z + G c),
    with gradient G r, r = w - c/alpha - p, and negative Hessian G/alpha + G Sigma G (Sigma = diag p - p p^T).
    The Newton step solves (I/alpha + Sigma G) delta = r, an (n, n) system whose eigenvalues are
    >= 1/alpha (Sigma G is similar to the PSD Sigma^(1/2) G Sigma^(1/2)), so it is nonsingular even
    when G is; it is solved in the symmetric positive definite form of :func:`_atoms_step`.  The line search, the stopping rule (on the lambda-space step T^T delta) and the
    reported grad_norm (evaluated in lambda space) are those of the lambda-space iteration.
    """
    import torch

    with torch.no_grad():
        lead = torch.broadcast_shapes(T.shape[:-2], logu.shape[:-1], z.shape[:-1], alpha.shape)
        n = T.shape[-2]
        logw = logu - torch.logsumexp(logu, -1, keepdim=True)
        w = logw.exp()
        a = alpha.expand(lead).unsqueeze(-1)                      # (..., 1)
        G = T @ T.transpose(-1, -2)                               # (..., n, n)
        s0 = (logw + a * (T @ z.unsqueeze(-1)).squeeze(-1)).expand(*lead, n)
        eps = torch.finfo(z.dtype).eps

        def parts(c):
            Gc = (G @ c.unsqueeze(-1)).squeeze(-1)
            s = s0 + Gc
            lse = torch.logsumexp(s, -1)
            f = (Gc * w).sum(-1) - (c * Gc).sum(-1) / (2 * a.squeeze(-1)) - lse
            return s, lse, f

        def lam_of(c):
            return a * z + (c.unsqueeze(-2) @ T).squeeze(-2)

        c = torch.zeros(*lead, n, dtype=z.dtype, device=z.device)
        converged = torch.zeros(lead, dtype=torch.bool, device=z.device)
        floor_run = torch.zeros(lead, dtype=torch.long, device=z.device)   # full steps in a row at the floor
        it = 0
        for it in range(1, max_iter + 1):
            s, lse, f = parts(c)
            p = torch.softmax(s, -1)
            r = w - c / a - p
            Gr = (G @ r.unsqueeze(-1)).squeeze(-1)                # the gradient in c
            step = _atoms_step(p, G, r, Gr, a)
            slope = (Gr * step).sum(-1)                           # g_c . step >= 0
            t = torch.ones(lead, dtype=z.dtype, device=z.device)
            slack = 16 * eps * (f.abs() + lse.abs() + 1)
            for _ in range(40):
                fn = parts(c + t.unsqueeze(-1) * step)[2]
                ok = fn >= f + 1e-4 * t * slope - slack
                if bool(ok.all()):
                    break
                t = torch.where(ok, t, 0.5 * t)
            delta = t.unsqueeze(-1) * step
            c = c + delta
            dlam = (step.unsqueeze(-2) @ T).squeeze(-2)
            small = dlam.abs().amax(-1) <= tol * (1 + lam_of(c).abs().amax(-1))
            floor_run = torch.where((slope <= slack) & (t == 1), floor_run + 1, 0)
            converged = converged | small | (floor_run >= FLOOR_RUN)
            if bool(converged.all()):
                break
        lam = lam_of(c)
        if not return_info:
            _warn_unconverged(converged, max_iter, stacklevel=4)       # (the caller of solve_dual_newton_torch)
            return lam
        mu = (w.unsqueeze(-2) @ T).squeeze(-2)
        h = (torch.softmax(logw + (T @ lam.unsqueeze(-1)).squeeze(-1), -1).unsqueeze(-2) @ T).squeeze(-2)
        gn = (mu + z - lam / a - h).norm(dim=-1)
        return lam, dict(iterations=it, grad_norm=float(gn.max()) if gn.numel() else 0.0,
                         converged=converged)


def _atoms_step(p, G, r, Gr, a):
    """The atom-space Newton step delta = (I/alpha + Sigma G)^-1 r (Sigma = diag p - p p^T), in a symmetric
    positive definite form.  Sigma = R^T R with R = diag(sqrt p)(I - 1 p^T), and by Woodbury
        delta = alpha r - alpha^2 R^T (I + alpha R G R^T)^-1 R G r,
    where I + alpha R G R^T is symmetric with eigenvalues >= 1 (Cholesky); T^T delta is the lambda-space Newton
    step H^-1 T^T r, H = I/alpha + T^T Sigma T.  (A general LU solve of the nonsymmetric I/alpha + Sigma G, p
    nearly one-hot, lost the step in float32 at large alpha |t|^2 on templates not centred: it came back a
    descent direction, the line search shrank it to nothing, and the step rule read that as convergence, lambda
    off by 100 % and more.  On centred templates the two solves agree in outcome.)
    A failed factorisation falls back to the scaled gradient step alpha r, which the line search safeguards."""
    import torch

    sp = p.sqrt()
    RG = sp.unsqueeze(-1) * (G - p.unsqueeze(-2) @ G)                      # R G
    RGRt = (RG - RG @ p.unsqueeze(-1)) * sp.unsqueeze(-2)                   # R G R^T
    S = a.unsqueeze(-1) * (RGRt + RGRt.transpose(-1, -2)) / 2
    S.diagonal(dim1=-2, dim2=-1).add_(1.0)
    L, info = torch.linalg.cholesky_ex(S)
    RGr = sp * (Gr - (p * Gr).sum(-1, keepdim=True))
    x = torch.cholesky_solve(RGr.unsqueeze(-1), L).squeeze(-1)
    Rtx = sp * x - p * (sp * x).sum(-1, keepdim=True)
    return torch.where((info == 0).unsqueeze(-1), a * r - a * a * Rtx, a * r)


def h_of_lambda_torch(lam, T, logu):
    """h(lambda) = T^T softmax(log u + T lambda) (Eq. 10), batched in torch."""
    import torch

    s = logu + (T @ lam.unsqueeze(-1)).squeeze(-1)
    return (torch.softmax(s, -1).unsqueeze(-2) @ T).squeeze(-2)
