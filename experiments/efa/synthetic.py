"""`attnlab run efa-synthetic`: Table 1 (left) of the EFA paper, Sec 6.1 / App. H.1.

Ratings of 5 movies whose means depend on the viewing order; EFA (value part, Sec 2.2) against the
Gaussian latent factor model (FM, Prop 3 with the exp removed), unidirectional and bidirectional;
metric: test MSE (the Gaussian NLL up to an affine map).  The Bayes-optimal MSE is 1; the best
FM reaches 2.6051 (bidirectional) and 4.5181 (unidirectional, code normalisation) in population
(App. H.1; docs/instances.md).
"""
from __future__ import annotations

from attnlab.errors import UsageError

import numpy as np

from attnlab.experiment import context, metric_row
from attnlab.parallel import fan_out
from attnlab.run_args import experiment_parser, seeds_of, parse_list
from attnlab.experiments.efa import common as C
from attnlab.experiments.efa import data as D
from attnlab.experiments.efa.categorical import add_sampling_flag, add_setup_flag

EXPERIMENT = "efa-synthetic"
SETTINGS = ("unidirectional", "bidirectional")
MODELS = ("FM", "EFA")
# population optima of the best FM (App. H.1; exact rationals computed by sympy, docs/instances.md)
FM_OPTIMUM = {"bidirectional": 2.605109, "unidirectional": 4.518119}
BAYES_MSE = 1.0     # the noise variance: the population MSE of the true conditional means

FULL = {"n_users": 10000, "n_train_users": 7500, "val_fraction": 0.25, "dim": 32, "heads": 2,
        "layers": 2, "lr": 1e-4, "epochs": 1000, "patience": 10, "batch_size": 256,
        "rating_embedding": "lookup-trunc"}
QUICK = dict(FULL, n_users=2000, n_train_users=1500, lr=5e-3, epochs=8, patience=3, batch_size=128)


def build(model: str, setting: str, cfg: dict):
    from attnlab.experiments.efa import nets

    # λ₁: a lookup table over trunc(y) (the authors' Keras Embedding on float ratings, docs/instances.md);
    # trunc(y) + 8 covers y in (-8, 12), i.e. every N(μ, 1) draw with μ in {1, 3, 5} in practice
    return nets.Ratings(model, setting, "gaussian", 5, 5, n_values=20, value_offset=8,
                        dim=cfg["dim"], heads=cfg["heads"], layers=cfg["layers"])


def mse_loss(model, b):
    pred = model(b)
    y = C.at_targets(b, b["values"])
    # (y - μ)²: the Gaussian NLL up to an affine map; 0 at padded positions of sequences
    return C.target_weight(b, model.family.code_loss(pred, y))


def make_data(cfg: dict, seed: int, sampling: str = "sequences"):
    """Fresh data per seed (the seed drives the generator); train users are split 75/25 into
    train/validation at the user level (the code split over examples, leaking users)."""
    rng = np.random.default_rng([seed, 41])
    train_u, test_u, _ = D.synthetic_dataset(cfg["n_users"], rng, cfg["n_train_users"])
    tr, va = D.split_two(len(train_u), cfg["val_fraction"], seed=seed)
    return (C.examples(train_u.subset(tr), sampling), C.sequence_examples(train_u.subset(va)),
            C.sequence_examples(test_u), test_u)


def bayes_mse(test_u) -> float:
    """MSE of the Bayes predictor (the true conditional means) on this test set."""
    means = D.synthetic_means(test_u.items)
    return float(np.mean((test_u.values - means) ** 2))


def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, __doc__.splitlines()[0])
    p.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated subset of " + ", ".join(SETTINGS))
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ", ".join(MODELS))
    add_sampling_flag(p)
    add_setup_flag(p)
    args = p.parse_args(argv)
    try:
        settings = parse_list(args.settings, SETTINGS, "--settings")
        models = parse_list(args.models, MODELS, "--models")
        if args.sampling not in C.SAMPLINGS:
            raise ValueError(f"--sampling must be one of {', '.join(C.SAMPLINGS)}; got {args.sampling!r}")
    except ValueError as e:
        raise UsageError(f"{e}") from None
    cfg = C.apply_setup(dict(QUICK if args.quick else FULL, sampling=args.sampling), args)
    tc = C.train_config(cfg)

    def one(task):
        setting, model, seed = task
        ctx = context(args, EXPERIMENT, cfg, seed, tag=f"{setting}-{model}", config_name=C.config_name(args))
        if ctx.done():
            return None
        train, val, test, test_u = make_data(cfg, ctx.seed, args.sampling)
        net = C.init_model(C.with_setup(lambda: build(model, setting, cfg), cfg), ctx.seed)
        res = C.fit(ctx, net, mse_loss, train, val, tc, name=f"{setting}-{model}")
        mse = C.evaluate(net, mse_loss, test, ctx.device)
        rows = [metric_row(setting, model, "test MSE", mse)]
        ctx.write_record(rows, extra={"bayes_mse_test": bayes_mse(test_u),
                                      "fm_population_optimum": FM_OPTIMUM[setting],
                                      "sampling": args.sampling,
                                      "epochs_run": res.epochs_run, "best_epoch": res.best_epoch,
                                      "train_seconds": res.train_seconds, "history": res.history},
                         training=res.training(), trivial=C.trivial_loss(train, val, "mse", perfect=BAYES_MSE))
        if not args.quiet:
            print(f"{EXPERIMENT} {setting} {model} seed {ctx.seed}: test MSE {mse:.4f} "
                  f"(epochs {res.epochs_run}, {res.train_seconds:.0f}s)")
        return setting, model, mse

    summary = {}
    tasks = [(setting, model, seed) for setting in settings for model in models for seed in seeds_of(args)]
    for out in fan_out(args, one, tasks):
        if out is not None:
            summary.setdefault(out[:2], []).append(out[2])
    for (setting, model), v in sorted(summary.items()):
        m, ci = C.mean_ci(v)
        print(f"{setting:15s} {model:4s} test MSE {m:.4f}" + ("" if ci is None else f" ± {ci:.4f}") + f"  (n={len(v)})")
    return 0
