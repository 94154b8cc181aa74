"""EFA: exact reference values of the synthetic movie-rating experiment (Sec 6.1, App. H.1).

The generating process is fully specified: 5 movies rated in a uniformly random order, ratings
independent N(mu_m(order), 1) given the order, with
  movie 2: mu = 1 if movie 1 was rated earlier, else 5;
  movie 4: mu = 1 if rated directly after movie 3; movie 3: mu = 1 if rated directly after movie 4;
  movie 5: mu = 5 if rated last; every other case mu = 3.
Population quantities are exact rationals: enumerate the 120 orders and use
E[y_a y_b | order] = mu_a mu_b + 1[a = b].  The FM with K = 32 >= 5 has an arbitrary 5 x 5 weight
matrix W = rho alpha^T, so its population optimum is a least-squares problem per target movie.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

from attnlab.catalog import claim, holds_if

N_MOVIES = 5
# spec section 3.1 ([ours], sympy)
BIDIR_FM_OPT = Fraction(593093675221711336, 227665572164344425)
REPORTED = {"bidirectional": 2.636035, "unidirectional": 4.518759}   # [repo] raw notebook outputs


def mu_of_order(order):
    """Means mu_m (m = 1..5) for a watch order (a permutation of 1..5)."""
    pos = {m: k for k, m in enumerate(order)}
    mu = {m: 3 for m in order}
    mu[2] = 1 if pos[1] < pos[2] else 5
    if pos[4] == pos[3] + 1:
        mu[4] = 1
    if pos[3] == pos[4] + 1:
        mu[3] = 1
    if pos[5] == N_MOVIES - 1:
        mu[5] = 5
    return mu


def _context_and_norm(order, k, direction, normalization):
    """Context movies of the target at 0-based position k, and the factor c."""
    I = len(order)
    if direction == "bidirectional":
        ctx = [order[j] for j in range(I) if j != k]
        return ctx, Fraction(1, I - 1)
    ctx = [order[j] for j in range(k)]
    if normalization == "paper":
        return ctx, Fraction(1, I - 1)
    return ctx, Fraction(1, max(k, 1))                 # code: mean over previous, 1/max(i-1, 1)


def _solve(G, b):
    """Exact max_w 2 b^T w - w^T G w = b^T G^+ b over the support of G (Gauss-Jordan in Q)."""
    keep = [i for i in range(len(b)) if any(G[i][j] != 0 for j in range(len(b)))]
    A = [[G[i][j] for j in keep] + [b[i]] for i in keep]
    n = len(keep)
    for c in range(n):
        p = next(r for r in range(c, n) if A[r][c] != 0)
        A[c], A[p] = A[p], A[c]
        for r in range(n):
            if r != c and A[r][c] != 0:
                f = A[r][c] / A[c][c]
                A[r] = [a - f * bb for a, bb in zip(A[r], A[c])]
    w = [A[r][n] / A[r][r] for r in range(n)]
    return sum(b[i] * wi for i, wi in zip(keep, w))


def fm_population_optimum(direction="bidirectional", normalization="code") -> Fraction:
    """Exact population MSE of the best FM (a rational), averaged over the 5 targets of a user."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    total = Fraction(0)
    for m in range(1, N_MOVIES + 1):
        others = [n for n in range(1, N_MOVIES + 1) if n != m]
        G = [[Fraction(0)] * len(others) for _ in others]
        b = [Fraction(0)] * len(others)
        Ey2 = Fraction(0)
        for order in orders:
            mu = mu_of_order(order)
            k = order.index(m)
            ctx, c = _context_and_norm(order, k, direction, normalization)
            Ey2 += mu[m] ** 2 + 1
            for a, na in enumerate(others):
                if na not in ctx:
                    continue
                b[a] += c * mu[m] * mu[na]
                for bb, nb in enumerate(others):
                    if nb in ctx:
                        G[a][bb] += c * c * (mu[na] * mu[nb] + (1 if na == nb else 0))
        n = len(orders)
        G = [[g / n for g in row] for row in G]
        b = [v / n for v in b]
        total += Ey2 / n - _solve(G, b)
    return total / N_MOVIES


def per_movie_constant_mse() -> Fraction:
    """Population MSE of the best per-movie constant (an intercept per movie)."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    total = Fraction(0)
    for m in range(1, N_MOVIES + 1):
        mus = [mu_of_order(o)[m] for o in orders]
        mean = Fraction(sum(mus), len(mus))
        total += 1 + sum((v - mean) ** 2 for v in mus) / len(mus)
    return total / N_MOVIES


def bayes_mse():
    """1 if mu of the target is determined by what the model conditions on (the order up to and
    including the target and its position, for the unidirectional model), else larger."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    seen = {}
    for order in orders:
        mu = mu_of_order(order)
        for k, m in enumerate(order):
            key = (order[:k + 1], k)               # x_{1:i} and i: the unidirectional information
            seen.setdefault(key, set()).add(mu[m])
    determined = all(len(v) == 1 for v in seen.values())
    # mu is a function of the order (bidirectional) and, as checked, of (x_{1:i}, i) (unidirectional);
    # the ratings are mu + N(0, 1) independently, so E[(y - E[y | info])^2] = 1 exactly
    return (Fraction(1) if determined else None), determined


@claim("efa.synthetic.exact-references",
       reference="Sec 6.1, Table 1 (left), App. H.1",
       statement="In the synthetic experiment the Bayes MSE is 1 in both settings, the best bidirectional "
                 "FM (1/(I-1)) has population MSE 593093675221711336/227665572164344425 = 2.605109..., "
                 "the best unidirectional FM has 4.518119... with the code's 1/max(i-1,1) and "
                 "5.298547... with the printed 1/(I-1), and a per-movie constant has 273/125.",
       method="sympy")
def _synthetic():
    bidir = fm_population_optimum("bidirectional")
    uni_code = fm_population_optimum("unidirectional", "code")
    uni_paper = fm_population_optimum("unidirectional", "paper")
    const = per_movie_constant_mse()
    bayes, determined = bayes_mse()
    ok = (bidir == BIDIR_FM_OPT
          and abs(float(uni_code) - 4.518119) < 5e-7 and abs(float(uni_paper) - 5.298547) < 5e-7
          and const == Fraction(273, 125) and bayes == 1 and determined)
    return holds_if(ok, measured=dict(bayes=str(bayes), fm_bidirectional=str(bidir),
                                      fm_bidirectional_float=float(bidir),
                                      fm_unidirectional_code=str(uni_code),
                                      fm_unidirectional_code_float=float(uni_code),
                                      fm_unidirectional_paper_float=float(uni_paper),
                                      per_movie_constant=str(const)),
                    tolerance="exact rationals (bidirectional, constant, Bayes); 6 decimals otherwise",
                    explanation="exact rational arithmetic (fractions): 120 orders, E[y_a y_b | order] = mu_a mu_b + 1[a=b], "
                                "exact least squares per target movie over the 4 other movies' weights",
                    reported=REPORTED,
                    note="the reported FM-uni 4.519 matches the code normalization (4.5181), not the "
                         "printed 1/(I-1) (5.2985)")
