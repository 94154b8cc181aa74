"""Kernels and kernel expansions f(t) = sum_i gamma_i k(t, t_i) (Kernel Multimodal Continuous
Attention, Sec. 5, Eq. 8), in torch (batched, differentiable) and in mpmath (references).

    gaussian_kernel(t, inducing, zeta2)    K[i, g] = exp(-zeta2 (t_g - t_i)^2)   (the theory's kernel)
    laplace_kernel(t, inducing, scale)     K[i, g] = exp(-|t_g - t_i| / scale)   (the released code's)
    kernel_expansion(gamma, K)             f[..., g] = sum_i gamma[..., i] K[i, g]
    rkhs_norm(gamma, inducing, zeta2)      ||f||_H = sqrt(gamma^T K gamma) for the Gaussian kernel, summed
                                           through 1 - K (no cancellation near K's null space; refused where
                                           its rounding bound reaches sqrt(eps) of the norm)
    mp_kernel_expansion(gamma, inducing, zeta2) -> callable mpmath f(t) (real or complex t)
"""
from __future__ import annotations

import math

import torch

__all__ = ["gaussian_kernel", "laplace_kernel", "kernel_expansion", "rkhs_norm",
           "mp_kernel_expansion"]


def _pos(x, name):
    v = float(x)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {x!r}")
    return v


def _beyond(scale: float, x: torch.Tensor) -> bool:
    """Whether `x`'s floating dtype cannot hold the factor `scale` (or its inverse): the kernel is then formed in
    float64 and rounded back, so that k(t, t) = 1 stays 1 (float32 turned 0 * inf into NaN there)."""
    if not x.is_floating_point() or x.dtype == torch.float64:
        return False
    fi = torch.finfo(x.dtype)
    return not (fi.tiny <= scale <= fi.max and fi.tiny <= 1.0 / scale <= fi.max)


def _as_t(x, ref=None):
    if isinstance(x, torch.Tensor):
        return x
    dt = ref.dtype if isinstance(ref, torch.Tensor) else torch.float64
    dev = ref.device if isinstance(ref, torch.Tensor) else None
    return torch.as_tensor(x, dtype=dt, device=dev)


def gaussian_kernel(t, inducing, zeta2: float) -> torch.Tensor:
    """Gaussian kernel matrix [I, G]: k(t, t_i) = exp(-zeta2 (t - t_i)^2) (Cor E.3, IMDB)."""
    z = _pos(zeta2, "zeta2")
    t = _as_t(t)
    s = _as_t(inducing, t).to(dtype=t.dtype, device=t.device)
    if t.ndim != 1 or s.ndim != 1:
        raise ValueError("t and inducing must be 1-D tensors")
    d = t[None, :] - s[:, None]
    if _beyond(z, d):            # float32 cannot hold zeta2 (a bandwidth below ~4e-20): 0 * inf on the diagonal
        return torch.exp(-z * d.double() ** 2).to(d.dtype)
    return torch.exp(-z * d ** 2)


def laplace_kernel(t, inducing, scale: float) -> torch.Tensor:
    """Exponential (Laplace) kernel [I, G]: exp(-|t - t_i|/scale), as in the released code."""
    sc = _pos(scale, "scale")
    t = _as_t(t)
    s = _as_t(inducing, t).to(dtype=t.dtype, device=t.device)
    if t.ndim != 1 or s.ndim != 1:
        raise ValueError("t and inducing must be 1-D tensors")
    d = (t[None, :] - s[:, None]).abs()
    if _beyond(1.0 / sc, d):      # a scale float32 rounds to 0 (below ~1e-45): 0 / 0 on the diagonal
        return torch.exp(-d.double() / sc).to(d.dtype)
    return torch.exp(-d / sc)


def kernel_expansion(gamma: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """f[..., G] = gamma[..., I] @ K[I, G]: the RKHS function f = sum_i gamma_i k(., t_i)."""
    gamma = _as_t(gamma, K)
    if gamma.shape[-1] != K.shape[0]:
        raise ValueError(f"gamma's last dim ({gamma.shape[-1]}) must equal the number of inducing "
                         f"points ({K.shape[0]})")
    if gamma.dtype != K.dtype:                 # (torch's own matmul error named neither)
        raise ValueError(f"gamma ({gamma.dtype}) and K ({K.dtype}) must share one dtype")
    return gamma @ K


def _compensated_sum(x):
    """sum over the last dim, Neumaier's compensated summation: within eps |sum| + 2 (I eps)^2 sum |x| (Higham,
    Accuracy and Stability of Numerical Algorithms, Sec. 4.3), where a plain sum is within I eps sum |x| only."""
    s = x[..., 0]
    c = torch.zeros_like(s)
    for i in range(1, x.shape[-1]):
        xi = x[..., i]
        t = s + xi
        c = c + torch.where(s.abs() >= xi.abs(), (s - t) + xi, (xi - t) + s)
        s = t
    return s + c


def rkhs_norm(gamma, inducing, zeta2: float) -> torch.Tensor:
    """||f||_H = sqrt(gamma^T K gamma), K_ij = k(t_i, t_j) (Gaussian kernel), batched over gamma's leading dims;
    returned in gamma's dtype, computed in float64 (but on MPS, which has none).  Summed as
    S^2 - sum_ij gamma_i gamma_j d_ij, S = sum_i gamma_i (compensated), d_ij = 1 - K_ij = -expm1(-zeta2 (t_i - t_j)^2)
    (a few ulps however close t_i and t_j): gamma^T K gamma itself cancels where gamma lies near K's null space (it
    gave 0 for 1.4e-9 at gamma = (1, -1), t = (0, 1e-9)).  That form's rounding is bounded by
    (2 I + 8) eps sum |gamma_i gamma_j| d_ij + 4 eps S^2 + 4 (I eps)^2 |S| |gamma|_1 + 4 (I eps)^4 |gamma|_1^2;
    where gamma^T K gamma summed as written has the smaller bound, (2 I + 8) eps |gamma|^T K |gamma| (inducing
    points far apart), it is used.  A norm whose relative error the bound does not keep below sqrt(eps) = 1.5e-8 is
    refused (gamma cancelling to second order: the second difference (1, -2, 1) at points 1e-4 apart, zeta2 = 1).
    Against mpmath (50 digits), 400 random gamma (half of them summing to 0) on points 1e-10 to 10 apart, zeta2 in
    [0.01, 100]: none refused, within 5e-13 relative (the difference form's rounding at clusters of points)."""
    z = _pos(zeta2, "zeta2")
    g = _as_t(gamma)
    s = _as_t(inducing, g).to(g.dtype if g.is_floating_point() else torch.float64)     # the result in gamma's dtype
    if s.ndim != 1:
        raise ValueError(f"inducing must be a 1-D tensor; got shape {tuple(s.shape)}")
    if g.ndim < 1 or g.shape[-1] != s.shape[0] or s.shape[0] == 0:
        raise ValueError(f"gamma's last dim must equal the number of inducing points ({s.shape[0]}), at least 1; "
                         f"got shape {tuple(g.shape)}")
    if not bool(torch.all(torch.isfinite(g))):
        raise ValueError("gamma must be finite (no NaN/inf)")
    wd = s.dtype if s.device.type == "mps" else torch.float64
    gw, sw = g.to(device=s.device, dtype=wd), s.to(wd)
    d = sw[None, :] - sw[:, None]
    x = (z * d.double() ** 2).to(d.dtype) if _beyond(z, d) else z * d ** 2     # (as gaussian_kernel)
    D, K = -torch.expm1(-x), torch.exp(-x)
    total = _compensated_sum(gw)
    q_near = total * total - (gw @ D * gw).sum(-1)
    q_far = (gw @ K * gw).sum(-1)
    with torch.no_grad():
        eps, n = torch.finfo(wd).eps, s.shape[0]
        a, st = gw.abs(), total.detach().abs()
        l1 = a.sum(-1)
        b_near = ((2 * n + 8) * eps * (a @ D * a).sum(-1) + 4 * eps * st * st
                  + 4 * (n * eps) ** 2 * st * l1 + 4 * (n * eps) ** 4 * l1 * l1)
        # gamma^T K gamma as written where its own bound is the smaller (inducing points far apart: S^2 and the
        # d-sum then cancel instead)
        b_far = (2 * n + 8) * eps * (a @ K * a).sum(-1)
        far = b_far < b_near
        bound = torch.where(far, b_far, b_near)
    q = torch.where(far, q_far, q_near)
    with torch.no_grad():
        # sqrt(q) is off by about bound / (2 q): refused beyond sqrt(eps) (a q < 0 is rounding only)
        bad = bound > 2 * eps ** 0.5 * q.detach()
        if bool(bad.any()):
            k = int(bad.flatten().nonzero()[0])
            raise ValueError(f"gamma lies in the kernel matrix's near-null space: gamma^T K gamma = "
                             f"{float(q.detach().flatten()[k]):.3g} has a rounding bound of "
                             f"{float(bound.flatten()[k]):.2g}, above 2 sqrt(eps) of it (inducing points closer "
                             f"than zeta2 resolves: merge them, or give a gamma that does not cancel on them)")
    return torch.sqrt(torch.clamp(q, min=0.0)).to(s.dtype)


def mp_kernel_expansion(gamma, inducing, zeta2):
    """mpmath callable f(t) = sum_i gamma_i exp(-zeta2 (t - t_i)^2); t may be complex."""
    import mpmath as mp

    g = [mp.mpf(float(x)) for x in gamma]
    s = [mp.mpf(float(x)) for x in inducing]
    z = mp.mpf(zeta2)
    return lambda t: mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(g, s))
