"""Results claims (method="results"): pre-registered (theory/preregistration.py), judged by one rule
(attnlab.evidence) on exactly the registered seeds, each seed counted once; convergence recorded in every
record."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from attnlab.convergence import RULE

from attnlab import catalog
from attnlab.catalog import Skip
from attnlab.evidence import judge, t_interval
from attnlab.theory.preregistration import REGISTRY, Part, Registration

EXP = "kernel-time-warping"


def judgement(converged) -> dict:
    """A record's convergence judgement under this attnlab's rule, as its `converged` flag implies (the readers
    count a record without one, or one that contradicts the flag, as not judged)."""
    return {"status": {True: "converged", False: "not-levelled", None: "unknown"}[converged], "rule": RULE}


def _write(root, seed, values, config="full", name=None, converged=True, setting="N=64"):
    rec = {"experiment": EXP, "config": config, "seed": seed, "device": "cpu", "converged": converged,
           "convergence": judgement(converged),
           "training": {}, "metrics": [{"setting": setting, "model": m, "metric": "accuracy", "value": v}
                                       for m, v in values.items()]}
    f = root / EXP / config / (name or f"seed{seed}.json")
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(rec))
    return f


def _reg(source="paper", paper=None, margin=0.0, rule="beats", seeds=(0, 1, 2, 3, 4), runs=1, bound=None):
    part = Part("N=64", "A", "accuracy", b="B" if rule == "beats" else None, paper=paper, bound=bound)
    return Registration("kernel.results.test", EXP, "full", rule, (part,), tuple(seeds), source, "holds",
                        margin=margin, paper_runs=runs, deviation="" if source == "paper" else "data: made up")


NOISE = (0.4, -0.3, 0.1, -0.5, 0.3)


def _pairs(root, gain, seeds=range(5)):
    for s in seeds:
        _write(root, s, {"A": 90.0 + gain + NOISE[s % 5], "B": 90.0})


def test_t_interval_is_scipys_and_widens_for_a_papers_runs():
    """The CI against scipy.stats.t.interval (float64, 1e-12); the interval of a mean of R further runs is
    mean ± t·sd·sqrt(1/n + 1/R) (R = 1: the prediction interval of one run); fewer than 2 values refused."""
    import numpy as np
    from scipy import stats

    v = np.array([90.0, 91.5, 89.25, 92.0, 90.75, 88.5])
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
    got = t_interval(list(v))
    assert abs(got["lo"] - lo) < 1e-12 and abs(got["hi"] - hi) < 1e-12
    one = t_interval(list(v), runs=1)
    half = stats.t.ppf(0.975, 5) * v.std(ddof=1) * math.sqrt(1 + 1 / 6)
    assert abs(one["half"] - half) < 1e-12
    assert t_interval(list(v), runs=10)["half"] < one["half"]
    with pytest.raises(ValueError, match="at least 2"):
        t_interval([1.0])


def test_equal_values_have_a_point_interval():
    """Ten equal values (a deterministic fit over seeds: LR on auto-mpg's 140 test rows, 92/140): the mean is the
    value and the interval its point, exactly -- not the rounding of their sum (sd 8.4e-17)."""
    from attnlab.results import ci95

    v = [92 / 140] * 10
    got = t_interval(v)
    assert (got["mean"], got["sd"], got["half"], got["lo"], got["hi"]) == (92 / 140, 0.0, 0.0, 92 / 140, 92 / 140)
    assert ci95(v) == 0.0 and ci95([1.0]) is None
    assert t_interval([1.0, 1.0 + 2 ** -52])["half"] > 0          # unequal by one ulp: a (tiny) interval


@pytest.mark.parametrize("source, gain, paper, margin, verdict", [
    ("paper", 3.0, 3.0, 0.0, "holds"),                 # CI above 0
    ("paper", -3.0, 3.0, 0.0, "erratum"),              # CI below 0; the paper printed +3
    ("paper", -3.0, None, 0.0, "fails"),               # CI below 0; the paper prints no number
    ("paper", 0.0, 0.2, 0.0, "inconclusive"),          # CI contains 0 and the paper's effect
    ("paper", 0.0, 12.0, 0.0, "erratum"),              # CI contains 0; the paper's +12 far above any run
    ("paper", 3.0, 9.0, 7.0, "erratum"),               # "more than 7 points": CI below 7, paper 9 outside
    ("substitute", 3.0, 3.0, 0.0, "reproduced-on-substitute"),
    ("substitute", -3.0, 3.0, 0.0, "not-reproduced-on-substitute"),
    ("substitute", 0.0, 12.0, 0.0, "inconclusive"),    # on a substitute the paper's number never decides
])
def test_the_decision_rule(tmp_path, source, gain, paper, margin, verdict):
    _pairs(tmp_path, gain)
    ev = judge(_reg(source, paper, margin), tmp_path)
    assert ev.verdict == verdict
    assert ev.data["results"]["n_seeds_used"] == 5 and ev.data["results"]["data_source"] == source


@pytest.mark.parametrize("value, verdict", [(90.0, "holds"), (91.0, "holds"), (92.0, "erratum")])
def test_value_rule_holds_the_papers_number_against_a_single_run_interval(tmp_path, value, verdict):
    _pairs(tmp_path, 0.0)
    assert judge(_reg(paper=value, rule="value"), tmp_path).verdict == verdict
    sub = judge(_reg("substitute", paper=value, rule="value"), tmp_path).verdict
    assert sub == ("reproduced-on-substitute" if verdict == "holds" else "not-reproduced-on-substitute")


def test_below_rule(tmp_path):
    _pairs(tmp_path, 0.0)
    assert judge(_reg("substitute", rule="below", bound=95.0), tmp_path).verdict == "reproduced-on-substitute"
    assert judge(_reg("substitute", rule="below", bound=85.0), tmp_path).verdict == "not-reproduced-on-substitute"
    assert judge(_reg("substitute", rule="below", bound=90.0), tmp_path).verdict == "inconclusive"
    assert judge(_reg("paper", rule="below", bound=85.0), tmp_path).verdict == "fails"


def test_verdict_uses_exactly_the_registered_seeds(tmp_path):
    """Extra seeds never change a verdict; a missing registered seed makes it inconclusive; records of
    other seeds only are not evidence for it."""
    _pairs(tmp_path, 3.0)
    reg = _reg(paper=3.0)
    base = judge(reg, tmp_path)
    assert base.verdict == "holds" and base.measured["n"] == 5
    for s in range(5, 12):                                   # seeds 5-11 show the opposite
        _write(tmp_path, s, {"A": 70.0, "B": 90.0})
    again = judge(reg, tmp_path)
    assert again.verdict == "holds" and again.measured == base.measured
    (tmp_path / EXP / "full" / "seed2.json").unlink()          # a registered seed is gone
    short = judge(reg, tmp_path)
    assert short.verdict == "inconclusive" and short.data["results"]["n_seeds_used"] == 4
    assert "registered seeds missing" in short.explanation
    other = _reg(paper=3.0, seeds=(20, 21, 22))
    with pytest.raises(Skip, match=r"no registered seed \(20-22\)"):
        judge(other, tmp_path)


def test_unconverged_and_other_config_records_are_not_evidence(tmp_path):
    for s in range(5):
        _write(tmp_path, s, {"A": 95.0 + NOISE[s], "B": 90.0}, converged=False)
        _write(tmp_path, s, {"A": 95.0 + NOISE[s], "B": 90.0}, config="quick")
    with pytest.raises(Skip, match=r"full: 5 not converged, quick: 5"):
        judge(_reg(paper=3.0), tmp_path)
    # runs whose convergence could not be judged (converged: null) are no evidence either, and said so
    for s in range(3):
        _write(tmp_path, s, {"A": 95.0, "B": 90.0}, config="cpu", converged=None)
    with pytest.raises(Skip, match=r"cpu: 3 of unknown convergence, full: 5 not converged, quick: 5"):
        judge(_reg(paper=3.0), tmp_path)


def test_a_copied_record_is_one_seed(tmp_path, capsys):
    """`seed0 (copy).json` changes no verdict, no CI and no results table; copies that disagree drop the
    seed, with a warning."""
    from attnlab.results import summarize

    _pairs(tmp_path, 3.0)
    reg = _reg(paper=3.0)
    before, table = judge(reg, tmp_path), summarize("kernel", tmp_path)
    f = tmp_path / EXP / "full" / "seed0.json"
    (f.parent / "seed0 (copy).json").write_text(f.read_text())
    assert judge(reg, tmp_path).measured == before.measured
    assert summarize("kernel", tmp_path) == table
    assert "counted once" in capsys.readouterr().err
    _write(tmp_path, 0, {"A": 50.0, "B": 90.0}, name="seed0 (copy).json")
    short = judge(reg, tmp_path)
    assert short.verdict == "inconclusive" and short.data["results"]["n_seeds_used"] == 4
    rows = [r for r in summarize("kernel", tmp_path) if r["model"] == "A" and r["n_seeds"]]
    assert rows[0]["n_seeds"] == 4
    assert "disagree" in capsys.readouterr().err


@pytest.mark.parametrize("paper, verdict", [(0.3, "inconclusive"), (1.0, "erratum"), (None, "fails")])
def test_an_erratum_needs_the_papers_number_outside_the_interval_of_its_runs(tmp_path, paper, verdict):
    """CI of our mean [-1.08, -0.12] lies below the margin 0; the interval a single run of ours falls in is
    [-1.78, 0.58]: the paper's single-run +0.3 lies inside it (its number is not shown wrong: inconclusive, and
    the explanation says why), +1.0 outside (erratum); no printed number: fails."""
    _pairs(tmp_path, -0.6)
    ev = judge(_reg(paper=paper), tmp_path)
    lo, hi = ev.data["parts"][0]["paper_interval"]
    assert ev.data["parts"][0]["hi"] < 0 and abs(lo + 1.777) < 1e-3 and abs(hi - 0.577) < 1e-3
    assert ev.verdict == verdict
    assert ("its number is not shown wrong" in ev.explanation) == (verdict == "inconclusive")


def test_a_missing_seed_anywhere_makes_a_contradicted_claim_inconclusive(tmp_path):
    """Two parts: N=64 contradicted on all five seeds, N=128 short of seed 3.  The registered seeds are not
    all there, so neither an erratum (paper's data) nor not-reproduced (substitute): inconclusive."""
    for s in range(5):
        _write(tmp_path, s, {"A": 87.0 + NOISE[s], "B": 90.0}, name=f"seed{s}-64.json")
        if s != 3:
            _write(tmp_path, s, {"A": 93.0 + NOISE[s], "B": 90.0}, name=f"seed{s}-128.json", setting="N=128")
    for source, done in (("paper", "erratum"), ("substitute", "not-reproduced-on-substitute")):
        reg = _reg(source, paper=3.0)
        two = Registration(reg.claim, EXP, "full", "beats", (reg.parts[0], Part("N=128", "A", "accuracy", b="B",
                           paper=3.0)), reg.seeds, source, "holds", margin=0.0, paper_runs=1, deviation=reg.deviation)
        ev = judge(two, tmp_path)
        assert ev.verdict == "inconclusive" and "registered seeds missing" in ev.explanation
        _write(tmp_path, 3, {"A": 93.0 + NOISE[3], "B": 90.0}, name="seed3-128.json", setting="N=128")
        assert judge(two, tmp_path).verdict == done
        (tmp_path / EXP / "full" / "seed3-128.json").unlink()


@pytest.mark.parametrize("name", ["seed2 (copy).json", "seed2~copy.json"])
def test_copies_that_disagree_on_convergence_drop_the_seed_whatever_their_names(tmp_path, name):
    """A copy of an unconverged record marked converged, with the same value: which file sorts first must not
    decide (it did: 'holds' with n = 5 or 'inconclusive' with n = 4 by the name); the seed is left out and the
    claim says why."""
    _pairs(tmp_path, 3.0)
    _write(tmp_path, 2, {"A": 93.1, "B": 90.0}, converged=False)
    _write(tmp_path, 2, {"A": 93.1, "B": 90.0}, name=name)
    ev = judge(_reg(paper=3.0), tmp_path)
    assert ev.verdict == "inconclusive" and ev.data["results"]["n_seeds_used"] == 4
    assert "disagree on its convergence" in ev.explanation


def test_a_claim_names_the_copies_and_unusable_files_behind_it(tmp_path):
    """A copy counted once and a file that could not be used are said in the claim's explanation (they were
    only warnings of `attnlab results`)."""
    _pairs(tmp_path, 3.0)
    f = tmp_path / EXP / "full" / "seed0.json"
    (f.parent / "seed0 (copy).json").write_text(f.read_text())
    (f.parent / "seed7.json").write_text("{not json")
    ev = judge(_reg(paper=3.0), tmp_path)
    assert ev.verdict == "holds"
    assert "seed 0 hold A / N=64 / accuracy; counted once" in ev.explanation
    assert "1 record file(s) of kernel-time-warping skipped" in ev.explanation and "seed7.json" in ev.explanation


def test_a_nan_metric_is_refused_not_pooled(tmp_path, capsys):
    from attnlab.results import load_records

    _pairs(tmp_path, 3.0)
    bad = tmp_path / EXP / "full" / "seed9.json"
    bad.write_text(json.dumps({"experiment": EXP, "config": "full", "seed": 9, "metrics": [
        {"setting": "N=64", "model": "A", "metric": "accuracy", "value": float("nan")}]}))
    assert len(load_records(tmp_path, "kernel")) == 5
    assert "not finite" in capsys.readouterr().err


def test_registry_and_catalog_agree():
    """Every results claim is registered and every registration is a claim; expected verdicts come from
    the registry; no erratum or `fails` on a substitute."""
    results = {c.id: c for c in catalog.all_claims() if c.method == "results"}
    assert set(results) == set(REGISTRY)
    for cid, c in results.items():
        reg = REGISTRY[cid]
        assert c.registration is reg and c.expected == reg.expected
        assert c.expected in catalog.RESULTS_VERDICTS + ("skipped",)
        if reg.data_source == "substitute":
            assert c.expected not in ("erratum", "fails", "holds"), cid
        else:
            assert c.expected not in ("reproduced-on-substitute", "not-reproduced-on-substitute"), cid
        assert len(reg.seeds) >= 5 or reg.fixed_models, cid
        assert reg.margin_source


def test_fixed_model_registrations_hold_one_evaluation():
    """A registration of pretrained models (fewer seeds allowed) rests on records that are the same
    evaluation at every seed: the compared rows are equal across the registered seeds, and nothing is trained."""
    from attnlab.evidence import seed_values

    fixed = [reg for reg in REGISTRY.values() if reg.fixed_models]
    assert fixed
    for reg in fixed:
        assert len(reg.seeds) >= 2
        for part in reg.parts:
            for model in (part.a, part.b):
                vals, _ = seed_values(reg.experiment, reg.config, part.setting, model, part.metric)
                assert sorted(vals) == list(reg.seeds) and len(set(vals.values())) == 1, (reg.claim, model, vals)


def test_results_claims_report_their_registration_in_json(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    c = catalog.get_claim("kernel.results.time-warping-softmax")
    rec = catalog.run_claim(c).to_json()
    assert rec["verdict"] == "skipped" and rec["n_seeds_registered"] == 10 and rec["n_seeds_used"] == 0
    assert rec["data_source"] == "paper" and rec["paper_effect"] == pytest.approx(85.71 - 77.72)
    for s in range(10):
        _write(tmp_path, s, {"Kernel Softmax": 95.0 + NOISE[s % 5], "Cts Softmax": 90.0})
    rec = catalog.run_claim(c).to_json()
    assert rec["verdict"] == "holds" and rec["n_seeds_used"] == 10 and rec["margin"] == 0.0
    assert rec["ci95"][0] > 0 and set(rec) >= {"data_source", "statistic", "ci95", "paper_effect", "margin",
                                              "n_seeds_registered", "n_seeds_used"}


def test_every_paper_has_results_claims():
    from collections import Counter

    n = Counter(c.paper for c in catalog.all_claims() if c.method == "results")
    assert n["efa"] >= 8 and n["bidir"] >= 6 and n["fenchel"] >= 4 and n["kernel"] >= 6


def test_records_say_how_training_ended(tmp_path, monkeypatch):
    import argparse

    from attnlab.experiment import RunContext

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    args = argparse.Namespace(results_dir=str(tmp_path), quiet=True)
    full = RunContext(EXP, 0, "cpu", False, {}, args)
    # how training stopped is recorded, but it is no evidence of convergence (attnlab.convergence judges
    # the stored curves): a record without a curve is unknown, which counts as not converged
    rec = json.loads(full.write_record([], training={"stopped": "early-stop", "best_epoch": 3}).read_text())
    assert rec["training"]["best_epoch"] == 3
    assert rec["converged"] is None and rec["convergence"]["status"] == "unknown"
    hist = [[i + 1, v, v] for i, v in enumerate([5.0, 3.0, 2.0, 2.1, 2.2, 2.3])]
    rec = json.loads(full.write_record([], training={"stopped": "early-stop", "best_epoch": 3, "epochs_run": 6},
                                       extra={"history": hist}, trivial={"value": 4.0}).read_text())
    assert rec["converged"] is True and rec["convergence"]["status"] == "converged"


def test_efa_fit_records_the_stop_rule():
    from attnlab.experiments.efa.common import FitResult

    r = FitResult(12, 2, 0.5, 1.0, [], "early-stop", 1000)
    assert r.training() == {"stopped": "early-stop", "best_epoch": 2, "epochs_run": 12, "max_epochs": 1000}


def test_analogy_claim_refuses_substitutes_without_analogy_structure(tmp_path, monkeypatch):
    """Substitutes that answer under 5 % of the questions cannot rank; above that the paired CI decides."""
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    cl = catalog.get_claim("bidir.results.analogies-mlm-vs-cbow")
    mlm, cbow = "MLM-local [substitute for BERT]", "CBOW-local [substitute for word2vec]"

    def records(models):
        for s in range(5):
            # (the seeds' differences vary: seeds that all give one difference are no sample of it)
            rows = [{"setting": "overall", "model": m, "metric": "acc", "value": v + 0.001 * s * (1 + (m == cbow))}
                    for m, v in models.items()]
            f = tmp_path / "bidir-analogies" / "full" / f"seed{s}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps({"experiment": "bidir-analogies", "config": "full", "seed": s, "converged": True,
                                     "convergence": judgement(True), "training": {}, "metrics": rows}))

    records({mlm: 0.014, cbow: 0.019})
    with pytest.raises(Skip, match="both below 0.05"):
        cl.check()
    records({mlm: 0.08, cbow: 0.06})
    for s in range(5, 14):                      # seeds outside the registry (0-4) at 0: they change nothing
        f = tmp_path / "bidir-analogies" / "full" / f"seed{s}.json"
        f.write_text(json.dumps({"experiment": "bidir-analogies", "config": "full", "seed": s, "converged": True,
                                 "convergence": judgement(True), "training": {},
                                 "metrics": [{"setting": "overall", "model": m, "metric": "acc", "value": 0.0}
                                             for m in (mlm, cbow)]}))
    assert catalog.run_claim(cl).verdict == "reproduced-on-substitute"
    records({mlm: 0.30, cbow: 0.20})
    assert catalog.run_claim(cl).verdict == "reproduced-on-substitute"
    records({mlm: 0.20, cbow: 0.30})
    assert catalog.run_claim(cl).verdict == "not-reproduced-on-substitute"


def test_sentiment_averages_over_n_before_pairing(tmp_path, monkeypatch):
    """kernel.results.sentiment (Sec 6.4, 'on average' over N): a seed missing one N is not used."""
    from attnlab.evidence import seed_values

    for s in range(5):
        for N in ("N=32", "N=64", "N=128"):
            if (s, N) == (2, "N=64"):
                continue
            rows = [{"setting": N, "model": "Kernel Softmax", "metric": "accuracy", "value": 75.6 + NOISE[s] / 10}]
            f = tmp_path / "kernel-sentiment" / "full-es" / f"{N}-seed{s}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps({"experiment": "kernel-sentiment", "config": "full-es", "seed": s,
                                     "converged": True, "convergence": judgement(True), "training": {},
                                     "metrics": rows}))
    vals, _ = seed_values("kernel-sentiment", "full-es", ("N=32", "N=64", "N=128"), "Kernel Softmax", "accuracy",
                          root=tmp_path)
    assert sorted(vals) == [0, 1, 3, 4] and vals[0] == pytest.approx(75.64, abs=1e-12)


def test_a_moved_empirical_verdict_is_reported_as_a_finding(tmp_path, monkeypatch):
    """Records that give another verdict than the registered one make verify name it as a finding."""
    from attnlab.listing import summary_line

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    c = catalog.get_claim("kernel.results.ecg")                 # registered: inconclusive
    for s in range(5):
        rec = {"experiment": "kernel-ecg", "config": "full-es", "seed": s, "converged": True,
               "convergence": judgement(True), "training": {},
               "metrics": [{"setting": "test", "model": "Kernel Sparsemax", "metric": "accuracy", "value": 95.0 + NOISE[s]},
                           {"setting": "test", "model": "Cts Sparsemax", "metric": "accuracy", "value": 90.0}]}
        f = tmp_path / "kernel-ecg" / "full-es" / f"seed{s}.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(rec))
    r = catalog.run_claim(c)
    assert r.verdict == "reproduced-on-substitute" and not r.ok
    line = summary_line([r])
    assert "a finding" in line and "kernel.results.ecg reproduced on a substitute (registered: inconclusive)" in line


def test_registered_seeds_missing_are_named_as_such_not_as_a_finding(tmp_path, monkeypatch):
    """Two of five registered seeds copied: the verdict moves because seeds are missing; the summary called it
    'a finding' and sent an installed user to theory/preregistration.py (outside review)."""
    from attnlab.listing import summary_line

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    src = Path(__file__).resolve().parents[1] / "results" / "kernel-forda" / "full-es"
    if not src.is_dir():
        pytest.skip("no committed kernel-forda records in this checkout")
    dst = tmp_path / "kernel-forda" / "full-es"
    dst.mkdir(parents=True)
    for f in src.glob("*seed[01].json"):
        (dst / f.name).write_bytes(f.read_bytes())
    c = catalog.get_claim("kernel.results.forda-discrete-softmax")
    r = catalog.run_claim(c)
    assert not r.ok and r.evidence.data["results"]["seeds_missing"]
    line = summary_line([r], str(tmp_path))
    assert "a finding" not in line and f"1 empirical claim(s) miss registered seeds in {tmp_path}" in line, line


def test_verify_refuses_a_results_folder_that_is_not_there(tmp_path, monkeypatch, capsys):
    from attnlab.cli import main

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "nonexistent"))
    assert main(["verify", "--claim", "kernel.results.ecg"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "$ATTNLAB_RESULTS" in err[0] and "no such folder" in err[0]


def test_a_claim_skipped_for_a_missing_input_is_said_in_the_summary(monkeypatch, tmp_path, capsys):
    """An installed package without the paper's text skipped bidir.app-l.misnumbered-proof (expected erratum)
    and the summary said "all verdicts as expected" without a word."""
    from attnlab.cli import main

    monkeypatch.setenv("ATTNLAB_PAPERS", str(tmp_path))
    assert main(["verify", "--claim", "bidir.app-l.misnumbered-proof"]) == 0
    out = capsys.readouterr().out
    assert "1 claim(s) not checked here, an input missing (reason column): bidir.app-l.misnumbered-proof" in out
    assert "ATTNLAB_PAPERS" in out


def test_missing_records_are_a_disagreement_that_verify_names(tmp_path, monkeypatch, capsys):
    """An empirical claim registered with evidence that finds no records (an install without them, a wrong
    $ATTNLAB_RESULTS) is not 'as expected': verify says so and exits 1; a claim registered as skipped is fine."""
    from attnlab.cli import main

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    assert main(["verify", "--claim", "kernel.results.ecg"]) == 1
    assert "found no usable records" in capsys.readouterr().out
    assert main(["verify", "--claim", "fenchel.results.ot-vit-beats-vit-cifar100"]) == 0     # registered: skipped


def test_an_installed_package_reads_the_committed_records(tmp_path, monkeypatch):
    """Outside the repository, with no ./results and no $ATTNLAB_RESULTS, reading commands use the committed
    records (the repository's, or the copy a regular install ships as attnlab/records); writing stays ./results."""
    from attnlab import evidence
    from attnlab.experiment import results_root

    monkeypatch.delenv("ATTNLAB_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert results_root(read=True) == evidence.committed_records() == evidence.results_root()
    assert (evidence.committed_records() / "kernel-ecg").is_dir()
    assert str(results_root()) == "results"
    (tmp_path / "results").mkdir()
    assert str(results_root(read=True)) == "results"          # the user's own records, where they exist


def test_shown_interval_and_seed_count_belong_to_one_part():
    """A CI over the 10 seeds of one part was shown beside the fewest seeds of another part ("6/10"); a value
    claim showed the CI of our mean, not the interval its verdict holds the paper's number against."""
    from attnlab.catalog import get_claim, run_claim

    rec = run_claim(get_claim("bidir.results.tabular-atn-competitive-gb"))
    part = next(p for p in rec.evidence.data["parts"] if p["part"] == rec.evidence.measured["part"])
    assert rec.evidence.measured["n"] == rec.evidence.data["results"]["n_seeds_used"] == len(part["seeds"])
    assert rec.evidence.measured["ci95"] == [part["lo"], part["hi"]]
    rec = run_claim(get_claim("bidir.results.toy-corpus-p100"))
    lo, hi = rec.evidence.data["results"]["paper_interval"]
    paper = rec.evidence.data["results"]["paper_effect"]
    assert rec.verdict == "reproduced-on-substitute" and lo <= paper <= hi        # what decided it, shown
    assert not rec.evidence.measured["ci95"][0] <= paper <= rec.evidence.measured["ci95"][1]


def test_supported_direction_with_the_paper_size_outside_is_said():
    """On the paper's data a part supported by lo > margin whose printed effect lies above the interval of R runs
    of ours stays supported (the rule as registered), and its explanation says the size is not reproduced."""
    from attnlab.catalog import get_claim, run_claim

    rec = run_claim(get_claim("efa.results.movielens-ratings-v1"))
    res = rec.evidence.data["results"]
    assert rec.verdict == "holds" and res["paper_effect"] > res["paper_interval"][1]
    assert "the size it prints is not reproduced" in rec.evidence.explanation


def test_seeds_on_another_data_source_are_not_pooled(tmp_path, capsys):
    """A record trained on a substitute among the paper's data's seeds of one config was averaged into their row
    (labelled by whichever file came last): it is left out, with a warning naming `substitute`, whatever its
    file's name."""
    from attnlab.results import summarize

    _pairs(tmp_path, 3.0)
    table = summarize("kernel", tmp_path)
    for name in ("seed0.json", "seed4.json"):
        f = tmp_path / EXP / "full" / name
        rec = json.loads(f.read_text())
        f.write_text(json.dumps({**rec, "substitute": "another generator"}))
        rows = [r for r in summarize("kernel", tmp_path) if r["model"] == "A" and r["n_seeds"]]
        assert rows[0]["n_seeds"] == 4 and not rows[0]["substitute"]
        assert "different config values (substitute)" in capsys.readouterr().err
        f.write_text(json.dumps(rec))
    assert summarize("kernel", tmp_path) == table


def test_an_unreadable_folder_and_a_pipe_are_said_not_passed_over(tmp_path, capsys):
    """A config folder that cannot be listed left its seeds out in silence (the claim read "no registered seed");
    a named pipe among the records blocked every reader for ever.  Both are warnings, and the claim says them."""
    import os
    import stat as st

    from attnlab.results import load_records, record_files

    _pairs(tmp_path, 3.0)
    folder = tmp_path / EXP / "full"
    os.mkfifo(folder / "seed9.json")
    assert len(load_records(tmp_path, "kernel")) == 5
    assert "seed9.json: it is a named pipe, not a file" in capsys.readouterr().err
    ev = judge(_reg(paper=3.0), tmp_path)
    assert ev.verdict == "holds" and "named pipe" in ev.explanation
    # (os.scandir refused, as a folder without read permission does for a user other than root)
    real = os.scandir

    def refuse(path):
        if str(path) == str(folder):
            raise PermissionError(13, "Permission denied")
        return real(path)
    import attnlab.results as R
    try:
        os.scandir = refuse
        assert record_files(tmp_path, f"{EXP}/*/*.json", warn=print) == []
        assert "cannot read the folder" in capsys.readouterr().out
        with pytest.raises(Skip, match="cannot read the folder .*Permission denied"):
            judge(_reg(paper=3.0), tmp_path)
    finally:
        os.scandir = real
    assert R.record_files(tmp_path, f"{EXP}/*/*.json") == sorted(p for p in folder.glob("*.json")
                                                                  if st.S_ISREG(p.stat().st_mode))


def test_a_wrong_convergence_models_entry_is_skipped_not_a_traceback(tmp_path, capsys):
    from attnlab.results import load_records, summarize

    _pairs(tmp_path, 3.0)
    f = tmp_path / EXP / "full" / "seed0.json"
    rec = json.loads(f.read_text())
    for models in ({"N=64 A": "not-trained"}, ["not-trained"], "x"):
        f.write_text(json.dumps({**rec, "convergence": {"models": models}}))
        assert len(load_records(tmp_path, "kernel")) == 4
        assert "'convergence.models' is not an object" in capsys.readouterr().err
        summarize("kernel", tmp_path)


def test_wall_times_and_figures_count_a_copied_record_once(tmp_path, capsys):
    from attnlab.results import folder_records, wall_times

    _pairs(tmp_path, 3.0)
    for f in (tmp_path / EXP / "full").glob("seed*.json"):
        rec = json.loads(f.read_text())
        f.write_text(json.dumps({**rec, "wall_seconds": 10.0 + rec["seed"]}))
    before = wall_times("kernel", tmp_path)
    f = tmp_path / EXP / "full" / "seed0.json"
    (f.parent / "seed0 (copy).json").write_text(f.read_text())
    assert wall_times("kernel", tmp_path) == before and before[0]["n"] == 5
    assert len(folder_records(tmp_path / EXP / "full")) == 5
    assert "counted once" in capsys.readouterr().err


def test_records_judged_by_an_older_convergence_rule_count_as_not_judged(tmp_path, monkeypatch):
    """A record keeps the judgement of the rule it was written or migrated under; curve-v4 found curves that
    curve-v3 had called levelled.  A reader counts an older rule's judgement as none, and says how to re-judge."""
    from attnlab.convergence import RULE
    from attnlab.results import read_records, record_converged, row_converged

    src = Path(__file__).resolve().parents[1] / "results" / "efa-synthetic" / "full"
    files = sorted(src.glob("*.json"))[:2]
    if not files:
        pytest.skip("no committed records in this checkout")
    (tmp_path / "efa-synthetic" / "full").mkdir(parents=True)
    paths = []
    for i, f in enumerate(files):
        rec = json.loads(f.read_text())
        if i == 0:
            rec["convergence"]["rule"] = "curve-v3"
        dst = tmp_path / "efa-synthetic" / "full" / f.name
        dst.write_text(json.dumps(rec))
        paths.append(dst)
    warned = []
    recs = read_records(paths, warn=warned.append)
    assert [r["convergence"]["rule"] for r in recs] == ["curve-v3", RULE]
    assert not record_converged(recs[0]) and not any(row_converged(recs[0], m) for m in recs[0]["metrics"])
    assert record_converged(recs[1]) == (json.loads(files[1].read_text())["converged"] is True)
    assert len(warned) == 1 and "1 results record(s) were judged by another convergence rule (curve-v3)" in warned[0]
    assert f"python -m attnlab.migrate_convergence {tmp_path}" in warned[0]


@pytest.mark.parametrize("edit", ["converged beside at-chance", "judgement deleted", "not-trained, converged false",
                                  "row against its model"])
def test_a_judgement_that_is_missing_or_contradicts_itself_counts_as_not_judged(tmp_path, edit):
    """A record at chance (efa-synthetic FM seed 2) with `converged: true` beside status at-chance, or with the
    judgement deleted (what a record from before issue 44 looks like), or status not-trained beside `converged:
    false`, made efa.results.synthetic-unidirectional hold on 5 seeds instead of inconclusive on 4 (outside
    review): the readers took the flags as written.  Such a record now counts as not judged, with one warning."""
    from attnlab.results import read_records, record_converged, row_converged

    src = Path(__file__).resolve().parents[1] / "results" / "efa-synthetic" / "full" / "unidirectional-FM-seed2.json"
    if not src.exists():
        pytest.skip("no committed records in this checkout")
    rec = json.loads(src.read_text())
    assert rec["converged"] is False and rec["convergence"]["status"] == "at-chance"
    if edit == "converged beside at-chance":
        rec["converged"] = True
    elif edit == "judgement deleted":
        rec["converged"] = True
        del rec["convergence"]
    elif edit == "not-trained, converged false":
        rec["convergence"]["status"] = "not-trained"
    else:
        rec["converged"] = None
        rec["convergence"] = dict(rec["convergence"], status="unknown",
                                      models={"unidirectional FM": {"status": "at-chance"}})
        rec["metrics"] = [dict(m, converged=True) for m in rec["metrics"]]
    dst = tmp_path / "efa-synthetic" / "full" / src.name
    dst.parent.mkdir(parents=True)
    dst.write_text(json.dumps(rec))
    warned = []
    (got,) = read_records([dst], warn=warned.append)
    assert not record_converged(got) and not any(row_converged(got, m) for m in got["metrics"])
    assert len(warned) == 1 and "no convergence judgement or one that contradicts itself" in warned[0]
    # the committed record as it is: judged, no warning
    warned.clear()
    (same,) = read_records([src], warn=warned.append)
    assert same["convergence"]["status"] == "at-chance" and not warned


def test_a_claim_on_the_papers_data_counts_no_record_on_a_substitute(tmp_path):
    """The records' `substitute` was never held to the registration's data source: a claim registered on the
    paper's data judged model B's records, all on a substitute, paired with A's on the paper's data, as the paper's
    (outside review: efa.results.synthetic-unidirectional still held).  A registration on a substitute takes both
    (its records may be on the paper's data with another protocol)."""
    def records(b_data):
        for s in range(5):
            for m, v in (("A", 93.0 + NOISE[s]), ("B", 90.0)):
                f = _write(tmp_path, s, {m: v}, name=f"{m}-seed{s}.json")
                rec = dict(json.loads(f.read_text()), tag=m)
                f.write_text(json.dumps(dict(rec, substitute=b_data) if m == "B" and b_data else rec))

    records(None)
    assert judge(_reg("paper"), tmp_path).verdict == "holds"
    records("another data set")
    with pytest.raises(Skip, match="on a substitute \\(registered on the paper's data\\)"):
        judge(_reg("paper"), tmp_path)
    assert judge(_reg("substitute"), tmp_path).verdict == "reproduced-on-substitute"


def test_seeds_outside_the_registry_never_outvote_it(tmp_path):
    """The config values a folder's seeds share were decided by a majority over every seed: six unregistered seeds
    written at another value outvoted the five registered ones, which were left out (holds -> skipped, outside
    review).  A claim holds its registered seeds' records to each other only; a registered seed of other values
    is still left out, and said so in a note, not counted as a skipped file."""
    _pairs(tmp_path, 3.0)
    for s in range(5, 11):
        f = _write(tmp_path, s, {"A": 80.0, "B": 90.0})
        f.write_text(json.dumps(dict(json.loads(f.read_text()), config_values={"patience": 20})))
    for s in range(5):
        f = tmp_path / EXP / "full" / f"seed{s}.json"
        f.write_text(json.dumps(dict(json.loads(f.read_text()), config_values={"patience": 10})))
    assert judge(_reg("paper"), tmp_path).verdict == "holds"
    f = tmp_path / EXP / "full" / "seed4.json"
    f.write_text(json.dumps(dict(json.loads(f.read_text()), config_values={"patience": 20})))
    ev = judge(_reg("paper"), tmp_path)
    assert ev.verdict == "inconclusive" and ev.data["results"]["seeds_missing"] == {"A vs B / N=64 / accuracy": [4]}
    assert "seed(s) 4 left out (4 of 5 share the other values)" in ev.explanation
    assert "record file(s)" not in ev.explanation


def test_a_record_without_config_values_does_not_switch_the_check_off(tmp_path):
    """Values are compared on the keys every record of a group names: one record without config values left none,
    and a seed trained at lr 0.1 beside four at 0.001 counted again (outside review: inconclusive -> holds)."""
    _pairs(tmp_path, 3.0)
    for s in range(5):
        f = tmp_path / EXP / "full" / f"seed{s}.json"
        f.write_text(json.dumps(dict(json.loads(f.read_text()), config_values={"lr": 0.1 if s == 1 else 0.001})))
    assert judge(_reg("paper"), tmp_path).verdict == "inconclusive"          # seed 1 left out
    f = tmp_path / EXP / "full" / "seed3.json"
    rec = json.loads(f.read_text())
    del rec["config_values"]
    f.write_text(json.dumps(rec))
    ev = judge(_reg("paper"), tmp_path)
    assert ev.verdict == "inconclusive" and ev.data["results"]["seeds_missing"] == {"A vs B / N=64 / accuracy": [1, 3]}


def test_seeds_that_gave_one_value_are_no_sample(tmp_path):
    """Five copies of one run under five seeds' names (what a runner that ignores the seed writes) had a zero-width
    interval: an erratum against the paper's number (outside review).  Trained models whose seeds all agree to the
    last digit decide nothing; nor do fixed models (registered as one evaluation) whose seeds differ."""
    for s in range(5):
        _write(tmp_path, s, {"A": 87.0, "B": 90.0})
    ev = judge(_reg("paper", paper=3.0), tmp_path)
    assert ev.verdict == "inconclusive" and "gave the same value -3" in ev.explanation
    reg = dataclasses.replace(_reg("paper", paper=3.0), fixed_models=True)
    ev = judge(reg, tmp_path)                       # one evaluation, the same on every seed: as registered
    assert ev.verdict == "erratum" and "gave the same value" not in ev.explanation
    _write(tmp_path, 2, {"A": 86.0, "B": 90.0})
    ev = judge(reg, tmp_path)
    assert ev.verdict == "inconclusive" and "evaluations differ between seeds" in ev.explanation
