"""Empirical claims of Exponential Family Attention (`efa.results.*`): the headline comparisons of
Tables 1-3 and Fig 6, and Table 1's EFA values, judged from the committed records of `attnlab run efa-*`
by attnlab.evidence under their pre-registration (theory/preregistration.py: seeds, margins, data
source, rule).  The paper's data: synthetic (the paper's generator), MovieLens 100K; Instacart (the
authors' preprocessing) at a converged schedule, a changed protocol; temperature on a substitute
(Colorado monthly temperatures)."""
from __future__ import annotations

from attnlab.theory.preregistration import results_claim

_DATA = {"synthetic": "the paper's generator (App. H.1)", "movielens-sequences": "MovieLens 100K (the paper's)",
         "movielens-ratings": "MovieLens 100K (the paper's)",
         "instacart": "Instacart as preprocessed by the authors, early stopping instead of 1,000 epochs (substitute protocol)"}
_REF = {"synthetic": "Table 1 (synthetic), Sec 6.1", "movielens-sequences": "Table 1 (MovieLens sequences), Sec 6.2",
        "movielens-ratings": "Table 2 (MovieLens ratings), Sec 6.2", "instacart": "Table 3, Figs 3-4 (Instacart), Sec 6.3"}

for _exp, _settings in (("synthetic", ("bidirectional", "unidirectional")),
                        ("movielens-sequences", ("bidirectional", "unidirectional")),
                        ("movielens-ratings", ("v1", "v2")), ("instacart", ("bidirectional", "unidirectional"))):
    for _s in _settings:
        _metric = "test MSE" if _exp == "synthetic" else "test CE"
        _where = f"{_s} bidirectional, Poisson" if _exp == "movielens-ratings" else _s
        results_claim(f"efa.results.{_exp}-{_s}", reference=_REF[_exp],
                      statement=f"EFA has a lower {_metric} than FM on {_exp} ({_where}); data: {_DATA[_exp]}.")

results_claim("efa.results.synthetic-efa-near-bayes", reference="Table 1 (synthetic), Sec 6.1",
              statement="On the synthetic ratings EFA's test MSE is Table 1's (1.038 bidirectional, 1.033 "
                        "unidirectional; the Bayes optimum is 1), in both settings; data: the paper's generator.")

_TEMP = "data: LABELLED SUBSTITUTE (Colorado monthly temperatures, not daily temperatures of 44 US cities)"
for _cid, _w, _l in (("temperature-efa-beats-fm", "EFA(l=1)", "FM(k=5)"), ("temperature-depth-l2", "EFA(l=2)", "EFA(l=1)"),
                     ("temperature-depth-l4", "EFA(l=4)", "EFA(l=1)"),
                     ("temperature-1d-ahead", "EFA(l=4, 1D ahead)", "EFA(l=4)"),
                     ("temperature-2d-ahead", "EFA(l=4, 2D ahead)", "EFA(l=4)")):
    # Fig 6's caption: EFA beats FM(k), "further enhanced by increasing the number of hidden layers (l) and
    # expanding the context to ... the previous day (1D ahead) or the previous two days (2D ahead)"; the lag
    # models have 4 layers, so each is compared with EFA(l=4) (the authors' stored run: 11.224 -> 9.248, 10.420)
    results_claim(f"efa.results.{_cid}", reference="Fig 6 (temperature), Sec 6.4, App. H.4",
                  statement=f"{_w} has a lower test MSE than {_l} on temperature; {_TEMP}.")
