"""Empirical claims of Exponential Family Attention (`efa.results.*`), judged from the committed
records of `attnlab run efa-*` (attnlab.evidence): the headline comparisons of Tables 1-3 and Figs 3,
4 and 6, and the synthetic experiment's stated test MSE.  Each skips, with the reason, until converged
records of the paper's configuration exist for >= 5 seeds.  Data: the paper's (synthetic, MovieLens
100K, Instacart as preprocessed by the authors) except the temperature experiment (labelled substitute,
Colorado monthly temperatures)."""
from __future__ import annotations

from attnlab.catalog import claim
from attnlab.evidence import better, in_range


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
for _w, _l, _cid in (("EFA(l=2)", "EFA(l=1)", "temperature-depth-l2"), ("EFA(l=4)", "EFA(l=1)", "temperature-depth-l4"),
                     ("EFA(l=4, 1D ahead)", "EFA(l=4)", "temperature-1d-ahead"),
                     ("EFA(l=4, 2D ahead)", "EFA(l=4)", "temperature-2d-ahead")):
    _beats(f"efa.results.{_cid}", "Fig 6 (temperature), Sec 6.4, App. H.4", "efa-temperature", "Colorado substitute",
           "test MSE", "LABELLED SUBSTITUTE (Colorado monthly temperatures)", winner=_w, loser=_l)


@claim("efa.results.synthetic-efa-near-bayes", reference="Sec 6.1, App. H.1 (text: test MSE in [1.0, 1.1])",
       statement="On the synthetic ratings, EFA's test MSE lies in [1.0, 1.1] (the Bayes optimum is 1), in "
                 "both settings; data: the paper's generator.", method="results")
def _():
    ev = [in_range("efa-synthetic", "full", s, "EFA", "test MSE", 1.0, 1.1) for s in ("bidirectional", "unidirectional")]
    from attnlab.catalog import holds_if

    return holds_if(all(e.verdict == "holds" for e in ev), measured={"bidirectional": ev[0].measured,
                                                                     "unidirectional": ev[1].measured},
                    tolerance="95% CI within [1.0, 1.1]", explanation=ev[0].explanation)
