"""Exact Fenchel-dual attention: a torch attention layer that uses the exact dual solution lambda* of
(7) instead of its approximation alpha z (14).

Forward: lambda* by batched damped Newton (attnlab.numerics.entropic_dual.solve_dual_newton_torch).
Backward: implicit-function theorem on the first-order condition of (7),

    F(lambda, theta) = mu(theta) + z - lambda/alpha - h(lambda, theta) = 0,
    d lambda*/d theta = H^{-1} dF/d theta,   H = -dF/d lambda = I/alpha + Cov_{p(lambda*)}(t),

so the vector-Jacobian product for an incoming gradient v is (dF/d theta)^T H^{-1} v (one linear solve;
no unrolling of the Newton iterations).

Attention reading (Sec 7-8): with templates t_i = scale * k_i (the paper's t_i = x_i/sqrt(d')), evidence
z = q and alpha = 1, the approximation (16) is exactly softmax attention softmax(scale <q, k_i> + log u_i)
v_i.  The exact layer replaces alpha z by lambda*, with a per-query alpha.
"""
from __future__ import annotations

import math
import warnings

import torch
from torch import nn

from attnlab.numerics.entropic_dual import solve_dual_newton_torch


def _foc(lam, T, logu, z, alpha):
    """F(lambda, theta) = mu + z - lambda/alpha - h(lambda)  (gradient of (7))."""
    mu = (torch.softmax(logu, -1).unsqueeze(-2) @ T).squeeze(-2)
    p = torch.softmax(logu + (T @ lam.unsqueeze(-1)).squeeze(-1), -1)
    h = (p.unsqueeze(-2) @ T).squeeze(-2)
    return mu + z - lam / alpha.unsqueeze(-1) - h


class FenchelDual(torch.autograd.Function):
    """lambda* = argmax of (7) as a differentiable function of (T, logu, z, alpha)."""

    @staticmethod
    def forward(ctx, T, logu, z, alpha, tol, max_iter):
        lam = solve_dual_newton_torch(T.detach(), logu.detach(), z.detach(), alpha.detach(),
                                      tol=tol, max_iter=max_iter)
        ctx.save_for_backward(T, logu, z, alpha, lam)
        return lam

    @staticmethod
    def backward(ctx, grad_lam):
        T, logu, z, alpha, lam = ctx.saved_tensors
        with torch.no_grad():
            a = alpha.expand(lam.shape[:-1]).unsqueeze(-1)
            p = torch.softmax(logu + (T @ lam.unsqueeze(-1)).squeeze(-1), -1)
            h = (p.unsqueeze(-2) @ T).squeeze(-2)
            Tc = T - h.unsqueeze(-2)
            eye = torch.eye(lam.shape[-1], dtype=lam.dtype, device=lam.device)
            H = Tc.transpose(-1, -2) @ (p.unsqueeze(-1) * Tc) + eye / a.unsqueeze(-1)
            w = torch.linalg.solve(H, grad_lam.unsqueeze(-1)).squeeze(-1)    # H^{-1} v (H symmetric)
        inputs = [x.detach().requires_grad_(need) for x, need in zip((T, logu, z, alpha), ctx.needs_input_grad[:4])]
        if not any(ctx.needs_input_grad[:4]):
            return None, None, None, None, None, None
        with torch.enable_grad():
            F = _foc(lam.detach(), inputs[0], inputs[1], inputs[2], inputs[3].expand(lam.shape[:-1]))
            wanted = [x for x, need in zip(inputs, ctx.needs_input_grad[:4]) if need]
            grads = torch.autograd.grad(F, wanted, w, allow_unused=True)
        out, k = [], 0
        for x, need in zip(inputs, ctx.needs_input_grad[:4]):
            if need:
                g = grads[k]
                k += 1
                out.append(torch.zeros_like(x) if g is None else g)
            else:
                out.append(None)
        return (*out, None, None)


def fenchel_dual_lambda(T, logu, z, alpha, tol: float | None = None, max_iter: int = 50):
    """Differentiable lambda* of (7) (Newton forward, implicit-function backward); see
    attnlab.numerics.entropic_dual.solve_dual_newton_torch for the shapes."""
    alpha = torch.as_tensor(alpha, dtype=z.dtype, device=z.device)
    return FenchelDual.apply(T, logu, z, alpha, tol, max_iter)


# ---------------------------------------------------------------------------------------------
# Shared-template fast path: every query of a batch sees the same keys, so T lambda, T^T p and the
# Hessian-vector products Cov_p v are batched matrix products of attention size (no d x d Hessian
# per query).  Newton-CG forward, CG for the implicit-function solve backward.
# ---------------------------------------------------------------------------------------------

def _rowdot(x, y):
    """<x, y> over the last dimension, keepdim."""
    return torch.linalg.vecdot(x, y).unsqueeze(-1)


def _inplace(op, x, y):
    """x op= y in place where y does not broadcast x up, else the new tensor x op y (op: 'sub' or 'mul')."""
    if torch.broadcast_shapes(x.shape, y.shape) == x.shape:
        return getattr(x, op + "_")(y)
    return getattr(torch, op)(x, y)


def _hvp(v, p, K, h, inv_a, out=None, vK=None, tmp=None):
    """(H v, v K^T, p * v K^T) with H v = v/alpha + Cov_p(t) v = v/alpha + K^T (p * (K v)) - h (h . v); shapes
    (..., L, E) and (..., L, S).  out, vK, tmp: optional buffers for the three (reused by the CG loop)."""
    vK = torch.matmul(v, K.transpose(-1, -2), out=vK)
    tmp = torch.mul(p, vK, out=tmp)
    Hv = torch.matmul(tmp, K, out=out)
    Hv.addcmul_(v, inv_a)
    return Hv.addcmul_(h, _rowdot(h, v), value=-1), vK, tmp


def _cg(b, x, p, K, h, a, iters: int, tol: float):
    """Batched conjugate gradients for H x = b (H symmetric positive definite, condition number
    1 + alpha lambda_max(Cov)); x is the initial guess (None: 0, which saves the initial H-product; the
    first step is then the best multiple of b).  Rows stop (and stay frozen) once converged or
    when a curvature d^T H d is not positive and finite (possible in float32 at huge scores); a row whose
    iterate is not finite returns its initial guess.  Returns (x, x K^T) where x started at 0 (the
    products d K^T of the iterations, accumulated: no extra product), else (x, None).  The iteration
    works in place on a few buffers (these loops are bound by memory traffic, not by arithmetic)."""
    tiny = torch.finfo(b.dtype).tiny
    inv_a = 1.0 / a
    if x is None:
        x0, x, r, xK = None, torch.zeros_like(b), b.clone(), None
    else:
        x0, xK = x, None
        r = b - _hvp(x, p, K, h, inv_a)[0]
        x = x.clone()
    d = r.clone()
    rr = _rowdot(r, r)
    stop = tol * tol * _rowdot(b, b).clamp_min(tiny)
    active = (rr > stop) & torch.isfinite(rr)
    zero = torch.zeros((), dtype=b.dtype, device=b.device)
    Hd = dK = tmp = None
    for _ in range(iters):
        if not bool(active.any()):
            break
        Hd, dK, tmp = _hvp(d, p, K, h, inv_a, out=Hd, vK=dK, tmp=tmp)
        dHd = _rowdot(d, Hd)
        finite = torch.isfinite(dHd)             # (a finite d^T H d implies finite H d and d K^T)
        ok = active & (dHd > 0) & finite
        if not bool(finite.all()):               # rare: keep non-finite rows out of the updates below
            Hd.masked_fill_(~finite, 0)
            dK.masked_fill_(~finite, 0)
        step = torch.where(ok, rr / dHd, zero)   # 0 for frozen rows: their updates are exact no-ops
        x.addcmul_(step, d)
        if x0 is None:
            xK = step * dK if xK is None else xK.addcmul_(step, dK)
        r.addcmul_(step, Hd, value=-1)
        rr_new = _rowdot(r, r)
        beta = torch.where(ok, rr_new / rr.clamp_min(tiny), zero)
        d.mul_(beta).addcmul_(r, ok.to(d.dtype))  # r + beta d, and 0 on the rows that stop
        rr = torch.where(ok, rr_new, rr)
        active = ok & (rr_new > stop) & torch.isfinite(rr_new)
    if x0 is None and xK is None:
        xK = torch.zeros(b.shape[:-1] + (K.shape[-2],), dtype=b.dtype, device=b.device)
    bad = ~torch.isfinite(x.sum(-1, keepdim=True))    # (cheaper than isfinite(x).all(-1); flags inf, nan)
    if bool(bad.any()):
        x = torch.where(bad, zero if x0 is None else x0, x)
        xK = None if xK is None else torch.where(bad, zero, xK)
    return x, xK


def _shared_parts(lam, K, logw, b, a):
    s = logw + lam @ K.transpose(-1, -2)                             # (..., L, S)
    lse = torch.logsumexp(s, -1, keepdim=True)
    f = (lam * b).sum(-1, keepdim=True) - (lam * lam).sum(-1, keepdim=True) / (2 * a) - lse
    return s, lse, f


def solve_dual_shared(K, logu, Z, alpha, tol: float | None = None, max_iter: int = 30, cg_iters: int = 20,
                      fixed_point_iters: int = 12, return_weights: bool = False):
    """lambda* of (7) for queries Z (..., L, E) that share templates K (..., S, E).  logu broadcastable
    to (..., L, S); alpha broadcastable to (..., L).  Same result as
    solve_dual_newton_torch(K.unsqueeze(-3), logu, Z, alpha).  With return_weights=True returns
    (lambda, p, h): the weights p(lambda) of (9) and their mean h = p K at the returned lambda (no extra
    attention pass: the solver's last pass computed them).

    Phase 1 (cheap, one attention pass per step): the fixed-point iteration lambda <- G(lambda) =
    alpha (b - h(lambda)) of the first-order condition, from lambda = alpha z (14).  Its Jacobian
    -alpha Cov_p(t) is symmetric with eigenvalues in [-rho, 0], rho = alpha ||Cov_p(t)|| (small in the
    regime the paper argues for), so it contracts at the rate rho; each step is accelerated per query by
    Anderson mixing of depth 1 (the secant combination of the last two steps), which removes most of the
    dominant mode.  Phase 1 stops at the first iterate lambda whose step G(lambda) - lambda (the
    gradient-mapped first-order residual alpha F(lambda)) is below tol (1 + |lambda|) for every query,
    and hands over to phase 2 as soon as the largest step fails to shrink by half.
    Phase 2: Newton-CG with a per-query backtracking line search, stopped by the same test (or by a step
    below it).  Queries still above the tolerance after max_iter Newton steps (seen at extreme scores,
    ~1e4 and beyond, where the dual is nearly piecewise linear) raise a RuntimeWarning that says how
    many and their largest residual: their lambda is then not lambda*."""
    with torch.no_grad():
        if tol is None:
            tol = 1e-12 if Z.dtype == torch.float64 else 1e-5
        a = torch.as_tensor(alpha, dtype=Z.dtype, device=Z.device)
        a = a.unsqueeze(-1) if a.dim() else a
        logw = logu - torch.logsumexp(logu, -1, keepdim=True)
        mu = logw.exp() @ K                                          # (..., L or 1, E)
        b = mu + Z
        ab = a * b
        Kt = K.transpose(-1, -2)
        lam = a * Z
        prev_r = prev_g = prev_rr = None
        best, best_lam = None, lam
        # softmax ignores a log u that is constant over the keys (no log_u given): skip adding it
        constant = bool((logw == logw[..., :1]).all())
        logits = torch.broadcast_shapes(Z.shape[:-2], K.shape[:-2]) + (Z.shape[-2], K.shape[-2])
        inplace = torch.broadcast_shapes(logw.shape, logits) == logits
        s = h = None
        for _ in range(fixed_point_iters):
            s = torch.matmul(lam, Kt, out=s)                             # (buffers reused by each pass)
            p = torch.softmax(s if constant else s.add_(logw) if inplace else s + logw, -1)
            h = torch.matmul(p, K, out=h)
            g_lam = torch.addcmul(ab, a, h, value=-1)                    # G(lambda) = alpha (b - h)
            r = g_lam - lam                                              # residual of the fixed point
            rows = torch.maximum(r.amax(-1), r.amin(-1).neg_())          # |r|_inf (amax, amin: no copy)
            if bool((rows <= tol * (1 + torch.maximum(lam.amax(-1), lam.amin(-1).neg_()))).all()):
                return (lam, p, h) if return_weights else lam
            size = rows.max()
            if best is not None and bool(size > 0.5 * best):
                lam = best_lam                                           # not contracting: to Newton
                break
            best, best_lam = size, lam
            rr = _rowdot(r, r)
            if prev_r is None:
                new = g_lam
            else:                                                        # Anderson(1), per query:
                rp = _rowdot(r, prev_r)                                  # theta = <r, dr> / |dr|^2,
                theta = (rr - rp) / (rr - 2 * rp + prev_rr).clamp_min(  # dr = r - r_prev
                    torch.finfo(Z.dtype).tiny)
                new = torch.lerp(g_lam, prev_g, theta)                   # g - theta (g - g_prev)
            prev_r, prev_g, prev_rr = r, g_lam, rr
            lam = new
        eps = torch.finfo(Z.dtype).eps
        ctol = 1e-3 if Z.dtype == torch.float32 else 1e-8
        safe = 1.0 / (1.0 / a + (K * K).sum(-1).amax(-1, keepdim=True).unsqueeze(-1))
        done = torch.zeros(lam.shape[:-1] + (1,), dtype=torch.bool, device=lam.device)
        s, lse, f = _shared_parts(lam, K, logw, b, a)
        for _ in range(max_iter):
            p = torch.exp(s - lse)
            h = p @ K
            g = b - lam / a - h
            # stop on the gradient-mapped step alpha g (the fixed-point step of lambda = alpha (b - h))
            done = done | ((a * g).abs().amax(-1, keepdim=True) <= tol * (1 + lam.abs().amax(-1, keepdim=True)))
            if bool(done.all()):
                break
            step = _cg(g, safe * g, p, K, h, a, cg_iters, ctol)[0]
            # a step that is not finite, or not an ascent direction, becomes the safe gradient step
            # g / (1/alpha + max ||t_i||^2) (the inverse of a bound on the curvature): always finite
            bad = ~torch.isfinite(step).all(-1, keepdim=True) | ((g * step).sum(-1, keepdim=True) < 0)
            step = torch.where(bad, safe * g, step)
            step = torch.where(done, torch.zeros_like(step), step)     # converged rows stay frozen
            slope = (g * step).sum(-1, keepdim=True)
            t = torch.ones_like(slope)
            slack = 16 * eps * (f.abs() + lse.abs() + 1)
            for _ in range(30):
                s_n, lse_n, f_n = _shared_parts(lam + t * step, K, logw, b, a)
                ok = f_n >= f + 1e-4 * t * slope - slack
                if bool(ok.all()):
                    break
                t = torch.where(ok, t, 0.5 * t)
            else:
                s_n, lse_n, f_n = _shared_parts(lam + t * step, K, logw, b, a)
            delta = t * step
            lam = lam + delta
            s, lse, f = s_n, lse_n, f_n                              # the accepted point's logits
            done = done | (delta.abs().amax(-1, keepdim=True) <= tol * (1 + lam.abs().amax(-1, keepdim=True)))
            if bool(done.all()):
                break
        p = torch.softmax(s, -1)                                     # the weights (9) at the returned lambda
        h = p @ K                                                    # (exp(s - lse) need not sum to 1)
        if not bool(done.all()):
            res = (a * (b - lam / a - h)).abs().amax(-1, keepdim=True)
            n_bad = int((~done).sum())
            warnings.warn(f"solve_dual_shared: {n_bad} of {done.numel()} queries did not reach tol = {tol:g} in "
                          f"{max_iter} Newton steps (largest step alpha F(lambda) left: "
                          f"{float(torch.where(done, 0, res).max()):.3g}): not converged to lambda* of (7)",
                          RuntimeWarning, stacklevel=2)
        return (lam, p, h) if return_weights else lam


class _ExactAttention(torch.autograd.Function):
    """(out, p) = (p(lambda*) V, p(lambda*)) with lambda* of (7) for queries sharing their templates, as one
    differentiable function of (K, logu, Z, alpha, V).

    Backward, for incoming gradients G (of out) and G_p (of p): the logits s = logu + lambda* K^T receive
    x = G V^T + G_p through the softmax; lambda* receives v = (p * (x - <p, x>)) K, and the implicit-function
    theorem on F (see the module docstring) turns it into w = H^{-1} v (CG) and w^T dF/dtheta.  Both paths
    reach the logits, so they are merged: ds = p * (y - <p, y>) with y = x - w K^T (w K^T comes from the CG
    iterations), which gives dK = ds^T lambda - p^T w + pi^T w (pi = softmax(logu), the path through
    mu = pi K), dlogu = ds + pi * (w K^T - <pi, w K^T>), dZ = w, dalpha = <lambda, w>/alpha^2.  The weights
    and their mean at lambda* are those of the forward (no recomputation)."""

    @staticmethod
    def forward(ctx, K, logu, Z, alpha, V):
        lam, p, h = solve_dual_shared(K, logu, Z, alpha, return_weights=True)
        ctx.set_materialize_grads(False)
        ctx.z_shape = Z.shape
        ctx.save_for_backward(K, logu, alpha, V, lam, p, h)
        return p @ V, p

    @staticmethod
    def backward(ctx, g_out, g_p):
        K, logu, alpha, V, lam, p, h = ctx.saved_tensors
        need_K, need_lu, need_Z, need_a, need_V = ctx.needs_input_grad
        if g_out is None and g_p is None:
            return None, None, None, None, None
        a = alpha.unsqueeze(-1) if alpha.dim() else alpha
        Kt = K.transpose(-1, -2)
        gV = None
        if g_out is not None:
            x = g_out @ V.transpose(-1, -2)                                # (..., L, S)
            if g_p is not None:
                x = x + g_p
            if need_V:
                gV = _reduce_to(p.transpose(-1, -2) @ g_out, V.shape)
        else:
            x = g_p.clone()
        if not (need_K or need_lu or need_Z or need_a):
            return None, None, None, None, gV
        gs = _inplace("mul", x - _rowdot(p, x), p)                        # d/ds through p = softmax(s)
        tol = 1e-12 if lam.dtype == torch.float64 else 1e-4              # relative residual of the solve
        w, wK = _cg(gs @ K, None, p, K, h, a, 100, tol)                   # w = H^{-1} v, and w K^T
        del gs
        y = _inplace("sub", x, wK)                                        # y = x - w K^T, and
        ds = _inplace("mul", _inplace("sub", y, _rowdot(p, y)), p)        # both paths through the logits
        pi = torch.softmax(logu, -1)
        mu_shape = torch.broadcast_shapes(pi.shape[:-2], K.shape[:-2]) + (pi.shape[-2], K.shape[-1])
        w_mu = _reduce_to(w, mu_shape)                                    # mu may be shared by the queries
        gK = gLu = gZ = gA = None
        if need_K:
            gK = ds.transpose(-1, -2) @ lam
            gK -= p.transpose(-1, -2) @ w
            gK = _reduce_to(gK + pi.transpose(-1, -2) @ w_mu, K.shape)
        if need_lu:
            wmuK = wK if w_mu.shape == w.shape else w_mu @ Kt
            g_pi = pi * (wmuK - (pi * wmuK).sum(-1, keepdim=True))       # through mu = softmax(logu) K
            gLu = _reduce_to(ds, logu.shape) + _reduce_to(g_pi, logu.shape)
        if need_Z:
            gZ = _reduce_to(w, ctx.z_shape)
        if need_a:
            gA = _reduce_to((lam * w).sum(-1) / (a.squeeze(-1) if alpha.dim() else a) ** 2, alpha.shape)
        return gK, gLu, gZ, gA, gV


def _reduce_to(g, shape):
    """Sum a broadcast gradient back to `shape`."""
    shape = torch.Size(shape)
    if g.shape == shape:
        return g
    while g.dim() > len(shape):
        g = g.sum(0)
    dims = [i for i, (gs, s) in enumerate(zip(g.shape, shape)) if s == 1 and gs != 1]
    return g.sum(dims, keepdim=True) if dims else g


def fenchel_attention(query, key, value, alpha=1.0, log_u=None, attn_mask=None, scale=None,
                      exact: bool = True, return_weights: bool = False):
    """Fenchel-dual attention, a drop-in for torch.nn.functional.scaled_dot_product_attention.

    query (..., L, E), key (..., S, E), value (..., S, Ev); alpha > 0, a float or a tensor broadcastable
    to (..., L) (one reliability per query); log_u: optional log preference weights broadcastable to
    (..., L, S) (need not be normalised; -inf excludes a key); attn_mask: optional bool (True = attend) or additive float
    mask broadcastable to (..., L, S), added to log u; scale defaults to 1/sqrt(E).
    Templates t_i = scale * k_i, evidence z = q.  exact=False gives (16), i.e. softmax attention with
    logits alpha * scale <q, k_i> + log u_i (= SDPA for alpha = 1).  Returns the output (..., L, Ev)
    (and the weights p (..., L, S) with return_weights=True).
    """
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key must share the last dimension; got {query.shape[-1]} and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value must have the same length S; got {key.shape[-2]} and {value.shape[-2]}")
    E, S, L = query.shape[-1], key.shape[-2], query.shape[-2]
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    K = scale * key                                                   # templates, (..., S, E)
    lu = torch.zeros(1, S, dtype=query.dtype, device=query.device) if log_u is None else log_u
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                ~attn_mask, float("-inf"))
        lu = lu + attn_mask
    if lu.dim() == 1:
        lu = lu.unsqueeze(0)                                          # (1, S): shared by all queries
    alpha = check_alpha(alpha, query)
    # a query whose keys are all masked attends to nothing: its output (and weights) are 0, as in
    # scaled_dot_product_attention; the solver sees an unmasked row in its place
    empty = torch.isneginf(lu).all(-1, keepdim=True) if lu.dtype.is_floating_point else None
    has_empty = empty is not None and bool(empty.any())
    if has_empty:
        lu = torch.where(empty, torch.zeros_like(lu), lu)
    if exact:
        out, p = _ExactAttention.apply(K, lu, query, alpha, value)
    else:
        lam = alpha.unsqueeze(-1) * query if alpha.dim() else alpha * query
        p = torch.softmax(lu + lam @ K.transpose(-1, -2), -1)        # (16): p(alpha z), (..., L, S)
        out = p @ value
    if has_empty:                                                     # rows with every key masked: 0
        p = torch.where(empty, torch.zeros_like(p), p)
        out = torch.where(empty, torch.zeros_like(out), out)
    return (out, p) if return_weights else out


def check_alpha(alpha, like: torch.Tensor) -> torch.Tensor:
    """alpha as a tensor of like's dtype and device; ValueError naming alpha unless finite and > 0."""
    a = torch.as_tensor(alpha, dtype=like.dtype, device=like.device)
    if not bool(torch.isfinite(a).all()) or bool((a <= 0).any()):
        bad = a[~(torch.isfinite(a) & (a > 0))].flatten()[:3].tolist() if a.dim() else [float(a)]
        raise ValueError(f"alpha must be finite and > 0 (the reliability of the evidence, Eq. (3)); got {bad}")
    return a


def inverse_softplus(x: float) -> float:
    """softplus^{-1}(x) = log(expm1(x)) = x + log(-expm1(-x)) (no overflow for large x)."""
    return x + math.log(-math.expm1(-x))


class FenchelAttention(nn.Module):
    """Multi-head attention whose weights are the exact Fenchel-dual solution p(lambda*) of (3)/(7).

    A drop-in for softmax self-/cross-attention: the same q, k, v, o projections; per head the logits
    are the tilted log preferences log u_i + <t_i, lambda*> with t_i = k_i/sqrt(d_head), z = q and a
    per-query reliability alpha:
      alpha_mode="fixed"      alpha = `alpha` (float) for every query,
      alpha_mode="head"       a learned alpha per head (softplus, initialised at `alpha`),
      alpha_mode="query"      alpha = softplus(w_h . x_q + c_h) per head and query (initialised near `alpha`).
    With exact=False (or alpha -> 0 with z rescaled) it is ordinary scaled dot-product attention.
    forward(x, context=None, log_u=None, attn_mask=None, alpha=None) -> (B, L, embed_dim); an explicit
    `alpha` (broadcastable to (B, heads, L)) overrides the module's.
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, alpha: float = 1.0, alpha_mode: str = "fixed",
                 bias: bool = True, exact: bool = True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads; got {embed_dim} and {num_heads}")
        if alpha_mode not in ("fixed", "head", "query"):
            raise ValueError(f"alpha_mode must be one of fixed, head, query; got {alpha_mode!r}")
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be finite and > 0; got {alpha}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.alpha0, self.alpha_mode, self.exact = float(alpha), alpha_mode, exact
        self.q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.o = nn.Linear(embed_dim, embed_dim, bias=bias)
        inv = inverse_softplus(self.alpha0)
        if alpha_mode == "head":
            self.alpha_raw = nn.Parameter(torch.full((num_heads,), inv))
        elif alpha_mode == "query":
            self.alpha_proj = nn.Linear(embed_dim, num_heads)
            nn.init.zeros_(self.alpha_proj.weight)
            nn.init.constant_(self.alpha_proj.bias, inv)

    def alphas(self, x):
        """Per (batch, head, query) alpha, shape broadcastable to (B, H, L)."""
        if self.alpha_mode == "fixed":
            return torch.tensor(self.alpha0, dtype=x.dtype, device=x.device)
        if self.alpha_mode == "head":
            return nn.functional.softplus(self.alpha_raw).view(1, -1, 1)
        return nn.functional.softplus(self.alpha_proj(x)).transpose(1, 2)   # (B, H, L)

    def forward(self, x, context=None, log_u=None, attn_mask=None, alpha=None, return_weights: bool = False):
        B, L, _ = x.shape
        ctx = x if context is None else context
        S = ctx.shape[1]
        H, Dh = self.num_heads, self.head_dim
        q = self.q(x).view(B, L, H, Dh).transpose(1, 2)
        k = self.k(ctx).view(B, S, H, Dh).transpose(1, 2)
        v = self.v(ctx).view(B, S, H, Dh).transpose(1, 2)
        a = self.alphas(x) if alpha is None else alpha
        out, p = fenchel_attention(q, k, v, alpha=a, log_u=log_u, attn_mask=attn_mask, exact=self.exact,
                                   return_weights=True)
        y = self.o(out.transpose(1, 2).reshape(B, L, self.embed_dim))
        return (y, p) if return_weights else y
