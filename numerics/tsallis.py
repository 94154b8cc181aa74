"""The alpha-Tsallis negative entropy, its gradient and its Bregman divergence on a 1-D grid.

Kernel Multimodal Continuous Attention (Moreno et al., NeurIPS 2022), Sec. 3 (Omega_alpha, the
regularizer of Eq. 2 whose solution is Eq. 4) and App. D (Eq. 15, Eq. 16, Lemma D.5):

    Omega_alpha(p)        = (int_S p^alpha dQ - 1) / (alpha (alpha - 1))            (alpha != 1)
    grad Omega_alpha(p)   = p^{alpha - 1} / (alpha - 1)                                (Eq. 16)
    B_Omega(p, q)         = Omega(p) - Omega(q) - <grad Omega(q), p - q>_{L2(Q)}       (Eq. 15)

Densities are given on a grid t w.r.t. Q, with the base density q0 (None: q0 = 1, Lebesgue on
[a, b]) entering only through dQ = q0 dt; integrals are the trapezoid rule of
attnlab.numerics.quadrature.  Batched over leading dims, differentiable.

    tsallis_negentropy(p, t, alpha, q0=None)   [...]
    tsallis_gradient(p, alpha)                 [..., G]
    tsallis_bregman(p, q, t, alpha, q0=None)   [...]
"""
from __future__ import annotations

import torch

from attnlab.numerics.deformed_exp import check_alpha
from attnlab.numerics.quadrature import trapezoid

__all__ = ["tsallis_negentropy", "tsallis_gradient", "tsallis_bregman"]


def _density(p, name: str = "p") -> torch.Tensor:
    """p as a tensor (a list or a numpy array taken as float64, as numerics.deformed_exp takes them; torch.any of
    an array raised a TypeError), refused in one line unless >= 0 everywhere (NaN too): the negentropy refused a
    p < 0 while the gradient returned NaN for it."""
    p = p if isinstance(p, torch.Tensor) else torch.as_tensor(p, dtype=torch.float64)
    if not bool(torch.all(p >= 0)):
        raise ValueError(f"{name} (density on the grid) must be >= 0 everywhere (no NaN)")
    return p


def _dQ(y, q0):
    """y q0 (dQ = q0 dt); q0 refused as a density is (a negative q0 gave Omega = -2.67, a NaN one NaN)."""
    return y if q0 is None else y * _density(q0, "q0").to(dtype=y.dtype, device=y.device)


def tsallis_negentropy(p, t, alpha: float, q0=None) -> torch.Tensor:
    """Omega_alpha(p) = (int p^alpha dQ - 1)/(alpha (alpha - 1)) for p >= 0 on the grid t (p a tensor; array-likes
    as float64)."""
    a = check_alpha(alpha)
    p = _density(p)
    return (trapezoid(_dQ(p ** a, q0), t) - 1.0) / (a * (a - 1.0))


def tsallis_gradient(p, alpha: float) -> torch.Tensor:
    """Eq. 16: grad Omega_alpha(p)(t) = p(t)^{alpha - 1}/(alpha - 1), for p >= 0 (a tensor; array-likes as float64)."""
    a = check_alpha(alpha)
    p = _density(p)
    return p ** (a - 1.0) / (a - 1.0)


def tsallis_bregman(p, q, t, alpha: float, q0=None) -> torch.Tensor:
    """Eq. 15: B(p, q) = Omega(p) - Omega(q) - int grad Omega(q) (p - q) dQ (>= 0 by convexity)."""
    p, q = _density(p, "p"), _density(q, "q")
    return (tsallis_negentropy(p, t, alpha, q0) - tsallis_negentropy(q, t, alpha, q0)
            - trapezoid(_dQ(tsallis_gradient(q, alpha) * (p - q), q0), t))
