"""Claims of the bidir paper on the App. I toy corpus (`bidir.app-i.*`, `bidir.prop9.toy-*`,
`bidir.prop14.toy-*`): the exact population of the corpus (fast) and the Sec. 4.2 correlations of
trained CBOW / Eq. (1) attention embeddings with the targets of Props 9 and 14 (slow, training).

The paper's toy-corpus check is in App. G.1 (Sec. 4.2 restates Prop 9 as Prop 3).  The training protocol is that of
`attnlab run bidir-toy-corpus` (experiments/bidir/toy_corpus.py): full-batch L-BFGS from
N(0, 0.1^2), every masking instance of a 10,000-sentence corpus drawn with seed s.
"""
from __future__ import annotations

import numpy as np

from attnlab.catalog import claim, holds_if

# Loose thresholds fixed before training for the attention analogue (Prop 14), which the paper does not
# report: Spearman > 0.6, Pearson > 0.5.
SPEARMAN_MIN, PEARSON_MIN = 0.6, 0.5
SLOW_DIMS, SLOW_SEEDS, SLOW_STEPS = (30, 100), (0, 1, 2), 1000


@claim("bidir.app-i.toy-corpus-population",
       reference="App. I (corpus generation); Sec. 4.2",
       statement="The App. I sentence distribution is finite; its population co-occurrence matrix "
                 "(whole-sentence window) is an exact rational, symmetric joint with 24 zero cells of 144, "
                 "and a sample drawn by the App. I process matches it within sampling error.",
       method="sympy")
def _population():
    import sympy as sp

    from attnlab.experiments.bidir.toy_corpus import (V, cooccurrence_counts, population_cooccurrence,
                                              sample_corpus, sentence_distribution)

    dist = sentence_distribution()
    total = sum(dist.values())
    P = sp.Matrix(V, V, lambda i, j: 0)
    Pf = population_cooccurrence(dist)
    for i in range(V):
        for j in range(V):
            P[i, j] = sp.Rational(Pf[i][j].numerator, Pf[i][j].denominator)
    symmetric = (P - P.T).is_zero_matrix
    zeros = sum(1 for v in P if v == 0)
    sums_to_one = sp.nsimplify(sum(P)) == 1
    # type marginals: each sentence type has probability exactly 1/3
    from attnlab.experiments.bidir.toy_corpus import IDX

    t1 = sum(p for s, p in dist.items() if s[:2] == (IDX["I"], IDX["like"]))
    t2 = sum(p for s, p in dist.items() if s[1] == IDX["and"] and s[3] == IDX["is"])
    t3 = sum(p for s, p in dist.items() if s[1] == IDX["is"] and s[3] == IDX["and"])
    types_ok = t1 == t2 == t3 == sp.Rational(1, 3) or (float(t1), float(t2), float(t3)) == (1 / 3,) * 3
    # a sample of 2,000 sentences (the sampler is a plain loop; 10,000 take seconds): every cell
    # within 5 standard errors of the population
    n_s = 2_000
    corpus = sample_corpus(n_s, np.random.default_rng(0))
    n = cooccurrence_counts(corpus)
    emp = n / n.sum()
    pf = np.array(P.tolist(), dtype=float)
    se = np.sqrt(pf * (1 - pf) / (n_s * 20)) * np.sqrt(20)     # pairs within a sentence are dependent
    z = float(np.max(np.abs(emp - pf)[pf > 0] / se[pf > 0]))
    support_ok = bool(((emp > 0) <= (pf > 0)).all())
    ok = total == 1 and symmetric and zeros == 24 and sums_to_one and types_ok and z < 5 and support_ok
    return holds_if(ok, measured=dict(n_sentences=len(dist), total=str(total), symmetric=bool(symmetric),
                                      zero_cells=zeros, type_probs=[str(t1), str(t2), str(t3)],
                                      sample_max_z=z, sample_support_within_population=support_ok),
                    tolerance="exact (rational); sample: |z| < 5 with a conservative per-sentence SE",
                    explanation="exact Fractions of every sentence of the three types; co-occurrence over the "
                                "20 ordered pairs of each sentence; sample of 2,000 sentences (seed 0)",
                    population=[[str(v) for v in row] for row in P.tolist()])


def _train_all():
    from attnlab.experiments.bidir.toy_corpus import run_dimension, sample_corpus

    import torch

    torch.set_num_threads(1)
    out = {}
    for s in SLOW_SEEDS:
        corpus = sample_corpus(10_000, np.random.default_rng(s))
        for p in SLOW_DIMS:
            out[(s, p)] = run_dimension(corpus, p, s, SLOW_STEPS, 0.1)
    return out


_CACHE: dict = {}


def _results():
    if "res" not in _CACHE:
        _CACHE["res"] = _train_all()
    return _CACHE["res"]


def _summary(key_s: str, key_p: str) -> dict:
    res = _results()
    out = {}
    for p in SLOW_DIMS:
        sp_ = [res[(s, p)][key_s]["spearman"] for s in SLOW_SEEDS]
        pe_ = [res[(s, p)][key_p]["pearson"] for s in SLOW_SEEDS]
        out[f"p={p}"] = dict(spearman_mean=float(np.mean(sp_)), spearman_per_seed=sp_,
                             pearson_mean=float(np.mean(pe_)), pearson_per_seed=pe_)
    return out


PROP9_DIMS, PROP9_SEEDS = (30, 100, 300, 900), (0, 1, 2, 3, 4)


def train_cbow(seed: int, p: int, steps: int = SLOW_STEPS) -> dict:
    """CBOW of `attnlab run bidir-toy-corpus` (same corpus, initialisation and L-BFGS) for one seed and
    dimension: Spearman with p(w_i,c_j)/p(c_j) and Pearson with M_ij, and the final loss."""
    import torch

    from attnlab.experiments.bidir.toy_corpus import (V as NV, _torch_instances, cooccurrence_counts,
                                                      correlations, prop9_targets, sample_corpus, train)
    from attnlab.experiments.models.bidir import CBOW

    torch.set_num_threads(1)
    corpus = sample_corpus(10_000, np.random.default_rng(seed))
    data, _ = _torch_instances(corpus)
    R, M = prop9_targets(cooccurrence_counts(corpus))
    cbow = CBOW(NV, p, window=None, init_std=0.1, generator=torch.Generator().manual_seed(10_000 * seed + p))
    loss = train(cbow, data, steps)
    with torch.no_grad():
        sim = cbow.similarity().numpy()
    return dict(spearman=correlations(sim, R)["spearman"], pearson=correlations(sim, M, R > 0)["pearson"],
                loss=loss)


def prop9_registration():
    """How the slow claim is judged: the rule of attnlab.evidence for a value claim, on the paper's data
    (the App. I corpus) under a substitute protocol (the paper gives no optimiser or initialisation), every
    dimension and both correlations as parts, the paper's single runs (R = 1), seeds PROP9_SEEDS.  Not in
    the registry of the `results` claims: this one trains in its check."""
    from attnlab.theory.preregistration import _TOY, Registration, _toy_parts

    return Registration("bidir.prop9.toy-corpus-correlation", "bidir-toy-corpus", "full", "value",
                        tuple(part for p in PROP9_DIMS for part in _toy_parts(p)), PROP9_SEEDS, "substitute",
                        "not-reproduced-on-substitute", paper_runs=1, deviation=_TOY,
                        margin_source="no margin: the paper's single-run value against the interval of a single run")


PROP9_REGISTRATION = prop9_registration()


def judge_prop9(values: dict, reg=PROP9_REGISTRATION):
    """values[(p, metric)] = per-seed list, metric in ('spearman', 'pearson').  Each part by the value rule
    of attnlab.evidence: supported when the paper's single-run value lies in mean +- t sd sqrt(1/n + 1/R),
    contradicted otherwise; the claim is reproduced on the substitute when every part is supported, not
    reproduced when any part is contradicted (a substitute protocol cannot make an erratum)."""
    from attnlab.catalog import Evidence
    from attnlab.evidence import VERDICT_OF, _decide, t_interval

    metric_of = dict(spearman_prop9_ratio="spearman", pearson_prop9_M="pearson")
    per, decisions = {}, []
    for part in reg.parts:
        p = int(part.setting.split("=")[1])
        v = [float(x) for x in values[(p, metric_of[part.metric])]]
        ci, wide = t_interval(v), t_interval(v, reg.paper_runs)
        d = _decide(reg, part, dict(ci, values=v))
        decisions.append(d)
        per[f"{part.setting} {metric_of[part.metric]}"] = dict(
            per_seed=[round(x, 4) for x in v], mean=round(ci["mean"], 4), ci95=[round(ci["lo"], 4), round(ci["hi"], 4)],
            single_run_interval=[round(wide["lo"], 4), round(wide["hi"], 4)], paper=part.paper, decision=d)
    overall = ("contradicted" if "contradicted" in decisions else
               "supported" if all(d == "supported" for d in decisions) else "undecided")
    verdict = VERDICT_OF[(overall, reg.data_source)]
    first = next((k for k, r in per.items() if r["decision"] == overall), next(iter(per)))
    n = min(len(r["per_seed"]) for r in per.values())
    return Evidence(verdict, measured=per, tolerance=reg.tolerance_text(),
                    explanation="CBOW (full softmax, whole-sentence context) trained by L-BFGS (1000 iterations, "
                                "N(0, 0.1^2)) on the App. I corpus (10,000 sentences drawn with seed s), seeds "
                                f"{list(PROP9_SEEDS)}, p in {list(PROP9_DIMS)}: per-seed correlations against the "
                                f"paper's single runs; {reg.rule_text()}",
                    data={"results": {"data_source": reg.data_source, "statistic": reg.statistic,
                                      "ci95": per[first]["ci95"], "paper_effect": per[first]["paper"], "margin": None,
                                      "n_seeds_registered": len(reg.seeds), "n_seeds_used": n},
                          "deciding_part": first})


@claim("bidir.prop9.toy-corpus-correlation",
       reference="Prop 9 (= Prop 3), App. G.1 toy-corpus check, App. I corpus",
       statement="CBOW trained on the App. I corpus gives Spearman (0.74, 0.77, 0.77, 0.77) between w_i^T c_j and "
                 "p(w_i,c_j)/p(c_j), and Pearson (0.67, 0.71, 0.70, 0.71) with M_ij, at p = 30, 100, 300, 900 "
                 "(single runs; the paper gives no optimiser, initialisation or seed).",
       corrected="Not reproduced under our protocol (converged full-batch L-BFGS from N(0, 0.1^2), 5 seeds): the "
                 "correlations are positive at every p; at p = 30 and 100 the printed values lie inside the interval "
                 "a single run of ours falls in, at p = 300 and 900 above it (e.g. Spearman 0.77 against 0.57-0.73 "
                 "at p = 300).  Not a paper error: for p > |V| = 12 the learned w_i^T c_j are not identified by "
                 "the loss and depend on the optimiser and initialisation, which the paper does not give.",
       method="training", tier="slow", expected="not-reproduced-on-substitute", registration=PROP9_REGISTRATION)
def _prop9_toy():
    values = {}
    for p in PROP9_DIMS:
        runs = [train_cbow(s, p) for s in PROP9_SEEDS]
        values[(p, "spearman")] = [r["spearman"] for r in runs]
        values[(p, "pearson")] = [r["pearson"] for r in runs]
    return judge_prop9(values)


@claim("bidir.prop14.toy-corpus-correlation",
       reference="Prop 14 (= Prop 6), Eq. (2), on the App. I corpus (not reported in the paper)",
       statement="The Eq. (1) attention objective trained on the App. I corpus learns w_i^T c_j that correlate "
                 "with Prop 14's target: Spearman with Eq. (2) (from the learned tau) and Pearson with "
                 "N_ij = log(pbar(w_i,c_j)/pbar(c_j)) + log|V|.",
       method="training", tier="slow")
def _prop14_toy():
    summ = _summary("attn_prop14", "attn_prop14_N")
    ok = all(v["spearman_mean"] > SPEARMAN_MIN and v["pearson_mean"] > PEARSON_MIN for v in summ.values())
    return holds_if(ok, measured=summ, tolerance=dict(spearman_min=SPEARMAN_MIN, pearson_min=PEARSON_MIN),
                    explanation=f"p in {SLOW_DIMS}, seeds {SLOW_SEEDS}, L-BFGS {SLOW_STEPS} iterations, tau "
                                "learned; the Prop 9 thresholds applied to the attention analogue")
