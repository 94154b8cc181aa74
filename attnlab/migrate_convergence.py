"""Re-judge the convergence of every results record by the rule of :mod:`attnlab.convergence`.

    python -m attnlab.migrate_convergence [RESULTS_DIR] [--dry-run] [--table]

Rewrites only each record's ``converged`` key(s) (the record's, and a metric row's where the row
carries its own) and its ``convergence`` object; every other key, value and the key order stay as
they were.  A record whose judgement does not change is not written; one that changes is written
atomically in attnlab's record layout (JSON, indent 2).  Where a record does not store its trivial
predictor's value, it is computed here from the experiment's own data split, through the runners'
own loaders (data found by the usual lookup: ``--data``-less, ``ATTNLAB_DATA`` or ``../shared/data``).
Nothing is written unless every record can be re-judged: a file that is no record of a known experiment,
or data that cannot be read here, is refused in one line (exit 2) before the first write (on a machine
without the data a migration would otherwise give other judgements); ``--dry-run`` reports the rest.
``--table`` prints, per (experiment, config), the records and how many were converged before and now,
by status, and lists the records at chance.
"""
from __future__ import annotations

import functools
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from attnlab.convergence import apply


# --------------------------------------------------------------------------- trivial values from data
@functools.lru_cache(maxsize=None)
def _kernel_labels(experiment: str, key: str):
    """(training labels, test labels) of a kernel experiment's data as the runner loads it; `key` is the
    JSON of the config values that change the data (downsample, subsets)."""
    import numpy as np

    cfg = json.loads(key)
    if experiment in ("kernel-ecg", "kernel-forda"):
        from attnlab.experiments.kernel import common as C

        dataset = {"kernel-ecg": "ucr-ecg5000", "kernel-forda": "ucr-forda"}[experiment]
        train, test, _ = C.load_ucr_split(dataset, cfg)
        return np.asarray(train[-1]), np.asarray(test[-1])
    if experiment == "kernel-gestures":
        from attnlab.experiments.kernel.gestures import load_series

        _, ytr, _, yte, _, _ = load_series(None)
    elif experiment == "kernel-sentiment":
        from attnlab.experiments.kernel.sentiment import load_texts

        _, ytr, _, yte, _ = load_texts(None)
    else:
        return None
    if cfg.get("subset"):
        ytr, yte = ytr[:cfg["subset"]], yte[:cfg["subset"]]
    return np.asarray(ytr), np.asarray(yte)


@functools.lru_cache(maxsize=None)
def _time_warping_labels(key: str):
    """(training labels, test labels) of kernel-time-warping's synthetic data for one seed, split as the
    runner splits it (the first test_fraction of the series are the test split)."""
    import numpy as np

    from attnlab.experiments.kernel import common as C

    cfg = json.loads(key)
    _, y, n_test = C.time_warping_split(cfg, cfg["seed"])
    return np.asarray(y[n_test:]), np.asarray(y[:n_test])


def _kernel_trivial(rec: dict) -> dict | None:
    import torch

    cv = rec.get("config_values") or {}
    if rec["experiment"] == "kernel-time-warping":
        if not all(k in cv for k in ("n", "length", "lam_max", "test_fraction")) or rec.get("seed") is None:
            return None
        labels = _time_warping_labels(json.dumps(
            {"n": cv["n"], "length": cv["length"], "lam_max": cv["lam_max"], "test_fraction": cv["test_fraction"],
             "seed": rec["seed"]}, sort_keys=True))
    else:
        key = json.dumps({k: cv.get(k) for k in ("downsample", "train_subset", "test_subset", "subset")},
                         sort_keys=True)
        labels = _kernel_labels(rec["experiment"], key)
    if labels is None:
        return None
    from attnlab.experiments.kernel import common as C

    ytr, yte = labels
    if cv.get("patience") is not None and cv.get("val_fraction"):
        tri, vai = C.validation_split(torch.as_tensor(ytr), float(cv["val_fraction"]))
        return C.trivial_accuracy(ytr[tri.numpy()], ytr[vai.numpy()])
    return C.trivial_accuracy(ytr, yte)


@functools.lru_cache(maxsize=None)
def _efa_trivial_cached(experiment: str, key: str) -> dict | None:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import data as D

    cv = json.loads(key)
    if experiment == "efa-movielens-sequences":
        from attnlab.experiments.efa.movielens_sequences import load

        seqs, (tr, va, _), _ = load(None, cv.get("split_seed", 42), cv.get("dedup_seed", 42))
        return C.trivial_loss(C.sequence_examples(seqs.subset(tr)), C.sequence_examples(seqs.subset(va)),
                              "categorical", 50)
    if experiment == "efa-instacart":
        import numpy as np

        train_b, _ = D.instacart_load(None)
        tr, va = D.split_two(len(train_b), cv["val_fraction"], seed=cv["split_seed"])
        if cv.get("max_train_baskets"):
            tr = tr[np.random.default_rng(0).permutation(len(tr))[:cv["max_train_baskets"]]]
            va = va[:max(1, cv["max_train_baskets"] // 3)]
        return C.trivial_loss(C.sequence_examples(train_b.subset(tr)), C.sequence_examples(train_b.subset(va)),
                              "categorical", 63)
    if experiment == "efa-movielens-ratings":
        seqs, _ = D.movielens_preprocess(D.movielens_frame(None), "ratings", seed=cv.get("dedup_seed", 42))
        tr, va, _ = D.split_three(len(seqs), (0.5625, 0.1875, 0.25), seed=cv.get("split_seed", 42))
        train, val = C.sequence_examples(seqs.subset(tr)), C.sequence_examples(seqs.subset(va))
        return {v: C.trivial_loss(train, val, f"poisson_{v}") for v in ("v1", "v2")}
    if experiment == "efa-temperature":
        from attnlab.experiments.efa import temperature as T

        grid = T.load_grid(None)
        tr = grid.split == "train"
        mu, s = float(grid.temps[tr].mean()), float(grid.temps[tr].std())
        return T.trivial({sp: T.examples(grid, sp, (mu, s)) for sp in ("train", "val")})
    if experiment == "efa-synthetic":
        from attnlab.experiments.efa import synthetic as S

        train, val, _, _ = S.make_data(cv, int(cv["_seed"]), "sequences")
        return C.trivial_loss(train, val, "mse", perfect=S.BAYES_MSE)
    return None


def _efa_trivial(rec: dict) -> dict | None:
    cv = dict(rec.get("config_values") or {})
    exp = rec["experiment"]
    if exp == "efa-synthetic":
        keep = {k: cv.get(k) for k in ("n_users", "n_train_users", "val_fraction")}
        keep["_seed"] = rec["seed"]
    elif exp == "efa-temperature":
        if rec.get("substitute") is None:
            return None                         # the paper's own (Kaggle) data: not in the offline store
        keep = {}
    else:
        keep = {k: cv.get(k) for k in ("split_seed", "dedup_seed", "val_fraction", "max_train_baskets")}
    out = _efa_trivial_cached(exp, json.dumps(keep, sort_keys=True))
    if isinstance(out, dict) and exp == "efa-movielens-ratings":
        out = out.get(str(rec.get("tag", "")).split("-")[0])
    return out


def _toy_corpus_trivial(rec: dict) -> dict:
    import numpy as np

    from attnlab.experiments.bidir import toy_corpus as T

    cv = rec.get("config_values") or {}
    corpus = T.sample_corpus(int(cv.get("n_sentences", T.N_SENTENCES)), np.random.default_rng(int(rec["seed"])))
    return T.trivial(corpus, [int(d) for d in (rec.get("extra") or {}).get("per_dim", {})])


@functools.lru_cache(maxsize=None)
def _tabular_sim_majority(data_seed: int, n: int, quick: bool) -> dict:
    """{setting label: the training labels' majority share} of bidir-tabular-sim's data sets of one data
    seed, regenerated exactly as the runner does (its generator, both binning protocols)."""
    from attnlab.experiments.bidir import tabular_sim as T
    from attnlab.experiments.bidir.baselines import majority_class_accuracy

    settings = T.QUICK_SETTINGS if quick else T.SETTINGS
    return {label: majority_class_accuracy(d["y_train"], d["y_train"])
            for label, d in T.make_datasets(int(data_seed), int(n), settings)}


@functools.lru_cache(maxsize=None)
def _auto_mpg_majority() -> dict:
    """{setting: the training labels' majority share} of bidir-auto-mpg's deterministic origin split,
    both binning protocols."""
    from attnlab.experiments.bidir import auto_mpg as A
    from attnlab.experiments.bidir.baselines import majority_class_accuracy

    df = A.load_auto_mpg(None)
    return {A.SETTING[prot]: majority_class_accuracy(d["y_train"], d["y_train"])
            for prot, d in ((prot, A.origin_split(df, prot)) for prot in A.PROTOCOLS)}


def _tabular_trivial(rec: dict) -> dict | None:
    if rec["experiment"] == "bidir-tabular-sim":
        data_seed = (rec.get("extra") or {}).get("data_seed")
        if data_seed is None:
            return None
        cv = rec.get("config_values") or {}
        maj = _tabular_sim_majority(int(data_seed), int(cv.get("n", 2000)), rec.get("config") == "quick")
    else:
        maj = _auto_mpg_majority()
    return {"rows": {k: {"value": v, "perfect": 1.0} for k, v in maj.items()}}


@functools.lru_cache(maxsize=None)
def _analogies_mlm_trivial(key: str) -> float:
    """The MLM's trivial value of bidir-analogies, from its corpus and windows as the runner builds them."""
    from attnlab.experiments.bidir import analogies as A
    from attnlab.experiments.models.bidir_analogy import windows

    cfg = json.loads(key)
    docs = A.corpus_documents(cfg["corpus"])
    vocab, widx = A.corpus_vocabulary(docs, cfg["min_count"])
    win = windows([[widx[w] for w in d if w in widx] for d in docs], cfg["mlm_window"])
    return A.mlm_trivial(win, len(vocab))


def _analogies_trivial(rec: dict) -> dict | None:
    from attnlab.experiments.bidir import analogies as A

    cv = rec.get("config_values") or {}
    if not cv.get("corpus") or not any(str(m.get("model", "")).startswith("MLM-local")
                                       for m in rec.get("metrics") or []):
        return None                             # pretrained embeddings only: no model trained on a corpus
    key = json.dumps({k: cv.get(k) for k in ("corpus", "min_count", "mlm_window")}, sort_keys=True)
    return {"rows": {A.MLM_SUB: {"value": _analogies_mlm_trivial(key), "perfect": 0.0}}}


def trivial_for(rec: dict, warn=None, errors: list | None = None) -> dict | None:
    """The trivial predictor's value for `rec`, computed from its experiment's data (None where the
    record stores it, the experiment has none to compute, or the data cannot be read: then the reason is
    appended to `errors` and passed to `warn`)."""
    exp = str(rec.get("experiment"))
    try:
        if exp.startswith("kernel-") and exp != "kernel-cost":
            return _kernel_trivial(rec)
        if exp.startswith("efa-"):
            return _efa_trivial(rec)
        if exp == "bidir-toy-corpus":
            return _toy_corpus_trivial(rec)
        stored = (rec.get("extra") or {})
        if exp in ("bidir-tabular-sim", "bidir-auto-mpg") and not stored.get("majority_class_train_share"):
            return _tabular_trivial(rec)
        if exp == "bidir-analogies" and not stored.get("trivial_loss"):
            return _analogies_trivial(rec)
    except Exception as exc:            # noqa: BLE001 -- a data set that cannot be read: value unknown
        why = f"{exp}: trivial value unknown ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        if errors is not None:
            errors.append(why)
        if warn:
            warn(why)
    return None


# --------------------------------------------------------------------------- migration
def _read(path: Path) -> tuple[dict | None, str | None]:
    """(record, None), or (None, why it cannot be re-judged): unreadable, not JSON of a record (atomic_io's
    reader: duplicate keys, numbers beyond float64), not a record of a known experiment."""
    from attnlab.atomic_io import read_json
    from attnlab.registry import RUN
    from attnlab.results import _record_problem

    try:
        rec = read_json(path)
    except ValueError as exc:
        return None, str(exc)
    problem = _record_problem(rec)
    if problem is None and str(rec.get("experiment")) not in RUN:
        problem = f"names experiment {str(rec.get('experiment'))[:40]!r}, which attnlab does not run"
    if problem is None and not isinstance(rec.get("seed"), int):
        problem = "its 'seed' is not an integer"
    return (None, f"{path}: {problem}") if problem else (rec, None)


def _was_converged(rec: dict) -> bool:
    """The judgement before this migration: a record judged by a curve rule (it stores a ``convergence``
    object) was converged iff ``converged`` is true; an older record by the rule before any curve rule,
    ``converged`` true or null (null counted as converged)."""
    if isinstance(rec.get("convergence"), dict) and rec["convergence"].get("rule"):
        return rec.get("converged") is True
    return "converged" in rec and rec["converged"] in (True, None)


def migrate(root: Path, dry_run: bool = False, warn=None) -> list[dict]:
    """Re-judge every record under `root` (``<experiment>/<config>/*.json``); one summary per record.

    Nothing is written unless every record can be re-judged here: a file that is no record of a known
    experiment, or a record whose trivial predictor needs data that cannot be read on this machine,
    raises UsageError (one line naming it) before the first record is rewritten -- a migration must not
    give other judgements on a machine that lacks the data (its records would lose their trivial values
    and become "unknown").  `dry_run` reports what it can and writes nothing."""
    from attnlab.errors import UsageError
    from attnlab.results import record_converged, record_files

    paths = record_files(Path(root), "*/*/*.json", warn)
    if not paths:
        raise UsageError(f"ROOT {root}: no records (<experiment>/<config>/*.json) under it")
    jobs, problems, no_data = [], [], []
    for p in paths:
        rec, problem = _read(p)
        if problem:
            problems.append(problem)
            continue
        errors: list = []
        trivial = trivial_for(rec, warn if dry_run else None, errors)
        if errors:
            no_data.append(f"{p.relative_to(root)}: {errors[0]}")
        jobs.append((p, rec, trivial))
    if problems and not dry_run:
        raise UsageError(f"{problems[0]}" + (f" (and {len(problems) - 1} more file(s))" if len(problems) > 1 else "")
                         + "; nothing was re-judged or written")
    if no_data and not dry_run:
        raise UsageError(f"the trivial predictor of {len(no_data)} record(s) needs data that cannot be read here ("
                         f"{no_data[0]}); point ATTNLAB_DATA at the data sets (or see what the rest gives with "
                         "--dry-run); nothing was re-judged or written")
    for problem in problems:                                       # --dry-run: said, and left out
        (warn or (lambda m: None))(f"left out: {problem}")
    out = []
    for p, before, trivial in jobs:
        after = apply(before, trivial)
        if after != before and not dry_run:
            from attnlab.atomic_io import atomic_write_text

            atomic_write_text(p, json.dumps(after, indent=2) + "\n")
        c = after["convergence"]
        at_chance = [k for k, j in (c.get("models") or {}).items() if j["status"] == "at-chance"]
        out.append({"path": str(p.relative_to(root)), "experiment": after.get("experiment"),
                    "config": after.get("config"), "tag": after.get("tag"), "seed": after.get("seed"),
                    "models": sorted({m.get("model") for m in after.get("metrics") or []}),
                    "before": _was_converged(before), "now": record_converged(after),
                    "status": c["status"], "reason": c.get("reason"), "at_chance_models": at_chance})
    return out


def stored_summary(root: Path) -> list[dict]:
    """The summary :func:`migrate` gives, from the judgement each record under `root` stores (nothing is
    re-judged or written): what docs/convergence.md shows as the records' state today."""
    from attnlab.results import read_records, record_converged

    out = []
    for rec in read_records(sorted(Path(root).glob("*/*/*.json")), warn=lambda m: None):
        c = rec.get("convergence") if isinstance(rec.get("convergence"), dict) else {}
        models = c.get("models") if isinstance(c.get("models"), dict) else {}
        out.append({"path": f"{rec['experiment']}/{rec['config']}/"
                            f"{(rec.get('tag') + '-') if rec.get('tag') else ''}seed{rec['seed']}.json",
                    "experiment": rec["experiment"], "config": rec["config"], "tag": rec.get("tag"),
                    "seed": rec["seed"], "models": sorted({m.get("model") for m in rec["metrics"]}),
                    "before": record_converged(rec), "now": record_converged(rec),
                    "status": c.get("status") or "unknown", "reason": c.get("reason"), "rule": c.get("rule") or "none",
                    "at_chance_models": [k for k, j in models.items() if isinstance(j, dict)
                                         and j.get("status") == "at-chance"]})
    return out


def table(summary: list[dict], history: bool = True) -> str:
    """Markdown: per (experiment, config) records, converged before / now (`history`), by status; then the
    records at chance."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for s in summary:
        groups[(s["experiment"], s["config"])].append(s)
    statuses = ("converged", "not-levelled", "at-chance", "unknown", "not-trained")
    head = "| experiment | config | records | " + ("converged before | usable now | " if history else "")
    lines = [head + " | ".join(statuses) + " |", "|---|---|---:|" + "---:|" * (len(statuses) + 2 * history)]
    total: Counter = Counter()
    for (exp, cfg), rows in sorted(groups.items()):
        st = Counter(r["status"] for r in rows)
        total.update(st)
        lines.append(f"| {exp} | {cfg} | {len(rows)} | " + (f"{sum(r['before'] for r in rows)} | "
                     f"{sum(r['now'] for r in rows)} | " if history else "")
                     + " | ".join(str(st.get(k, 0)) for k in statuses) + " |")
    if not history:
        lines.append(f"| **all** | | {len(summary)} | " + " | ".join(str(total.get(k, 0)) for k in statuses) + " |")
    chance = [r for r in summary if r["status"] == "at-chance" or r["at_chance_models"]]
    lines += ["", f"Records at chance ({len(chance)}):", ""]
    if chance:
        lines += ["| experiment | config | model(s) | seed | record | reason |", "|---|---|---|---:|---|---|"]
        for r in chance:
            models = ", ".join(r["at_chance_models"]) or ", ".join(m for m in r["models"] if m != "-")
            lines.append(f"| {r['experiment']} | {r['config']} | {models} | {r['seed']} | {r['path']} | "
                         f"{r['reason']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from attnlab.atomic_io import check_json_dest, write_json_dest
    from attnlab.errors import ArgumentParser, UsageError

    p = ArgumentParser(prog="python -m attnlab.migrate_convergence", description=__doc__.splitlines()[0])
    p.add_argument("root", nargs="?", default="results", metavar="ROOT", help="results folder (default: ./results)")
    p.add_argument("--dry-run", action="store_true", help="judge and report, write nothing")
    p.add_argument("--table", action="store_true", help="print the before/now table and the records at chance")
    p.add_argument("--json", default=None, metavar="FILE", help="write the per-record summary to this file ('-': stdout)")
    try:
        args = p.parse_args(argv)
        root = Path(args.root)
        if not root.is_dir():
            raise UsageError(f"ROOT {root}: " + ("is a file, not a results folder" if root.exists()
                                                 else "no such results folder"))
        check_json_dest(args.json)
        summary = migrate(root, args.dry_run, warn=lambda m: print(f"attnlab: warning: {m}", file=sys.stderr))
    except UsageError as exc:
        print(f"attnlab: error: {exc}", file=sys.stderr)
        return 2
    if args.json == "-":
        print(json.dumps(summary, indent=1))
    else:
        write_json_dest(args.json, summary)
    if args.table:
        print(table(summary))
    elif args.json != "-":
        st = Counter(s["status"] for s in summary)
        print(f"{len(summary)} records: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
