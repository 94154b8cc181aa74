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
    return torch.exp(-z * (t[None, :] - s[:, None]) ** 2)


def laplace_kernel(t, inducing, scale: float) -> torch.Tensor:
    """Exponential (Laplace) kernel [I, G]: exp(-|t - t_i|/scale), as in the released code."""
    sc = _pos(scale, "scale")
    t = _as_t(t)
    s = _as_t(inducing, t).to(dtype=t.dtype, device=t.device)
    if t.ndim != 1 or s.ndim != 1:
        raise ValueError("t and inducing must be 1-D tensors")
    return torch.exp(-(t[None, :] - s[:, None]).abs() / sc)


def kernel_expansion(gamma: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """f[..., G] = gamma[..., I] @ K[I, G]: the RKHS function f = sum_i gamma_i k(., t_i)."""
    gamma = _as_t(gamma, K)
    if gamma.shape[-1] != K.shape[0]:
        raise ValueError(f"gamma's last dim ({gamma.shape[-1]}) must equal the number of inducing "
                         f"points ({K.shape[0]})")
    return gamma @ K


def rkhs_norm(gamma, inducing, zeta2: float) -> torch.Tensor:
    """||f||_H = sqrt(gamma^T K gamma), K_ij = k(t_i, t_j) (Gaussian kernel)."""
    s = _as_t(inducing)
    K = gaussian_kernel(s, s, zeta2)
    g = _as_t(gamma, K)
    return torch.sqrt(torch.clamp((g @ K * g).sum(-1), min=0.0))


def mp_kernel_expansion(gamma, inducing, zeta2):
    """mpmath callable f(t) = sum_i gamma_i exp(-zeta2 (t - t_i)^2); t may be complex."""
    import mpmath as mp

    g = [mp.mpf(float(x)) for x in gamma]
    s = [mp.mpf(float(x)) for x in inducing]
    z = mp.mpf(zeta2)
    return lambda t: mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(g, s))
