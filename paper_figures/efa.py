"""Theory figures of the Exponential Family Attention paper.

- ``identifiability`` (efa_identifiability.png): Theorem 1's recoveries on constructed parameter pairs
  (true vs recovered entries of A, B = A^{-T} and C) and the two counterexamples to the statement:
  (a) shifted center embeddings e' = e* + c -- identical conditionals, no linear map, only an affine one;
  (b) d_j = 2 -- the proof's C reproduces K' at the two diversity points only.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from attnlab.paper_figures.style import save, size, tight_layout


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _below(x: float, tol: float) -> str:
    """An error shown against its check's tolerance: "< tol" where it is below (a rounding-level value,
    which another BLAS prints otherwise), the value itself where it is not."""
    return f"< 1e{round(math.log10(tol))}" if x < tol else f"= {x:.1e}"


def render_identifiability(outdir: Path) -> list[Path]:
    import sympy as sp

    from attnlab.theory.efa.identifiability import (TOL, pointwise_counterexample, shift_counterexample,
                                            theta1_recovery, theta2_recovery)

    plt = _plt()
    r1 = theta1_recovery()
    r2 = theta2_recovery()
    sh = shift_counterexample()
    pw = pointwise_counterexample()

    fig, axes = plt.subplots(1, 3, figsize=size(2, 3.0))
    # (1) recovery of A, B, C
    ax = axes[0]
    for true, est, lab, mk in ((r1["A0"], r1["A_hat"], "A (context, K=3)", "o"),
                               (r1["B0"], r1["B_hat"], r"B = A$^{-T}$ (center, from $\tilde B$)", "s"),
                               (r2["C0"], r2["C_hat"], f"C (theta_2, d_j={r2['d_j']})", "^")):
        ax.scatter(true.ravel(), est.ravel(), marker=mk, s=8, label=lab, alpha=0.8, lw=0)
    lim = max(np.abs(r2["C0"]).max(), np.abs(r1["A0"]).max(), np.abs(r1["B0"]).max()) * 1.1
    ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.8)
    ax.set_xlabel("true entry")
    ax.set_ylabel("recovered entry (proof of Thm 1)")
    ax.set_title(f"Thm 1 recoveries: max error\nA {_below(r1['dev_A'], TOL)}, C {_below(r2['dev_C'], TOL)}",
                 fontsize=7)
    ax.legend(fontsize=5.5, loc="upper left")

    # (2) counterexample (a): shifted center embeddings
    ax = axes[1]
    E, Ep = sh["E_star"], sh["E_prime"]
    BE = E @ sh["B_ls"].T
    ax.scatter(E[:, 0], E[:, 1], c="C0", s=12, label="e*(x)")
    ax.scatter(Ep[:, 0], Ep[:, 1], c="C3", s=12, label="e'(x) = e*(x) + c")
    ax.scatter(BE[:, 0], BE[:, 1], marker="x", c="k", s=14, lw=0.8, label="best linear B e*(x)")
    for k in range(len(E)):
        ax.annotate("", xy=Ep[k], xytext=E[k], arrowprops=dict(arrowstyle="->", color="0.6", lw=0.7))
        ax.plot([BE[k, 0], Ep[k, 0]], [BE[k, 1], Ep[k, 1]], ":", c="k", lw=0.8)
    ax.set_title(f"(a) shift: identical p (|dlog p| {_below(sh['dlogp'], 1e-12)}),\n"
                 f"min_B ||E'-BE*||_F = {sh['lstsq_residual']:.2f}", fontsize=7)
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    ax.legend(fontsize=5.5, loc="center right")

    # (3) counterexample (b): pointwise-only relation for d_j = 2
    ax = axes[2]
    y = pw["y"]
    f_true = sp.lambdify(y, pw["Kp"][1], "numpy")
    f_lin = sp.lambdify(y, (pw["C"] * pw["Ks"])[1], "numpy")
    ys = np.linspace(-1.6, 2.2, 400)
    ax.plot(ys, f_true(ys), c="C3", label="K'(y)_2 = y^6 + 2y^2")
    ax.plot(ys, f_lin(ys), c="C0", ls="--", label="(C K*(y))_2, C from the proof")
    pts = np.array([1.0, 2.0])
    ax.scatter(pts, f_true(pts), c="k", s=12, zorder=3, label="diversity points (N)")
    ax.set_ylim(-5, 80)
    ax.set_xlabel("y")
    ax.set_title("(b) d_j = 2: equal means for all y,\nrelation only at N's points", fontsize=7)
    ax.legend(fontsize=5.5, loc="upper left")
    fig.suptitle("EFA Theorem 1 (linear identifiability): the proof's recovery, and two counterexamples "
                 "to the statement")
    tight_layout(fig)
    return save(fig, outdir, "efa_identifiability.png")


FIGURES = {"identifiability": render_identifiability}
