"""Figures of the EFA paper's experiments, drawn from our results records (``results/efa-*/``;
run ``attnlab run efa-instacart`` / ``efa-temperature`` first).

- ``exp_fig3``: Figure 3, Instacart unidirectional EFA attention weights (head-averaged; rows =
  masked target position i, columns = context items, causal) for the two test baskets of the paper,
  one heat map per layer, colour clipped at 0.25 as in the paper.
- ``exp_fig4``: Figure 4, per-item query, key and value embeddings of layer 1 (W^Q β + b_Q, …),
  three panels per head (63 named items x 16 dims), one colour scale.
- ``exp_fig6``: Figure 6, test MSE of FM(k) against k (mean and 95% t-CI over seeds) with the EFA
  variants as horizontal lines on a log axis (top), and the EFA variants on a linear axis of their
  own with their 95% CIs (bottom; one colour per variant in every panel); the paper's values beside
  ours when we ran the paper's data, and the substitute labelled as such otherwise.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from attnlab.experiment import results_root
from attnlab.results import folder_records
from attnlab.paper_figures.style import save, size, tight_layout


def _records(experiment: str, configs=("full", "quick"), keep=lambda r: True) -> tuple[list[dict], str]:
    """The records (those `keep` accepts) of the first config in `configs` that has any, and its name."""
    root = results_root(read=True) / experiment
    for cfg in configs:
        recs = [r for r in folder_records(root / cfg) if keep(r)]
        if recs:
            return recs, cfg
    raise FileNotFoundError(f"no records under {root}; run `attnlab run {experiment}` first")


# Instacart: the paper's 1,000-epoch schedule, else the converged early-stopped one, else quick
INSTACART_CONFIGS = ("full", "full-es", "quick")


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _uni_efa() -> tuple[dict, str]:
    """The lowest-seed unidirectional EFA record with Figure 3 data, from the first config of
    INSTACART_CONFIGS that has one (a config may hold other models' records only), and its config."""
    try:
        rs, cfg = _records("efa-instacart", INSTACART_CONFIGS,
                           keep=lambda r: r.get("tag") == "unidirectional-EFA" and "figure3" in r.get("extra", {}))
    except FileNotFoundError:
        raise FileNotFoundError("no unidirectional EFA record with Figure 3 data; run "
                                "`attnlab run efa-instacart --settings unidirectional --models EFA`") from None
    return min(rs, key=lambda r: r["seed"]), cfg


def fig3(outdir: Path) -> list[Path]:
    plt = _plt()
    r, cfg = _uni_efa()
    baskets = r["extra"]["figure3"]
    keys = sorted(baskets)
    fig, axes = plt.subplots(len(keys), 2, figsize=size(2, 3.6 * len(keys) + 0.3), squeeze=False)
    for row, key in enumerate(keys):
        b = baskets[key]
        names = [n.replace("Organic", "Org.") for n in b["items"]]
        for layer, mat in enumerate(b["attention"]):
            ax = axes[row, layer]
            A = np.array(mat)
            im = ax.imshow(np.minimum(A, 0.25), cmap="viridis", vmin=0, vmax=0.25)
            ax.set_xticks(range(len(names)), names, rotation=60, ha="right", rotation_mode="anchor", fontsize=5.5)
            # the two layers of a basket share its items: names on the left map only
            ax.set_yticks(range(len(names)), names if layer == 0 else [], fontsize=5.5)
            ax.set_title(f"basket {key}, layer {layer + 1}")
            ax.set_xlabel("context item j")
            if layer == 0:
                ax.set_ylabel("masked target i")
    fig.suptitle(f"Instacart, unidirectional EFA: attention weights averaged over 2 heads "
                 f"(seed {r['seed']}, {cfg} config)")
    tight_layout(fig, rect=(0, 0, 0.9, 0.98), w_pad=0.5, h_pad=1.5)
    # one colour scale for the four maps, clipped at 0.25 as in the paper
    cax = fig.add_axes([0.91, 0.3, 0.015, 0.4])
    cb = fig.colorbar(im, cax=cax)
    cb.set_ticks([0, 0.05, 0.1, 0.15, 0.2, 0.25])
    cb.set_ticklabels(["0", "0.05", "0.10", "0.15", "0.20", "≥0.25"])
    cb.set_label("attention weight")
    return save(fig, outdir, "efa_exp_fig3.png")


def fig4(outdir: Path) -> list[Path]:
    """Figure 4: per head of layer 1, the per-item query, key and value embeddings W^Q β + b_Q (etc.),
    items named on the rows, one colour scale for every panel."""
    from attnlab.experiments.efa.data import INSTACART_ITEMS

    plt = _plt()
    r, cfg = _uni_efa()
    qkv = r["extra"]["figure4_qkv_layer1"]
    heads = len(qkv["Q"])
    mats = {(h, name): np.array(qkv[name][h]) for h in range(heads) for name in ("Q", "K", "V")}
    lim = max(np.abs(A).max() for A in mats.values())
    n_items, dims = mats[(0, "Q")].shape
    names = list(INSTACART_ITEMS[:n_items]) if len(INSTACART_ITEMS) >= n_items else [str(i + 1) for i in range(n_items)]
    fig, axes = plt.subplots(1, 3 * heads, figsize=size(2, 0.092 * n_items + 1.1), sharey=True)
    for h in range(heads):
        for c, name in enumerate(("Q", "K", "V")):
            ax = axes[3 * h + c]
            im = ax.imshow(mats[(h, name)], aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim,
                           interpolation="nearest")
            ax.set_title(f"head {h + 1}: {name}\n$W^{name}\\beta + b_{name}$", fontsize=7)
            ax.set_xticks([0, dims - 1], [1, dims])
            ax.set_xlabel("dimension", fontsize=6)
    axes[0].set_yticks(range(n_items), names, fontsize=4.5)
    axes[0].tick_params(axis="y", length=1.5, pad=1)
    axes[0].set_ylabel("item")
    fig.subplots_adjust(left=0.21, right=0.99, top=1 - 0.75 / fig.get_figheight(), bottom=0.4 / fig.get_figheight(),
                        wspace=0.12)
    fig.colorbar(im, ax=list(axes), shrink=0.5, pad=0.015, aspect=30, label="embedding value (unitless)")
    fig.suptitle(f"Figure 4, Instacart, unidirectional EFA, layer 1: per-item query, key and value\nembeddings "
                 f"(seed {r['seed']}, {cfg} config)", x=0.55)
    return save(fig, outdir, "efa_exp_fig4.png")


def fig6(outdir: Path) -> list[Path]:
    """Figure 6 in two rows: (top) FM(k) against k with the EFA variants as dashed lines, on a log y
    axis so that both lie on the page (our EFA errors are a fifth of FM's); (bottom) the EFA variants
    on a linear axis of their own, each with its 95% CI (ours) or the paper's single value, where they
    can be told apart.  One colour per EFA variant in every panel."""
    plt = _plt()
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    from attnlab.experiments.paper_numbers.efa import PAPER_NUMBERS
    from attnlab.results import summarize

    recs, cfg = _records("efa-temperature")
    # per setting and model: (mean, 95% CI half-width, seeds, converged) by the rule of `attnlab results`
    # (the converged runs only, or every run where none converged: drawn hollow)
    by = defaultdict(dict)
    subst = {}
    for row in summarize("efa", None, records=recs):
        if row["experiment"] == "efa-temperature" and row["n_seeds"]:
            by[row["setting"]][row["model"]] = (row["ours_mean"], row["ours_ci95"] or 0.0, row["n_seeds"],
                                                row["converged"])
            subst[row["setting"]] = row["substitute"]
    settings = sorted(by)
    panels = []                       # (models, title, paper?, unit); models: {model: (mean, ci, n, converged)}
    for s_ in settings:
        lo, hi = min(v[2] for v in by[s_].values()), max(v[2] for v in by[s_].values())
        fewer = sorted((m for m, v in by[s_].items() if v[2] < hi), key=lambda m: (len(m), m))
        seeds = f"{hi} seeds" + (f" ({', '.join(f'{m}: {by[s_][m][2]}' for m in fewer)})" if lo < hi else "")
        label = f"ours: {s_}" + (" [SUBSTITUTE data: monthly °C]" if subst.get(s_) else " (°F)")
        panels.append((by[s_], f"{label}\n{cfg} config, {seeds}", False, "°C²" if subst.get(s_) else "°F²"))
    if "44 cities, October" not in by:
        paper = {m: (v, 0.0, 1, True) for (e, s_, m, met), v in PAPER_NUMBERS.items()
                 if e == "efa-temperature" and s_ == "44 cities, October"}
        panels.append((paper, "paper (Figure 6 data):\n44 US cities, October daily, °F", True, "°F²"))
    # one colour per EFA variant in every panel, whichever variants have records
    colors = {"EFA(l=1)": "tab:red", "EFA(l=2)": "tab:orange", "EFA(l=4)": "tab:green",
              "EFA(l=4, 1D ahead)": "tab:purple", "EFA(l=4, 2D ahead)": "tab:brown"}
    order = lambda names: sorted(names, key=lambda m: (len(m), m))  # noqa: E731
    n_efa = max(sum(m.startswith("EFA") for m in models) for models, *_ in panels)
    fig, axes = plt.subplots(2, len(panels), figsize=size(2, 2.6 + 0.24 * n_efa + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": [2.3, 0.3 + 0.24 * n_efa]})
    for col, (models, title, paper, unit) in enumerate(panels):
        ax, dots = axes[0, col], axes[1, col]
        ks = sorted(int(m[5:-1]) for m in models if m.startswith("FM(k="))
        efas = order(m for m in models if m.startswith("EFA"))
        if ks:
            stats = [models[f"FM(k={k})"] for k in ks]
            mean = np.array([s[0] for s in stats])
            ci = np.array([s[1] for s in stats])
            ax.errorbar(ks, mean, yerr=ci, color="tab:blue", marker="o", ms=3, capsize=2,
                        label="FM(k) (single run)" if paper else "FM(k) (mean ± 95% CI)")
            # runs whose convergence is unknown or that did not converge: hollow, and said in the legend
            open_ = [i for i, k in enumerate(ks) if not models[f"FM(k={k})"][3]]
            if open_:
                ax.plot([ks[i] for i in open_], mean[open_], ls="none", marker="o", ms=3, mfc="white",
                        mec="tab:blue", zorder=3, label="hollow: no run judged converged")
        for m in efas:
            ax.axhline(models[m][0], color=colors.get(m, "tab:gray"), ls="--", lw=0.9)
        ax.plot([], [], color="0.4", ls="--", lw=0.9, label="EFA variants (below)")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("number of neighbours k")
        ax.set_ylabel(f"test MSE ({unit}, log scale)")
        ax.set_title(title)
        ax.grid(which="major", alpha=0.3)
        if paper:                                                   # clear of the curve and the lines
            ax.legend(loc="upper left")
        else:
            ax.legend(loc="center right", bbox_to_anchor=(1.0, 0.36))
        # the EFA variants on their own linear axis: mean and 95% CI over seeds, or the paper's value
        for i, m in enumerate(efas):
            mu, ci = models[m][:2]
            c = colors.get(m, "tab:gray")
            dots.errorbar([mu], [i], xerr=[ci] if ci else None, color=c, marker="o", ms=3, capsize=2)
            dots.annotate(f"{mu:.3g}" + (f" ± {ci:.2g}" if ci else ""), (mu + ci, i), xytext=(3, 0),
                          textcoords="offset points", va="center", fontsize=6, color=c)
        dots.set_yticks(range(len(efas)), [m.replace("EFA", "EFA ") for m in efas], fontsize=6)
        dots.set_ylim(-0.6, len(efas) - 0.4)
        dots.invert_yaxis()
        lo_x, hi_x = dots.get_xlim()
        dots.set_xlim(lo_x, hi_x + 0.3 * (hi_x - lo_x))             # room for the values
        dots.set_xlabel(f"EFA test MSE ({unit}), " + ("the paper's values" if paper else "mean ± 95% CI"))
        dots.grid(axis="x", alpha=0.3)
    fig.suptitle("Figure 6: FM with k nearest neighbours vs EFA")
    tight_layout(fig, h_pad=0.8)
    return save(fig, outdir, "efa_exp_fig6.png")


FIGURES = {"exp_fig3": fig3, "exp_fig4": fig4, "exp_fig6": fig6}
FROM_RECORDS = tuple(FIGURES)      # (drawn from records: a report of other records draws them from those)
