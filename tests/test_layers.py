"""attnlab.layers: the public layers, their robustness at extreme inputs (finite outputs and gradients
in float32 and float64, gradcheck in float64), masked rows, argument validation, and entmax as the
oracle of the sparsemax family."""
from __future__ import annotations


import pytest
import torch

from attnlab import layers
from attnlab.numerics import continuous_attention as ca
from attnlab.numerics.quadrature import trapezoid, uniform_grid

DTYPES = (torch.float32, torch.float64)


def _qkv(seed, B=2, H=2, L=4, S=5, E=6, dtype=torch.float64, heads=True):
    g = torch.Generator().manual_seed(seed)
    shape = (B, H) if heads else (B,)
    mk = lambda n: torch.randn(*shape, n, E, generator=g, dtype=dtype)   # noqa: E731
    return mk(L), mk(S), mk(S)


def test_public_api_is_re_exported_from_numerics():
    import attnlab.numerics.continuous_layers as cl
    import attnlab.numerics.fenchel_attention as fa

    assert layers.fenchel_attention is fa.fenchel_attention
    assert layers.SequenceContinuousAttention is cl.SequenceContinuousAttention
    assert set(layers.__all__) <= set(dir(layers))


# --------------------------------------------------------------------------- Fenchel-dual attention
# at the extreme scales below the solver may not reach its tolerance; it says so (RuntimeWarning, tested in
# test_fenchel_attention.py) and these tests check only that the answer stays finite and sensible
@pytest.mark.filterwarnings("ignore:solve_dual_shared:RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("qk_scale,alpha,x_scale", [(1, 1.0, 1), (100, 1.0, 1), (1, 1e4, 1), (100, 1e4, 1),
                                                     (1, 1.0, 1e3), (1, 1e-6, 1), (10, 30.0, 10)])
def test_fenchel_attention_finite_wherever_softmax_is(dtype, qk_scale, alpha, x_scale):
    for seed in range(3):
        q, k, v = _qkv(seed, dtype=dtype)
        q = (q * qk_scale * x_scale).requires_grad_()
        k = (k * qk_scale * x_scale).requires_grad_()
        v = v.requires_grad_()
        ref = torch.nn.functional.scaled_dot_product_attention(q.detach(), k.detach(), v.detach())
        assert torch.isfinite(ref).all()
        out = layers.fenchel_attention(q, k, v, alpha=alpha)
        assert torch.isfinite(out).all()
        out.square().sum().backward()
        assert all(torch.isfinite(x.grad).all() for x in (q, k, v))
        # a convex combination of the values
        assert (out <= v.detach().amax(-2, keepdim=True) + 1e-4).all()


@pytest.mark.filterwarnings("ignore:solve_dual_shared:RuntimeWarning")
def test_fenchel_attention_float32_agrees_with_float64_at_large_scores():
    q, k, v = _qkv(0)
    for s, a in ((100, 1.0), (1, 1e4)):
        o64 = layers.fenchel_attention(q * s, k * s, v, alpha=a)
        o32 = layers.fenchel_attention((q * s).float(), (k * s).float(), v.float(), alpha=a)
        assert (o32.double() - o64).abs().max() < 1e-2


def test_fenchel_attention_fully_masked_row_is_zero_like_sdpa():
    q, k, v = _qkv(1)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2] = False
    q.requires_grad_()
    out, p = layers.fenchel_attention(q, k, v, attn_mask=mask, return_weights=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q.detach(), k, v, attn_mask=mask)
    assert torch.equal(out[..., 2, :], torch.zeros_like(out[..., 2, :]))
    assert torch.allclose(out[..., 2, :], sdpa[..., 2, :])
    assert torch.equal(p[..., 2, :], torch.zeros_like(p[..., 2, :]))
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf"), 0, -3, 10**400, -10**400, 1e300, 1e-50,
                                   torch.tensor([1.0, 0.0])])
def test_fenchel_attention_rejects_bad_alpha(alpha):
    """Numbers are tested as the inputs' dtype stores them (1e300 is inf, 1e-50 is 0 in float32)."""
    q, k, v = (x.float() for x in _qkv(0))
    with pytest.raises(ValueError, match="alpha must be finite and > 0"):
        layers.fenchel_attention(q, k, v, alpha=alpha)
    if torch.is_tensor(alpha):
        return
    for mode in ("fixed", "head", "query"):        # a float32 layer cannot store 1e300 or 1e-50 either
        with pytest.raises(ValueError, match="alpha must be"):
            layers.FenchelMultiheadAttention(8, 2, alpha=alpha, alpha_mode=mode, dtype=torch.float32)
    if alpha not in (1e300, 1e-50):
        with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
            layers.FenchelMultiheadAttention(8, alpha=alpha)


def test_fenchel_module_large_alpha_and_gradcheck():
    m = layers.FenchelMultiheadAttention(8, 2, batch_first=True, alpha=1000.0, alpha_mode="head")   # no OverflowError
    assert abs(float(torch.nn.functional.softplus(m.alpha_raw[0].detach())) - 1000.0) < 1e-3
    x = torch.randn(2, 3, 8)
    assert torch.isfinite(m(x, x, x)[0]).all()
    q, k, v = _qkv(2, B=1, H=1, L=2, S=3, E=3)
    args = tuple(x.clone().requires_grad_() for x in (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: layers.fenchel_attention(a, b, c, alpha=0.7), args)


# --------------------------------------------------------------------------- continuous attention
KINDS = ("cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0])
def test_continuous_attention_finite(dtype, kind, scale):
    q, k, v = _qkv(3, heads=False, dtype=dtype)
    q = (q * scale).requires_grad_()
    k = k.requires_grad_()
    v = v.requires_grad_()
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True
    out, p = layers.continuous_attention(q, k, v, ~pad[:, None, :], kind=kind, return_density=True)
    assert out.shape == (2, 4, 6) and torch.isfinite(out).all()
    assert torch.isfinite(p).all() and (p >= 0).all()
    out.square().sum().backward()
    assert all(torch.isfinite(x.grad).all() for x in (q, k, v))


@pytest.mark.parametrize("kind", ("kernel_softmax", "kernel_sparsemax"))
def test_continuous_kernel_density_integrates_to_one(kind):
    q, k, v = _qkv(4, heads=False)
    _, p = layers.continuous_attention(q, k, v, kind=kind, return_density=True, grid_size=301)
    grid = torch.linspace(0, 1, 301, dtype=p.dtype)
    assert (trapezoid(p, grid) - 1).abs().max() < 1e-10


def test_continuous_attention_gradcheck_and_module():
    q, k, v = _qkv(5, B=1, L=2, S=3, E=3, heads=False)
    for kind in KINDS:
        args = tuple(x.clone().requires_grad_() for x in (q, k, v))
        assert torch.autograd.gradcheck(lambda a, b, c, kind=kind: layers.continuous_attention(
            a, b, c, kind=kind, grid_size=64, n_basis=8), args, atol=1e-6), kind
    m = layers.ContinuousMultiheadAttention(8, kind="kernel_sparsemax", batch_first=True)
    x = torch.randn(2, 7, 8)
    assert m(x, x, x)[0].shape == (2, 7, 8)
    with pytest.raises(ValueError, match="kind must be one of"):
        layers.ContinuousMultiheadAttention(8, kind="softmax")
    # every key padded: 0, as scaled_dot_product_attention (it used to raise)
    out = layers.continuous_attention(q, k, v, torch.zeros(1, 1, 3, dtype=torch.bool), kind="cts_softmax")
    assert torch.equal(out, torch.zeros_like(out))


# --------------------------------------------------------------------------- densities far outside
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mu", [-30.0, 3.0, 30.0, 1e3])
def test_truncated_densities_integrate_to_one_far_outside(dtype, mu):
    """mu far outside [0, 1]: mass exactly 1 (on a grid that resolves the decay length sigma^2/|mu|)."""
    lo, hi = (0.9, 1.0) if mu > 1 else (0.0, 0.1)
    G = 200001
    tin = uniform_grid(0, 1, G).to(dtype)
    m, s2 = torch.tensor(mu, dtype=dtype), torch.tensor(1.0, dtype=dtype)
    for dens in (ca.gaussian_density, ca.truncated_parabola_density):
        p = dens(tin, m, s2, (0.0, 1.0))
        assert torch.isfinite(p).all() and p.dtype == dtype
        total = float(trapezoid(p.double(), tin.double()))
        assert abs(total - 1) < (2e-3 if abs(mu) >= 1e3 else 1e-6), (dens.__name__, total)
    e = ca.gaussian_rbf_expectation(m, s2, torch.tensor([0.3, 0.7], dtype=dtype),
                                    torch.tensor([0.1, 0.2], dtype=dtype), (0.0, 1.0))
    assert torch.isfinite(e).all()


def test_densities_refuse_what_float64_cannot_resolve():
    t = torch.linspace(0, 1, 11, dtype=torch.float64)
    with pytest.raises(ValueError, match="outside the domain"):
        ca.gaussian_density(t, torch.tensor(1e9, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64), (0, 1))


# --------------------------------------------------------------------------- entmax as the oracle
@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_kernel_deformed_threshold_is_entmax_on_an_equal_weight_grid(alpha):
    """On a grid whose trapezoid weights are all h (the end points carry no mass), the density of the
    deformed family satisfies h p = entmax_alpha(h^(alpha-1) f): entmax (the reference implementation
    of the discrete alpha-entmax) is the oracle of Eq. 4's threshold."""
    import entmax

    G = 201
    t = torch.linspace(0, 1, G, dtype=torch.float64)
    h = 1 / (G - 1)
    g = torch.Generator().manual_seed(0)
    f = torch.randn(3, G, generator=g, dtype=torch.float64) * 5
    f[:, 0] = f[:, -1] = -1e6                      # the end points (half weights) get no mass
    p, _ = ca.kernel_deformed_threshold(f, t, alpha)
    x = h ** (alpha - 1) * f
    ref = entmax.sparsemax(x, dim=-1) if alpha == 2.0 else entmax.entmax15(x, dim=-1)
    assert (h * p - ref).abs().max() < 1e-12


def test_broadcast_shapes_is_torchs():
    """The layers' plain-Python broadcast_shapes gives torch.broadcast_shapes's answer, or its RuntimeError,
    on random shapes of up to 4 dimensions (sizes 0-3, so that 0 and 1 meet every other size)."""
    import random

    from attnlab.numerics.multihead import broadcast_shapes

    rng = random.Random(0)
    cases = [(), ((),), ((0,), (1,)), ((2, 1), (1, 3)), ((2,), (3,))]
    cases += [tuple(tuple(rng.randint(0, 3) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(1, 4)))
              for _ in range(3000)]
    for shapes in cases:
        try:
            want = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                broadcast_shapes(*shapes)
            continue
        assert broadcast_shapes(*shapes) == want, shapes
