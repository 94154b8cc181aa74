"""Figures of the bidirectional-attention paper's experiments (the paper itself has no figures),
drawn from our results records (``results/bidir-*/``; run ``attnlab run bidir-tabular-sim`` etc. first).

- ``table1``: Table 1 as bars -- test accuracy and MSE of LR, RF, GB, MLP, ATN per setting (n_c, noise,
  corr); ours (mean, 95% t-CI over seeds) under the authors' pooled bins and the leakage-free
  train-only bins, the paper's numbers as black ticks.
- ``table2``: Table 2 (auto-mpg origin split) the same way.
The config (full / reduced / quick) of the records used is written in each title.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from attnlab.experiment import results_root
from attnlab.results import folder_records
from attnlab.paper_figures.style import save, size, tight_layout, wrap

MODELS1 = ("LR", "RF", "GB", "MLP", "ATN")
YLABEL = {"acc": "test accuracy (fraction)", "mse": "test MSE (squared class-index units)"}


def _records(experiment: str) -> tuple[list[dict], str]:
    root = results_root(read=True) / experiment
    for cfg in ("full", "reduced", "quick"):
        recs = folder_records(root / cfg)
        if recs:
            return recs, cfg
    raise FileNotFoundError(f"no records under {root}; run `attnlab run {experiment}` first")


def _stats(recs: list[dict]) -> dict:
    """{(setting, model, metric): (mean, 95% CI half-width, seeds, converged)} by the rule of `attnlab
    results` (attnlab.results.summarize): the converged runs only, or, where none converged, every run
    (converged False, drawn hollow)."""
    from attnlab.results import summarize

    return {(r["setting"], r["model"], r["metric"]): (r["ours_mean"], r["ours_ci95"] or 0.0, r["n_seeds"],
                                                      r["converged"])
            for r in summarize("bidir", None, records=recs) if r["n_seeds"]}


def _seeds(st: dict, models) -> str:
    """'n seeds' when every model has the same number of seeds, else the count per model (Table 1 runs
    the cheap ATN and LR for more seeds than the grid-searched baselines): the most of any setting."""
    n = {m: max((v[2] for k, v in st.items() if k[1] == m), default=0) for m in models}
    have = {m: k for m, k in n.items() if k}
    if len(set(have.values())) == 1:
        return f"{next(iter(have.values()))} seed(s)"
    return "seeds " + ", ".join(f"{m} {k}" for m, k in have.items())


def _missing(st: dict, models) -> str:
    """The models drawn with the paper's number only (no records of ours)."""
    gone = [m for m in models if not any(k[1] == m for k in st)]
    return f"\n(no records of ours, the paper's number only: {', '.join(gone)})" if gone else ""


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _hollow(ax, xs, ys, color, ms):
    """The points of `ys` (tuples of :func:`_stats`) none of whose runs converged, drawn hollow over
    their filled marker."""
    pts = [(x, y[0]) for x, y in zip(xs, ys) if y[3] is False]
    if pts:
        ax.plot(*zip(*pts), ls="none", marker="o", ms=ms, mfc="white", mec=color, mew=0.6, zorder=3)


def _bars(ax, settings, models, st, metric, paper, exp):
    w = 0.8 / len(models)
    colors = {"pooled": "tab:blue", "train-only": "tab:orange"}
    x = np.arange(len(settings))
    for i, model in enumerate(models):
        for prot, suffix, off in (("pooled", "", -w / 4), ("train-only", " train-only bins", w / 4)):
            key = lambda s: (s + suffix if exp == "bidir-tabular-sim" else
                             ("origin split" + suffix), model, metric)
            ys = [st.get(key(s), (np.nan, 0, 0, True)) for s in settings]
            ax.errorbar(x + i * w - 0.4 + w / 2 + off, [y[0] for y in ys], yerr=[y[1] for y in ys],
                        fmt="o", ms=1.6, elinewidth=0.6, capsize=1, color=colors[prot],
                        label=f"ours, {prot} bins" if i == 0 else None)
            _hollow(ax, x + i * w - 0.4 + w / 2 + off, ys, colors[prot], 1.6)
        py = [paper.get((exp, s if exp == "bidir-tabular-sim" else "origin split", model, metric), np.nan)
              for s in settings]
        ax.scatter(x + i * w - 0.4 + w / 2, py, marker="_", s=30, lw=1.0, color="k",
                   label="paper" if i == 0 else None, zorder=3)
        for xi in x:
            ax.text(xi + i * w - 0.4 + w / 2, 0.01, model, rotation=90, fontsize=4.5, ha="center", va="bottom",
                    transform=ax.get_xaxis_transform())
    ax.set_xticks(x)
    ax.set_xticklabels(settings, fontsize=6)
    ax.set_xlim(-0.5, len(settings) - 0.5)
    for xi in x[1:]:
        ax.axvline(xi - 0.5, color="0.85", lw=0.5, zorder=0)
    ax.set_ylabel(YLABEL[metric])


def render_table1(outdir: Path) -> list[Path]:
    from attnlab.experiments.bidir.tabular_sim import SETTINGS, setting_label
    from attnlab.experiments.paper_numbers.bidir import PAPER_NUMBERS

    recs, cfg = _records("bidir-tabular-sim")
    st = _stats(recs)
    settings = [setting_label(*s) for s in SETTINGS if (setting_label(*s), "ATN", "acc") in st]
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=size(2, 5.2))
    for ax, metric in zip(axes, ("acc", "mse")):
        _bars(ax, settings, MODELS1, st, metric, PAPER_NUMBERS, "bidir-tabular-sim")
    axes[0].legend(ncol=3, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    axes[1].set_xlabel("setting (n_c, noise, corr)")
    fig.suptitle(wrap(f"Table 1 (n_c, noise, corr): models LR, RF, GB, MLP, ATN left to right in each group; "
                      f"ours = mean ± 95% CI over the converged runs of {_seeds(st, MODELS1)} (hollow: no run judged converged), "
                      f"config '{cfg}'{_missing(st, MODELS1)}",
                      fig.get_figwidth(), 9))
    tight_layout(fig)
    return save(fig, outdir, "bidir_exp_table1.png")


def render_table2(outdir: Path) -> list[Path]:
    from attnlab.experiments.paper_numbers.bidir import PAPER_NUMBERS, TABLE2_MODELS

    recs, cfg = _records("bidir-auto-mpg")
    st = _stats(recs)
    models = [m for m in TABLE2_MODELS if (("origin split", m, "acc") in st)
              or ("bidir-auto-mpg", "origin split", m, "acc") in PAPER_NUMBERS]
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=size(2, 2.9))
    for ax, metric in zip(axes, ("acc", "mse")):
        x = np.arange(len(models))
        for prot, suffix, off, c in (("pooled", "", -0.15, "tab:blue"), ("train-only", " train-only bins", 0.15, "tab:orange")):
            ys = [st.get(("origin split" + suffix, m, metric), (np.nan, 0, 0, True)) for m in models]
            ax.errorbar(x + off, [y[0] for y in ys], yerr=[y[1] for y in ys], fmt="o", ms=2.5, color=c,
                        label=f"ours, {prot} bins")
            _hollow(ax, x + off, ys, c, 2.5)
        ax.scatter(x, [PAPER_NUMBERS.get(("bidir-auto-mpg", "origin split", m, metric), np.nan) for m in models],
                   marker="_", s=60, lw=1.2, color="k", label="paper (seed 42)", zorder=3)
        ax.set_xticks(x)
        ax.set_xticklabels(models, rotation=30, ha="right", fontsize=6)
        ax.set_ylabel(YLABEL[metric])
        ax.grid(axis="y")
    axes[0].legend()
    fig.suptitle(wrap(f"Table 2, auto-mpg origin split (245 USA train / 140 test): ours = mean ± 95% CI over "
                      f"the converged runs of {_seeds(st, models)} (hollow: no run judged converged), config '{cfg}'"
                      f"{_missing(st, models)}", fig.get_figwidth(), 9))
    tight_layout(fig)
    return save(fig, outdir, "bidir_exp_table2.png")


FIGURES = {"table1": render_table1, "table2": render_table2}
FROM_RECORDS = tuple(FIGURES)      # (drawn from records: a report of other records draws them from those)
