"""Theory figures of the bidir paper (Bidirectional Attention as a Mixture of Continuous Word Experts).

- ``toy_scatter`` (bidir_toy_scatter.png): the App. I toy corpus (Sec. 4.2).  Learned w_i^T c_j of
  CBOW (full softmax) against Prop 9's target M_ij = log(p(w_i,c_j)/p(c_j)) + log|V|, and of the
  Eq. (1) attention objective against Prop 14's Eq. (2) and against N_ij; one dot per (i, j), from the
  committed records of `attnlab run bidir-toy-corpus` (seed 0, p = 100; when no record is there, a
  short p = 30 training is run instead and the title says so).  The paper has no figures.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

RECORD = Path("results") / "bidir-toy-corpus" / "full" / "seed0.json"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _data():
    from experiments.bidir import toy_corpus as tc

    root = Path(__file__).resolve().parents[1]
    rec_path = root / RECORD
    if rec_path.exists():
        rec = json.loads(rec_path.read_text(encoding="utf-8"))
        dims = [int(d) for d in rec["extra"]["per_dim"]]
        dim = 100 if 100 in dims else dims[0]
        return tc.record_targets(rec, dim), f"record {RECORD.as_posix()}, seed 0, p = {dim}"
    corpus = tc.sample_corpus(tc.N_SENTENCES, np.random.default_rng(0))
    r = tc.run_dimension(corpus, 30, 0, 200, 0.1)
    d = dict(sim_cbow=r["cbow_sim"], sim_attention=r["attn_sim"], R=r["prop9_R"], M=r["prop9_M"],
             eq2=r["prop14_target"], N=r["N"], summary=r)
    return d, "no record found: fresh run, seed 0, p = 30, 200 L-BFGS iterations"


def render_toy_scatter(outdir: Path) -> list[Path]:
    from scipy.stats import pearsonr, spearmanr

    plt = _plt()
    d, source = _data()
    panels = [
        (d["sim_cbow"], d["M"], "CBOW", r"Prop 9 target $M_{ij}=\log\frac{p(w_i,c_j)}{p(c_j)}+\log|V|$"),
        (d["sim_attention"], d["eq2"], "attention, Eq. (1)", r"Prop 14 target, Eq. (2)"),
        (d["sim_attention"], d["N"], "attention, Eq. (1)",
         r"$N_{ij}=\log\frac{\bar p(w_i,c_j)}{\bar p(c_j)}+\log|V|$"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    for ax, (sim, tgt, model, lab) in zip(axes, panels):
        s, t = np.asarray(sim).ravel(), np.asarray(tgt).ravel()
        keep = np.isfinite(t)
        zero = ~keep
        ax.scatter(t[keep], s[keep], s=14, alpha=0.7, color="tab:blue", label="cells with p > 0")
        rs = spearmanr(s[keep], t[keep]).statistic
        rp = pearsonr(s[keep], t[keep]).statistic
        ax.set_xlabel(lab)
        ax.set_ylabel(r"learned $w_i^\top c_j$" + f" ({model})")
        txt = f"Spearman {rs:.3f}\nPearson {rp:.3f}\n{int(keep.sum())} cells"
        if zero.any():
            txt += f" ({int(zero.sum())} zero-probability cells omitted)"
        ax.text(0.03, 0.97, txt, transform=ax.transAxes, va="top", fontsize=9,
                bbox=dict(boxstyle="round", fc="white", alpha=0.8))
        ax.grid(alpha=0.3)
    fig.suptitle("App. I toy corpus (|V| = 12, 10,000 sentences of length 5): learned similarities vs the "
                 f"factorization targets\n({source})", fontsize=11)
    fig.tight_layout()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / "bidir_toy_scatter.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


FIGURES = {"toy_scatter": render_toy_scatter}
