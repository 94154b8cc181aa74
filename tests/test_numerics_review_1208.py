"""Outside review of 2026-12-08: numerical findings in expfam, kernel_family, deformed_exp, continuous_attention and
tsallis, each held against mpmath at high precision or a closed form (never against the library itself), and the
refusals of bad input (one-line ValueErrors naming the argument)."""
import math

import mpmath as mp
import numpy as np
import pytest
import torch

from attnlab.numerics import continuous_attention as ca
from attnlab.numerics.deformed_exp import exp_rho_beta
from attnlab.numerics.expfam import PoissonV1, PoissonV2
from attnlab.numerics.kernel_family import rkhs_norm
from attnlab.numerics.quadrature import trapezoid, trapezoid_weights, uniform_grid
from attnlab.numerics.tsallis import tsallis_bregman, tsallis_negentropy

D64 = torch.float64
EPS = 2.0 ** -52


def _one_line_refusal(call, *fragments):
    with pytest.raises(ValueError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


# --- 1. Poisson log-likelihoods where their large terms cancel ------------------------------------------------

_COUNTS = (0, 1, 2, 3, 5, 14, 15, 16, 17, 30, 100, 1e3, 1e5, 1e6, 1e8, 1e10, 1e12, 1e14, 1e15)


def _rates(n):
    """Poisson rates near the count n (within its rounding, a standard deviation, 0.1 %, 20 %) and far from it."""
    r = [1e-300, 1e-3, 0.5, 1.0, 3.0, 1e15, 1e300]
    if n > 0:
        r += [n, n * (1 + 1e-9), n * (1 - 1e-6), n * 1.001, n * 0.999, n + math.sqrt(n), max(n - math.sqrt(n), 1e-3),
              n * 1.2, n * 0.8, n * 10, n / 10]
    return r


def _mp_poisson(n, lam):
    """log(lam^n e^-lam / n!) at 60 digits."""
    with mp.workdps(60):
        return n * mp.log(lam) - lam - mp.loggamma(n + 1)


def _poisson_cases(cls, dtype):
    """(raw output z, y, exact log p at the floating z and y) over counts to 1e15 and rates near and far."""
    out = []
    for y in _COUNTS:
        if cls is PoissonV1 and y == 0:
            continue
        yt = torch.tensor(float(y), dtype=dtype)
        n = float(yt) - (1 if cls is PoissonV1 else 0)
        for r in _rates(n):
            if cls is PoissonV2 and r <= 1:
                continue
            z = torch.tensor(math.log(r - 1) if cls is PoissonV2 else math.log(r), dtype=dtype)
            if not torch.isfinite(z):
                continue
            with mp.workdps(60):
                lam = (1 + mp.exp(mp.mpf(float(z)))) if cls is PoissonV2 else mp.exp(mp.mpf(float(z)))
                out.append((z, yt, n, lam, _mp_poisson(n, lam)))
    return out


@pytest.mark.parametrize("cls", [PoissonV1, PoissonV2])
def test_poisson_log_prob_float64_against_mpmath(cls):
    """float64: within 8 ulps of |log p| + |n - rate| (the second, d log p / d log rate, carries the rounding of
    e^z); summed as printed it gave -17.0 for -17.037 at y = 1e14 (v1)."""
    fam = cls()
    for z, yt, n, lam, ref in _poisson_cases(cls, D64):
        for got in (fam.log_prob(z, yt), fam._log_prob(z, yt)):         # the models' unchecked path too
            scale = abs(float(ref)) + abs(float(n - lam))
            assert abs(float(got) - float(ref)) <= 8 * EPS * scale, (float(yt), float(z), float(got), float(ref))


@pytest.mark.parametrize("cls", [PoissonV1, PoissonV2])
def test_poisson_log_prob_float32_is_correctly_rounded(cls):
    """float32 outputs and counts: log p within one float32 ulp of the exact value at those inputs (it gave +2097152
    for -14.81 at y = 1e12, 0 for -10.13 at 1e8, -8 for -7.83 at 1e6)."""
    fam = cls()
    for z, yt, n, lam, ref in _poisson_cases(cls, torch.float32):
        want = np.float32(float(ref)) if abs(ref) < 3e38 else np.float32(-np.inf)
        got = fam.log_prob(z, yt)
        assert got.dtype == torch.float32
        g = np.float32(float(got))
        if np.isinf(want) or want == 0:
            assert g == want, (float(yt), float(z), g, float(ref))
        else:
            assert abs(float(g) - float(want)) <= float(np.spacing(np.abs(want))), (float(yt), float(z), g, float(ref))


def test_poisson_log_prob_at_the_reviewed_counts():
    """The review's cases, against mpmath at the float32 raw output log(y - 1)."""
    for y, approx in ((1e12, -14.81), (1e8, -10.13), (1e6, -7.83)):
        z = torch.tensor(math.log(y - 1))
        got = float(PoissonV1().log_prob(z, torch.tensor(y)))
        yf = float(torch.tensor(y))
        with mp.workdps(60):
            ref = float(_mp_poisson(yf - 1, mp.exp(mp.mpf(float(z)))))
        assert abs(got - ref) <= 4e-7 * abs(ref) and abs(ref - approx) < 0.01, (y, got, ref)


def test_poisson_log_prob_gradient_is_n_minus_rate():
    """d log p / dz = n - rate (v1, n = y - 1) and (y - rate) sigmoid(z) (v2, rate = 1 + e^z), within 8 eps (n + rate)
    (the rounding of e^z), and finite (no NaN) at rates whose squares underflow."""
    z = torch.tensor([0.3, 5.0, 34.5, -700.0, 30.0, -745.0], dtype=D64, requires_grad=True)
    y = torch.tensor([2.0, 150.0, 1e15, 1.0, 1.0, 3.0], dtype=D64)
    (g,) = torch.autograd.grad(PoissonV1().log_prob(z, y).sum(), z)
    z2 = torch.tensor([-3.0, 0.2, 12.0, -800.0], dtype=D64, requires_grad=True)
    y2 = torch.tensor([0.0, 4.0, 1e5, 2.0], dtype=D64)
    (g2,) = torch.autograd.grad(PoissonV2().log_prob(z2, y2).sum(), z2)
    with mp.workdps(40):
        for gi, yy, zz in zip(g.tolist(), y.tolist(), z.tolist()):
            n, lam = mp.mpf(yy) - 1, mp.exp(mp.mpf(zz))
            assert abs(gi - float(n - lam)) <= 8 * EPS * float(n + lam), (gi, yy, zz)
        for gi, yy, zz in zip(g2.tolist(), y2.tolist(), z2.tolist()):
            n, lam = mp.mpf(yy), 1 + mp.exp(mp.mpf(zz))
            want = (n - lam) / (1 + mp.exp(-mp.mpf(zz)))
            assert abs(gi - float(want)) <= 8 * EPS * float(n + lam), (gi, yy, zz)


# --- 2. rkhs_norm near the kernel matrix's null space --------------------------------------------------------

def _mp_rkhs(g, s, z):
    with mp.workdps(50):
        q = mp.fsum(mp.mpf(float(g[i])) * mp.mpf(float(g[j])) * mp.exp(-mp.mpf(z) * (mp.mpf(float(s[i]))
                    - mp.mpf(float(s[j]))) ** 2) for i in range(len(g)) for j in range(len(g)))
        return mp.sqrt(q)


@pytest.mark.parametrize("dtype", [D64, torch.float32])
def test_rkhs_norm_of_a_difference_at_close_points(dtype):
    """gamma = (1, -1) at t = (0, 1e-9): gamma^T K gamma cancelled to 0 (clamped); the norm is 1.414e-9."""
    s = torch.tensor([0.0, 1e-9], dtype=dtype)
    got = rkhs_norm(torch.tensor([1.0, -1.0], dtype=dtype), s, 1.0)
    ref = _mp_rkhs([1.0, -1.0], s.tolist(), 1.0)
    assert got.dtype == dtype
    tol = 4 * EPS if dtype == D64 else 2.0 ** -23
    assert abs(float(got) - float(ref)) <= tol * float(ref), (float(got), ref)


def test_rkhs_norm_against_mpmath_or_refused():
    """Random gamma (half summing to 0 as rounded) on 2 to 7 points 1e-10 to 10 apart, zeta2 in [0.01, 100]: none
    refused, each within sqrt(eps) of mpmath (the documented bound), and the three points 1e-8 apart of the claim
    kernel.sec4.kernel-expansion within 1e-14; a second difference at points 1e-4 apart (rounding of its bound
    above sqrt(eps) of it) is refused, and at 1e-3 within the bound of the closed form 12 zeta2^2 h^4 + O(h^6)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 8))
        s = rng.uniform(0, 1, n) * 10.0 ** rng.uniform(-10, 1)
        g = rng.normal(size=n)
        if rng.uniform() < 0.5:
            g -= g.mean()
        z = 10.0 ** rng.uniform(-2, 2)
        got = float(rkhs_norm(torch.tensor(g), torch.tensor(s), z))
        ref = float(_mp_rkhs(g, s, z))
        assert abs(got - ref) <= math.sqrt(EPS) * ref, (g, s, z, got, ref)
    rng0 = np.random.default_rng(3)
    sn = 0.5 + 1e-8 * rng0.normal(size=3)
    gn = rng0.normal(size=3)
    gn = gn - gn.mean()
    ref = float(_mp_rkhs(gn, sn, 1.0))
    assert abs(float(rkhs_norm(torch.tensor(gn), torch.tensor(sn), 1.0)) - ref) <= 1e-14 * ref
    _one_line_refusal(lambda: rkhs_norm([1.0, -2.0, 1.0], [0.0, 1e-4, 2e-4], 1.0), "gamma", "near-null space")
    h = 1e-3
    ref = float(_mp_rkhs([1.0, -2.0, 1.0], [0.0, h, 2 * h], 1.0))
    assert abs(ref - math.sqrt(12) * h * h) <= 1e-5 * ref            # (the oracle against its closed form)
    assert abs(float(rkhs_norm([1.0, -2.0, 1.0], [0.0, h, 2 * h], 1.0)) - ref) <= math.sqrt(EPS) * ref


# --- 3. exp_{rho, beta} where softplus underflows --------------------------------------------------------------

def _mp_exp_rho_beta_and_cond(t, rho, beta):
    """Eq. 20 at 60 digits, and the relative condition number of its float64 evaluation: 1, plus the rounding of
    x = rho (1 + (1 - beta) t) (absolute rho eps (1 + |(1 - beta) t|)) times d log f / dx, plus |log f|."""
    with mp.workdps(60):
        rho, beta, t = mp.mpf(rho), mp.mpf(beta), mp.mpf(t)
        k = 1 - beta
        x = rho * (1 + k * t)
        sp = x + mp.log1p(mp.exp(-x)) if x > 0 else mp.log1p(mp.exp(x))
        val = mp.exp(mp.log(sp / rho) / k)
        cond = 1 + (1 / (k * (1 + mp.exp(-x)) * sp)) * rho * (1 + abs(k * t)) + abs(mp.log(sp / rho) / k)
        return val, float(cond)


def test_exp_rho_beta_at_the_reviewed_point():
    """exp_{1, -1000}(-1) = softplus(-1000)^(1/1001) = 0.368 (softplus underflowed first: 0)."""
    got = float(exp_rho_beta(-1.0, rho=1, beta=-1000))
    ref, _ = _mp_exp_rho_beta_and_cond(-1.0, 1.0, -1000.0)
    assert abs(got - float(ref)) <= 4 * EPS * float(ref), (got, ref)


def test_exp_rho_beta_against_mpmath_over_beta_and_rho():
    """beta in [-1000, 0) and (0, 1) (and 0), rho from 1e-300 to 1e300, rho (1 + (1 - beta) t) from -1e5 to 1e4:
    within 2 eps times the condition number wherever that is below 1e8, 0 where the value underflows; +inf where it
    overflows."""
    tiny, big = mp.mpf("2.2250738585072014e-308"), mp.mpf("1.7976931348623157e308")
    checked = 0
    for beta in (-1000, -100, -3, -1, -0.5, -1e-3, 0.0, 1e-3, 0.3, 0.5, 0.6, 0.9, 0.99, 1 - 1e-6):
        for rho in (1e-300, 1e-30, 1e-3, 1.0, 7.0, 1e3, 1e30, 1e300):
            for xt in (-1e5, -3000, -1000, -745, -700, -50, -1, -1e-3, 0.0, 1e-3, 1, 20, 50, 700, 1e4):
                t = (xt / rho - 1.0) / (1.0 - beta)
                if not math.isfinite(t):
                    continue
                ref, cond = _mp_exp_rho_beta_and_cond(t, rho, beta)
                if cond > 1e8:
                    continue
                got = float(exp_rho_beta(torch.tensor(t, dtype=D64), rho, beta))
                checked += 1
                if ref > big:
                    assert got == math.inf, (beta, rho, xt, got)
                elif ref < tiny:
                    assert abs(got - float(ref)) <= 2 * EPS * cond * float(tiny), (beta, rho, xt, got, ref)
                else:
                    assert abs(got - float(ref)) <= 2 * EPS * cond * float(ref), (beta, rho, xt, got, ref, cond)
    assert checked > 1000


def test_exp_rho_beta_gradient_where_softplus_underflows():
    t = torch.tensor([-1.0, -0.5, 0.3, -2000.0], dtype=D64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: exp_rho_beta(x, 1.0, -1000.0), (t,))


# --- 4. kernel_deformed / kernel_deformed_softplus with an overflowing normalizer -------------------------------

@pytest.mark.parametrize("call", [
    lambda t: ca.kernel_deformed(1e6 * torch.sin(7 * t), t, 1.01),
    lambda t: ca.kernel_deformed_softplus(torch.sin(7 * t), t, 1.5, 1e-300),
    lambda t: ca.kernel_deformed_softplus(100 * torch.sin(7 * t), t, 1 + 1e-12, 1.0),
], ids=["deformed-1e6", "softplus-rho-1e-300", "softplus-alpha-1+1e-12"])
def test_kernel_deformed_refuses_an_infinite_normalizer(call):
    """Z = inf in exact arithmetic's float64 rounding (exp_{2-alpha}(1e6) at alpha = 1.01 is 1e400; the softplus
    floor (log 2 / 1e-300)^2 is 4.8e599; (softplus(1)/1)^(1e12) overflows): it gave Z = inf and an all-NaN density."""
    t = uniform_grid(0, 1, 201)
    with mp.workdps(30):                       # the oracle: the largest grid value of the integrand overflows float64
        assert mp.mpf(1 + 0.01 * 1e6 * 0.99) ** 100 > mp.mpf("1.8e308")
        assert (mp.log(2) / mp.mpf("1e-300")) ** 2 > mp.mpf("1.8e308")
        assert mp.exp(mp.mpf(10) ** 12 * mp.log(mp.log1p(mp.e))) > mp.mpf("1.8e308")
    _one_line_refusal(lambda: call(t), "f_tilde", "Z = inf")


# --- 5. kernel_deformed_threshold near alpha = 1 -----------------------------------------------------------------

def _mp_tau(f, w, a):
    """The threshold of sum_g w_g [1 + (a - 1)(f_g - tau)]_+^(1/(a-1)) = 1 by 200 bisection steps at 40 digits."""
    with mp.workdps(40):
        a = mp.mpf(a)
        k = a - 1
        fs, ws = [mp.mpf(x) for x in f], [mp.mpf(x) for x in w]

        def mass(tau):
            return mp.fsum(wi * mp.exp(mp.log1p(k * (fi - tau)) / k) for fi, wi in zip(fs, ws) if k * (fi - tau) > -1)
        lo, hi = min(fs) - 10, max(fs) + 10
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mass(mid) > 1 else (lo, mid)
        return (lo + hi) / 2


@pytest.mark.parametrize("alpha,scale", [(1 + 1e-12, 1.0), (1 + 1e-8, 1e3), (1 + 1e-12, 1e3), (1 + 1e-8, 1.0)])
@pytest.mark.parametrize("grid", [(0.0, 1.0, 201), (-1.0, 2.0, 301)])
def test_threshold_converges_near_alpha_one(alpha, scale, grid):
    """It refused these with 'raise iters, or give scores on a smaller scale' (log of the rounded 1 + (alpha-1) x
    put eps/(alpha-1) into log mass); now the mass is 1 to 1e-13 and tau within 4 ulps of an mpmath bisection."""
    t = uniform_grid(*grid)
    f = scale * torch.sin(7 * t)
    p, tau = ca.kernel_deformed_threshold(f, t, alpha)
    assert abs(float(trapezoid(p, t)) - 1.0) <= 1e-13
    ref = float(_mp_tau(f.tolist(), trapezoid_weights(t).tolist(), alpha))
    assert abs(float(tau) - ref) <= 4 * EPS * max(1.0, abs(ref)), (float(tau), ref)


# --- 6. tracebacks from inside torch -----------------------------------------------------------------------------

def test_kernel_softmax_refuses_an_empty_grid_as_the_other_maps_do():
    """An empty grid raised an IndexError from max(); the module's other maps refuse it through trapezoid_weights."""
    e = torch.zeros(0, dtype=D64)
    for call in (lambda: ca.kernel_softmax(e, e), lambda: ca.kernel_deformed_max_shift(e, e, 1.5),
                 lambda: ca.kernel_deformed(e, e, 1.5), lambda: ca.kernel_softmax(torch.zeros(0), torch.zeros(0))):
        _one_line_refusal(call, "t (grid) must be a 1-D tensor with >= 2 nodes")


@pytest.mark.parametrize("positions", [[0.5] * 10, [0.0, 0.0, 0.5], [0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4]])
def test_ridge_refuses_a_singular_system_at_lam_zero(positions):
    """F F^T of 6 basis functions on fewer distinct positions is singular (F has rank < 6: numpy's rank, the
    oracle); at lam = 0 torch.linalg.solve raised its _LinAlgError, or returned coefficients of size 1e2."""
    pos = torch.tensor(positions, dtype=D64)
    cen, wid = torch.linspace(0, 1, 6, dtype=D64), torch.full((6,), 0.2, dtype=D64)
    assert np.linalg.matrix_rank(ca.gaussian_rbf(pos, cen, wid).numpy()) < 6
    H = torch.ones(2, len(positions), dtype=D64)
    _one_line_refusal(lambda: ca.ridge_value_coefficients(H, pos, cen, wid, lam=0.0), "lam", "singular", "lam > 0")
    assert torch.isfinite(ca.ridge_value_coefficients(H, pos, cen, wid, lam=0.01)).all()


# --- 7. silent NaN on bad input ----------------------------------------------------------------------------------

def _bad_calls():
    t = uniform_grid(0, 1, 21)
    nan_f = torch.sin(t).clone()
    nan_f[3] = math.nan
    inf_f = torch.sin(t).clone()
    inf_f[3] = math.inf
    ninf = torch.full_like(t, -math.inf)
    nan = torch.tensor(math.nan, dtype=D64)
    one = torch.tensor(1.0, dtype=D64)
    return [
        ("softmax NaN f", lambda: ca.kernel_softmax(nan_f, t), "f must hold no NaN"),
        ("softmax +inf f", lambda: ca.kernel_softmax(inf_f, t), "f must hold no NaN or +inf"),
        ("softmax all -inf f", lambda: ca.kernel_softmax(ninf, t), "-inf on the whole grid"),
        ("softmax NaN log_q0", lambda: ca.kernel_softmax(torch.sin(t), t, log_q0=torch.full_like(t, math.nan)),
         "log_q0 must hold no NaN"),
        ("deformed NaN f", lambda: ca.kernel_deformed(nan_f, t, 1.5), "f_tilde must hold no NaN"),
        ("deformed all -inf f", lambda: ca.kernel_deformed(ninf, t, 1.5), "empty support"),
        ("deformed NaN q0", lambda: ca.kernel_deformed(torch.sin(t), t, 1.5, q0=torch.full_like(t, math.nan)),
         "q0 (base density on the grid) must be finite and >= 0"),
        ("threshold NaN q0", lambda: ca.kernel_deformed_threshold(torch.sin(t), t, 1.5, q0=torch.full_like(t, math.nan)),
         "q0 (base density on the grid) must be finite and >= 0"),
        ("threshold NaN f", lambda: ca.kernel_deformed_threshold(nan_f, t, 1.5), "f must hold no NaN"),
        ("max shift NaN f", lambda: ca.kernel_deformed_max_shift(nan_f, t, 1.5), "f must hold no NaN"),
        ("gaussian mu NaN on R", lambda: ca.gaussian_density(t, nan, one), "mu must be finite"),
        ("gaussian mu NaN on [0, 1]", lambda: ca.gaussian_density(t, nan, one, domain=(0, 1)), "mu must be finite"),
        ("parabola mu NaN on R", lambda: ca.truncated_parabola_density(t, nan, one), "mu must be finite"),
        ("parabola mu NaN on [0, 1]", lambda: ca.truncated_parabola_density(t, nan, one, domain=(0, 1)),
         "mu must be finite"),
        ("negentropy q0 < 0", lambda: tsallis_negentropy(torch.ones_like(t), t, 1.5, q0=-torch.ones_like(t)),
         "q0 (density on the grid) must be >= 0"),
        ("negentropy q0 NaN", lambda: tsallis_negentropy(torch.ones_like(t), t, 1.5, q0=torch.full_like(t, math.nan)),
         "q0 (density on the grid) must be >= 0"),
        ("bregman q0 < 0", lambda: tsallis_bregman(torch.ones_like(t), torch.ones_like(t), t, 1.5,
                                                   q0=-torch.ones_like(t)), "q0 (density on the grid) must be >= 0"),
    ]


@pytest.mark.parametrize("label,call,frag", _bad_calls(), ids=[c[0] for c in _bad_calls()])
def test_bad_input_is_refused_in_one_line(label, call, frag):
    """Each returned a NaN density (or Omega = -2.67 for a negative q0) where it now names the argument."""
    _one_line_refusal(call, frag)


def test_valid_input_with_masked_scores_unchanged():
    """-inf scores are zero weights (not refused); a q0 with zeros is a density: closed forms on a 3-point grid."""
    t = torch.tensor([0.0, 0.5, 1.0], dtype=D64)
    p, A = ca.kernel_softmax(torch.tensor([0.0, -math.inf, 0.0], dtype=D64), t)
    # e^0 at the ends, 0 in the middle: Z = 0.25 + 0.25 = 0.5, p = 2 at the ends
    assert torch.equal(p, torch.tensor([2.0, 0.0, 2.0], dtype=D64)) and abs(float(A) - math.log(0.5)) <= EPS
    val = tsallis_negentropy(torch.ones(3, dtype=D64), t, 2.0, q0=torch.tensor([0.0, 1.0, 1.0], dtype=D64))
    # int p^2 q0 = 0.25 + 0.5 - ... trapezoid: 0.25 * (0 + 2 * 1 + 1) = 0.75; (0.75 - 1) / 2 = -0.125
    assert float(val) == -0.125
