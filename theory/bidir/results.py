"""Empirical claims of Bidirectional Attention as a Mixture of Continuous Word Experts (`bidir.results.*`),
judged from the committed records of `attnlab run bidir-*` (attnlab.evidence): Table 1 (covariate-shift
simulation: ATN generalises out of distribution better than the baselines), Table 2 (auto-mpg), Table 3
(word analogies, LABELLED SUBSTITUTES) and the toy-corpus correlations of Sec 4.2 (Prop 9).  Each skips,
with the reason, until converged records of the paper's configuration exist for >= 5 seeds."""
from __future__ import annotations

from attnlab.catalog import claim
from attnlab.evidence import better, not_better


def _beats(cid, ref, experiment, setting, data, winner, loser, metric="acc", config="full"):
    @claim(cid, reference=ref, method="results",
           statement=f"{winner} has a higher test {metric} than {loser} on {experiment.split('-', 1)[1]} "
                     f"({setting}); data: {data}.")
    def _():
        return better(experiment, config, setting, metric, winner, loser, lower_is_better=False)


_beats("bidir.results.tabular-atn-vs-lr", "Table 1 (covariate shift), Sec 3.1", "bidir-tabular-sim", "(5, 0, 0.9)",
       "the paper's generator (App. D; Cholesky covariates)", "ATN", "LR")
_beats("bidir.results.tabular-atn-vs-gb", "Table 1 (covariate shift), Sec 3.1", "bidir-tabular-sim", "(5, 0, 0.9)",
       "the paper's generator (App. D; Cholesky covariates)", "ATN", "GB")
# Table 1's caption: "ATN achieves better or competitive accuracy ... than competing methods, across all
# parameter settings".  "Competitive" is read as ATN at most COMPETITIVE_MARGIN below the baseline: the
# paired 95% CI of ATN - baseline lies above -COMPETITIVE_MARGIN in every setting (the margin of the
# auto-mpg claims; the paper's own table has a baseline ahead of ATN by up to 0.009).
COMPETITIVE_MARGIN = 0.05


def _competitive(baseline, expected="holds"):
    @claim(f"bidir.results.tabular-atn-competitive-{baseline.lower()}", reference="Table 1 caption, Sec 3.1",
           method="results", expected=expected,
           statement=f"ATN's test accuracy is better than or competitive with {baseline}'s in every one of the 12 "
                     "settings of Table 1 (the authors' pooled bins): in each, the paired 95% CI of ATN - "
                     f"{baseline} lies above -{COMPETITIVE_MARGIN:g}; data: the paper's generator (App. D).")
    def _():
        from attnlab.catalog import holds_if
        from attnlab.experiments.bidir.tabular_sim import SETTINGS, setting_label

        ev = {setting_label(*s): better("bidir-tabular-sim", "full", setting_label(*s), "acc", "ATN", baseline,
                                        lower_is_better=False, margin=-COMPETITIVE_MARGIN) for s in SETTINGS}
        worst = min(ev, key=lambda k: ev[k].measured["ci95"][0])
        return holds_if(all(e.verdict == "holds" for e in ev.values()),
                        measured={"settings": len(ev), "holds_in": sum(e.verdict == "holds" for e in ev.values()),
                                  "worst_setting": worst, "worst_ci95": ev[worst].measured["ci95"],
                                  "n": ev[worst].measured["n"]},
                        tolerance=f"in every setting, 95% CI of ATN - {baseline} entirely above -{COMPETITIVE_MARGIN:g}",
                        explanation=f"bidir-tabular-sim (full), paired over seeds; lowest CI end at {worst}")


_competitive("RF")
_competitive("MLP")
# at 5 and 6 seeds the paired CI at (1, 0.5, 0.9) reached below -0.05 ([-0.060, +0.036], [-0.052, +0.022]);
# at 7 it is [-0.042, +0.020] (docs/bidir_experiments.md): a close call, recorded as such
_competitive("GB")

_beats("bidir.results.auto-mpg-atn-vs-lr", "Table 2 (auto-mpg, origin split), Sec 3.2", "bidir-auto-mpg",
       "origin split", "UCI auto-mpg (the paper's)", "ATN", "LR")


@claim("bidir.results.auto-mpg-atn-vs-rf", reference="Table 2 (auto-mpg, origin split), Sec 3.2", method="results",
       expected="erratum",
       statement="ATN has a higher test accuracy than RF on auto-mpg (origin split, the authors' pooled bins; "
                 "Table 2: 0.793 vs 0.721); data: UCI auto-mpg (the paper's).",
       corrected="At the paper's configuration (App. E grids, ATN 200 epochs) over 10 seeds, paired by seed, ATN and "
                 "RF are not distinguishable: ATN - RF is about 0.00 with a 95% CI containing 0 (about "
                 "[-0.04, 0.04]); ATN reaches ~0.73, not 0.793.")
def _():
    return not_better("bidir-auto-mpg", "full", "origin split", "acc", "ATN", "RF", max_abs=0.05)

ANALOGY_FLOOR = 0.05     # below this overall accuracy an embedding has learned no analogy structure to rank


@claim("bidir.results.analogies-mlm-vs-cbow", reference="Table 3 (word analogies), Sec 5", method="results",
       statement="The bidirectional-attention MLM's embeddings answer more analogy questions than CBOW's (Table 3: "
                 "BERT 0.727 vs word2vec 0.563 overall); data: the paper's models when their records exist "
                 "(`--bert`, `--word2vec-bin`), else the LABELLED SUBSTITUTES (local MLM and CBOW).")
def _():
    from attnlab.catalog import Skip
    from attnlab.evidence import mean_ci

    pairs = (("BERT", "CBOW"), ("MLM-local [substitute for BERT]", "CBOW-local [substitute for word2vec]"))
    for winner, loser in pairs:
        try:
            acc = {m: mean_ci("bidir-analogies", "full", "overall", m, "acc") for m in (winner, loser)}
        except Skip:
            continue
        if all(v["mean"] < ANALOGY_FLOOR for v in acc.values()):
            raise Skip(f"{winner} and {loser} answer {acc[winner]['mean']:.3f} and {acc[loser]['mean']:.3f} of the "
                       f"common questions (overall accuracy, {acc[winner]['n']} seeds), both below {ANALOGY_FLOOR}: "
                       "embeddings trained on the 58k-token offline corpus have no analogy structure to rank "
                       "(GloVe 6B scores 0.63 on the same questions); run with --bert and --word2vec-bin")
        return better("bidir-analogies", "full", "overall", "acc", winner, loser, lower_is_better=False)
    raise Skip("needs >= 5 converged seeds of bidir-analogies (config full) for BERT vs CBOW or their substitutes")


TOY_METRICS = ("spearman_prop9_ratio", "pearson_prop9_M")
TOY_CORRECTED = ("Converged CBOW (max |gradient| <= 1e-5) correlates with Prop 9's targets below the paper at "
                 "p = {p}: the 95% intervals of five seeds lie below both printed values ({printed}); the learned "
                 "w_i^T c_j are not identified for p > |V| = 12 and depend on the initialisation.")


def _toy(p, expected):
    from attnlab.experiments.bidir.toy_corpus import TOY_PAPER_NUMBERS

    paper = {m: TOY_PAPER_NUMBERS[("bidir-toy-corpus", f"p={p}", "CBOW", m)] for m in TOY_METRICS}
    printed = f"Spearman {paper['spearman_prop9_ratio']}, Pearson {paper['pearson_prop9_M']}"

    @claim(f"bidir.results.toy-corpus-p{p}", reference="Sec 4.2 (toy corpus, App. I), Prop 9",
           statement=f"CBOW trained on the App. I toy corpus with p = {p} gives {printed} between w_i^T c_j and "
                     "Prop 9's targets (p(w_i,c_j)/p(c_j); M_ij over the cells where it is defined).",
           corrected=TOY_CORRECTED.format(p=p, printed=printed) if expected == "erratum" else "",
           method="results", expected=expected)
    def _():
        from attnlab.catalog import erratum_if
        from attnlab.evidence import mean_ci

        ours = {m: mean_ci("bidir-toy-corpus", "full", f"p={p}", "CBOW", m) for m in TOY_METRICS}
        inside = all(v["lo"] <= paper[m] <= v["hi"] for m, v in ours.items())
        below = all(v["hi"] < paper[m] for m, v in ours.items())
        return erratum_if(inside, below,
                          measured={m: {"mean": v["mean"], "ci95": [v["lo"], v["hi"]], "n": v["n"], "paper": paper[m]}
                                    for m, v in ours.items()},
                          tolerance="printed: each paper value inside the 95% t-interval of the seeds' mean; "
                                    "corrected: each interval entirely below the paper value",
                          explanation=f"bidir-toy-corpus (full), p = {p}, CBOW rows of converged L-BFGS runs; seeds "
                                      f"{ours['spearman_prop9_ratio']['seeds']}")


for _p, _expected in ((30, "holds"), (100, "erratum"), (300, "erratum"), (900, "erratum")):
    _toy(_p, _expected)
