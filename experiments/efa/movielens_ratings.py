"""`attnlab run efa-movielens-ratings`: Table 2 of the EFA paper, Sec 6.2.2 / App. H.2.

Ratings 3,4,5 mapped to y ∈ {1,2,3}; predict a masked rating from the user's rated movies and the
other (bidirectional) or earlier (unidirectional) ratings.  Poisson "v1": y−1 ~ Poisson(e^z);
"v2": y ~ Poisson(1+e^z) (Sec 6.2.2, Table 2; docs/instances.md).  EFA (value part, Sec 2.2 / Example 3) against the Prop 3
latent factor model.  Metrics: the test NLL as the paper reports it ("test CE", the authors' loss,
without the log-factorial), the full Poisson NLL (with log((y−1)!) for v1, log(y!) for v2), and the
mean predicted rating for test items whose true rating is 1, 2, 3.  Preprocessing as in the paper
(893 users, 50 movies, 72.08 % sparsity, asserted; ties at rank 50 broken by the smaller movie id),
user-level 56.25 / 18.75 / 25 % split keeping every user.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import sys

from attnlab.experiment import context, metric_row
from attnlab.parallel import fan_out
from attnlab.run_args import experiment_parser, seed_value, seeds_of, parse_list
from attnlab.experiments.efa import common as C
from attnlab.experiments.efa.categorical import add_sampling_flag, add_setup_flag
from attnlab.experiments.efa import data as D

EXPERIMENT = "efa-movielens-ratings"
VERSIONS = ("v1", "v2")
SETTINGS = ("unidirectional", "bidirectional")
MODELS = ("FM", "EFA")
FULL = {"dim": 32, "heads": 2, "layers": 2, "lr": 1e-4, "epochs": 1000, "patience": 10, "batch_size": 256,
        "split": [0.5625, 0.1875, 0.25], "split_seed": C.SPLIT_SEED, "dedup_seed": 42}
QUICK = dict(FULL, lr=5e-3, epochs=3, patience=2)


def build(version: str, model: str, setting: str, max_len: int, cfg: dict):
    from attnlab.experiments.efa import nets

    family = {"v1": "poisson_v1", "v2": "poisson_v2"}[version]
    # λ₁: a lookup over the ratings 1..3 (table rows 0..3), plus the model's [MASK] vector
    return nets.Ratings(model, setting, family, 50, max_len, n_values=4, value_offset=0,
                        dim=cfg["dim"], heads=cfg["heads"], layers=cfg["layers"])


def _target(b):
    import torch

    y = C.at_targets(b, b["values"])
    return torch.where(C.target_mask(b), y, torch.ones_like(y))      # padding: any valid rating


def loss_fn(version: str, factorial: bool = False):
    """Per-target loss: the authors' code loss (Poisson NLL without the log-factorial; the
    training objective and Table 2's "cross-entropy"), or with `factorial` the full Poisson NLL
    −log p(y | κ) of :mod:`attnlab.numerics.expfam` (log((y−1)!) for v1, log(y!) for v2 included);
    0 at padded positions of sequence examples."""
    if factorial:
        return lambda model, b: C.target_weight(b, -model.family.log_prob(model(b), _target(b)))
    return lambda model, b: C.target_weight(b, model.family.code_loss(model(b), _target(b)))


def mean_pred_by_rating(net, version: str, test: dict, device: str) -> list[float]:
    import torch

    net.eval()
    with torch.no_grad():
        b = C.to_device(dict(test), device)
        mu = net.family.mean(net(b))          # E[y]: 1 + e^z for both v1 and v2
        y, real = _target(b), C.target_mask(b)
    return [float(mu[(y == r) & real].mean()) for r in (1, 2, 3)]


def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, __doc__.splitlines()[0])
    p.add_argument("--versions", default="v1,v2", help="comma-separated subset of v1, v2")
    p.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated subset of " + ", ".join(SETTINGS))
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ", ".join(MODELS))
    add_sampling_flag(p)
    add_setup_flag(p)
    p.add_argument("--data", default=None, help="folder (or file u.data.gz) of your own MovieLens 100K copy")
    p.add_argument("--split-seed", type=lambda s: seed_value(s, "--split-seed"), default=C.SPLIT_SEED, help="seed of the user-level split (fixed across runs)")
    args = p.parse_args(argv)
    try:
        versions = parse_list(args.versions, VERSIONS, "--versions")
        settings = parse_list(args.settings, SETTINGS, "--settings")
        models = parse_list(args.models, MODELS, "--models")
    except ValueError as e:
        raise UsageError(f"{e}") from None
    cfg = dict(QUICK if args.quick else FULL, split_seed=args.split_seed, sampling=args.sampling)
    seqs, info = D.movielens_preprocess(D.movielens_frame(args.data), "ratings", seed=cfg["dedup_seed"])
    tr, va, te = D.split_three(len(seqs), (0.5625, 0.1875, 0.25), seed=args.split_seed)
    train = C.examples(seqs.subset(tr), args.sampling)
    val, test = (C.sequence_examples(seqs.subset(i)) for i in (va, te))
    if not args.quiet:
        print(f"MovieLens ratings: {info['users']} users ({len(tr)}/{len(va)}/{len(te)} train/val/test), "
              f"{info['ratings']} ratings, sparsity {info['sparsity_percent']} %", file=sys.stderr)
    cfg = C.apply_setup(cfg, args)
    tc = C.train_config(cfg)
    L = seqs.items.shape[1]

    def one(task):
        version, setting, model, seed = task
        ctx = context(args, EXPERIMENT, cfg, seed, tag=f"{version}-{setting}-{model}",
                      config_name=C.config_name(args))
        if ctx.done():
            return None
        net = C.init_model(C.with_setup(lambda: build(version, model, setting, L, cfg), cfg), ctx.seed)
        res = C.fit(ctx, net, loss_fn(version), train, val, tc, name=f"{version}-{setting}-{model}")
        ce = C.evaluate(net, loss_fn(version), test, ctx.device)
        full = C.evaluate(net, loss_fn(version, True), test, ctx.device)
        mp = mean_pred_by_rating(net, version, test, ctx.device)
        s = f"{version} {setting}"
        rows = [metric_row(s, model, "test CE", ce), metric_row(s, model, "test NLL (with log-factorial)", full)]
        rows += [metric_row(s, model, f"mean pred | y={r}", mp[r - 1]) for r in (1, 2, 3)]
        ctx.write_record(rows, extra={"epochs_run": res.epochs_run, "best_epoch": res.best_epoch,
                                      "train_seconds": res.train_seconds, "history": res.history,
                                      "sampling": args.sampling, "n_test_targets": C.n_targets(test)},
                         training=res.training(), trivial=C.trivial_loss(train, val, f"poisson_{version}"))
        if not args.quiet:
            print(f"{EXPERIMENT} {s} {model} seed {ctx.seed}: test CE {ce:.4f}, NLL {full:.4f}, "
                  f"mean pred {mp[0]:.2f}/{mp[1]:.2f}/{mp[2]:.2f}", file=sys.stderr)
        return s, model, (ce, full, *mp)

    summary = {}
    tasks = [(version, setting, model, seed) for version in versions for setting in settings
             for model in models for seed in seeds_of(args)]
    for out in fan_out(args, one, tasks):
        if out is not None:
            summary.setdefault(out[:2], []).append(out[2])
    for (s, model), v in sorted(summary.items()):
        m, ci = C.mean_ci([x[0] for x in v])
        mps = "/".join(f"{sum(x[k] for x in v) / len(v):.2f}" for k in (2, 3, 4))
        print(f"{s:18s} {model:4s} test CE {m:.4f}" + ("" if ci is None else f" ± {ci:.4f}")
              + f"  NLL {sum(x[1] for x in v) / len(v):.4f}  mean pred {mps}  (n={len(v)})")
    return 0
