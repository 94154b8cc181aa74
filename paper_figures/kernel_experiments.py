"""Figures of the kernel paper's experiments (Moreno et al., NeurIPS 2022).

- ``kernel_exp_results``: Tables 1-4 and 9 as dots -- our accuracy (mean and 95% t-CI over seeds where
  there are 5 or more, each seed below that; from the records under ``results/kernel-*/``) beside the
  paper's number (black tick); tables re-run on substitute data have their own panels and scale (the
  paper's range named, not drawn); the config and any substitute data set are in each panel's title.
- ``kernel_exp_time_warping``: Sec. 6.1 / Lemma 4.2 -- for three test curves of the lowest seed, the
  class-1 head's learned density of continuous softmax, kernel softmax and kernel sparsemax beside the
  oracle individualised density p_i1(t) = 2 1[g_i(t) < 1/2] g_i'(t) (the density that turns
  <p_i1, X_i> into the aligned average), the observed curves on axes of their own below; and, over
  every seed, each head's attention mass on aligned time [0, u] against the oracle's (mean over
  seeds, band from the lowest to the highest seed).  Drawn from the densities the runner stores in
  each record (``extra.attention_sample``: the first test curves, the grid and the learned
  densities) of the full, else cpu, else quick config; each seed's warps are regenerated from the
  generator (no training) and checked against the stored curves.
- ``kernel_exp_forda``: Figs. 1a, 4, 9 -- FordA test series with the attention density rescaled to the series'
  maximum, for continuous softmax and kernel sparsemax, from the same stored samples of ``kernel-forda``.

Nothing here trains: a missing record is one line naming the ``attnlab run`` command that writes it.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from attnlab.experiment import results_root
from attnlab.results import folder_records
from attnlab.paper_figures.style import save, size, tight_layout, wrap

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
    load = lambda cfg: folder_records(root / cfg)  # noqa: E731
    for group in (("full", "full-es"), ("cpu", "cpu-small", "quick")):
        best: tuple[list, str | None] = ([], None)
        for cfg in group:
            recs = load(cfg)
            if len(recs) > len(best[0]):
                best = (recs, cfg)
        if best[1] is not None:
            return best
    return [], None


def _accuracies(recs) -> tuple[dict, set, str | None]:
    """Per (setting, model), our test accuracies (one per seed) by the rule of `attnlab results`
    (attnlab.results.usable_values: the converged runs', or every run's where none converged), the
    (setting, model) pairs of which no run converged, and the substitute note if any."""
    from attnlab.results import group_runs, usable_values

    groups, _, subst, _ = group_runs(recs)
    vals, unconverged = {}, set()
    for (_, setting, model, metric, _), group in groups.items():
        if metric == "accuracy":
            vals[(setting, model)], ok = usable_values(group)
            if not ok:
                unconverged.add((setting, model))
    return vals, unconverged, next((v for v in subst.values() if v), None)


def _results_panel(ax, exp, title, PAPER_NUMBERS):
    """One table: per model and setting, our seeds (dots where n < 5) or mean ± 95% t-CI (n >= 5),
    and the paper's number as a black tick -- unless our data are a substitute, whose accuracies
    are not comparable with the paper's: then the paper's range is named in the title instead."""
    from attnlab.results import ci95

    recs, cfg = _records(exp)
    vals, unconverged, sub = _accuracies(recs)
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
        kinds = set()                                   # what this setting draws: means with CIs, single seeds
        for x, m in zip(xs, models):
            v = vals.get((s, m), [])
            if v:
                kinds.add("mean" if len(v) >= 5 else "each")
            if len(v) >= 5:
                ax.errorbar([x], [np.mean(v)], yerr=[ci95(v)], fmt="o", ms=2.5, capsize=1.5, elinewidth=0.8,
                            color=color)
            elif v:
                ax.plot([x] * len(v), v, "o", ms=2.5, mfc="none", mew=0.7, color=color)
            if v and (s, m) in unconverged:             # no run judged converged: crossed
                ax.plot([x], [np.mean(v)], "x", ms=4, mew=0.8, color="k", zorder=4)
            shown += v
        # a legend entry for each kind drawn (the hollow seeds of a model with fewer than 5 stood unexplained beside
        # another model's mean)
        if "mean" in kinds:
            ax.plot([], [], "o", ms=2.5, color=color, label=f"ours, {s}: mean ± 95% CI (n ≤ {n})")
        if "each" in kinds:
            m_each = max(len(vals[(s, m)]) for m in models if 0 < len(vals.get((s, m), [])) < 5)
            ax.plot([], [], "o", ms=2.5, color=color, mfc="none", label=f"ours, {s}: each seed (n ≤ {m_each})")
        if any(k[0] == s for k in unconverged):
            ax.plot([], [], "x", ms=4, mew=0.8, color="k", label=f"{s}: no run judged converged")
        if not sub:
            paper = [PAPER_NUMBERS.get((exp, s, m, "accuracy"), np.nan) for m in models]
            ax.plot(xs, paper, "k_", ms=6, mew=1.2, label="paper" if j == 0 else None)
            shown += [v for v in paper if not np.isnan(v)]
    if shown:       # zoom on what is drawn (a 2-seed t-interval can span tens of points)
        ax.set_ylim(max(0, min(shown) - 3), min(100.5, max(shown) + 3))
    ax.set_xticks(np.arange(len(models)))
    ax.set_xticklabels([m.replace(" (Transformer)", "") for m in models], rotation=35, ha="right", fontsize=6)
    ax.set_ylabel("test accuracy (%)")
    if not recs:
        note = "no records yet"
    else:
        note = f"ours: config {cfg}"
    if sub:
        pv = [v for (e, s, m, met), v in PAPER_NUMBERS.items() if e == exp and met == "accuracy"]
        note += ", SUBSTITUTE data" + (f"\n(paper: {min(pv):.0f}–{max(pv):.0f} % on its data;\nnot comparable)"
                                       if pv else "")
    ax.set_title(f"{title}\n{note}", fontsize=7)
    ax.grid(axis="y")
    ax.legend(loc="best", fontsize=5.5)


def render_results(outdir: Path) -> list[Path]:
    """Tables 1-4 and 9: the two tables on the paper's data in the top row (with the paper's numbers),
    the three on substitute data below (our accuracies only, on their own scale)."""
    from attnlab.experiments.paper_numbers.kernel import PAPER_NUMBERS

    plt = _plt()
    fig = plt.figure(figsize=size(2, 6.6))
    grid = fig.add_gridspec(2, 6)
    slots = [grid[0, 0:3], grid[0, 3:6], grid[1, 0:2], grid[1, 2:4], grid[1, 4:6]]
    for slot, (exp, title) in zip(slots, EXPERIMENTS):
        _results_panel(fig.add_subplot(slot), exp, title, PAPER_NUMBERS)
    fig.suptitle("Kernel multimodal attention, test accuracy: ours beside the paper's tables")
    tight_layout(fig)
    return save(fig, outdir, "kernel_exp_results.png")


def _sampled(experiment: str, models: tuple[str, ...], configs: tuple[str, ...], command: str):
    """Per model, the lowest-seed record of the first config in `configs` that holds a stored attention
    sample (``extra.attention_sample``, written by the runner) for every model in `models`."""
    root = results_root(read=True) / experiment
    for cfg in configs:
        found = {}
        for m in models:
            recs = []
            for r in folder_records(root / cfg, f"*{m}-seed*.json"):
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


def _seed_samples(experiment: str, model: str, cfg: str) -> list[dict]:
    """Every record of `model` in `cfg` that holds a stored attention sample, by seed."""
    root = results_root(read=True) / experiment / cfg
    recs = [r for r in folder_records(root, f"*{model}-seed*.json")
            if str(r.get("tag", "")).endswith(model) and "attention_sample" in r.get("extra", {})]
    return sorted(recs, key=lambda r: r["seed"])


def _aligned_cdf(sample: dict, lam, head: int, u: np.ndarray) -> np.ndarray:
    """Per stored test curve, the attention mass of `head` on [0, g_i^{-1}(u)]: the learned density's
    cumulative mass on the model's grid, read in aligned time u = g_i(t) (linear between the grid's
    nodes).  The oracle of Lemma 4.2 puts its mass uniformly on aligned [0, 1/2] for the class-1 head:
    min(2u, 1)."""
    from scipy.integrate import cumulative_trapezoid

    from attnlab.experiments.kernel.common import warp

    grid = np.asarray(sample["grid"], float)
    out = []
    for b, i in enumerate(sample["rows"]):
        cdf = cumulative_trapezoid(np.asarray(sample["density"], float)[b, head], grid, initial=0.0)
        out.append(np.interp(u, warp(grid, lam[i]), cdf))
    return np.array(out)


@functools.lru_cache(maxsize=64)
def _generated(n: int, length: int, lam_max: float, seed: int, rows: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(X[rows], lam) of the generator for `seed` (the models of a seed share it: drawn once; read-only)."""
    from attnlab.experiments.kernel.common import time_warping_data

    X, _, _, lam = time_warping_data(n, length, lam_max, seed=seed)
    X = X[list(rows)]
    X.flags.writeable = lam.flags.writeable = False
    return X, lam


def _warps(cv: dict, sample: dict, seed: int) -> np.ndarray:
    """The warps lambda_i of the generator for `seed` (deterministic, no training), after checking that
    its first test curves are the ones the record stored."""
    X, lam = _generated(int(cv["n"]), int(cv["length"]), float(cv["lam_max"]), int(seed),
                        tuple(int(i) for i in sample["rows"]))
    stored = np.asarray(sample["input"], float)
    if np.abs(X - stored).max() > 1e-4:
        raise ValueError(f"the stored test curves of seed {seed} are not the generator's (config {cv})")
    return lam


def render_time_warping(outdir: Path) -> list[Path]:
    """Three rows.  (1) For three test curves of the lowest seed, the class-1 head's learned density of
    each model beside the oracle individualised density p_i1(t) = 2 1[g_i(t) < 1/2] g_i'(t) (grey);
    (2) the observed curves X_i(t) on their own axes (grey: where the oracle puts its mass);
    (3) over every seed with stored densities, the attention mass each head puts on aligned time
    [0, u] (u = g_i(t), the time of the unwarped process), where the oracle is min(2u, 1) for the
    class-1 head and max(0, 2u - 1) for the class-2 head: mean over seeds (each seed: the mean of its
    stored test curves), band from the lowest to the highest seed."""
    from attnlab.experiments.kernel.common import warp
    from attnlab.results import ci95, row_converged, usable_values

    recs, cfg = _sampled("kernel-time-warping", TW_KINDS, ("full", "cpu", "quick"),
                         "attnlab run kernel-time-warping --config cpu --models " + ",".join(TW_KINDS)
                         + " --seed 0 --force")
    first = recs[TW_KINDS[0]]
    cv = first["config_values"]
    sample = first["extra"]["attention_sample"]
    lam = _warps(cv, sample, first["seed"])
    colors = dict(zip(TW_KINDS, ("tab:blue", "tab:orange", "tab:green")))
    every = {k: _seed_samples("kernel-time-warping", k, cfg) for k in TW_KINDS}
    plt = _plt()
    show = sample["rows"][:3]
    fig = plt.figure(figsize=size(2, 6.3))
    outer = fig.add_gridspec(2, 1, height_ratios=[2.3, 1.7], hspace=0.32)
    top = outer[0].subgridspec(2, 3, height_ratios=[1.5, 0.8], hspace=0.1, wspace=0.28)
    bottom = outer[1].subgridspec(1, 2, wspace=0.2)
    t = np.linspace(0, 1, 2001)
    for c, i in enumerate(show):
        ax = fig.add_subplot(top[0, c])
        ser = fig.add_subplot(top[1, c], sharex=ax)
        g = warp(t, lam[i])
        oracle = 2 * (g < 0.5) * np.gradient(g, t)
        half = float(t[np.argmax(g >= 0.5)])                 # g(half) = 1/2: the oracle's support ends
        ax.fill_between(t, oracle, color="0.8", lw=0)
        for k in TW_KINDS:
            s = recs[k]["extra"]["attention_sample"]
            ax.plot(s["grid"], np.asarray(s["density"])[i, 0], color=colors[k], lw=0.9)
        ax.set_title(f"test curve {i}: λ = {lam[i]:.1f}, class {sample['label'][i] + 1}", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelbottom=False)
        x = np.asarray(sample["input"][i])
        ser.axvspan(0, half, color="0.9", lw=0)
        ser.plot(np.linspace(0, 1, x.size), x, color="k", lw=0.7)
        ser.set_xlabel("t")
        ser.set_xlim(0, 1)
        if c == 0:
            ax.set_ylabel("class-1 head\ndensity")
            ser.set_ylabel("observed\ncurve $X_i(t)$")
    u = np.linspace(0, 1, 401)
    for head in (0, 1):
        ax = fig.add_subplot(bottom[0, head])
        ax.plot(u, np.clip(2 * u - head, 0, 1), color="0.5", lw=2.5, alpha=0.5)
        for k in TW_KINDS:
            per_seed = []
            for r in every[k]:
                s = r["extra"]["attention_sample"]
                per_seed.append(_aligned_cdf(s, _warps(r["config_values"], s, r["seed"]), head, u).mean(0))
            per_seed = np.array(per_seed)
            ax.fill_between(u, per_seed.min(0), per_seed.max(0), color=colors[k], alpha=0.2, lw=0)
            ax.plot(u, per_seed.mean(0), color=colors[k], lw=1.0)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.axvline(0.5, color="0.6", lw=0.5, ls=":")
        ax.set_xlabel("aligned time u = g_i(t)")
        if head == 0:
            ax.set_ylabel("attention mass\non aligned [0, u]")
        ax.set_title(f"class-{head + 1} head, every seed ({min(len(v) for v in every.values())}"
                     f"{'' if len({len(v) for v in every.values()}) == 1 else '+'} seeds × {len(sample['rows'])} test curves)",
                     fontsize=7)
        ax.grid(alpha=0.3)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color="0.8", label="oracle density $p_{i1}$ (Lemma 4.2)"),
               Line2D([], [], color="0.5", lw=2.5, alpha=0.5,
                      label="oracle mass: min(2u, 1) (class 1), max(0, 2u − 1) (class 2)")]
    for k in TW_KINDS:
        # the seeds' accuracy by the rule of `attnlab results`: the converged runs, or every run where none
        runs = {True: [], False: []}
        for r in every[k]:
            row = next(m for m in r["metrics"] if m["metric"] == "accuracy")
            runs[row_converged(r, row)].append(row["value"])
        acc, ok = usable_values(runs)
        which = (f"{len(acc)} of {len(every[k])} seeds converged" if ok else
                 f"{len(acc)} seeds, none judged converged")
        note = " (a Gaussian on R: mass outside [0, 1])" if k == "cts_softmax" else ""
        ci = ci95(acc)
        handles.append(Line2D([], [], color=colors[k], lw=1.0,
                              label=f"{k.replace('_', ' ')}{note}: test accuracy seed {first['seed']} "
                                    f"{_accuracy(recs[k]):.1f}%, {which}: {np.mean(acc):.1f}"
                                    + (f" ± {ci:.1f}%" if ci is not None else "%")))
    handles.append(Patch(color="0.5", alpha=0.25, label="band: lowest to highest seed (each seed: the mean over its test curves)"))
    fig.legend(handles=handles, loc="lower center", ncol=1, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(wrap(f"Time warping (App. B.3), {cfg} config: learned densities vs the oracle individualised "
                      f"density; top rows seed {first['seed']}, bottom row every seed", fig.get_figwidth(), 9))
    fig.subplots_adjust(left=0.1, right=0.98, top=0.895, bottom=0.22)
    return save(fig, outdir, "kernel_exp_time_warping.png")


FORDA_KINDS = ("cts_softmax", "kernel_sparsemax")


def render_forda(outdir: Path) -> list[Path]:
    recs, cfg = _sampled("kernel-forda", FORDA_KINDS, ("full-es", "full", "cpu-small", "quick"),
                         "attnlab run kernel-forda --config full-es --models " + ",".join(FORDA_KINDS)
                         + " --seed 0")
    plt = _plt()
    rows = recs[FORDA_KINDS[0]]["extra"]["attention_sample"]["rows"]
    fig, axes = plt.subplots(len(FORDA_KINDS), len(rows), figsize=size(2, 1.45 * len(FORDA_KINDS) + 0.9),
                             squeeze=False, sharex=True)
    for a, m in enumerate(FORDA_KINDS):
        s = recs[m]["extra"]["attention_sample"]
        p = np.asarray(s["density"])
        for b, i in enumerate(rows):
            x = np.asarray(s["input"][i])
            ax = axes[a, b]
            ax.plot(x, color="tab:blue", lw=0.6, label="series")
            ax.plot(np.linspace(0, x.size - 1, p.shape[1]), p[b] / p[b].max() * x.max(), color="tab:red", lw=0.9,
                    label="rescaled attention")
            if a == 0:
                ax.set_title(f"test series {i}")
            if a == len(FORDA_KINDS) - 1:
                ax.set_xlabel("time index")
        axes[a, 0].set_ylabel(f"{m.replace('_', ' ')}\n(test acc {_accuracy(recs[m]):.1f}%)")
    seed = recs[FORDA_KINDS[0]]["seed"]
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"FordA: original series vs rescaled attention density (Figs. 1a, 4, 9; {cfg} config, "
                 f"seed {seed})")
    tight_layout(fig, rect=(0, 0.22 / fig.get_figheight(), 1, 1))
    return save(fig, outdir, "kernel_exp_forda.png")


FIGURES = {"kernel_exp_results": render_results, "kernel_exp_time_warping": render_time_warping,
           "kernel_exp_forda": render_forda}
FROM_RECORDS = tuple(FIGURES)      # (drawn from records: a report of other records draws them from those)
