"""Batched, differentiable trapezoid rule in torch, on [a, b] and on the (truncated) real line.

Used for the context vector of continuous attention, c = E_p[V(T)] (Kernel Multimodal Continuous
Attention, Eq. 1 and Algorithm 1): every integral is a weighted sum over one 1-D grid, so a batch of
integrands of shape [..., G] costs one multiply-add and autograd flows through it.

API (stable):
    uniform_grid(a, b, G)                    -> t [G]           G nodes on [a, b], both ends included
    real_line_grid(h, half_width, ...)       -> t [G]           nodes x0 + k h covering [c - L, c + L]
    trapezoid_weights(t)                     -> w [G]           composite trapezoid weights of a grid
    trapezoid(y, t, dim=-1)                  -> integral        sum_g w_g y[..., g]  (batched)
    trapezoid_fn(fn, a, b, G)                -> integral        of a callable on a uniform grid
    real_line_trapezoid(fn, h, half_width)   -> integral        h * sum_k fn(x0 + k h), truncated

On R (Thm E.1 of the paper) the rule is I_h = h * sum_{k in Z} w(kh); `real_line_grid` truncates it
to |t - center| <= half_width, which only drops the tails of the integrand: the truncation must be
chosen so that the tail mass is below the accuracy wanted (for a standard-normal base measure
half_width = 12 leaves < 1e-32; see `normal_tail_half_width`).
"""
from __future__ import annotations

import math
import numbers
from typing import Callable

import torch

from attnlab.numerics.validate import positive

__all__ = ["uniform_grid", "real_line_grid", "trapezoid_weights", "trapezoid", "trapezoid_fn",
           "real_line_trapezoid", "normal_tail_half_width", "piecewise_gauss_legendre"]


def _check_grid_size(G: int) -> int:
    if isinstance(G, (str, bool)) or not math.isfinite(G):      # (int() of NaN or inf raised, naming no G)
        raise ValueError(f"G (number of grid points) must be a finite integer >= 2; got {G!r}")
    if isinstance(G, bool) or int(G) != G or G < 2:
        raise ValueError(f"G (number of grid points) must be an integer >= 2; got {G!r}")
    return int(G)


def uniform_grid(a: float, b: float, G: int, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """G equally spaced nodes on [a, b] including both ends (spacing h = (b - a)/(G - 1))."""
    G = _check_grid_size(G)
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise ValueError(f"interval [a, b] must be finite with b > a; got [{a}, {b}]")
    return torch.linspace(a, b, G, dtype=dtype, device=device)


def real_line_grid(h: float, half_width: float, *, center: float = 0.0, shift: float = 0.0,
                   dtype=torch.float64, device=None) -> torch.Tensor:
    """Nodes center + (k + shift) h, k in Z, that lie in [center - half_width, center + half_width].

    `shift` in [0, 1) moves the whole lattice by a fraction of a cell (used to average the
    trapezoid error over grid offsets, for integrands with kinks).  `center` must be finite, and the nodes
    distinct in `dtype` and at most 2^53 of them (a smaller h is refused, naming h and half_width).
    """
    h, L = float(h), float(half_width)
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"h (grid spacing) must be a finite number > 0; got {h!r}")
    if not (math.isfinite(L) and L > 0):
        raise ValueError(f"half_width must be a finite number > 0; got {half_width!r}")
    if not (0.0 <= float(shift) < 1.0):
        raise ValueError(f"shift must lie in [0, 1); got {shift!r}")
    if isinstance(center, (str, bool)) or not math.isfinite(float(center)):
        raise ValueError(f"center must be a finite number; got {center!r}")
    if not L / h <= 2.0 ** 52:                 # (k beyond 2^53 is not exact in float64; int too big for torch)
        raise ValueError(f"h={h} is too small for half_width={L}: 2 L / h = {2 * L / h:.3g} nodes (at most 2^53)")
    k_lo = math.ceil(-L / h - shift)
    k_hi = math.floor(L / h - shift)
    if k_hi - k_lo + 1 < 2:
        raise ValueError(f"h={h} is too large for half_width={L}: fewer than 2 nodes")
    k = torch.arange(k_lo, k_hi + 1, dtype=dtype, device=device)
    t = center + (k + shift) * h
    if not bool(torch.all(t[1:] > t[:-1])):    # nodes that round together (|center| >> h): no grid of spacing h
        raise ValueError(f"h={h} is below the resolution of {t.dtype} at center={center} +- half_width={L}: "
                         f"the nodes round together")
    return t


def normal_tail_half_width(eps: float = 1e-40, scale: float = 1.0) -> float:
    """A half-width L for truncating R to [-L, L]: scale times the smallest point of the quarter grid
    {1, 1.25, 1.5, ..., 60} where the two-sided normal tail 2 P(N(0, 1) > L) = erfc(L / sqrt 2) is below eps
    (so at most a quarter width above the smallest such L, and the same L for nearby eps; 60 where erfc
    underflows first, eps below ~1e-300)."""
    if isinstance(eps, (str, bool)) or not (0 < float(eps) < 1):
        raise ValueError(f"eps must lie in (0, 1); got {eps!r}")
    if isinstance(scale, (str, bool)) or not (math.isfinite(float(scale)) and float(scale) > 0):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    L = 1.0
    while math.erfc(L / math.sqrt(2)) >= eps and L < 60:
        L += 0.25
    return L * float(scale)


def trapezoid_weights(t: torch.Tensor) -> torch.Tensor:
    """Composite trapezoid weights w of a strictly increasing 1-D grid: integral ~= sum_g w_g y_g."""
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t, dtype=torch.float64)
    if not t.is_floating_point():                # an integer grid: its half-steps are not integers
        t = t.to(torch.float64)
    if t.ndim != 1 or t.shape[0] < 2:
        raise ValueError(f"t (grid) must be a 1-D tensor with >= 2 nodes; got shape {tuple(t.shape)}")
    d = t[1:] - t[:-1]
    if not bool(torch.all(d > 0)):
        raise ValueError("t (grid) must be strictly increasing")
    w = torch.zeros_like(t)
    w[:-1] += d / 2
    w[1:] += d / 2
    return w


def trapezoid(y: torch.Tensor, t: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Trapezoid rule of y sampled on grid t along `dim`; batched over all other dims, differentiable.

    y: [..., G, ...] with y.shape[dim] == len(t) (integer or bool y is integrated in t's floating dtype, float64
    for an integer t).  Returns y integrated along dim.
    """
    if not isinstance(y, torch.Tensor):
        raise ValueError("y must be a torch.Tensor")
    w = trapezoid_weights(t)
    if not (y.is_floating_point() or y.is_complex()):
        # an integer or bool y is integrated in the grid's floating dtype, as torch.trapezoid does (the weights
        # cast to y's dtype were truncated: 0.25 -> 0, so the integral of 1 on [0, 1] came out 0)
        y = y.to(w.dtype)
    w = w.to(dtype=y.dtype, device=y.device)
    if y.ndim == 0:
        raise ValueError("y must have at least one dimension (the grid's); got a 0-d tensor")
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -y.ndim <= dim < y.ndim:
        raise ValueError(f"dim must be an integer in [-{y.ndim}, {y.ndim - 1}] for y of shape {tuple(y.shape)}; "
                         f"got {dim!r}")
    dim = dim % y.ndim
    if y.shape[dim] != w.shape[0]:
        raise ValueError(f"y.shape[{dim}]={y.shape[dim]} must equal the number of grid nodes {w.shape[0]}")
    shape = [1] * y.ndim
    shape[dim] = -1
    return (y * w.view(shape)).sum(dim)


def trapezoid_fn(fn: Callable[[torch.Tensor], torch.Tensor], a: float, b: float, G: int,
                 *, dtype=torch.float64) -> torch.Tensor:
    """Trapezoid rule of a callable fn(t) -> [..., G] on G uniform nodes of [a, b]."""
    t = uniform_grid(a, b, G, dtype=dtype)
    return trapezoid(fn(t), t)


def real_line_trapezoid(fn: Callable[[torch.Tensor], torch.Tensor], h: float, half_width: float,
                        *, center: float = 0.0, shift: float = 0.0,
                        dtype=torch.float64) -> torch.Tensor:
    """I_h = h * sum_k fn(center + (k + shift) h) over the nodes in [center - L, center + L].

    This is the trapezoid rule on R of Thm E.1 (equal weights h), truncated where the integrand is
    negligible; it is not the composite rule on [-L, L] (whose halved end weights would matter only
    if the integrand did not vanish there).
    """
    t = real_line_grid(h, half_width, center=center, shift=shift, dtype=dtype)
    return fn(t).sum(-1) * h


def piecewise_gauss_legendre(fn, breakpoints, n: int = 64, max_piece: float = 0.5) -> float:
    """float64 reference integral of a numpy callable that is analytic between `breakpoints`
    (sorted; the first and last are the interval's ends): Gauss-Legendre with n nodes on every
    piece, pieces cut to length <= max_piece.  For piecewise-analytic integrands (kinks only at the
    breakpoints) this reaches ~1e-15 relative accuracy; cross-checked against mpmath in the tests.  Finite
    breakpoints, an integer n >= 2 and a finite max_piece > 0, others refused naming the argument."""
    import numpy as np

    pts = sorted(float(p) for p in breakpoints)
    if len(pts) < 2:
        raise ValueError("breakpoints must contain at least the two ends of the interval")
    if not all(math.isfinite(p) for p in pts):
        raise ValueError(f"breakpoints must be finite numbers; got {pts}")
    if isinstance(n, (str, bool)) or not isinstance(n, numbers.Real) or not math.isfinite(n) or int(n) != n:
        raise ValueError(f"n (nodes per piece) must be an integer >= 2; got {n!r}")     # (2.5 was taken as 2)
    if n < 2:
        raise ValueError(f"n (nodes per piece) must be >= 2; got {n}")
    max_piece = positive(max_piece, "max_piece")
    x, w = np.polynomial.legendre.leggauss(int(n))
    total = []
    for lo, hi in zip(pts[:-1], pts[1:]):
        if hi <= lo:
            continue
        m = max(1, math.ceil((hi - lo) / max_piece))
        edges = np.linspace(lo, hi, m + 1)
        c = (edges[:-1] + edges[1:]) / 2
        r = (edges[1:] - edges[:-1]) / 2
        nodes = (c[:, None] + r[:, None] * x[None, :]).ravel()
        vals = np.asarray(fn(nodes), dtype=float).reshape(m, -1)
        total.extend((r[:, None] * w[None, :] * vals).ravel().tolist())
    return math.fsum(total)
