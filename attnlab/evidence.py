"""Empirical claims judged from the committed results records (`method="results"` claims).

Every results claim is pre-registered in :mod:`attnlab.theory.preregistration` (the statistic, the
margin and where it comes from, the seeds, the data source and the decision rule) and judged here by
:func:`judge`, on exactly the registered seeds, in seed order.  Extra seeds in the records are shown by
`attnlab results` but never change a verdict.

The decision rule, stated once for all claims (docs/results_verdicts.md gives it with examples).  For one
part of a claim (a setting, a pair of models, a layer):

- the statistic d is oriented so that d > margin is what the paper states ("A beats B": the paired
  difference A - B over seeds, sign-flipped where lower is better; "below a bound": bound - mean);
  its 95% Student-t confidence interval over the n registered seeds is [lo, hi];
- the paper's own value of d (its printed effect, or its printed number for a "value" claim), where the
  paper prints one, is held against the interval that a paper's result over R runs would fall in if the
  paper and we measured the same thing: mean ± t_{n-1} · sd · sqrt(1/n + 1/R) (R = the paper's run count;
  1 for a single run or where the paper does not say: the widest interval, the least likely to call an
  erratum);
- *supported*: lo > margin (for a value claim: the paper's number lies inside that interval);
  *contradicted*: hi <= margin, or the paper's effect lies above that interval (for a value claim:
  outside it); otherwise *undecided*.

A claim with several parts is supported when every part is, contradicted when any part is, else
undecided; a claim whose registered seeds are not all there (converged, on the registered config) in every
part is undecided whatever its parts say.  Verdicts: supported -> `holds` (paper's data and protocol) or
`reproduced-on-substitute`; contradicted -> `erratum` (paper's data and protocol, and the paper's printed
number lies outside the interval of R runs of ours), `fails` (paper's data, but the paper prints no number
for the statement), `inconclusive` (paper's data, our interval at or below the margin, but the paper's
number inside the interval of R runs of ours: not shown wrong) or `not-reproduced-on-substitute`;
undecided -> `inconclusive`.  On a substitute the paper's number never decides a comparison (other data,
other scale): only the margin does.  A claim with no usable record at all is `skipped`, with the reason.
Copies of a row counted once or left out (attnlab.results.unique_rows) and record files that could not be
used are said in the explanation.

Results root: $ATTNLAB_RESULTS, else the committed records (:func:`committed_records`: the
repository's results/ folder, or the copy an installed package ships), so that a claim reads the
committed records wherever attnlab verify runs.
"""
from __future__ import annotations

import functools
import math
import os
from collections import Counter
from pathlib import Path

from attnlab.catalog import Evidence, Skip


def committed_records() -> Path:
    """The committed results records: the repository's results/ folder in a source checkout (an editable
    install), else the copy a regular install ships as package data (``attnlab/records``)."""
    repo = Path(__file__).resolve().parents[1] / "results"
    if repo.is_dir():
        return repo
    return Path(__file__).resolve().parent / "records"


def results_root() -> Path:
    env = os.environ.get("ATTNLAB_RESULTS")
    return Path(env) if env else committed_records()


@functools.lru_cache(maxsize=None)
def t95(n: int) -> float:
    """The 0.975 quantile of Student's t with n - 1 degrees of freedom (the 95% two-sided interval of a
    mean of n values); every t interval of the project takes it from here."""
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1))


def t_interval(values: list[float], runs: float = math.inf) -> dict:
    """Mean, sd and the 95% Student-t interval of >= 2 values: for the mean (``runs`` = inf, the
    confidence interval) or for the mean of ``runs`` further runs (mean ± t·sd·sqrt(1/n + 1/runs))."""
    n = len(values)
    if n < 2:
        raise ValueError(f"a t interval needs at least 2 values; got {n}")
    if min(values) == max(values):             # equal values (a fixed model, a deterministic fit): sd 0 exactly,
        m, sd = float(values[0]), 0.0           # not the rounding of their sum (8.4e-17 for ten LR fits)
    else:
        m = sum(values) / n
        sd = math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1))
    h = t95(n) * sd * math.sqrt(1 / n + (0.0 if math.isinf(runs) else 1 / runs))
    return {"mean": m, "sd": sd, "half": h, "lo": m - h, "hi": m + h, "n": n}


# (experiment, root) -> (the files' (path, mtime, size), records, files skipped); (experiment, root, seeds) -> (the
# same stamp, rows, notes on copies by row key, notes on records left out as of another config)
_CACHE: dict[tuple, tuple] = {}


def _read(experiment: str, root: Path, seeds: tuple[int, ...] | None = None) -> tuple:
    """(rows, notes, skipped, left out) of one experiment: its (record, metric row) pairs, each (config, setting,
    model, metric, seed) once (attnlab.results.unique_rows); the warnings on copies by that 6-tuple; the warnings
    on the files that could not be used; those on records left out as written with other config values than
    their config's others (attnlab.results.consistent_records).  With `seeds` (a claim's registered seeds) only their
    records are read and held to each other: seeds outside the registry never change a verdict (six extra seeds
    of other values outvoted the five registered ones, which were then left out).  Read again only when a file
    of the experiment changed."""
    from attnlab.results import consistent_records, read_records, record_files, unique_rows

    listing: list[str] = []                 # a folder that cannot be listed, a pipe or device among the files
    files = record_files(root, f"{experiment}/*/*.json", warn=listing.append)
    key, stamp = (experiment, str(root)), (tuple(listing), tuple((str(f), *_stat(f)) for f in files))
    if _CACHE.get(key, (None,))[0] != stamp:
        # only this experiment's files (each read once per process): a record filed under another
        # experiment's folder is refused by read_records as misplaced
        skipped: list[str] = list(listing)
        recs = [r for r in read_records(files, warn=skipped.append, consistent=False)
                if r.get("experiment") == experiment]
        _CACHE[key] = (stamp, recs, skipped)
    _, recs, skipped = _CACHE[key]
    sel = (experiment, str(root), seeds)
    if _CACHE.get(sel, (None,))[0] != stamp:
        left_out: list[str] = []
        notes: dict[tuple, str] = {}
        mine = recs if seeds is None else [r for r in recs if r.get("seed") in seeds]
        rows = list(unique_rows(consistent_records(mine, left_out.append), warn=lambda m: None, notes=notes))
        _CACHE[sel] = (stamp, rows, notes, left_out)
    _, rows, notes, left_out = _CACHE[sel]
    return rows, notes, skipped, left_out


def _rows(experiment: str, root: Path, seeds: tuple[int, ...] | None = None) -> list:
    """(record, metric row) pairs of one experiment (:func:`_read`)."""
    return _read(experiment, root, seeds)[0]


def _stat(f: Path) -> tuple[int, int]:
    try:
        st = f.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, 0


def seed_values(experiment: str, config: str, setting: str | tuple[str, ...], model: str, metric: str,
                root: Path | None = None, paper_data: bool = False,
                seeds: tuple[int, ...] | None = None) -> tuple[dict[int, float], Counter]:
    """({seed: value} over the converged rows of `config`, Counter of all matching rows by (config,
    converged: True, False, or None where the run's convergence could not be judged)): the second says
    what evidence there is when the first is short.  `setting` may be a
    tuple (a claim about an average over settings): a seed's value is then its mean over all of them,
    and only seeds that have all count.  paper_data: only records on the paper's data count (no `substitute`);
    the others are counted in the second under (config, "other data").  seeds: only these seeds' records, held
    to each other's config values (:func:`_read`)."""
    from attnlab.results import row_converged, row_unknown

    root = Path(root) if root is not None else results_root()
    settings = (setting,) if isinstance(setting, str) else tuple(setting)
    per, have = {s: {} for s in settings}, Counter()
    for r, m in _rows(experiment, root, seeds):
        if m["setting"] not in per or (m["model"], m["metric"]) != (model, metric):
            continue
        if paper_data and r.get("substitute"):
            # (a claim registered on the paper's data judged records on a substitute as the paper's, EFA's on the
            # paper's data paired with FM's on a substitute among them)
            have[(r.get("config"), "other data")] += 1
            continue
        ok = row_converged(r, m)
        have[(r.get("config"), True if ok else None if row_unknown(r, m) else False)] += 1
        if r.get("config") == config and ok and isinstance(r.get("seed"), int):
            per[m["setting"]][r["seed"]] = float(m["value"])
    common = set.intersection(*(set(v) for v in per.values()))
    return {seed: sum(per[s][seed] for s in settings) / len(settings) for seed in sorted(common)}, have


def _where(part) -> str:
    s = part.setting if isinstance(part.setting, str) else " + ".join(part.setting)
    return f"{part.a}{' vs ' + part.b if part.b else ''} / {s} / {part.metric}"


def _part_values(reg, part, root) -> tuple[dict[int, float], Counter]:
    """{seed: d} of one part over the registered seeds it has (d oriented: larger = the statement)."""
    paper = reg.data_source == "paper"
    va, have = seed_values(reg.experiment, reg.config, part.setting, part.a, part.metric, root, paper, reg.seeds)
    sign = 1.0 if reg.higher_is_better else -1.0
    if reg.rule == "beats":
        vb, have_b = seed_values(reg.experiment, reg.config, part.setting, part.b, part.metric, root, paper,
                                 reg.seeds)
        for k, c in have_b.items():                     # (b's rows on other data: a skip names them too)
            if k[1] == "other data":
                have[(k[0], "other data of " + str(part.b))] += c
        vals = {s: sign * (va[s] - vb[s]) for s in reg.seeds if s in va and s in vb}
    elif reg.rule == "below":
        vals = {s: part.bound - va[s] for s in reg.seeds if s in va}
    else:   # "value": the metric itself
        vals = {s: va[s] for s in reg.seeds if s in va}
    return vals, have


def _decide(reg, part, stats: dict) -> str:
    """'supported' | 'contradicted' | 'undecided' for one part (the rule of the module docstring)."""
    paper = part.paper
    wide = t_interval(stats["values"], reg.paper_runs)
    if reg.rule == "value":
        return "supported" if wide["lo"] <= paper <= wide["hi"] else "contradicted"
    if stats["lo"] > reg.margin:
        return "supported"
    if stats["hi"] <= reg.margin:
        return "contradicted"
    if reg.data_source == "paper" and paper is not None and paper > wide["hi"]:
        return "contradicted"
    return "undecided"


VERDICT_OF = {("supported", "paper"): "holds", ("supported", "substitute"): "reproduced-on-substitute",
              ("contradicted", "substitute"): "not-reproduced-on-substitute",
              ("undecided", "paper"): "inconclusive", ("undecided", "substitute"): "inconclusive"}


def judge(reg, root: Path | None = None) -> Evidence:
    """The verdict of a registered results claim (a :class:`attnlab.theory.preregistration.Registration`)
    from the records under `root`, on exactly its registered seeds."""
    root = Path(root) if root is not None else results_root()
    parts, missing, have_by_part, odd = [], {}, [], []
    for part in reg.parts:
        vals, have = _part_values(reg, part, root)
        have_by_part.append((part, have))
        lack = [s for s in reg.seeds if s not in vals]
        if lack:
            missing[_where(part)] = lack
        entry = {"part": _where(part), "seeds": sorted(vals), "values": [vals[s] for s in sorted(vals)],
                 "paper_effect": part.paper}
        if len(vals) >= 2:
            entry.update({k: v for k, v in t_interval(entry["values"]).items() if k in ("mean", "lo", "hi")})
            # the interval the paper's number is held against: where the mean of R runs of ours would fall
            wide = t_interval(entry["values"], reg.paper_runs)
            entry["paper_interval"] = [wide["lo"], wide["hi"]]
            entry["decision"] = _decide(reg, part, entry) if not lack else "undecided"
            same = min(entry["values"]) == max(entry["values"])
            if same != reg.fixed_models:
                # trained models whose seeds all gave the same value did not vary with the seed (copies, or a runner
                # that ignores it): their zero-width interval made an erratum of five copies of one run; fixed models
                # (one evaluation, the same on every seed) that differ are not what was registered
                entry["decision"] = "undecided"
                odd.append(f"{_where(part)}: " + (
                    f"the {len(vals)} seeds gave the same value {entry['values'][0]:.6g}: runs that do not vary with "
                    "the seed are no sample of it" if same else "the fixed models' evaluations differ between seeds"))
        parts.append(entry)
    notes, skipped = _notes(reg, root)
    if not any(p["seeds"] for p in parts):
        state = {True: "", False: " not converged", None: " of unknown convergence",
                 "other data": " on a substitute (registered on the paper's data)"}
        state.update({k[1]: f" of {k[1][len('other data of '):]} on a substitute (registered on the paper's data)"
                      for _, have in have_by_part for k in have if str(k[1]).startswith("other data of ")})
        found = "; ".join(f"{_where(part) if len(reg.parts) > 1 else part.a}: "
                          + ", ".join(f"{cfg}: {c}{state[ok]}" for (cfg, ok), c in sorted(have.items(), key=str))
                          for part, have in have_by_part if have)
        raise Skip(f"no registered seed ({_seeds(reg.seeds)}) of {reg.experiment} ({reg.config}) has converged records "
                   f"of every model it compares" + (f" (rows of {found})" if found else " (no records)")
                   + "".join(f"; {m}" for m in notes + skipped))
    decisions = [p.get("decision", "undecided") for p in parts]
    # a registered seed missing anywhere makes the claim inconclusive (docs/results_verdicts.md), also where
    # another part is contradicted: erratum and not-reproduced need the registered seeds
    overall = ("undecided" if missing else "contradicted" if "contradicted" in decisions else
               "supported" if all(d == "supported" for d in decisions) else "undecided")
    inside = []
    if overall == "contradicted" and reg.data_source == "paper":
        hits = [p for p in parts if p.get("decision") == "contradicted"]
        # an erratum needs the paper's printed number outside the interval R runs of ours would fall in; a
        # statement our mean contradicts while the paper's number lies inside that interval is inconclusive
        outside = [p for p in hits if p["paper_effect"] is not None
                   and not p["paper_interval"][0] <= p["paper_effect"] <= p["paper_interval"][1]]
        inside = [p for p in hits if p["paper_effect"] is not None and p not in outside]
        if outside:
            verdict = "erratum"
        elif len(inside) < len(hits):
            verdict = "fails"
        else:
            verdict, overall = "inconclusive", "undecided"
    else:
        verdict = VERDICT_OF[(overall, reg.data_source)]
    key = inside[0] if inside else _deciding_part(reg, parts, overall)
    # the seeds behind the interval shown: the deciding part's (the fewest over the parts paired a part's interval
    # with another part's count, e.g. a CI over 10 seeds shown as "6/10")
    used = len(key["seeds"])
    measured = {"part": key["part"], "mean": key.get("mean"),
                "ci95": [key["lo"], key["hi"]] if "lo" in key else None, "paper_effect": key["paper_effect"],
                "paper_interval": key.get("paper_interval"), "n": used}
    results = {"data_source": reg.data_source, "statistic": reg.statistic, "ci95": measured["ci95"],
               "paper_interval": measured["paper_interval"], "paper_runs": reg.paper_runs,
               "paper_effect": key["paper_effect"], "margin": reg.margin if reg.rule != "value" else None,
               "n_seeds_registered": len(reg.seeds), "n_seeds_used": used,
               "seeds_missing": {k: sorted(v) for k, v in missing.items()}}
    # on the paper's data a part may be supported (lo > margin) while the paper's printed effect lies above the
    # interval of R runs of ours: the rule decides "supported" first (as registered); the size is said here
    above = [p for p in parts if reg.rule != "value" and reg.data_source == "paper" and p.get("decision") == "supported"
             and p["paper_effect"] is not None and "paper_interval" in p and p["paper_effect"] > p["paper_interval"][1]]
    expl = (f"{reg.experiment} ({reg.config}), seeds {_seeds(reg.seeds)}: {reg.rule_text()}"
            + (f"; registered seeds missing: {'; '.join(f'{k}: {_seeds(v)}' for k, v in missing.items())}"
               if missing else "")
            + "".join(f"; {p['part']}: the direction holds, but the paper's effect {p['paper_effect']:.3g} lies above "
                      f"the interval of {reg.paper_runs} run(s) of ours (up to {p['paper_interval'][1]:.3g}): the size "
                      "it prints is not reproduced" for p in above)
            + "".join(f"; {p['part']}: our interval lies at or below the margin {reg.margin:g} (the statement does not "
                      f"hold on average), but the paper's {p['paper_effect']:.3g} lies inside the interval of "
                      f"{reg.paper_runs} run(s) of ours [{p['paper_interval'][0]:.3g}, {p['paper_interval'][1]:.3g}]: "
                      "its number is not shown wrong" for p in inside)
            + "".join(f"; {m}" for m in odd + notes + skipped))
    return Evidence(verdict, measured, reg.tolerance_text(), expl,
                    {"results": results, "parts": parts, "margin_source": reg.margin_source,
                     "deviation": reg.deviation or None})


def _notes(reg, root: Path) -> tuple[list[str], list[str]]:
    """What the reader of a claim must know about its records: the copies of its rows (counted once, or the
    seed left out where they disagree), for its registered seeds, and the files of its experiment that could
    not be used (unreadable, misplaced, a number beyond float64), at most three named."""
    _, notes, skipped, left_out = _read(reg.experiment, root, reg.seeds)
    mine = []
    for part in reg.parts:
        settings = (part.setting,) if isinstance(part.setting, str) else tuple(part.setting)
        for model in (part.a, part.b) if part.b else (part.a,):
            for st in settings:
                for seed in reg.seeds:
                    msg = notes.get((reg.experiment, reg.config, st, model, part.metric, seed))
                    if msg and msg not in mine:
                        mine.append(msg)
    files = [f"{len(skipped)} record file(s) of {reg.experiment} skipped: " + "; ".join(skipped[:3])
             + ("; ..." if len(skipped) > 3 else "")] if skipped else []
    # (records left out as of another config were counted as "record file(s) skipped", one per warning)
    mine += [m for m in left_out if f"{reg.experiment} ({reg.config}" in m]
    return mine, files


def _deciding_part(reg, parts: list[dict], overall: str) -> dict:
    """The part that decides the verdict: the first contradicted or undecided one, else (all supported)
    the closest call -- the smallest distance of the interval from the margin."""
    for p in parts:
        if p.get("decision", "undecided") == overall and overall != "supported":
            return p
    if reg.rule == "value":
        return parts[0]
    return min(parts, key=lambda p: p["lo"])


def _seeds(seeds) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))
