"""Figures of the kernel paper's experiments (Moreno et al., NeurIPS 2022).

- ``kernel_exp_results``: Tables 1-4 and 9 as dots -- our accuracy (mean and 95% t-CI over seeds where
  there are 5 or more, each seed below that; from the records under ``results/kernel-*/``) beside the
  paper's number (black tick); tables re-run on substitute data have their own panels and scale (the
  paper's range named, not drawn); the config and any substitute data set are in each panel's title.
- ``kernel_exp_time_warping``: Sec. 6.1 / Lemma 4.2 -- for three test curves, the class-1 head's learned density
  of continuous softmax, kernel softmax and kernel sparsemax beside the oracle individualised density
  p_i1(t) = 2 1[g_i(t) < 1/2] g_i'(t) (the density that turns <p_i1, X_i> into the aligned average).
  Drawn from the densities the runner stores in each record (``extra.attention_sample``: the first
  test curves, the grid and the learned densities), lowest seed of the full, else cpu, else quick config.
- ``kernel_exp_forda``: Figs. 1a, 4, 9 -- FordA test series with the attention density rescaled to the series'
  maximum, for continuous softmax and kernel sparsemax, from the same stored samples of ``kernel-forda``.

Nothing here trains: a missing record is one line naming the ``attnlab run`` command that writes it.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from attnlab.experiment import results_root
from attnlab.results import read_records
from attnlab.paper_figures.style import save

EXPERIMENTS = (("kernel-time-warping", "Table 1: time warping"), ("kernel-forda", "Table 2: FordA"),
               ("kernel-gestures", "Table 3 protocol: gestures"), ("kernel-sentiment", "Table 4 protocol: sentences"),
               ("kernel-ecg", "Table 9 protocol: ECG"))
ORDER = ("Discrete Softmax", "Cts Softmax", "Cts Sparsemax", "Gaussian Mixture", "Kernel Softmax",
         "Kernel Sparsemax", "LSTM FCN", "TST (Transformer)", "TST, patch tokens")


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _records(experiment: str):
    """The records of the converged configs -- the paper's ('full') or the paper's network stopped early
    on a validation split ('full-es') -- whichever has more (ties: full); without any, the reduced
    config with the most records (ties: cpu before cpu-small before quick)."""
    root = results_root(read=True) / experiment
    load = lambda cfg: read_records(sorted((root / cfg).glob("*.json")))  # noqa: E731
    for group in (("full", "full-es"), ("cpu", "cpu-small", "quick")):
        best: tuple[list, str | None] = ([], None)
        for cfg in group:
            recs = load(cfg)
            if len(recs) > len(best[0]):
                best = (recs, cfg)
        if best[1] is not None:
            return best
    return [], None


def _accuracies(recs) -> tuple[dict, str | None]:
    """Per (setting, model), our test accuracies (one per seed), and the substitute note if any."""
    vals, sub = defaultdict(list), None
    for r in recs:
        sub = sub or r.get("substitute")
        for m in r["metrics"]:
            if m["metric"] == "accuracy":
                vals[(m["setting"], m["model"])].append(m["value"])
    return vals, sub


def _results_panel(ax, exp, title, PAPER_NUMBERS):
    """One table: per model and setting, our seeds (dots where n < 5) or mean ± 95% t-CI (n >= 5),
    and the paper's number as a black tick -- unless our data are a substitute, whose accuracies
    are not comparable with the paper's: then the paper's range is named in the title instead."""
    from attnlab.results import ci95

    recs, cfg = _records(exp)
    vals, sub = _accuracies(recs)
    paper_settings = {s for (e, s, _, met) in PAPER_NUMBERS if e == exp}
    settings = sorted((set() if sub else paper_settings) | {s for s, _ in vals}, key=lambda s: (len(s), s))
    models = [m for m in ORDER if any((s, m) in vals or (not sub and (exp, s, m, "accuracy") in PAPER_NUMBERS)
                                      for s in settings)]
    w = 0.8 / max(len(settings), 1)
    shown = []
    for j, s in enumerate(settings):
        color = f"C{j}"
        xs = np.arange(len(models)) + (j - (len(settings) - 1) / 2) * w
        n = max((len(vals.get((s, m), [])) for m in models), default=0)
        for x, m in zip(xs, models):
            v = vals.get((s, m), [])
            if len(v) >= 5:
                ax.errorbar([x], [np.mean(v)], yerr=[ci95(v)], fmt="o", ms=5, capsize=3, color=color)
            elif v:
                ax.plot([x] * len(v), v, "o", ms=4, mfc="none", color=color)
            shown += v
        if n:
            label = f"ours, {s}: " + ("mean ± 95% CI" if n >= 5 else "each seed")
            ax.plot([], [], "o", color=color, mfc=color if n >= 5 else "none", label=label + f" (n ≤ {n})")
        if not sub:
            paper = [PAPER_NUMBERS.get((exp, s, m, "accuracy"), np.nan) for m in models]
            ax.plot(xs, paper, "k_", ms=14, mew=2, label="paper" if j == 0 else None)
            shown += [v for v in paper if not np.isnan(v)]
    if shown:       # zoom on what is drawn (a 2-seed t-interval can span tens of points)
        ax.set_ylim(max(0, min(shown) - 3), min(100.5, max(shown) + 3))
    ax.set_xticks(np.arange(len(models)))
    ax.set_xticklabels([m.replace(" (Transformer)", "") for m in models], rotation=35, ha="right")
    ax.set_ylabel("test accuracy (%)")
    if not recs:
        note = "no records yet"
    else:
        note = f"ours: config {cfg}"
    if sub:
        pv = [v for (e, s, m, met), v in PAPER_NUMBERS.items() if e == exp and met == "accuracy"]
        note += ", SUBSTITUTE data" + (f"\n(paper, on its data: {min(pv):.0f}–{max(pv):.0f} %, not comparable)"
                                       if pv else "")
    ax.set_title(f"{title}\n{note}")
    ax.grid(axis="y")
    ax.legend(loc="best", fontsize=8)


def render_results(outdir: Path) -> list[Path]:
    """Tables 1-4 and 9: the two tables on the paper's data in the top row (with the paper's numbers),
    the three on substitute data below (our accuracies only, on their own scale)."""
    from attnlab.experiments.paper_numbers.kernel import PAPER_NUMBERS

    plt = _plt()
    fig = plt.figure(figsize=(15, 10))
    grid = fig.add_gridspec(2, 6)
    slots = [grid[0, 0:3], grid[0, 3:6], grid[1, 0:2], grid[1, 2:4], grid[1, 4:6]]
    for slot, (exp, title) in zip(slots, EXPERIMENTS):
        _results_panel(fig.add_subplot(slot), exp, title, PAPER_NUMBERS)
    fig.suptitle("Kernel multimodal attention, test accuracy: ours beside the paper's tables")
    fig.tight_layout()
    return save(fig, outdir, "kernel_exp_results.png")


def _sampled(experiment: str, models: tuple[str, ...], configs: tuple[str, ...], command: str):
    """Per model, the lowest-seed record of the first config in `configs` that holds a stored attention
    sample (``extra.attention_sample``, written by the runner) for every model in `models`."""
    root = results_root(read=True) / experiment
    for cfg in configs:
        found = {}
        for m in models:
            recs = []
            for r in read_records(sorted((root / cfg).glob(f"*{m}-seed*.json"))):
                if str(r.get("tag", "")).endswith(m) and "attention_sample" in r.get("extra", {}):
                    recs.append(r)
            if recs:
                found[m] = min(recs, key=lambda r: r["seed"])
        if len(found) == len(models):
            return found, cfg
    raise FileNotFoundError(f"no {experiment} records with stored attention densities for {', '.join(models)} "
                            f"under {root}; make them with `{command}`")


def _accuracy(rec) -> float:
    return next(m["value"] for m in rec["metrics"] if m["metric"] == "accuracy")


TW_KINDS = ("cts_softmax", "kernel_softmax", "kernel_sparsemax")


def render_time_warping(outdir: Path) -> list[Path]:
    from attnlab.experiments.kernel.common import time_warping_data, warp

    recs, cfg = _sampled("kernel-time-warping", TW_KINDS, ("full", "cpu", "quick"),
                         "attnlab run kernel-time-warping --config cpu --models " + ",".join(TW_KINDS)
                         + " --seed 0 --force")
    first = recs[TW_KINDS[0]]
    cv = first["config_values"]
    # the warps lambda_i of the shown test curves: the generator is deterministic in the seed (no training)
    _, _, _, lam = time_warping_data(cv["n"], cv["length"], cv["lam_max"], seed=first["seed"])
    sample = first["extra"]["attention_sample"]
    plt = _plt()
    show = sample["rows"][:3]
    fig, axes = plt.subplots(1, len(show), figsize=(13, 3.8), squeeze=False)
    t = np.linspace(0, 1, 2001)
    for ax, i in zip(axes[0], show):
        g = warp(t, lam[i])
        oracle = 2 * (g < 0.5) * np.gradient(g, t)
        ax.fill_between(t, oracle, color="0.85", label="oracle $p_{i1}$ (Lemma 4.2)")
        for k in TW_KINDS:
            s = recs[k]["extra"]["attention_sample"]
            ax.plot(s["grid"], np.asarray(s["density"])[i, 0],
                    label=f"{k.replace('_', ' ')} ({_accuracy(recs[k]):.1f}%)")
        x = np.asarray(sample["input"][i])
        ax2 = ax.twinx()
        ax2.plot(np.linspace(0, 1, x.size), x, color="k", lw=0.6, alpha=0.5)
        ax2.set_yticks([])
        ax.set_title(f"test curve {i}: λ={lam[i]:.1f}, class {sample['label'][i] + 1}", fontsize=9)
        ax.set_xlabel("t")
        ax.set_ylim(bottom=0)
    axes[0, 0].set_ylabel("class-1 head density")
    axes[0, 0].legend(fontsize=7, loc="upper right")
    fig.suptitle(f"Time warping (App. B.3): learned class-1 densities vs the oracle individualised density "
                 f"(grey; thin black = observed curve); {cfg} config, seed {first['seed']}", fontsize=10)
    fig.tight_layout()
    return save(fig, outdir, "kernel_exp_time_warping.png")


FORDA_KINDS = ("cts_softmax", "kernel_sparsemax")


def render_forda(outdir: Path) -> list[Path]:
    recs, cfg = _sampled("kernel-forda", FORDA_KINDS, ("full-es", "full", "cpu-small", "quick"),
                         "attnlab run kernel-forda --config full-es --models " + ",".join(FORDA_KINDS)
                         + " --seed 0")
    plt = _plt()
    rows = recs[FORDA_KINDS[0]]["extra"]["attention_sample"]["rows"]
    fig, axes = plt.subplots(len(FORDA_KINDS), len(rows), figsize=(14, 5.5), squeeze=False)
    for a, m in enumerate(FORDA_KINDS):
        s = recs[m]["extra"]["attention_sample"]
        p = np.asarray(s["density"])
        for b, i in enumerate(rows):
            x = np.asarray(s["input"][i])
            ax = axes[a, b]
            ax.plot(x, color="tab:blue", lw=0.8, label="series")
            ax.plot(np.linspace(0, x.size - 1, p.shape[1]), p[b] / p[b].max() * x.max(), color="tab:red", lw=1.2,
                    label="rescaled attention")
            ax.set_title(f"{m.replace('_', ' ')} (test acc {_accuracy(recs[m]):.1f}%), series {i}", fontsize=8)
            ax.set_xlabel("time index", fontsize=7)
    axes[0, 0].legend(fontsize=7)
    seed = recs[FORDA_KINDS[0]]["seed"]
    fig.suptitle(f"FordA: original series vs rescaled attention density (Figs. 1a, 4, 9; {cfg} config, "
                 f"seed {seed})", fontsize=10)
    fig.tight_layout()
    return save(fig, outdir, "kernel_exp_forda.png")


FIGURES = {"kernel_exp_results": render_results, "kernel_exp_time_warping": render_time_warping,
           "kernel_exp_forda": render_forda}
