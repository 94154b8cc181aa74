"""scikit-learn baselines of the tabular experiments (paper App. E; the authors' `baseline_results.py`).

LR, RF, GB and MLP on one-hot features; RF, GB and MLP are tuned by 5-fold stratified grid search on
accuracy (``GridSearchCV(scoring='accuracy', cv=StratifiedKFold(folds, shuffle=True, random_state=seed))``),
LR is not tuned (as in the authors' code, although App. E implies every competitor is).  GB's search is
`StagedGridSearchCV`, which fits each fold once at the largest ``n_estimators`` and scores the smaller
ones from its staged predictions: the same scores and choice as GridSearchCV, in fewer trees.

Grids: ``paper`` is App. E's grid (5 folds, MLP max_iter 2000); ``reduced`` (3 folds, a 2-point RF
grid, fixed GB/MLP points from App. E's grid, MLP max_iter 200) and ``quick`` are smaller for CPU
budgets (the grid used is recorded in every results record and in docs/bidir_experiments.md).
"""
from __future__ import annotations

import warnings

import numpy as np

MODELS = ("LR", "RF", "GB", "MLP")

GRIDS = {
    "paper": {
        "RF": {"criterion": ["gini", "entropy"], "n_estimators": [50, 100, 200], "max_depth": [1, 3, None]},
        "GB": {"learning_rate": [0.01, 0.1, 1], "n_estimators": [50, 100, 200], "max_depth": [1, 3, 5]},
        "MLP": {"hidden_layer_sizes": [(50,), (100,), (100, 50)], "alpha": [1e-4, 1e-3, 1e-2],
                "learning_rate": ["constant", "adaptive"]},
    },
    "reduced": {
        "RF": {"criterion": ["gini"], "n_estimators": [50], "max_depth": [3, None]},
        "GB": {"learning_rate": [0.1], "n_estimators": [50], "max_depth": [1]},
        "MLP": {"hidden_layer_sizes": [(50,)], "alpha": [1e-4], "learning_rate": ["constant"]},
    },
    "quick": {
        "RF": {"criterion": ["gini"], "n_estimators": [20], "max_depth": [3]},
        "GB": {"learning_rate": [0.1], "n_estimators": [10], "max_depth": [1]},
        "MLP": {"hidden_layer_sizes": [(20,)], "alpha": [1e-4], "learning_rate": ["constant"]},
    },
}

CV_FOLDS = {"paper": 5, "reduced": 3, "quick": 2}
MLP_MAX_ITER = {"paper": 2000, "reduced": 200, "quick": 100}


def one_hot(X_train: np.ndarray, X_test: np.ndarray, n_levels: int | list[int]) -> tuple[np.ndarray, np.ndarray]:
    """One-hot with the first level dropped (``pd.get_dummies(drop_first=True)``), with the level set
    fixed in advance so that train and test columns always line up (the authors encode the two
    separately, which misaligns columns when a level is absent from one of them)."""
    X_train, X_test = np.asarray(X_train), np.asarray(X_test)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError(f"X_train and X_test must be 2-d with the same number of columns; got "
                         f"{X_train.shape} and {X_test.shape}")
    levels = [n_levels] * X_train.shape[1] if np.ndim(n_levels) == 0 else list(n_levels)

    def enc(X):
        cols = [(X[:, j:j + 1] == np.arange(1, levels[j])[None]).astype(np.float64) for j in range(X.shape[1])]
        return np.concatenate(cols, axis=1)
    return enc(X_train), enc(X_test)


class StagedGridSearchCV:
    """``GridSearchCV(scoring='accuracy')`` for a boosting grid over ``n_estimators``: each fold and
    each point of the other parameters is fitted once, at the largest ``n_estimators``, and every
    smaller size is scored from the staged predictions of that fit.

    Stage i of gradient boosting does not depend on how many stages follow (the trees draw from one
    RandomState in order and the raw score is accumulated stage by stage in the same order), so the
    stage-k prediction of the large fit is the k-tree model's prediction: the same fold scores, mean
    scores, ranks, choice and refit as GridSearchCV (tested against it), at 200 instead of 350 trees
    per (fold, learning rate, depth) on App. E's grid.  Ties go to the first candidate in
    ``ParameterGrid`` order, as in GridSearchCV."""

    def __init__(self, estimator, param_grid: dict, cv, n_jobs: int = 1):
        if "n_estimators" not in param_grid:
            raise ValueError("param_grid must include 'n_estimators' (the staged parameter)")
        self.estimator, self.param_grid, self.cv, self.n_jobs = estimator, param_grid, cv, n_jobs

    def fit(self, X, y):
        from joblib import Parallel, delayed
        from scipy.stats import rankdata
        from sklearn.base import clone
        from sklearn.metrics import accuracy_score
        from sklearn.model_selection import ParameterGrid

        X, y = np.asarray(X), np.asarray(y)
        candidates = list(ParameterGrid(self.param_grid))
        sizes = set(self.param_grid["n_estimators"])
        others = list(ParameterGrid({k: v for k, v in self.param_grid.items() if k != "n_estimators"}))
        splits = list(self.cv.split(X, y))

        def fold_scores(params, train, test):
            est = clone(self.estimator).set_params(**params, n_estimators=max(sizes)).fit(X[train], y[train])
            return {k: accuracy_score(y[test], pred)
                    for k, pred in enumerate(est.staged_predict(X[test]), start=1) if k in sizes}

        done = Parallel(n_jobs=self.n_jobs)(delayed(fold_scores)(o, tr, te) for o in others for tr, te in splits)
        scores = np.empty((len(candidates), len(splits)))
        for i, cand in enumerate(candidates):
            j = others.index({k: v for k, v in cand.items() if k != "n_estimators"})
            scores[i] = [done[j * len(splits) + s][cand["n_estimators"]] for s in range(len(splits))]
        means = np.average(scores, axis=1)
        ranks = rankdata(-means, method="min").astype(np.int32)
        self.best_index_ = int(ranks.argmin())
        self.best_params_ = candidates[self.best_index_]
        self.cv_results_ = {"params": candidates, "mean_test_score": means, "rank_test_score": ranks,
                            **{f"split{s}_test_score": scores[:, s] for s in range(len(splits))}}
        self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_).fit(X, y)
        return self

    def predict(self, X):
        return self.best_estimator_.predict(X)


def make_estimators(seed: int, grid: str = "paper", n_jobs: int = 1) -> dict:
    """The four baselines (App. E) as fitted-to-be sklearn estimators, tuned ones wrapped in
    GridSearchCV (its grid points and folds over `n_jobs` processes; the choice does not depend on
    `n_jobs`)."""
    if grid not in GRIDS:
        raise ValueError(f"grid must be one of {', '.join(GRIDS)}; got {grid!r}")
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.neural_network import MLPClassifier

    g = GRIDS[grid]
    mlp_iter = MLP_MAX_ITER[grid]
    folds = StratifiedKFold(CV_FOLDS[grid], shuffle=True, random_state=seed)   # the same splits for every model

    def cv(est, params):
        return GridSearchCV(est, params, scoring="accuracy", n_jobs=n_jobs, cv=folds)
    return {
        "LR": LogisticRegression(random_state=seed, max_iter=2000),
        "RF": cv(RandomForestClassifier(random_state=seed), g["RF"]),
        "GB": StagedGridSearchCV(GradientBoostingClassifier(random_state=seed), g["GB"], n_jobs=n_jobs, cv=folds),
        "MLP": cv(MLPClassifier(random_state=seed, max_iter=mlp_iter, learning_rate_init=0.01), g["MLP"]),
    }


def accuracy_mse(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Accuracy and MSE on ordinal class indices (the paper's two metrics)."""
    pred, y = np.asarray(pred), np.asarray(y)
    if pred.shape != y.shape:
        raise ValueError(f"pred and y must have the same shape; got {pred.shape} and {y.shape}")
    return float(np.mean(pred == y)), float(np.mean((pred.astype(float) - y) ** 2))


def _single_point(grid) -> dict | None:
    if not grid or any(len(v) != 1 for v in grid.values()):
        return None
    return {k: v[0] for k, v in grid.items()}


def majority_class_accuracy(y_train, y_test) -> float:
    """Test accuracy of the trivial predictor: the majority class of the training labels (the lowest
    such class on a tie), attnlab.convergence's trivial value of a classifier's test accuracy."""
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if y_train.size == 0 or y_test.size == 0:
        raise ValueError("y_train and y_test must not be empty")
    values, counts = np.unique(y_train, return_counts=True)
    return float(np.mean(y_test == values[int(np.argmax(counts))]))


def solver_stop(est, convergence_warning: bool | None) -> dict | None:
    """How an iterative solver's final fit stopped (LR's lbfgs, the MLP's adam): {n_iter, max_iter,
    convergence_warning}; None for an estimator without one (the tree ensembles).  `n_iter` is the
    largest over LR's per-class fits."""
    est = getattr(est, "best_estimator_", est)
    if not hasattr(est, "n_iter_") or not hasattr(est, "max_iter"):
        return None
    return {"n_iter": int(np.max(est.n_iter_)), "max_iter": int(est.max_iter),
            "convergence_warning": convergence_warning}


def run_baselines(X_train, y_train, X_test, y_test, n_levels, seed: int, grid: str = "paper",
                  models=MODELS, n_jobs: int = 1) -> dict:
    """Fit each baseline on one-hot features; returns {model: {acc, mse, train_acc, train_mse, best,
    solver}} (`solver`: :func:`solver_stop` of the final fit)."""
    from sklearn.exceptions import ConvergenceWarning

    Xtr, Xte = one_hot(X_train, X_test, n_levels)
    ests = make_estimators(seed, grid, n_jobs)
    out = {}
    for name in models:
        if name not in ests:
            raise ValueError(f"models must be among {', '.join(MODELS)}; got {name!r}")
        est = ests[name]
        single = _single_point(getattr(est, "param_grid", None))
        if single is not None:
            # A one-point grid: cross-validation cannot change the choice, and GridSearchCV's refit is
            # this very fit; skipping the folds gives the identical model at a fraction of the cost.
            est = est.estimator.set_params(**single)
        with warnings.catch_warnings(record=True) as caught:
            # Small folds can miss a rare class; MLPs may stop at max_iter: both are expected here, and
            # are recorded (not shown).  A grid search's fold fits warn too: only a fit that is the final
            # model (no grid search) has its warnings counted; after a search, n_iter tells.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("always", ConvergenceWarning)     # a UserWarning: this filter goes first
            est.fit(Xtr, y_train)
        searched = hasattr(est, "best_estimator_")
        warned = None if searched else any(issubclass(w.category, ConvergenceWarning) for w in caught)
        acc, mse = accuracy_mse(est.predict(Xte), y_test)
        tacc, tmse = accuracy_mse(est.predict(Xtr), y_train)
        best = single if single is not None else getattr(est, "best_params_", None)
        out[name] = {"acc": acc, "mse": mse, "train_acc": tacc, "train_mse": tmse,
                     "best": {k: (list(v) if isinstance(v, tuple) else v) for k, v in (best or {}).items()},
                     "solver": solver_stop(est, warned)}
    return out
