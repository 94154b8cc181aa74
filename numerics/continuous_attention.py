"""Continuous attention densities and the context vector c = E_p[V(T)], batched and differentiable.

Kernel Multimodal Continuous Attention (Moreno et al., NeurIPS 2022), Sec. 3 (Eqs. 1-6), Sec. 5
(Eq. 8, Lemma 5.3, Cor 5.5, Algorithm 1), App. A (Gaussian mixture), App. E.1 (max shift), App. E.4
(softplus); closed forms of the unimodal baselines from Martins et al. (continuous softmax/sparsemax).

CONVENTIONS (stable API)
- A grid t is a strictly increasing 1-D tensor [G]; integrals are the trapezoid rule on it
  (attnlab.numerics.quadrature.trapezoid).  On R pass a truncated grid (attnlab.numerics.quadrature.real_line_grid)
  wide enough that the density vanishes at its ends; on [a, b] pass uniform_grid(a, b, G).
- Every density returned here is w.r.t. LEBESGUE measure on the grid: for a base measure Q with
  Lebesgue density q0 it is p(t) q0(t), where p is the paper's density w.r.t. Q.  Hence for any
  g: E_p[g] = trapezoid(g * density, t), and `expected_basis` / `context_vector` take it directly.
- Leading dims [...] are batch dims (batch, heads, ...) and broadcast; parameters such as mu, sigma2
  have shape [...]; kernel scores f have shape [..., G].
- Base measure: `q0=None` means q0 = 1 (Lebesgue: uniform on [a, b]); otherwise a tensor [G] or
  [..., G] of q0 on the grid (e.g. the standard normal pdf on R).  `kernel_softmax` takes log_q0.
- Kernel families return (density, normalizer).  Three maps of kernel scores exist for alpha in (1, 2]
  and they are NOT the same function of their input:
    kernel_deformed(f_tilde)          Algorithm 1: p = exp_{2-alpha}(f_tilde)/Z, Z = int exp_{2-alpha}(f_tilde) dQ
    kernel_deformed_threshold(f)      Eq. 2 / Eq. 4: p = exp_{2-alpha}(f - tau), tau solved so int p dQ = 1
    kernel_deformed_max_shift(f)      the released code: p ∝ exp_{2-alpha}(f - max_grid f), normalized
  Lemma 5.3 links the first two exactly: kernel_deformed(f_tilde) == kernel_deformed_threshold(
  f_tilde / Z^{alpha-1}) with tau = log_alpha Z = A_alpha(f).  The third differs: its support is always
  {f > max f - 1/(alpha-1)} (for alpha = 2, within 1 of the max), i.e. the exact map applied to a
  rescaled score (a data-dependent temperature).  For alpha -> 1 (kernel softmax) the max shift is
  exact and invisible.
- Everything is differentiable by autograd; thresholds found by bisection get their gradient from
  one final differentiable Newton step (implicit-function theorem), so d tau/d f is exact.
- The kernel maps (and expected_basis) refuse in one line naming the argument, where they returned NaN: scores
  (or a density) with a NaN or +inf (-inf is a zero weight), kernel_softmax's scores -inf on the whole grid, a q0
  < 0 or not finite, a grid of fewer than 2 nodes, and a normalizer Z that is 0 or overflows its dtype (inf);
  gaussian_density and truncated_parabola_density refuse a mu that is not finite.

FUNCTIONS
    gaussian_rbf(t, centers, widths)                     Psi [N, G], psi_n = N(t; mu_n, sigma_n^2)
    ridge_value_coefficients(H, positions, centers, widths, lam)   B [..., D, N]  (Eq. 6)
    value_function(B, Psi)                               V [..., D, G] = B Psi
    expected_basis(density, t, Psi)                      E_p[psi] [..., N]
    context_vector(density, t, Psi, B)                   c = B E_p[psi]  [..., D]      (Eq. 1)
    gaussian_density(t, mu, sigma2, domain=None)         continuous softmax (truncated to domain)
    truncated_parabola_radius(mu, sigma2, domain=None)   support half-width r of continuous sparsemax
    truncated_parabola_density(t, mu, sigma2, domain=None)
    gaussian_mixture_density(t, weights, mu, sigma2, domain=None)
    gaussian_rbf_expectation / truncated_parabola_rbf_expectation / gaussian_mixture_rbf_expectation
                                                         closed-form E_p[psi] [..., N] (domain R or [a, b])
    kernel_softmax(f, t, log_q0=None)                    (density, log Z)   kernel exponential family (Eq. 8)
    kernel_deformed(f_tilde, t, alpha, q0=None)          (density, Z)       Algorithm 1
    kernel_deformed_threshold(f, t, alpha, q0=None)      (density, tau)     Eq. 2 with tau solved
    kernel_deformed_max_shift(f, t, alpha, q0=None)      (density, Z)       reference-code convention
    kernel_deformed_softplus(f_tilde, t, alpha, rho, q0=None)  (density, Z) Eq. 20 in Algorithm 1
"""
from __future__ import annotations

import math

import torch

from attnlab.numerics.deformed_exp import check_alpha, exp_2ma, exp_rho_beta
from attnlab.numerics.quadrature import trapezoid, trapezoid_weights

__all__ = ["gaussian_rbf", "ridge_value_coefficients", "value_function", "expected_basis",
           "context_vector", "gaussian_density", "truncated_parabola_radius",
           "truncated_parabola_density", "gaussian_mixture_density", "gaussian_rbf_expectation",
           "truncated_parabola_rbf_expectation", "gaussian_mixture_rbf_expectation",
           "kernel_softmax", "kernel_deformed", "kernel_deformed_threshold",
           "kernel_deformed_max_shift", "kernel_deformed_softplus", "escort_weights"]

_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------------------------
# internal utilities
def _tensor(x, like=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    dt = like.dtype if isinstance(like, torch.Tensor) else torch.float64
    dev = like.device if isinstance(like, torch.Tensor) else None
    return torch.as_tensor(x, dtype=dt, device=dev)


def _positive_tensor(x, name, like=None) -> torch.Tensor:
    x = _tensor(x, like)
    if not bool(torch.all(torch.isfinite(x) & (x > 0))):
        raise ValueError(f"{name} must be finite and > 0 everywhere")
    return x


def _finite_tensor(x, name, like=None) -> torch.Tensor:
    x = _tensor(x, like)
    if not bool(torch.all(torch.isfinite(x))):
        raise ValueError(f"{name} must be finite everywhere (no NaN/inf)")
    return x


def _domain(domain):
    if domain is None:
        return None
    if isinstance(domain, str) and domain.upper() == "R":
        return None
    try:
        a, b = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise ValueError(f"domain must be None/'R' or a pair (a, b); got {domain!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise ValueError(f"domain (a, b) must be finite with b > a; got {domain!r}")
    return a, b


def _std_pdf(x):
    return torch.exp(-0.5 * x * x) / _SQRT2PI


def _ndtr(x):
    return torch.special.ndtr(x)


# The truncated densities below are computed in float64 whatever the input dtype (and cast back): with
# mu far outside [a, b] the normal mass and the parabola's r^2 - (t - mu)^2 cancel catastrophically in
# float32 (a continuous-sparsemax density of mass 3.4e7 at mu = 1e3).  Beyond MAX_OUTSIDE standard
# deviations (or supports) even float64 cannot resolve them, and the call says so.
MAX_OUTSIDE = 1e6


# Gauss-Legendre nodes and weights on [-1, 1] (16 points) for the mass of a narrow interval
_GL_X, _GL_W = (torch.from_numpy(a) for a in __import__("numpy").polynomial.legendre.leggauss(16))


def _log_interval_mass(lo, hi):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, without underflow: on the side of the smaller tail,
    log Phi(h) + log1p(-exp(log Phi(l) - log Phi(h))).  That difference of logs carries their rounding,
    a relative error eps |log Phi| / |log Phi(h) - log Phi(l)| (5e-11 for a width of 1e-6 near 0); where
    the interval is narrow, (h - l)(|mid| + 1) <= 1/2, the mass is integrated instead: with x = m + r s,
    m = (l + h)/2, r = (h - l)/2, log mass = log r - m^2/2 - log sqrt(2 pi) + log int_{-1}^{1}
    exp(-r s (2m + r s)/2) ds, an entire integrand of bounded exponent that 16-point Gauss-Legendre
    integrates to rounding."""
    flip = (lo + hi) > 0
    l_ = torch.where(flip, -hi, lo)
    h_ = torch.where(flip, -lo, hi)
    lh, ll = torch.special.log_ndtr(h_), torch.special.log_ndtr(l_)
    m, r = (l_ + h_) / 2, (h_ - l_) / 2
    narrow = 2 * r * (m.abs() + 1) <= 0.5
    d = torch.where(narrow, torch.full_like(lh, -1.0), torch.clamp(ll - lh, max=0.0))   # finite where unused
    wide = lh + torch.log1p(-torch.exp(d))
    if not bool(narrow.any()):
        return wide
    xs, ws = _GL_X.to(m), _GL_W.to(m)
    rs = r[..., None] * xs
    rn = torch.where(narrow, r, torch.ones_like(r))             # log r only where it is used
    inner = torch.logsumexp(torch.log(ws) - rs * (2 * m[..., None] + rs) / 2, -1)
    gl = torch.log(rn) - m * m / 2 - math.log(_SQRT2PI) + inner
    return torch.where(narrow, gl, wide)


def _check_outside(mu, scale, dom, what: str):
    a, b = dom
    dist = torch.clamp(torch.maximum(a - mu, mu - b), min=0.0) / scale
    if bool((dist > MAX_OUTSIDE).any()):
        raise ValueError(f"mu lies {float(dist.max()):.3g} {what} outside the domain [{a:g}, {b:g}]; the truncated "
                         f"density is not computable in float64 beyond {MAX_OUTSIDE:g} (move mu or widen the domain)")


def _q0_on_grid(q0, t, like):
    if q0 is None:
        return torch.ones_like(t, dtype=like.dtype)
    q0 = _tensor(q0, like).to(like)
    if q0.shape[-1] != t.shape[0]:
        raise ValueError(f"q0 must have last dim {t.shape[0]} (the grid); got shape {tuple(q0.shape)}")
    if not bool(torch.all((q0 >= 0) & (q0 < math.inf))):      # (a NaN q0 passed `q0 < 0` and gave a NaN density)
        raise ValueError("q0 (base density on the grid) must be finite and >= 0 (no NaN)")
    return q0


def _check_scores(f, t, name="f"):
    """f a floating tensor [..., G] on the grid t (1-D, >= 2 nodes: an empty t gave an IndexError from max()), with
    no NaN and no +inf (a NaN score gave an all-NaN density); -inf is a zero weight."""
    if t.ndim != 1 or t.shape[0] < 2:          # (trapezoid_weights' message, before anything indexes the grid)
        raise ValueError(f"t (grid) must be a 1-D tensor with >= 2 nodes; got shape {tuple(t.shape)}")
    if not isinstance(f, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of shape [..., G]")
    if not f.is_floating_point():              # (weights cast to an integer dtype were truncated to 0)
        raise ValueError(f"{name} must be a floating-point tensor; got dtype {f.dtype}")
    if f.ndim == 0 or f.shape[-1] != t.shape[0]:
        raise ValueError(f"{name} must have last dim G={t.shape[0]} (the grid); got {tuple(f.shape)}")
    if not bool(torch.all(f < math.inf)):      # one reduction for NaN and +inf
        raise ValueError(f"{name} must hold no NaN or +inf (-inf is a zero weight)")


def _check_normalizer(u, Z, empty: str, overflow: str):
    """Z > 0 (else ValueError(empty)) and u, Z finite (else ValueError(overflow)): only Z <= 0 was checked, and Z = inf
    (exp_{2-alpha} of scores 1e6 at alpha = 1.01) gave an all-NaN density, inf / inf."""
    if bool(torch.any(Z <= 0)):
        raise ValueError(empty)
    if not (bool(torch.all(torch.isfinite(Z))) and bool(torch.all(torch.isfinite(u)))):
        raise ValueError(overflow.format(dtype=u.dtype))


# --------------------------------------------------------------------------------------------
# value function V = B Psi (Sec. 3, Eq. 6; App. F)
def gaussian_rbf(t, centers, widths) -> torch.Tensor:
    """Psi [N, G]: psi_n(t) = N(t; mu_n, sigma_n^2), normalized Gaussian pdfs (widths = sigma_n)."""
    t = _tensor(t)
    c = _tensor(centers, t).to(t)
    s = _positive_tensor(widths, "widths", t).to(t)
    c, s = torch.broadcast_tensors(c, s)
    if c.ndim != 1:
        raise ValueError("centers and widths must be 1-D (N,)")
    return _std_pdf((t[None, :] - c[:, None]) / s[:, None]) / s[:, None]


def ridge_value_coefficients(H, positions, centers, widths, lam: float = 0.01) -> torch.Tensor:
    """Eq. 6: B* = argmin ||B F - H||_F^2 + lam ||B||_F^2 = H F^T (F F^T + lam I_N)^{-1},
    F_{nl} = psi_n(t_l).  H: [..., D, L] observations at `positions` [L]; returns B [..., D, N]."""
    if isinstance(lam, (str, bool)) or not (math.isfinite(float(lam)) and float(lam) >= 0):
        raise ValueError(f"lam (ridge penalty) must be a finite number >= 0; got {lam!r}")
    H = _tensor(H)
    pos = _tensor(positions, H).to(H)
    F = gaussian_rbf(pos, centers, widths).to(H)          # [N, L]
    if H.shape[-1] != F.shape[1]:
        raise ValueError(f"H's last dim ({H.shape[-1]}) must equal len(positions) ({F.shape[1]})")
    if float(lam) == 0.0:
        # F F^T alone is singular where F has rank < N (coincident positions, or fewer distinct positions than
        # basis functions): torch.linalg.solve raised its own error, or returned numbers of size 1e2 from rounding
        with torch.no_grad():
            sv = torch.linalg.svdvals(F.detach())
        N = F.shape[0]
        if F.shape[1] < N or not bool(sv[-1] ** 2 > N * torch.finfo(F.dtype).eps * sv[0] ** 2):
            raise ValueError(f"lam: the ridge system F F^T is singular at lam = 0 (coincident positions, or fewer "
                             f"distinct positions than the N = {N} basis functions); give lam > 0")
    A = F @ F.T + float(lam) * torch.eye(F.shape[0], dtype=H.dtype, device=H.device)
    # B = H F^T A^{-1}  <=>  A B^T = F H^T  (A symmetric): solve instead of inverting
    G = torch.linalg.solve(A, F)                                  # A^{-1} F  [N, L]
    return H @ G.T


def value_function(B, Psi) -> torch.Tensor:
    """V(t) = B Psi(t): [..., D, G]."""
    return _tensor(B, Psi) @ Psi


def expected_basis(density, t, Psi) -> torch.Tensor:
    """E_p[psi_n] = int psi_n(t) density(t) dt by the trapezoid rule: [..., N] (Algorithm 1, step 2)."""
    _check_scores(density, t, "density")
    if Psi.shape[-1] != t.shape[0]:
        raise ValueError(f"Psi must have last dim G={t.shape[0]}; got {tuple(Psi.shape)}")
    w = trapezoid_weights(t).to(density)
    # sum_g Psi[n, g] w_g density[..., g]: one matmul, linear in G and N
    return (density * w) @ Psi.transpose(-1, -2).to(density)


def context_vector(density, t, Psi, B) -> torch.Tensor:
    """c = E_p[V(T)] = B E_p[Psi(T)]: [..., D] (Eq. 1; Algorithm 1, step 3).  B: [D, N] or [..., D, N]."""
    r = expected_basis(density, t, Psi)
    B = _tensor(B, r).to(r)
    if B.shape[-1] != r.shape[-1]:
        raise ValueError(f"B's last dim ({B.shape[-1]}) must equal the number of basis functions ({r.shape[-1]})")
    return (B @ r.unsqueeze(-1)).squeeze(-1)


# --------------------------------------------------------------------------------------------
# continuous softmax: Gaussian (alpha = 1, f = theta^T (t, t^2))
def gaussian_density(t, mu, sigma2, domain=None) -> torch.Tensor:
    """N(t; mu, sigma2) on R, or renormalized to [a, b] (the Eq. 2 solution with S = [a, b]); on [a, b]
    computed in float64 log space (exact mass for mu far outside the domain), cast back to t's dtype."""
    t = _tensor(t)
    mu = _finite_tensor(mu, "mu", t)            # (mu = NaN gave an all-NaN density)
    sigma2 = _positive_tensor(sigma2, "sigma2", t)
    dom = _domain(domain)
    if dom is None:
        s = torch.sqrt(sigma2)[..., None]
        return _std_pdf((t - mu[..., None]) / s) / s
    dt = torch.promote_types(t.dtype, mu.dtype)
    t64, mu64, s64 = t.double(), mu.double(), torch.sqrt(sigma2.double())
    _check_outside(mu64.detach(), s64.detach(), dom, "standard deviations")
    a, b = dom
    x = (t64 - mu64[..., None]) / s64[..., None]
    logmass = _log_interval_mass((a - mu64) / s64, (b - mu64) / s64)
    logp = -0.5 * x * x - math.log(_SQRT2PI) - torch.log(s64)[..., None] - logmass[..., None]
    inside = (t64 >= a) & (t64 <= b)
    p = torch.where(inside, torch.exp(torch.where(inside, logp, torch.zeros_like(logp))), torch.zeros_like(logp))
    return p.to(dt)


def gaussian_rbf_expectation(mu, sigma2, centers, widths, domain=None) -> torch.Tensor:
    """Closed form E_p[psi_n], p = N(mu, sigma2) (truncated to [a, b] if given): [..., N].
    On R: N(mu; mu_n, sigma2 + sigma_n^2).  On [a, b]: N(mu; mu_n, sigma2 + sigma_n^2) times the ratio of
    two interval masses, in float64 log space (cast back)."""
    mu = _tensor(mu)
    sigma2 = _positive_tensor(sigma2, "sigma2", mu)
    c = _tensor(centers, mu).to(mu)
    s2 = _positive_tensor(widths, "widths", mu).to(mu) ** 2
    dom = _domain(domain)
    if dom is None:
        m, v = mu[..., None], sigma2[..., None]
        tot = v + s2
        return _std_pdf((m - c) / torch.sqrt(tot)) / torch.sqrt(tot)
    dt = mu.dtype
    mu64, sig2_64, c64, s2_64 = mu.double(), sigma2.double(), c.double(), s2.double()
    _check_outside(mu64.detach(), torch.sqrt(sig2_64).detach(), dom, "standard deviations")
    a, b = dom
    m, v = mu64[..., None], sig2_64[..., None]
    tot = v + s2_64
    # N(t; mu, v) N(t; c, s2) = N(mu; c, v + s2) N(t; m*, v*)
    log_out = -0.5 * (m - c64) ** 2 / tot - 0.5 * torch.log(2 * math.pi * tot)
    vs = v * s2_64 / tot
    ms = (m * s2_64 + c64 * v) / tot
    sd = torch.sqrt(vs)
    log_part = _log_interval_mass((a - ms) / sd, (b - ms) / sd)
    sig = torch.sqrt(sig2_64)
    log_mass = _log_interval_mass((a - mu64) / sig, (b - mu64) / sig)
    return torch.exp(log_out + log_part - log_mass[..., None]).to(dt)


# --------------------------------------------------------------------------------------------
# continuous sparsemax: truncated parabola (alpha = 2), p = [(r^2 - (t - mu)^2)/(2 sigma2)]_+
def _parabola_mass(r, mu, sigma2, a, b):
    """(mass on [a, b], support width) of [(r^2 - (t - mu)^2)/(2 sigma2)]_+.  With A = hi - mu, B = lo - mu and
    w = hi - lo the mass is w (3 r^2 - A^2 - AB - B^2) / (6 sigma2), summed as w (2 (r^2 - A^2) + (r^2 - B^2)
    + A w) / (6 sigma2) with r^2 - X^2 = (r - |X|)(r + |X|): with mu far outside the domain r and |A| are
    large and nearly equal, and r^2 w - (A^3 - B^3)/3 lost 8 digits of the mass at mu = 1e3."""
    lo = torch.maximum(mu - r, torch.full_like(r, a))
    hi = torch.minimum(mu + r, torch.full_like(r, b))
    hi = torch.maximum(hi, lo)
    A, B, w = hi - mu, lo - mu, hi - lo
    rA = (r - A.abs()) * (r + A.abs())
    rB = (r - B.abs()) * (r + B.abs())
    m = w * (2 * rA + rB + A * w) / (6 * sigma2)
    return m, w


def truncated_parabola_radius(mu, sigma2, domain=None, iters: int = 200) -> torch.Tensor:
    """Support half-width r of continuous sparsemax: p = [(r^2 - (t-mu)^2)/(2 sigma2)]_+ with
    int_S p = 1.  On R: r = (3 sigma2 / 2)^{1/3} (so lambda = -r^2/(2 sigma2) = -1/2 (3/(2 sigma))^{2/3}).
    On [a, b]: r solved by bisection (mass is increasing in r), then one differentiable Newton step."""
    mu = _tensor(mu)
    sigma2 = _positive_tensor(sigma2, "sigma2", mu)
    dom = _domain(domain)
    if dom is None:
        return (1.5 * sigma2) ** (1.0 / 3.0)
    a, b = dom
    with torch.no_grad():
        mu_d, s2_d = mu.detach() * torch.ones_like(sigma2), sigma2.detach() * torch.ones_like(mu)
        R0 = torch.maximum((a - mu_d).abs(), (b - mu_d).abs())
        lo = torch.zeros_like(R0)
        hi = torch.sqrt(R0 ** 2 + 2 * s2_d / (b - a)) * 1.001 + 1e-12
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            m, _ = _parabola_mass(mid, mu_d, s2_d, a, b)
            big = m > 1
            hi = torch.where(big, mid, hi)
            lo = torch.where(big, lo, mid)
            if bool(torch.all(hi - lo <= 1e-15 * (1 + hi))):
                break
        r0 = 0.5 * (lo + hi)
    m, width = _parabola_mass(r0, mu, sigma2, a, b)
    # d mass / d r = r |support| / sigma2 (the integrand vanishes at moving ends)
    return r0 - (m - 1) / (r0 * width / sigma2)


def truncated_parabola_density(t, mu, sigma2, domain=None) -> torch.Tensor:
    """Continuous sparsemax density on the grid: [(r^2 - (t - mu)^2)/(2 sigma2)]_+ (0 off the domain).
    On [a, b] computed in float64 as (r - |t - mu|)(r + |t - mu|) (cast back): with mu far outside the
    domain r and |t - mu| nearly cancel."""
    t = _tensor(t)
    mu = _finite_tensor(mu, "mu", t)            # (mu = NaN gave an all-NaN density)
    sigma2 = _positive_tensor(sigma2, "sigma2", t)
    dom = _domain(domain)
    if dom is None:
        r = truncated_parabola_radius(mu, sigma2, domain)
        return torch.relu((r[..., None] ** 2 - (t - mu[..., None]) ** 2) / (2 * sigma2[..., None]))
    dt = torch.promote_types(t.dtype, mu.dtype)
    t64, mu64, s2_64 = t.double(), mu.double(), sigma2.double()
    _check_outside(mu64.detach(), torch.sqrt(s2_64).detach() + (dom[1] - dom[0]), dom, "widths (sigma + b - a)")
    r = truncated_parabola_radius(mu64, s2_64, domain)[..., None]
    d = (t64 - mu64[..., None]).abs()
    p = torch.relu((r - d) * (r + d) / (2 * s2_64[..., None]))
    p = p * ((t64 >= dom[0]) & (t64 <= dom[1])).to(p.dtype)
    return p.to(dt)


def _gauss_interval_moments(c, s, lo, hi):
    """int_lo^hi (t - c)^k N(t; c, s^2) dt for k = 0, 1, 2 (finite lo <= hi)."""
    L, H = (lo - c) / s, (hi - c) / s
    pL, pH = _std_pdf(L), _std_pdf(H)
    m0 = _ndtr(H) - _ndtr(L)
    m1 = s * (pL - pH)
    m2 = s * s * (m0 + L * pL - H * pH)
    return m0, m1, m2


def truncated_parabola_rbf_expectation(mu, sigma2, centers, widths, domain=None) -> torch.Tensor:
    """Closed form E_p[psi_n] for the truncated parabola (on R or [a, b]) via Gaussian interval
    moments (as quati's integrate_psi / integrate_t_times_psi / integrate_t2_times_psi): [..., N].
    Computed in float64 (cast back): r^2 m0 and the second moment cancel, on [a, b] with mu far outside the
    domain (float32 gave 26.1 for 0.106 at mu = 1e3), and on R at small sigma^2 (float32 lost 2 % of some
    components at the layers' variance floor 1e-4).  Where the support is no wider than the basis function
    (hi - lo <= its width), the closed form still cancels in float64 for a basis function far from the
    support (r^2 m0 against (c - mu)^2 m0: at sigma^2 = 1e-12 an entry of 1.0e-13 came out 1.9e-6, some
    negative); there the integral is Gauss-Legendre's with 16 nodes on [lo, hi], exact for the parabola
    times a Gaussian that is smooth on a scale of the interval (error below float64 resolution)."""
    mu = _tensor(mu)
    sigma2 = _positive_tensor(sigma2, "sigma2", mu)
    c = _tensor(centers, mu).to(mu)
    s = _positive_tensor(widths, "widths", mu).to(mu)
    dom = _domain(domain)
    dt = mu.dtype
    if mu.device.type != "mps":
        mu, sigma2, c, s = mu.double(), sigma2.double(), c.double(), s.double()
    if dom is not None:
        _check_outside(mu.detach(), torch.sqrt(sigma2).detach() + (dom[1] - dom[0]), dom, "widths (sigma + b - a)")
    r = truncated_parabola_radius(mu, sigma2, domain)
    m, v, r = mu[..., None], sigma2[..., None], r[..., None]
    lo, hi = m - r, m + r
    if dom is not None:
        lo = torch.clamp(lo, min=dom[0])
        hi = torch.maximum(torch.clamp(hi, max=dom[1]), lo)
    m0, m1, m2 = _gauss_interval_moments(c, s, lo, hi)
    d = c - m          # (t - mu) = (t - c) + d
    closed = (r * r * m0 - (m2 + 2 * d * m1 + d * d * m0)) / (2 * v)
    narrow = (hi - lo) <= 4 * s                                        # [..., N]: the support within 4 widths
    if not bool(narrow.any()):
        return closed.to(dt)
    x, wq = _gauss_legendre_16(closed)
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    tq = mid[..., None] + half[..., None] * x                          # [..., N or 1, 16] nodes on [lo, hi]
    u = tq - m[..., None]
    psi = torch.exp(-0.5 * ((tq - c[..., None]) / s[..., None]) ** 2) / (math.sqrt(2 * math.pi) * s[..., None])
    quad = half * ((r[..., None] ** 2 - u * u) * psi * wq).sum(-1) / (2 * v)
    return torch.where(narrow, quad, closed).to(dt)


def _gauss_legendre_16(like):
    """Gauss-Legendre nodes and weights on [-1, 1] (16 points), as tensors of `like`'s dtype and device."""
    import numpy as np

    x, w = np.polynomial.legendre.leggauss(16)
    return (torch.as_tensor(x, dtype=like.dtype, device=like.device),
            torch.as_tensor(w, dtype=like.dtype, device=like.device))


# --------------------------------------------------------------------------------------------
# Gaussian mixture (App. A; Farinhas et al.)
def _check_mixture(weights, mu, sigma2):
    w = _tensor(weights)
    mu = _tensor(mu, w)
    sigma2 = _positive_tensor(sigma2, "sigma2", w)
    one = torch.ones((), dtype=w.dtype, device=w.device)
    if bool(torch.any(w < 0)) or not torch.allclose(w.sum(-1), one, atol=1e-9):
        raise ValueError("weights must be nonnegative and sum to 1 over the last dim (components)")
    return w, mu, sigma2


def _mixture_log_masses(mu, sigma2, dom):
    """(log m_k, max_k log m_k) in float64 for the components' masses m_k on [a, b] ([..., K], [..., 1]).  The
    mixture on [a, b] is sum_k pi_k N_k / sum_k pi_k m_k; with every component far outside the domain the m_k
    underflow (a plain ndtr difference gave inf in float32 at mu = 10 on [0, 1], NaN in float64 at mu = 40),
    so both sums are taken relative to the largest m_k, which keeps them representable and the answer linear
    in the weights."""
    sig = torch.sqrt(sigma2)
    _check_outside(mu.detach(), sig.detach(), dom, "standard deviations")
    a, b = dom
    logm = _log_interval_mass((a - mu) / sig, (b - mu) / sig)
    return logm, logm.detach().max(-1, keepdim=True).values


def gaussian_mixture_density(t, weights, mu, sigma2, domain=None) -> torch.Tensor:
    """sum_k pi_k N(t; mu_k, sigma2_k) (renormalized to [a, b] if given); params [..., K] -> [..., G].
    On [a, b] computed in float64, each component and mass relative to the largest mass (cast back), as
    gaussian_density computes one."""
    t = _tensor(t)
    w, mu, sigma2 = _check_mixture(weights, mu, sigma2)
    dom = _domain(domain)
    if dom is None:
        s = torch.sqrt(sigma2)[..., None]
        comp = _std_pdf((t - mu[..., None]) / s) / s                     # [..., K, G]
        return (w[..., None] * comp).sum(-2)
    dt = torch.promote_types(t.dtype, mu.dtype)
    t64, w64, mu64, s64 = t.double(), w.double(), mu.double(), torch.sqrt(sigma2.double())
    logm, top = _mixture_log_masses(mu64, s64 * s64, dom)
    x = (t64 - mu64[..., None]) / s64[..., None]
    comp = torch.exp(-0.5 * x * x - math.log(_SQRT2PI) - torch.log(s64)[..., None] - top[..., None])  # N_k / max m
    p = (w64[..., None] * comp).sum(-2) / (w64 * torch.exp(logm - top)).sum(-1)[..., None]
    p = p * ((t64 >= dom[0]) & (t64 <= dom[1])).to(p.dtype)
    return p.to(dt)


def gaussian_mixture_rbf_expectation(weights, mu, sigma2, centers, widths, domain=None):
    """Closed form E_p[psi_n] = sum_k pi_k N(mu_k; mu_n, sigma_k^2 + sigma_n^2) (or truncated): [..., N]."""
    w, mu, sigma2 = _check_mixture(weights, mu, sigma2)
    e = gaussian_rbf_expectation(mu, sigma2, centers, widths, domain)          # [..., K, N]
    dom = _domain(domain)
    if dom is None:
        return (w[..., None] * e).sum(-2)
    # the components' masses on [a, b] relative to the largest (float64 log space: they underflow far outside)
    logm, top = _mixture_log_masses(mu.double(), sigma2.double(), dom)
    mass = torch.exp(logm - top).to(e.dtype)                                    # [..., K]
    return (w[..., None] * mass[..., None] * e).sum(-2) / (w * mass).sum(-1)[..., None]


# --------------------------------------------------------------------------------------------
# kernel exponential family (Eq. 8) and kernel deformed exponential family (Sec. 5.2)
def kernel_softmax(f, t, log_q0=None):
    """Kernel exponential family on the grid: density = q0 exp(f - A(f)), A = log int q0 e^f.
    Returns (density [..., G], A [...]); computed with the max shift of App. E.1 (exact for alpha=1)."""
    t = _tensor(t)
    _check_scores(f, t)
    if log_q0 is not None:
        log_q0 = _tensor(log_q0, f).to(f)
        _check_scores(log_q0, t, "log_q0")
    g = f if log_q0 is None else f + log_q0
    m = g.max(-1, keepdim=True).values.detach()
    if not bool(torch.all(m > -math.inf)):     # (Z = 0: a NaN density)
        raise ValueError("f (+ log_q0) is -inf on the whole grid: no density (Z = 0); give a finite score somewhere")
    e = torch.exp(g - m)
    Z = trapezoid(e, t)
    A = torch.log(Z) + m[..., 0]
    return e / Z[..., None], A


def kernel_deformed(f_tilde, t, alpha: float, q0=None):
    """Algorithm 1: density = q0 exp_{2-alpha}(f_tilde)/Z, Z = int q0 exp_{2-alpha}(f_tilde) (no shift).
    Returns (density [..., G], Z [...]).  Z = 0 (f_tilde <= -1/(alpha-1) on the whole grid) is an error."""
    check_alpha(alpha)
    t = _tensor(t)
    _check_scores(f_tilde, t, "f_tilde")
    u = exp_2ma(f_tilde, alpha) * _q0_on_grid(q0, t, f_tilde)
    Z = trapezoid(u, t)
    _check_normalizer(u, Z, "f_tilde gives an empty support (Z = 0): need 1 + (alpha-1) f_tilde > 0 somewhere on the "
                            "grid (Cor 5.5)",
                      "f_tilde gives Z = inf: q0 exp_{{2-alpha}}(f_tilde) overflows {dtype} on the grid; give scores on "
                      "a smaller scale (shifted down by their max: kernel_deformed_max_shift)")
    return u / Z[..., None], Z


def kernel_deformed_max_shift(f, t, alpha: float, q0=None):
    """The reference implementation's convention (App. E.1 'subtract the max'): density ∝
    q0 exp_{2-alpha}(f - max_grid f), normalized by the trapezoid rule.  NOT the same map as
    `kernel_deformed` (see the module docstring): its support is {f > max f - 1/(alpha-1)}."""
    _check_scores(f, _tensor(t))
    return kernel_deformed(f - f.max(-1, keepdim=True).values, t, alpha, q0)


def kernel_deformed_softplus(f_tilde, t, alpha: float, rho: float, q0=None):
    """Algorithm 1 with the softplus-smoothed exp_{rho, 2-alpha} of Def. E.4 (Eq. 20): (density, Z)."""
    check_alpha(alpha)
    t = _tensor(t)
    _check_scores(f_tilde, t, "f_tilde")
    u = exp_rho_beta(f_tilde, rho, 2.0 - alpha) * _q0_on_grid(q0, t, f_tilde)
    Z = trapezoid(u, t)
    # (Z <= 0: positive in exact arithmetic, the smoothed exponential underflowed)
    _check_normalizer(u, Z, "f_tilde gives Z = 0: exp_{rho, 2-alpha}(f_tilde) underflows to 0 on the whole grid in "
                            f"{u.dtype}; give scores on a scale where it does not (e.g. shifted up)",
                      "f_tilde gives Z = inf: q0 exp_{{rho, 2-alpha}}(f_tilde) overflows {dtype} on the grid (its floor "
                      "(log 2 / rho)^(1/(alpha-1)) included); give a larger rho, or scores on a smaller scale")
    return u / Z[..., None], Z


def escort_weights(f, tau, alpha: float):
    """exp_{2-alpha}(f - tau)^{2-alpha} = d exp_{2-alpha}(x)/dx at x = f - tau (indicator for alpha=2);
    alpha in (1, 2] (check_alpha)."""
    alpha = check_alpha(alpha)
    x = 1.0 + (alpha - 1.0) * (f - tau)
    if alpha == 2.0:
        return (x > 0).to(f.dtype)
    return torch.relu(x) ** ((2.0 - alpha) / (alpha - 1.0))


def kernel_deformed_threshold(f, t, alpha: float, q0=None, iters: int = 200):
    """Eq. 2 / Eq. 4 (regularized prediction map with Tsallis Omega_alpha): density =
    q0 exp_{2-alpha}(f - tau) with the threshold tau = A_alpha(f) solved so that the trapezoid integral
    is 1.  tau by Newton on the log of the mass (exact in one step in the exponential limit alpha -> 1,
    where Newton on the mass itself gained about 1 per step and ran out of iterations for scores spanning
    hundreds), kept inside a bracket of the root (the mass is decreasing in tau) by bisection, then one
    differentiable Newton step so autograd gives the implicit derivative.  ValueError when the mass is
    not 1 to within 1e-9 (float64; 1e-3 in lower precision) after `iters` steps: no density is returned
    that does not integrate to 1.  Returns (density [..., G], tau [...]).

    Lemma 5.3: for Z = int q0 exp_{2-alpha}(f_tilde), kernel_deformed_threshold(f_tilde/Z^{alpha-1})
    equals kernel_deformed(f_tilde), with tau = log_alpha Z."""
    a = check_alpha(alpha)
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(f"iters must be a whole number >= 1; got {iters!r}")
    t = _tensor(t)
    _check_scores(f, t)
    q = _q0_on_grid(q0, t, f)
    w = trapezoid_weights(t).to(f)

    def mass(tau, ff):
        return (exp_2ma(ff - tau[..., None], a) * q * w).sum(-1)

    with torch.no_grad():
        fd = f.detach()
        Qm = (q * w).sum(-1) * torch.ones(fd.shape[:-1], dtype=f.dtype, device=f.device)
        if bool(torch.any(Qm <= 0)):
            raise ValueError("q0 has zero mass on the grid")
        # exp_{2-alpha}(f - tau) = 1/Qm at f - tau = log_{2-alpha}(1/Qm): brackets mass = 1
        shift = ((1.0 / Qm) ** (a - 1.0) - 1.0) / (a - 1.0)
        lo = fd.min(-1).values - shift - 1e-12       # mass(lo) >= 1
        hi = fd.max(-1).values - shift + 1e-12       # mass(hi) <= 1
        # safeguarded Newton from the left end: the mass is convex and decreasing in tau (exp_{2-alpha}
        # is convex for alpha <= 2), so Newton from lo increases monotonically to the root; any
        # iterate leaving the bracket (rounding) is replaced by bisection
        log_qw = torch.log(q * w)

        def logs(tau):
            """(log mass, log of -d mass/d tau) at tau, without overflow: exp_{2-alpha}(x) = z^{1/(alpha-1)}
            and its derivative z^{(2-alpha)/(alpha-1)}, z = 1 + (alpha-1) x, where z > 0; log z = log1p((alpha-1) x)
            (log of the rounded z put eps / (alpha - 1) into log mass: 3e-8 at alpha = 1 + 1e-12, past the 1e-9 test)."""
            y = (a - 1.0) * (fd - tau[..., None])
            pos = y > -1.0
            lz = torch.log1p(torch.where(pos, y, torch.zeros_like(y)))
            none = torch.full_like(y, -math.inf)
            lm = torch.logsumexp(torch.where(pos, lz / (a - 1.0) + log_qw, none), -1)
            ld = torch.logsumexp(torch.where(pos, lz * ((2.0 - a) / (a - 1.0)) + log_qw, none), -1)
            return lm, ld

        # a row is done when its step is at the rounding of tau, or its mass at the rounding of a sum of G terms
        # (16 eps in log): near the root, rounding can leave a row stepping back and forth by a few eps, where
        # the step test alone ran all `iters` steps (200 at 1 s on 200 x 401 grids) after 7 had converged
        mass_eps = 16 * torch.finfo(f.dtype).eps
        tau0 = lo.clone()
        for _ in range(iters):
            lm, ld = logs(tau0)
            m = lm.exp()
            big = m > 1
            lo = torch.where(big, tau0, lo)
            hi = torch.where(big, hi, tau0)
            new = tau0 + lm * torch.exp(lm - ld)                       # Newton on log mass: d log m/d tau = -d/m
            out = ~((new >= lo) & (new <= hi))
            new = torch.where(out, 0.5 * (lo + hi), new)
            done = ((new - tau0).abs() <= 4e-16 * (1 + tau0.abs())) | (lm.abs() <= mass_eps)
            tau0 = torch.where(lm.abs() <= mass_eps, tau0, new)
            if bool(torch.all(done)):
                break
        off = float(logs(tau0)[0].abs().max()) if tau0.numel() else 0.0   # |log mass| ~ |mass - 1|
        if not off <= (1e-9 if f.dtype == torch.float64 else 1e-3):
            raise ValueError(f"kernel_deformed_threshold: the threshold tau did not converge in iters = {iters} "
                             f"steps (the density's mass is off 1 by {off:.2g} in log): raise iters, or give scores "
                             "on a smaller scale")
    slope = (escort_weights(f.detach(), tau0[..., None], a) * q * w).sum(-1)   # -d mass/d tau
    tau = tau0 + (mass(tau0, f) - 1.0) / slope
    return exp_2ma(f - tau[..., None], a) * q, tau
