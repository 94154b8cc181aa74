"""Deformed (beta-)exponentials and logarithms, the alpha-division and the softplus smoothing.

Kernel Multimodal Continuous Attention, Eq. 5, Lemma 5.3, App. E.1 and Def. E.4 (Eq. 20):

    exp_beta(t)      = [1 + (1 - beta) t]_+^{1/(1 - beta)}     (beta != 1),   exp(t) for beta = 1
    log_beta(t)      = (t^{1 - beta} - 1)/(1 - beta)          (t > 0, beta != 1), log t for beta = 1
    x (/)_alpha y    = [x^{1-alpha} - y^{1-alpha} + 1]_+^{1/(1-alpha)}   (alpha-division, App. E.1)
    exp_{rho,beta}(t)= [rho^{-1} log(1 + exp(rho [1 + (1 - beta) t]))]^{1/(1 - beta)}   (Eq. 20)

The attention density map is exp_{2-alpha} for Tsallis index alpha in (1, 2] (beta = 2 - alpha):
exp_{2-alpha}(t) = [1 + (alpha - 1) t]_+^{1/(alpha - 1)}; alpha = 2 is sparsemax (exp_0 = relu(1 + t)).
Note: Lemma 5.3 uses log_alpha (index alpha), which is NOT the inverse of exp_{2-alpha}; the inverse is
log_{2-alpha}.

All functions take torch tensors (differentiable) or floats/numpy arrays (via torch, returned as
tensors) and an `mp_*` twin in mpmath for high-precision references.

Near beta = 1 (alpha near 1) the power 1/(1 - beta) is large and base^{1/(1-beta)} multiplies the rounding
of base = 1 + (1 - beta) t by it (exp_2ma(0.3, 1 + 1e-12) was off by 4.4e-5 relative, 10 % at 1 + 1e-15);
there, exponent 1/(1 - beta) > 2, the power is exp(log1p((1 - beta) t) / (1 - beta)) (and log_beta is
expm1((1 - beta) log t) / (1 - beta), the alpha-division exp(log1p(d)/(1 - alpha)) with
d = expm1((1 - alpha) log x) - expm1((1 - alpha) log y)), accurate to a few ulps of the exponent.

exp_{rho,beta} is a power of softplus(x)/rho, x = rho [1 + (1 - beta) t]: where that base under- or overflows (softplus
below x = -745, or rho near the ends of the range) its log, x + log(log1p(e^x)/e^x) - log rho, is raised instead, so a
root 1/(1 - beta) < 1 of an underflowing base is not 0 (exp_{1,-1000}(-1) = 0.368).  Against mpmath for beta in
[-1000, 1), rho in [1e-300, 1e300]: within 2 eps times the condition number of the evaluation (that of x's rounding).
"""
from __future__ import annotations

import math

import torch

from attnlab.numerics.exact import softplus

__all__ = ["check_alpha", "exp_beta", "log_beta", "exp_2ma", "log_alpha", "alpha_division",
           "exp_rho_beta", "mp_exp_beta", "mp_log_beta", "mp_exp_rho_beta", "mp_alpha_division"]


def check_alpha(alpha: float, name: str = "alpha") -> float:
    """The paper assumes the Tsallis index 1 < alpha <= 2 throughout: a number (not a string or a bool) in
    (1, 2], returned as a float."""
    if isinstance(alpha, (str, bool)):
        raise ValueError(f"{name} must be a number in (1, 2]; got {alpha!r}")
    a = float(alpha)
    if not (math.isfinite(a) and 1.0 < a <= 2.0):
        raise ValueError(f"{name} must lie in (1, 2]; got {alpha!r}")
    return a


def _t(x):
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float64)


def _check_beta(beta, allowed: str) -> None:
    """beta a finite number (not a string or a bool): NaN gave exp_beta = 0 and -inf gave 1 everywhere."""
    if isinstance(beta, (str, bool)) or not math.isfinite(float(beta)):
        raise ValueError(f"beta must be a finite number{allowed}; got {beta!r}")


def _check_positive(x: torch.Tensor, name: str) -> None:
    """x > 0 everywhere (NaN refused): the alpha-division of a negative x was NaN or +inf depending on alpha."""
    if not bool(torch.all(x > 0)):
        raise ValueError(f"{name} must be > 0 everywhere (log_alpha is defined for t > 0 only)")


def exp_beta(t, beta: float) -> torch.Tensor:
    """beta-exponential, Eq. 5, for a finite beta <= 1 (others refused).  For beta < 1 it is 0 where
    1 + (1 - beta) t <= 0 (sparse support)."""
    t = _t(t)
    _check_beta(beta, " <= 1")
    beta = float(beta)
    if beta == 1.0:
        return torch.exp(t)
    if beta > 1.0:
        raise ValueError(f"beta must be <= 1 here (fat-tailed beta > 1 is not used by the paper); got {beta}")
    k = 1.0 - beta
    e = 1.0 / k
    if e <= 2.0:
        base = torch.relu(1.0 + k * t)
        return base if e == 1.0 else base ** e
    return _pow_log1p(k * t, e)


def _pow_log1p(x, e):
    """[1 + x]_+^e as exp(e log1p(x)) (0 where x <= -1, with a zero gradient there): the rounding of 1 + x is
    not raised to the power e."""
    pos = x > -1
    return torch.where(pos, torch.exp(e * torch.log1p(torch.where(pos, x, torch.zeros_like(x)))),
                       torch.zeros_like(x))


def exp_2ma(t, alpha: float) -> torch.Tensor:
    """exp_{2-alpha}(t) = [1 + (alpha - 1) t]_+^{1/(alpha-1)}, the kernel deformed density map."""
    return exp_beta(t, 2.0 - check_alpha(alpha))


def log_beta(t, beta: float) -> torch.Tensor:
    """beta-logarithm (t > 0): (t^{1-beta} - 1)/(1 - beta), log t for beta = 1."""
    t = _t(t)
    if bool(torch.any(t <= 0)):
        raise ValueError("log_beta is defined for t > 0 only")
    _check_beta(beta, "")
    beta = float(beta)
    if beta == 1.0:
        return torch.log(t)
    k = 1.0 - beta
    if 1.0 / k > 2.0:                      # (module docstring: t^k - 1 cancels for small k)
        return torch.expm1(k * torch.log(t)) / k
    return (t ** k - 1.0) / k


def log_alpha(z, alpha: float) -> torch.Tensor:
    """log_alpha Z = (Z^{1-alpha} - 1)/(1 - alpha): the deformed log-normalizer A_alpha of Lemma 5.3."""
    return log_beta(z, check_alpha(alpha))


def alpha_division(x, y, alpha: float) -> torch.Tensor:
    """x (/)_alpha y = [x^{1-alpha} - y^{1-alpha} + 1]_+^{1/(1-alpha)}, with
    log_alpha x - log_alpha y = log_alpha(x (/)_alpha y) where the bracket is positive (App. E.1).  Where it
    is <= 0 no quotient exists (log_alpha x - log_alpha y >= 1/(alpha-1), the sup of log_alpha) and the
    result is +inf, the limit as the bracket falls to 0 (the exponent 1/(1-alpha) is negative).  x and y must be
    > 0, the domain of log_alpha (others refused: a negative x gave NaN or +inf depending on alpha)."""
    a = check_alpha(alpha)
    x, y = _t(x), _t(y)
    _check_positive(x, "x")
    _check_positive(y, "y")
    c = 1.0 - a
    if 1.0 / -c <= 2.0:
        return torch.relu(x ** c - y ** c + 1.0) ** (1.0 / c)
    # near alpha = 1 (exponent 1/(1 - alpha) beyond -2): the bracket as 1 + d, d = expm1(c log x) - expm1(c log y),
    # and its power as exp(log1p(d) / c) (the module docstring's remedy; the plain form was off by 1.2e-4
    # relative at alpha = 1 + 1e-12)
    d = torch.expm1(c * torch.log(x)) - torch.expm1(c * torch.log(y))
    inside = d > -1.0
    q = torch.exp(torch.log1p(torch.where(inside, d, torch.zeros_like(d))) / c)
    return torch.where(inside, q, torch.full_like(q, math.inf))


def exp_rho_beta(t, rho: float, beta: float) -> torch.Tensor:
    """Softplus-smoothed beta-exponential, Def. E.4 / Eq. 20; -> exp_beta(t) as rho -> infinity,
    with 0 <= exp_{rho,0}(t) - exp_0(t) <= ln 2 / rho (sup attained at t = -1)."""
    t = _t(t)
    rho, beta = float(rho), float(beta)
    if not (math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a finite number > 0; got {rho!r}")
    _check_beta(beta, " < 1 for the softplus smoothing")
    if not beta < 1.0:
        raise ValueError(f"beta must be < 1 for the softplus smoothing; got {beta!r}")
    # softplus(x) = log(1 + e^x) in the exact form (torch's F.softplus drops e^-x above x = 20)
    k = 1.0 - beta
    e = 1.0 / k
    x = rho * (1.0 + k * t)
    if e <= 2.0:
        sp = softplus(x)
        base = sp / rho
        # where base under- or overflows, by its log (softplus(-1000) = e^-1000 underflowed before its 1/1001 root:
        # 0 for 0.368); the power of a base set to 1 there (0^(1/1001) has an infinite gradient: 0 * inf = NaN)
        fi = torch.finfo(base.dtype)
        ok = (sp >= fi.tiny) & (base >= fi.tiny) & (base <= fi.max)
        if bool(ok.all()):
            return base if e == 1.0 else base ** e
        bs = torch.where(ok, base, torch.ones_like(base))
        return torch.where(ok, bs if e == 1.0 else bs ** e, torch.exp(e * _log_softplus_over(x, rho)))
    # base = softplus(x) / rho = 1 + k t + log1p(e^-x) / rho for x > 0: its log by log1p (module docstring)
    pos = x > 0
    xp = torch.where(pos, x, torch.ones_like(x))
    log_base = torch.where(pos, torch.log1p(k * t + softplus(-xp) / rho),
                           _log_softplus_over(torch.where(pos, -torch.ones_like(x), x), rho))
    return torch.exp(e * log_base)


def _log_softplus_over(x, rho: float):
    """log(softplus(x) / rho) without under- or overflow: x + log(log1p(u) / u) - log rho, u = e^x, for x <= 0
    (softplus(x) = e^x (1 - e^x/2 + ...) underflows below x = -745 where its log is about x), log softplus(x) -
    log rho above."""
    neg = x <= 0
    u = torch.exp(torch.where(neg, x, torch.zeros_like(x)))
    big = u >= torch.finfo(u.dtype).tiny           # (log1p of a subnormal u gave 0 on the CPU: log 0)
    us = torch.where(big, u, torch.ones_like(u))
    ratio = torch.where(big, torch.log1p(us) / us, torch.ones_like(u))         # log1p(u)/u = 1 - u/2 + ... -> 1
    low = torch.where(neg, x, torch.zeros_like(x)) + torch.log(ratio)
    high = torch.log(softplus(torch.where(neg, torch.ones_like(x), x)))
    return torch.where(neg, low, high) - math.log(rho)


# ---- mpmath twins (high-precision references) -------------------------------------------------

def mp_exp_beta(t, beta):
    import mpmath as mp

    beta = mp.mpf(beta)
    if not mp.isfinite(beta):                # as exp_beta: NaN and +-inf refused
        raise ValueError(f"beta must be a finite number <= 1; got {beta}")
    if beta == 1:
        return mp.exp(t)
    if beta > 1:                       # as exp_beta: the fat-tailed branch is not the paper's
        raise ValueError(f"beta must be <= 1 here (fat-tailed beta > 1 is not used by the paper); got {beta}")
    base = 1 + (1 - beta) * t
    return mp.mpf(0) if base <= 0 else base ** (1 / (1 - beta))


def mp_log_beta(t, beta):
    import mpmath as mp

    beta = mp.mpf(beta)
    if t <= 0:
        raise ValueError("log_beta is defined for t > 0 only")
    if not mp.isfinite(beta):
        raise ValueError(f"beta must be a finite number; got {beta}")
    return mp.log(t) if beta == 1 else (t ** (1 - beta) - 1) / (1 - beta)


def mp_alpha_division(x, y, alpha):
    """alpha_division in mpmath: +inf where the bracket is <= 0 (as the float64 version)."""
    import mpmath as mp

    a = mp.mpf(alpha)
    if not (x > 0 and y > 0):                # as alpha_division: log_alpha is defined for t > 0 only
        raise ValueError(f"x and y must be > 0 (log_alpha is defined for t > 0 only); got x={x}, y={y}")
    c = 1 - a
    d = mp.expm1(c * mp.log(x)) - mp.expm1(c * mp.log(y))     # the bracket - 1, without its rounding near alpha = 1
    return mp.inf if d <= -1 else mp.exp(mp.log1p(d) / c)


def mp_exp_rho_beta(t, rho, beta):
    """Eq. 20 in mpmath.  For complex t: principal branches of log and of the outer power
    (Claim 2), i.e. log(1 + e^x) with 1 + e^x on the principal sheet and s^{1/(1-beta)} = e^{log s/(1-beta)}."""
    import mpmath as mp

    rho, beta = mp.mpf(rho), mp.mpf(beta)
    x = rho * (1 + (1 - beta) * t)
    if isinstance(x, mp.mpc):
        sp = mp.log(1 + mp.exp(x))
    else:
        sp = x + mp.log1p(mp.exp(-x)) if x > 0 else mp.log1p(mp.exp(x))
    return (sp / rho) ** (1 / (1 - beta))
