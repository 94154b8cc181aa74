"""Empirical claims of Bidirectional Attention as a Mixture of Continuous Word Experts (`bidir.results.*`):
Table 1 (covariate-shift simulation), Table 2 (auto-mpg), Table 3 (word analogies, on substitutes) and
the toy-corpus correlations of Sec 4.2 (Prop 9, under our protocol), judged from the committed records
of `attnlab run bidir-*` by attnlab.evidence under their pre-registration (theory/preregistration.py)."""
from __future__ import annotations

from attnlab.theory.preregistration import REGISTRY, results_claim

_T1 = "the paper's generator (App. D; Cholesky covariates)"
for _b in ("LR", "GB"):
    results_claim(f"bidir.results.tabular-atn-vs-{_b.lower()}", reference="Table 1 (covariate shift), Sec 3.1",
                  statement=f"ATN has a higher test accuracy than {_b} on tabular-sim ((5, 0, 0.9)); data: {_T1}.")

for _b in ("RF", "MLP", "GB"):
    _m = -REGISTRY[f"bidir.results.tabular-atn-competitive-{_b.lower()}"].margin
    results_claim(f"bidir.results.tabular-atn-competitive-{_b.lower()}", reference="Table 1 caption, Sec 3.1",
                  statement=f"ATN's test accuracy is better than or competitive with {_b}'s in every one of the 12 "
                            "settings of Table 1 (the authors' pooled bins): in each, ATN - "
                            f"{_b} is above -{_m:g} (the largest lead of any baseline over ATN in Table 1 as "
                            f"printed); data: {_T1}.")

for _b in ("LR", "RF", "MLP", "GB"):
    _m = -REGISTRY[f"bidir.results.tabular-atn-competitive-mse-{_b.lower()}"].margin
    results_claim(f"bidir.results.tabular-atn-competitive-mse-{_b.lower()}", reference="Table 1 caption (MSE), Sec 3.1",
                  statement=f"ATN's test MSE is better than or competitive with {_b}'s in every one of the 12 settings "
                            "of Table 1 (the authors' pooled bins): in each, ATN's MSE exceeds "
                            f"{_b}'s by less than {_m:g} (the largest lead of any baseline over ATN in Table 1(b) as "
                            f"printed); data: {_T1}.")

results_claim("bidir.results.auto-mpg-atn-vs-lr", reference="Table 2 (auto-mpg, origin split), Sec 3.2",
              statement="ATN has a higher test accuracy than LR on auto-mpg (origin split); data: UCI auto-mpg "
                        "(the paper's).")
results_claim("bidir.results.auto-mpg-atn-vs-rf", reference="Table 2 (auto-mpg, origin split), Sec 3.2",
              statement="ATN has a higher test accuracy than RF on auto-mpg (origin split, the authors' pooled bins; "
                        "Table 2: 0.793 vs 0.721, one seed); data: UCI auto-mpg (the paper's).")

results_claim("bidir.results.auto-mpg-atn-vs-lr-long", reference="Table 2 (auto-mpg, origin split), Sec 3.2",
              statement="ATN has a higher test accuracy than LR on auto-mpg (origin split); data: UCI auto-mpg "
                        "(the paper's); protocol: SUBSTITUTE (ATN trained 1,000 epochs, not 200, so that its "
                        "training loss levels).")
results_claim("bidir.results.auto-mpg-atn-vs-rf-long", reference="Table 2 (auto-mpg, origin split), Sec 3.2",
              statement="ATN has a higher test accuracy than RF on auto-mpg (origin split, the authors' pooled bins; "
                        "Table 2: 0.793 vs 0.721, one seed); data: UCI auto-mpg (the paper's); protocol: SUBSTITUTE "
                        "(ATN trained 1,000 epochs, not 200, so that its training loss levels).")

# below this overall accuracy an embedding has learned no analogy structure to rank (set 2026-11-25, before the
# registry and before any GCIDE record): both models' means over the registered seeds below it -> skipped
ANALOGY_FLOOR = 0.05


def _analogies(reg):
    from attnlab.catalog import Skip
    from attnlab.evidence import judge, seed_values

    part = reg.parts[0]
    # the registered seeds only, as judge reads them: seeds outside the registry never change a verdict
    acc = {m: {s: v for s, v in seed_values(reg.experiment, reg.config, part.setting, m, part.metric)[0].items()
               if s in reg.seeds} for m in (part.a, part.b)}
    means = {m: sum(v.values()) / len(v) for m, v in acc.items() if v}
    if len(means) == 2 and all(v < ANALOGY_FLOOR for v in means.values()):
        raise Skip(f"{part.a} and {part.b} answer {means[part.a]:.3f} and {means[part.b]:.3f} of the common "
                   f"questions (overall accuracy), both below {ANALOGY_FLOOR}: embeddings with no analogy structure "
                   "to rank (embeddings trained on the 58k-token lee_background corpus score so; GloVe 6B scores "
                   "0.63 on their common questions); run with --bert and --word2vec-bin, or --config gcide")
    return judge(reg)


results_claim("bidir.results.analogies-mlm-vs-cbow", reference="Table 3 (word analogies), Sec 5", check=_analogies,
              statement="A bidirectional-attention MLM's embeddings answer more analogy questions than CBOW's (Table "
                        "3: BERT 0.727 vs word2vec 0.563 overall); models: LABELLED SUBSTITUTES (a local MLM and CBOW "
                        "trained on gensim's 58k-token lee_background corpus).")
results_claim("bidir.results.analogies-mlm-vs-cbow-gcide", reference="Table 3 (word analogies), Sec 5",
              check=_analogies,
              statement="A bidirectional-attention MLM's embeddings answer more analogy questions than CBOW's (Table "
                        "3: BERT 0.727 vs word2vec 0.563 overall); models: LABELLED SUBSTITUTES (a local MLM and CBOW "
                        "trained on GCIDE, a 3.8M-token English dictionary).")
results_claim("bidir.results.analogies-pretrained", reference="Table 3 (word analogies), Sec 5", check=_analogies,
              statement="A pretrained bidirectional-attention encoder's static input embeddings answer more analogy "
                        "questions than word2vec's (Table 3: BERT 0.727 vs word2vec 0.563 overall); models: LABELLED "
                        "SUBSTITUTES (MiniLM-L6's input embeddings for BERT-base; a 26k-word subset of the paper's "
                        "word2vec GoogleNews vectors).")


def _toy(p):
    from attnlab.experiments.bidir.toy_corpus import TOY_PAPER_NUMBERS

    paper = {m: TOY_PAPER_NUMBERS[("bidir-toy-corpus", f"p={p}", "CBOW", m)]
             for m in ("spearman_prop9_ratio", "pearson_prop9_M")}
    reg = REGISTRY[f"bidir.results.toy-corpus-p{p}"]
    results_claim(reg.claim, reference="Sec 4.2 (toy corpus, App. I), Prop 9",
                  statement=f"CBOW trained on the App. I toy corpus with p = {p} gives Spearman "
                            f"{paper['spearman_prop9_ratio']} and Pearson {paper['pearson_prop9_M']} (single runs) "
                            "between w_i^T c_j and Prop 9's targets (p(w_i,c_j)/p(c_j); M_ij where defined); "
                            "protocol: SUBSTITUTE (the paper gives no optimiser or initialisation; ours: converged "
                            "L-BFGS).",
                  corrected="" if reg.expected != "not-reproduced-on-substitute" else
                  f"Under our protocol (converged L-BFGS, 5 seeds) the correlations at p = {p} lie below the paper's "
                  "single-run values, outside the interval a single run would fall in: the learned w_i^T c_j are "
                  "not identified for p > |V| = 12 and depend on the initialisation.")


for _p in (30, 100, 300, 900):
    _toy(_p)
