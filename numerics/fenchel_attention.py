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

def _hvp(v, p, K, h, a):
    """H v = v/alpha + Cov_p(t) v with Cov_p v = K^T (p * (K v)) - h (h . v); shapes (..., L, E)."""
    Kv = v @ K.transpose(-1, -2)                                     # (..., L, S)
    return v / a + (p * Kv) @ K - h * (h * v).sum(-1, keepdim=True)


def _cg(b, x, p, K, h, a, iters: int, tol: float):
    """Batched conjugate gradients for H x = b (H symmetric positive definite, condition number
    1 + alpha lambda_max(Cov)); x is the initial guess (None: 0, which saves the initial H-product; the
    first step is then the best multiple of b).  Rows stop (and stay frozen) once converged or
    when a curvature d^T H d is not positive and finite (possible in float32 at huge scores); a row whose
    iterate is not finite returns its initial guess."""
    tiny = torch.finfo(b.dtype).tiny
    if x is None:
        x = torch.zeros_like(b)
        r = b
    else:
        r = b - _hvp(x, p, K, h, a)
    x0 = x
    d = r.clone()
    rr = (r * r).sum(-1, keepdim=True)
    stop = tol * tol * (b * b).sum(-1, keepdim=True).clamp_min(tiny)
    active = (rr > stop) & torch.isfinite(rr)
    for _ in range(iters):
        if not bool(active.any()):
            break
        Hd = _hvp(d, p, K, h, a)
        dHd = (d * Hd).sum(-1, keepdim=True)
        ok = active & (dHd > 0) & torch.isfinite(dHd)
        step = torch.where(ok, rr / torch.where(ok, dHd, torch.ones_like(dHd)), torch.zeros_like(dHd))
        x = x + step * d
        r = r - step * torch.where(ok, Hd, torch.zeros_like(Hd))
        rr_new = (r * r).sum(-1, keepdim=True)
        beta = torch.where(ok, rr_new / rr.clamp_min(tiny), torch.zeros_like(rr))
        d = torch.where(ok, r + beta * d, torch.zeros_like(d))
        rr = torch.where(ok, rr_new, rr)
        active = ok & (rr_new > stop) & torch.isfinite(rr_new)
    bad = ~torch.isfinite(x).all(-1, keepdim=True)
    return torch.where(bad, x0, x)


def _shared_parts(lam, K, logw, b, a):
    s = logw + lam @ K.transpose(-1, -2)                             # (..., L, S)
    lse = torch.logsumexp(s, -1, keepdim=True)
    f = (lam * b).sum(-1, keepdim=True) - (lam * lam).sum(-1, keepdim=True) / (2 * a) - lse
    return s, lse, f


def solve_dual_shared(K, logu, Z, alpha, tol: float | None = None, max_iter: int = 30, cg_iters: int = 20,
                      fixed_point_iters: int = 12):
    """lambda* of (7) for queries Z (..., L, E) that share templates K (..., S, E).  logu broadcastable
    to (..., L, S); alpha broadcastable to (..., L).  Same result as
    solve_dual_newton_torch(K.unsqueeze(-3), logu, Z, alpha).

    Phase 1 (cheap, one attention pass per step): the fixed-point iteration lambda <- G(lambda) =
    alpha (b - h(lambda)) of the first-order condition, from lambda = alpha z (14).  Its Jacobian
    -alpha Cov_p(t) is symmetric with eigenvalues in [-rho, 0], rho = alpha ||Cov_p(t)|| (small in the
    regime the paper argues for), so it contracts at the rate rho; each step is accelerated per query by
    Anderson mixing of depth 1 (the secant combination of the last two steps), which removes most of the
    dominant mode.  Phase 1 stops when every query's step is below tol (1 + |lambda|), and hands over to
    phase 2 as soon as the largest step fails to shrink by half.
    Phase 2 (always converges): Newton-CG with a per-query backtracking line search."""
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
        prev_r = prev_g = None
        best, best_lam = None, lam
        for _ in range(fixed_point_iters):
            g_lam = ab - a * (torch.softmax(logw + lam @ Kt, -1) @ K)    # G(lambda)
            r = g_lam - lam                                              # residual of the fixed point
            rows = r.abs().amax(-1)
            if bool((rows <= tol * (1 + g_lam.abs().amax(-1))).all()):
                return g_lam
            size = rows.max()
            if best is not None and bool(size > 0.5 * best):
                lam = best_lam                                           # not contracting: to Newton
                break
            best, best_lam = size, lam
            if prev_r is None:
                new = g_lam
            else:                                                        # Anderson(1), per query
                dr = r - prev_r
                theta = (r * dr).sum(-1, keepdim=True) / (dr * dr).sum(-1, keepdim=True).clamp_min(
                    torch.finfo(Z.dtype).tiny)
                new = g_lam - theta * (g_lam - prev_g)
            prev_r, prev_g = r, g_lam
            lam = new
        eps = torch.finfo(Z.dtype).eps
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
            step = _cg(g, safe * g, p, K, h, a, cg_iters, 1e-3 if Z.dtype == torch.float32 else 1e-8)
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
        return lam


class FenchelDualShared(torch.autograd.Function):
    """lambda* for queries sharing their templates; implicit-function backward with CG."""

    @staticmethod
    def forward(ctx, K, logu, Z, alpha, tol):
        lam = solve_dual_shared(K.detach(), logu.detach(), Z.detach(), alpha.detach(), tol=tol)
        ctx.save_for_backward(K, logu, Z, alpha, lam)
        return lam

    @staticmethod
    def backward(ctx, grad_lam):
        K, logu, Z, alpha, lam = ctx.saved_tensors
        if not any(ctx.needs_input_grad[:4]):
            return None, None, None, None, None
        with torch.no_grad():
            a = alpha.unsqueeze(-1) if alpha.dim() else alpha
            p = torch.softmax(logu + lam @ K.transpose(-1, -2), -1)
            h = p @ K
            tol = 1e-12 if lam.dtype == torch.float64 else 1e-4      # relative residual of the solve
            w = _cg(grad_lam, None, p, K, h, a, 100, tol)               # H^{-1} v
            # w^T dF/dtheta in closed form, F = mu + z - lambda/alpha - h, h = p K, p = softmax(logu + lambda K^T),
            # mu = softmax(logu) K  (softmax VJP: p * (x - <p, x>))
            wK = w @ K.transpose(-1, -2)                                 # (..., L, S)
            g_s = -p * (wK - (p * wK).sum(-1, keepdim=True))             # d(w.F)/ds through -h
            pi = torch.softmax(logu, -1)
            mu_shape = torch.broadcast_shapes(pi.shape[:-2], K.shape[:-2]) + (pi.shape[-2], K.shape[-1])
            w_mu = _reduce_to(w, mu_shape)                               # mu may be shared by the queries
            wmuK = w_mu @ K.transpose(-1, -2)
            g_pi = pi * (wmuK - (pi * wmuK).sum(-1, keepdim=True))      # d(w.F)/dlogu through mu
            gK = -p.transpose(-1, -2) @ w + g_s.transpose(-1, -2) @ lam + pi.transpose(-1, -2) @ w_mu
            out = [_reduce_to(gK, K.shape) if ctx.needs_input_grad[0] else None,
                   _reduce_to(g_s, logu.shape) + _reduce_to(g_pi, logu.shape) if ctx.needs_input_grad[1] else None,
                   _reduce_to(w, Z.shape) if ctx.needs_input_grad[2] else None,
                   _reduce_to((lam * w).sum(-1) / (a.squeeze(-1) if alpha.dim() else a) ** 2, alpha.shape)
                   if ctx.needs_input_grad[3] else None]
        return (*out, None)


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
    if empty is not None and bool(empty.any()):
        lu = torch.where(empty, torch.zeros_like(lu), lu)
    if exact:
        lam = FenchelDualShared.apply(K, lu, query, alpha, None)
    else:
        lam = alpha.unsqueeze(-1) * query if alpha.dim() else alpha * query
    p = torch.softmax(lu + lam @ K.transpose(-1, -2), -1)            # (9): p(lambda), (..., L, S)
    if empty is not None and bool(empty.any()):
        p = torch.where(empty, torch.zeros_like(p), p)
    out = p @ value
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
