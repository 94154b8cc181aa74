"""Theory figures of "Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions".

- ``fig3`` (fenchel_fig3.png): Fig 3 regenerated, four panels alpha = 4, 2, 1, 0.5: the support of u
  (labelled with the paper's weights 0.3/0.4/0.6, normalised), mu, the evidence arrow mu -> mu + z, the
  exact h (from lambda* maximising (7), Newton) and the approximation (16).  The paper does not give
  T and z; we use ours (attnlab.theory.fenchel.kl_problem.FIG3_*; docs/instances.md).
- ``error-vs-alpha`` (fenchel_error_vs_alpha.png): log-log errors against alpha on instance I-rand:
  ||lambda* - alpha z|| (14), ||h* - h_16||, ||lambda* - lambda_13|| and ||h* - h(lambda_13)||, with
  least-squares slopes fitted over alpha <= 0.02 (expected 2, 2, 3, 3).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from attnlab.paper_figures.style import save, size, tight_layout, wrap


def render_fig3(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    from attnlab.numerics import entropic_dual as ed
    from attnlab.theory.fenchel.kl_problem import FIG3_ALPHAS, FIG3_T, FIG3_U, FIG3_U_PRINTED, FIG3_Z

    T, u, z = FIG3_T, FIG3_U, FIG3_Z
    mu = u @ T
    fig, axes = plt.subplots(1, 4, figsize=size(2, 2.75), sharey=True)
    for ax, a in zip(axes, FIG3_ALPHAS):
        ex = ed.solve(T, u, z, a)
        h16 = ed.h_approx(T, u, z, a)
        ax.scatter(T[:, 0], T[:, 1], s=40 * u / u.max(), color="tab:orange", zorder=3, label="support of u")
        for i, (t, w) in enumerate(zip(T, FIG3_U_PRINTED)):
            ax.annotate(f"u(t{i + 1})={w:g}", t, textcoords="offset points", xytext=(3, 3), fontsize=5.5)
        ax.fill(T[:, 0], T[:, 1], color="tab:orange", alpha=0.08, zorder=1)
        ax.annotate("", xy=mu + z, xytext=mu, arrowprops=dict(arrowstyle="->", color="navy", lw=1.0))
        ax.plot(*(mu + z), marker="x", color="navy", ms=5, ls="none", label=r"$\mu+z$")
        ax.plot(*mu, marker="o", color="k", ms=2.5, ls="none", label=r"$\mu$")
        ax.plot(*ex["h"], marker="s", color="red", ms=5, ls="none", label=r"exact $\hat h$ ($\lambda^*$ of (7))")
        ax.plot(*h16, marker="D", color="purple", ms=4.5, ls="none", mfc="none", mew=1.2,
                label=r"approximation (16)")
        err = np.linalg.norm(ex["h"] - h16)
        ax.set_title(rf"$\alpha$ = {a:g}: $\|\hat h^*-\hat h_{{16}}\|$ = {err:.4f}", fontsize=7)
        ax.set_xlim(-1, 1.3)
        ax.set_ylim(-1, 1.3)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
        ax.set_xlabel("template coord. 1")
    axes[0].set_ylabel("template coordinate 2 (unitless)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), frameon=False)
    fig.suptitle(wrap("Fig 3 regenerated: exact solution of (3)/(7) vs the closed form (16); u normalised from "
                      "the printed 0.3/0.4/0.6 (sum 1.3); T, z not given in the paper (our instance)",
                      fig.get_figwidth(), 9))
    tight_layout(fig, rect=(0, 0.22 / fig.get_figheight(), 1, 1))
    return save(fig, outdir, "fenchel_fig3.png")


def render_error_vs_alpha(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    from attnlab.theory.fenchel.duality import instance_i_rand
    from attnlab.theory.fenchel.kl_problem import error_sweep, loglog_slope

    T, u, z = instance_i_rand()
    alphas = np.geomspace(1e-3, 2.0, 28)
    rows = error_sweep(T, u, z, alphas)
    fit = alphas <= 0.02
    series = [("lam14", r"$\|\lambda^*-\alpha z\|$ (14)", "tab:blue", "-"),
              ("h16", r"$\|\hat h^*-\hat h_{16}\|$ (16)", "tab:red", "-"),
              ("lam13", r"$\|\lambda^*-\lambda_{13}\|$ (13)", "tab:blue", "--"),
              ("h13", r"$\|\hat h^*-\hat h(\lambda_{13})\|$", "tab:red", "--")]
    fig, ax = plt.subplots(figsize=size(1, 3.2))
    for key, label, color, ls in series:
        y = np.array([r[key] for r in rows])
        s = loglog_slope(alphas[fit], y[fit])
        ax.loglog(alphas, y, ls=ls, color=color, marker="o", ms=2, label=f"{label}: slope {s:.2f}")
        c = np.exp(np.mean(np.log(y[fit]) - s * np.log(alphas[fit])))
        ax.loglog(alphas[fit], c * alphas[fit] ** s, color="k", lw=0.8, alpha=0.6)
    ax.axvspan(alphas[fit].min(), alphas[fit].max(), color="grey", alpha=0.1, label=r"fit range $\alpha\leq 0.02$")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel("error")
    ax.set_title("Theorem 2 error orders on I-rand (n = 5, d = 3):\nexpected slopes 2 (14, 16) and 3 (13)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=6)
    tight_layout(fig)
    return save(fig, outdir, "fenchel_error_vs_alpha.png")


FIGURES = {"fig3": render_fig3, "error-vs-alpha": render_error_vs_alpha}
