"""The categorical (x-part, Sec 2.1) task shared by MovieLens experiment 1 and Instacart: predict
a masked item from the other (bidirectional) or previous (unidirectional) items; EFA against the
Prop 1 latent factor model (FM); metric: test categorical cross-entropy (nats per masked item)."""
from __future__ import annotations

import sys

from attnlab.experiment import context, metric_row
from attnlab.parallel import fan_out
from attnlab.run_args import add_lr_flag, experiment_parser, seeds_of, parse_list
from attnlab.experiments.efa import common as C

SETTINGS = ("unidirectional", "bidirectional")
MODELS = ("FM", "EFA")


def build(model: str, setting: str, n_items: int, max_len: int, cfg: dict):
    from attnlab.experiments.efa import nets

    return nets.Categorical(model, setting, n_items, max_len, cfg["dim"], cfg["heads"], cfg["layers"])


def ce_loss(model, b):
    """Per-target cross-entropy (0 at padded positions of sequence examples)."""
    import torch

    logits = model(b)
    y = (C.at_targets(b, b["items"]) - 1).clamp_min(0)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
    return C.target_weight(b, ce.reshape(y.shape))


def parser(experiment: str, doc: str):
    p = experiment_parser(experiment, doc.splitlines()[0])
    p.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated subset of " + ", ".join(SETTINGS))
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ", ".join(MODELS))
    add_sampling_flag(p)
    add_setup_flag(p)
    p.add_argument("--data", default=None, help="folder (or file) holding your own copy of the data set")
    add_lr_flag(p)
    return p


def add_setup_flag(p):
    p.add_argument("--setup", default="ours", choices=C.SETUPS,
                   help="ours (default: the initialisation and optimiser of the committed records) or "
                        "authors (the authors' Keras code: glorot bounds of MultiHeadAttention and "
                        "PositionEmbedding, Adam epsilon 1e-7; records under <config>-authors)")


def add_sampling_flag(p):
    p.add_argument("--sampling", default="sequences",
                   help="which targets share a training step: sequences (whole sequences, every position "
                        "a target; default) or targets (batch_size shuffled targets, the authors' code)")


def parse_common(args):
    """(settings, models) or raises ValueError naming the argument."""
    settings = parse_list(args.settings, SETTINGS, "--settings")
    models = parse_list(args.models, MODELS, "--models")
    if args.sampling not in C.SAMPLINGS:
        raise ValueError(f"--sampling must be one of {', '.join(C.SAMPLINGS)}; got {args.sampling!r}")
    return settings, models


def run(args, experiment: str, cfg: dict, settings, models, splits, n_items: int, max_len: int,
        after=None) -> dict:
    """Train every (setting, model) over the seeds.  `splits(seed)` -> (train, val, test) example
    dicts (the training examples as ``cfg['sampling']`` says; validation and test by sequence).
    `after(ctx, setting, model, net)` may add metric rows and extras.  Returns
    {(setting, model): [test CE per seed]}."""
    if getattr(args, "lr", None) is not None:
        cfg = dict(cfg, lr=args.lr)
    cfg = C.apply_setup(cfg, args)
    tc = C.train_config(cfg)

    def one(task):
        setting, model, seed = task
        ctx = context(args, experiment, cfg, seed, tag=f"{setting}-{model}", config_name=C.config_name(args))
        if ctx.done():
            return None
        train, val, test = splits(ctx.seed)
        net = C.init_model(C.with_setup(lambda: build(model, setting, n_items, max_len, cfg), cfg), ctx.seed)
        res = C.fit(ctx, net, ce_loss, train, val, tc, name=f"{setting}-{model}")
        ce = C.evaluate(net, ce_loss, test, ctx.device)
        rows = [metric_row(setting, model, "test CE", ce)]
        extra = {"epochs_run": res.epochs_run, "best_epoch": res.best_epoch,
                 "train_seconds": res.train_seconds, "history": res.history,
                 "sampling": cfg["sampling"], "n_train_targets": C.n_targets(train),
                 "n_val_targets": C.n_targets(val), "n_test_targets": C.n_targets(test)}
        if after is not None:
            r2, e2 = after(ctx, setting, model, net)
            rows += r2
            extra.update(e2)
        ctx.write_record(rows, extra=extra, training=res.training(),
                         trivial=C.trivial_loss(train, val, "categorical", n_items))
        if not args.quiet:
            print(f"{experiment} {setting} {model} seed {ctx.seed}: test CE {ce:.4f} "
                  f"(epochs {res.epochs_run}, {res.train_seconds:.0f}s)", file=sys.stderr)
        return setting, model, ce

    tasks = [(setting, model, seed) for setting in settings for model in models for seed in seeds_of(args)]
    summary = {}
    for out in fan_out(args, one, tasks):
        if out is not None:
            summary.setdefault(out[:2], []).append(out[2])
    for (setting, model), v in sorted(summary.items()):
        m, ci = C.mean_ci(v)
        print(f"{setting:15s} {model:4s} test CE {m:.4f}" + ("" if ci is None else f" ± {ci:.4f}") + f"  (n={len(v)})")
    return summary
