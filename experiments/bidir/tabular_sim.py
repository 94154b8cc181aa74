"""`attnlab run bidir-tabular-sim`: Table 1 of Wibisono & Wang (UAI 2023), the covariate-shift simulation.

Twelve settings (n_c, noise, corr) ∈ {1,5} × {0, 0.5, 1.5} × {0.1, 0.9}; for each data set
(K = 5 ordinal features, C = 10 classes, 2000 train and 2000 test rows, App. D) we fit LR, RF, GB,
MLP (App. E) and the tabular attention model ATN (Sec. 3.1) and report test accuracy and MSE on the
class indices.  Each data set is discretised under two protocols, reported side by side:
- ``pooled`` (the authors' code): quantile bins fitted on train and test concatenated (a mild
  leakage of the test distribution into the features); setting label ``(n_c, noise, corr)``;
- ``train-only`` (leakage-free): bins fitted on the training rows, test rows put into them;
  setting label ``(n_c, noise, corr) train-only bins``.

Seed k uses the authors' k-th data seed (``np.random.seed(2023); np.random.randint(10000, size=20)``,
the first is 4951); the same seed drives data, baselines and ATN, as in the authors' code.
One results record per (model, seed), ``<config>/<model>-seed<k>.json``, holds every setting × protocol:
ATN (cheap) can run for the authors' 20 seeds while the grid-searched baselines run for fewer.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import numpy as np

from attnlab.experiments.bidir.baselines import MODELS as BASELINES, majority_class_accuracy, run_baselines
from attnlab.experiment import metric_row
from attnlab.experiments.bidir.common import add_config_flag, config_name, log, run_context

EXPERIMENT = "bidir-tabular-sim"
K, C, N = 5, 10, 2000
SETTINGS = [(nc, noise, corr) for nc in (1, 5) for noise in (0.0, 0.5, 1.5) for corr in (0.1, 0.9)]
PROTOCOLS = ("pooled", "train-only")
MODELS = BASELINES + ("ATN",)

CONFIGS = {
    # The paper's configuration (App. D, E; Keras ATN: 200 epochs, batch 128).
    "full": {"n": N, "settings": "all 12", "protocols": list(PROTOCOLS), "grid": "paper",
             "atn_epochs": 200, "atn_batch": 128, "atn_parallel": 6},
    # For a shared 2-core CPU: ATN for 20 epochs instead of 200, 2-point baseline grids.
    "reduced": {"n": N, "settings": "all 12", "protocols": list(PROTOCOLS), "grid": "reduced",
                "atn_epochs": 20, "atn_batch": 128, "atn_parallel": 6},
    # CI smoke test: 2 settings, 300 rows, 2 ATN epochs, one-point grids.
    "quick": {"n": 300, "settings": "(5, 0, 0.9) and (1, 0.5, 0.1)", "protocols": list(PROTOCOLS),
              "grid": "quick", "atn_epochs": 2, "atn_batch": 128, "atn_parallel": 4},
}
QUICK_SETTINGS = [(5, 0.0, 0.9), (1, 0.5, 0.1)]


MAX_TABULAR_SEED = 100_000


def authors_seeds(n: int = 20) -> list[int]:
    """The authors' data seeds: ``np.random.seed(2023); np.random.randint(10000, size=n)``.

    (A dedicated legacy RandomState reproduces that stream without touching global state; the
    first 20 are the published ones, more extend the same stream.)"""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    return [int(s) for s in np.random.RandomState(2023).randint(10000, size=n)]


def setting_label(nc: int, noise: float, corr: float, protocol: str = "pooled") -> str:
    """The paper's row label (n_c, noise, corr), plus the protocol for the leakage-free bins."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got {protocol!r}")
    base = f"({nc}, {noise:g}, {corr:g})"
    return base if protocol == "pooled" else base + " train-only bins"


def cholesky_lower(cov) -> np.ndarray:
    """The lower Cholesky factor L of a symmetric positive definite matrix (cov = L Lᵀ), computed in
    plain IEEE float arithmetic in a fixed order: unlike a LAPACK call, the result is the same to the
    last bit on every machine, and unlike the SVD square root it is unique."""
    a = np.asarray(cov, dtype=float)
    d = a.shape[0]
    L = [[0.0] * d for _ in range(d)]
    for i in range(d):
        for j in range(i + 1):
            s = float(a[i, j])
            for k in range(j):
                s -= L[i][k] * L[j][k]
            if i == j:
                if s <= 0.0:
                    raise ValueError(f"cov must be positive definite; pivot {i} is {s:g}")
                L[i][j] = s ** 0.5
            else:
                L[i][j] = s / L[j][j]
    return np.array(L)


def gaussian_cholesky(rs: np.random.RandomState, cov, n: int) -> np.ndarray:
    """n draws of N(0, cov): the same standard normals as ``rs.multivariate_normal(0, cov, n)`` (so the
    rest of the random stream is unchanged), mapped by the Cholesky factor instead of numpy's SVD square
    root.  The SVD's singular vectors are not unique when cov has a repeated eigenvalue (cov = c·J +
    (1−c)·I has one of multiplicity D−1), so numpy's samples change with the BLAS/LAPACK kernel; the
    Cholesky factor is unique and the product is taken elementwise in a fixed order (no BLAS)."""
    L = cholesky_lower(cov)
    z = rs.standard_normal((int(n), L.shape[0]))
    x = np.zeros_like(z)
    for j in range(L.shape[0]):
        x += z[:, j:j + 1] * L[:, j]
    return x


def _dot_fixed_order(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """x @ beta summed column by column (elementwise IEEE operations, no BLAS): the same bits everywhere."""
    out = np.zeros(x.shape[0])
    for j in range(x.shape[1]):
        out += x[:, j] * beta[j]
    return out


def generate_continuous(n: int, nc: int, corr: float, noise: float, seed: int, D: int = K,
                        y_noise: float = 2.0) -> dict:
    """Continuous covariate-shift data of App. D, in the authors' order of random draws.

    Train covariates x_true ~ N(0, corr·J + (1−corr)·I), test ones ~ N(0, (1−corr)·J + corr·I); the
    first D//2 coordinates are sign-flipped in both (the code flips test too; App. D says train only);
    observed x = x_true + noise·s·ε with s = 0.4 for the n_c causal and 0.3 for the other features;
    y = x_true[:, :n_c] β + y_noise·ε, β ~ 10·U(0,1)^{n_c}.  Uses a legacy ``RandomState(seed)`` so that
    the streams match the authors' ``np.random.seed(seed)`` code, with one change: the Gaussian
    covariates are mapped by the Cholesky factor (:func:`gaussian_cholesky`), not by numpy's SVD square
    root, so that the data are the same on every machine.  Same distribution, same standard normals,
    same later draws; each covariate row is a different (rotated) point than on the authors' machine.
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    if not isinstance(nc, (int, np.integer)) or not 1 <= nc <= D:
        raise ValueError(f"nc must be an integer in 1..{D}; got {nc!r}")
    if not 0.0 <= corr < 1.0:
        raise ValueError(f"corr must be in [0, 1); got {corr}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0; got {noise}")
    rs = np.random.RandomState(int(seed))
    J, I = np.ones((D, D)), np.eye(D)
    x_tr_true = gaussian_cholesky(rs, corr * J + (1 - corr) * I, n)
    x_tr_true[:, : D // 2] *= -1
    x_te_true = gaussian_cholesky(rs, (1 - corr) * J + corr * I, n)
    x_te_true[:, : D // 2] *= -1
    scale = np.array([0.4 * noise] * nc + [0.3 * noise] * (D - nc))
    x_tr = x_tr_true + scale * rs.normal(size=(n, D))
    x_te = x_te_true + scale * rs.normal(size=(n, D))
    beta = rs.uniform(size=nc) * 10
    y_tr = _dot_fixed_order(x_tr_true[:, :nc], beta) + y_noise * rs.normal(size=n)
    y_te = _dot_fixed_order(x_te_true[:, :nc], beta) + y_noise * rs.normal(size=n)
    return {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te, "beta": beta,
            "x_train_true": x_tr_true, "x_test_true": x_te_true}


def quantile_bins(train: np.ndarray, test: np.ndarray, n_bins: int, protocol: str) -> tuple[np.ndarray, np.ndarray]:
    """Quantile-bin one column into 0..n_bins-1 (``pd.qcut(·, n_bins, labels=False)``).

    ``pooled``: bins fitted on train and test concatenated (the authors' code);
    ``train-only``: bins fitted on train; test values go into the same right-closed intervals, values
    beyond the training range into the outer bins."""
    import pandas as pd

    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got {protocol!r}")
    train, test = np.asarray(train, float), np.asarray(test, float)
    if protocol == "pooled":
        b = pd.qcut(np.concatenate([train, test]), n_bins, labels=False)
        b = np.asarray(b, dtype=np.int64)
        return b[: len(train)], b[len(train):]
    b, edges = pd.qcut(train, n_bins, labels=False, retbins=True)
    inner = edges[1:-1]
    # qcut intervals are right-closed, (e_{k}, e_{k+1}]: the bin is the number of inner edges < x.
    return np.asarray(b, dtype=np.int64), np.searchsorted(inner, test, side="left").astype(np.int64)


def discretize(data: dict, protocol: str, n_bins: int = C) -> dict:
    """Bin every covariate and the response into n_bins quantile classes (App. D) under `protocol`."""
    cols_tr, cols_te = [], []
    for j in range(data["x_train"].shape[1]):
        a, b = quantile_bins(data["x_train"][:, j], data["x_test"][:, j], n_bins, protocol)
        cols_tr.append(a)
        cols_te.append(b)
    ytr, yte = quantile_bins(data["y_train"], data["y_test"], n_bins, protocol)
    return {"x_train": np.stack(cols_tr, 1), "y_train": ytr, "x_test": np.stack(cols_te, 1), "y_test": yte}


def make_datasets(seed: int, n: int, settings, protocols=PROTOCOLS) -> list[tuple[str, dict]]:
    out = []
    for (nc, noise, corr) in settings:
        raw = generate_continuous(n, nc, corr, noise, seed)
        for prot in protocols:
            out.append((setting_label(nc, noise, corr, prot), discretize(raw, prot)))
    return out


def main(argv: list[str]) -> int:
    from attnlab.parallel import set_torch_threads
    from attnlab.run_args import experiment_parser, overridden_folder, parse_list, seeds_of

    p = experiment_parser(EXPERIMENT, "Table 1: covariate-shift simulation, LR/RF/GB/MLP vs the tabular "
                          "attention model (ATN), authors' pooled bins and leakage-free train-only bins",
                          default_seeds=20)
    add_config_flag(p)
    p.add_argument("--epochs", type=int, default=None, help="override ATN epochs (recorded in the config)")
    p.add_argument("--models", default=",".join(MODELS),
                   help="comma-separated subset of " + ", ".join(MODELS) + " (each model's record is its own: "
                        "ATN can run for more seeds than the baselines)")
    args = p.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"--epochs must be >= 1; got {args.epochs}")
    models = parse_list(args.models, MODELS, "--models")
    if args.epochs is not None and "ATN" not in models:      # (it was stored in the baselines' records, unused)
        raise UsageError(f"--epochs is ATN's number of epochs; --models {args.models} trains no ATN")
    if max(seeds_of(args)) >= MAX_TABULAR_SEED:     # the k-th data seed is the k-th draw of the authors' stream
        raise UsageError(f"bidir-tabular-sim takes seeds 0..{MAX_TABULAR_SEED - 1} (seed k's data seed is the k-th "
                         f"draw of the authors' stream: a seed of {max(seeds_of(args))} asked for that many draws)")
    cfg = dict(CONFIGS[config_name(args)])
    defaults = dict(cfg)
    if args.epochs is not None:
        cfg["atn_epochs"] = args.epochs
        args.epochs = None      # defined by atn_epochs from here on (as --sentences, bidir-toy-corpus)
    # ATN at another number of epochs is another config, recorded in its own folder (full-epochs50); the
    # baselines train no epochs: their records keep the config's values and folder
    folder = overridden_folder(config_name(args), cfg, defaults, {"atn_epochs": "epochs"})
    settings = QUICK_SETTINGS if args.quick else SETTINGS
    set_torch_threads(args)
    for seed in seeds_of(args):
        data_seed = authors_seeds(max(20, seed + 1))[seed]
        datasets = None
        for model in (m for m in MODELS if m in models):
            # the baselines are scikit-learn's: they run on the CPU whatever --device says
            atn = model == "ATN"
            ctx = run_context(args, EXPERIMENT, cfg if atn else defaults, seed, tag=model,
                              device=None if atn else "cpu", folder=folder if atn else None)
            if ctx.done():
                continue
            if datasets is None:
                datasets = make_datasets(data_seed, cfg["n"], settings)
            if model == "ATN":
                res, extra = _run_atn(args, ctx, cfg, datasets, data_seed)
            else:
                res, extra = _run_baseline(args, ctx, cfg, datasets, data_seed, model)
            rows = [metric_row(label, model, metric, res[label][metric])
                    for label, _ in datasets for metric in ("acc", "mse", "train_acc")]
            # the trivial predictor of every fit (attnlab.convergence): the training labels' majority class
            majority = {label: majority_class_accuracy(d["y_train"], d["y_train"]) for label, d in datasets}
            ctx.write_record(rows, training={"stopped": "fixed-schedule"},
                             extra={"data_seed": data_seed, **extra, "majority_class_train_share": majority})
            log(args, f"seed {seed} (data seed {data_seed}) {model} done in {ctx.wall_seconds():.0f} s")
    return 0


def _run_baseline(args, ctx, cfg, datasets, data_seed: int, model: str) -> tuple[dict, dict]:
    """One baseline (App. E grid) on every data set of a seed, one data set per checkpoint."""
    state = ctx.load_checkpoint() or {"res": {}}
    prog = ctx.progress(len(datasets), f"{EXPERIMENT} seed {ctx.seed} {model}")
    for i, (label, d) in enumerate(datasets):
        if label not in state["res"]:
            state["res"][label] = run_baselines(d["x_train"], d["y_train"], d["x_test"], d["y_test"], C,
                                                data_seed, grid=cfg["grid"], models=(model,),
                                                n_jobs=args.jobs)[model]
            ctx.save_checkpoint(state)
        prog.update(i + 1)
    return state["res"], {"best_params": {label: r["best"] for label, r in state["res"].items()},
                          **({"solver": {label: {model: r["solver"]} for label, r in state["res"].items()}}
                             if model in ("LR", "MLP") else {})}


def _run_atn(args, ctx, cfg, datasets, data_seed: int) -> tuple[dict, dict]:
    """ATN (Sec. 3.1) on every data set of a seed, trained in lock-step groups of `atn_parallel` data
    sets (a CPU speed-up only; each data set has its own parameters), checkpointed every epoch."""
    from attnlab.experiments.bidir.baselines import accuracy_mse
    from attnlab.experiments.models.bidir_tabular import ATNConfig, predict_response, train_atn

    state = ctx.load_checkpoint() or {"atn": {}, "atn_state": None}
    acfg = ATNConfig(epochs=cfg["atn_epochs"], batch_size=cfg["atn_batch"])
    todo = [(l, d) for l, d in datasets if l not in state["atn"]]
    for g0 in range(0, len(todo), cfg["atn_parallel"]):
        group = todo[g0:g0 + cfg["atn_parallel"]]
        labels = [l for l, _ in group]
        rows = [np.concatenate([d["x_train"], d["y_train"][:, None]], 1) for _, d in group]
        prog = ctx.progress(acfg.epochs, f"{EXPERIMENT} seed {ctx.seed} ATN {g0 + len(group)}/{len(todo)}")

        def on_epoch(ep, loss, st, _prog=prog, _labels=labels):
            state["atn_state"] = {"labels": _labels, **st}
            ctx.save_checkpoint(state)
            _prog.update(ep, loss=loss)
        resume = state["atn_state"] if (state["atn_state"] and state["atn_state"]["labels"] == labels) else None
        model, losses = train_atn(rows, C, acfg, seed=[data_seed] * len(group), device=ctx.device, state=resume,
                                  on_epoch=on_epoch)
        for j, (label, d) in enumerate(group):
            acc, mse = accuracy_mse(predict_response(model, d["x_test"], ctx.device, which=j), d["y_test"])
            tacc, tmse = accuracy_mse(predict_response(model, d["x_train"], ctx.device, which=j), d["y_train"])
            state["atn"][label] = {"acc": acc, "mse": mse, "train_acc": tacc, "train_mse": tmse,
                                   "final_loss": losses[-1][j], "losses": [_sig(ep[j]) for ep in losses]}
        state["atn_state"] = None
        ctx.save_checkpoint(state)
    return state["atn"], {"final_loss": {l: r["final_loss"] for l, r in state["atn"].items()},
                          "atn_config": acfg.as_dict(),
                          "atn_losses": {l: r["losses"] for l, r in state["atn"].items() if "losses" in r}}


def _sig(x: float) -> float:
    """`x` to 7 significant digits (the precision of a stored curve)."""
    return float(f"{float(x):.6e}")
