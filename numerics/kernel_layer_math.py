"""Adapter between the kernel paper's torch layers and the paper-agnostic math of
:mod:`attnlab.numerics.continuous_attention`, :mod:`attnlab.numerics.kernel_family` and :mod:`attnlab.numerics.quadrature`
(the one copy of the math).  It only fixes argument conventions for the layers:

- kernels are named ('gaussian' | 'laplace') with a bandwidth sigma_k: the Gaussian kernel
  exp(-(t-s)^2 / (2 sigma_k^2)) is numerics' exp(-zeta2 (t-s)^2) with zeta2 = 1/(2 sigma_k^2);
- per-series observation times (irregular sampling, variable-length sentences) need a batched,
  masked ridge fit of Eq. 6, which numerics offers only for shared positions: that variant is here;
- kernel densities with a learned base density q0 apply the max shift of App. E.1 over the grid
  points where q0 >= 1e-3 max q0 (so the deformed map never puts its support only where q0 vanishes,
  which would give Z ~ 0 and NaN gradients);
- learned base densities are passed to numerics unnormalised (the trapezoid Z absorbs the constant).

Shapes: b batch, H heads, I inducing points, N basis functions, G grid points, D value dim, K components.
Equation numbers refer to Moreno et al., "Kernel Multimodal Continuous Attention" (NeurIPS 2022).
"""
from __future__ import annotations

import torch

from attnlab.numerics import continuous_attention as ca
from attnlab.numerics import kernel_family as kf
from attnlab.numerics.quadrature import trapezoid, trapezoid_weights  # noqa: F401  (re-exported for the layers)


def gaussian_rbf(t: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """psi_n(t) = N(t; mu_n, sigma_n^2) at t [L] -> [N, L], or at per-series t [b, L] -> [b, N, L]."""
    if t.dim() == 1:
        return ca.gaussian_rbf(t, mu.to(t.dtype), sigma.to(t.dtype))
    flat = ca.gaussian_rbf(t.reshape(-1), mu.to(t.dtype), sigma.to(t.dtype))      # [N, b*L]
    return flat.view(-1, *t.shape).transpose(0, 1)


def ridge_coefficients(h: torch.Tensor, F: torch.Tensor, lam: float) -> torch.Tensor:
    """Eq. 6 with per-series design matrices: B = H F^T (F F^T + lam I)^{-1} for H [b, D, L],
    F [b, N, L] (masked columns zeroed by the caller) -> B [b, D, N].  (Shared positions: use
    attnlab.numerics.continuous_attention.ridge_value_coefficients.)"""
    N = F.shape[-2]
    A = F @ F.transpose(-1, -2) + lam * torch.eye(N, dtype=F.dtype, device=F.device)
    return torch.linalg.solve(A, F @ h.transpose(-1, -2)).transpose(-1, -2)


def kernel_matrix(inducing: torch.Tensor, grid: torch.Tensor, kernel: str, bandwidth: float) -> torch.Tensor:
    """K [I, G] = k(t_i, t_g): Gaussian (the paper's theory and IMDB) or Laplace (released code)."""
    if kernel == "gaussian":
        return kf.gaussian_kernel(grid, inducing, 1.0 / (2.0 * bandwidth ** 2))
    if kernel == "laplace":
        return kf.laplace_kernel(grid, inducing, bandwidth)
    raise ValueError(f"kernel must be 'gaussian' or 'laplace'; got {kernel!r}")


def base_density(grid, mu, sigma2, base: str, log: bool = False) -> torch.Tensor:
    """A learned base density q0 on the grid [..., G], unnormalised (max 1 for 'gaussian'):
    'gaussian' N(mu, sigma2) (log-domain available) or 'parabola', the continuous-sparsemax truncated
    parabola (only as a density: it vanishes off its support, and log 0 has no usable gradient)."""
    if base == "gaussian":
        lq = -0.5 * (grid - mu.unsqueeze(-1)) ** 2 / sigma2.unsqueeze(-1)
        return lq if log else torch.exp(lq - lq.amax(-1, keepdim=True).detach())
    if base == "parabola":
        if log:
            raise ValueError("base 'parabola' has no log form here (it vanishes off its support); "
                             "use it with the sparsemax family")
        return ca.truncated_parabola_density(grid, mu, sigma2)
    raise ValueError(f"base must be 'gaussian' or 'parabola'; got {base!r}")


def kernel_density_on_grid(f: torch.Tensor, grid: torch.Tensor, family: str, alpha: float = 2.0,
                           base: str | None = None, mu=None, sigma2=None) -> torch.Tensor:
    """Kernel family density (w.r.t. Lebesgue on the grid, q0 included), Algorithm 1 step 1:
    softmax: q0 exp(f - A(f)) (Eq. 8); sparsemax: q0 exp_{2-alpha}(f - max f) / Z (App. E.1 max shift,
    the released code's convention), with the max taken where q0 >= 1e-3 max q0.
    `base` None means q0 = 1 (uniform on the grid's interval)."""
    if family == "softmax":
        log_q0 = None if base is None else base_density(grid, mu, sigma2, base, log=True)
        return ca.kernel_softmax(f, grid, log_q0)[0]
    if family != "sparsemax":
        raise ValueError(f"family must be 'softmax' or 'sparsemax'; got {family!r}")
    if base is None:
        return ca.kernel_deformed_max_shift(f, grid, alpha)[0]
    q0 = base_density(grid, mu, sigma2, base)
    # shift by the max of f where q0 is not negligible: where q0 underflows (or is tiny) the shifted
    # exp_{2-alpha} could put all its mass, making Z ~ 0 and the backward pass inf * 0 = NaN
    keep = q0 >= 1e-3 * q0.amax(-1, keepdim=True).detach()
    fmax = f.masked_fill(~keep, float("-inf")).amax(-1, keepdim=True)
    return ca.kernel_deformed(f - fmax, grid, alpha, q0)[0]


def expectation_on_grid(p: torch.Tensor, values: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """E_p[psi_n] by the trapezoid rule, p [..., G], values [N, G] -> [..., N] (Algorithm 1 step 2)."""
    return ca.expected_basis(p, grid, values)


def gaussian_expected_rbf(mu, sigma2, mu_n, sigma_n) -> torch.Tensor:
    """Continuous softmax on R: E_p[psi_n] = N(mu; mu_n, sigma^2 + sigma_n^2)."""
    return ca.gaussian_rbf_expectation(mu, sigma2, mu_n, sigma_n)


def parabola_expected_rbf(mu, sigma2, mu_n, sigma_n) -> torch.Tensor:
    """Continuous sparsemax (truncated parabola) on R: closed-form E_p[psi_n]."""
    return ca.truncated_parabola_rbf_expectation(mu, sigma2, mu_n, sigma_n)


def mixture_expected_rbf(weights, mu, sigma2, mu_n, sigma_n) -> torch.Tensor:
    """Gaussian mixture on R (App. A): E_p[psi_n] = sum_k pi_k N(mu_k; mu_n, sigma_k^2 + sigma_n^2)."""
    return ca.gaussian_mixture_rbf_expectation(weights, mu, sigma2, mu_n, sigma_n)


def unimodal_density_on_grid(grid, kind: str, mu, sigma2, weights_logits=None) -> torch.Tensor:
    """p on the grid [..., G] for the closed-form kinds (on R, evaluated on the grid; for plots)."""
    if kind == "cts_softmax":
        return ca.gaussian_density(grid, mu, sigma2)
    if kind == "cts_sparsemax":
        return ca.truncated_parabola_density(grid, mu, sigma2)
    if kind == "gaussian_mixture":
        return ca.gaussian_mixture_density(grid, torch.softmax(weights_logits, -1), mu, sigma2)
    raise ValueError(f"kind must be cts_softmax, cts_sparsemax or gaussian_mixture; got {kind!r}")
