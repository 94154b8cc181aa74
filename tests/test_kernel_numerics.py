"""Unit tests of the continuous-attention numerics (quadrature, densities, context vector)."""
import math

import pytest
import torch

from attnlab.numerics import continuous_attention as ca
from attnlab.numerics.deformed_exp import alpha_division, exp_2ma, exp_rho_beta, log_alpha, log_beta
from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion, laplace_kernel
from attnlab.numerics.quadrature import (real_line_grid, real_line_trapezoid, trapezoid, trapezoid_weights,
                                 uniform_grid)

D64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- quadrature
def test_trapezoid_exact_for_linear_and_matches_torch():
    t = uniform_grid(-1.0, 2.0, 7)
    y = torch.stack([3 * t + 1, t ** 2])
    out = trapezoid(y, t)
    assert abs(out[0].item() - 7.5) < 1e-14
    assert torch.allclose(out, torch.trapezoid(y, t), atol=1e-14)


def test_trapezoid_nonuniform_weights_sum_to_length():
    t = torch.tensor([0.0, 0.1, 0.5, 0.7, 2.0], dtype=D64)
    assert abs(trapezoid_weights(t).sum().item() - 2.0) < 1e-15


def test_trapezoid_dim_argument_and_batch():
    t = uniform_grid(0, 1, 11)
    y = torch.rand(3, 11, 4, generator=_gen(), dtype=D64)
    assert torch.allclose(trapezoid(y, t, dim=1), torch.trapezoid(y, t, dim=1))


def test_real_line_trapezoid_normal_pdf_poisson_error():
    # h sum phi(kh) - 1 = 2 sum_k exp(-2 pi^2 k^2 / h^2): the exact Poisson-summation error
    h = 1.0
    val = real_line_trapezoid(lambda x: torch.exp(-x * x / 2) / math.sqrt(2 * math.pi), h, 12.0)
    exact = 2 * sum(math.exp(-2 * math.pi ** 2 * k ** 2 / h ** 2) for k in range(1, 5))
    assert abs((val.item() - 1) - exact) < 1e-15


def test_grid_validation_errors():
    with pytest.raises(ValueError, match="G"):
        uniform_grid(0, 1, 1)
    with pytest.raises(ValueError, match="b > a"):
        uniform_grid(1, 0, 5)
    with pytest.raises(ValueError, match="h"):
        real_line_grid(-1.0, 3.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        trapezoid_weights(torch.tensor([0.0, 0.0, 1.0], dtype=D64))
    with pytest.raises(ValueError, match="shift"):
        real_line_grid(0.1, 3.0, shift=1.0)


# ---------------------------------------------------------------- deformed exponentials
def test_deformed_exp_log_inverse_and_sparsemax():
    x = torch.linspace(-0.5, 2, 11, dtype=D64)
    for a in (1.25, 1.5, 2.0):
        y = exp_2ma(x, a)
        assert torch.allclose(log_beta(y, 2 - a), x, atol=1e-12)
    assert torch.equal(exp_2ma(torch.tensor([-2.0, -1.0, 0.5], dtype=D64), 2.0),
                       torch.tensor([0.0, 0.0, 1.5], dtype=D64))
    with pytest.raises(ValueError, match=r"alpha must lie in \(1, 2\]"):
        exp_2ma(x, 1.0)


def test_alpha_division_identity():
    x, y = torch.tensor(2.3, dtype=D64), torch.tensor(0.7, dtype=D64)
    for a in (1.5, 2.0):
        d = alpha_division(x, y, a)
        assert abs((log_alpha(x, a) - log_alpha(y, a) - log_alpha(d, a)).item()) < 1e-13


def test_alpha_division_twins_agree_where_no_quotient_exists():
    """Where x^(1-alpha) - y^(1-alpha) + 1 <= 0 no x (/)_alpha y exists (log_alpha x - log_alpha y >= 1/(alpha-1)):
    both twins give +inf, the limit as the bracket falls to 0 (the mpmath twin gave 0)."""
    import mpmath as mp

    from attnlab.numerics.deformed_exp import mp_alpha_division

    for a, x, y in ((2.0, 3.0, 0.5), (1.5, 10.0, 0.2)):
        assert alpha_division(torch.tensor(x, dtype=D64), torch.tensor(y, dtype=D64), a).item() == math.inf
        assert mp_alpha_division(mp.mpf(x), mp.mpf(y), a) == mp.inf
    q = mp_alpha_division(mp.mpf(2.3), mp.mpf(0.7), 1.5)
    assert abs(float(q) - alpha_division(torch.tensor(2.3, dtype=D64), torch.tensor(0.7, dtype=D64), 1.5).item()) < 1e-14


def test_softplus_gap_is_ln2_over_rho():
    x = torch.linspace(-3, 1, 4001, dtype=D64)
    for rho in (1.0, 5.0, 10.0):
        gap = (exp_rho_beta(x, rho, 0.0) - exp_2ma(x, 2.0)).max().item()
        assert abs(gap - math.log(2) / rho) < 1e-12


# ---------------------------------------------------------------- closed forms vs quadrature
@pytest.mark.parametrize("domain", [None, (0.0, 1.0)])
def test_unimodal_closed_forms_match_quadrature(domain):
    mu = torch.tensor([0.3, 0.6], dtype=D64)
    s2 = torch.tensor([0.05, 0.4], dtype=D64)
    cen = torch.linspace(0, 1, 4, dtype=D64)
    wid = torch.tensor([0.1, 0.2, 0.3, 0.5], dtype=D64)
    t = real_line_grid(2e-4, 8.0) if domain is None else uniform_grid(0, 1, 20001)
    Psi = ca.gaussian_rbf(t, cen, wid)
    for dens, cf in ((ca.gaussian_density, ca.gaussian_rbf_expectation),
                     (ca.truncated_parabola_density, ca.truncated_parabola_rbf_expectation)):
        p = dens(t, mu, s2, domain)
        assert torch.allclose(trapezoid(p, t), torch.ones(2, dtype=D64), atol=1e-6)
        err = (ca.expected_basis(p, t, Psi) - cf(mu, s2, cen, wid, domain)).abs().max().item()
        assert err < 1e-6, (dens.__name__, err)


def test_truncated_parabola_radius_on_R():
    s2 = torch.tensor([0.1, 1.0], dtype=D64)
    r = ca.truncated_parabola_radius(torch.zeros(2, dtype=D64), s2)
    assert torch.allclose(2 * r ** 3 / (3 * s2), torch.ones(2, dtype=D64))


def test_mixture_closed_form():
    t = real_line_grid(1e-3, 10.0)
    w = torch.tensor([0.3, 0.7], dtype=D64)
    mu = torch.tensor([0.0, 1.0], dtype=D64)
    s2 = torch.tensor([0.2, 0.05], dtype=D64)
    cen, wid = torch.linspace(-1, 2, 5, dtype=D64), torch.full((5,), 0.3, dtype=D64)
    p = ca.gaussian_mixture_density(t, w, mu, s2)
    got = ca.expected_basis(p, t, ca.gaussian_rbf(t, cen, wid))
    assert torch.allclose(got, ca.gaussian_mixture_rbf_expectation(w, mu, s2, cen, wid), atol=1e-12)
    with pytest.raises(ValueError, match="sum to 1"):
        ca.gaussian_mixture_density(t, torch.tensor([0.3, 0.3], dtype=D64), mu, s2)


# ---------------------------------------------------------------- kernel families
def _kernel_scores(batch=3, seed=0, scale=3.0, offset=1.0, G=401):
    t = uniform_grid(0, 1, G)
    K = gaussian_kernel(t, torch.linspace(0, 1, 10, dtype=D64), 10.0)
    gam = torch.rand(batch, 10, generator=_gen(seed), dtype=D64) * 2 * scale - scale + offset
    return t, K, gam


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0])
def test_lemma_5_3_algorithm1_equals_threshold_map(alpha):
    t, K, gam = _kernel_scores()
    ft = kernel_expansion(gam, K)
    p1, Z = ca.kernel_deformed(ft, t, alpha)
    p2, tau = ca.kernel_deformed_threshold(ft / Z[:, None] ** (alpha - 1), t, alpha)
    assert (p1 - p2).abs().max().item() < 1e-12
    assert (tau - log_alpha(Z, alpha)).abs().max().item() < 1e-12
    assert torch.allclose(trapezoid(p2, t), torch.ones(3, dtype=D64), atol=1e-13)


def test_max_shift_is_a_different_map():
    t, K, gam = _kernel_scores()
    ft = kernel_expansion(gam, K)
    p1, _ = ca.kernel_deformed(ft, t, 2.0)
    p3, _ = ca.kernel_deformed_max_shift(ft, t, 2.0)
    assert (p1 - p3).abs().max().item() > 1e-2
    # its support is {f > max f - 1}
    supp = p3 > 0
    assert torch.equal(supp, ft > ft.max(-1, keepdim=True).values - 1)


def test_kernel_softmax_normalizes_and_shift_invariant():
    t, K, gam = _kernel_scores()
    f = kernel_expansion(gam, K)
    p, A = ca.kernel_softmax(f, t)
    p2, A2 = ca.kernel_softmax(f + 7.0, t)
    assert torch.allclose(trapezoid(p, t), torch.ones(3, dtype=D64), atol=1e-14)
    assert torch.allclose(p, p2, atol=1e-13) and torch.allclose(A2 - A, torch.full_like(A, 7.0))


def test_gradients_gradcheck_threshold_and_context():
    t, K, gam = _kernel_scores(batch=2, G=61)
    cen, wid = torch.linspace(0, 1, 4, dtype=D64), torch.full((4,), 0.2, dtype=D64)
    Psi = ca.gaussian_rbf(t, cen, wid)
    B = torch.randn(3, 4, generator=_gen(1), dtype=D64)
    g = gam.clone().requires_grad_()
    for alpha in (1.5, 2.0):
        assert torch.autograd.gradcheck(
            lambda x: ca.context_vector(ca.kernel_deformed_threshold(kernel_expansion(x, K), t, alpha)[0],
                                        t, Psi, B), (g,))
    assert torch.autograd.gradcheck(
        lambda x: ca.context_vector(ca.kernel_softmax(kernel_expansion(x, K), t)[0], t, Psi, B), (g,))


def test_ridge_value_function_recovers_basis_combination():
    pos = torch.linspace(0, 1, 50, dtype=D64)
    cen, wid = torch.linspace(0, 1, 6, dtype=D64), torch.full((6,), 0.2, dtype=D64)
    Btrue = torch.randn(2, 6, generator=_gen(2), dtype=D64)
    H = Btrue @ ca.gaussian_rbf(pos, cen, wid)
    B = ca.ridge_value_coefficients(H, pos, cen, wid, lam=0.0)
    assert torch.allclose(B, Btrue, atol=1e-6)


def test_laplace_kernel_and_shape_errors():
    t = uniform_grid(0, 1, 5)
    K = laplace_kernel(t, t, 0.5)
    assert torch.allclose(torch.diagonal(K), torch.ones(5, dtype=D64))
    with pytest.raises(ValueError, match="inducing"):
        kernel_expansion(torch.ones(3, dtype=D64), K)
    with pytest.raises(ValueError, match="last dim"):
        ca.kernel_softmax(torch.ones(4, dtype=D64), t)
    with pytest.raises(ValueError, match="empty support"):
        ca.kernel_deformed(torch.full((5,), -3.0, dtype=D64), t, 2.0)


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_analytic_jacobian_matches_autograd(alpha):
    # docs/instances.md: dE_p[psi_n]/d gamma~_i = (1/Z)[int psi_n u^{2-alpha} k_i - E_p[psi_n] int u^{2-alpha} k_i]
    # with u = exp_{2-alpha}(f~) (Algorithm 1), integrals by the same trapezoid weights
    t, K, gam = _kernel_scores(batch=1, G=201)
    cen, wid = torch.linspace(0, 1, 5, dtype=D64), torch.full((5,), 0.15, dtype=D64)
    Psi = ca.gaussian_rbf(t, cen, wid)
    g = gam[0].clone().requires_grad_()
    dens, Z = ca.kernel_deformed(kernel_expansion(g, K), t, alpha)
    r = ca.expected_basis(dens, t, Psi)
    jac = torch.stack([torch.autograd.grad(r[n], g, retain_graph=True)[0] for n in range(5)])
    with torch.no_grad():
        ft = kernel_expansion(gam[0], K)
        u = exp_2ma(ft, alpha)
        esc = (u > 0).to(D64) if alpha == 2.0 else u ** (2 - alpha)
        w = trapezoid_weights(t)
        a1 = (Psi * esc * w) @ K.T                  # [N, I]: int psi_n u^{2-alpha} k_i
        a2 = (esc * w) @ K.T                        # [I]
        analytic = (a1 - r.detach()[:, None] * a2[None, :]) / Z.detach()
    assert torch.allclose(jac, analytic, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_kernels_keep_their_diagonal_where_the_dtype_cannot_hold_the_factor(dtype):
    """k(t, t) = 1 for any width: float32 turned zeta2 > 3.4e38 into inf (0 * inf = NaN on the diagonal) and a
    Laplace scale below 1.4e-45 into 0 (0 / 0); the kernel is then formed in float64 and rounded back."""
    from attnlab.numerics.kernel_family import gaussian_kernel, laplace_kernel

    t = torch.tensor([0.0, 0.5, 1.0], dtype=dtype)
    eye = torch.eye(3, dtype=dtype)
    for z in (1e39, 1e200, 1e300):
        K = gaussian_kernel(t, t, z)
        assert K.dtype == dtype and torch.equal(K, eye)
    for sc in (1e-46, 1e-200):
        K = laplace_kernel(t, t, sc)
        assert K.dtype == dtype and torch.equal(K, eye)
    assert torch.equal(gaussian_kernel(t, t, 1.0), torch.exp(-(t[None, :] - t[:, None]) ** 2))


def test_trapezoid_of_integer_values_and_grids():
    """An integer or bool y is integrated in the grid's floating dtype, as torch.trapezoid does (the weights were
    cast to y's dtype: 0.25 -> 0, and the integral of 1 over [0, 1] came out 0); an integer grid is float64
    (its half-steps raised a dtype error); the attention functions refuse integer scores and densities."""
    from attnlab.numerics.continuous_attention import expected_basis, kernel_softmax

    t = torch.tensor([0.0, 0.5, 1.0])
    for y in (torch.tensor([1, 1, 1]), torch.tensor([True, True, True])):
        assert trapezoid(y, t).item() == 1.0
    assert trapezoid(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 1, 2])).item() == 4.0
    with pytest.raises(ValueError, match="density must be a floating-point tensor"):
        expected_basis(torch.tensor([1, 1, 1]), t, torch.ones(2, 3))
    with pytest.raises(ValueError, match="f must be a floating-point tensor"):
        kernel_softmax(torch.tensor([1, 1, 1]), t)


def test_alpha_division_near_alpha_one_against_50_digits():
    """alpha -> 1: the bracket x^(1-alpha) - y^(1-alpha) + 1 is 1 plus a difference of order (alpha - 1), and its
    power 1/(1 - alpha) multiplied the bracket's rounding (1.2e-4 relative at alpha = 1 + 1e-12, from x = 0.5,
    y = 0.7); float64 and the mpmath twin at its default 15 digits are held to the plain form at 50 digits, at
    alpha from 1 + 1e-15 to 2, where no quotient exists too."""
    import mpmath as mp

    from attnlab.numerics.deformed_exp import mp_alpha_division

    g = torch.Generator().manual_seed(0)
    xs = torch.rand(40, generator=g, dtype=D64) * 3 + 1e-3
    ys = torch.rand(40, generator=g, dtype=D64) * 3 + 1e-3
    for a in (1 + 1e-15, 1 + 1e-12, 1 + 1e-9, 1 + 1e-6, 1.01, 1.3, 1.5, 1.7, 2.0):
        got = alpha_division(xs, ys, a)
        for x, y, q in zip(xs.tolist(), ys.tolist(), got.tolist()):
            with mp.workdps(50):
                c = 1 - mp.mpf(a)
                b = mp.mpf(x) ** c - mp.mpf(y) ** c + 1
                ref = mp.inf if b <= 0 else b ** (1 / c)
            tw = mp_alpha_division(mp.mpf(x), mp.mpf(y), a)            # at mpmath's default precision
            if ref == mp.inf:
                assert q == math.inf and tw == mp.inf, (a, x, y)
            else:
                assert abs(q - float(ref)) <= 1e-12 * float(ref), (a, x, y, q, float(ref))
                assert abs(float(tw) - float(ref)) <= 1e-12 * float(ref), (a, x, y)


def test_kernel_expansion_dtypes():
    """rkhs_norm computes K in gamma's dtype (a float32 gamma against the float64 kernel of list inducing points
    raised torch's bare matmul error); kernel_expansion refuses a gamma and K of two dtypes in one line."""
    from attnlab.numerics.kernel_family import rkhs_norm

    n32 = rkhs_norm(torch.tensor([1.0, 2.0]), [0.0, 1.0], 1.0)
    n64 = rkhs_norm([1.0, 2.0], [0.0, 1.0], 1.0)
    assert n32.dtype == torch.float32 and n64.dtype == torch.float64
    assert abs(n64.item() - math.sqrt(1 + 4 + 4 * math.exp(-1))) < 1e-14 and abs(n32.item() - n64.item()) < 1e-6
    K = gaussian_kernel(torch.tensor([0.0, 1.0], dtype=D64), torch.tensor([0.0, 1.0], dtype=D64), 1.0)
    with pytest.raises(ValueError, match=r"gamma \(torch.float32\) and K \(torch.float64\) must share one dtype"):
        kernel_expansion(torch.ones(2), K)


# --------------------------------------------------------------------------- outside review, 2026-12-07
def test_kernel_deformed_threshold_converges_near_alpha_one_or_refuses():
    """Newton on the mass from the left end gained about 1 per step near alpha = 1: at alpha = 1.01 over scores
    spanning +-1000 the 200 steps ran out and a 'density' of mass 3.5e42 came back without a word."""
    import torch

    from attnlab.numerics.continuous_attention import kernel_deformed_threshold
    from attnlab.numerics.quadrature import uniform_grid

    t = uniform_grid(0, 1, 101)
    for a, scale in ((1.01, 1000), (1.001, 1000), (1.0001, 1000), (1.5, 5), (2.0, 5)):
        f = torch.linspace(-scale, scale, 101, dtype=torch.float64)
        p, tau = kernel_deformed_threshold(f, t, a)
        assert abs(torch.trapezoid(p, t).item() - 1) < 1e-12, (a, scale)
    # brentq on the log of the trapezoid mass: tau = 994.5588 at alpha = 1.01 (outside review's oracle)
    import math

    from scipy.optimize import brentq

    f = torch.linspace(-1000, 1000, 101, dtype=torch.float64)
    w = torch.full((101,), 0.01, dtype=torch.float64)
    w[0] = w[-1] = 0.005

    def log_mass(tau):
        z = 1 + 0.01 * (f - tau)
        return torch.logsumexp(torch.where(z > 0, torch.log(z.clamp(min=1e-300)) / 0.01 + w.log(), -math.inf), 0).item()
    ref = brentq(log_mass, 900, 1000, xtol=1e-13)
    assert abs(kernel_deformed_threshold(f, t, 1.01)[1].item() - ref) < 1e-9
    with pytest.raises(ValueError, match="did not converge in iters = 1 "):
        kernel_deformed_threshold(f, t, 1.5, iters=1)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="iters must be a whole number"):
            kernel_deformed_threshold(f, t, 1.5, iters=bad)


def test_kernel_deformed_threshold_stops_at_the_rounding_of_its_mass(monkeypatch):
    """Near the root rounding left some rows stepping back and forth by a few eps in tau, above the step test's
    4e-16 (1 + |tau|): every call ran all 200 steps after 7 had converged (1 s for 200 x 401 grids, 60 % of
    `attnlab verify`'s kernel claims).  A row whose log mass is at the rounding of its sum (16 eps) stops; the
    density still integrates to 1 to the last digits and tau agrees with a bisection of the mass."""
    import torch

    from attnlab.numerics import continuous_attention as ca
    from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion
    from attnlab.numerics.quadrature import trapezoid, uniform_grid

    gen = torch.Generator().manual_seed(0)
    t = uniform_grid(0, 1, 401)
    f = kernel_expansion(torch.rand(200, 10, generator=gen, dtype=torch.float64) * 4 - 2,
                         gaussian_kernel(t, torch.linspace(0, 1, 10, dtype=torch.float64), 10.0))
    calls = []
    real = torch.logsumexp
    monkeypatch.setattr(torch, "logsumexp", lambda *a, **k: calls.append(1) or real(*a, **k))
    for a in (1.25, 1.5, 2.0):
        calls.clear()
        p, tau = ca.kernel_deformed_threshold(f, t, a)
        assert len(calls) <= 2 * 20, (a, len(calls))               # two per step (mass and slope), and the check
        assert float((trapezoid(p, t) - 1).abs().max()) < 1e-13
        lo, hi = f.min(-1).values - 2, f.max(-1).values             # bisection of the trapezoid mass on tau
        for _ in range(200):
            mid = (lo + hi) / 2
            # exp_{2-alpha}(x) = [1 + (alpha - 1) x]_+^{1/(alpha - 1)}, written out
            heavy = trapezoid(torch.relu(1 + (a - 1) * (f - mid[:, None])) ** (1 / (a - 1)), t) > 1
            lo, hi = torch.where(heavy, mid, lo), torch.where(heavy, hi, mid)
        assert float((tau - (lo + hi) / 2).abs().max()) < 1e-12, a


def test_truncated_parabola_expectation_far_from_a_narrow_support():
    """The closed form cancels (r^2 m0 against (c - mu)^2 m0) for a basis function far from a narrow support:
    1.9e-6 for 1.0105e-13 at sigma^2 = 1e-12, negative entries at the layers' variance floor 1e-4."""
    import mpmath as mp
    import torch

    from attnlab.numerics.continuous_attention import truncated_parabola_radius, truncated_parabola_rbf_expectation

    mu = torch.tensor(0.5, dtype=torch.float64)
    c = torch.linspace(0, 1, 21, dtype=torch.float64)
    for s2 in (1e-4, 1e-8, 1e-12):
        v = torch.tensor(s2, dtype=torch.float64)
        got = truncated_parabola_rbf_expectation(mu, v, c, torch.full_like(c, 0.05))
        r = float(truncated_parabola_radius(mu, v))
        with mp.workdps(40):
            for ci, g in zip(c.tolist(), got.tolist()):
                ref = mp.quad(lambda x: (mp.mpf(r) ** 2 - (x - 0.5) ** 2) / (2 * s2)
                              * mp.exp(-(x - ci) ** 2 / (2 * 0.05 ** 2)) / (mp.sqrt(2 * mp.pi) * 0.05),
                              [0.5 - r, 0.5, 0.5 + r])
                assert abs(g - float(ref)) <= 1e-12 * float(ref), (s2, ci, g, float(ref))


def test_kernel_deformed_softplus_refuses_an_underflowing_density():
    import torch

    from attnlab.numerics.continuous_attention import kernel_deformed_softplus
    from attnlab.numerics.quadrature import uniform_grid

    with pytest.raises(ValueError, match="Z = 0"):
        kernel_deformed_softplus(torch.full((3,), -1e6, dtype=torch.float64), uniform_grid(0, 1, 3), 1.5, 1.0)
