"""Kernels and kernel expansions f(t) = sum_i gamma_i k(t, t_i) (Kernel Multimodal Continuous
Attention, Sec. 5, Eq. 8), in torch (batched, differentiable) and in mpmath (references).

    gaussian_kernel(t, inducing, zeta2)    K[i, g] = exp(-zeta2 (t_g - t_i)^2)   (the theory's kernel)
    laplace_kernel(t, inducing, scale)     K[i, g] = exp(-|t_g - t_i| / scale)   (the released code's)
    kernel_expansion(gamma, K)             f[..., g] = sum_i gamma[..., i] K[i, g]
    rkhs_norm(gamma, inducing, zeta2)      ||f||_H = sqrt(gamma^T K gamma) for the Gaussian kernel
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


def rkhs_norm(gamma, inducing, zeta2: float) -> torch.Tensor:
    """||f||_H = sqrt(gamma^T K gamma), K_ij = k(t_i, t_j) (Gaussian kernel)."""
    g = _as_t(gamma)
    s = _as_t(inducing, g).to(g.dtype if g.is_floating_point() else torch.float64)     # K in gamma's dtype
    K = gaussian_kernel(s, s, zeta2)
    g = g.to(K.dtype)
    return torch.sqrt(torch.clamp((g @ K * g).sum(-1), min=0.0))


def mp_kernel_expansion(gamma, inducing, zeta2):
    """mpmath callable f(t) = sum_i gamma_i exp(-zeta2 (t - t_i)^2); t may be complex."""
    import mpmath as mp

    g = [mp.mpf(float(x)) for x in gamma]
    s = [mp.mpf(float(x)) for x in inducing]
    z = mp.mpf(zeta2)
    return lambda t: mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(g, s))
