"""Torch continuous-attention layers of the kernel paper's experiments (Moreno et al., NeurIPS 2022).

The attention mechanism has three parts (paper Sec. 3, Eq. 1, Algorithm 1):

1. a value function V(t; B) = B Psi(t) with Gaussian RBF basis Psi and B fitted by ridge regression
   B = H F^T (F F^T + lambda I)^{-1} (Eq. 6, App. F) -- :class:`GaussianBasis`, :func:`ridge_value_coefficients`;
2. an attention density p on S = [0, 1]: continuous softmax (Gaussian), continuous sparsemax
   (truncated parabola), Gaussian mixture (App. A), kernel softmax (kernel exponential family, Eq. 8)
   or kernel sparsemax (kernel deformed exponential family, Sec. 5.2, alpha = 2 by default);
3. the context c = E_p[V(T)] = B E_p[Psi(T)] (Eq. 1, Algorithm 1 step 3).

The densities, normalisers and expectations come from :mod:`attnlab.experiments.models.kernel_math`, a thin
adapter over the paper-agnostic math; this module only wires them into ``nn.Module`` layers with the shapes the experiments need:
batch b, heads H, inducing points I, basis functions N, grid points G, value dimension D.

Convention for the deformed (sparsemax) kernel family (spec Sec. 1.5): the density is
p ∝ exp_{2-alpha}(f̃ - max_grid f̃) q0, i.e. the max-shift is applied before the deformed exponential
(as in the paper's App. E.1 recipe and the released code), so the support is
{t : f̃(t) > max f̃ - 1/(alpha-1)}.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attnlab.experiments.models import kernel_math as nca

ATTENTIONS = ("discrete_softmax", "cts_softmax", "cts_sparsemax", "gaussian_mixture",
              "kernel_softmax", "kernel_sparsemax")
KERNELS = ("gaussian", "laplace")
BASES = ("none", "gaussian", "parabola")


def _check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")


# --------------------------------------------------------------------------- value function
class GaussianBasis(nn.Module):
    """N Gaussian RBF pdfs psi_n(t) = N(t; mu_n, sigma_n^2): N // len(sigmas) centres linspace(0, 1)
    for each width (as in Martins et al.'s and the kernel paper's code).  Fixed, not trained."""

    def __init__(self, n_basis: int, sigmas=(0.1, 0.5)):
        super().__init__()
        if int(n_basis) < len(sigmas) or len(sigmas) == 0:
            raise ValueError(f"n_basis must be >= len(sigmas) = {len(sigmas)} >= 1; got {n_basis}")
        per = int(n_basis) // len(sigmas)
        mu = torch.cat([torch.linspace(0.0, 1.0, per) for _ in sigmas])
        sd = torch.cat([torch.full((per,), float(s)) for s in sigmas])
        self.register_buffer("mu", mu)
        self.register_buffer("sigma", sd)

    @property
    def n(self) -> int:
        return int(self.mu.numel())

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        """Psi at times t [..., L] -> [..., N, L]."""
        return nca.gaussian_rbf(t, self.mu, self.sigma)


def ridge_value_coefficients(h: torch.Tensor, t: torch.Tensor, basis: GaussianBasis, lam: float,
                             mask: torch.Tensor | None = None) -> torch.Tensor:
    """B = H F^T (F F^T + lam I)^{-1} (paper Eq. 6) for observations h [b, D, L] at times t ([L] shared,
    or [b, L] per series); `mask` [b, L] (1 = observed) drops padded/unobserved positions.
    Returns B [b, D, N]."""
    if lam <= 0:
        raise ValueError(f"lam (ridge penalty) must be > 0; got {lam}")
    if t.dim() == 1 and mask is None:                       # shared positions: numerics' Eq. 6 directly
        return nca.ca.ridge_value_coefficients(h, t.to(h.dtype), basis.mu, basis.sigma, lam)
    F = basis(t)                                            # [N, L] or [b, N, L]
    if F.dim() == 2:
        F = F.unsqueeze(0).expand(h.shape[0], -1, -1)
    if mask is not None:
        F = F * mask.unsqueeze(1).to(F.dtype)
        h = h * mask.unsqueeze(1).to(h.dtype)
    return nca.ridge_coefficients(h, F, lam)


# --------------------------------------------------------------------------- the attention layer
class ContinuousAttention(nn.Module):
    """E_p[Psi] for one of the paper's attention densities, on a G-point grid on [0, 1].

    Forward arguments (each [b, H] or [b, H, ·]) depend on ``kind``:
      - cts_softmax / cts_sparsemax: mu, sigma2 (closed forms on R, as in Martins et al.);
      - gaussian_mixture: weights_logits [b,H,K], mu [b,H,K], sigma2 [b,H,K] (closed form);
      - kernel_softmax / kernel_sparsemax: gamma [b,H,I] kernel weights at inducing points
        linspace(0,1,I), plus mu, sigma2 when ``base`` is 'gaussian' or 'parabola' (learned base density q0).
    Returns r = E_p[psi_n] [b, H, N]; :meth:`density` returns p on the grid [b, H, G] (kernel/grid kinds).
    """

    def __init__(self, kind: str, basis: GaussianBasis, grid_size: int = 100, n_inducing: int = 0,
                 kernel: str = "gaussian", bandwidth: float = 0.05, alpha: float = 2.0, base: str = "none"):
        super().__init__()
        _check_choice("kind", kind, ATTENTIONS[1:])
        _check_choice("kernel", kernel, KERNELS)
        _check_choice("base", base, BASES)
        if kind == "kernel_softmax" and base == "parabola":
            raise ValueError("base 'parabola' is for kernel_sparsemax; kernel_softmax takes 'none' or 'gaussian'")
        if kind.startswith("kernel") and int(n_inducing) < 1:
            raise ValueError(f"n_inducing must be >= 1 for {kind}; got {n_inducing}")
        if int(grid_size) < 2:
            raise ValueError(f"grid_size must be >= 2; got {grid_size}")
        if not (1.0 < alpha <= 2.0):
            raise ValueError(f"alpha must be in (1, 2]; got {alpha}")
        if bandwidth <= 0:
            raise ValueError(f"bandwidth must be > 0; got {bandwidth}")
        self.kind, self.kernel, self.base = kind, kernel, base
        self.alpha, self.bandwidth = float(alpha), float(bandwidth)
        self.basis = basis
        grid = torch.linspace(0.0, 1.0, int(grid_size))
        self.register_buffer("grid", grid)
        self.register_buffer("psi_grid", basis(grid))                    # [N, G]
        if kind.startswith("kernel"):
            ind = torch.linspace(0.0, 1.0, int(n_inducing))
            self.register_buffer("K", nca.kernel_matrix(ind, grid, kernel, bandwidth))  # [I, G]
        else:
            self.register_buffer("K", torch.zeros(0))

    def density(self, gamma=None, mu=None, sigma2=None, weights_logits=None) -> torch.Tensor:
        """p on the grid [b, H, G] (normalised by the trapezoid rule on [0, 1])."""
        if self.kind.startswith("kernel"):
            f = gamma @ self.K                                              # [b, H, G]
            base = None if self.base == "none" else self.base
            return nca.kernel_density_on_grid(f, self.grid, self.kind_name(), self.alpha, base, mu, sigma2)
        return nca.unimodal_density_on_grid(self.grid, self.kind, mu, sigma2, weights_logits)

    def kind_name(self) -> str:
        return "softmax" if self.kind == "kernel_softmax" else "sparsemax"

    def forward(self, gamma=None, mu=None, sigma2=None, weights_logits=None) -> torch.Tensor:
        if self.kind.startswith("kernel"):
            p = self.density(gamma, mu, sigma2)
            return nca.expectation_on_grid(p, self.psi_grid, self.grid)      # [b, H, N]
        if self.kind == "cts_softmax":
            return nca.gaussian_expected_rbf(mu, sigma2, self.basis.mu, self.basis.sigma)
        if self.kind == "cts_sparsemax":
            return nca.parabola_expected_rbf(mu, sigma2, self.basis.mu, self.basis.sigma)
        return nca.mixture_expected_rbf(torch.softmax(weights_logits, -1), mu, sigma2,
                                        self.basis.mu, self.basis.sigma)


def moments_from_discrete(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """mu = E_p[T], sigma^2 = Var_p[T] for discrete attention p [..., L] over positions linspace(0,1,L)
    (the unimodal baselines' encoder, Martins et al. / paper App. I).  sigma^2 is floored at 1e-4
    so that a collapsed discrete attention still gives a proper density."""
    L = p.shape[-1]
    pos = torch.linspace(0.0, 1.0, L, device=p.device, dtype=p.dtype)
    mu = (p * pos).sum(-1)
    var = (p * pos ** 2).sum(-1) - mu ** 2
    return mu, var.clamp_min(1e-4)
