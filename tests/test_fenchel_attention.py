"""Unit tests of attnlab.numerics.fenchel_attention (exact Fenchel-dual attention layer)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from attnlab.numerics.entropic_dual import solve_dual_newton_torch
from attnlab.numerics.fenchel_attention import (FenchelMultiheadAttention, fenchel_attention, fenchel_dual_lambda,
                                        solve_dual_shared)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_gradcheck_fenchel_dual_lambda_float64():
    g = _g(0)
    T = torch.randn(2, 1, 4, 2, dtype=torch.float64, generator=g, requires_grad=True)
    lu = torch.randn(2, 1, 4, dtype=torch.float64, generator=g, requires_grad=True)
    z = torch.randn(2, 3, 2, dtype=torch.float64, generator=g, requires_grad=True)
    al = (torch.rand(2, 3, dtype=torch.float64, generator=g) + 0.3).requires_grad_()
    assert torch.autograd.gradcheck(lambda T, lu, z, al: fenchel_dual_lambda(T, lu, z, al, tol=1e-14),
                                    (T, lu, z, al))


def test_gradcheck_fenchel_attention_float64_per_query_alpha():
    g = _g(1)
    q = torch.randn(2, 3, 3, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 4, 3, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 4, 2, dtype=torch.float64, generator=g, requires_grad=True)
    al = (torch.rand(2, 3, dtype=torch.float64, generator=g) * 2 + 0.2).requires_grad_()
    lu = torch.randn(2, 1, 4, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v, al, lu: fenchel_attention(q, k, v, alpha=al, log_u=lu),
                                    (q, k, v, al, lu))


@pytest.mark.parametrize("lu_shape", [(4,), (2, 3, 4)])
def test_gradcheck_log_u_shapes(lu_shape):
    g = _g(7)
    q = torch.randn(2, 3, 2, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 4, 2, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 4, 2, dtype=torch.float64, generator=g)
    lu = torch.randn(*lu_shape, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, lu: fenchel_attention(q, k, v, alpha=1.3, log_u=lu), (q, k, lu))


def test_shared_solver_matches_general_newton():
    g = _g(2)
    K = torch.randn(3, 7, 5, dtype=torch.float64, generator=g)
    Z = torch.randn(3, 4, 5, dtype=torch.float64, generator=g) * 2
    lu = torch.randn(3, 1, 7, dtype=torch.float64, generator=g)
    al = torch.rand(3, 4, dtype=torch.float64, generator=g) * 3 + 0.1
    a = solve_dual_shared(K, lu, Z, al)
    b = solve_dual_newton_torch(K.unsqueeze(-3), lu, Z, al)
    assert float((a - b).abs().max()) < 1e-11


def test_approximate_mode_is_sdpa_and_exact_differs():
    g = _g(3)
    q, k, v = (torch.randn(2, 3, 6, 8, generator=g) for _ in range(3))
    mask = torch.rand(6, 6, generator=g) > 0.3
    mask[:, 0] = True
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert float((fenchel_attention(q, k, v, attn_mask=mask, exact=False) - ref).abs().max()) < 1e-5
    out, p = fenchel_attention(q, k, v, attn_mask=mask, return_weights=True)
    assert float(p[..., ~mask].abs().max()) == 0.0                  # masked keys get exactly zero weight
    assert float((out - ref).abs().max()) > 1e-4                     # lambda* is not alpha z


def test_module_alpha_modes_and_backward():
    g = _g(4)
    x = torch.randn(2, 5, 8, generator=g)
    for mode in ("fixed", "head", "query"):
        m = FenchelMultiheadAttention(8, 2, batch_first=True, alpha=0.5, alpha_mode=mode)
        y = m(x, x, x, need_weights=False)[0]
        y.square().sum().backward()
        assert y.shape == x.shape and all(p.grad is not None for p in m.parameters())
    with pytest.raises(ValueError):
        FenchelMultiheadAttention(8, num_heads=3)
    with pytest.raises(ValueError):
        FenchelMultiheadAttention(8, alpha_mode="bogus")


def test_small_alpha_limit_approaches_softmax_attention():
    # lambda* - alpha z = O(alpha^2): the exact layer tends to (16) as alpha -> 0
    g = _g(5)
    q, k, v = (torch.randn(1, 6, 4, dtype=torch.float64, generator=g) for _ in range(3))
    errs = [float((fenchel_attention(q, k, v, alpha=a) - fenchel_attention(q, k, v, alpha=a, exact=False))
                  .abs().max()) for a in (0.1, 0.01)]
    assert errs[1] < errs[0] / 50


def test_gradcheck_output_and_weights_float64():
    # the layer is one autograd Function of (K, log u, z, alpha, V) with two outputs (p V, p): both paths
    g = _g(8)
    q = torch.randn(2, 3, 3, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 4, 3, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 4, 2, dtype=torch.float64, generator=g, requires_grad=True)
    al = (torch.rand(2, 3, dtype=torch.float64, generator=g) * 2 + 0.2).requires_grad_()
    lu = torch.randn(2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda q, k, v, al, lu: fenchel_attention(q, k, v, alpha=al, log_u=lu, return_weights=True),
        (q, k, v, al, lu))



@pytest.mark.parametrize("alpha", [1.0, 2.0, 4.0, 8.0, "per-query"])
def test_preconditioned_gram_phase_settles_at_the_dual_solution(alpha, monkeypatch):
    """S <= E with alpha max_i |t_i|^2 >= 1: the Gram phase runs its preconditioned step and settles there
    (the Newton solver is never called: it raises here) at the lambda* of the general Newton solver
    (float64, 1e-11 -- the same as the unpreconditioned path).  Here max_i |t_i|^2 = 1.48: alpha = 1 and 2 take
    the diagonal step, alpha = 4, 8 and the per-query alphas (up to 4.1) the diagonal-plus-rank-one step
    (alpha max_i |t_i|^2 >= 4).  At alpha = 4 the plain step did not settle and went to the Newton solver, and at
    alpha = 8 the diagonal step did."""
    import attnlab.numerics.fenchel_attention as fa

    def no_newton(*a, **k):
        raise AssertionError("the Gram phase did not settle")
    monkeypatch.setattr(fa, "_robust_solve", no_newton)
    g = _g(21)
    K = torch.randn(4, 16, 32, dtype=torch.float64, generator=g) / 32 ** 0.5       # |t_i|^2 about 1
    Z = torch.randn(4, 12, 32, dtype=torch.float64, generator=g)
    lu = torch.zeros(1, 16, dtype=torch.float64)
    al = torch.rand(4, 12, dtype=torch.float64, generator=g) * 4 + 0.1 if alpha == "per-query" else alpha
    assert float(torch.as_tensor(al).max()) * float((K * K).sum(-1).max()) >= 1       # the preconditioned step
    lam = solve_dual_shared(K, lu, Z, al)
    ref = solve_dual_newton_torch(K.unsqueeze(-3), lu, Z, al)
    assert float((lam - ref).abs().max()) < 1e-11


@pytest.mark.parametrize("per_query", [False, True])
def test_rank_one_step_inverts_its_matrix(per_query):
    """_rank_one_step (Sherman-Morrison) against the solve with M = I + alpha C_p diag(g) written out as a
    matrix per row (float64, 1e-12 relative), on rows from flat to nearly one-hot."""
    from attnlab.numerics.fenchel_attention import _rank_one_step

    g = _g(31)
    B, L, S = 3, 5, 7
    p = torch.softmax(torch.randn(B, L, S, dtype=torch.float64, generator=g)
                      * torch.tensor([0.0, 1.0, 3.0, 10.0, 40.0], dtype=torch.float64).view(1, L, 1), -1)
    gg = torch.rand(B, 1, S, dtype=torch.float64, generator=g) * 3
    a = (torch.rand(B, L, 1, dtype=torch.float64, generator=g) * 8 + 0.5 if per_query
         else torch.tensor(6.0, dtype=torch.float64))
    r = torch.randn(B, L, S, dtype=torch.float64, generator=g)
    C = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)                  # (B, L, S, S)
    M = torch.eye(S, dtype=torch.float64) + (a.unsqueeze(-1) if per_query else a) * C * gg.unsqueeze(-2)
    want = torch.linalg.solve(M, r.unsqueeze(-1)).squeeze(-1)
    got = _rank_one_step(r.clone(), p, gg, a, torch.ones((), dtype=torch.float64))
    assert float(((got - want).abs().amax(-1) / want.abs().amax(-1)).max()) < 1e-12


def test_shared_solver_returns_the_weights_at_its_lambda():
    g = _g(9)
    for dtype, tol in ((torch.float64, 1e-13), (torch.float32, 1e-5)):
        K = torch.randn(3, 7, 5, dtype=dtype, generator=g)
        Z = torch.randn(3, 4, 5, dtype=dtype, generator=g) * 2
        lu = torch.randn(3, 1, 7, dtype=dtype, generator=g)
        for al in (0.5, 30.0):                                      # fixed-point phase, Newton phase
            lam, p, h = solve_dual_shared(K, lu, Z, al, return_weights=True)
            p_ref = torch.softmax(lu + lam @ K.transpose(-1, -2), -1)
            assert float((p - p_ref).abs().max()) < tol and float((h - p_ref @ K).abs().max()) < 10 * tol


def test_shared_solver_reports_non_convergence():
    g = _g(10)
    K = torch.randn(2, 6, 4, dtype=torch.float64, generator=g)
    Z = torch.randn(2, 3, 4, dtype=torch.float64, generator=g) * 2
    lu = torch.zeros(1, 6, dtype=torch.float64)
    with pytest.warns(RuntimeWarning, match="not converged"):       # alpha = 20: past the fixed point
        solve_dual_shared(K, lu, Z, 20.0, max_iter=1, fixed_point_iters=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                              # converged: silent
        solve_dual_shared(K, lu, Z, 20.0)
