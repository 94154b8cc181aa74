"""Property tests (hypothesis) of the functional layers over shapes, scales 1e-6 ... 1e4, masks and dtypes:
outputs and gradients are finite wherever scaled_dot_product_attention's are, and float32 is within a
stated tolerance of the float64 result.

Tolerance: float32 rounds the scores s = scale <q, k> by about eps32 |s|, which moves softmax weights by
as much, so the output of float32 inputs may miss the float64 output (of the same, float32-rounded,
inputs) by  2 max|v| min(1, C eps32 (1 + m))  with m the largest |score| (times alpha for the exact
Fenchel layer, whose dual sees alpha-scaled scores); C = 64 covers the sums over keys and the solvers'
relative tolerances (1e-5 for float32 Fenchel: C is raised to cover it).  The default run keeps few
examples; the `slow` variant runs many more."""
from __future__ import annotations

import warnings

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from attnlab import layers  # noqa: E402

EPS32 = torch.finfo(torch.float32).eps

FAMILIES = {
    "fenchel": lambda q, k, v, m: layers.fenchel_attention(q, k, v, attn_mask=m, alpha=0.7),
    "fenchel-approx": lambda q, k, v, m: layers.fenchel_attention(q, k, v, attn_mask=m, exact=False),
    "efa": lambda q, k, v, m: layers.efa_attention(q, k, v, attn_mask=m),
    "cts_softmax": lambda q, k, v, m: layers.continuous_attention(q, k, v, m, kind="cts_softmax", n_basis=8),
    "kernel_sparsemax": lambda q, k, v, m: layers.continuous_attention(q, k, v, m, kind="kernel_sparsemax",
                                                                       n_basis=8, grid_size=64),
}
ALPHA = {"fenchel": 0.7}


@st.composite
def problems(draw):
    lead = tuple(draw(st.lists(st.integers(1, 2), min_size=0, max_size=2)))
    L, S, E = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    scale = 10.0 ** draw(st.floats(-6, 4))
    seed = draw(st.integers(0, 2 ** 16))
    masked = draw(st.sampled_from(["none", "bool", "float"]))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, L, E, generator=g, dtype=torch.float64) * scale
    k = torch.randn(*lead, S, E, generator=g, dtype=torch.float64) * scale ** 0   # one scaled side: scores x scale
    v = torch.randn(*lead, S, E, generator=g, dtype=torch.float64)
    mask = None
    if masked != "none":
        keep = torch.rand(L, S, generator=g) > 0.3        # rows may be fully masked: output 0 there
        mask = keep if masked == "bool" else torch.zeros(L, S, dtype=torch.float64).masked_fill(~keep, float("-inf"))
    return q, k, v, mask


def _check(name, problem):
    q, k, v, mask = problem
    f = FAMILIES[name]
    # float32-rounded inputs, computed in float64 (the reference) and in float32
    q32, k32, v32 = q.float(), k.float(), v.float()
    m32 = None if mask is None else (mask if mask.dtype == torch.bool else mask.float())
    sdpa = torch.nn.functional.scaled_dot_product_attention(q32, k32, v32, attn_mask=m32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)    # the exact solver converges
        ref = f(q32.double(), k32.double(), v32.double(), mask)
        qq, kk, vv = (x.clone().requires_grad_() for x in (q32, k32, v32))
        out = f(qq, kk, vv, m32)
    assert out.dtype == torch.float32 and out.shape == sdpa.shape
    finite = torch.isfinite(sdpa).all(-1)
    assert torch.isfinite(out[finite]).all()
    out.square().sum().backward()
    for x in (qq, kk, vv):
        assert torch.isfinite(x.grad).all()
    scores = (q32.double() @ k32.double().transpose(-1, -2)).abs() / q.shape[-1] ** 0.5
    m = float(scores.max()) * ALPHA.get(name, 1.0) if scores.numel() else 0.0
    C = 64 if name != "fenchel" else 64 + 1e-5 / EPS32 * 8
    tol = 2 * float(v32.abs().max()) * min(1.0, C * EPS32 * (1 + m)) if v.numel() else 0.0
    assert float((out.detach().double() - ref).abs().max()) <= tol + 1e-30, (name, m, tol)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@pytest.mark.parametrize("name", sorted(FAMILIES))
@settings(max_examples=15, **SETTINGS)
@given(problem=problems())
def test_finite_and_near_float64(name, problem):
    _check(name, problem)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILIES))
@settings(max_examples=300, **SETTINGS)
@given(problem=problems())
def test_finite_and_near_float64_many(name, problem):
    _check(name, problem)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(FAMILIES))
@settings(max_examples=8, **SETTINGS)
@given(problem=problems())
def test_half_inputs_give_finite_outputs_of_their_dtype(name, dtype, problem):
    q, k, v, mask = problem
    big = float(torch.finfo(dtype).max) / 4
    if float(q.abs().amax()) > big or float(k.abs().amax()) > big:
        return                                            # not representable in this dtype
    m = None if mask is None else (mask if mask.dtype == torch.bool else mask.to(dtype))
    out = FAMILIES[name](q.to(dtype), k.to(dtype), v.to(dtype), m)
    assert out.dtype == dtype and torch.isfinite(out).all()


@pytest.mark.parametrize("kind", ["kernel_softmax", "kernel_sparsemax"])
@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
def test_kernel_bandwidths_over_their_whole_range(kind, kernel):
    """The kernel kinds over the bandwidths continuous_attention accepts ([1e-100, 1e100]), with and without a
    padding mask: float32 finite and within this module's tolerance of float64.  Float32 gave NaN below a
    Gaussian bandwidth of ~4e-20 (1/(2 bw^2) overflowed to inf: 0 * inf on the kernel's diagonal) or a Laplace
    one of ~1e-45, and missed float64 by up to 0.78 from 1e-7 down (the positions rounded to float32 moved a
    kernel narrower than that rounding off its grid point)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 5, generator=g, dtype=torch.float64).float() for n in (3, 6, 6))
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    for bw in (1e-100, 1e-46, 1e-20, 1e-10, 1e-7, 1e-3, 0.1, 10.0, 1e100):
        for mask in (None, pad[:, None, :].expand(2, 3, 6)):
            kw = dict(kind=kind, kernel=kernel, bandwidth=bw, n_basis=8, grid_size=64)
            out = layers.continuous_attention(q, k, v, mask, **kw)
            ref = layers.continuous_attention(q.double(), k.double(), v.double(), mask, **kw)
            m = float((q.double() @ k.double().transpose(-1, -2)).abs().max()) / 5 ** 0.5
            tol = 2 * float(v.abs().max()) * 64 * EPS32 * (1 + m)
            assert torch.isfinite(out).all(), (bw, mask is None)
            assert float((out.double() - ref).abs().max()) <= tol, (bw, mask is None)
