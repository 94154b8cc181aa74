"""Empirical claims of Exponential Family Attention (`efa.results.*`), judged from the committed
records of `attnlab run efa-*` (attnlab.evidence): the headline comparisons of Tables 1-3 and Figs 3,
4 and 6, and the synthetic experiment's stated test MSE.  Each skips, with the reason, until converged
records of the paper's configuration exist for >= 5 seeds.  Data: the paper's (synthetic, MovieLens
100K, Instacart as preprocessed by the authors) except the temperature experiment (labelled substitute,
Colorado monthly temperatures)."""
from __future__ import annotations

from attnlab.catalog import claim
from attnlab.evidence import better, in_range, not_better


def _beats(cid, ref, experiment, setting, metric, data, winner="EFA", loser="FM", config="full"):
    @claim(cid, reference=ref, method="results",
           statement=f"{winner} has a lower {metric} than {loser} on {experiment.split('-', 1)[1]} ({setting}); "
                     f"data: {data}.")
    def _():
        return better(experiment, config, setting, metric, winner, loser, lower_is_better=True)


_beats("efa.results.synthetic-bidirectional", "Table 1 (synthetic), Sec 6.1", "efa-synthetic", "bidirectional",
       "test MSE", "the paper's generator (App. H.1)")
_beats("efa.results.synthetic-unidirectional", "Table 1 (synthetic), Sec 6.1", "efa-synthetic", "unidirectional",
       "test MSE", "the paper's generator (App. H.1)")
_beats("efa.results.movielens-sequences-bidirectional", "Table 1 (MovieLens sequences), Sec 6.2",
       "efa-movielens-sequences", "bidirectional", "test CE", "MovieLens 100K (the paper's)")
_beats("efa.results.movielens-sequences-unidirectional", "Table 1 (MovieLens sequences), Sec 6.2",
       "efa-movielens-sequences", "unidirectional", "test CE", "MovieLens 100K (the paper's)")
_beats("efa.results.movielens-ratings-v1", "Table 2 (MovieLens ratings, Poisson v1), Sec 6.2",
       "efa-movielens-ratings", "v1 bidirectional", "test CE", "MovieLens 100K (the paper's)")
_beats("efa.results.movielens-ratings-v2", "Table 2 (MovieLens ratings, Poisson v2), Sec 6.2",
       "efa-movielens-ratings", "v2 bidirectional", "test CE", "MovieLens 100K (the paper's)")
# Instacart: the converged schedule (config full-es: early stopping, lr chosen on validation), 5 seeds;
# the paper's 1,000-epoch schedule (config full) costs ~4x more per run
_beats("efa.results.instacart-bidirectional", "Table 3 and Fig 3 (Instacart), Sec 6.3", "efa-instacart",
       "bidirectional", "test CE", "Instacart as preprocessed by the authors (the paper's)", config="full-es")
_beats("efa.results.instacart-unidirectional", "Table 3 and Fig 4 (Instacart), Sec 6.3", "efa-instacart",
       "unidirectional", "test CE", "Instacart as preprocessed by the authors (the paper's)", config="full-es")
_beats("efa.results.temperature-efa-beats-fm", "Fig 6 (temperature), Sec 6.4", "efa-temperature",
       "Colorado substitute", "test MSE", "LABELLED SUBSTITUTE (Colorado monthly temperatures)",
       winner="EFA(l=1)", loser="FM(k=5)")
# the rest of Fig 6's caption: "further enhanced by increasing the number of hidden layers (l) and expanding
# the context to ... the previous day (1D ahead) or the previous two days (2D ahead)"; the lag models have
# 4 layers, so each is compared with EFA(l=4) (the authors' stored run: 11.224 -> 9.248 and 10.420)
_beats("efa.results.temperature-depth-l2", "Fig 6 (temperature), Sec 6.4, App. H.4", "efa-temperature",
       "Colorado substitute", "test MSE", "LABELLED SUBSTITUTE (Colorado monthly temperatures)",
       winner="EFA(l=2)", loser="EFA(l=1)")

# On the substitute the rest of the caption does not carry over: EFA(l=4) and the lag models are level with
# the models they should beat.  "Level" is a paired 95% CI that contains 0 with |mean| below 0.05 degC^2
# (8% of EFA(l=1)'s test MSE of 0.61, and below the 0.031 that EFA(l=2) gains over EFA(l=1)).
LEVEL_MSE = 0.05
_TEMPERATURE = ("efa-temperature", "full", "Colorado substitute", "test MSE")
_LEVEL = "On the Colorado substitute {w} and {l} are not distinguishable: the paired 95% CI of {w} - {l} over " \
         "5 seeds contains 0 and |mean| < {level:g} ({why})."
for _w, _l, _cid, _why in (
        ("EFA(l=4)", "EFA(l=1)", "temperature-depth-l4",
         "with 126 training months, four layers reach the lowest training loss of the three depths and stop "
         "improving on validation earliest; two layers are the best depth here"),
        ("EFA(l=4, 1D ahead)", "EFA(l=4)", "temperature-1d-ahead",
         "one previous month of all 44 stations as context, as in the authors' code"),
        ("EFA(l=4, 2D ahead)", "EFA(l=4)", "temperature-2d-ahead",
         "two previous months of all 44 stations as context, as in the authors' code")):
    @claim(f"efa.results.{_cid}", reference="Fig 6 (temperature), Sec 6.4, App. H.4", method="results",
           statement=f"{_w} has a lower test MSE than {_l} on temperature (Colorado substitute); data: LABELLED "
                     "SUBSTITUTE (Colorado monthly temperatures).",
           corrected=_LEVEL.format(w=_w, l=_l, level=LEVEL_MSE, why=_why), expected="erratum")
    def _(_w=_w, _l=_l):
        return not_better(*_TEMPERATURE, _w, _l, max_abs=LEVEL_MSE, lower_is_better=True)


@claim("efa.results.synthetic-efa-near-bayes", reference="Sec 6.1, App. H.1 (text: test MSE in [1.0, 1.1])",
       statement="On the synthetic ratings, EFA's test MSE lies in [1.0, 1.1] (the Bayes optimum is 1), in "
                 "both settings; data: the paper's generator.", method="results")
def _():
    ev = [in_range("efa-synthetic", "full", s, "EFA", "test MSE", 1.0, 1.1) for s in ("bidirectional", "unidirectional")]
    from attnlab.catalog import holds_if

    return holds_if(all(e.verdict == "holds" for e in ev), measured={"bidirectional": ev[0].measured,
                                                                     "unidirectional": ev[1].measured},
                    tolerance="95% CI within [1.0, 1.1]", explanation=ev[0].explanation)
