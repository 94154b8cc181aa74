"""Instances shared by the kernel claims, figures and the compare command (seeded, documented).

Kernel Multimodal Continuous Attention: Cor E.3 (instance on R), App. E.3 (sparse case on
R), App. E.4 / Fig. 2 (on [0, 1]).  All use the Gaussian kernel k(t, s) = exp(-zeta2 (t - s)^2)
(the paper leaves the kernel of App. E.4 unspecified; zeta2 = 10 is our stated choice) with I = 10
inducing points t_i = linspace(0, 1, 10), and V(t) = sum_i B_i k(t, t_i) (scalar V, as in App. E.4).
"""
from __future__ import annotations

import math

import numpy as np

INDUCING = np.linspace(0.0, 1.0, 10)
ZETA2 = 10.0
SQRT2PI = math.sqrt(2 * math.pi)


def draw(seed: int, gamma_scale: float = 1.0, I: int = 10):
    """gamma_i ~ gamma_scale * U(-1, 1), then B_i ~ U(-1, 1), from default_rng(seed) in that order."""
    rng = np.random.default_rng(seed)
    gamma = gamma_scale * rng.uniform(-1, 1, I)
    B = rng.uniform(-1, 1, I)
    return gamma, B


def kernel_row(t, zeta2=ZETA2, inducing=INDUCING):
    t = np.asarray(t, float)
    return np.exp(-zeta2 * (t[..., None] - inducing) ** 2)


def f_np(t, gamma, zeta2=ZETA2):
    return kernel_row(t, zeta2) @ gamma


def exp2ma_np(x, alpha):
    if alpha == 1.0:
        return np.exp(x)
    return np.maximum(1 + (alpha - 1) * x, 0.0) ** (1 / (alpha - 1))


def integrand_np(t, gamma, B, alpha, base, zeta2=ZETA2, with_V=True):
    """w(t) = q0(t) exp_{2-alpha}(f(t)) V(t) (alpha = 1: exp), float64.
    base: 'normal' (standard normal pdf), 'gauss-unnormalized' (e^{-t^2/2}, App. E.4), 'uniform'."""
    t = np.asarray(t, float)
    K = kernel_row(t, zeta2)
    u = exp2ma_np(K @ gamma, alpha)
    if base == "normal":
        u = u * np.exp(-t * t / 2) / SQRT2PI
    elif base == "gauss-unnormalized":
        u = u * np.exp(-t * t / 2)
    return u * (K @ B) if with_V else u


def integrand_mp(gamma, B, alpha, base, zeta2=ZETA2, with_V=True):
    """mpmath twin of integrand_np (works for complex t when alpha = 1)."""
    import mpmath as mp

    g = [mp.mpf(float(x)) for x in gamma]
    b = [mp.mpf(float(x)) for x in B]
    s = [mp.mpf(float(x)) for x in INDUCING]
    z = mp.mpf(zeta2)
    a = mp.mpf(alpha)

    def w(t):
        k = [mp.exp(-z * (t - si) ** 2) for si in s]
        f = mp.fsum(gi * ki for gi, ki in zip(g, k))
        if alpha == 1.0:
            u = mp.exp(f)
        else:
            x = 1 + (a - 1) * f
            u = mp.mpf(0) if x <= 0 else x ** (1 / (a - 1))
        if base == "normal":
            u = u * mp.exp(-t * t / 2) / mp.sqrt(2 * mp.pi)
        elif base == "gauss-unnormalized":
            u = u * mp.exp(-t * t / 2)
        return u * mp.fsum(bi * ki for bi, ki in zip(b, k)) if with_V else u

    return w


def integrand_arb(gamma, B, base: str = "normal", zeta2=ZETA2, with_V: bool = True):
    """Arb twin of integrand_mp for kernel softmax (alpha = 1: entire, so Arb's bounds on ellipses around the
    path hold), a function of one ball for theory._arb.integral; build and use it inside ``digits(...)``."""
    from flint import arb

    g = [arb(float(x)) for x in gamma]
    b = [arb(float(x)) for x in B]
    s = [arb(float(x)) for x in INDUCING]
    z = arb(float(zeta2))

    def w(t):
        k = [(-z * (t - si) ** 2).exp() for si in s]
        f = sum((gi * ki for gi, ki in zip(g, k)), arb(0))
        if base == "normal":
            u = (f - t * t / 2).exp() / (2 * arb.pi()).sqrt()
        elif base == "gauss-unnormalized":
            u = (f - t * t / 2).exp()
        else:
            u = f.exp()
        return u * sum((bi * ki for bi, ki in zip(b, k)), arb(0)) if with_V else u

    return w


def support_kinks(gamma, alpha, a, b, dps=30, zeta2=ZETA2):
    """Roots of 1 + (alpha - 1) f on [a, b] (the support boundaries), at `dps` digits."""
    import mpmath as mp

    from attnlab.numerics.mp_reference import find_sign_changes, mp_roots

    g = [mp.mpf(float(x)) for x in gamma]
    s = [mp.mpf(float(x)) for x in INDUCING]
    z, am = mp.mpf(zeta2), mp.mpf(alpha)

    def arg(t):
        return 1 + (am - 1) * mp.fsum(gi * mp.exp(-z * (t - si) ** 2) for gi, si in zip(g, s))

    br = find_sign_changes(lambda x: 1 + (alpha - 1) * f_np(x, gamma, zeta2), max(a, -8.0), min(b, 9.0),
                           40001)
    return mp_roots(arg, br, dps)


def log_q0_on(t, base):
    """log q0 on the grid t (torch) for `base` ('normal', 'gauss-unnormalized'; None for 'uniform')."""
    if base == "normal":
        return -t * t / 2 - 0.5 * math.log(2 * math.pi)
    if base == "gauss-unnormalized":
        return -t * t / 2
    if base == "uniform":
        return None
    raise ValueError(f"base must be 'normal', 'gauss-unnormalized' or 'uniform'; got {base!r}")


def library_integrals(t, gamma, B, alpha, base, zeta2=ZETA2, kernel="gaussian", scale=None):
    """(Z, N) on the grid t (torch float64) as the library's kernel attention computes them -- the thing the
    convergence claims measure: Z = int q0 exp_{2-alpha}(f) and N = int q0 exp_{2-alpha}(f) V by the
    trapezoid rule on t, with f = numerics.kernel_family.kernel_expansion(gamma, K), K the Gaussian kernel
    (zeta2) or the Laplace kernel (scale) at INDUCING; density and Z by
    numerics.continuous_attention.kernel_softmax (alpha = 1: Z = exp A, log q0 passed) or kernel_deformed
    (alpha > 1: Algorithm 1, q0 passed); N = Z * context_vector(density, t, Psi, B), V = B Psi with Psi
    the Gaussian kernel sections.  integrand_np / integrand_mp are the independent transcriptions the
    references integrate."""
    import torch

    from attnlab.numerics import continuous_attention as ca
    from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion, laplace_kernel

    ind = torch.as_tensor(INDUCING, dtype=torch.float64)
    Psi = gaussian_kernel(t, ind, zeta2)
    K = Psi if kernel == "gaussian" else laplace_kernel(t, ind, scale)
    f = kernel_expansion(torch.as_tensor(np.asarray(gamma, float)), K)
    log_q0 = log_q0_on(t, base)
    if alpha == 1.0:
        dens, A = ca.kernel_softmax(f, t, log_q0)
        Z = torch.exp(A)
    else:
        dens, Z = ca.kernel_deformed(f, t, alpha, None if log_q0 is None else torch.exp(log_q0))
    c = ca.context_vector(dens, t, Psi, torch.as_tensor(np.asarray(B, float))[None, :])
    return float(Z), float(Z * c[0])
