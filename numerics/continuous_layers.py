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

import functools
import math
import numbers
import warnings

import torch
from torch import nn

from attnlab.numerics import kernel_layer_math as nca
from attnlab.numerics.multihead import (MultiheadAttentionBase, additive_mask, broadcast_shapes, check_dropout,
                                         check_flag, check_mask, check_positive, check_qkv, check_scale, compute_dtype,
                                         deprecated, empty_attention, excluded, sdpa_mask)

ATTENTIONS = ("discrete_softmax", "cts_softmax", "cts_sparsemax", "gaussian_mixture",
              "kernel_softmax", "kernel_sparsemax")
KERNELS = ("gaussian", "laplace")
BASES = ("none", "gaussian", "parabola")


def _check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")


# --------------------------------------------------------------------------- value function
class GaussianBasis(nn.Module):
    """Gaussian RBF pdfs psi_n(t) = N(t; mu_n, sigma_n^2): N // len(sigmas) centres linspace(0, 1) for each
    width, len(sigmas) (N // len(sigmas)) functions in all (as in Martins et al.'s and the kernel paper's code:
    N = 256 with three widths gives 255; ``n`` says how many); N >= 2 len(sigmas).  Fixed, not trained.
    ``persistent=False`` leaves mu and sigma out of the owner's state dict (they follow from n_basis)."""

    def __init__(self, n_basis: int, sigmas=(0.1, 0.5), dtype=None, persistent: bool = True):
        super().__init__()
        if len(sigmas) == 0:
            raise ValueError("sigmas must name at least one width; got none")
        # at least two centres per width: one would sit at linspace(0, 1, 1) = 0 (GaussianBasis(3) built two
        # functions, both centred at 0)
        if isinstance(n_basis, bool) or not isinstance(n_basis, numbers.Integral) or n_basis < 2 * len(sigmas):
            raise ValueError(f"n_basis must be an integer >= 2 len(sigmas) = {2 * len(sigmas)} (two centres per "
                             f"width at least); got {n_basis!r}")
        per = int(n_basis) // len(sigmas)
        mu = torch.cat([torch.linspace(0.0, 1.0, per, dtype=dtype) for _ in sigmas])
        sd = torch.cat([torch.full((per,), float(s), dtype=dtype) for s in sigmas])
        self.register_buffer("mu", mu, persistent=persistent)
        self.register_buffer("sigma", sd, persistent=persistent)

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
    lam = check_positive(lam, "lam", " (the ridge penalty)")
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
    Returns r = E_p[psi_n], shape (b, H, N); :meth:`density` returns p on the grid, (b, H, G) (kernel/grid kinds).
    ``dtype``: the dtype its grid, basis-on-grid and kernel tables are computed in (default torch's default,
    float32; casting the module later keeps that rounding).
    """

    def __init__(self, kind: str, basis: GaussianBasis, grid_size: int = 100, n_inducing: int = 0,
                 kernel: str = "gaussian", bandwidth: float = 0.05, alpha: float = 2.0, base: str = "none",
                 dtype=None):
        super().__init__()
        _check_choice("kind", kind, ATTENTIONS[1:])
        _check_choice("kernel", kernel, KERNELS)
        _check_choice("base", base, BASES)
        if kind == "kernel_softmax" and base == "parabola":
            raise ValueError("base 'parabola' is for kernel_sparsemax; kernel_softmax takes 'none' or 'gaussian'")
        if kind.startswith("kernel"):
            _check_int(n_inducing, "n_inducing", 1)
        if not isinstance(basis, GaussianBasis):
            raise ValueError(f"basis must be a GaussianBasis; got {type(basis).__name__}")
        grid_size = _check_int(grid_size, "grid_size", 2)
        alpha = _check_alpha_deformed(alpha)                        # (a string met a TypeError from '<')
        bandwidth = check_positive(bandwidth, "bandwidth")
        self.kind, self.kernel, self.base = kind, kernel, base
        self.alpha, self.bandwidth = float(alpha), float(bandwidth)
        self.basis = basis
        # the tables are computed in `dtype` (default: torch's default dtype, float32): casting the module
        # afterwards (.double()) keeps their float32 rounding, so build a float64 module with dtype=float64
        grid = torch.linspace(0.0, 1.0, int(grid_size), dtype=dtype)
        self.register_buffer("grid", grid)
        self.register_buffer("psi_grid", basis(grid))                    # [N, G]
        if kind.startswith("kernel"):
            ind = torch.linspace(0.0, 1.0, int(n_inducing), dtype=dtype)
            self.register_buffer("K", nca.kernel_matrix(ind, grid, kernel, bandwidth))  # [I, G]
        else:
            self.register_buffer("K", torch.zeros(0))

    def _needs(self, **given) -> None:
        """ValueError naming the forward arguments this kind needs and did not get, or got with the wrong last
        dimension (torch's TypeError / shape error named neither)."""
        for name, x in given.items():
            if not torch.is_tensor(x):
                base = f" with base={self.base!r}" if self.kind.startswith("kernel") and name != "gamma" else ""
                raise ValueError(f"{name} must be a tensor for kind={self.kind!r}{base}; got {type(x).__name__}")
        gamma = given.get("gamma")
        if gamma is not None and gamma.shape[-1:] != self.K.shape[:1]:
            raise ValueError(f"gamma must have n_inducing = {self.K.shape[0]} weights in its last dimension; got "
                             f"shape {tuple(gamma.shape)}")

    def density(self, gamma=None, mu=None, sigma2=None, weights_logits=None) -> torch.Tensor:
        """p on the grid [b, H, G] (normalised by the trapezoid rule on [0, 1])."""
        if self.kind.startswith("kernel"):
            self._needs(gamma=gamma, **({} if self.base == "none" else dict(mu=mu, sigma2=sigma2)))
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
        self._needs(mu=mu, sigma2=sigma2, **(dict(weights_logits=weights_logits)
                                             if self.kind == "gaussian_mixture" else {}))
        if self.kind == "cts_softmax":
            return nca.gaussian_expected_rbf(mu, sigma2, self.basis.mu, self.basis.sigma)
        if self.kind == "cts_sparsemax":
            return nca.parabola_expected_rbf(mu, sigma2, self.basis.mu, self.basis.sigma)
        return nca.mixture_expected_rbf(torch.softmax(weights_logits, -1), mu, sigma2,
                                        self.basis.mu, self.basis.sigma)


def moments_from_discrete(p: torch.Tensor, positions: str = "linspace") -> tuple[torch.Tensor, torch.Tensor]:
    """mu = E_p[T], sigma^2 = Var_p[T] for discrete attention p [..., L] over the positions of the L
    steps (the unimodal baselines' encoder, Martins et al. / paper App. I): ``positions="linspace"``,
    linspace(0, 1, L) (quati's choice); ``"index"``, l/L for l = 1..L (the released FordA code's).
    sigma^2 is floored at 1e-4 so that a collapsed discrete attention still gives a proper density."""
    L = p.shape[-1]
    if positions == "linspace":
        pos = torch.linspace(0.0, 1.0, L, device=p.device, dtype=p.dtype)
    elif positions == "index":
        pos = torch.arange(1, L + 1, device=p.device, dtype=p.dtype) / L
    else:
        raise ValueError(f"positions must be 'linspace' or 'index'; got {positions!r}")
    mu = (p * pos).sum(-1)
    var = (p * pos ** 2).sum(-1) - mu ** 2
    return mu, var.clamp_min(1e-4)


# --------------------------------------------------------------------------- one-call sequence layer
SEQUENCE_KINDS = ("cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax")
# the kernel bandwidth continuous_attention takes: 1 / (2 bandwidth^2) must stay a finite nonzero float64
MIN_BANDWIDTH, MAX_BANDWIDTH = 1e-100, 1e100
MAX_TABLE_BYTES = 4 * 2 ** 30     # the input-independent tables of one (S, G, basis) key


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _check_n_basis(n_basis) -> int:
    """n_basis of the default basis: a whole number >= 4 and even (n_basis / 2 >= 2 centres for each of its two
    widths, 0.1 and 0.5: an odd number was rounded down silently, 3 to 2 functions both centred at 0)."""
    n = _check_int(n_basis, "n_basis", 4)
    if n % 2:
        raise ValueError(f"n_basis must be even (n_basis / 2 centres for each of the widths 0.1 and 0.5); got {n}")
    return n


def _check_table_size(n: int, S: int, grid_size: int, name: str) -> None:
    """The cached tables (float64 Gram, F, M, WPsi: 8 n (n + S + G + 2) bytes) within MAX_TABLE_BYTES, the
    refusal naming each factor (S = 0: not known yet, the module's constructor; G = 0: no grid, the cts kinds)."""
    tables = 8 * n * (n + S + grid_size + 2)
    if tables > MAX_TABLE_BYTES:
        parts = [f"{name} = {n} functions"] + ([f"S = {S} keys"] if S else []) + (
            [f"grid_size = {grid_size} points"] if grid_size else [])
        raise ValueError(f"{', '.join(parts)} need ~{tables / 2 ** 30:.0f} GiB of tables (n_basis x (n_basis + "
                         f"S + grid_size)), over {MAX_TABLE_BYTES / 2 ** 30:g} GiB; use fewer of whichever is "
                         f"largest")


def _check_alpha_deformed(alpha) -> float:
    try:
        if isinstance(alpha, (str, bytes, bool)):              # (float("2") read a string)
            raise TypeError
        a = float(alpha)
    except (TypeError, ValueError):
        a = float("nan")
    if not (1.0 < a <= 2.0):
        raise ValueError(f"alpha must be in (1, 2] (the deformed family, Sec. 5.2; 2 = sparsemax); got {alpha!r}")
    return a


def continuous_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                         scale=None, *, kind: str = "kernel_sparsemax", basis: GaussianBasis | None = None,
                         n_basis: int = 32, grid_size: int = 256, kernel: str = "gaussian", bandwidth: float = 0.05,
                         alpha: float = 2.0, ridge: float = 0.1, return_weights: bool = False,
                         return_density: bool = False, key_padding_mask=None):
    r"""Continuous attention over a sequence, called like ``torch.nn.functional.scaled_dot_product_attention``.

    "Kernel Multimodal Continuous Attention" (Moreno et al., NeurIPS 2022), Eq. (1), (2), (6), (8) and
    Algorithm 1.  Keys and values sit at the positions $t_s = s/(S-1)$ of [0, 1] (1/2 for S = 1); padding is
    absent: the n keys present sit at $j/(n-1)$ in their order, so that padding changes no output, as in
    ``nn.MultiheadAttention``.  Padding is what the mask says of the keys alone: the keys masked by a mask
    that is the same for every query (shape (..., 1, S) or (S,), e.g. ``~key_padding_mask[:, None, :]``).
    A mask with a row per query (causal, ...) keeps the positions, also of a key it masks for every query,
    so that a query's output does not depend on the other queries in the call (``is_causal`` always does; a
    one-row mask for a single query is padding).  For each query:

    1. scores $s_j = \text{scale}\,\langle q, k_j\rangle$ (+ a float mask), the logits of discrete
       attention;
    2. an attention density $p$: ``cts_softmax`` / ``cts_sparsemax``, the Gaussian /
       truncated parabola (Eq. 2 with the Shannon / Tsallis-2 entropy) on the real line with the mean and
       variance of $\text{softmax}(s)$ over the positions (Martins et al.'s unimodal encoder, the paper's
       baselines; not renormalised to [0, 1], as there); on [0, 1], ``kernel_softmax`` /
       ``kernel_sparsemax``, the kernel exponential family (Eq. 8)
       $p(t) \propto \exp f(t)$ / the kernel deformed family (Sec. 5.2; alpha = 2 is sparsemax)
       $p(t) \propto [1 + (\alpha-1)(f(t) - \max f)]_+^{1/(\alpha-1)}$ (App. E.1's shift by the
       maximum of $f$ on the grid, then normalised by the trapezoid rule; not the threshold $\tau$ that
       would make it integrate to 1) with $f(t) = \sum_j s_j\, k(t, t_j)$;
    3. the value function $V(t) = B\Psi(t)$, $B = H F^\top(FF^\top + \lambda I)^{-1}$ fitted
       to the allowed values by ridge regression (Eq. 6);
    4. the context $c = \mathbb{E}_p[V(T)] = B\,\mathbb{E}_p[\Psi(T)]$ (Eq. 1; kernel families by the
       trapezoid rule on ``grid_size`` points, the continuous ones in closed form).

    The context is linear in the values, $c = \sum_j w_j v_j$: ``return_weights`` returns these
    weights $w$ (a ridge smoother's weights: they need not be positive nor sum to 1).  A masked
    key is left out of the scores AND of the ridge fit, so a causal mask lets no later value in.

    Args:
        query: (..., L, E); any leading dimensions (batch, heads).
        key: (..., S, E).
        value: (..., S, Ev).
        attn_mask: broadcastable to (..., L, S), as in ``scaled_dot_product_attention``: bool True where
            the query may attend; a float mask is added to the scores (``-inf``, or an entry at or below -1e4 after the row's
            shift, as -1e9 and finfo.min, leaves the key out, as in SDPA), as
            given: for the kernel kinds a constant added to a row changes the density (f sums the scores
            against the kernel), for the ``cts_*`` kinds it does not.  Other dtypes raise ValueError.
        dropout_p: dropout probability on the weights w (applied whenever > 0, as in SDPA).
        is_causal: the causal (top-left aligned) mask; then attn_mask must be None.
        scale: score scale, default $1/\sqrt{E}$.
        kind: keyword-only; ``cts_softmax``, ``cts_sparsemax``, ``kernel_softmax`` or ``kernel_sparsemax``.
        basis: keyword-only; the :class:`GaussianBasis` $\Psi$ (default ``n_basis`` RBFs, widths 0.1, 0.5).
        n_basis: keyword-only; basis size N when no basis is given.
        grid_size: keyword-only; quadrature points G on [0, 1] (kernel kinds).
        kernel: keyword-only; ``gaussian`` or ``laplace``.
        bandwidth: keyword-only; kernel bandwidth (> 0).
        alpha: keyword-only; the deformed family's alpha in (1, 2] (``kernel_sparsemax``).
        ridge: keyword-only; the ridge penalty $\lambda > 0$ of Eq. (6).
        return_weights: keyword-only; also return the weights w.
        return_density: keyword-only; also return the densities on the grid.
        key_padding_mask: keyword-only; (..., S), as in ``nn.MultiheadAttention``: bool True (or a float
            ``-inf`` or an entry at or below -1e4) marks padding, which is not there (the other keys re-spaced); a float mask's finite entries
            are added to the scores.  With a per-query ``attn_mask`` (causal, ...) this is the way to name
            padding: such a mask keeps the positions of the keys it masks.

    Shape:
        - output: (..., L, Ev) in the dtype of the inputs (float16/bfloat16 are computed in float32).
        - weights: (..., L, S).  density: (..., L, G).

    Returns:
        The output; ``(output, weights)``, ``(output, density)`` or ``(output, weights, density)`` as
        asked.  A query with every key masked gets output 0 (and weights 0), as in SDPA.

    Example:
        >>> import torch
        >>> from attnlab.layers import continuous_attention
        >>> q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 9, 8), torch.randn(2, 4, 9, 8)
        >>> out, w = continuous_attention(q, k, v, kind="cts_softmax", return_weights=True)
        >>> out.shape, w.shape
        (torch.Size([2, 4, 5, 8]), torch.Size([2, 4, 5, 9]))
        >>> bool(torch.allclose(out, w @ v, atol=1e-5))
        True
    """
    if isinstance(attn_mask, str):             # the old positional form (query, key, value, kind, key_padding_mask)
        warnings.warn("continuous_attention(query, key, value, kind, key_padding_mask) is deprecated; use "
                      "continuous_attention(query, key, value, attn_mask, kind=...) (SDPA's convention)",
                      DeprecationWarning, stacklevel=2)
        kind, attn_mask = attn_mask, None
        if torch.is_tensor(dropout_p):
            key_padding_mask, dropout_p = dropout_p, 0.0
    return _continuous_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, kind=kind, basis=basis,
                                 n_basis=n_basis, grid_size=grid_size, kernel=kernel, bandwidth=bandwidth,
                                 alpha=alpha, ridge=ridge, return_weights=return_weights,
                                 return_density=return_density, key_padding_mask=key_padding_mask)


def _continuous_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, *, kind, basis, n_basis,
                          grid_size, kernel, bandwidth, alpha, ridge, return_weights, return_density,
                          key_padding_mask=None, padding=None):
    """:func:`continuous_attention`; ``padding`` (broadcastable to (..., S), MHA's convention: bool True or float
    -inf = padding) names the absent keys where the mask cannot (the modules: their merged mask has a row per
    query)."""
    _check_choice("kind", kind, SEQUENCE_KINDS)
    _check_choice("kernel", kernel, KERNELS)
    batch = check_qkv(query, key, value)
    dropout_p = check_dropout(dropout_p)
    check_flag(return_weights, "return_weights")               # ("no" was truthy: a tuple came back)
    check_flag(return_density, "return_density")
    ridge = check_positive(ridge, "ridge", " (the ridge penalty of Eq. 6)")
    bandwidth = check_positive(bandwidth, "bandwidth")
    if not MIN_BANDWIDTH <= bandwidth <= MAX_BANDWIDTH:   # 1/(2 bandwidth^2) divided by zero or overflowed
        raise ValueError(f"bandwidth must be in [{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}] (the kernel's width on the "
                         f"positions' [0, 1]); got {bandwidth!r}")
    if basis is not None and not isinstance(basis, GaussianBasis):
        raise ValueError(f"basis must be a GaussianBasis (or None: n_basis RBFs); got {type(basis).__name__}")
    alpha = _check_alpha_deformed(alpha)
    grid_size = _check_int(grid_size, "grid_size", 2)
    L, S, E = query.shape[-2], key.shape[-2], key.shape[-1]
    cdt, odt = compute_dtype(query, key, value)
    query, key, value = query.to(cdt), key.to(cdt), value.to(cdt)
    dev = query.device
    mask = sdpa_mask(attn_mask, is_causal, L, S, dev, batch=batch)
    # no query, or no key to attend to: 0, as in SDPA; meta tensors (shape inference): the shapes
    if L == 0 or S == 0 or 0 in batch or dev.type == "meta":
        out, w, dens = empty_attention(query, key, value, odt, batch, (S, grid_size))
        extra = ((w,) if return_weights else ()) + ((dens,) if return_density else ())
        return (out, *extra) if extra else out
    if key_padding_mask is not None:
        kpm = check_mask(key_padding_mask, "key_padding_mask", dev)
        try:
            broadcast_shapes(tuple(kpm.shape), tuple(batch) + (S,))
            if kpm.dim() == 0 or broadcast_shapes(tuple(kpm.shape[:-1]), tuple(batch)) != tuple(batch):
                raise RuntimeError
        except RuntimeError:
            raise ValueError(f"key_padding_mask must broadcast to (..., S) = ({', '.join(map(str, tuple(batch)))}"
                             f"{', ' if batch else ''}{S}); got shape {tuple(kpm.shape)}") from None
        padding = kpm
        kpm = ~kpm[..., None, :] if kpm.dtype == torch.bool else kpm[..., None, :]
        # two float masks add as given (their sum is what the kernel families add to the scores)
        mask = kpm if mask is None else (mask & kpm if mask.dtype == kpm.dtype == torch.bool else
                                         additive_mask(mask, cdt, shift=False) + additive_mask(kpm, cdt, shift=False))
    scale = 1.0 / math.sqrt(E) if scale is None else check_scale(scale)
    if basis is None:
        n_basis = _check_n_basis(n_basis)
        centres = widths = None
    else:
        n_basis, centres, widths = basis.n, tuple(basis.mu.tolist()), tuple(basis.sigma.tolist())
    _check_table_size(n_basis, S, grid_size if kind.startswith("kernel") else 0,
                      "n_basis" if basis is None else "basis")
    tab = _sequence_tables(S, grid_size if kind.startswith("kernel") else 0, n_basis, centres, widths, kernel,
                           bandwidth, ridge, cdt, dev)
    if mask is None:
        keep = None
    elif mask.dtype == torch.bool:
        keep = mask
    else:
        add = additive_mask(mask, cdt)
        gone = excluded(add)                    # -inf, or an entry softmax would give zero weight (-1e9, finfo.min)
        if kind.startswith("kernel"):
            # the entries as given: f = sum_j (s_j + m_j) k(t, t_j) sees a constant added to a row (it adds c sum_j
            # k(t, t_j), not a constant in t), so the per-row shift that softmax ignores would change the density
            add = torch.where(gone, torch.full_like(add, float("-inf")), mask.to(cdt))
        keep = ~gone
    # padding is absent: the present keys of each sequence sit at t = j/(n-1), j = 0..n-1 (1/2 for n = 1), as an
    # unpadded sequence of n keys would, so that padding changes no output (as in nn.MultiheadAttention).  Padding
    # is what a mask says of the keys alone: a mask the same for every query (query dimension 1), or the modules'
    # key_padding_mask.  A mask with a row per query (causal, ...) keeps the positions, also of a key it masks
    # for every query (read as padding, a query's output depended on the other queries in the call: a causal
    # mask with fewer queries than keys re-spaced the keys, 0.43 off between one call and two)
    T2, F, Kg = tab.T2, tab.F, getattr(tab, "Kg", None)
    if padding is not None:
        present = ~(padding if padding.dtype == torch.bool else excluded(additive_mask(padding, cdt)))
    elif keep is not None and keep.shape[-2] == 1 and not is_causal:       # (is_causal at L = 1: one row)
        present = keep.squeeze(-2)
    else:
        present = None
    if present is not None and not bool(present.all()):
        T2, F, Kg = _present_tables(present, tab, kernel, bandwidth, cdt)
    dens = None
    if kind.startswith("kernel") and keep is None:
        # f = s K_g = scale q (K_g^T k)^T: the (S x G) kernel folded into the keys first (E G work per key
        # and per query instead of S G per query)
        ktab = (scale * (tab.Kg.transpose(0, 1) @ key)).transpose(-1, -2)           # (..., E, G)
        if not (kind == "kernel_sparsemax" and alpha == 2.0 and not return_density
                and query.shape[:-2] == ktab.shape[:-2]):
            f = query @ ktab                                                      # (..., L, G)
    else:
        s = scale * query @ key.transpose(-1, -2)                                 # (..., L, S)
        if keep is not None and mask.dtype != torch.bool:
            s = s + add.masked_fill(~keep, 0.0)
    if kind.startswith("cts"):
        if keep is not None:
            empty = ~keep.any(-1, keepdim=True)
            s = torch.where(empty, torch.zeros_like(s), s.masked_fill(~keep, float("-inf")))
        m = torch.softmax(s, -1) @ T2                                            # (E_w[t], E_w[t^2])
        mu = m[..., 0]
        var = (m[..., 1] - mu * mu).clamp_min(1e-4)
        fn = nca.gaussian_expected_rbf if kind == "cts_softmax" else nca.parabola_expected_rbf
        nan = torch.isnan(var)                  # a NaN score: NaN for its query, as in SDPA (not a refusal
        has_nan = bool(nan.any())               # that named sigma2, which the caller never gave)
        if has_nan:
            var, mu = var.masked_fill(nan, 1.0), mu.masked_fill(nan, 0.5)
        r = fn(mu, var, tab.centres, tab.widths)                                  # (..., L, N)
        if has_nan:
            r = r.masked_fill(nan.unsqueeze(-1), float("nan"))
        if return_density:
            grid = torch.linspace(0.0, 1.0, grid_size, dtype=cdt, device=dev)
            dens = nca.unimodal_density_on_grid(grid, kind, mu, var)
    else:
        if keep is not None:
            f = s.masked_fill(~keep, 0.0) @ Kg                                   # (..., L, G)
        # the unnormalised density u on the grid (kernel paper App. E.1: shifted by the max of f), then
        # E_p[Psi] = (u w Psi^T) / (u w^T) with the trapezoid weights w: one product gives both
        if kind == "kernel_softmax":
            # (exp below the smallest normal number is that number: subnormals slow every product down)
            u = torch.exp((f - f.amax(-1, keepdim=True).detach()).clamp_min(math.log(torch.finfo(cdt).tiny)))
        elif alpha == 2.0 and keep is None and not return_density and query.shape[:-2] == ktab.shape[:-2]:
            u = None                                                              # (sparsemax: one node below)
        elif alpha == 2.0:
            u = _ShiftedRelu.apply(f, 1.0)[0]                                     # [1 + (f - max f)]_+
        else:
            # [1 + (a-1)(f - max f)]_+^(1/(a-1)) as exp(log1p(z)/(a-1)), z = (a-1)(f - max f): the power of the
            # relu form lost every digit as alpha -> 1 in float32 (f - max f + 1/(a-1) rounds to 1/(a-1); 0.65
            # off at alpha = 1 + 1e-9); the shift's gradient reaches the maximiser, as in _ShiftedRelu
            z = (alpha - 1.0) * (f - f.amax(-1, keepdim=True))
            inside = z > -1.0
            u = torch.where(inside, torch.exp(torch.log1p(torch.where(inside, z, 0.0)) / (alpha - 1.0)), 0.0)
        rz = _SparsemaxMoments.apply(query, ktab, tab.WPsi)[0] if u is None else u @ tab.WPsi   # (..., L, N + 1)
        r = rz[..., :-1] / rz[..., -1:]
        if return_density:
            dens = u / (u @ tab.w).unsqueeze(-1)
    # the context r B^T = r G^{-1} F diag(keep) V (G = F diag(keep) F^T + ridge I), linear in the values:
    # weights w = r G^{-1} F diag(keep)
    if keep is None:
        w = r @ tab.M if (return_weights or dropout_p > 0) else None             # M = G^{-1} F, (N, S)
    else:
        # solved in float64 below it, as M is for every key allowed (in float32 any mask, even one that masks
        # nothing, made the output 10-40x less accurate than without it: 8.4e-4 against 2.2e-5 at S = 1024)
        sdt = torch.float64 if cdt == torch.float32 and dev.type != "mps" else cdt
        N = F.shape[-2]
        Fs = F.to(sdt)
        eye = ridge * torch.eye(N, dtype=sdt, device=dev)
        FF = (Fs.unsqueeze(-2) * Fs.unsqueeze(-3)).flatten(-3, -2)                # outer products F_s F_s^T
        Gm = (keep.to(sdt) @ FF.transpose(-1, -2)).unflatten(-1, (N, N)) + eye   # (..., Lm, N, N)
        rs = r.to(sdt)
        if Gm.shape[-3] == 1:
            x = torch.linalg.solve(Gm.squeeze(-3), rs.transpose(-1, -2)).transpose(-1, -2)  # (..., L, N)
        else:
            x = torch.linalg.solve(Gm, rs.unsqueeze(-1)).squeeze(-1)
        w = ((x @ Fs) * keep.to(sdt)).to(cdt)
    if dropout_p > 0:
        w = nn.functional.dropout(w, dropout_p)
    out = (r @ (tab.M @ value) if w is None else w @ value).to(odt)
    extra = ((w.to(odt),) if return_weights else ()) + ((dens.to(odt),) if return_density else ())
    return (out, *extra) if extra else out


class _ShiftedRelu(torch.autograd.Function):
    """(u, idx): u = relu(f - max f + c) over the last dimension, with the gradient through the max (the kernel
    paper's App. E.1 shift is part of the map; as for ``f.max(-1).values``, it reaches the maximiser that
    max returns, idx): df = g [u > 0] - (their sum) at that index.  One autograd node and two passes backward
    instead of an autograd chain of six.  In torch's setup_context form, so that torch.func's transforms take
    it (grad, jacrev; the index is a non-differentiable output, as the saved intermediates must be there)."""

    @staticmethod
    def forward(f, c: float):
        m, idx = f.max(-1, keepdim=True)
        # (f - max f) + c, in that order: m - c rounds to m once |m| >~ c / eps (1e7 in float32), which
        # made every u 0 and the context 0/0
        return torch.sub(f, m).add_(c).relu_(), idx

    @staticmethod
    def setup_context(ctx, inputs, output):
        u, idx = output
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx, u)

    @staticmethod
    def backward(ctx, g, _g_idx):
        idx, u = ctx.saved_tensors
        gm = torch.ops.aten.threshold_backward(g, u, 0)
        return gm.scatter_add(-1, idx, -gm.sum(-1, keepdim=True)), None


class _SparsemaxMoments(torch.autograd.Function):
    """rz = u [w Psi_grid^T, w] with u = relu(f - max f + 1), f = x y (alpha = 2: the kernel sparsemax
    density of App. E.1, unnormalised, and its trapezoid moments; x (..., L, E), y (..., E, G) with the same
    leading dimensions), as one autograd node: f is overwritten by u (no second (L, G) array), and backward
    the (L, G) gradient is formed once and masked in place.  Returns (rz, u, idx), the last two
    non-differentiable: torch's setup_context form, which torch.func's transforms take, sees only the outputs."""

    @staticmethod
    def forward(x, y, W):
        u = torch.matmul(x, y)
        m, idx = u.max(-1, keepdim=True)
        u.sub_(m).add_(1.0).relu_()                 # (f - max f) + 1: m - 1 rounds to m at large scores
        return u @ W, u, idx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, W = inputs
        _, u, idx = output
        ctx.mark_non_differentiable(u, idx)
        ctx.save_for_backward(x, y, W, u, idx)

    @staticmethod
    def backward(ctx, g, _g_u, _g_idx):
        x, y, W, u, idx = ctx.saved_tensors
        gu = g @ W.transpose(0, 1)
        if torch.is_grad_enabled():
            # create_graph=True, or a torch.func transform: the same formula out of place, which autograd then
            # differentiates itself; it is the whole second derivative, since the mask [u > 0] and max's index
            # are piecewise constant in x and y (u enters the backward through them only)
            gu = torch.ops.aten.threshold_backward(gu, u, 0)
            gu = gu.scatter_add(-1, idx, -gu.sum(-1, keepdim=True))
        else:
            torch.ops.aten.threshold_backward.grad_input(gu, u, 0, grad_input=gu)   # d relu
            gu.scatter_add_(-1, idx, -gu.sum(-1, keepdim=True))                      # d max (to max()'s index)
        gx = gu @ y.transpose(-1, -2) if ctx.needs_input_grad[0] else None
        gy = x.transpose(-1, -2) @ gu if ctx.needs_input_grad[1] else None
        return gx, gy, None


class _Tables:
    """The input-independent tensors of continuous_attention for one (S, G, basis, kernel, ridge, dtype, device)."""


@functools.lru_cache(maxsize=32)
def _sequence_tables(S: int, G: int, n_basis: int, centres, widths, kernel: str, bandwidth: float, ridge: float,
                     dtype, device) -> _Tables:
    """Positions t_s = s/(S-1), the basis at them F (N, S), M = (F F^T + ridge I)^{-1} F (the ridge fit of
    Eq. 6 with every key allowed, solved in float64), T2 = [t, t^2] (S, 2); for G > 0 the kernel on the grid
    K_g (S, G) (entries below the smallest normal number set to 0: they change no sum, and subnormal operands
    slow every product down), the trapezoid weights w (G,) and WPsi = [w Psi_grid^T, w] (G, N + 1).  Computed
    once per key (the function is cached) and never written to.  Built outside inference mode whatever the
    caller's (a first call under torch.inference_mode() cached inference tensors, and every later call with
    gradients at that S failed: "Inference tensors cannot be saved for backward")."""
    with torch.no_grad(), torch.inference_mode(False):
        # built in the computation's dtype (built in float32 and cast, a float64 call saw centres and widths
        # rounded to float32: 1.4e-8 off the basis it documents)
        basis = (GaussianBasis(n_basis, dtype=dtype) if centres is None
                 else _fixed_basis(centres, widths)).to(device=device, dtype=dtype)
        tab = _Tables()
        t = (torch.linspace(0.0, 1.0, S, dtype=dtype, device=device) if S > 1
             else torch.full((1,), 0.5, dtype=dtype, device=device))
        tab.F = basis(t).to(dtype)                                                # (N, S)
        tab.centres, tab.widths = basis.mu.to(dtype), basis.sigma.to(dtype)
        F64 = tab.F.double()
        gram = F64 @ F64.T + ridge * torch.eye(F64.shape[0], dtype=torch.float64, device=device)
        tab.M = torch.linalg.solve(gram, F64).to(dtype)                           # (N, S)
        tab.T2 = torch.stack([t, t * t], -1)                                      # (S, 2)
        if G:
            grid = torch.linspace(0.0, 1.0, G, dtype=dtype, device=device)
            t64 = (torch.linspace(0.0, 1.0, S, dtype=torch.float64, device=device) if S > 1
                   else torch.full((1,), 0.5, dtype=torch.float64, device=device))
            Kg = _grid_kernel(t64, G, kernel, bandwidth).to(dtype)                # (S, G)
            tab.Kg = Kg.masked_fill(Kg.abs() < torch.finfo(dtype).tiny, 0.0)
            tab.w = nca.trapezoid_weights(grid).to(dtype)                         # (G,)
            tab.WPsi = torch.cat([(tab.w * basis(grid).to(dtype)).T, tab.w.unsqueeze(-1)], -1)   # (G, N + 1)
    return tab


def _grid_kernel(t: torch.Tensor, G: int, kernel: str, bandwidth: float) -> torch.Tensor:
    """k(t_s, grid_g) (S, G) in float64 at float64 positions t (S,) and the grid linspace(0, 1, G): a kernel narrower
    than float32's rounding of the positions (~6e-8; bandwidth 1e-10) gave 0 where two positions coincide in
    float64 and 1 where they do (0.7 % off the float64 output in float32); the caller rounds it to its dtype."""
    return nca.kernel_matrix(t, torch.linspace(0.0, 1.0, G, dtype=torch.float64, device=t.device), kernel,
                             bandwidth)


def _present_tables(present: torch.Tensor, tab: _Tables, kernel: str, bandwidth: float, cdt):
    """T2 (..., S, 2), F (..., N, S) and K_g (..., S, G) (None without a grid) of sequences whose present keys
    (``present`` (..., S), True where some query may attend) sit at j/(n-1), j = 0..n-1 in their order (1/2 for
    n = 1); an absent key's entries are those of t = 0 (the masks leave it out)."""
    n = present.sum(-1, keepdim=True)
    rank = (present.cumsum(-1) - 1).double()
    t64 = torch.where(n > 1, rank / (n - 1).clamp_min(1).double(), torch.full_like(rank, 0.5))
    t64 = t64.masked_fill(~present, 0.0)
    t = t64.to(cdt)
    flat = t.reshape(-1)
    F = nca.gaussian_rbf(flat, tab.centres, tab.widths).unflatten(1, t.shape).movedim(0, -2)     # (..., N, S)
    Kg = None
    if getattr(tab, "Kg", None) is not None:
        Kg = _grid_kernel(t64.reshape(-1), tab.Kg.shape[-1], kernel, bandwidth).to(cdt).unflatten(0, t.shape)
        Kg = Kg.masked_fill(Kg.abs() < torch.finfo(cdt).tiny, 0.0)
    return torch.stack([t, t * t], -1), F, Kg


def _fixed_basis(centres, widths) -> GaussianBasis:
    b = GaussianBasis(len(centres), sigmas=(1.0,))
    b.mu = torch.tensor(centres, dtype=torch.float64)
    b.sigma = torch.tensor(widths, dtype=torch.float64)
    return b


class ContinuousMultiheadAttention(MultiheadAttentionBase):
    r"""Multi-head continuous attention (kernel paper, Eq. 1, 2, 6, 8, Algorithm 1), a drop-in for
    ``torch.nn.MultiheadAttention``.

    The same constructor, parameters (under the same names: a state dict moves either way), masks, and
    ``forward`` returning ``(output, weights)``; it can be the ``self_attn`` / ``multihead_attn`` of
    ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``.  Per head the attention is
    :func:`continuous_attention`: an attention density $p$ on [0, 1] over the key positions and
    the context

    $$
    c = \mathbb{E}_{p}[V(T)] = B\,\mathbb{E}_p[\Psi(T)],\qquad B = H F^\top (F F^\top + \lambda I)^{-1},
    $$

    with $V(t) = B\Psi(t)$ the ridge fit (Eq. 6) of the allowed values at their positions.  The
    weights returned are the linear weights of the values in $c$ (a ridge smoother's: they need
    not be positive).

    Args:
        embed_dim: total dimension E of the model (split across the heads).
        num_heads: number of heads H.
        dropout: dropout probability on the weights (in training mode).
        bias: add biases to the input and output projections.
        add_bias_kv: not supported (must be False).
        add_zero_attn: not supported (must be False).
        kdim: features of key (default E).
        vdim: features of value (default E).
        batch_first: (N, L, E) if True, (L, N, E) if False (torch's default).
        device: as in torch.
        dtype: as in torch.
        kind: keyword-only; ``cts_softmax``, ``cts_sparsemax``, ``kernel_softmax``, ``kernel_sparsemax``.
        n_basis: keyword-only; the number N of Gaussian RBFs of $\Psi$ (widths 0.1, 0.5; fixed).
        grid_size: keyword-only; quadrature points on [0, 1] (kernel kinds).
        kernel: keyword-only; ``gaussian`` or ``laplace``.
        bandwidth: keyword-only; kernel bandwidth > 0.
        alpha: keyword-only; deformed family's alpha in (1, 2].
        ridge: keyword-only; ridge penalty $\lambda > 0$ (Eq. 6).

    Shape:
        - query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
        - key, value: (N, S, kdim / vdim), (S, N, ·) or (S, ·).
        - output: like query.  weights: (N, L, S), or (N, H, L, S) with ``average_attn_weights=False``.

    Example:
        >>> import torch
        >>> from attnlab.layers import ContinuousMultiheadAttention
        >>> attn = ContinuousMultiheadAttention(16, 2, batch_first=True, kind="kernel_sparsemax")
        >>> x = torch.randn(3, 10, 16)
        >>> out, w = attn(x, x, x, key_padding_mask=torch.zeros(3, 10, dtype=torch.bool))
        >>> out.shape, w.shape
        (torch.Size([3, 10, 16]), torch.Size([3, 10, 10]))
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None, *,
                 kind: str = "kernel_sparsemax", n_basis: int = 32, grid_size: int = 256, kernel: str = "gaussian",
                 bandwidth: float = 0.05, alpha: float = 2.0, ridge: float = 0.1):
        super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
                         batch_first, device, dtype)
        _check_choice("kind", kind, SEQUENCE_KINDS)
        _check_choice("kernel", kernel, KERNELS)
        self.kind, self.kernel = kind, kernel
        # kernel attention's f = sum_j s_j k(t, t_j) sees a constant added to a row of scores: float masks as given
        self._shift_float_masks = not kind.startswith("kernel")
        self.grid_size = _check_int(grid_size, "grid_size", 2)
        self.bandwidth = check_positive(bandwidth, "bandwidth")
        self.alpha = _check_alpha_deformed(alpha)
        self.ridge = check_positive(ridge, "ridge", " (the ridge penalty of Eq. 6)")
        # (fixed by n_basis: not in the state dict, which then holds nn.MultiheadAttention's keys only)
        n_basis = _check_n_basis(n_basis)
        _check_table_size(n_basis, 0, self.grid_size, "n_basis")
        self.basis = GaussianBasis(n_basis, dtype=dtype, persistent=False).to(device=device)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # state dicts of earlier releases hold the fixed basis (basis.mu, basis.sigma): taken out where they equal
        # this layer's, an error naming n_basis where they do not
        for name in ("mu", "sigma"):
            key = f"{prefix}basis.{name}"
            if key in state_dict:
                old, mine = state_dict.pop(key), getattr(self.basis, name)
                if old.shape != mine.shape or not torch.allclose(old.to(mine), mine):
                    error_msgs.append(f"{key}: the state dict's basis ({old.numel()} functions) is not this layer's "
                                      f"(n_basis = {mine.numel()}); build the layer with the n_basis it was saved with")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        r"""Attention of query to key/value, as ``nn.MultiheadAttention.forward``.

        Args:
            query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
            key: (N, S, kdim), (S, N, kdim) or (S, kdim).
            value: (N, S, vdim), (S, N, vdim) or (S, vdim).
            key_padding_mask: (N, S); bool True marks padding (left out of the density and the ridge fit);
                a float mask is added to the scores.
            need_weights: also return the weights of the values (else None).
            attn_mask: (L, S) or (N * num_heads, L, S); bool True = not allowed; a float mask is added.
            average_attn_weights: average the returned weights over the heads.
            is_causal: hint that attn_mask is causal; without attn_mask the causal mask is built.

        Returns:
            ``(output, weights)``: output like query; weights (N, L, S) (or (N, H, L, S) with
            ``average_attn_weights=False``), None when ``need_weights=False``.
        """
        return super().forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                               is_causal)

    #: the base class hands _attend the key_padding_mask as well (padding is absent: the keys are re-spaced)
    _takes_padding = True

    def _attend(self, q, k, v, mask, query, need_weights, padding=None):
        # the basis by its size (it is fixed by n_basis): its tables are built in the computation's dtype (the
        # buffers, built in float32 and cast by .double(), held the centres and widths rounded to float32)
        return _continuous_attention(q, k, v, mask, self.dropout if self.training else 0.0, False, None,
                                     kind=self.kind, basis=None, n_basis=self.basis.n, grid_size=self.grid_size,
                                     kernel=self.kernel, bandwidth=self.bandwidth, alpha=self.alpha, ridge=self.ridge,
                                     return_weights=True, return_density=False,
                                     padding=None if padding is None else padding[:, None, :])   # (N, 1, S)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", kind={self.kind!r}"


class SequenceContinuousAttention(ContinuousMultiheadAttention):
    """Deprecated: one-head :class:`ContinuousMultiheadAttention` with the old calling convention
    ``forward(query, key=None, value=None, key_padding_mask=None)`` (batch first, one output).  Will be
    removed in the next release."""

    def __init__(self, embed_dim: int, kind: str = "kernel_sparsemax", n_basis: int = 32, grid_size: int = 256,
                 kernel: str = "gaussian", bandwidth: float = 0.05, alpha: float = 2.0, ridge: float = 0.1,
                 bias: bool = True):
        deprecated("SequenceContinuousAttention", "ContinuousMultiheadAttention(embed_dim, num_heads, "
                   "batch_first=True, kind=...)")
        super().__init__(embed_dim, 1, bias=bias, batch_first=True, kind=kind, n_basis=n_basis,
                         grid_size=grid_size, kernel=kernel, bandwidth=bandwidth, alpha=alpha, ridge=ridge)

    def forward(self, query, key=None, value=None, key_padding_mask=None):
        key = query if key is None else key
        value = key if value is None else value
        return super().forward(query, key, value, key_padding_mask, need_weights=False)[0]
