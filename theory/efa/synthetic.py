"""EFA: exact reference values of the synthetic movie-rating experiment (Sec 6.1, App. H.1).

The generating process is fully specified: 5 movies rated in a uniformly random order, ratings
independent N(mu_m(order), 1) given the order, with
  movie 2: mu = 1 if movie 1 was rated earlier, else 5;
  movie 4: mu = 1 if rated directly after movie 3; movie 3: mu = 1 if rated directly after movie 4;
  movie 5: mu = 5 if rated last; every other case mu = 3.
Population quantities are exact rationals (sympy): enumerate the 120 orders, take the means from App.
H.1's rules transcribed here (:func:`mu_of_order`) and use E[y_a y_b | order] = mu_a mu_b + 1[a = b].  The
experiment's generator (attnlab.experiments.efa.data.synthetic_means) is held against the same rules on
every order.  The FM with K = 32 >= 5 has an arbitrary 5 x 5 weight
matrix W = rho alpha^T, so its population optimum is a least-squares problem per target movie.
"""
from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from attnlab.catalog import claim, holds_if
from attnlab.experiments.efa import data as efa_data

N_MOVIES = 5
# App. H.1 population optimum ([ours], sympy; docs/instances.md)
BIDIR_FM_OPT = sp.Rational(593093675221711336, 227665572164344425)
REPORTED = {"bidirectional": 2.636035, "unidirectional": 4.518759}   # [repo] raw notebook outputs


def mu_of_order(order):
    """Means mu_m (m = 1..5) for a watch order (a permutation of 1..5), App. H.1's rules as printed:
    by default 3; (a) movie 2: 1 if rated after movie 1 (not necessarily directly), else 5; (b) movie 4:
    1 if rated directly after movie 3, and movie 3: 1 if rated directly after movie 4; (c) movie 5: 5 if
    rated last.  Exact integers."""
    pos = {m: k for k, m in enumerate(order)}
    mu = {m: sp.Integer(3) for m in order}
    mu[2] = sp.Integer(1) if pos[1] < pos[2] else sp.Integer(5)
    if pos[4] == pos[3] + 1:
        mu[4] = sp.Integer(1)
    if pos[3] == pos[4] + 1:
        mu[3] = sp.Integer(1)
    if pos[5] == len(order) - 1:
        mu[5] = sp.Integer(5)
    return mu


def generator_disagreements() -> int:
    """On how many of the 120 orders the experiment's generator gives other means than App. H.1's rules."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    gen = efa_data.synthetic_means(np.asarray(orders))
    return sum(any(float(mu_of_order(o)[m]) != float(v) for m, v in zip(o, row)) for o, row in zip(orders, gen))


def _context_and_norm(order, k, direction, normalization):
    """Context movies of the target at 0-based position k, and the factor c."""
    I = len(order)
    if direction == "bidirectional":
        ctx = [order[j] for j in range(I) if j != k]
        return ctx, sp.Rational(1, I - 1)
    ctx = [order[j] for j in range(k)]
    if normalization == "paper":
        return ctx, sp.Rational(1, I - 1)
    return ctx, sp.Rational(1, max(k, 1))                 # code: mean over previous, 1/max(i-1, 1)


def _solve(G, b):
    """Exact argmax_w 2 b^T w - w^T G w on the support of G (sympy LU in Q): (max value, w)."""
    keep = [i for i in range(len(b)) if any(G[i][j] != 0 for j in range(len(b)))]
    Gs = sp.Matrix([[G[i][j] for j in keep] for i in keep])
    bs = sp.Matrix([b[i] for i in keep])
    ws = Gs.LUsolve(bs)
    w = [sp.Integer(0)] * len(b)
    for i, v in zip(keep, ws):
        w[i] = v
    return (bs.T * ws)[0], w


def fm_optimum(direction="bidirectional", normalization="code") -> dict:
    """The best FM in population (exact, sympy): its MSE, and the variance of one target's squared
    residual (r | order ~ N(mu_m - c sum_a w_a mu_a, 1 + c^2 sum_a w_a^2), so E r^4 = m^4 + 6 m^2 s^2
    + 3 s^4), averaged over the 5 target movies; ``mse_check`` is the MSE recomputed from the weights."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    n = len(orders)
    total, Er2, Er4 = sp.Integer(0), sp.Integer(0), sp.Integer(0)
    for m in range(1, N_MOVIES + 1):
        others = [o for o in range(1, N_MOVIES + 1) if o != m]
        G = [[sp.Integer(0)] * len(others) for _ in others]
        b = [sp.Integer(0)] * len(others)
        Ey2 = sp.Integer(0)
        for order in orders:
            mu = mu_of_order(order)
            ctx, c = _context_and_norm(order, order.index(m), direction, normalization)
            Ey2 += mu[m] ** 2 + 1
            for a, na in enumerate(others):
                if na not in ctx:
                    continue
                b[a] += c * mu[m] * mu[na]
                for bb, nb in enumerate(others):
                    if nb in ctx:
                        G[a][bb] += c * c * (mu[na] * mu[nb] + (1 if na == nb else 0))
        value, w = _solve([[g / n for g in row] for row in G], [v / n for v in b])
        total += Ey2 / n - value
        for order in orders:
            mu = mu_of_order(order)
            ctx, c = _context_and_norm(order, order.index(m), direction, normalization)
            mean = mu[m] - c * sum(w[a] * mu[na] for a, na in enumerate(others) if na in ctx)
            var = 1 + c * c * sum(w[a] ** 2 for a, na in enumerate(others) if na in ctx)
            Er2 += (mean ** 2 + var) / n
            Er4 += (mean ** 4 + 6 * mean ** 2 * var + 3 * var ** 2) / n
    mse = total / N_MOVIES
    return dict(mse=mse, mse_check=Er2 / N_MOVIES, var_sq_residual=Er4 / N_MOVIES - (Er2 / N_MOVIES) ** 2)


def fm_population_optimum(direction="bidirectional", normalization="code") -> sp.Rational:
    """Exact population MSE of the best FM (a rational), averaged over the 5 targets of a user."""
    return fm_optimum(direction, normalization)["mse"]


def per_movie_constant_mse() -> sp.Rational:
    """Population MSE of the best per-movie constant (an intercept per movie)."""
    orders = list(itertools.permutations(range(1, N_MOVIES + 1)))
    total = sp.Integer(0)
    for m in range(1, N_MOVIES + 1):
        mus = [mu_of_order(o)[m] for o in orders]
        mean = sp.Rational(sum(mus), len(mus))
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
    return (sp.Integer(1) if determined else None), determined


@claim("efa.synthetic.exact-references",
       reference="Sec 6.1, Table 1 (left), App. H.1",
       statement="In the synthetic experiment the Bayes MSE is 1 in both settings, the best bidirectional "
                 "FM (1/(I-1)) has population MSE 593093675221711336/227665572164344425 = 2.605109..., "
                 "the best unidirectional FM has 4.518119... with the code's 1/max(i-1,1) and "
                 "5.298547... with the printed 1/(I-1), and a per-movie constant has 273/125.",
       method="sympy",
       algebra="Exact rational arithmetic on App. H.1's data model as printed (the means' rules transcribed); "
               "no library code (the experiment's data generator is compared with the same rules)")
def _synthetic():
    bidir = fm_population_optimum("bidirectional")
    uni_code = fm_population_optimum("unidirectional", "code")
    uni_paper = fm_population_optimum("unidirectional", "paper")
    const = per_movie_constant_mse()
    bayes, determined = bayes_mse()
    disagree = generator_disagreements()
    ok = (disagree == 0 and bidir == BIDIR_FM_OPT
          and abs(float(uni_code) - 4.518119) < 5e-7 and abs(float(uni_paper) - 5.298547) < 5e-7
          and const == sp.Rational(273, 125) and bayes == 1 and determined)
    return holds_if(ok, measured=dict(bayes=str(bayes), fm_bidirectional=str(bidir),
                                      fm_bidirectional_float=float(bidir),
                                      fm_unidirectional_code=str(uni_code),
                                      fm_unidirectional_code_float=float(uni_code),
                                      fm_unidirectional_paper_float=float(uni_paper),
                                      per_movie_constant=str(const),
                                      generator_disagreements=disagree),
                    tolerance="exact rationals (bidirectional, constant, Bayes); 6 decimals otherwise; the "
                              "experiment's generator equal to App. H.1's rules on all 120 orders",
                    explanation="exact rational arithmetic (sympy) on App. H.1's data model as printed: 120 orders, "
                                "E[y_a y_b | order] = mu_a mu_b + 1[a=b], exact least squares per target movie over "
                                "the 4 other movies' weights; the experiment's generator gives the same means on "
                                "every order",
                    reported=REPORTED)


TABLE1_FM_UNIDIRECTIONAL = 4.519      # Table 1 (left), test MSE of the unidirectional FM
N_TEST_USERS = 2500                   # App. H.1 / the authors' split: 7,500 train, 2,500 test users
SE_MULTIPLE = 5


def check_fm_normalization(reported=TABLE1_FM_UNIDIRECTIONAL) -> "Evidence":
    from attnlab.catalog import erratum_if

    per = {}
    for norm in ("paper", "code"):
        r = fm_optimum("unidirectional", norm)
        se = float(sp.sqrt(r["var_sq_residual"] / N_TEST_USERS))
        per[norm] = dict(population_optimum=float(r["mse"]), se_test_mse=se,
                         gap_reported_minus_optimum=reported - float(r["mse"]),
                         consistent=bool(r["mse"] == r["mse_check"]))
    # a fitted FM's test MSE can undercut the population optimum only by sampling error
    reachable = {k: v["gap_reported_minus_optimum"] >= -SE_MULTIPLE * v["se_test_mse"] for k, v in per.items()}
    consistent = all(v["consistent"] for v in per.values())
    return erratum_if(reachable["paper"], reachable["code"] and consistent,
                      measured={k: dict(v, reachable=reachable[k]) for k, v in per.items()},
                      tolerance=f"reachable iff reported >= optimum - {SE_MULTIPLE} SE (SE of a "
                                f"{N_TEST_USERS}-user test MSE, from the exact variance of a squared residual)",
                      explanation="sympy: exact population optimum of the unidirectional FM with the printed "
                                  "1/(I-1) and with the code's 1/max(i-1, 1), and the exact variance of one "
                                  "target's squared residual under the optimum (SE bound: per-user means of "
                                  "correlated targets vary at most as much as one target)")


@claim("efa.synthetic.fm-unidirectional-normalization",
       reference="Table 1 (left), App. H.1 (FM), Sec 6.1",
       statement="The unidirectional FM of App. H.1, y_i | y_<i ~ N((1/(I-1)) rho_{x_i}^T sum_{j<i} "
                 "alpha_{x_j} y_j, sigma^2), reaches the test MSE 4.519 of Table 1.",
       method="sympy", expected="erratum",
       algebra="Exact rational arithmetic on App. H.1's data model and FMs as printed and Table 1's printed "
               "4.519; no library code",
       corrected="The best FM with the printed 1/(I-1) has population MSE 5.2985, 0.78 above 4.519 (more "
                 "than 5 standard errors of a 2,500-user test MSE); 4.519 is what the FM with the mean over "
                 "the previous movies, 1/max(i-1, 1) (the authors' code), reaches: its population optimum "
                 "is 4.5181.")
def _fm_normalization():
    return check_fm_normalization()
