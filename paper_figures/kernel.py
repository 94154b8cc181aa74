"""Theory figures of "Kernel Multimodal Continuous Attention" (trapezoid convergence, App. E.4).

- ``fig2a-convergence`` (kernel_fig2a_convergence.png): Fig. 2a regenerated, (left) the paper's way,
  |I_G - I_19| against the 19-point value, and (right) against the true integral (float64 piecewise
  Gauss-Legendre split at the kinks), kernel softmax vs kernel sparsemax on [0, 1], 100 simulations.
- ``fig2b-softplus`` (kernel_fig2b_softplus.png): Fig. 2b, the kernel-sparsemax integral and its softplus
  approximations (rho = 1, 2, 5, 10) against G, one simulation.
- ``convergence-R`` (kernel_convergence_R.png): error against h on R: kernel softmax (exponential, Cor E.3)
  against kernel sparsemax alpha = 2 (O(h^2)) and alpha = 1.5 (O(h^3)).
- ``convergence-unit-interval`` (kernel_convergence_unit_interval.png): error against G on [0, 1] with
  the Euler-Maclaurin predictions (O(G^-2) for both families).

App. E.4 setting: I = 10 inducing points evenly spaced in [0, 1], gamma_i, B_i ~ U(-1, 1), weight
e^{-t^2/2}, V = sum_i B_i k(t, t_i); the paper does not give the kernel: we use the Gaussian kernel with
zeta2 = 10.  The paper's x axis runs over 1..19 grid points; the trapezoid rule needs G >= 2, so ours
runs over 2..19.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from attnlab.paper_figures.style import save, size, tight_layout

N_SIM = 100
G_PAPER = np.arange(2, 20)


def _sims(n=N_SIM, seed=2022):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, 10), rng.uniform(-1, 1, 10)) for _ in range(n)]


def _integrand(t, g, B, kind, rho=None):
    from attnlab.theory.kernel.instances import kernel_row

    K = kernel_row(t)
    f = K @ g
    if kind == "softmax":
        u = np.exp(f)
    elif kind == "sparsemax":
        u = np.maximum(1 + f, 0)
    else:                                    # softplus-smoothed exp_{rho,0}
        u = np.logaddexp(0, rho * (1 + f)) / rho
    return np.exp(-t * t / 2) * (K @ B) * u


def _true(g, B, kind):
    from attnlab.numerics.mp_reference import find_sign_changes
    from attnlab.numerics.quadrature import piecewise_gauss_legendre
    from attnlab.theory.kernel.instances import f_np

    kinks = []
    if kind == "sparsemax":
        from scipy.optimize import brentq

        kinks = [brentq(lambda x: 1 + f_np(np.array([x]), g)[0], lo, hi, xtol=1e-15)
                 for lo, hi in find_sign_changes(lambda x: 1 + f_np(x, g), 0, 1, 4001)]
    return piecewise_gauss_legendre(lambda x: _integrand(x, g, B, kind), [0.0] + kinks + [1.0], 40)


def _trap(g, B, kind, G, rho=None):
    t = np.linspace(0, 1, G)
    return float(np.trapezoid(_integrand(t, g, B, kind, rho), t))


def render_fig2a(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    sims = _sims()
    fig, axes = plt.subplots(1, 2, figsize=size(2, 2.9), sharey=True)
    for kind, color in (("softmax", "C0"), ("sparsemax", "C3")):
        vals = np.array([[_trap(g, B, kind, G) for G in G_PAPER] for g, B in sims])
        true = np.array([_true(g, B, kind) for g, B in sims])
        self_err = np.abs(vals - vals[:, -1:])[:, :-1]
        true_err = np.abs(vals - true[:, None])
        label = "kernel softmax (exp)" if kind == "softmax" else "kernel sparsemax (exp_0)"
        for ax, err, x in ((axes[0], self_err, G_PAPER[:-1]), (axes[1], true_err, G_PAPER)):
            med = np.median(err, axis=0)
            ax.fill_between(x, np.quantile(err, 0.1, axis=0), np.quantile(err, 0.9, axis=0), color=color,
                            alpha=0.18, lw=0)
            ax.plot(x, med, "o-", color=color, ms=2.5, label=f"{label}: median, 10-90%")
            ax.plot(x, err.mean(0), "--", color=color, lw=0.8, label=f"{label}: mean")
    h = 1.0 / (G_PAPER - 1)
    axes[1].plot(G_PAPER, 0.05 * h ** 2, "k:", lw=0.8, label="reference slope G^-2")
    axes[0].set_title("paper's metric: |I_G - I_19| (self-referenced)")
    axes[1].set_title("against the true integral: |I_G - I|")
    for ax in axes:
        ax.set_xticks(G_PAPER[::2])
        ax.set_yscale("log")
        ax.set_xlabel("grid points G on [0, 1]")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("absolute error")
    axes[1].legend(fontsize=6, loc="lower left")
    fig.suptitle("Fig. 2a regenerated: trapezoid rule on [0, 1], 100 simulations (Gaussian kernel, zeta^2 = 10)")
    tight_layout(fig)
    return save(fig, outdir, "kernel_fig2a_convergence.png")


def render_fig2b(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    g, B = _sims(1, seed=7)[0]
    fig, ax = plt.subplots(figsize=size(1, 2.6))
    ax.plot(G_PAPER, [_trap(g, B, "sparsemax", G) for G in G_PAPER], "k-o", ms=2.5, lw=1.4, label="exp_0 (ReLU)")
    for rho, c in zip((1, 2, 5, 10), ("C0", "C1", "C2", "C3")):
        ax.plot(G_PAPER, [_trap(g, B, "softplus", G, rho) for G in G_PAPER], "--", color=c, label=f"exp_(rho,0), rho={rho}")
    ax.axhline(_true(g, B, "sparsemax"), color="gray", lw=1, ls=":", label="true exp_0 integral")
    ax.set_xlabel("grid points G on [0, 1]")
    ax.set_ylabel("value of the integral")
    ax.set_title("Fig. 2b regenerated: sparsemax integral\nvs softplus approximations")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3)
    tight_layout(fig)
    return save(fig, outdir, "kernel_fig2b_softplus.png")


def render_convergence_R(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    from attnlab.theory.kernel.convergence import SPARSE_H, _corE3_errors, sparse_rms_errors

    hs = [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125]
    soft = _corE3_errors(hs, dps=40, L=14.0, which=("numerator",))["numerator"][1]
    fig, ax = plt.subplots(figsize=size(1, 2.9))
    ax.loglog(hs, [float(e) for e in soft], "o-", ms=2.5, color="C0", label="kernel softmax (Cor E.3 instance, 40-digit)")
    for alpha, c in ((2.0, "C3"), (1.5, "C2")):
        rms, _, _ = sparse_rms_errors(alpha)
        ax.loglog(SPARSE_H, rms, "s-", ms=2.5, color=c, label=f"kernel deformed alpha={alpha}\n(RMS over 16 grid shifts)")
        p = alpha / (alpha - 1)
        ax.loglog(SPARSE_H, rms[-1] * (SPARSE_H / SPARSE_H[-1]) ** p, ":", color=c, lw=0.8, label=f"slope {p:g}")
    ax.set_ylim(1e-40, 1)
    ax.set_xlabel("grid spacing h")
    ax.set_ylabel("|trapezoid - integral|")
    ax.set_title("Trapezoid rule on R: exponential (softmax)\nvs algebraic (sparse) convergence")
    ax.legend(fontsize=5.5, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    tight_layout(fig)
    return save(fig, outdir, "kernel_convergence_R.png")


def render_convergence_unit(outdir: Path) -> list[Path]:
    from attnlab.paper_figures.style import pyplot

    plt = pyplot()

    from attnlab.theory.kernel.convergence import unit_interval_errors

    gs = np.array([5, 9, 17, 33, 65, 129, 257, 513, 1025])
    fig, ax = plt.subplots(figsize=size(1, 2.6))
    for alpha, seed, c, lab in ((1.0, 0, "C0", "kernel softmax"), (2.0, 3, "C3", "kernel sparsemax (2 kinks)")):
        errs, _, _ = unit_interval_errors(alpha, gs=tuple(gs), seed=seed)
        ax.loglog(gs, np.abs(errs), "o-", ms=2.5, color=c, label=f"{lab}, seed {seed}")
    ax.loglog(gs, 0.5 * (1.0 / (gs - 1)) ** 2, "k:", lw=0.8, label="slope G^-2 (Euler-Maclaurin)")
    ax.set_xlabel("grid points G on [0, 1]")
    ax.set_ylabel("|trapezoid - integral|")
    ax.set_title("Trapezoid rule on [0, 1] (App. E.4 setting):\nO(G^-2) for both")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3, which="both")
    tight_layout(fig)
    return save(fig, outdir, "kernel_convergence_unit_interval.png")


FIGURES = {"fig2a-convergence": render_fig2a, "fig2b-softplus": render_fig2b,
           "convergence-R": render_convergence_R, "convergence-unit-interval": render_convergence_unit}
