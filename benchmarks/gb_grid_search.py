"""Bidirectional attention, Table 1 baselines: GB's grid search (App. E) by sklearn's GridSearchCV
against `StagedGridSearchCV` (one fit per fold and (learning rate, depth) at the largest
n_estimators, smaller sizes scored from its staged predictions), side by side in one run.

    python benchmarks/gb_grid_search.py [--setting 1,0,0.1] [--rows N] [--jobs 1]

Data: one data set of `bidir-tabular-sim` (the authors' first seed, authors' pooled bins, full config
size unless --rows takes the first N training rows).  Prints the CPU time of each search
(time.process_time of this process, so a loaded machine slows both alike; with --jobs > 1 the worker
processes are not counted, so use wall time there), the ratio GridSearchCV / staged, and whether the
two agree exactly (every mean CV score, the chosen point, the test predictions).  Expected ratio on
App. E's grid: about 350 / 200 trees = 1.75.  It asserts nothing; exit code 1 if the two disagree.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np

from attnlab.errors import ArgumentParser, UsageError


def main(argv=None) -> int:
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from attnlab.experiments.bidir import tabular_sim as T
    from attnlab.experiments.bidir.baselines import CV_FOLDS, GRIDS, StagedGridSearchCV, one_hot

    p = ArgumentParser(prog="benchmarks/gb_grid_search.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--setting", default="1,0,0.1", help="n_c,noise,corr of Table 1 (default 1,0,0.1)")
    p.add_argument("--rows", type=int, default=None, help="use the first ROWS training rows (default all)")
    p.add_argument("--jobs", type=int, default=1, help="processes for both searches (default 1)")
    args = p.parse_args(argv)
    try:
        nc, noise, corr = (float(v) for v in args.setting.split(","))
    except ValueError:
        raise UsageError(f"--setting must be n_c,noise,corr (e.g. 1,0,0.1); got {args.setting!r}")
    if (int(nc), noise, corr) not in T.SETTINGS:
        raise UsageError(f"--setting must be one of {', '.join(','.join(f'{v:g}' for v in s) for s in T.SETTINGS)}")
    if args.rows is not None and args.rows < 20:
        raise UsageError(f"--rows must be >= 20; got {args.rows}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1; got {args.jobs}")

    seed = T.authors_seeds(1)[0]
    (label, d), = T.make_datasets(seed, T.CONFIGS["full"]["n"], [(int(nc), noise, corr)], protocols=("pooled",))
    Xtr, Xte = one_hot(d["x_train"], d["x_test"], T.C)
    ytr = d["y_train"]
    if args.rows:
        Xtr, ytr = Xtr[:args.rows], ytr[:args.rows]
    grid = GRIDS["paper"]["GB"]
    cv = StratifiedKFold(CV_FOLDS["paper"], shuffle=True, random_state=seed)
    print(f"data set {label}, data seed {seed}: {len(ytr)} training rows, {Xtr.shape[1]} one-hot columns; "
          f"grid {grid}, {cv.n_splits} folds, jobs {args.jobs}; load average {os.getloadavg()[0]:.2f}")
    out = {}
    for name, search in (("GridSearchCV", GridSearchCV(GradientBoostingClassifier(random_state=seed), grid,
                                                       scoring="accuracy", cv=cv, n_jobs=args.jobs)),
                         ("staged", StagedGridSearchCV(GradientBoostingClassifier(random_state=seed), grid,
                                                       cv=cv, n_jobs=args.jobs))):
        t, w = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            search.fit(Xtr, ytr)
        out[name] = (time.process_time() - t, time.perf_counter() - w, search)
        print(f"  {name:12s} cpu {out[name][0]:8.1f} s   wall {out[name][1]:8.1f} s   best {search.best_params_}")
    (c1, w1, ref), (c2, w2, got) = out["GridSearchCV"], out["staged"]
    same = (np.array_equal(ref.cv_results_["mean_test_score"], got.cv_results_["mean_test_score"])
            and ref.best_params_ == got.best_params_ and np.array_equal(ref.predict(Xte), got.predict(Xte)))
    print(f"ratio GridSearchCV / staged: cpu {c1 / c2:.2f}x, wall {w1 / w2:.2f}x; "
          f"identical scores, choice and predictions: {same}; load average {os.getloadavg()[0]:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
