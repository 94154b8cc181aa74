"""Empirical claims judged from the committed results records (`method="results"` claims).

A results claim reads the records of one experiment and config (attnlab.results.load_records, the one
loader), keeps the converged ones (the record's `converged`: its config's stop rule fired; a metric row's
own `converged` where one record trains several models), and judges
the paper's statement with the seeds' Student-t 95% confidence interval.  It never gives a verdict from
unconverged or too few records: it raises Skip with the reason ("needs >= 5 converged seeds of config
full; have 2 (quick: 5)").

    seed_values(experiment, config, setting, model, metric)      {seed: value} of the converged records
                                                                  (setting: one, or a tuple to average over)
    paired_difference(experiment, config, setting, metric, a, b) mean and CI of value(a) - value(b)
                                                                  over the seeds both have
    mean_ci(experiment, config, setting, model, metric)           mean and CI of one model's values
    better / not_better / in_range                                 the evidence of a results claim

Results root: $ATTNLAB_RESULTS, else the repository's results/ folder (so that a claim reads the
committed records wherever attnlab verify runs).
"""
from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

from attnlab.catalog import Skip

MIN_SEEDS = 5


def results_root() -> Path:
    env = os.environ.get("ATTNLAB_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "results"


def _records(experiment: str, root: Path | None = None) -> list[dict]:
    from attnlab.results import load_records

    paper = experiment.split("-", 1)[0]
    return [r for r in load_records(root or results_root(), paper, warn=lambda m: None)
            if r.get("experiment") == experiment]


def seed_values(experiment: str, config: str, setting: str | tuple[str, ...], model: str, metric: str,
                root: Path | None = None) -> tuple[dict[int, float], Counter]:
    """({seed: value} over the converged records of `config`, Counter of all matching records by
    (config, converged)) -- the second says what evidence there is when the first is too small.
    `setting` may be a tuple of settings (a claim about an average over them, e.g. over N): a seed's
    value is then the mean of its values in every one of them, and only seeds that have all count."""
    from attnlab.results import row_converged

    settings = (setting,) if isinstance(setting, str) else tuple(setting)
    per, have = {s: {} for s in settings}, Counter()
    for r in _records(experiment, root):
        for m in r.get("metrics", []):
            if m["setting"] not in per or (m["model"], m["metric"]) != (model, metric):
                continue
            ok = row_converged(r, m)
            have[(r.get("config"), ok)] += 1
            if r.get("config") == config and ok:
                per[m["setting"]][int(r["seed"])] = float(m["value"])
    common = set.intersection(*(set(v) for v in per.values()))
    return {seed: sum(per[s][seed] for s in settings) / len(settings) for seed in sorted(common)}, have


def _t95(n: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1))


def _ci(values: list[float]) -> dict:
    """Mean, Student-t 95% CI half-width, [lo, hi] and n of >= 2 values."""
    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1))
    h = _t95(n) * sd / math.sqrt(n)
    return {"mean": m, "ci95": h, "lo": m - h, "hi": m + h, "n": n}


def _need(n: int, need: int, config: str, have: Counter, what: str) -> None:
    if need < 2:
        raise ValueError(f"min_seeds must be at least 2 (a t confidence interval needs two seeds); got {need!r}")
    if n >= need:
        return
    parts = [f"{cfg}: {c}{'' if ok else ' unconverged'}" for (cfg, ok), c in sorted(have.items(), key=str)]
    raise Skip(f"needs >= {need} converged seeds of config {config} for {what}; have {n}"
               + (f" (records: {', '.join(parts)})" if parts else " (no records)"))


def mean_ci(experiment: str, config: str, setting: str, model: str, metric: str,
            min_seeds: int = MIN_SEEDS, root: Path | None = None) -> dict:
    """Mean, CI half-width, [lo, hi] and n of one model's metric over converged seeds (or Skip)."""
    vals, have = seed_values(experiment, config, setting, model, metric, root)
    _need(len(vals), min_seeds, config, have, f"{model} / {setting} / {metric}")
    return {**_ci(list(vals.values())), "seeds": sorted(vals)}


def paired_difference(experiment: str, config: str, setting: str, metric: str, a: str, b: str,
                      min_seeds: int = MIN_SEEDS, root: Path | None = None) -> dict:
    """value(a) - value(b) over the seeds both have (paired: same data and split per seed): mean,
    CI half-width, [lo, hi], n (or Skip)."""
    va, ha = seed_values(experiment, config, setting, a, metric, root)
    vb, _ = seed_values(experiment, config, setting, b, metric, root)
    common = sorted(set(va) & set(vb))
    where = setting if isinstance(setting, str) else " + ".join(setting)
    _need(len(common), min_seeds, config, ha, f"{a} vs {b} / {where} / {metric}")
    n = len(common)
    return {**_ci([va[s] - vb[s] for s in common]), "seeds": common,
            "mean_a": sum(va[s] for s in common) / n, "mean_b": sum(vb[s] for s in common) / n}


def better(experiment: str, config: str, setting: str, metric: str, winner: str, loser: str,
           lower_is_better: bool, margin: float = 0.0, min_seeds: int = MIN_SEEDS, root: Path | None = None):
    """Evidence for "winner beats loser (by more than margin)": holds when the whole 95% CI of the
    paired difference lies on the better side of the margin; fails otherwise (including a CI that
    contains it: not distinguishable at our seeds)."""
    from attnlab.catalog import holds_if

    d = paired_difference(experiment, config, setting, metric, winner, loser, min_seeds, root)
    ok = d["hi"] < -margin if lower_is_better else d["lo"] > margin
    side = "below" if lower_is_better else "above"
    return holds_if(ok, measured={"diff_mean": d["mean"], "ci95": [d["lo"], d["hi"]], "n": d["n"],
                                  winner: d["mean_a"], loser: d["mean_b"]},
                    tolerance=f"95% CI of {winner} - {loser} entirely {side} {'-' if lower_is_better else ''}{margin:g}",
                    explanation=f"{experiment} ({config}), {setting}, {metric}: paired over seeds {d['seeds']}")


def not_better(experiment: str, config: str, setting: str, metric: str, winner: str, loser: str,
               max_abs: float, lower_is_better: bool = False, min_seeds: int = MIN_SEEDS, root: Path | None = None):
    """Evidence for an erratum of "winner beats loser" whose corrected form is "the two are not
    distinguishable": printed holds when the 95% CI of the paired difference winner - loser lies on the
    better side of 0 (above 0, or below 0 when `lower_is_better`); corrected holds when the CI contains 0
    and |mean| < `max_abs`."""
    from attnlab.catalog import erratum_if

    d = paired_difference(experiment, config, setting, metric, winner, loser, min_seeds, root)
    printed = d["hi"] < 0 if lower_is_better else d["lo"] > 0
    return erratum_if(printed, d["lo"] <= 0 <= d["hi"] and abs(d["mean"]) < max_abs,
                      measured={"diff_mean": d["mean"], "ci95": [d["lo"], d["hi"]], "n": d["n"],
                                winner: d["mean_a"], loser: d["mean_b"]},
                      tolerance=f"printed: CI of {winner} - {loser} {'below' if lower_is_better else 'above'} 0; "
                                f"corrected: CI contains 0 and |mean| < {max_abs:g}",
                      explanation=f"{experiment} ({config}), {setting}, {metric}: paired over seeds {d['seeds']}")


def in_range(experiment: str, config: str, setting: str, model: str, metric: str, lo: float, hi: float,
             min_seeds: int = MIN_SEEDS, root: Path | None = None):
    """Evidence for "the metric lies in [lo, hi]": holds when the 95% CI of the mean over seeds does."""
    from attnlab.catalog import holds_if

    s = mean_ci(experiment, config, setting, model, metric, min_seeds, root)
    return holds_if(lo <= s["lo"] and s["hi"] <= hi, measured={"mean": s["mean"], "ci95": [s["lo"], s["hi"]],
                                                               "n": s["n"]},
                    tolerance=f"95% CI within [{lo:g}, {hi:g}]",
                    explanation=f"{experiment} ({config}), {setting}, {model}, {metric}; seeds {s['seeds']}")
