"""Boundary validation of the numerics (outside review): each argument outside its domain is refused in one line
that names it, where a silently wrong number (or a foreign error naming no argument) came back before."""
import math

import numpy as np
import pytest
import torch

from attnlab.numerics import deformed_exp as de
from attnlab.numerics import entropic_ot as eo
from attnlab.numerics import expfam
from attnlab.numerics import quadrature as q
from attnlab.numerics import tsallis as ts
from attnlab.numerics.entropic_dual import SolverError

D64 = torch.float64


def _refused(fn, *fragments, error=ValueError):
    with pytest.raises(error) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for frag in fragments:
        assert frag in msg, msg
    return msg


# ---------------------------------------------------------------- 1. exp_beta's beta
@pytest.mark.parametrize("beta", [math.nan, -math.inf, math.inf])
def test_exp_beta_refuses_a_beta_that_is_not_finite(beta):
    """beta = NaN gave [0, 0, 0] and beta = -inf gave [1, 1, 1]."""
    x = torch.tensor([-1.0, 0.0, 1.0], dtype=D64)
    _refused(lambda: de.exp_beta(x, beta), "beta must be a finite number <= 1")
    _refused(lambda: de.mp_exp_beta(0.5, beta), "beta must be a finite number")
    _refused(lambda: de.log_beta(torch.tensor([0.5, 2.0], dtype=D64), beta), "beta must be a finite number")
    _refused(lambda: de.mp_log_beta(0.5, beta), "beta must be a finite number")
    _refused(lambda: de.exp_rho_beta(x, 2.0, beta), "beta must be a finite number < 1")


def test_exp_beta_domain_edges_unchanged():
    x = torch.tensor([-1.0, 0.0, 1.0], dtype=D64)
    assert torch.equal(de.exp_beta(x, 1.0), torch.exp(x))
    assert torch.equal(de.exp_beta(x, 0.0), torch.relu(1 + x))
    assert torch.allclose(de.exp_beta(x, -1.0), torch.relu(1 + 2 * x).sqrt(), rtol=0, atol=1e-15)
    _refused(lambda: de.exp_beta(x, 1.5), "beta must be <= 1")
    _refused(lambda: de.exp_beta(x, "0.5"), "beta must be a finite number")


# ---------------------------------------------------------------- 2. alpha_division's x and y
@pytest.mark.parametrize("alpha", [1.5, 1 + 1e-9, 2.0])
@pytest.mark.parametrize("x,y,name", [(-1.0, 2.0, "x"), (0.0, 2.0, "x"), (math.nan, 2.0, "x"),
                                      (2.0, -1.0, "y"), (2.0, 0.0, "y")])
def test_alpha_division_refuses_x_and_y_outside_the_domain_of_log_alpha(x, y, name, alpha):
    """alpha_division(-1, 2, 1.5) was NaN and alpha_division(-1, 2, 1 + 1e-9) +inf: the two branches disagreed."""
    _refused(lambda: de.alpha_division(x, y, alpha), f"{name} must be > 0")
    if not math.isnan(x):
        _refused(lambda: de.mp_alpha_division(x, y, alpha), "x and y must be > 0")


def test_alpha_division_on_its_domain_unchanged():
    x, y = torch.tensor([2.3, 0.5], dtype=D64), torch.tensor([0.7, 0.7], dtype=D64)
    for a in (1.5, 2.0):
        d = de.alpha_division(x, y, a)
        assert torch.allclose(de.log_alpha(x, a) - de.log_alpha(y, a), de.log_alpha(d, a), rtol=0, atol=1e-13)
    assert de.alpha_division(torch.tensor(3.0, dtype=D64), torch.tensor(0.5, dtype=D64), 2.0).item() == math.inf


# ---------------------------------------------------------------- 3. the families' log_prob validates y
@pytest.mark.parametrize("fam,out,y,frag", [
    (expfam.PoissonV2(), torch.zeros(2, dtype=D64), torch.tensor([0.5, -1.0], dtype=D64), "y must hold integers >= 0"),
    (expfam.PoissonV2(), torch.zeros(1, dtype=D64), torch.tensor([-1.0], dtype=D64), "y must hold integers >= 0"),
    (expfam.PoissonV1(), torch.zeros(1, dtype=D64), torch.tensor([0.5], dtype=D64), "y must hold integers >= 1"),
    (expfam.PoissonV1(), torch.zeros(1, dtype=D64), torch.tensor([0.0], dtype=D64), "y must hold integers >= 1"),
    (expfam.Bernoulli(), torch.zeros(1, dtype=D64), torch.tensor([2.0], dtype=D64), "y must hold 0 or 1"),
    (expfam.Bernoulli(), torch.zeros(1, dtype=D64), 0.5, "y must hold 0 or 1"),
    (expfam.Categorical(3), torch.zeros(1, 3, dtype=D64), torch.tensor([3]), "y must hold integers in [0, 2]"),
    (expfam.Categorical(3), torch.zeros(1, 3, dtype=D64), torch.tensor([-1]), "y must hold integers in [0, 2]"),
    (expfam.Gaussian(1.0), torch.zeros(1, dtype=D64), torch.tensor([math.nan], dtype=D64), "y must be finite"),
])
def test_log_prob_refuses_y_outside_the_support(fam, out, y, frag):
    """Poisson v2 at y = 0.5 gave -1.53 and at -1 -inf, v1 at y = 0.5 log p = +0.23 (p > 1), Bernoulli at y = 2 a
    number, the categorical at y = 3 or -1 torch's 'index 3 is out of bounds' (naming no y)."""
    _refused(lambda: fam.log_prob(out, y), frag)
    _refused(lambda: fam.nll(out, y), frag)


def test_log_prob_in_the_support_unchanged():
    """The supports' points, as tensors (float and integer), numbers, lists and arrays, give the closed forms."""
    z = torch.tensor([0.3], dtype=D64)
    eta2 = math.log1p(math.exp(0.3))
    cases = ((expfam.PoissonV1(), 2, 0.3 - math.exp(0.3)), (expfam.PoissonV2(), 2, 2 * eta2 - math.exp(eta2) - math.log(2)),
             (expfam.PoissonV2(), 0, -math.exp(eta2)), (expfam.Bernoulli(), 1, 0.3 - math.log1p(math.exp(0.3))),
             (expfam.Gaussian(1.0), 1.75, -(1.75 - 0.3) ** 2 / 2 - 0.5 * math.log(2 * math.pi)))
    for fam, y, want in cases:
        for conv in (float, lambda v: [v], lambda v: np.array([v]), lambda v: torch.tensor([v], dtype=D64),
                     lambda v: torch.tensor([int(v)]) if float(v).is_integer() else torch.tensor([v], dtype=D64)):
            assert abs(float(fam.log_prob(z, conv(y))) - want) < 1e-14
    cat = expfam.Categorical(3)
    logits = torch.tensor([[0.1, -0.4, 1.2], [0.0, 0.0, 0.0]], dtype=D64)
    got = cat.log_prob(logits, torch.tensor([2, 0]))
    assert torch.allclose(got, torch.log_softmax(logits, -1)[[0, 1], [2, 0]], rtol=0, atol=1e-15)


# ---------------------------------------------------------------- 4. entropic OT: advice and exact_ot's marginals
def _ot_instance(seed=0, N=6):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, 2))
    M = ((A[:, None] - A[None]) ** 2).sum(-1)
    return rng.dirichlet(np.ones(N)), rng.dirichlet(np.ones(N)), M


def test_sinkhorn_failure_advice_is_true():
    """At gamma = 0.02 semi-dual Newton stalls (the Hessian near-singular) while Sinkhorn converges: Sinkhorn's
    failure said 'use entropic_ot_newton', which fails there.  Now it advises more iterations, a larger gamma or
    exact_ot, and more iterations do succeed."""
    p, u, M = _ot_instance()
    with pytest.raises(SolverError) as exc:
        eo.entropic_ot_newton(p, u, M, 0.02)
    assert "sinkhorn" in str(exc.value)
    msg = _refused(lambda: eo.sinkhorn(p, u, M, 0.02, max_iter=10), "max_iter", "larger gamma", "exact_ot",
                   error=SolverError)
    assert "entropic_ot_newton" not in msg
    W, X = eo.sinkhorn(p, u, M, 0.02)                          # the advice: iterations enough, it converges
    assert np.abs(X.sum(1) - p).max() < 1e-12 and np.abs(X.sum(0) - u).max() < 1e-12
    W0 = eo.exact_ot(p, u, M)                                  # and the gamma -> 0 bound the message states
    assert -1e-10 <= W0 - W <= 0.02 * math.log(36) + 1e-10


@pytest.mark.parametrize("which", ["p", "u"])
@pytest.mark.parametrize("bad,frag", [("twice", "must be a probability vector summing to 1"),
                                      ("negative", "must be a probability vector (entries >= 0)"),
                                      ("nan", "must be finite")])
def test_exact_ot_validates_its_marginals(which, bad, frag):
    """An unbalanced or negative p reached linprog and came back as 'linprog status 2: infeasible', naming no p."""
    p, u, M = _ot_instance()
    v = {"p": p, "u": u}[which].copy()
    if bad == "twice":
        v = 2 * v
    elif bad == "negative":
        v[0], v[1] = v[0] + v[1] + 0.1, -0.1
    else:
        v[0] = math.nan
    args = (v, u, M) if which == "p" else (p, v, M)
    _refused(lambda: eo.exact_ot(*args), f"{which} {frag}")


def test_exact_ot_validates_its_cost_and_is_unchanged_on_valid_instances():
    p, u, M = _ot_instance()
    _refused(lambda: eo.exact_ot(p, u, M[:, :-1]), "M must have shape (len(p), len(u)) = (6, 6)")
    _refused(lambda: eo.exact_ot(p, u, np.where(np.eye(6) > 0, np.inf, M)), "M must be finite")
    assert abs(eo.exact_ot(p, p, M)) < 1e-12                   # p to itself at zero diagonal cost: 0
    assert abs(eo.exact_ot([1.0, 0.0], [0.0, 1.0], [[0.0, 3.0], [5.0, 0.0]]) - 3.0) < 1e-12


# ---------------------------------------------------------------- 5. quadrature
@pytest.mark.parametrize("breakpoints", [[0.0, math.nan, 1.0], [0.0, math.inf], [-math.inf, 0.0]])
def test_piecewise_gauss_legendre_refuses_breakpoints_that_are_not_finite(breakpoints):
    """NaN gave 'cannot convert float NaN to integer', inf an OverflowError."""
    _refused(lambda: q.piecewise_gauss_legendre(np.cos, breakpoints), "breakpoints must be finite")


@pytest.mark.parametrize("max_piece", [0, 0.0, -1, math.nan, math.inf])
def test_piecewise_gauss_legendre_refuses_max_piece_not_positive(max_piece):
    """max_piece = 0 raised ZeroDivisionError; -1 was taken as one piece per interval, silently."""
    _refused(lambda: q.piecewise_gauss_legendre(np.cos, [0.0, 1.0], max_piece=max_piece),
             "max_piece must be a finite number > 0")


@pytest.mark.parametrize("n", [2.5, math.nan, math.inf, "8"])
def test_piecewise_gauss_legendre_refuses_n_not_an_integer(n):
    """n = 2.5 was truncated to 2 silently."""
    _refused(lambda: q.piecewise_gauss_legendre(np.cos, [0.0, 1.0], n=n), "n (nodes per piece)", "integer >= 2")


def test_piecewise_gauss_legendre_on_valid_arguments_unchanged():
    assert abs(q.piecewise_gauss_legendre(np.cos, [0.0, 1.0]) - math.sin(1.0)) < 1e-15
    assert abs(q.piecewise_gauss_legendre(np.cos, (v for v in (1.0, 0.0)), n=8.0, max_piece=2) - math.sin(1.0)) < 1e-15
    assert abs(q.piecewise_gauss_legendre(lambda x: x ** 3 - 2 * x ** 2 + 1, [-1.0, 2.0], 2) - 0.75) < 1e-14
    _refused(lambda: q.piecewise_gauss_legendre(np.cos, [0.0, 1.0], n=1), "n (nodes per piece) must be >= 2")


def test_real_line_grid_refuses_too_many_nodes_and_a_center_that_is_not_finite():
    """h = 1e-300 gave 'OverflowError: int too big to convert'; center = NaN an all-NaN grid; a centre so large
    that the nodes round together a grid of repeated nodes."""
    _refused(lambda: q.real_line_grid(1e-300, 1.0), "h=1e-300 is too small for half_width=1.0")
    _refused(lambda: q.real_line_grid(5e-324, 1e10), "is too small for half_width")
    for c in (math.nan, math.inf, -math.inf):
        _refused(lambda c=c: q.real_line_grid(0.5, 1.0, center=c), "center must be a finite number")
    _refused(lambda: q.real_line_grid(1e-3, 1.0, center=1e17), "h=0.001", "center=1e+17", "round together")
    _refused(lambda: q.real_line_trapezoid(torch.exp, 0.5, 1.0, center=math.nan), "center must be a finite number")
    t = q.real_line_grid(0.25, 1.0, center=-0.5, shift=0.5)
    assert torch.equal(t, torch.tensor([-1.375, -1.125, -0.875, -0.625, -0.375, -0.125, 0.125, 0.375], dtype=D64))


@pytest.mark.parametrize("dim", [5, 1, -2, 0.0, True, "0"])
def test_trapezoid_refuses_a_dim_outside_y(dim):
    """dim = 5 on a 1-D y integrated along dim 0 (5 % 1): torch would raise."""
    y, t = torch.ones(3, dtype=D64), torch.tensor([0.0, 1.0, 2.0], dtype=D64)
    _refused(lambda: q.trapezoid(y, t, dim=dim), "dim must be an integer in [-1, 0]")


def test_trapezoid_dims_in_range_unchanged_and_0d_refused():
    t = torch.tensor([0.0, 1.0, 3.0], dtype=D64)
    y = torch.arange(6, dtype=D64).reshape(2, 3)
    assert torch.allclose(q.trapezoid(y, t, dim=-1), torch.trapezoid(y, t, dim=-1), rtol=0, atol=1e-15)
    assert torch.allclose(q.trapezoid(y, t, dim=1), torch.trapezoid(y, t, dim=1), rtol=0, atol=1e-15)
    assert torch.allclose(q.trapezoid(y.T, t, dim=-2), torch.trapezoid(y.T, t, dim=0), rtol=0, atol=1e-15)
    assert torch.allclose(q.trapezoid(y.T, t, dim=np.int64(0)), torch.trapezoid(y.T, t, dim=0), rtol=0, atol=1e-15)
    _refused(lambda: q.trapezoid(torch.tensor(1.0, dtype=D64), t, dim=0), "y must have at least one dimension")


@pytest.mark.parametrize("G", [math.nan, math.inf])
def test_uniform_grid_refuses_a_grid_size_that_is_not_finite(G):
    """int() of NaN or inf raised its own error, naming no G."""
    _refused(lambda: q.uniform_grid(0.0, 1.0, G), "G (number of grid points)")


# ---------------------------------------------------------------- 6. tsallis
def test_tsallis_takes_array_likes_as_tensors():
    """tsallis_negentropy of a numpy array raised torch's long TypeError of any()."""
    t = np.linspace(0.0, 1.0, 5)
    p = np.array([0.5, 1.0, 1.5, 1.0, 0.5])
    want = ts.tsallis_negentropy(torch.as_tensor(p), torch.as_tensor(t), 1.5)
    for conv in (np.asarray, list):
        assert torch.equal(ts.tsallis_negentropy(conv(p), t, 1.5), want)
        assert torch.equal(ts.tsallis_gradient(conv(p), 1.5), torch.as_tensor(p) ** 0.5 / 0.5)
    assert abs(float(ts.tsallis_bregman(p, p, t, 1.5))) < 1e-15


@pytest.mark.parametrize("bad", [-0.5, -1e-12, math.nan])
def test_tsallis_gradient_refuses_what_the_negentropy_refuses(bad):
    """tsallis_gradient at p < 0 gave NaN where tsallis_negentropy refused the same p."""
    t = torch.linspace(0.0, 1.0, 3, dtype=D64)
    p = torch.tensor([bad, 1.0, 1.0], dtype=D64)
    for fn in (lambda: ts.tsallis_gradient(p, 1.5), lambda: ts.tsallis_negentropy(p, t, 1.5),
               lambda: ts.tsallis_bregman(p, torch.ones(3, dtype=D64), t, 1.5)):
        _refused(fn, "p (density on the grid) must be >= 0")
    _refused(lambda: ts.tsallis_bregman(torch.ones(3, dtype=D64), p, t, 1.5), "q (density on the grid) must be >= 0")
