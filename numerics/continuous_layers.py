"""Torch continuous-attention layers of the kernel paper (Moreno et al., NeurIPS 2022).

The attention mechanism has three parts (paper Sec. 3, Eq. 1, Algorithm 1):

1. a value function V(t; B) = B Psi(t) with Gaussian RBF basis Psi and B fitted by ridge regression
   B = H F^T (F F^T + lambda I)^{-1} (Eq. 6, App. F) -- :class:`GaussianBasis`, :func:`ridge_value_coefficients`;
2. an attention density p on S = [0, 1]: continuous softmax (Gaussian), continuous sparsemax
   (truncated parabola), Gaussian mixture (App. A), kernel softmax (kernel exponential family, Eq. 8)
   or kernel sparsemax (kernel deformed exponential family, Sec. 5.2, alpha = 2 by default);
3. the context c = E_p[V(T)] = B E_p[Psi(T)] (Eq. 1, Algorithm 1 step 3).

The densities, normalisers and expectations come from :mod:`attnlab.numerics.kernel_layer_math`, a thin
adapter over the paper-agnostic math; this module only wires them into ``nn.Module`` layers with the shapes the experiments need:
batch b, heads H, inducing points I, basis functions N, grid points G, value dimension D.

Convention for the deformed (sparsemax) kernel family (Sec. 5.2, App. E.1; docs/instances.md): the density is
p ∝ exp_{2-alpha}(f̃ - max_grid f̃) q0, i.e. the max-shift is applied before the deformed exponential
(as in the paper's App. E.1 recipe and the released code), so the support is
{t : f̃(t) > max f̃ - 1/(alpha-1)}.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attnlab.numerics import kernel_layer_math as nca

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


# --------------------------------------------------------------------------- one-call sequence layer
SEQUENCE_KINDS = ("cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax")


def continuous_attention(query, key, value, kind: str = "kernel_sparsemax", key_padding_mask=None, *,
                         basis: GaussianBasis | None = None, n_basis: int = 32, grid_size: int = 256,
                         kernel: str = "gaussian", bandwidth: float = 0.05, alpha: float = 2.0,
                         ridge: float = 0.1, scale: float | None = None, return_density: bool = False):
    """Continuous attention over a sequence, called like scaled_dot_product_attention (batch first).

    query (B, L, E), key (B, S, E), value (B, S, Ev); key_padding_mask (B, S) bool, True = padding
    (as in nn.MultiheadAttention).  Returns the contexts (B, L, Ev) (and the densities (B, L, G) on the
    grid with return_density=True).  Keys and values sit at the positions t_l = l/(S-1) of [0, 1].

    1. scores s_l = scale <q, k_l> (scale 1/sqrt(E)), the logits of discrete attention;
    2. the attention density on [0, 1] (kernel paper Sec. 3-5):
       cts_softmax / cts_sparsemax: the Gaussian / truncated parabola (Eq. 2 with Omega the Shannon /
       Tsallis-2 entropy) whose mean and variance are those of softmax(s) over the positions (the
       unimodal encoder of Martins et al., the paper's baselines); kernel_softmax / kernel_sparsemax:
       the kernel exponential family (Eq. 8) / kernel deformed family (Sec. 5.2, Algorithm 1; alpha = 2
       is kernel sparsemax) with f(t) = sum_l s_l k(t, t_l): inducing points at the key positions,
       coefficients the scores (so that f peaks where discrete attention would);
    3. the value function V(t) = B Psi(t), B fitted to the values by ridge regression (Eq. 6), padded
       positions dropped;
    4. the context c = E_p[V(T)] = B E_p[Psi(T)] (Eq. 1; Algorithm 1 steps 2-3; kernel families by the
       trapezoid rule on grid_size points, the continuous ones in closed form).
    """
    _check_choice("kind", kind, SEQUENCE_KINDS)
    if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
        raise ValueError(f"query, key, value must be (B, L, E), (B, S, E), (B, S, Ev); got shapes "
                         f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if query.shape[-1] != key.shape[-1] or key.shape[:2] != value.shape[:2]:
        raise ValueError(f"query/key feature sizes and key/value lengths must agree; got {tuple(query.shape)}, "
                         f"{tuple(key.shape)}, {tuple(value.shape)}")
    Bsz, S, E = key.shape
    dt, dev = query.dtype, query.device
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    t = torch.linspace(0.0, 1.0, S, dtype=dt, device=dev) if S > 1 else torch.full((1,), 0.5, dtype=dt, device=dev)
    keep = None if key_padding_mask is None else ~key_padding_mask.to(torch.bool)
    if keep is not None and bool((~keep).all(-1).any()):
        raise ValueError("key_padding_mask pads every key of some sequence; each needs at least one key")
    basis = basis if basis is not None else GaussianBasis(n_basis).to(device=dev, dtype=dt)
    B = ridge_value_coefficients(value.transpose(1, 2), t, basis, ridge,
                                 None if keep is None else keep.to(dt))          # (B, Ev, N)
    s = scale * query @ key.transpose(1, 2)                                       # (B, L, S)
    if kind.startswith("cts"):
        w = torch.softmax(s if keep is None else s.masked_fill(~keep[:, None, :], float("-inf")), -1)
        mu = (w * t).sum(-1)
        var = ((w * t * t).sum(-1) - mu * mu).clamp_min(1e-4)
        fn = nca.gaussian_expected_rbf if kind == "cts_softmax" else nca.parabola_expected_rbf
        r = fn(mu, var, basis.mu.to(dt), basis.sigma.to(dt))                     # (B, L, N)
        if return_density:
            grid = torch.linspace(0.0, 1.0, int(grid_size), dtype=dt, device=dev)
            return r @ B.transpose(1, 2), nca.unimodal_density_on_grid(grid, kind, mu, var)
        return r @ B.transpose(1, 2)
    if int(grid_size) < 2:
        raise ValueError(f"grid_size must be >= 2; got {grid_size}")
    grid = torch.linspace(0.0, 1.0, int(grid_size), dtype=dt, device=dev)
    Kg = nca.kernel_matrix(t, grid, kernel, bandwidth).to(dt)                    # (S, G)
    if keep is not None:
        s = s.masked_fill(~keep[:, None, :], 0.0)
    f = s @ Kg                                                                    # (B, L, G)
    fam = "softmax" if kind == "kernel_softmax" else "sparsemax"
    p = nca.kernel_density_on_grid(f, grid, fam, alpha)
    r = nca.expectation_on_grid(p, basis(grid), grid)                             # (B, L, N)
    out = r @ B.transpose(1, 2)
    return (out, p) if return_density else out


class SequenceContinuousAttention(nn.Module):
    """:func:`continuous_attention` as a module with query/key/value projections (and an output
    projection), like nn.MultiheadAttention with batch_first=True and one head:
    forward(query, key=None, value=None, key_padding_mask=None) -> (B, L, embed_dim); key and value
    default to query (self-attention).  The basis (n_basis Gaussian RBFs, widths 0.1 and 0.5) is fixed."""

    def __init__(self, embed_dim: int, kind: str = "kernel_sparsemax", n_basis: int = 32, grid_size: int = 256,
                 kernel: str = "gaussian", bandwidth: float = 0.05, alpha: float = 2.0, ridge: float = 0.1,
                 bias: bool = True):
        super().__init__()
        _check_choice("kind", kind, SEQUENCE_KINDS)
        _check_choice("kernel", kernel, KERNELS)
        if not (1.0 < alpha <= 2.0):
            raise ValueError(f"alpha must be in (1, 2]; got {alpha}")
        if not (bandwidth > 0 and math.isfinite(bandwidth)):
            raise ValueError(f"bandwidth must be finite and > 0; got {bandwidth}")
        if not (ridge > 0 and math.isfinite(ridge)):
            raise ValueError(f"ridge must be finite and > 0; got {ridge}")
        self.kind, self.grid_size, self.kernel = kind, int(grid_size), kernel
        self.bandwidth, self.alpha, self.ridge = float(bandwidth), float(alpha), float(ridge)
        self.basis = GaussianBasis(n_basis)
        self.q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.o = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key=None, value=None, key_padding_mask=None):
        key = query if key is None else key
        value = key if value is None else value
        out = continuous_attention(self.q(query), self.k(key), self.v(value), self.kind, key_padding_mask,
                                   basis=self.basis, grid_size=self.grid_size, kernel=self.kernel,
                                   bandwidth=self.bandwidth, alpha=self.alpha, ridge=self.ridge)
        return self.o(out)
