"""Figures of the kernel paper's experiments (Moreno et al., NeurIPS 2022).

- ``kernel_exp_results``: Tables 1-4 and 9 as dots -- our accuracy (mean and 95% t-CI over seeds, from the
  records under ``results/kernel-*/``) beside the paper's number (black tick); the config and any
  substitute data set are written in each panel's title.
- ``kernel_exp_time_warping``: Sec. 6.1 / Lemma 4.2 -- for three test curves, the class-1 head's learned density
  of continuous softmax, kernel softmax and kernel sparsemax beside the oracle individualised density
  p_i1(t) = 2 1[g_i(t) < 1/2] g_i'(t) (the density that turns <p_i1, X_i> into the aligned average).
  The models are trained here (the cpu config's network, 2 epochs on 5,000 curves, seed 0).
- ``kernel_exp_forda``: Figs. 1a, 4, 9 -- FordA test series with the attention density rescaled to the series'
  maximum, for continuous softmax and kernel sparsemax trained here (the cpu-small config, 2 epochs).
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from attnlab.experiment import results_root

EXPERIMENTS = (("kernel-time-warping", "Table 1: time warping"), ("kernel-forda", "Table 2: FordA"),
               ("kernel-gestures", "Table 3 protocol: gestures"), ("kernel-sentiment", "Table 4 protocol: sentences"),
               ("kernel-ecg", "Table 9 protocol: ECG"))
ORDER = ("Discrete Softmax", "Cts Softmax", "Cts Sparsemax", "Gaussian Mixture", "Kernel Softmax",
         "Kernel Sparsemax", "LSTM FCN", "TST (Transformer)")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _records(experiment: str):
    """The records of the config with the most records (ties: full before reduced before quick)."""
    root = results_root() / experiment
    best: tuple[list, str | None] = ([], None)
    for cfg in ("full", "cpu", "cpu-small", "quick"):
        recs = [json.loads(p.read_text()) for p in sorted((root / cfg).glob("*.json"))]
        if len(recs) > len(best[0]):
            best = (recs, cfg)
    return best


def render_results(outdir: Path) -> list[Path]:
    from attnlab.results import ci95
    from attnlab.experiments.paper_numbers.kernel import PAPER_NUMBERS

    plt = _plt()
    fig, axes = plt.subplots(1, len(EXPERIMENTS), figsize=(4.2 * len(EXPERIMENTS), 4.6), squeeze=False)
    for ax, (exp, title) in zip(axes[0], EXPERIMENTS):
        recs, cfg = _records(exp)
        vals = defaultdict(list)
        sub = None
        for r in recs:
            sub = sub or r.get("substitute")
            for m in r["metrics"]:
                if m["metric"] == "accuracy":
                    vals[(m["setting"], m["model"])].append(m["value"])
        settings = sorted({s for (e, s, _, met) in PAPER_NUMBERS if e == exp} | {s for s, _ in vals},
                          key=lambda s: (len(s), s))
        models = [m for m in ORDER if any((s, m) in vals or (exp, s, m, "accuracy") in PAPER_NUMBERS
                                          for s in settings)]
        w = 0.8 / max(len(settings), 1)
        for j, s in enumerate(settings):
            xs = np.arange(len(models)) + (j - (len(settings) - 1) / 2) * w
            ours = [vals.get((s, m), []) for m in models]
            mean = [np.mean(v) if v else np.nan for v in ours]
            err = [ci95(v) or 0.0 if v else 0.0 for v in ours]
            n = max((len(v) for v in ours), default=0)
            ax.errorbar(xs, mean, yerr=err, fmt="o", ms=5, capsize=3, label=f"ours {s} (n≤{n})")
            paper = [PAPER_NUMBERS.get((exp, s, m, "accuracy"), np.nan) for m in models]
            ax.plot(xs, paper, "k_", ms=14, mew=2, label="paper" if j == 0 else None)
        lo_hi = [v for v in [PAPER_NUMBERS.get((exp, s, m, "accuracy")) for s in settings for m in models]
                 + [np.mean(v) for v in vals.values()] if v is not None]
        if lo_hi:       # zoom on the means (a 2-seed t-interval can span tens of points)
            ax.set_ylim(max(0, min(lo_hi) - 6), min(100.5, max(lo_hi) + 6))
        ax.set_xticks(np.arange(len(models)))
        ax.set_xticklabels([m.replace(" (Transformer)", "") for m in models], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("test accuracy (%)")
        note = f"config {cfg}" if cfg else "no records yet"
        if sub:
            note += ", SUBSTITUTE data"
        ax.set_title(f"{title}\n({note})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out = outdir / "kernel_exp_results.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [out]


def _train(model, X, y, epochs, batch, lr, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), batch):
            idx = perm[i:i + batch]
            loss = torch.nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return model.eval()


def render_time_warping(outdir: Path) -> list[Path]:
    import torch

    from attnlab.experiments.kernel.common import time_warping_data, warp
    from attnlab.experiments.models.kernel_models import TimeWarpingNet

    torch.set_num_threads(1)
    X, y, Z, lam = time_warping_data(5_500, seed=0)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    kinds = ("cts_softmax", "kernel_softmax", "kernel_sparsemax")
    nets = {}
    for k in kinds:
        torch.manual_seed(0)
        nets[k] = _train(TimeWarpingNet(k), Xt[500:], yt[500:], epochs=2, batch=64, lr=1e-3, seed=0)
    plt = _plt()
    show = [0, 1, 2]
    fig, axes = plt.subplots(1, len(show), figsize=(13, 3.8), squeeze=False)
    t = np.linspace(0, 1, 2001)
    for ax, i in zip(axes[0], show):
        g = warp(t, lam[i])
        oracle = 2 * (g < 0.5) * np.gradient(g, t)
        ax.fill_between(t, oracle, color="0.85", label="oracle $p_{i1}$ (Lemma 4.2)")
        with torch.no_grad():
            for k in kinds:
                p = nets[k].density(Xt[i:i + 1])[0, 0].numpy()
                grid = nets[k].attn.grid.numpy()
                ax.plot(grid, p, label=k.replace("_", " "))
        ax2 = ax.twinx()
        ax2.plot(np.linspace(0, 1, X.shape[1]), X[i], color="k", lw=0.6, alpha=0.5)
        ax2.set_yticks([])
        ax.set_title(f"test curve {i}: λ={lam[i]:.1f}, class {y[i] + 1}", fontsize=9)
        ax.set_xlabel("t")
        ax.set_ylim(bottom=0)
    axes[0, 0].set_ylabel("class-1 head density")
    axes[0, 0].legend(fontsize=7, loc="upper right")
    fig.suptitle("Time warping (App. B.3): learned class-1 densities vs the oracle individualised density "
                 "(grey; thin black = observed curve)", fontsize=10)
    fig.tight_layout()
    out = outdir / "kernel_exp_time_warping.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [out]


def render_forda(outdir: Path) -> list[Path]:
    import torch

    from attnlab.experiments.kernel.forda import CONFIGS, build, load

    torch.set_num_threads(1)
    cfg = dict(CONFIGS["cpu-small"])
    train, test, k = load(cfg)
    L = train[0].shape[1]
    kinds = ("cts_softmax", "kernel_sparsemax")
    nets = {}
    for m in kinds:
        torch.manual_seed(0)
        nets[m] = _train(build(m, L, k, cfg), train[0], train[1], epochs=2, batch=64, lr=1e-3, seed=0)
    plt = _plt()
    rows = [0, 1, 2, 3]
    fig, axes = plt.subplots(len(kinds), len(rows), figsize=(14, 5.5), squeeze=False)
    for a, m in enumerate(kinds):
        with torch.no_grad():
            p = nets[m].density(test[0][rows]).numpy()
            acc = (nets[m](test[0]).argmax(-1) == test[1]).float().mean().item() * 100
        for b, i in enumerate(rows):
            x = test[0][i].numpy()
            ax = axes[a, b]
            ax.plot(x, color="tab:blue", lw=0.8, label="series")
            ax.plot(p[b] / p[b].max() * x.max(), color="tab:red", lw=1.2, label="rescaled attention")
            ax.set_title(f"{m.replace('_', ' ')} (test acc {acc:.1f}%), series {i}", fontsize=8)
            ax.set_xlabel("time index (every 5th point)", fontsize=7)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("FordA: original series vs rescaled attention density (Figs. 1a, 4, 9; cpu-small network, "
                 "2 epochs)", fontsize=10)
    fig.tight_layout()
    out = outdir / "kernel_exp_forda.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [out]


FIGURES = {"kernel_exp_results": render_results, "kernel_exp_time_warping": render_time_warping,
           "kernel_exp_forda": render_forda}
