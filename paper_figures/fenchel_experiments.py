"""Figures of the Fenchel-dual attention paper's experiments, drawn from our results records
(``results/fenchel-*/``; run ``attnlab run fenchel-deviation`` / ``fenchel-ot-vit`` first).

- Fig 4 (a: BERT, b: T5): per layer, the distribution over queries of ||lambda* - alpha z|| / ||lambda*||
  averaged over heads; red line = our mean, black dashed = the paper's mean (its Fig 4).
- Figs 5-8: the same per head (BERT; T5 encoder self-, decoder self-, cross-attention).
- Output-level errors (spec S8): per layer, the paper's metric beside ||h(lambda*) - h(alpha z)|| and the
  total variation between p(lambda*) and p(alpha z).
- A real pretrained encoder (all-MiniLM-L6-v2, ``--model minilm``) beside the paper's bert-base and our
  BERT-like substitute, and its output-level errors.
- OT-ViT vs ViT (Tables 1-2): our test accuracies (mean, 95% t-CI over seeds) and the paper's.

Our deviation models are SUBSTITUTES (small BERT-/T5-like models trained offline), titled as such.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from attnlab.experiment import results_root


def _records(experiment: str, config: str | None = None) -> tuple[list[dict], str]:
    root = results_root() / experiment
    for cfg in ([config] if config else ["full", "quick"]):
        recs = [json.loads(p.read_text()) for p in sorted((root / cfg).glob("*.json"))]
        recs = [r for r in recs if not r.get("tag", "").startswith("hf-")]
        if recs:
            return recs, cfg
    raise FileNotFoundError(f"no records under {root}; run `attnlab run {experiment}` first")


def _plt():
    from attnlab.paper_figures.style import pyplot

    return pyplot()


def _sum_hist(recs, key, setting, head=None):
    tot = None
    for r in recs:
        h = r["extra"][key][setting] if head is None else r["extra"][key][setting][head]
        tot = np.array(h, float) if tot is None else tot + np.array(h, float)
    return tot


def _means(recs, setting, model, metric="rel_dev_mean"):
    v = [m["value"] for r in recs for m in r["metrics"]
         if m["setting"] == setting and m["model"] == model and m["metric"] == metric]
    return float(np.mean(v)) if v else None


def _hist_panel(ax, counts, bins, mean, paper=None, ymax=1.0):
    width = bins[1] - bins[0]
    c = counts[:-1] / max(counts.sum(), 1)
    ax.bar(bins[:-1], c, width=width, align="edge", color="tab:blue", alpha=0.8)
    if mean is not None:
        ax.axvline(mean, color="red", lw=1.5)
    if paper is not None:
        ax.axvline(paper, color="black", ls="--", lw=1)
    ax.set_xlim(0, 0.5)
    ax.set_ylim(0, ymax)
    ax.tick_params(labelsize=6)
    if counts[-1] > 0:
        ax.text(0.98, 0.9, f">0.5: {counts[-1] / counts.sum():.0%}", ha="right", fontsize=6, transform=ax.transAxes)


def _settings(recs, model):
    s = [m["setting"] for m in recs[0]["metrics"] if m["model"] == model and m["metric"] == "rel_dev_mean"]
    return s


def _layers_of(settings, prefix):
    return [s for s in settings if s.startswith(prefix)]


def _suptitle(fig, text, recs, cfg):
    if recs[0].get("tag", "").startswith("hf-"):
        note = f"\npretrained weights ({recs[0]['config_values'].get('weights')}); text: movie-review sentences"
    else:
        note = "\nSUBSTITUTE models (not bert-base/t5-small)" if recs[0].get("substitute") else ""
    fig.suptitle(text + f"\nours: {len(recs)} seeds, config '{cfg}'" + note, fontsize=8)


def _fig4_layers(outdir, recs, cfg, model, title, fname) -> list[Path]:
    from attnlab.experiments.paper_numbers.fenchel import FIG4_BERT

    plt = _plt()
    bins = np.array(recs[0]["extra"]["bins"])
    layers = _settings(recs, model)
    fig, axes = plt.subplots(1, len(layers), figsize=(2.2 * len(layers), 2.3), squeeze=False)
    for j, s in enumerate(layers):
        L = int(s.replace("layer", ""))
        ax = axes[0, j]
        _hist_panel(ax, _sum_hist(recs, "hist_layer", s), bins, _means(recs, s, model),
                    FIG4_BERT[L - 1] if L <= 12 else None)
        ax.set_title(f"Lay. {L}  ours {_means(recs, s, model):.3f}\npaper {FIG4_BERT[L - 1]:.3f}", fontsize=7)
        ax.set_xlabel("‖λ*−αz‖/‖λ*‖", fontsize=7)
    _suptitle(fig, title, recs, cfg)
    fig.tight_layout()
    return _save(fig, outdir, fname)


def fig4_bert(outdir: Path) -> list[Path]:
    recs, cfg = _records("fenchel-deviation")
    return _fig4_layers(outdir, recs, cfg, "bert", "Fig 4a: BERT-like, head-averaged ‖λ*−αz‖/‖λ*‖ per layer "
                        "(red: our mean; dashed: paper's)", "fenchel_exp_fig4_bert.png")


def fig4_minilm(outdir: Path) -> list[Path]:
    return _fig4_layers(outdir, _minilm_records(), "full", MINILM,
                        "Fig 4a on a real pretrained encoder: all-MiniLM-L6-v2, head-averaged ‖λ*−αz‖/‖λ*‖ per layer\n"
                        "(red: our mean; dashed: the paper's bert-base at the same layer index)",
                        "fenchel_exp_fig4_minilm.png")


def fig4_t5(outdir: Path) -> list[Path]:
    from attnlab.experiments.paper_numbers.fenchel import FIG4_T5

    plt = _plt()
    recs, cfg = _records("fenchel-deviation")
    bins = np.array(recs[0]["extra"]["bins"])
    sets = _settings(recs, "t5")
    rows = [("enc-self", "Enc self"), ("dec-self", "Dec self"), ("cross", "Cross Attn")]
    n = max(len(_layers_of(sets, r)) for r, _ in rows)
    fig, axes = plt.subplots(3, n, figsize=(2.3 * n, 6.2), squeeze=False)
    for i, (pre, label) in enumerate(rows):
        for j, s in enumerate(_layers_of(sets, pre)):
            L = int(s.split("layer")[1])
            ax = axes[i, j]
            paper = FIG4_T5[pre][L - 1] if L <= 6 else None
            m = _means(recs, s, "t5")
            _hist_panel(ax, _sum_hist(recs, "hist_layer", s), bins, m, paper)
            ax.set_title(f"{label}, Layer {L}\nours {m:.3f}  paper {paper:.3f}", fontsize=7)
    _suptitle(fig, "Fig 4b: T5-like, head-averaged ‖λ*−αz‖/‖λ*‖ per layer\n(red: our mean; dashed: paper's)", recs, cfg)
    fig.tight_layout()
    return _save(fig, outdir, "fenchel_exp_fig4_t5.png")


def _per_head(outdir, model, prefix, title, fname, ymax, recs=None, cfg="full"):
    from attnlab.experiments.paper_numbers.fenchel import PER_HEAD

    plt = _plt()
    if recs is None:
        recs, cfg = _records("fenchel-deviation")
    bins = np.array(recs[0]["extra"]["bins"])
    sets = [s for s in _settings(recs, model) if s.startswith(prefix)]
    H = len(recs[0]["extra"]["hist_head"][sets[0]])
    fig, axes = plt.subplots(len(sets), H, figsize=(2.0 * H, 1.8 * len(sets)), squeeze=False)
    for i, s in enumerate(sets):
        paper_heads = PER_HEAD.get((model, s))
        for h in range(H):
            ax = axes[i, h]
            m = float(np.mean([r["extra"]["per_head"][s]["rel_dev"][h] for r in recs]))
            _hist_panel(ax, _sum_hist(recs, "hist_head", s, h), bins, m, None, ymax)
            ax.set_title(f"{s.split('/')[-1]} head {h + 1}: {m:.3f}", fontsize=7)
        if paper_heads:
            axes[i, 0].set_ylabel(f"paper heads:\n{np.mean(paper_heads):.3f} avg", fontsize=6)
    _suptitle(fig, title + "\n(per head; red: our mean; our heads are not the paper's heads)", recs, cfg)
    fig.tight_layout()
    return _save(fig, outdir, fname)


def fig5(outdir):
    return _per_head(outdir, "bert", "layer", "Fig 5: BERT-like", "fenchel_exp_fig5_bert_heads.png", 1.0)


def fig5_minilm(outdir):
    return _per_head(outdir, MINILM, "layer", "Fig 5 on a real pretrained encoder: all-MiniLM-L6-v2",
                     "fenchel_exp_fig5_minilm_heads.png", 1.0, recs=_minilm_records())


def fig6(outdir):
    return _per_head(outdir, "t5", "enc-self", "Fig 6: T5-like encoder self-attention", "fenchel_exp_fig6_t5_enc_heads.png", 1.0)


def fig7(outdir):
    return _per_head(outdir, "t5", "dec-self", "Fig 7: T5-like decoder self-attention", "fenchel_exp_fig7_t5_dec_heads.png", 1.0)


def fig8(outdir):
    return _per_head(outdir, "t5", "cross", "Fig 8: T5-like cross-attention", "fenchel_exp_fig8_t5_cross_heads.png", 0.75)


def output_errors(outdir: Path) -> list[Path]:
    """The paper's λ-level metric beside output-level errors and the first-order predictor (spec S8)."""
    plt = _plt()
    recs, cfg = _records("fenchel-deviation")
    groups = [("bert", _settings(recs, "bert")), ("t5", _settings(recs, "t5"))]
    metrics = [("rel_dev_mean", "‖λ*−αz‖/‖λ*‖ (paper)"), ("first_order_mean", "α‖Σz‖/‖z‖ (1st order)"),
               ("tv_mean", "TV(p(λ*), p(αz))"), ("out_err_mean", "‖ĥ(λ*)−ĥ(αz)‖ (template units)")]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1, 2.2]})
    for ax, (model, sets) in zip(axes, groups):
        x = np.arange(len(sets))
        w = 0.8 / len(metrics)
        for k, (met, label) in enumerate(metrics):
            vals = np.array([[m["value"] for m in r["metrics"] if m["setting"] == s and m["model"] == model
                              and m["metric"] == met][0] for s in sets for r in recs]).reshape(len(sets), len(recs))
            ax.bar(x + (k - len(metrics) / 2 + 0.5) * w, vals.mean(1), w, yerr=vals.std(1, ddof=1) if len(recs) > 1 else None,
                   label=label, capsize=1)
        ax.set_xticks(x)
        pmax = [np.mean([m["value"] for r in recs for m in r["metrics"] if m["setting"] == s and m["model"] == model
                         and m["metric"] == "p_max_mean"]) for s in sets]
        ax.set_xticklabels([s.replace("/layer", "\nL").replace("layer", "L") + f"\nmax p={pm:.2f}"
                            for s, pm in zip(sets, pmax)], fontsize=7)
        ax.set_title(f"{model.upper()}-like", fontsize=9)
    axes[1].legend(fontsize=7, loc="upper left", ncol=2)
    _suptitle(fig, "λ-level metric vs output-level errors, per layer (mean ± sd over seeds)", recs, cfg)
    fig.tight_layout()
    return _save(fig, outdir, "fenchel_exp_output_errors.png")


def ot_vit(outdir: Path) -> list[Path]:
    from attnlab.results import ci95
    from attnlab.experiments.paper_numbers.fenchel import PAPER_CI, PAPER_NUMBERS

    plt = _plt()
    recs, cfg = _records("fenchel-ot-vit")
    acc = defaultdict(list)
    for r in recs:
        for m in r["metrics"]:
            if m["metric"] == "test_acc":
                acc[(m["setting"], m["model"])].append(m["value"])
    ours = sorted({s for s, _ in acc})
    paper = sorted({k[1] for k in PAPER_NUMBERS if k[0] == "fenchel-ot-vit"})
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [max(1.6, len(ours)), len(paper)]})
    for ax, sets, src in ((axes[0], ours, "ours"), (axes[1], paper, "paper")):
        x = np.arange(len(sets))
        for k, (model, col) in enumerate((("vit", "tab:gray"), ("ot-vit", "tab:orange"))):
            if src == "ours":
                mean = [np.mean(acc[(s, model)]) for s in sets]
                err = [ci95(acc[(s, model)]) or 0 for s in sets]
            else:
                key = lambda s: ("fenchel-ot-vit", s, model, "test_acc")
                mean = [PAPER_NUMBERS[key(s)] for s in sets]
                err = [PAPER_CI[key(s)] for s in sets]
            ax.bar(x + (k - 0.5) * 0.38, mean, 0.38, yerr=err, capsize=3, color=col, label=model.upper())
            for xi, mi, ei in zip(x, mean, err):
                ax.text(xi + (k - 0.5) * 0.38, mi + ei + 0.015, f"{mi:.3f}", ha="center", fontsize=7)
        ax.set_xticks(x)
        ax.set_xticklabels(sets, fontsize=7, rotation=15)
        ax.set_ylim(0, 1.08)
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7, loc="lower right")
    n = max(len(v) for v in acc.values())
    axes[0].set_title(f"ours: 8×8 digits (SUBSTITUTE)\n{n} seeds, 95% t-CI, config '{cfg}'", fontsize=8)
    axes[1].set_title("paper: Tables 1–2\n(CIFAR-100 LR grid, Fashion-MNIST, CIFAR-10)", fontsize=8)
    fig.tight_layout()
    return _save(fig, outdir, "fenchel_exp_ot_vit.png")


MINILM = "bert:all-MiniLM-L6-v2"


def _minilm_records() -> list[dict]:
    root = results_root() / "fenchel-deviation" / "full"
    recs = [json.loads(p.read_text()) for p in sorted(root.glob("hf-all-MiniLM-L6-v2-seed*.json"))]
    if not recs:
        raise FileNotFoundError(f"no records under {root}; run `attnlab run fenchel-deviation --model minilm` first")
    return recs


def _layer_stats(recs, model, sets, metric="rel_dev_mean"):
    from attnlab.results import ci95

    out = []
    for s in sets:
        v = [m["value"] for r in recs for m in r["metrics"] if m["setting"] == s and m["model"] == model
             and m["metric"] == metric]
        out.append((float(np.mean(v)), ci95(v) or 0.0))
    return np.array(out)


def pretrained(outdir: Path) -> list[Path]:
    """A real pretrained encoder (all-MiniLM-L6-v2) beside the paper's bert-base and our small BERT-like
    substitute: per layer, Fig 4's head-averaged relative deviation (left), and on MiniLM the paper's
    metric beside the output-level errors (right)."""
    from attnlab.experiments.paper_numbers.fenchel import FIG4_BERT

    plt = _plt()
    mini = _minilm_records()
    msets = _settings(mini, MINILM)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    ax = axes[0]
    ax.plot(np.arange(1, len(FIG4_BERT) + 1), FIG4_BERT, "k--o", ms=4, lw=1, label="paper: bert-base (12 layers, Fig 4a)")
    st = _layer_stats(mini, MINILM, msets)
    ax.errorbar(np.arange(1, len(msets) + 1), st[:, 0], yerr=st[:, 1], fmt="-o", color="tab:blue", capsize=3, ms=4,
                label=f"ours: all-MiniLM-L6-v2, pretrained ({len(mini)} sentence samples, 95% CI)")
    try:
        small, _ = _records("fenchel-deviation", "full")
        ssets = _settings(small, "bert")
        ss = _layer_stats(small, "bert", ssets)
        ax.errorbar(np.arange(1, len(ssets) + 1), ss[:, 0], yerr=ss[:, 1], fmt="-s", color="tab:orange", capsize=3,
                    ms=4, label=f"ours: BERT-like SUBSTITUTE trained here ({len(small)} seeds; 2 epochs, not converged)")
    except FileNotFoundError:
        pass
    ax.set_xlabel("layer")
    ax.set_ylabel("head-averaged ‖λ*−αz‖/‖λ*‖")
    ax.set_xticks(range(1, 13))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title("Fig 4a's metric per layer: paper, a pretrained encoder, a small model", fontsize=9)
    ax = axes[1]
    x = np.arange(1, len(msets) + 1)
    for met, label, mk in (("rel_dev_mean", "‖λ*−αz‖/‖λ*‖ (paper's metric)", "o"),
                           ("first_order_mean", "α‖Σz‖/‖z‖ (first order)", "^"),
                           ("tv_mean", "TV(p(λ*), p(αz))", "s"),
                           ("out_err_mean", "‖ĥ(λ*)−ĥ(αz)‖ (template units)", "D")):
        st = _layer_stats(mini, MINILM, msets, met)
        ax.errorbar(x, st[:, 0], yerr=st[:, 1], fmt="-" + mk, capsize=3, ms=4, label=label)
    pm = _layer_stats(mini, MINILM, msets, "p_max_mean")[:, 0]
    ax.set_xticks(x)
    ax.set_xticklabels([f"L{i}\nmax p={v:.2f}" for i, v in zip(x, pm)], fontsize=7)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title("all-MiniLM-L6-v2: the λ-level metric beside output-level errors (mean, 95% CI)", fontsize=9)
    fig.suptitle("λ* vs αz on a real pretrained encoder (movie-review sentences, α = 1, every head)", fontsize=10)
    fig.tight_layout()
    return _save(fig, outdir, "fenchel_exp_pretrained.png")


def _save(fig, outdir, name) -> list[Path]:
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    p = outdir / name
    fig.savefig(p, dpi=110)
    _plt().close(fig)
    return [p]


FIGURES = {
    "fenchel-exp-fig4-bert": fig4_bert,
    "fenchel-exp-fig4-t5": fig4_t5,
    "fenchel-exp-fig5": fig5,
    "fenchel-exp-fig6": fig6,
    "fenchel-exp-fig7": fig7,
    "fenchel-exp-fig8": fig8,
    "fenchel-exp-output-errors": output_errors,
    "fenchel-exp-ot-vit": ot_vit,
    "fenchel-exp-pretrained": pretrained,
    "fenchel-exp-fig4-minilm": fig4_minilm,
    "fenchel-exp-fig5-minilm": fig5_minilm,
}
