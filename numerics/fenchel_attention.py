"""Exact Fenchel-dual attention: a torch attention layer that uses the exact dual solution lambda* of
(7) instead of its approximation alpha z (14).

Forward: for templates of their own per query (fenchel_dual_lambda), lambda* by batched damped Newton
(attnlab.numerics.entropic_dual.solve_dual_newton_torch); for the layer, whose queries share the keys
(solve_dual_shared), the fixed point lambda = alpha (b - h(lambda)) with Anderson mixing, in the S x S Gram
space of the keys when S <= E, each query certified by its first-order residual, and Newton-CG with a
continuation in alpha where the fixed point does not settle.
Backward: implicit-function theorem on the first-order condition of (7),

    F(lambda, theta) = mu(theta) + z - lambda/alpha - h(lambda, theta) = 0,
    d lambda*/d theta = H^{-1} dF/d theta,   H = -dF/d lambda = I/alpha + Cov_{p(lambda*)}(t),

so the vector-Jacobian product for an incoming gradient v is (dF/d theta)^T H^{-1} v (one linear solve;
no unrolling of the iterations; for the layer a conjugate-gradient solve, in the Gram space when S <= E).

Attention reading (Sec 7-8): with templates t_i = scale * k_i (the paper's t_i = x_i/sqrt(d')), evidence
z = q and alpha = 1, the approximation (16) is exactly softmax attention softmax(scale <q, k_i> + log u_i)
v_i.  The exact layer replaces alpha z by lambda*, with a per-query alpha.
"""
from __future__ import annotations

import math
import warnings

import torch
from torch import nn

from attnlab.numerics.exact import softplus
from attnlab.numerics.entropic_dual import FLOOR_RUN, solve_dual_newton_torch
from attnlab.numerics.multihead import (MultiheadAttentionBase, _autocast, additive_mask, broadcast_shapes,
                                         check_device, check_dropout, check_flag, check_mask, check_positive,
                                         check_qkv, check_scale, compute_dtype, deprecated, empty_attention,
                                         sdpa_mask, shift_rows, with_key_dim)


def _foc(lam, T, logu, z, alpha):
    """F(lambda, theta) = mu + z - lambda/alpha - h(lambda)  (gradient of (7))."""
    mu = (torch.softmax(logu, -1).unsqueeze(-2) @ T).squeeze(-2)
    p = torch.softmax(logu + (T @ lam.unsqueeze(-1)).squeeze(-1), -1)
    h = (p.unsqueeze(-2) @ T).squeeze(-2)
    return mu + z - lam / alpha.unsqueeze(-1) - h


def _first_order_only(what: str) -> None:
    """RuntimeError when a backward runs with create_graph=True (grad mode on inside it): the implicit-function
    gradient is computed from the solution, not through an autograd graph, so a second derivative taken
    through it would leave this function's part out without a word."""
    if torch.is_grad_enabled():
        raise RuntimeError(f"{what} has first derivatives only: its backward cannot build a graph "
                           f"(create_graph=True); use exact=False, or take higher derivatives elsewhere")


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
        _first_order_only("fenchel_dual_lambda")
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


def fenchel_dual_lambda(T, logu, z, alpha, tol: float | None = None, max_iter: int = 200):
    """Differentiable lambda* of (7) (Newton forward, implicit-function backward); see
    attnlab.numerics.entropic_dual.solve_dual_newton_torch for the shapes, the iterations large alpha needs,
    and the RuntimeWarning for problems left unconverged after max_iter."""
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


def _solve_once(K, logu, Z, alpha, tol, max_iter, cg_iters, fixed_point_iters, lam0=None):
    """One attempt of solve_dual_shared from lam0 (default alpha z), on the 3-D forms of _flat (K (B, S, E),
    logu (B, 1 or L, S), Z (B, L, E)): (lam, p, h, done, residual)."""
    with torch.no_grad():
        a = torch.as_tensor(alpha, dtype=Z.dtype, device=Z.device)
        a = a.unsqueeze(-1) if a.dim() else a
        logw = logu - torch.logsumexp(logu, -1, keepdim=True)
        mu = logw.exp() @ K                                          # (..., L or 1, E)
        b = mu + Z
        ab = a * b
        Kt = K.transpose(-1, -2)
        lam = a * Z if lam0 is None else lam0
        prev_r = prev_g = prev_rr = None
        best, best_lam = None, lam
        # softmax ignores a log u that is constant over the keys (no log_u given): skip adding it
        constant = bool((logw == logw[..., :1]).all())
        # the certificate |alpha F(lambda)|_inf <= tol (1 + |lambda|_inf): it bounds |lambda - lambda*| (the
        # negative Hessian of (7), times alpha, is I + alpha Cov_p(t) >= I).  (A residual within its rounding floor
        # instead, tol + 8 eps alpha tr Cov_p(t), is none: at S = E = 2, scores ~ 1e3, alpha = 100, float32
        # accepted residuals of 447 and weights 0.11 off.)  Where float64 cannot reach it, the rounding-floor stop
        # of the Newton phase below ends the query; a lower precision hands it to the float64 continuation.
        k2 = (K * K).sum(-1).amax(-1, keepdim=True).unsqueeze(-1)           # max ||t_i||^2, (..., 1, 1)
        eps = torch.finfo(Z.dtype).eps
        at_floor_ok = Z.dtype == torch.float64
        s = h = None
        for _ in range(fixed_point_iters):
            s = torch.matmul(lam, Kt, out=s)                             # (buffers reused by each pass)
            p = torch.softmax(s if constant else s.add_(logw), -1)        # (logw (B, 1 or L, S): broadcasts)
            h = torch.matmul(p, K, out=h)
            g_lam = torch.addcmul(ab, a, h, value=-1)                    # G(lambda) = alpha (b - h)
            r = g_lam - lam                                              # residual of the fixed point
            rows = torch.maximum(r.amax(-1), r.amin(-1).neg_())          # |r|_inf (amax, amin: no copy)
            if bool((rows <= tol * (1 + torch.maximum(lam.amax(-1), lam.amin(-1).neg_()))).all()):
                return lam, p, h, None, None
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
        ctol = 1e-3 if Z.dtype == torch.float32 else 1e-8
        safe = 1.0 / (1.0 / a + k2)
        done = torch.zeros(lam.shape[:-1] + (1,), dtype=torch.bool, device=lam.device)
        floor_run = torch.zeros(done.shape, dtype=torch.long, device=lam.device)
        s, lse, f = _shared_parts(lam, K, logw, b, a)
        for _ in range(max_iter):
            p = torch.softmax(s, -1)
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
            if at_floor_ok:
                # at the rounding floor (float64): the step's predicted gain (g . step, the squared Newton
                # decrement) below the rounding of the dual's value; after FLOOR_RUN such full steps in a row the
                # query is solved as far as float64 can tell (scores x 100 at alpha = 1e4, and x 1000 at alpha = 1,
                # stayed above tol (1 + |lambda|) and warned, their weights right to 6e-9 and 6e-11)
                floor = slope <= slack
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
            if at_floor_ok:
                floor_run = torch.where(floor & (t == 1), floor_run + 1, 0)
                done = done | (floor_run >= FLOOR_RUN)
        p = torch.softmax(s, -1)                                     # the weights (9) at the returned lambda
        h = p @ K                                                    # (exp(s - lse) need not sum to 1)
        if bool(done.all()):
            return lam, p, h, None, None
        res = (a * (b - lam / a - h)).abs().amax(-1, keepdim=True)
        return lam, p, h, done, res


# ---------------------------------------------------------------------------------------------
# The layer's path.  On a CPU these loops are bound by memory traffic and by the number of operations,
# not by arithmetic: a pass over an (L, S) array costs a sizeable fraction of an attention-sized matrix
# product, and a fresh large tensor costs page faults.  So each step is a fused product (baddbmm), one
# softmax and a few passes written into buffers allocated once; the softmax Jacobian-vector product
# C_p x = p * (x - <p, x>) (C_p = diag(p) - p p^T) is torch's fused kernel; and the stopping tests need no
# extra product.  Two equivalent parametrisations of lambda, by the cheaper product:
#   - S > E, "direct": lambda itself (E numbers per query); a step is two (L, S) x (S, E)-sized products;
#   - S <= E, "Gram": lambda = alpha (z + (pi - q) K) for a vector q on the keys (at the solution q = p,
#     since lambda* = alpha (mu + z - p K)); the logits are s(q) = s_0 - alpha q G with the S x S Gram
#     matrix G = K K^T, so a step is one (L, S) x (S, S) product.
# ---------------------------------------------------------------------------------------------

_softmax_out = torch.ops.aten._softmax.out
_softmax_jvp = torch.ops.aten._softmax_backward_data
_softmax_jvp_out = torch.ops.aten._softmax_backward_data.out

#: the conjugate-gradient solves hand the rows still above the tolerance to a batch of their own once they
#: are this few (an iteration over a few rows costs little next to one over all)
_STRAGGLERS = 1 / 16

#: the conjugate-gradient steps the backward allows per solve (it warns for rows left above its tolerance)
_BACKWARD_CG_ITERS = 100


def _cjvp(x, p, out=None):
    """C_p x = p * (x - <p, x>) over the last dimension (C_p = diag(p) - p p^T, the covariance of the
    one-hot vector under p): torch's fused softmax-backward kernel."""
    if out is None:
        return _softmax_jvp(x, p, -1, p.dtype)
    return _softmax_jvp_out(x, p, -1, p.dtype, grad_input=out)


def _vdot(x, y):
    """<x, y> over the last dimension, keepdim."""
    return torch.linalg.vecdot(x, y).unsqueeze(-1)


def _norm(x):
    """|x|_2 over the last dimension, keepdim (one reduction, no temporary)."""
    return torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def _inf_norm(x):
    """max |x| over the last dimension, keepdim (two reductions, no temporary)."""
    return torch.maximum(x.amax(-1, keepdim=True), x.amin(-1, keepdim=True).neg_())


def _flat(K, logu, Z, alpha):
    """3-D forms over the broadcast batch dimensions: K (B, S, E), logu (B, 1 or L, S), Z (B, L, E) and
    alpha as a = (B, 1 or L, 1), or the 0-dim alpha itself; af = float(alpha) for a 0-dim alpha (the scalar
    the fused products take), else None; and the batch shape."""
    if logu.dim() == 1:
        logu = logu.unsqueeze(0)
    a = alpha.unsqueeze(-1) if alpha.dim() else alpha
    batch = broadcast_shapes(K.shape[:-2], Z.shape[:-2], logu.shape[:-2], a.shape[:-2] if a.dim() else ())

    n = math.prod(batch)                 # explicit: reshape cannot infer -1 for an empty tensor (no query)

    def flat(x):
        return x.expand(batch + x.shape[-2:]).reshape((n,) + x.shape[-2:])
    af = float(a) if a.dim() == 0 else None
    return flat(K), flat(logu), flat(Z), (a if a.dim() == 0 else flat(a)), af, batch


def _rows(x, b, l):
    """The rows (b, l) of x (B, 1 or L, n) as (m, 1, n) (x itself if 0-dim)."""
    if x.dim() == 0:
        return x
    return x[b] if x.shape[1] == 1 else x[b, l].unsqueeze(1)


def _anderson(g, g1, r, r1, rr, rr1, out):
    """Anderson(1) per query for the fixed point x = g(x) (residual r = g - x): g - theta (g - g1) with
    theta = <r, r - r1> / |r - r1|^2 (the secant step on the last two), into out; the plain step g where
    the difference of the residuals is lost to rounding."""
    rp = _vdot(r, r1)
    num = rr - rp
    den = num + (rr1 - rp)
    ok = den > (16 * torch.finfo(rr.dtype).eps) * (rr + rr1)
    return torch.lerp(g, g1, torch.where(ok, num / den, 0), out=out)


def _rank_one_step(r, p, g, a, one):
    """r <- M^-1 r in place for M = I + alpha C_p diag(g) = D - alpha p (p o g)^T, D = diag(1 + alpha p_i g_i)
    (per row of r and p (B, L, S); g (B, 1, S) >= 0; alpha 0-dim or (B, 1 or L, 1)), by Sherman-Morrison:
    M^-1 r = D^-1 r + alpha c D^-1 p with c = <p o g, D^-1 r> / (1 - alpha <p o g, D^-1 p>), whose denominator
    is 1 - sum_i p_i alpha p_i g_i / (1 + alpha p_i g_i), in (0, 1] for p on the simplex.  Returns r."""
    pg = torch.mul(p, g)
    D = torch.addcmul(one, pg, a) if a.dim() else pg.mul(a).add_(1)
    r.div_(D)
    Dp = torch.div(p, D, out=D)
    c = _vdot(pg, r).div_(_vdot(pg, Dp).mul_(-a).add_(1)).mul_(a)
    return r.addcmul_(Dp, c)


def _gram_phase(K, logw, Z, a, af, tol, evals, G=None):
    """The fixed point in the Gram space (S <= E): q -> p(q) = softmax(s_0 - alpha q G), from q = pi (that
    is lambda = alpha z, (14)), with Anderson(1) per query; where alpha max_i |t_i|^2 >= 1, on the step
    preconditioned by the diagonal of I + alpha C_p G without its rank-one part,
    q -> q + (p - q) / (1 + alpha p_i |t_i|^2), and where alpha max_i |t_i|^2 >= 4 by
    M = I + alpha C_p diag(G) (that diagonal and the rank-one part -alpha p (p o |t|^2)^T, inverted by
    Sherman-Morrison: r~ = D^-1 r + alpha c D^-1 p, c = <p o |t|^2, D^-1 r> / (1 - alpha <p o |t|^2, D^-1 p>),
    D = diag(1 + alpha p_i |t_i|^2); the denominator lies in (0, 1]).  The same fixed point; the steps contract
    faster: at n = d = 64, alpha = 1 four softmax passes instead of five; alpha = 4 settles here (the plain step
    went to the Newton solver), in 7 passes with the rank-one part and 13 without; alpha = 8 and 16 settle
    here with it (9 and 12 passes), without it they went to the Newton solver.  The rank-one part costs five
    passes over (L, S) arrays a step, more than it saves below alpha max_i |t_i|^2 = 4.  The first-order residual is
    alpha F(lambda) = alpha (q - p) K, so |alpha F|_inf <= alpha |q - p|_2 max_j |K_{:, j}|_2: the phase ends
    when that bound is below tol for every query, or, once it is within reach of it, when the bound or else
    the residual itself (one more product) passes |alpha F|_inf <= tol (1 + |lambda|_inf) for every query
    (lambda takes one product).  Returns
    (lam, p, None) (h = p K is not needed here), or (None, lam, None) at the last iterate when the bound
    fails to shrink by 10 % twice in a row or after `evals` steps.  G: the Gram matrix K K^T where the caller
    has it."""
    B = Z.shape[0]
    Kt = K.transpose(-1, -2)
    G = torch.bmm(K, Kt) if G is None else G
    pi = logw.exp()
    mu = torch.bmm(pi, K)
    s = torch.bmm(Z if af == 1 else a * Z, Kt)                         # the logits at lambda = alpha z
    if not bool((logw == logw[..., :1]).all()):                        # (softmax does not see a constant)
        s.add_(logw)
    s0 = s.add(torch.bmm(pi, G), alpha=af) if af is not None else torch.addcmul(s, a, torch.bmm(pi, G))
    col = K.square().sum(-2).amax(-1).sqrt_()                          # max_j |K_{:, j}|_2 (a contiguous pass;
    if not bool(torch.isfinite(col).all()):                            # vector_norm's strided one where it overflows)
        col = torch.linalg.vector_norm(K, dim=-2).amax(-1)
    bound = a * col.view(B, 1, 1)                                      # alpha max_j |K_{:, j}|_2
    dg = G.diagonal(dim1=-2, dim2=-1).unsqueeze(1)                    # diag(G) = |t_i|^2, (B, 1, S)
    # the plain step contracts at a rate <= alpha max_i |t_i|^2 (>= alpha ||Cov_p(t)||); below 1 it is fast
    # enough that the preconditioner's four passes a step cost more than the steps they save; its rank-one
    # part pays from 4 (at n = d = 64, alpha = 2, rho = 3.5: one pass fewer and 15 % slower; alpha = 3: 14 %
    # faster)
    rho = float(a.max()) * float(dg.max())
    precondition = rho >= 1
    rank_one = rho >= 4
    adg = a * dg if a.dim() == 0 or a.shape[1] == 1 else None          # alpha |t_i|^2 where alpha is per batch
    one = torch.ones((), dtype=Z.dtype, device=Z.device)
    zmin, zmax = torch.aminmax(Z)
    reach = 8 * tol * (1 + float(a.max()) * (max(float(zmax), -float(zmin)) + float(mu.abs().max())))
    P = [torch.softmax(s, -1), torch.empty_like(s)]                    # p, and the previous p
    R = [P[0] - pi, torch.empty_like(s)]                               # r = p - q, and the previous r
    q, cur, best, rr1, missed = pi, 0, math.inf, None, False
    for n in range(evals):
        p, r = P[cur], R[cur]
        nr = _norm(r)
        x = float((bound * nr).max())                                  # a bound on max |alpha F|_inf
        if x <= reach:
            lam = torch.sub(Z, torch.bmm(q.expand_as(p), K)).add_(mu)      # lambda = alpha (z + mu - q K)
            if af != 1:
                lam.mul_(a)
            room = tol * (1 + _inf_norm(lam))                          # the test's right-hand side, per query
            # the bound against it per query first (no product: the same iterate passes either way), then the
            # residual itself
            if (x <= tol or bool((bound * nr <= room).all())
                    or bool((_inf_norm(torch.bmm(r, K)).mul_(a) <= room).all())):
                return lam, p, None
        if n >= 2 and not x < 0.9 * best:                              # |alpha F| not shrinking by 10%:
            if missed:                                                 # twice in a row (Anderson steps
                break                                                  # need not shrink it every time)
            missed = True
        else:
            missed = False
        best = min(best, x)
        # the step preconditioned by M = I + alpha C_p diag(G) (r~ = M^-1 r, Sherman-Morrison), or by its
        # diagonal alone, r~ = r / (1 + alpha p_i |t_i|^2); Anderson(1) on q -> q + r~ (kept in P[cur], R[cur])
        if rank_one:
            _rank_one_step(r, p, dg, a, one)
            torch.add(q, r, out=p)
            rr = _norm(r).square_()
        elif precondition:
            r.div_(torch.addcmul(one, p, adg) if adg is not None else torch.mul(p, dg).mul_(a).add_(1))
            torch.add(q, r, out=p)
            rr = _norm(r).square_()
        else:
            rr = nr.square_()
        if rr1 is None:
            q = p.clone()
        else:
            _anderson(p, P[1 - cur], r, R[1 - cur], rr, rr1, out=q)
        rr1, cur = rr, 1 - cur
        if af is not None:
            torch.baddbmm(s0, q, G, alpha=-af, out=s)
        else:
            torch.baddbmm(s0, a * q, G, alpha=-1, out=s)
        _softmax_out(s, -1, False, out=P[cur])
        torch.sub(P[cur], q, out=R[cur])
    return None, a * (Z + mu - torch.bmm(q.expand_as(P[cur]), K)), None


def _direct_phase(K, logw, Z, a, af, tol, evals):
    """The fixed point lambda = G(lambda) = alpha (b - h(lambda)) from lambda = alpha z (14), with
    Anderson(1) per query; it ends when every query passes |G(lambda) - lambda|_inf = |alpha F(lambda)|_inf
    <= tol (1 + |lambda|_inf).  Returns (lam, p, h), or (None, lam, None) at the last iterate when the
    residual stops shrinking or after `evals` steps."""
    Kt = K.transpose(-1, -2)
    ab = Z + torch.bmm(logw.exp(), K)                                  # alpha (mu + z)
    if af != 1:
        ab.mul_(a)
    constant = bool((logw == logw[..., :1]).all())                    # softmax does not see a constant log u
    LAM = [a * Z, torch.empty_like(Z)]                                 # lambda, and the previous lambda
    GS = [torch.empty_like(Z), torch.empty_like(Z)]                    # its image G(lambda), and the previous
    R = [torch.empty_like(Z), torch.empty_like(Z)]                     # r = G(lambda) - lambda, and the previous
    s = p = h = None
    cur, best, rr1 = 0, math.inf, None
    for n in range(evals):
        lam, g, r = LAM[cur], GS[cur], R[cur]
        s = torch.bmm(lam, Kt, out=s)
        p = _softmax_out(s if constant else s.add_(logw), -1, False, out=torch.empty_like(s) if p is None else p)
        h = torch.bmm(p, K, out=h)
        if af is not None:
            torch.add(ab, h, alpha=-af, out=g)
        else:
            torch.addcmul(ab, a, h, value=-1, out=g)
        torch.sub(g, lam, out=r)
        x = float((_inf_norm(r) / (1 + _inf_norm(lam))).max())
        if x <= tol:
            return lam, p, h
        if n >= 2 and not x < 0.9 * best:
            break
        best = min(best, x)
        rr = _norm(r).square_()
        if rr1 is None:
            LAM[1 - cur].copy_(g)
        else:
            _anderson(g, GS[1 - cur], r, R[1 - cur], rr, rr1, out=LAM[1 - cur])
        rr1, cur = rr, 1 - cur
    return None, LAM[cur], None


def _solve_flat(K, logu, Z, a, af, tol, evals: int | None = None, max_iter: int = 30, cg_iters: int = 20,
                G=None):
    """(lambda*, p, h) for the 3-D forms of _flat (h = p K, or None where not at hand): the fast phase (Gram
    or direct), and where it does not converge, the robust solver (_robust_solve).  G: K K^T where the
    caller has it (S <= E)."""
    if evals is None:                                                  # a linear rate: steps ~ digits
        evals = 32 if Z.dtype == torch.float64 else 16
    B, L, E = Z.shape
    if B * L == 0:                                                     # nothing to solve
        return a * Z, Z.new_zeros(B, L, K.shape[-2]), torch.zeros_like(Z)
    logw = logu - torch.logsumexp(logu, -1, keepdim=True)
    if K.shape[-2] <= E:
        lam, p, h = _gram_phase(K, logw, Z, a, af, tol, evals, G)
    else:
        lam, p, h = _direct_phase(K, logw, Z, a, af, tol, evals)
    if lam is None:                                                    # (from lambda = alpha z again)
        return _robust_solve(K, logu, Z, a.squeeze(-1) if a.dim() else a, tol, max_iter, cg_iters, evals)
    return lam, p, h                                                   # (h None from the Gram phase)


def _cg_step(rr, dAd, active):
    """(step, ok): the conjugate-gradient step rr / dAd on the active rows whose curvature dAd is positive
    and finite, 0 elsewhere (those rows stop)."""
    step = rr / dAd
    ok = active & (step > 0) & (step < math.inf)                       # (False for NaN)
    return torch.where(ok, step, 0), ok


def _cg_gram(x, p, G, a, af, tol: float, iters: int, keep_x: bool = True):
    """y with A y = y + alpha (C_p y) G = x, by conjugate gradients in the semi-inner product
    <u, v>_C = u C_p v^T, in which A is self-adjoint and positive (<u, A v>_C = u C v^T + alpha (C u) G (C v)^T);
    u = C_p y then solves (I + alpha C_p G) u = C_p x, the implicit-function system in the logits.  Rows stop
    (and stay frozen) when |r|_C <= tol |x|_C or when a curvature is not positive and finite; the last few
    go on as a batch of their own.  With keep_x=False x is overwritten (by r).  Returns (y, r = x - A y,
    number of rows not converged, an (L, S) buffer for the caller to reuse)."""
    Cr = _cjvp(x, p)
    rr = _vdot(x, Cr)
    stop = (tol * tol) * rr
    active = rr > stop                                                 # (False for NaN)
    n_active = int(active.sum())
    y, r, d, Cd = torch.zeros_like(x), (x.clone() if keep_x else x), x.clone(), Cr
    Ad, Cr = torch.empty_like(x), torch.empty_like(x)
    for it in range(iters):
        if n_active == 0:
            break
        if it and n_active <= _STRAGGLERS * active.numel():            # the last few: a batch of their own
            b, l, _ = active.nonzero(as_tuple=True)
            ys, rs, n_bad = _cg_gram_rows((y[b, l], r[b, l], d[b, l], Cd[b, l]), p[b, l], G[b], _rows(a, b, l), af,
                                          rr[b, l], stop[b, l], iters - it)
            y[b, l], r[b, l] = ys, rs
            return y, r, n_bad, Ad
        if af is not None:
            torch.baddbmm(d, Cd, G, alpha=af, out=Ad)
        else:
            torch.addcmul(d, a, torch.bmm(Cd, G), out=Ad)
        step, ok = _cg_step(rr, _vdot(Cd, Ad), active)
        if int(ok.sum()) < n_active:                                   # rare: keep those rows' Ad out
            Ad.masked_fill_(~ok, 0)
        y.addcmul_(step, d)
        r.addcmul_(step, Ad, value=-1)
        _cjvp(r, p, out=Cr)
        rr_new = _vdot(r, Cr)
        active = ok & (rr_new > stop)
        n_active = int(active.sum())
        beta = torch.where(active, rr_new / rr, 0)
        torch.addcmul(r, beta, d, out=d)                              # r + beta d (r on the rows that stop)
        torch.addcmul(Cr, beta, Cd, out=Cd)
        rr = rr_new
    return y, r, n_active, Ad


def _cg_gram_rows(state, p, G, a, af, rr, stop, iters):
    """_cg_gram's iteration continued on m rows (each with its own G, (m, S, S)) from state (y, r, d, Cd)."""
    y, r, d, Cd = (v.unsqueeze(1) for v in state)
    p, rr, stop = p.unsqueeze(1), rr.unsqueeze(1), stop.unsqueeze(1)
    active = torch.ones_like(rr, dtype=torch.bool)
    for _ in range(iters):
        Ad = torch.baddbmm(d, Cd, G, alpha=af) if af is not None else torch.addcmul(d, a, torch.bmm(Cd, G))
        step, ok = _cg_step(rr, _vdot(Cd, Ad), active)
        Ad = torch.where(ok, Ad, 0)
        y, r = y.addcmul(step, d), r.addcmul(step, Ad, value=-1)
        Cr = _cjvp(r, p)
        rr_new = _vdot(r, Cr)
        active = ok & (rr_new > stop)
        if not bool(active.any()):
            break
        beta = torch.where(active, rr_new / rr, 0)
        d, Cd, rr = torch.addcmul(r, beta, d), torch.addcmul(Cr, beta, Cd), rr_new
    return y.squeeze(1), r.squeeze(1), int(active.sum())


def _cg_direct(v, p, K, a, af, tol: float, iters: int, acc, dK=None):
    """w with H w = w / alpha + (C_p (w K^T)) K = v (H = I/alpha + Cov_p(t), the negative Hessian of (7)) by
    conjugate gradients; rows stop when |r| <= tol |v| or a curvature is not positive and finite; the last
    few go on as a batch of their own.  acc (L, S): w K^T is subtracted from it in place, accumulated from
    the products d K^T of the iterations (w = sum_k step_k d_k: no extra product, no extra buffer).  dK: an
    optional (L, S) buffer to work in.  Returns (w, the number of rows not converged, and an (L, S) buffer
    for the caller to reuse)."""
    rr = _norm(v).square_()
    stop = (tol * tol) * rr
    active = rr > stop
    n_active = int(active.sum())
    w, r, d = torch.zeros_like(v), v.clone(), v.clone()
    Hd = torch.empty_like(v)
    Cd = None
    Kt = K.transpose(-1, -2)
    for it in range(iters):
        if n_active == 0:
            break
        if it and n_active <= _STRAGGLERS * active.numel():
            b, l, _ = active.nonzero(as_tuple=True)
            w[b, l], acc[b, l], n_bad = _cg_direct_rows((w[b, l], acc[b, l], r[b, l], d[b, l]), p[b, l], K[b],
                                                        _rows(a, b, l), af, rr[b, l], stop[b, l], iters - it)
            return w, n_bad, Cd
        dK = torch.bmm(d, Kt, out=dK)
        Cd = _cjvp(dK, p, out=Cd)
        if af is not None:
            torch.baddbmm(d, Cd, K, beta=1 / af, out=Hd)
        else:
            torch.bmm(Cd, K, out=Hd).addcmul_(d, 1 / a)
        step, ok = _cg_step(rr, _vdot(d, Hd), active)
        if int(ok.sum()) < n_active:
            Hd.masked_fill_(~ok, 0)
        w.addcmul_(step, d)
        acc.addcmul_(step, dK, value=-1)
        r.addcmul_(step, Hd, value=-1)
        rr_new = _norm(r).square_()
        active = ok & (rr_new > stop)
        n_active = int(active.sum())
        torch.addcmul(r, torch.where(active, rr_new / rr, 0), d, out=d)
        rr = rr_new
    return w, n_active, Cd


def _cg_direct_rows(state, p, K, a, af, rr, stop, iters):
    """_cg_direct's iteration continued on m rows (each with its own K, (m, S, E)) from state (w, acc, r, d):
    (w, acc - w K^T, number of rows not converged)."""
    w, acc, r, d = (v.unsqueeze(1) for v in state)
    p, rr, stop = p.unsqueeze(1), rr.unsqueeze(1), stop.unsqueeze(1)
    active = torch.ones_like(rr, dtype=torch.bool)
    for _ in range(iters):
        dK = torch.bmm(d, K.transpose(-1, -2))
        Cd = _cjvp(dK, p)
        Hd = torch.baddbmm(d, Cd, K, beta=1 / af) if af is not None else torch.bmm(Cd, K).addcmul_(d, 1 / a)
        step, ok = _cg_step(rr, _vdot(d, Hd), active)
        Hd = torch.where(ok, Hd, 0)
        w, acc, r = w.addcmul(step, d), acc.addcmul(step, dK, value=-1), r.addcmul(step, Hd, value=-1)
        rr_new = _norm(r).square_()
        active = ok & (rr_new > stop)
        if not bool(active.any()):
            break
        d, rr = torch.addcmul(r, torch.where(active, rr_new / rr, 0), d), rr_new
    return w.squeeze(1), acc.squeeze(1), int(active.sum())


def _robust_solve(K, logu, Z, alpha, tol, max_iter, cg_iters, fixed_point_iters):
    """The fixed point with Anderson mixing, then phases 2 and 3 of solve_dual_shared (see there):
    (lam, p, h), with a RuntimeWarning for queries that stay above the tolerance."""
    lam, p, h, done, res = _solve_once(K, logu, Z, alpha, tol, max_iter, cg_iters, fixed_point_iters)
    if done is not None:
        # the continuation; in float64 when the inputs are in a lower precision (at such scores float32
        # cannot resolve lambda: alpha Cov_p(t) eps32 |lambda| is beyond the tolerance)
        dt = Z.dtype
        if dt != torch.float64 and Z.device.type != "mps":
            K, logu, Z = K.double(), logu.double(), Z.double()
            alpha = alpha.double() if torch.is_tensor(alpha) else alpha
        a = torch.as_tensor(alpha, dtype=Z.dtype, device=Z.device)
        k2 = float((K * K).sum(-1).amax())
        m = max(1, math.ceil(math.log10(max(float(a.max()) * max(k2, 1e-300), 1.0))))
        lam_k, prev = None, None
        for j in range(m, -1, -1):                               # alpha 10^-m, ..., alpha
            f = 10.0 ** (-j)
            lam0 = None if lam_k is None else lam_k * (f / prev)
            lam_k, p, h, done, res = _solve_once(K, logu, Z, a * f, tol, max_iter, cg_iters,
                                                 fixed_point_iters, lam0=lam0)
            prev = f
        lam, p, h = lam_k.to(dt), p.to(dt), h.to(dt)
    if done is not None:
        n_bad = int((~done).sum())
        warnings.warn(f"solve_dual_shared: {n_bad} of {done.numel()} queries did not reach tol = {tol:g} in "
                      f"{max_iter} Newton steps and the continuation in alpha (largest step alpha F(lambda) "
                      f"left: {float(torch.where(done, 0, res).max()):.3g}): not converged to lambda* of (7)",
                      RuntimeWarning, stacklevel=3)
    return lam, p, h


def solve_dual_shared(K, logu, Z, alpha, tol: float | None = None, max_iter: int = 30, cg_iters: int = 20,
                      fixed_point_iters: int | None = None, return_weights: bool = False):
    """lambda* of (7) for queries Z (..., L, E) that share templates K (..., S, E).  logu broadcastable
    to (..., L, S); alpha broadcastable to (..., L).  Same result as
    solve_dual_newton_torch(K.unsqueeze(-3), logu, Z, alpha).  With return_weights=True returns
    (lambda, p, h): the weights p(lambda) of (9) and their mean h = p K at the returned lambda (no extra
    attention pass: the solver's last pass computed them).

    Phase 1 (cheap, one attention pass per step, at most fixed_point_iters of them; default 16 in float32 and
    32 in float64, whose tolerance needs about twice the digits): the fixed-point
    iteration lambda <- G(lambda) = alpha (b - h(lambda)) of the first-order condition, from
    lambda = alpha z (14).  Its Jacobian -alpha Cov_p(t) is symmetric with eigenvalues in [-rho, 0],
    rho = alpha ||Cov_p(t)|| (small in the regime the paper argues for), so it contracts at the rate rho;
    each step is accelerated per query by Anderson mixing of depth 1 (the secant combination of the last
    two steps), which removes most of the dominant mode.  With at most as many keys as features (S <= E)
    the iteration runs in the Gram space (lambda = alpha (z + (pi - q) K), logits s_0 - alpha q K K^T: one
    S x S product per step; see _gram_phase), else on lambda itself.  Phase 1 returns when every query's
    step G(lambda) - lambda (the gradient-mapped first-order residual alpha F(lambda)) is below
    tol (1 + |lambda|_inf) (in the Gram space: an upper bound of it, or the residual itself), and hands
    over to phase 2 as soon as the largest step fails to shrink by 10% (in the Gram space, where the steps are
    preconditioned: twice in a row), or after fixed_point_iters steps.
    Phase 2: Newton-CG with a per-query backtracking line search, stopped by the same test, or in float64
    at the rounding floor: after FLOOR_RUN (3) full steps in a row whose predicted gain (the squared Newton
    decrement) is below the rounding of the dual's value (there the residual cannot shrink further: scores x
    1000 at alpha = 1 stayed at 36 tol).  In a lower precision a query that fails the test goes on to phase 3.
    Phase 3, only where phase 2 leaves queries unconverged (extreme scores or alpha, where the dual is
    nearly piecewise linear and Newton's model holds only near the kinks): continuation in alpha, solving
    for alpha 10^-m, ..., alpha / 10, alpha (m such that alpha 10^-m max||t_i||^2 <= 1, where the fixed
    point contracts), each from the previous solution rescaled, lambda = (alpha_k / alpha_{k-1})
    lambda_{k-1} = alpha_k (b - h_{k-1}): the weights p of the previous stage, which is where the next one's
    kinks are; in float64 for inputs of a lower precision (the result is cast back).  Queries still above
    the tolerance after that raise a RuntimeWarning that says how many and
    their largest residual: their lambda is then not lambda*."""
    with torch.no_grad():
        if tol is None:
            tol = 1e-12 if Z.dtype == torch.float64 else 1e-5
        alpha = torch.as_tensor(alpha, dtype=Z.dtype, device=Z.device)
        logu = torch.as_tensor(logu, dtype=Z.dtype, device=Z.device)
        K3, lu3, Z3, a, af, batch = _flat(K, logu, Z, alpha)
        lam, p, h = _solve_flat(K3, lu3, Z3, a, af, tol, fixed_point_iters, max_iter, cg_iters)
        if h is None and return_weights:
            h = torch.bmm(p, K3)
        lam, p, h = (None if x is None else x.reshape(batch + x.shape[-2:]) for x in (lam, p, h))
        return (lam, p, h) if return_weights else lam


def _all_finite(x: torch.Tensor) -> bool:
    """Whether every entry of x is finite: one pass (aminmax; NaN propagates into both, inf into one),
    where isfinite(x).all() takes several."""
    lo, hi = torch.aminmax(x.detach())
    return math.isfinite(float(lo)) and math.isfinite(float(hi))


def _warn_backward(n_bad: int, n: int, tol: float, iters: int):
    if n_bad:
        warnings.warn(f"fenchel_attention backward: for {n_bad} of {n} queries the implicit-function solve did not "
                      f"reach the relative residual {tol:g} in {iters} conjugate-gradient steps: their gradients "
                      f"are approximate", RuntimeWarning, stacklevel=3)


class _ExactAttention(torch.autograd.Function):
    """(out, p) = (p(lambda*) V, p(lambda*)) with lambda* of (7) for queries sharing their templates, as one
    differentiable function of (K, logu, Z, alpha, V).

    Backward: the implicit-function theorem on the first-order condition of (7), for incoming gradients G
    (of out) and G_p (of p): the weights receive x = G V^T + G_p, and with C = diag(p) - p p^T,

    w = H^{-1} (C x) K with H = I/alpha + K^T C K, the negative Hessian of (7); both paths reach the logits,
    ds = C (x - w K^T); and dK = ds^T lambda - p^T w + pi^T w (pi = softmax(logu), the path through
    mu = pi K), dlogu = ds + C_pi(w K^T), dZ = w, dalpha = <lambda, w>/alpha^2.  The solve:

    - S > E: conjugate gradients on H w = (C x) K (_cg_direct);
    - S <= E, in the logits s = log w + alpha z K^T + alpha (pi - p) G (G = K K^T): ds = u solves
      (I + alpha C G) u = C x, u = C y with y + alpha (C y) G = x (conjugate gradients in the C-inner product,
      _cg_gram, one S x S product per step), and then w = alpha u K, w K^T = alpha u G = x - A y.

    The weights at lambda* are those of the forward (no recomputation).  Not converged solves warn."""

    @staticmethod
    def forward(ctx, K, logu, Z, alpha, V):
        tol = 1e-12 if Z.dtype == torch.float64 else 1e-5
        K3, lu3, Z3, a, af, batch = _flat(K, logu, Z, alpha)
        G = torch.bmm(K3, K3.transpose(-1, -2)) if K3.shape[-2] <= K3.shape[-1] else None   # (the backward's too)
        lam, p, _ = _solve_flat(K3, lu3, Z3, a, af, tol, G=G)
        V3 = V.expand(batch + V.shape[-2:]).reshape((-1,) + V.shape[-2:])
        ctx.set_materialize_grads(False)
        ctx.shapes = (K.shape, logu.shape, Z.shape, alpha.shape, V.shape, batch)
        ctx.af = af
        ctx.save_for_backward(K3, lu3, Z3, a, V3, lam, p, G)
        return torch.bmm(p, V3).reshape(batch + (p.shape[-2], V.shape[-1])), p.reshape(batch + p.shape[-2:])

    @staticmethod
    def backward(ctx, g_out, g_p):
        _first_order_only("fenchel_attention (exact=True)")
        K, logu, Z, a, V, lam, p, G = ctx.saved_tensors
        K_shape, lu_shape, Z_shape, alpha_shape, V_shape, batch = ctx.shapes
        need_K, need_lu, need_Z, need_a, need_V = ctx.needs_input_grad
        if g_out is None and g_p is None:
            return None, None, None, None, None
        af = ctx.af
        B, L, S = p.shape
        gV = None
        x = None
        if g_out is not None:
            # (contiguous: an expanded gradient, as .sum() sends, has stride 0, and bmm then loops over the batch)
            g_out = g_out.expand(batch + g_out.shape[-2:]).reshape(B, L, -1).contiguous()
            x = torch.bmm(g_out, V.transpose(-1, -2))                      # (B, L, S)
            if need_V:
                gV = _reduce_to(torch.bmm(p.transpose(-1, -2), g_out).reshape(batch + V.shape[-2:]), V_shape)
        if g_p is not None:
            g_p = g_p.expand(batch + g_p.shape[-2:]).reshape(B, L, S)
            x = g_p.clone() if x is None else x.add_(g_p)
        if not (need_K or need_lu or need_Z or need_a):
            return None, None, None, None, gV
        tol = 1e-12 if p.dtype == torch.float64 else 1e-4                 # relative residual of the solve
        iters = _BACKWARD_CG_ITERS
        logw = logu - torch.logsumexp(logu, -1, keepdim=True)
        pi = logw.exp()
        shared = pi.shape[-2] == 1                                         # one log u for all queries
        if G is not None:                                                  # S <= E
            # u = C y solves (I + alpha C G) u = C x; it is ds below, w = alpha u K, and w K^T = alpha u G = x - r - y
            y, r, n_bad, buf = _cg_gram(x, p, G, a, af, tol, iters, keep_x=need_lu)
            ds = _cjvp(y, p, out=buf)
            w = torch.bmm(ds, K)
            if af != 1:
                w.mul_(a)
            wK = x.sub_(r).sub_(y) if need_lu else None
        else:
            gs = _cjvp(x, p)
            x0 = x.clone() if need_lu else None
            w, n_bad, buf = _cg_direct(torch.bmm(gs, K), p, K, a, af, tol, iters, acc=x, dK=gs)   # x -= w K^T
            wK = x0.sub_(x) if need_lu else None
            ds = _cjvp(x, p, out=buf)                                      # both paths through the logits
        _warn_backward(n_bad, B * L, tol, iters)
        gK = gLu = gA = None
        gZ = w if need_Z else None
        if need_K:                                                         # ds^T lambda - p^T w + pi^T w
            piw = (pi.transpose(-1, -2) * w.sum(-2, keepdim=True) if shared        # (an outer product)
                   else torch.bmm(pi.transpose(-1, -2), w))
            gK = piw.baddbmm_(ds.transpose(-1, -2), lam).baddbmm_(p.transpose(-1, -2), w, alpha=-1)
        if need_lu:                                                        # ds + C_pi(w K^T)
            if shared:
                gLu = ds.sum(-2, keepdim=True) + _cjvp(wK.sum(-2, keepdim=True), pi)
            else:
                gLu = ds + _cjvp(wK, pi)
        if need_a:
            gA = (_vdot(lam, w) / (a * a)).squeeze(-1)
        if gK is not None:
            gK = _reduce_to(gK.reshape(batch + gK.shape[-2:]), K_shape)
        if gLu is not None:
            gLu = _reduce_to(gLu.reshape(batch + gLu.shape[-2:]), lu_shape)
        if gZ is not None:
            gZ = _reduce_to(gZ.reshape(batch + gZ.shape[-2:]), Z_shape)
        if gA is not None:
            gA = _reduce_to(gA.reshape(batch + gA.shape[-1:]), alpha_shape) if len(alpha_shape) else gA.sum()
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


def fenchel_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                      scale=None, *, alpha=1.0, log_u=None, exact: bool = True, return_weights: bool = False):
    r"""Exact Fenchel-dual attention, called like ``torch.nn.functional.scaled_dot_product_attention``.

    "Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions", Eq. (7) and (9): with
    templates $t_i = \text{scale}\cdot k_i$, evidence $z = q$, preferences $u$ and
    reliability $\alpha$, the weights of a query are

    $$
    p_i(\lambda^*) = \frac{u_i e^{\langle t_i, \lambda^*\rangle}}{\sum_j u_j e^{\langle t_j, \lambda^*\rangle}},
    \qquad
    \lambda^* = \arg\max_\lambda\ \langle \lambda, \mu + z\rangle - \frac{\lVert\lambda\rVert^2}{2\alpha}
    - \log \sum_i u_i e^{\langle t_i, \lambda\rangle}
    $$

    ($\mu = \sum_i \bar u_i t_i$), and the output is $\sum_i p_i v_i$.  The paper's
    approximation (14) $\lambda^* \approx \alpha z$ gives (16), softmax attention
    $\text{softmax}(\alpha\,\text{scale}\,\langle q, k_i\rangle + \log u_i)$, which ``exact=False``
    computes (equal to ``scaled_dot_product_attention`` for ``alpha=1``).  The gradients of the exact
    form come from the implicit-function theorem on the first-order condition of (7) (no unrolling).

    Args:
        query: (..., L, E); any leading dimensions (batch, heads).
        key: (..., S, E).
        value: (..., S, Ev).
        attn_mask: broadcastable to (..., L, S).  As in ``scaled_dot_product_attention``: a bool mask is
            True where the query may attend; a floating mask is added to $\log u$.  Other dtypes
            raise ValueError.
        dropout_p: dropout probability on the weights (applied whenever > 0, as in SDPA).
        is_causal: the causal (lower triangular, top-left aligned) mask; then attn_mask must be None.
        scale: the template scale; default $1/\sqrt{E}$.
        alpha: keyword-only; $\alpha > 0$, a float or a tensor broadcastable to (..., L) (one
            reliability per query).
        log_u: keyword-only; log preferences $\log u$ broadcastable to (..., L, S) (need not be
            normalised; ``-inf`` excludes a key; a constant shift changes nothing).
        exact: keyword-only; False gives the approximation (16), softmax attention.
        return_weights: keyword-only; also return the weights $p$.

    Shape:
        - output: (..., L, Ev), in the dtype of the inputs (float16 and bfloat16 are computed in float32,
          also under ``torch.autocast``).
        - weights: (..., L, S).

    Returns:
        The output, or ``(output, weights)`` with ``return_weights=True``.  A query whose keys are all
        masked gets output 0 and weights 0, as in ``scaled_dot_product_attention``.  The exact form
        needs finite queries and keys (a non-finite one raises ValueError: the solver has no answer
        to give for it); ``exact=False`` lets a NaN through as softmax attention does.  Gradients are
        first order for the exact form (``create_graph=True`` through it raises RuntimeError: its
        implicit-function backward builds no graph).

    Example:
        >>> import torch
        >>> from attnlab.layers import fenchel_attention
        >>> q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8)
        >>> fenchel_attention(q, k, v, alpha=0.5).shape
        torch.Size([2, 4, 5, 8])
        >>> ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> bool(torch.allclose(fenchel_attention(q, k, v, is_causal=True, exact=False), ref, atol=1e-6))
        True
    """
    batch = check_qkv(query, key, value)
    if _autocast(query):                        # the solver's fused steps write into float32 buffers: no autocast
        with torch.autocast(query.device.type, enabled=False):
            return fenchel_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, alpha=alpha,
                                     log_u=log_u, exact=exact, return_weights=return_weights)
    dropout_p = check_dropout(dropout_p)
    if not isinstance(exact, bool):             # exact="no" was truthy
        raise ValueError(f"exact must be True or False; got {exact!r}")
    check_flag(return_weights, "return_weights")              # ("no" was truthy: a tuple came back)
    L, S = query.shape[-2], key.shape[-2]
    cdt, odt = compute_dtype(query, key, value)
    if query.device.type == "meta":             # shapes only (meta shape inference): no values to check or solve for
        out = torch.empty(*batch, L, value.shape[-1], dtype=odt, device="meta")
        return (out, torch.empty(*batch, L, S, dtype=odt, device="meta")) if return_weights else out
    query, key, value = query.to(cdt), key.to(cdt), value.to(cdt)
    mask = additive_mask(sdpa_mask(attn_mask, is_causal, L, S, query.device, batch=batch), cdt)
    if log_u is not None:
        if not torch.is_tensor(log_u) or not log_u.dtype.is_floating_point:
            raise ValueError(f"log_u must be a floating-point tensor; got "
                             f"{log_u.dtype if torch.is_tensor(log_u) else type(log_u).__name__}")
        _check_broadcast(log_u, (*batch, L, S), "log_u", "(..., L, S)")
        check_device(log_u, "log_u", query.device)
        log_u = log_u.to(cdt)
        # (a 0-d, (1,), (L, 1) log u, constant over the keys, crashed the exact form with torch's shape errors)
        log_u = with_key_dim(log_u, S)
        if bool((torch.isnan(log_u) | torch.isposinf(log_u)).any()):   # (NaN gave NaN weights and a warning)
            raise ValueError(f"log_u must hold finite numbers or -inf (which excludes a key); got "
                             f"{'nan' if bool(torch.isnan(log_u).any()) else '+inf'}")
        log_u = shift_rows(log_u)
    E = query.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else check_scale(scale)
    alpha = check_alpha(alpha, query)
    if alpha.dim():
        _check_broadcast(alpha, (*batch, L), "alpha", "(..., L) (one reliability per query)")
    if L == 0 or S == 0 or 0 in batch:         # no query, or no key to attend to: 0, as in SDPA
        out, p = empty_attention(query, key, value, odt, batch, (S,))
        return (out, p) if return_weights else out
    K = scale * key                                                   # templates, (..., S, E)
    # (the exact form only: exact=False lets a NaN through as softmax attention does, a NaN key as a NaN query)
    if exact and not _all_finite(K):           # an inf template (or scale * key overflowing) stalled the solver
        raise ValueError(f"scale * key must be finite (the templates t_i of Eq. (3)); got non-finite entries "
                         f"(key has {int((~torch.isfinite(key)).sum())} non-finite of {key.numel()}; scale = {scale:g})")
    if exact and not _all_finite((K * K).sum(-1)):
        # |t_i|^2 beyond the dtype's range (scale = 1e200 in float64): the continuation's step count met an
        # OverflowError (math.log10 of inf)
        raise ValueError(f"scale * key must have squared norms within {str(cdt).replace('torch.', '')}'s range (the "
                         f"templates t_i of Eq. (3)); got |t_i|^2 = inf (scale = {scale:g})")
    if exact and float(alpha.detach().min()) < 1 / torch.finfo(cdt).max:
        # the curvature 1/alpha of (7) enters the backward's solves: beyond the dtype's range it is no number
        raise ValueError(f"alpha must be at least 1/{torch.finfo(cdt).max:.4g} = {1 / torch.finfo(cdt).max:.4g} for "
                         f"the exact form in {str(cdt).replace('torch.', '')} (its reciprocal, the curvature of (7), "
                         f"must be finite); got {float(alpha.detach().min()):.4g}")
    if exact and not _all_finite(query):       # (a NaN query ran the whole Newton continuation, then warned)
        raise ValueError(f"query must be finite for the exact form (the evidence z of Eq. (3)); got "
                         f"{int((~torch.isfinite(query)).sum())} non-finite entries of {query.numel()}")
    lu = torch.zeros(1, S, dtype=cdt, device=query.device) if log_u is None else log_u
    if mask is not None:
        # log u and the mask, each shifted so that its largest entry is 0, and large finite entries
        # floored at half the dtype's range: their sum is exact where it matters and never overflows
        if log_u is not None:
            half = torch.finfo(cdt).min / 2
            lu = torch.where(torch.isneginf(lu), lu, lu.clamp_min(half))
            mask = torch.where(torch.isneginf(mask), mask, mask.clamp_min(half))
            lu = shift_rows(lu + mask)
        else:
            lu = mask
    if lu.dim() == 1:
        lu = lu.unsqueeze(0)                                          # (1, S): shared by all queries
    # a query whose keys are all masked attends to nothing: its output (and weights) are 0, as in
    # scaled_dot_product_attention; the solver sees an unmasked row in its place
    empty = torch.isneginf(lu).all(-1, keepdim=True)
    has_empty = bool(empty.any())
    if has_empty:
        lu = torch.where(empty, torch.zeros_like(lu), lu)
    if exact:
        # (values without features, Ev = 0: the weights need one column to go through the solver)
        v1 = value if value.shape[-1] else value.new_zeros(*value.shape[:-1], 1)
        out, p = _ExactAttention.apply(K, lu, query, alpha, v1)
        out = out if value.shape[-1] else out[..., :0]
    else:
        lam = alpha.unsqueeze(-1) * query if alpha.dim() else alpha * query
        p = torch.softmax(lu + lam @ K.transpose(-1, -2), -1)        # (16): p(alpha z), (..., L, S)
        out = p @ value
    if has_empty:                                                     # rows with every key masked: 0
        p = torch.where(empty, torch.zeros_like(p), p)
        out = torch.where(empty, torch.zeros_like(out), out)
    if dropout_p > 0:
        p = nn.functional.dropout(p, dropout_p)
        out = p @ value
    out = out.to(odt)
    return (out, p.to(odt)) if return_weights else out


def check_alpha(alpha, like: torch.Tensor) -> torch.Tensor:
    """alpha as a tensor of like's dtype and device; ValueError naming alpha unless finite and > 0."""
    if alpha is None or isinstance(alpha, (str, bytes, bool)):        # not numbers ('1' or True read as 1)
        raise ValueError(f"alpha must be a number > 0 or a tensor of them; got {alpha!r}")
    if isinstance(alpha, (int, float)):                                # the common case, tested in Python
        try:
            f = float(alpha)
        except OverflowError:                                          # an int beyond float64
            f = math.inf if alpha > 0 else -math.inf
        a = torch.tensor(f, dtype=like.dtype, device=like.device)
        v = float(a)                                                   # (as stored: 1e300 is inf in float32)
        if math.isfinite(v) and v > 0:
            return a
        raise ValueError(f"alpha must be finite and > 0 (the reliability of the evidence, Eq. (3)); got {[v]}")
    try:
        a = torch.as_tensor(alpha, dtype=like.dtype, device=like.device)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"alpha must be a number > 0 or a tensor of them; got {type(alpha).__name__}") from None
    if not bool(torch.isfinite(a).all()) or bool((a <= 0).any()):
        bad = a[~(torch.isfinite(a) & (a > 0))].flatten()[:3].tolist() if a.dim() else [float(a)]
        raise ValueError(f"alpha must be finite and > 0 (the reliability of the evidence, Eq. (3)); got {bad}")
    return a


def _check_broadcast(x, shape: tuple, name: str, what: str) -> None:
    """ValueError naming `name` unless the tensor x broadcasts to `shape` without growing it."""
    try:
        ok = broadcast_shapes(tuple(x.shape), tuple(shape)) == tuple(shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must broadcast to {what} = {tuple(shape)}; got shape {tuple(x.shape)}")


def inverse_softplus(x: float) -> float:
    """softplus^{-1}(x) = log(expm1(x)) = x + log(-expm1(-x)) (no overflow for large x)."""
    return x + math.log(-math.expm1(-x))


#: the smallest alpha a learned alpha (alpha_mode "head" or "query") takes: softplus underflows to 0
ALPHA_FLOOR = 1e-6


class FenchelMultiheadAttention(MultiheadAttentionBase):
    r"""Multi-head attention whose weights are the exact Fenchel-dual solution $p(\lambda^*)$.

    A drop-in for ``torch.nn.MultiheadAttention``: the same constructor, parameters (under the same
    names: a state dict moves either way), masks, and ``forward`` returning ``(output, weights)``.  It
    can be the ``self_attn`` / ``multihead_attn`` of ``nn.TransformerEncoderLayer`` and
    ``nn.TransformerDecoderLayer``.  Per head, the attention is :func:`fenchel_attention`
    ("Deciphering Attention Mechanisms", Eq. (7), (9)): templates $t_i = k_i/\sqrt{d_h}$, evidence
    $z = q$, and the weights

    $$
    p_i = \frac{u_i e^{\langle t_i, \lambda^*\rangle}}{\sum_j u_j e^{\langle t_j, \lambda^*\rangle}},\quad
    \lambda^* = \arg\max_\lambda \langle\lambda, \mu + z\rangle - \tfrac{1}{2\alpha}\lVert\lambda\rVert^2
    - \log\textstyle\sum_i u_i e^{\langle t_i,\lambda\rangle}.
    $$

    With ``exact=False`` (the paper's approximation (16), $\lambda^* \approx \alpha z$) and
    ``alpha=1`` it computes exactly what ``nn.MultiheadAttention`` computes.

    Args:
        embed_dim: total dimension E of the model (split across the heads).
        num_heads: number of heads H (E divisible by H).
        dropout: dropout probability on the attention weights (in training mode).
        bias: add biases to the input and output projections.
        add_bias_kv: not supported (must be False).
        add_zero_attn: not supported (must be False).
        kdim: features of key (default E).
        vdim: features of value (default E).
        batch_first: inputs and output are (N, L, E) if True, (L, N, E) if False (torch's default).
        device: as in torch.
        dtype: as in torch.
        alpha: keyword-only; the reliability $\alpha > 0$ of the evidence (Eq. (3)), or the
            initial value of a learned one.
        alpha_mode: keyword-only; ``"fixed"`` (alpha for every query), ``"head"`` (a learned alpha per
            head, softplus), ``"query"`` ($\alpha = \text{softplus}(w_h\cdot x_q + c_h)$ per head
            and query, initialised at alpha).  Learned alphas are floored at ``ALPHA_FLOOR``.
        exact: keyword-only; False gives the approximation (16), i.e. softmax attention.

    Shape:
        - query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
        - key: (N, S, kdim) / (S, N, kdim) / (S, kdim).  value: (N, S, vdim) / (S, N, vdim) / (S, vdim).
        - output: like query.  weights: (N, L, S), or (N, H, L, S) with ``average_attn_weights=False``.

    Example:
        >>> import torch
        >>> from attnlab.layers import FenchelMultiheadAttention
        >>> attn = FenchelMultiheadAttention(16, 4, batch_first=True, alpha=0.5)
        >>> x = torch.randn(2, 7, 16)
        >>> out, w = attn(x, x, x)
        >>> out.shape, w.shape
        (torch.Size([2, 7, 16]), torch.Size([2, 7, 7]))
        >>> layer = torch.nn.TransformerEncoderLayer(16, 4, batch_first=True)
        >>> layer.self_attn = FenchelMultiheadAttention(16, 4, batch_first=True)
        >>> layer(x).shape
        torch.Size([2, 7, 16])
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None, *,
                 alpha: float = 1.0, alpha_mode: str = "fixed", exact: bool = True):
        super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
                         batch_first, device, dtype)
        if alpha_mode not in ("fixed", "head", "query"):
            raise ValueError(f"alpha_mode must be one of fixed, head, query; got {alpha_mode!r}")
        if not isinstance(exact, bool):         # exact="False" was truthy: the exact form ran
            raise ValueError(f"exact must be True or False; got {exact!r}")
        self.alpha0 = check_positive(alpha, "alpha", " (the reliability of the evidence, Eq. (3))")
        dt = dtype or torch.get_default_dtype()
        if alpha_mode == "fixed":               # (held as a Python float, used in the attention's float32 or float64)
            dt = torch.promote_types(dt, torch.float32)
        # (to(): inf on overflow; on the CPU whatever the default device: under `with torch.device("meta")` a
        # meta tensor has no value to read)
        stored = float(torch.tensor(self.alpha0, dtype=torch.float64, device="cpu").to(dt))
        if not (math.isfinite(stored) and stored > 0):
            raise ValueError(f"alpha must be finite and > 0 in the layer's dtype {str(dt).replace('torch.', '')}; "
                             f"got {self.alpha0:g}, which it stores as {stored:g}")
        self.alpha_mode, self.exact = alpha_mode, exact
        if alpha_mode == "head":
            self.alpha_raw = nn.Parameter(torch.empty((num_heads,), device=device, dtype=dtype))
        elif alpha_mode == "query":
            self.alpha_proj = nn.Linear(embed_dim, num_heads, device=device, dtype=dtype)
        self._reset_alphas()

    def _reset_parameters(self):
        """As nn.MultiheadAttention's, and the learned alphas back to alpha (a module built on the meta device
        and materialised by to_empty kept uninitialised memory there)."""
        super()._reset_parameters()
        self._reset_alphas()

    def _reset_alphas(self):
        inv = inverse_softplus(self.alpha0) if hasattr(self, "alpha0") else None
        if inv is None:                             # (the base class resets before the alphas exist)
            return
        if getattr(self, "alpha_raw", None) is not None:
            nn.init.constant_(self.alpha_raw, inv)
        if getattr(self, "alpha_proj", None) is not None:
            nn.init.zeros_(self.alpha_proj.weight)
            nn.init.constant_(self.alpha_proj.bias, inv)

    def alphas(self, x):
        """alpha per (batch, head, query), broadcastable to (N, H, L); x the query input (N, L, E)."""
        if self.alpha_mode == "fixed":          # (in the dtype the attention computes in: float32 for a half module)
            return torch.tensor(self.alpha0, dtype=torch.promote_types(x.dtype, torch.float32), device=x.device)
        # softplus in the exact form (torch's drops e^-x above 20), in float32 at least and float64 for a
        # float64 module (a half-precision alpha would round the dual's scale)
        if self.alpha_mode == "head":
            raw = self.alpha_raw
            a = softplus(raw.to(torch.promote_types(raw.dtype, torch.float32))).view(1, -1, 1)
        else:
            raw = self.alpha_proj(x)
            a = softplus(raw.to(torch.promote_types(raw.dtype, torch.float32))).transpose(1, 2)   # (N, H, L)
        return a.clamp_min(ALPHA_FLOOR)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False, *, log_u=None, alpha=None):
        r"""Attention of query to key/value, as ``nn.MultiheadAttention.forward``.

        Args:
            query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
            key: (N, S, kdim), (S, N, kdim) or (S, kdim).
            value: (N, S, vdim), (S, N, vdim) or (S, vdim).
            key_padding_mask: (N, S); bool True marks padding (ignored keys); a float mask is added.
            need_weights: also return the attention weights $p(\lambda^*)$ (else None).
            attn_mask: (L, S) or (N * num_heads, L, S); bool True = not allowed; a float mask is added
                to $\log u$.
            average_attn_weights: average the returned weights over the heads.
            is_causal: hint that attn_mask is causal; without attn_mask the causal mask is built.
            log_u: keyword-only; log preferences broadcastable to (N, H, L, S) (default uniform).
            alpha: keyword-only; overrides the module's alpha, broadcastable to (N, H, L).

        Returns:
            ``(output, weights)``: output like query; weights (N, L, S) (or (N, H, L, S) with
            ``average_attn_weights=False``), None when ``need_weights=False``.
        """
        return super().forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                               is_causal, log_u=log_u, alpha=alpha)

    def _attend(self, q, k, v, mask, query, need_weights, log_u=None, alpha=None):
        a = self.alphas(query) if alpha is None else alpha
        return fenchel_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
                                 alpha=a, log_u=log_u, exact=self.exact, return_weights=True)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", alpha={self.alpha0}, alpha_mode={self.alpha_mode!r}, exact={self.exact}"


class FenchelAttention(FenchelMultiheadAttention):
    """Deprecated: :class:`FenchelMultiheadAttention` with the old calling convention
    ``forward(x, context=None, log_u=None, attn_mask=None, alpha=None, return_weights=False)`` (batch
    first, attn_mask True = attend, one output).  Will be removed in the next release."""

    def __init__(self, embed_dim: int, num_heads: int = 1, alpha: float = 1.0, alpha_mode: str = "fixed",
                 bias: bool = True, exact: bool = True):
        deprecated("FenchelAttention", "FenchelMultiheadAttention(embed_dim, num_heads, batch_first=True, "
                   "alpha=..., alpha_mode=...)")
        super().__init__(embed_dim, num_heads, bias=bias, batch_first=True, alpha=alpha, alpha_mode=alpha_mode,
                         exact=exact)

    def forward(self, x, context=None, log_u=None, attn_mask=None, alpha=None, return_weights: bool = False):
        ctx = x if context is None else context
        mask = additive_mask(check_mask(attn_mask, "attn_mask"), compute_dtype(x)[0])
        if mask is not None:
            log_u = mask if log_u is None else log_u + mask
        y, p = super().forward(x, ctx, ctx, need_weights=return_weights, average_attn_weights=False,
                               log_u=log_u, alpha=alpha)
        return (y, p) if return_weights else y
