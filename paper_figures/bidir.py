"""Theory figures of the bidir paper (Bidirectional Attention as a Mixture of Continuous Word Experts).

- ``toy_scatter`` (bidir_toy_scatter.png): the App. I toy corpus (Sec. 4.2).  Learned w_i^T c_j of
  CBOW (full softmax) against Prop 9's target M_ij = log(p(w_i,c_j)/p(c_j)) + log|V|, and of the
  Eq. (1) attention objective against Prop 14's Eq. (2) and against N_ij; one dot per (i, j), from the
  committed record of `attnlab run bidir-toy-corpus` (seed 0, one row per recorded p; without it the
  figure is not drawn and the message names that command).  The paper has no figures.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from attnlab.paper_figures.style import save, size, tight_layout, wrap

RECORD = Path("bidir-toy-corpus") / "full" / "seed0.json"     # under the results folder


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _data() -> tuple[list[tuple[int, dict]], str]:
    from attnlab.experiment import results_root
    from attnlab.experiments.bidir import toy_corpus as tc

    rec_path = results_root(read=True) / RECORD
    if not rec_path.exists():
        raise FileNotFoundError(f"no record {rec_path}; make it with `attnlab run bidir-toy-corpus --seed 0`")
    from attnlab.results import read_records

    recs = read_records([rec_path])             # a record that cannot be used is skipped with a warning
    if not recs:
        raise FileNotFoundError(f"the record {rec_path} cannot be used (see the warning above)")
    rec = recs[0]
    dims = sorted(int(d) for d in rec["extra"]["per_dim"])
    return [(d, tc.record_targets(rec, d)) for d in dims], f"record {RECORD.as_posix()}, seed 0"


def render_toy_scatter(outdir: Path) -> list[Path]:
    from scipy.stats import pearsonr, spearmanr

    plt = _plt()
    rows, source = _data()
    fig, axes = plt.subplots(len(rows), 3, figsize=size(2, 1.95 * len(rows) + 0.7), squeeze=False)
    for r, ((dim, d), axrow) in enumerate(zip(rows, axes)):
        panels = [
            (d["sim_cbow"], d["M"], "CBOW", r"Prop 9 target $M_{ij}=\log\frac{p(w_i,c_j)}{p(c_j)}+\log|V|$"),
            (d["sim_attention"], d["eq2"], "attention, Eq. (1)", r"Prop 14 target, Eq. (2)"),
            (d["sim_attention"], d["N"], "attention, Eq. (1)",
             r"$N_{ij}=\log\frac{\bar p(w_i,c_j)}{\bar p(c_j)}+\log|V|$"),
        ]
        for c, (ax, (sim, tgt, model, lab)) in enumerate(zip(axrow, panels)):
            s, t = np.asarray(sim).ravel(), np.asarray(tgt).ravel()
            keep = np.isfinite(t)
            ax.scatter(t[keep], s[keep], s=3, alpha=0.7, color="tab:blue", lw=0)
            rs = spearmanr(s[keep], t[keep]).statistic
            rp = pearsonr(s[keep], t[keep]).statistic
            if r == len(rows) - 1:
                ax.set_xlabel(lab)
            if r == 0:
                ax.set_title(f"{model} vs " + ("Prop 9's M" if c == 0 else "Prop 14's Eq. (2)" if c == 1 else "N"))
            ax.set_ylabel(r"learned $w_i^\top c_j$" + f" (p = {dim})" if c == 0 else "")
            txt = f"Spearman {rs:.3f}, Pearson {rp:.3f}\n{int(keep.sum())} cells"
            if (~keep).any():
                txt += f" ({int((~keep).sum())} with p = 0 omitted)"
            lb = d["summary"].get("cbow_lbfgs" if model == "CBOW" else "attn_lbfgs", {})
            if "max_abs_grad" in lb:      # how this model's L-BFGS ended (records since the convergence fields)
                txt += (f"\nL-BFGS {'converged' if lb['converged'] else 'NOT converged'}: "
                        f"{lb['iterations']} it., max|grad| {lb['max_abs_grad']:.0e}")
            ax.text(0.03, 0.97, txt, transform=ax.transAxes, va="top", fontsize=5.5,
                    bbox=dict(boxstyle="round,pad=0.25", fc="white", alpha=0.8, lw=0.5))
            if "Eq. (2)" in lab and np.nanmax(np.abs(t[keep])) > 1e3:
                # Eq. (2) divides by Q_j: words the learned gate ignores (gamma ~ 0) get huge targets
                from matplotlib.ticker import FixedLocator, NullLocator

                ax.set_xscale("symlog", linthresh=1.0)
                lo, hi = np.nanmin(t[keep]), np.nanmax(t[keep])
                decades = [10.0 ** e for e in range(6, 31, 6)]      # 0 and the widest of +-1e6, 1e12, ... reached
                neg = [-x for x in decades if -x >= lo * 1.5][-1:]
                ticks = neg + [0.0] + [x for x in decades if x <= hi * 1.5][-1:]
                ax.xaxis.set_major_locator(FixedLocator(ticks))
                ax.xaxis.set_minor_locator(NullLocator())
                ax.text(0.97, 0.03, "symlog x: words with\ntau ~ 0 give huge values", transform=ax.transAxes,
                        ha="right", va="bottom", fontsize=5.5)
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi + 0.35 * (hi - lo))          # room for the text box above the points
            ax.grid(alpha=0.3)
    fig.suptitle(wrap("App. I toy corpus (|V| = 12, 10,000 sentences of length 5): learned similarities vs the "
                      f"factorization targets of Props 9 and 14 ({source}; paper, CBOW: Spearman 0.74-0.77 "
                      "with the ratio, Pearson 0.67-0.71 with M)", fig.get_figwidth(), 9))
    tight_layout(fig)
    return save(fig, outdir, "bidir_toy_scatter.png")


FIGURES = {"toy_scatter": render_toy_scatter}
FROM_RECORDS = ("toy_scatter",)    # (drawn from a record: a report of other records draws it from those)
