"""The fast paths of the attention layers (issue 47, "Fast"): exact Fenchel attention's two parametrisations
of lambda (Gram space for S <= E, lambda itself for S > E) and their implicit backwards, and continuous
attention's cached tables, folded kernel and max-shift node.  Each is checked against an independent
computation (float64 gradcheck, the general per-query Newton solver, a dense implicit-function gradient,
the masked general path); all cheap."""
import warnings

import pytest
import torch

import attnlab.numerics.fenchel_attention as fa
from attnlab.layers import continuous_attention, fenchel_attention
from attnlab.numerics.continuous_layers import _sequence_tables, _ShiftedRelu, _SparsemaxMoments
from attnlab.numerics.entropic_dual import solve_dual_newton_torch
from attnlab.numerics.fenchel_attention import fenchel_dual_lambda, solve_dual_shared


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0, grad=True):
    x = torch.randn(*shape, dtype=torch.float64, generator=_g(seed))
    return x.requires_grad_(grad)


# --------------------------------------------------------------------------- exact Fenchel attention
def test_gram_path_gradcheck_per_query_alpha_and_log_u():
    # S = 3 <= E = 4: the Gram-space forward and the C-inner-product backward, through both outputs
    q, k, v = _randn(2, 3, 4, seed=1), _randn(2, 3, 4, seed=2), _randn(2, 3, 2, seed=3)
    al = (torch.rand(2, 3, dtype=torch.float64, generator=_g(4)) * 2 + 0.2).requires_grad_()
    lu = _randn(2, 3, 3, seed=5)
    assert torch.autograd.gradcheck(
        lambda q, k, v, al, lu: fenchel_attention(q, k, v, alpha=al, log_u=lu, return_weights=True),
        (q, k, v, al, lu))


@pytest.mark.parametrize("S,E", [(3, 5), (6, 3)])
def test_gradcheck_scalar_alpha_shared_log_u_causal(S, E):
    # a 0-dim alpha takes the fused products (baddbmm's alpha / beta), in both parametrisations
    q, k, v = _randn(2, 4, E, seed=6), _randn(2, S, E, seed=7), _randn(2, S, 3, seed=8)
    lu = _randn(S, seed=9)
    al = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda q, k, v, al, lu: fenchel_attention(q, k, v, alpha=al, log_u=lu, is_causal=True), (q, k, v, al, lu))


@pytest.mark.parametrize("S,E", [(4, 7), (7, 3)])
def test_shared_solver_matches_general_newton_both_parametrisations(S, E):
    K = _randn(3, S, E, seed=10, grad=False)
    Z = _randn(3, 5, E, seed=11, grad=False) * 2
    lu = _randn(3, 1, S, seed=12, grad=False)
    al = torch.rand(3, 5, dtype=torch.float64, generator=_g(13)) * 2 + 0.1
    lam, p, h = solve_dual_shared(K, lu, Z, al, return_weights=True)
    ref = solve_dual_newton_torch(K.unsqueeze(-3), lu, Z, al)
    assert float((lam - ref).abs().max()) < 1e-11
    p_ref = torch.softmax(lu + lam @ K.transpose(-1, -2), -1)        # the weights at the returned lambda
    assert float((p - p_ref).abs().max()) < 1e-13 and float((h - p_ref @ K).abs().max()) < 1e-12


@pytest.mark.parametrize("S,E", [(24, 32), (40, 16)])
def test_backward_matches_dense_implicit_gradient(S, E):
    # enough queries for the conjugate-gradient solves to hand their last rows to a batch of their own;
    # the reference differentiates lambda* through fenchel_dual_lambda (a dense E x E solve per query)
    q, k, v = _randn(2, 2, 40, E, seed=14), _randn(2, 2, S, E, seed=15), _randn(2, 2, S, 5, seed=16)
    rows = {"n": 0}
    orig = fa._cg_gram_rows if S <= E else fa._cg_direct_rows

    def counted(*args, **kwargs):
        rows["n"] += 1
        return orig(*args, **kwargs)
    name = "_cg_gram_rows" if S <= E else "_cg_direct_rows"
    setattr(fa, name, counted)
    try:
        out = fenchel_attention(q, k, v, alpha=1.5)
        grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    finally:
        setattr(fa, name, orig)
    assert rows["n"] == 1                                             # the straggler batch was exercised
    T = (k / E ** 0.5).unsqueeze(-3)                                 # (..., 1, S, E): the general solver
    lam = fenchel_dual_lambda(T, torch.zeros(S, dtype=torch.float64), q, 1.5, tol=1e-13)
    p = torch.softmax((T @ lam.unsqueeze(-1)).squeeze(-1), -1)
    ref = (p @ v).square().sum()
    ref_grads = torch.autograd.grad(ref, (q, k, v))
    for a, b in zip(grads, ref_grads):
        assert float((a - b).abs().max()) < 1e-9 * (1 + float(b.abs().max()))


def test_backward_warns_when_its_solve_does_not_converge(monkeypatch):
    q, k, v = _randn(1, 6, 4, seed=17), _randn(1, 5, 4, seed=18), _randn(1, 5, 2, seed=19)
    monkeypatch.setattr(fa, "_BACKWARD_CG_ITERS", 1)
    out = fenchel_attention(q * 3, k * 3, v, alpha=2.0)
    with pytest.warns(RuntimeWarning, match="implicit-function solve did not reach"):
        out.square().sum().backward()
    monkeypatch.setattr(fa, "_BACKWARD_CG_ITERS", 100)
    q.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)              # converged: silent
        fenchel_attention(q * 3, k * 3, v, alpha=2.0).square().sum().backward()


# --------------------------------------------------------------------------- continuous attention
def test_shifted_relu_gradcheck_and_ties():
    f = _randn(3, 4, 9, seed=20)
    assert torch.autograd.gradcheck(lambda f: _ShiftedRelu.apply(f, 1.0)[0], (f,))
    assert torch.autograd.gradcheck(lambda f: _ShiftedRelu.apply(f, 0.4)[0], (f,))
    assert torch.autograd.gradgradcheck(lambda f: _ShiftedRelu.apply(f, 1.0)[0], (f,))
    x = torch.zeros(2, 5, dtype=torch.float64, requires_grad=True)   # every entry the max
    g = _randn(2, 5, seed=21, grad=False)
    a, = torch.autograd.grad(_ShiftedRelu.apply(x, 1.0)[0], x, g)
    b, = torch.autograd.grad(torch.relu(x - (x.max(-1, keepdim=True).values - 1.0)), x, g)
    assert torch.equal(a, b)                                         # the gradient goes where max() points


def test_sparsemax_moments_node_gradcheck_and_reference():
    # the alpha = 2 node: relu(x y - max + 1) [w Psi^T, w] with its own backward, against autograd
    x, y = _randn(2, 3, 4, seed=30), _randn(2, 4, 9, seed=31)
    W = _randn(9, 5, seed=32, grad=False)
    assert torch.autograd.gradcheck(lambda x, y: _SparsemaxMoments.apply(x, y, W)[0], (x, y))
    assert torch.autograd.gradgradcheck(lambda x, y: _SparsemaxMoments.apply(x, y, W)[0], (x, y))
    f = x @ y
    ref = torch.relu(f - (f.max(-1, keepdim=True).values - 1.0)) @ W
    g = _randn(2, 3, 5, seed=33, grad=False)
    mine = torch.autograd.grad(_SparsemaxMoments.apply(x, y, W)[0], (x, y), g)
    for a, b in zip(mine, torch.autograd.grad(ref, (x, y), g)):
        assert float((a - b).abs().max()) < 1e-13


def test_kernel_sparsemax_takes_torch_func_transforms():
    """Kernel sparsemax at alpha = 2 (ContinuousMultiheadAttention's default kind) under torch.func.grad and jacrev:
    its two hand-written backwards were autograd.Functions without setup_context, which torch.func refused; now
    the same gradients as autograd (with and without a mask for grad; jacrev, which vmaps, without)."""
    from torch.func import grad, jacrev

    q, k, v = _randn(2, 5, 8, seed=40, grad=False), _randn(2, 7, 8, seed=41, grad=False), _randn(2, 7, 4, seed=42, grad=False)
    mask = torch.rand(5, 7, generator=torch.Generator().manual_seed(43)) > 0.3
    for m in (None, mask):
        def loss(q_, m=m):
            return continuous_attention(q_, k, v, m, kind="kernel_sparsemax").pow(2).sum()
        qq = q.clone().requires_grad_()
        ref, = torch.autograd.grad(loss(qq), qq)
        assert float((grad(loss)(q) - ref).abs().max()) < 1e-12
    f = lambda q_: continuous_attention(q_, k, v, kind="kernel_sparsemax")          # noqa: E731
    assert float((jacrev(f)(q) - torch.autograd.functional.jacobian(f, q)).abs().max()) < 1e-12


@pytest.mark.parametrize("kind", ["cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax"])
def test_continuous_fast_path_equals_the_masked_path(kind):
    # no mask: the folded kernel and r (M V); an all-True mask: the general per-row ridge fit
    q, k, v = _randn(2, 3, 7, 5, seed=22), _randn(2, 3, 9, 5, seed=23), _randn(2, 3, 9, 4, seed=24)
    everything = torch.ones(7, 9, dtype=torch.bool)
    for alpha in ((1.5, 2.0) if kind == "kernel_sparsemax" else (2.0,)):
        kw = dict(kind=kind, grid_size=40, alpha=alpha)
        a = continuous_attention(q, k, v, **kw)
        b = continuous_attention(q, k, v, attn_mask=everything, **kw)
        assert float((a - b).abs().max().detach()) < 1e-12
        ga = torch.autograd.grad(a.square().sum(), (q, k, v))
        gb = torch.autograd.grad(b.square().sum(), (q, k, v))
        for x, y in zip(ga, gb):
            assert float((x - y).abs().max()) < 1e-11


def test_continuous_gradcheck_kernel_sparsemax_no_mask():
    q, k, v = _randn(1, 3, 4, seed=25), _randn(1, 6, 4, seed=26), _randn(1, 6, 2, seed=27)
    assert torch.autograd.gradcheck(
        lambda q, k, v: continuous_attention(q, k, v, kind="kernel_sparsemax", grid_size=30, bandwidth=0.2),
        (q, k, v))


def test_continuous_tables_are_constant_and_free_of_subnormals():
    tab = _sequence_tables(64, 256, 32, None, None, "gaussian", 0.05, 0.1, torch.float32, torch.device("cpu"))
    tiny = torch.finfo(torch.float32).tiny
    assert not bool(((tab.Kg != 0) & (tab.Kg.abs() < tiny)).any())
    before = [x.clone() for x in (tab.F, tab.M, tab.Kg, tab.WPsi)]
    q, k, v = (torch.randn(2, 5, 64, 8, generator=_g(28 + i)) for i in range(3))
    out1 = continuous_attention(q, k, v, kind="kernel_sparsemax", return_weights=True)
    out2 = continuous_attention(q, k, v, kind="kernel_sparsemax", return_weights=True)
    assert all(torch.equal(x, y) for x, y in zip(out1, out2))
    assert all(torch.equal(x, y) for x, y in zip(before, (tab.F, tab.M, tab.Kg, tab.WPsi)))
