"""EFA: what Table 2 (MovieLens ratings, Sec 6.2.2) reports, checked on the printed table and the data.

- The "test cross-entropy" columns are Poisson negative log-likelihoods without the log-factorial term
  (the losses the authors' code minimised, :meth:`PoissonV1.code_loss`, :meth:`PoissonV2.code_loss`).
  The best constant predictor under these losses, computed from the ratings the experiment reads,
  sets the scale the table's values sit just below.
- "In all settings, the predicted values for EFA are closer to (1, 2, 3) than those for FM" (Sec 6.2.2),
  evaluated on the printed mean predicted ratings.
"""
from __future__ import annotations

import numpy as np
import torch

from attnlab.catalog import claim, holds_if
from attnlab.numerics import expfam

# Table 2 as printed: (test cross-entropy FM, EFA), (mean predicted ratings FM, EFA) for actual 1, 2, 3
TABLE2 = {
    "v1 bidirectional": ((0.971, 0.945), ((2.06, 2.10, 2.21), (1.93, 2.06, 2.30))),
    "v1 unidirectional": ((0.972, 0.953), ((2.06, 2.09, 2.20), (1.98, 2.09, 2.29))),
    "v2 bidirectional": ((0.507, 0.494), ((2.06, 2.10, 2.21), (1.94, 2.08, 2.31))),
    "v2 unidirectional": ((0.508, 0.499), ((2.06, 2.10, 2.20), (1.98, 2.09, 2.29))),
}
STATED_CONSTANT = {"v1": 0.993, "v2": 0.527}     # the claim's numbers, 3 decimals


def movielens_ratings() -> torch.Tensor:
    """The ratings (1, 2, 3) of the Sec 6.2.2 data set, as the experiment preprocesses them."""
    from attnlab.catalog import Skip
    from attnlab.experiments.data import DataError
    from attnlab.experiments.efa import data as D

    try:
        frame = D.movielens_frame()
    except DataError as exc:
        raise Skip(str(exc)) from None
    seqs, _ = D.movielens_preprocess(frame, "ratings")
    return torch.as_tensor(seqs.values[seqs.lengths[:, None] > np.arange(seqs.values.shape[1])])


def best_constant(y: torch.Tensor) -> dict:
    """The best constant raw output z for each loss: v1 e^z = mean(y) - 1, v2 1 + e^z = mean(y); the
    library's code loss there, the closed form mu - mu log mu, and the smallest loss on a z grid."""
    y = y.double()
    m = float(y.mean())
    out, grid = {}, torch.linspace(-4, 4, 1601, dtype=torch.float64)
    for v, fam, mu in (("v1", expfam.PoissonV1(), m - 1), ("v2", expfam.PoissonV2(), m)):
        z = torch.tensor(np.log(mu - 1 if v == "v2" else mu), dtype=torch.float64)
        at = float(fam.code_loss(z.expand_as(y), y).mean())
        zs = torch.cat([grid, z + torch.tensor([-1e-4, 1e-4], dtype=torch.float64)])
        # every constant of the grid at once (rows of 128 constants x all ratings): the library's loss, averaged
        # over the ratings per constant
        on_grid = float(torch.cat([fam.code_loss(g[:, None], y[None, :]).mean(1) for g in zs.split(128)]).min())
        full = float(-fam.log_prob(z.expand_as(y), y).mean())
        out[v] = dict(z=float(z), loss=at, closed_form=mu - mu * np.log(mu), grid_min=on_grid, full_nll=full)
    return dict(mean_rating=m, n=len(y), **out)


def full_nll_floor(y: torch.Tensor, version: str) -> float:
    """The smallest mean full Poisson NLL (log-factorial included) that any predictor can reach on the ratings y:
    each rating's own best rate (lambda = y - 1 for v1, y for v2: k - k log k + log k!, 0 at k = 0), averaged.
    A table entry below it cannot be a full NLL."""
    import math

    k = y.double().numpy() - (1 if version == "v1" else 0)
    per = np.array([0.0 if v == 0 else v - v * math.log(v) + math.lgamma(v + 1) for v in range(4)])
    return float(per[k.astype(int)].mean())


def check_constant_predictor(y=None, table=TABLE2) -> "Evidence":
    ratings = movielens_ratings() if y is None else y
    r = best_constant(ratings)
    per = {}
    for v in ("v1", "v2"):
        c = r[v]
        entries = [ce for k, (ce, _) in table.items() if k.startswith(v) for ce in ce]
        floor = full_nll_floor(ratings, v)
        per[v] = dict(constant=c["loss"], closed_form_dev=abs(c["loss"] - c["closed_form"]),
                      grid_min_minus_constant=c["grid_min"] - c["loss"], stated=STATED_CONSTANT[v],
                      table_entries=entries, below=all(e < c["loss"] for e in entries),
                      full_nll_of_constant=c["full_nll"], full_nll_floor=floor,
                      entries_below_full_nll_floor=all(e < floor for e in entries))
    # the first sentence: no predictor reaches a mean full v2 NLL below its floor (1.30 here), and every v2 entry
    # lies below it, so they leave the log-factorial out (v1's floor, 0.88, is below its entries: it cannot tell)
    ok = all(p["closed_form_dev"] < 1e-12 and p["grid_min_minus_constant"] > -1e-12 and p["below"]
             and abs(p["constant"] - p["stated"]) < 5e-4 for p in per.values()) \
        and per["v2"]["entries_below_full_nll_floor"] and per["v2"]["full_nll_of_constant"] >= per["v2"]["full_nll_floor"]
    return holds_if(ok, measured={v: p["constant"] for v, p in per.items()},
                    tolerance="library loss vs closed form 1e-12; no grid point below it; stated values to "
                              "3 decimals; every Table 2 entry strictly below; every v2 entry below the floor of "
                              "the full v2 NLL (log-factorial included) that no predictor can beat",
                    explanation=f"{r['n']} ratings (mean {r['mean_rating']:.4f}) of the Sec 6.2.2 data set as "
                                "the experiment preprocesses it; the code losses of numerics.expfam at the best "
                                "constant, checked against mu - mu log mu, a grid of 1601 constants in [-4, 4] and z* +- 1e-4; "
                                "the full NLL's floor: each rating at its own best rate (k - k log k + log k!), averaged",
                    per_version=per, mean_rating=r["mean_rating"])


@claim("efa.table2.constant-predictor",
       reference="Table 2, Sec 6.2.2, Sec 3.3",
       statement="Table 2's test cross-entropies are Poisson negative log-likelihoods without the "
                 "log-factorial term (v1: y - 1 ~ Poisson(e^z); v2: y ~ Poisson(1 + e^z)). Under these "
                 "losses the best constant predictor of the MovieLens ratings (mean 2.120) scores "
                 "mu - mu log mu = 0.993 (v1, mu = mean - 1) and 0.527 (v2, mu = mean), and every FM and "
                 "EFA entry of Table 2 lies below it (v1 0.945-0.972, v2 0.494-0.508).",
       method="float64",
       vouches_for=("numerics.expfam.PoissonV1.code_loss", "numerics.expfam.PoissonV2.code_loss"))
def _constant():
    return check_constant_predictor()


def check_closer(table=TABLE2) -> "Evidence":
    target = np.array([1.0, 2.0, 3.0])
    per = {}
    for k, (_, (fm, efa)) in table.items():
        fm, efa = np.array(fm), np.array(efa)
        per[k] = dict(dist_fm=float(np.linalg.norm(fm - target)), dist_efa=float(np.linalg.norm(efa - target)),
                      componentwise_not_farther=bool(np.all(np.abs(efa - target) <= np.abs(fm - target))),
                      componentwise_strictly_closer=bool(np.all(np.abs(efa - target) < np.abs(fm - target))))
    ok = all(p["dist_efa"] < p["dist_fm"] for p in per.values())
    return holds_if(ok, measured={k: round(p["dist_fm"] - p["dist_efa"], 4) for k, p in per.items()},
                    tolerance="Euclidean distance to (1, 2, 3): EFA < FM in every setting",
                    explanation="the mean predicted ratings printed in Table 2; measured = distance(FM) - "
                                "distance(EFA); componentwise EFA is never farther, and strictly closer in "
                                "every component except rating 2 in v1 unidirectional (2.09 vs 2.09)",
                    per_setting=per)


@claim("efa.table2.closer-to-123",
       reference="Table 2, Sec 6.2.2 (Results)",
       statement="In all four settings of Table 2 the mean predicted ratings of EFA are closer to (1, 2, 3) "
                 "than those of FM (as printed); arithmetic on the paper's printed numbers, no library code and "
                 "no records.",
       method="float64",
       algebra="Euclidean distances between the mean predicted ratings printed in Table 2 and (1, 2, 3): arithmetic "
               "on the paper's numbers, no library code")
def _closer():
    return check_closer()
