"""EFA: two steps of the proof of Theorem 2 (App. D) checked on the Sec 5.2 model.

- the transformer Lipschitz bound  ||TF^R_theta(Exp^R_theta(Z)) - TF^R_theta~(Exp^R_theta~(Z))||_{2,inf}
  <= (L+1) B_H^L B_Theta |||theta - theta~|||  with B_H = (1+B^2)(1+B^2 R^3),
  B_Theta = B R (1 + B R^2 + B^3 R^2), for |||theta|||, |||theta~||| <= B (Bai et al. Cor. L.1 as used
  in App. D), measured on random parameter pairs of :class:`BaiEFA`;
- the ERM decomposition  L(theta^) <= inf_theta L(theta) + 2 sup_theta |X_theta|  (last line of
  App. D), on an instance where every term is computable: a finite class of BaiEFA parameter points
  and a population that is uniform over a finite pool of sequences.
"""
from __future__ import annotations

import numpy as np
import torch

from attnlab.catalog import claim, holds_if
from attnlab.experiments.models.efa import replicate_targets
from attnlab.experiments.models.efa_theory import BaiEFA


def tf_outputs(m: BaiEFA, tau: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """TF^R_theta(Exp^R_theta(Z_i)) for every copy i (the target y_i masked): (B, I, I, D)."""
    cols, masked = m.columns(tau, y)
    B, I = y.shape
    Z = replicate_targets(cols, masked, torch.arange(I).expand(B, I)).reshape(B * I, I, m.D)
    return m.transformer(Z).reshape(B, I, I, m.D)


def lipschitz_constant(L: int, B: float, R: float) -> float:
    BH = (1 + B ** 2) * (1 + B ** 2 * R ** 3)
    BT = B * R * (1 + B * R ** 2 + B ** 3 * R ** 2)
    return (L + 1) * BH ** L * BT


def _difference(m1, m2, ctor):
    d = ctor()
    with torch.no_grad():
        for pd, p1, p2 in zip(d.parameters(), m1.parameters(), m2.parameters()):
            pd.copy_(p1 - p2)
    return d.norm()


LIP_GRID = dict(L=(1, 2, 3), R=(0.5, 1.0, 2.0, 4.0), scale=(0.05, 0.3, 1.0, 3.0), pair=("close", "far"))


def check_lipschitz(grid=LIP_GRID, seed=0, K=3, tau_dim=2, Kp=4, M=2, Dp=4, n=8, I=5) -> "Evidence":
    g = torch.Generator().manual_seed(seed)
    worst, per, k = 0.0, {}, 0
    for L in grid["L"]:
        for R in grid["R"]:
            for s in grid["scale"]:
                for pair in grid["pair"]:
                    k += 1
                    ctor = lambda: BaiEFA(K, tau_dim, Kp, L, M, Dp, R=R, init_scale=s).double()
                    torch.manual_seed(1000 * seed + k)
                    m1, m2 = ctor(), ctor()
                    if pair == "close":                    # theta~ = theta + 1e-3 noise
                        m2.load_state_dict(m1.state_dict())
                        with torch.no_grad():
                            for p in m2.parameters():
                                p.add_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 1e-3)
                    B = max(m1.norm(), m2.norm())
                    tau = torch.randn(n, I, tau_dim, generator=g, dtype=torch.float64) * R
                    y = torch.randn(n, I, generator=g, dtype=torch.float64)
                    with torch.no_grad():
                        d = float((tf_outputs(m1, tau, y) - tf_outputs(m2, tau, y)).norm(dim=-1).max())
                    ratio = d / (lipschitz_constant(L, B, R) * _difference(m1, m2, ctor))
                    per[f"L={L},R={R},scale={s},{pair}"] = ratio
                    worst = max(worst, ratio)
    return holds_if(worst <= 1.0, measured=worst, tolerance="ratio <= 1",
                    explanation=f"{len(per)} random pairs of BaiEFA (K={K}, tau={tau_dim}, K'={Kp}, M={M}, "
                                f"D'={Dp}) over L, R, init scale and close (1e-3) or independent pairs; "
                                f"{n} random sequences of I = {I}; ratio = max over sequences, copies and "
                                "columns of ||TF(Exp(Z_i)) - TF~(Exp~(Z_i))||_2 / ((L+1) B_H^L B_Theta "
                                "|||theta - theta~|||), B = the larger |||.|||", per_case=per)


@claim("efa.thm2.transformer-lipschitz",
       reference="App. D (Lipschitz step; Bai et al. Cor. L.1), Sec 5.2.2",
       statement="For |||theta|||, |||theta~||| <= B and clipping radius R, "
                 "||TF^R_theta(Exp^R_theta(Z)) - TF^R_theta~(Exp^R_theta~(Z))||_{2,inf} <= "
                 "(L+1) B_H^L B_Theta |||theta - theta~||| with B_H = (1+B^2)(1+B^2 R^3) and "
                 "B_Theta = B R (1 + B R^2 + B^3 R^2).",
       method="torch")
def _lipschitz():
    return check_lipschitz()


# ------------------------------------------------------------------------------------------------
# the ERM decomposition
# ------------------------------------------------------------------------------------------------
def erm_instance(n_params=12, pool=400, I=5, seed=0, By=2.0):
    """(losses (n_params, pool) of l(theta; Z) for a finite class and a finite population pool)."""
    g = torch.Generator().manual_seed(seed)
    tau = torch.rand(pool, I, 2, generator=g, dtype=torch.float64) * 2 - 1
    y = ((torch.rand(pool, I, generator=g, dtype=torch.float64) * 2 - 1) * By)
    rows = []
    for k in range(n_params):
        torch.manual_seed(seed * 100 + k)
        m = BaiEFA(3, 2, 8, 1 + k % 2, 2, 8, R=2.0, B_y=By, init_scale=(0.3, 1.0, 2.0)[k % 3]).double()
        with torch.no_grad():
            rows.append(m.loss(tau, y))
    return torch.stack(rows).numpy()


def check_erm_decomposition(select=np.argmin, Fs=(5, 20, 100), draws=200, seed=0) -> "Evidence":
    """theta^ = select(L^) over the finite class; L = the pool average (the population is uniform
    over the pool, so L is exact); sup |X_theta| = max over the class of |L^ - L|."""
    losses = erm_instance(seed=seed)
    L = losses.mean(1)
    rng = np.random.default_rng(seed)
    worst, per = -np.inf, {}
    for F in Fs:
        r, ex, ratio = [], [], []
        for _ in range(draws):
            idx = rng.integers(0, losses.shape[1], F)          # F i.i.d. draws from the population
            Lh = losses[:, idx].mean(1)
            th = int(select(Lh))
            sup = float(np.abs(Lh - L).max())
            r.append((L[th] - L.min()) - 2 * sup)
            ex.append(L[th] - L.min())
            ratio.append((L[th] - L.min()) / (2 * sup))
        per[F] = dict(max_excess_minus_bound=float(max(r)), mean_excess=float(np.mean(ex)),
                      max_excess_over_bound=float(max(ratio)))
        worst = max(worst, max(r))
    return holds_if(worst <= 1e-12, measured=float(worst), tolerance="L(theta^) - inf L - 2 sup|X| <= 1e-12",
                    explanation=f"finite class of {losses.shape[0]} BaiEFA parameter points (L in {{1, 2}}, "
                                f"scales 0.3/1/2), population uniform over {losses.shape[1]} sequences (I = 5, "
                                f"|y| <= B_y = 2), {draws} samples of F in {list(Fs)}; measured = the largest "
                                "L(theta^) - inf L - 2 sup|X_theta| (<= 0 when the decomposition holds)",
                    per_F=per, population_losses=L.tolist())


@claim("efa.thm2.erm-decomposition",
       reference="App. D (last line: L(theta^) <= inf L + 2 sup |X_theta|)",
       statement="The empirical risk minimiser theta^ satisfies L(theta^) <= inf_theta L(theta) + "
                 "2 sup_theta |X_theta|, X_theta = L^(theta) - L(theta).",
       method="float64")
def _erm():
    return check_erm_decomposition()
