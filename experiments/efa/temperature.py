"""`attnlab run efa-temperature`: Figure 6 of the EFA paper, Sec 6.4 / App. H.4.

Predict a site's temperature from the other sites' temperatures (Gaussian, bidirectional, no
positions): the Prop 2 latent factor model on the k nearest sites, FM(k) for k in {1,…,40},
against EFA with ℓ ∈ {1, 2, 4} attention layers, and EFA (4 layers) that also sees the previous
one or two samples of all sites ("1D/2D ahead").  Metric: test MSE in the data's units.

The paper's data (Kaggle "Daily Temperature of Major Cities", city_temperature.csv: 44 cities,
October 2007–2019, °F) is not available offline.  By default this runs on a SUBSTITUTE, labelled
as such in every record: monthly mean temperatures (°C) of 44 Colorado stations, 1961–1990
(samples are months, lags are previous months).  `--data city_temperature.csv` runs the paper's
exact setup.
"""
from __future__ import annotations

from attnlab.errors import UsageError, strict_int

import sys
from pathlib import Path

import numpy as np

from attnlab.experiment import context, metric_row
from attnlab.parallel import fan_out
from attnlab.run_args import experiment_parser, parse_list, seeds_of
from attnlab.experiments.efa import common as C
from attnlab.experiments.efa import data as D

EXPERIMENT = "efa-temperature"
KS = (1, 2, 3, 4, 5, 10, 15, 20, 25, 30, 35, 40)
# short name: (model label, attention layers ℓ, lagged samples)
EFA_VARIANTS = {"l1": ("EFA(l=1)", 1, 0), "l2": ("EFA(l=2)", 2, 0), "l4": ("EFA(l=4)", 4, 0),
                "lag1": ("EFA(l=4, 1D ahead)", 4, 1), "lag2": ("EFA(l=4, 2D ahead)", 4, 2)}
SETTING_PAPER = "44 cities, October"
SETTING_SUBSTITUTE = "Colorado substitute"
# the paper's optimisation (App. H.4): Adam 1e-3, 2,000 full-batch epochs without
# early stopping (restoring the best validation weights); lag models 200 epochs of batch 128
FULL = {"lr": 1e-3, "epochs": 2000, "patience": 2000, "batch_size": 10000,
        "lag_epochs": 200, "lag_batch_size": 128, "lag_patience": 200, "ks": list(KS),
        "efa": list(EFA_VARIANTS)}
QUICK = dict(FULL, lr=5e-3, epochs=8, patience=8, batch_size=512, lag_epochs=3, lag_batch_size=256, lag_patience=3,
             ks=[1, 5, 40], efa=["l1", "lag1"])


def examples(grid: D.Grid, split: str, scale: tuple[float, float]) -> dict:
    """One example per (sample, site) of `split`: all sites' values (scaled), lags and the target
    site (the sites' coordinates are the model's, :class:`nets.Spatial`)."""
    import torch

    mu, s = scale
    idx = np.flatnonzero(grid.split == split)
    I = grid.temps.shape[1]
    t_idx, site = np.repeat(idx, I), np.tile(np.arange(I), len(idx))
    return {"y": torch.as_tensor((grid.temps[t_idx] - mu) / s, dtype=torch.float32),
            "lags": torch.as_tensor((grid.lags[t_idx] - mu) / s, dtype=torch.float32),
            "target": torch.as_tensor(site, dtype=torch.long)}


def trivial(d: dict) -> dict:
    """The training mean's validation MSE (in the loss's scaled units): attnlab.convergence's trivial
    predictor."""
    return C.trivial_loss(d["train"], d["val"], "mse", key="y")


def mse_loss(model, b):
    import torch

    y = b["y"][torch.arange(len(b["target"])), b["target"]]
    return (model(b) - y) ** 2


def load_grid(data: str | None) -> D.Grid:
    if data is None:
        return D.colorado_grid()
    p = Path(data)
    if p.is_dir():
        p = p / "city_temperature.csv"
    if not p.is_file():
        raise FileNotFoundError(
            f"--data: {p} not found; download city_temperature.csv from "
            "https://www.kaggle.com/datasets/sudalairajkumar/daily-temperature-of-major-cities")
    return D.kaggle_city_grid(p)


def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, __doc__.splitlines()[0])
    p.add_argument("--data", default=None,
                   help="the Kaggle city_temperature.csv (the paper's data); default: the Colorado substitute")
    p.add_argument("--ks", default=None, help="comma-separated k for FM(k) (default: the config's)")
    p.add_argument("--efa", default=None, help="comma-separated subset of " + ", ".join(EFA_VARIANTS)
                   + " (EFA with 1, 2, 4 layers; 4 layers with 1 or 2 lagged samples) or 'none'")
    args = p.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    try:
        if args.ks is not None:
            try:
                cfg["ks"] = [strict_int(k) for k in args.ks.split(",")] if args.ks != "none" else []
            except ValueError:
                raise ValueError(f"--ks must be comma-separated integers k >= 1 (or 'none'); got {args.ks!r}") from None
            if len(set(cfg["ks"])) != len(cfg["ks"]):
                raise ValueError(f"--ks lists a k twice: {args.ks!r}")
        if args.efa is not None:
            cfg["efa"] = [] if args.efa == "none" else parse_list(args.efa, EFA_VARIANTS, "--efa")
        if not cfg["ks"] and not cfg["efa"]:        # (it printed the data and wrote nothing, exit 0)
            raise ValueError("--ks none with --efa none leaves nothing to run; give FM ranks (--ks) or EFA variants "
                             "(--efa)")
        grid = load_grid(args.data)
        I = grid.temps.shape[1]
        bad = [k for k in cfg["ks"] if not 1 <= k <= I - 1]
        if bad:
            raise ValueError(f"--ks must lie in 1..{I - 1}; got {bad}")
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(f"{e}") from None
    setting = SETTING_SUBSTITUTE if grid.substitute else SETTING_PAPER
    tr = grid.split == "train"
    mu, s = float(grid.temps[tr].mean()), float(grid.temps[tr].std())
    cmu, cs = grid.coords.mean(0), grid.coords.std(0)
    coords_std = (grid.coords - cmu) / cs
    # EFA: centred and scaled values (an affine reparametrisation of λ₁ and λ₂);
    # FM: scaled only, so that the model class (no intercept, linear in y) is exactly Prop 2's
    data = {kind: {sp: examples(grid, sp, sc) for sp in ("train", "val", "test")}
            for kind, sc in (("EFA", (mu, s)), ("FM", (0.0, s)))}
    if not args.quiet:
        print(f"{EXPERIMENT}: {grid.description}; samples train/val/test = "
              + "/".join(str(int((grid.split == sp).sum())) for sp in ("train", "val", "test"))
              + f"; {I} sites", file=sys.stderr)
    from attnlab.experiments.efa import nets

    runs = [(f"FM(k={k})", "FM", k) for k in cfg["ks"]] + [(EFA_VARIANTS[v][0], "EFA", v) for v in cfg["efa"]]

    def one(task):
        """One run (model, seed): trains, writes its record, returns (name, test MSE) (None when it was done)."""
        name, kind, arg, seed = task
        if kind == "FM":
            nbr = D.nearest_neighbours(grid.coords, arg)
            build = (lambda: nets.Spatial("FM", coords_std, neighbours=nbr))
            tc = C.TrainConfig(cfg["lr"], cfg["epochs"], cfg["patience"], cfg["batch_size"])
        else:
            _, layers, lags = EFA_VARIANTS[arg]
            build = (lambda: nets.Spatial("EFA", coords_std, layers=layers, n_lags=lags))
            tc = C.TrainConfig(cfg["lr"], cfg["lag_epochs"] if lags else cfg["epochs"],
                               cfg["lag_patience"] if lags else cfg["patience"],
                               cfg["lag_batch_size"] if lags else cfg["batch_size"])
        tag = f"FM-k{arg}" if kind == "FM" else f"EFA-{arg}"
        ctx = context(args, EXPERIMENT, cfg, seed, tag=tag, substitute=grid.substitute)
        if ctx.done():
            return None
        d = data[kind]
        net = C.init_model(build, ctx.seed)
        res = C.fit(ctx, net, mse_loss, d["train"], d["val"], tc, name=name)
        mse = C.evaluate(net, mse_loss, d["test"], ctx.device) * s * s
        ctx.write_record([metric_row(setting, name, "test MSE", mse)],
                         extra={"data": grid.description, "scale": s, "epochs_run": res.epochs_run,
                                "best_epoch": res.best_epoch, "train_seconds": res.train_seconds,
                                "history": res.history, "n_test_targets": C.n_examples(d["test"])},
                         training=res.training(), trivial=trivial(d))
        if not args.quiet:
            print(f"{EXPERIMENT} {name} seed {ctx.seed}: test MSE {mse:.3f} (epochs {res.epochs_run}, "
                  f"{res.train_seconds:.0f}s)", file=sys.stderr)
        return name, mse

    summary = {}
    # each (model, seed) run is independent: --jobs N / --backend ray run them side by side (the same records)
    for out in fan_out(args, one, [(*r, seed) for r in runs for seed in seeds_of(args)]):
        if out is not None:
            summary.setdefault(out[0], []).append(out[1])
    for name, v in summary.items():
        m, ci = C.mean_ci(v)
        print(f"{setting}: {name:22s} test MSE {m:.3f}" + ("" if ci is None else f" ± {ci:.3f}") + f"  (n={len(v)})")
    return 0
