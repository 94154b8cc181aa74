"""softplus, the Bernoulli likelihood and everything built on them in numerics/ are exact in float64: each
against an mpmath oracle (50 digits) at the edges, where torch's thresholded F.softplus (x returned
unchanged above 20) and binary_cross_entropy_with_logits lose digits (numerics/exact.py)."""
import math

import mpmath as mp
import pytest
import torch

EDGES = (21.0, 40.0, -40.0, 700.0, -700.0, 30.0, -21.0, 0.5, 0.0)
EPS = 2.0 ** -52


def _mp_softplus(x):
    with mp.workdps(50):
        return mp.log1p(mp.exp(mp.mpf(x)))


def _rel(got, ref):
    with mp.workdps(50):
        ref = mp.mpf(ref)
        return float(abs((mp.mpf(float(got)) - ref) / ref)) if ref != 0 else abs(float(got))


def _t(x):
    return torch.tensor(x, dtype=torch.float64)


@pytest.mark.parametrize("x", EDGES)
def test_softplus_is_correctly_rounded(x):
    from attnlab.numerics.exact import softplus

    assert _rel(softplus(_t(x)), _mp_softplus(x)) <= EPS


@pytest.mark.parametrize("x", EDGES)
def test_softplus_gradient_is_the_sigmoid(x):
    from attnlab.numerics.exact import softplus

    t = _t(x).requires_grad_()
    softplus(t).backward()
    with mp.workdps(50):
        ref = 1 / (1 + mp.exp(-mp.mpf(x)))
    assert _rel(t.grad, ref) <= 2 * EPS


@pytest.mark.parametrize("eta", EDGES)
@pytest.mark.parametrize("y", (0.0, 1.0))
def test_bernoulli_log_prob_pmf_and_code_loss(eta, y):
    """log p(y | eta) = -softplus(-eta) (y = 1) or -softplus(eta) (y = 0); the pmf and the code's binary
    cross-entropy (= -log p) from the same oracle.  At eta = 21 the thresholded softplus made the pmf of
    y = 1 exactly 1 (off by 7.6e-10) and log p = 0 (all digits lost)."""
    from attnlab.numerics.expfam import Bernoulli

    fam = Bernoulli()
    ref = -_mp_softplus(-eta if y == 1.0 else eta)
    assert _rel(fam.log_prob(_t(eta), _t(y)), ref) <= 2 * EPS
    # the pmf as exp(log p): exp turns log p's relative error delta into |log p| delta, so the bound is
    # |log p| times log p's (2 eps) plus exp's own rounding
    assert _rel(fam.log_prob(_t(eta), _t(y)).exp(), mp.exp(ref)) <= (2 * abs(float(ref)) + 2) * EPS
    assert _rel(fam.code_loss(_t(eta), _t(y)), -ref) <= 2 * EPS
    assert _rel(fam.log_partition(_t(eta)), _mp_softplus(eta)) <= EPS


@pytest.mark.parametrize("eta", EDGES)
def test_bernoulli_mean_is_the_sigmoid(eta):
    from attnlab.numerics.expfam import Bernoulli

    with mp.workdps(50):
        ref = 1 / (1 + mp.exp(-mp.mpf(eta)))
    assert _rel(Bernoulli().mean(_t(eta)), ref) <= 2 * EPS


@pytest.mark.parametrize("z", (21.0, 40.0, -40.0, 30.0, -21.0, 0.5))
def test_poisson_v2_natural_parameter_and_log_prob(z):
    """eta = log(1 + e^z); log p(y) = y eta - (1 + e^z) - log y!.  The partition exp(eta) carries eta's
    rounding times eta (at most 40 ulps here); the thresholded softplus lost the 1 of 1 + e^z at z = 21
    (a relative error of 7.6e-10 in log p)."""
    from attnlab.numerics.expfam import PoissonV2

    fam = PoissonV2()
    assert _rel(fam.natural(_t(z)), _mp_softplus(z)) <= EPS
    y = 3.0
    with mp.workdps(50):
        lam = 1 + mp.exp(mp.mpf(z))
        ref = y * mp.log(lam) - lam - mp.loggamma(y + 1)
        loss = lam - y * mp.log(lam)                    # the code's loss: 1 + e^z - y log(1 + e^z)
    assert _rel(fam.log_prob(_t(z), _t(y)), ref) <= 64 * EPS
    assert _rel(fam.code_loss(_t(z), _t(y)), loss) <= 64 * EPS


@pytest.mark.parametrize("x", (21.0, 40.0, -40.0, 700.0, 30.0, 0.5))
@pytest.mark.parametrize("rho,beta", ((1.0, 0.5), (5.0, 0.0)))
def test_exp_rho_beta_at_the_softplus_edges(x, rho, beta):
    """Eq. 20 at rho [1 + (1 - beta) t] = x: [softplus(x) / rho]^{1/(1 - beta)}."""
    from attnlab.numerics.deformed_exp import exp_rho_beta

    t = (x / rho - 1.0) / (1.0 - beta)
    with mp.workdps(50):
        xm = mp.mpf(rho) * (1 + (1 - mp.mpf(beta)) * mp.mpf(t))
        ref = (mp.log1p(mp.exp(xm)) / rho) ** (1 / (1 - mp.mpf(beta)))
    assert _rel(exp_rho_beta(_t(t), rho, beta), ref) <= 8 * EPS


@pytest.mark.parametrize("alpha", (0.3, 21.0, 40.0, 700.0))
@pytest.mark.parametrize("mode", ("head", "query"))
def test_learned_alpha_round_trips_in_float64(alpha, mode):
    """A float64 layer's learned alpha starts at alpha itself: softplus(inverse_softplus(alpha)), computed
    in float64 (it was rounded to float32) and without the threshold; against mpmath's softplus of the
    stored raw parameter."""
    from attnlab.numerics.fenchel_attention import FenchelMultiheadAttention

    m = FenchelMultiheadAttention(8, 2, batch_first=True, alpha=alpha, alpha_mode=mode, dtype=torch.float64)
    x = torch.zeros(1, 3, 8, dtype=torch.float64)
    a = m.alphas(x)
    assert a.dtype == torch.float64
    raw = float(m.alpha_raw.detach()[0]) if mode == "head" else float(m.alpha_proj.bias.detach()[0])
    for v in a.flatten().tolist():
        assert _rel(v, _mp_softplus(raw)) <= EPS
        assert abs(v - alpha) <= 4 * EPS * alpha


def test_float32_layer_keeps_float32_alpha():
    from attnlab.numerics.fenchel_attention import FenchelMultiheadAttention

    m = FenchelMultiheadAttention(8, 2, batch_first=True, alpha=0.3, alpha_mode="head")
    assert m.alphas(torch.zeros(1, 3, 8)).dtype == torch.float32
    assert math.isclose(float(m.alphas(torch.zeros(1, 3, 8)).detach().flatten()[0]), 0.3, rel_tol=1e-6)


def _mp_interval_mass(l, h):
    """Phi(h) - Phi(l) by the complementary error function on the side of the smaller tail (60 digits)."""
    with mp.workdps(60):
        l, h, r2 = mp.mpf(l), mp.mpf(h), mp.sqrt(2)
        if l >= 0:
            return (mp.erfc(l / r2) - mp.erfc(h / r2)) / 2
        if h <= 0:
            return (mp.erfc(-h / r2) - mp.erfc(-l / r2)) / 2
        return 1 - (mp.erfc(-l / r2) + mp.erfc(h / r2)) / 2


@pytest.mark.parametrize("mu,sigma2", ((0.5, 1e4), (0.5, 1e8), (0.5, 1e12), (-3.0, 1e10), (0.3, 0.01), (-2.0, 1.0),
                                       (40.0, 1.0)))
def test_truncated_gaussian_density_on_narrow_and_wide_intervals(mu, sigma2):
    """N(mu, sigma2) renormalised to [0, 1]: the interval is 1/sigma standard deviations wide.  The mass
    from a difference of log Phi's lost digits on narrow ones (4.9e-11 relative at sigma2 = 1e12); it is
    integrated there instead (numerics.continuous_attention._log_interval_mass).  The tolerance is the
    rounding of log p, whose terms reach |log sigma| and mu^2/2 / sigma2."""
    from attnlab.numerics.continuous_attention import gaussian_density

    t = [0.0, 0.25, 0.5, 1.0]
    p = gaussian_density(_t(t), _t(mu), _t(sigma2), domain=(0.0, 1.0))
    with mp.workdps(60):
        s = mp.sqrt(mp.mpf(sigma2))
        Z = _mp_interval_mass((0 - mp.mpf(mu)) / s, (1 - mp.mpf(mu)) / s)
        scale = 8 * (abs(float(mp.log(s))) + 1 + float((mp.mpf(mu) - 1) ** 2 / s ** 2))
        for ti, pi in zip(t, p.tolist()):
            ref = mp.npdf(mp.mpf(ti), mp.mpf(mu), s) / Z
            assert _rel(pi, ref) <= scale * EPS, (ti, _rel(pi, ref))


@pytest.mark.parametrize("mu,sigma2", ((0.5, 1e12), (0.2, 1e8), (0.5, 0.04)))
def test_truncated_gaussian_rbf_expectation_on_narrow_intervals(mu, sigma2):
    """E_p[psi_n] for p = N(mu, sigma2) on [0, 1] and Gaussian RBFs: the ratio of two interval masses."""
    from attnlab.numerics.continuous_attention import gaussian_rbf_expectation

    centers, widths = [0.1, 0.5, 0.9], [0.05, 0.2, 0.5]
    got = gaussian_rbf_expectation(_t(mu), _t(sigma2), _t(centers), _t(widths), domain=(0.0, 1.0))
    with mp.workdps(60):
        s = mp.sqrt(mp.mpf(sigma2))
        Z = _mp_interval_mass(-mp.mpf(mu) / s, (1 - mp.mpf(mu)) / s)
        for c, w, g in zip(centers, widths, got.tolist()):
            f = lambda x: mp.npdf(x, mp.mpf(mu), s) * mp.npdf(x, mp.mpf(c), mp.mpf(w))  # noqa: E731
            ref = mp.quad(f, [0, mp.mpf(c), 1]) / Z
            assert _rel(g, ref) <= 1e-13, (c, _rel(g, ref))


@pytest.mark.parametrize("mus,dtype", (([10.0, 12.0], torch.float32), ([40.0, 45.0], torch.float64),
                                       ([0.3, 40.0], torch.float64), ([-30.0, 0.6], torch.float32)))
def test_gaussian_mixture_on_a_domain_far_outside(mus, dtype):
    """The mixture renormalised to [0, 1] with components far outside it: the masses were an ndtr difference
    that underflowed (inf in float32 at mu = 10, NaN in float64 at mu = 40).  Against mpmath at 60 digits:
    the density and E_p[psi_n], to float32's or float64's rounding of the exponents."""
    from attnlab.numerics.continuous_attention import gaussian_mixture_density, gaussian_mixture_rbf_expectation

    w, v, t = [0.5, 0.5], [1.0, 1.0], [0.0, 0.5, 1.0]
    centers, widths = [0.1, 0.5, 0.9], [0.05, 0.2, 0.5]
    T = lambda x: torch.tensor(x, dtype=dtype)                                   # noqa: E731
    p = gaussian_mixture_density(T(t), T(w), T(mus), T(v), domain=(0.0, 1.0))
    e = gaussian_mixture_rbf_expectation(T(w), T(mus), T(v), T(centers), T(widths), domain=(0.0, 1.0))
    assert p.dtype == e.dtype == dtype
    tol = 1e-4 if dtype == torch.float32 else 1e-11
    with mp.workdps(60):
        # the masses and the products of Gaussians in closed form at 60 digits (tanh-sinh across [0, 1], where a
        # component 40 standard deviations out changes by e^40, was off in the 6th digit on one piece, 1e-10 on 16)
        comps = [(mp.mpf(wk), mp.mpf(mk), mp.sqrt(vk)) for wk, mk, vk in zip(w, mus, v)]
        Z = mp.fsum(wk * _mp_interval_mass(-mk / sk, (1 - mk) / sk) for wk, mk, sk in comps)
        for ti, pi in zip(t, p.tolist()):
            ref = mp.fsum(wk * mp.npdf(mp.mpf(ti), mk, sk) for wk, mk, sk in comps) / Z
            assert _rel(pi, ref) <= tol, (ti, pi)
        for c, wd, g in zip(centers, widths, e.tolist()):
            c, wd = mp.mpf(c), mp.mpf(wd)
            ref = 0
            for wk, mk, sk in comps:                   # N(x; m, s^2) N(x; c, wd^2) = N(m; c, s^2 + wd^2) N(x; m*, v*)
                v_ = sk ** 2 + wd ** 2
                ms, ss = (mk * wd ** 2 + c * sk ** 2) / v_, sk * wd / mp.sqrt(v_)
                ref += wk * mp.npdf(mk, c, mp.sqrt(v_)) * _mp_interval_mass(-ms / ss, (1 - ms) / ss)
            ref /= Z
            assert _rel(g, ref) <= tol, (c, g, ref)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
def test_truncated_parabola_rbf_expectation_with_mu_far_outside(dtype):
    """Continuous sparsemax on [0, 1] with mu = 1e3: r^2 m0 and the second moment cancel; in float32 they gave
    26.1 and 51.1 for 0.106 and 0.786.  Computed in float64 as the density is; against the same expectation
    of truncated_parabola_density integrated by mpmath (the radius from the library, checked by its mass)."""
    from attnlab.numerics.continuous_attention import (truncated_parabola_radius,
                                                       truncated_parabola_rbf_expectation)

    mu, s2 = 1e3, 1.0
    centers, widths = [0.1, 0.5, 0.9], [0.05, 0.2, 0.5]
    T = lambda x: torch.tensor(x, dtype=dtype)                                   # noqa: E731
    got = truncated_parabola_rbf_expectation(T(mu), T(s2), T(centers), T(widths), domain=(0.0, 1.0))
    assert got.dtype == dtype
    r = truncated_parabola_radius(_t(mu), _t(s2), domain=(0.0, 1.0)).item()
    with mp.workdps(60):
        R, M = mp.mpf(r), mp.mpf(mu)
        lo = M - R                                                                 # the support is [mu - r, 1]
        p = lambda x: (R - (M - x)) * (R + (M - x)) / 2                            # noqa: E731
        assert 0 < lo < 1 and abs(mp.quad(p, [lo, 1]) - 1) < 1e-10                 # the radius is sparsemax's
        for c, wd, g in zip(centers, widths, got.tolist()):
            ref = mp.quad(lambda x: p(x) * mp.npdf(x, mp.mpf(c), mp.mpf(wd)), [lo, 1])
            # (entries far below 1 are right to rounding in absolute terms, not relative)
            assert abs(g - ref) <= (1e-6 if dtype == torch.float32 else 1e-11) * max(1.0, abs(ref)), (c, g, ref)


@pytest.mark.parametrize("alpha", (1 + 1e-15, 1 + 1e-12, 1 + 1e-6, 1.01, 1.3, 1.5, 1.8, 2.0))
def test_deformed_exponential_near_alpha_one(alpha):
    """exp_{2-alpha}(t) = [1 + (alpha - 1) t]_+^{1/(alpha - 1)} for alpha just above 1 (allowed): the power of
    the rounded 1 + (alpha - 1) t was off by 4.4e-5 relative at alpha = 1 + 1e-12 and 10 % at 1 + 1e-15; now
    within 1e-14 of mpmath at 50 digits, and log_{2-alpha} too."""
    from attnlab.numerics.deformed_exp import exp_2ma, log_beta, mp_exp_beta, mp_log_beta

    t = [-0.9, -0.2, 0.3, 2.0, 50.0]
    got = exp_2ma(_t(t), alpha).tolist()
    lg = log_beta(_t([0.5, 3.0, 40.0]), 2 - alpha).tolist()
    with mp.workdps(50):
        beta = 2 - mp.mpf(alpha)
        for ti, g in zip(t, got):
            ref = mp_exp_beta(mp.mpf(ti), beta)
            assert (g == 0 if ref == 0 else _rel(g, ref) <= 1e-14), (ti, g, ref)
        for ti, g in zip([0.5, 3.0, 40.0], lg):
            assert _rel(g, mp_log_beta(mp.mpf(ti), beta)) <= 1e-14, (ti, g)


def test_small_numerics_refuse_what_they_cannot_mean():
    """Each of these returned a number (or NaN, inf, a ZeroDivisionError) for an argument outside its domain."""
    from attnlab.numerics.continuous_attention import escort_weights, ridge_value_coefficients
    from attnlab.numerics.deformed_exp import check_alpha
    from attnlab.numerics.quadrature import normal_tail_half_width

    f, tau = _t([0.1, 0.5]), _t(0.0)
    for alpha in (3.0, 1.0, "1.5"):
        with pytest.raises(ValueError, match="alpha must"):
            escort_weights(f, tau, alpha)
    with pytest.raises(ValueError, match="alpha must be a number in"):
        check_alpha("1.5")
    for lam in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="lam .ridge penalty. must be a finite number >= 0"):
            ridge_value_coefficients(_t([[1.0, 2.0]]), _t([0.2, 0.8]), _t([0.5]), _t([0.3]), lam)
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        normal_tail_half_width(1e-10, scale=-1.0)
    # the documented quarter grid: the smallest of its points with the tail below eps
    L = normal_tail_half_width(1e-10)
    assert math.erfc(L / math.sqrt(2)) < 1e-10 <= math.erfc((L - 0.25) / math.sqrt(2)) and L % 0.25 == 0
