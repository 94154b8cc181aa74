"""`attnlab run kernel-forda`: Table 2 of the kernel paper (Sec. 6.2, App. G, Table 7).

UCR FordA (3601 train / 1320 test, length 500, 2 classes); the Fig. 11 architecture (conv, LSTM,
attention, 3-layer feed-forward) with each attention, plus LSTM-FCN and a small transformer: TST's
one token per point (`transformer`, the paper's baseline) and, beside it, tokens of 16-point windows
(`transformer_patch`, config key tst_patch; why: models.kernel_models.TransformerClassifier).
Accuracy and macro-F1 (%) over seeds.
"""
from __future__ import annotations

import sys

import torch

from attnlab.errors import UsageError

from attnlab.parallel import run_tasks
from attnlab.run_args import add_lr_flag, experiment_parser, seeds_of
from attnlab.experiments.kernel import common as C

EXPERIMENT = "kernel-forda"
DATASET = "ucr-forda"
MODELS = ("discrete_softmax", "cts_softmax", "cts_sparsemax", "gaussian_mixture", "kernel_softmax",
          "kernel_sparsemax", "lstm_fcn", "transformer", "transformer_patch")
CONFIGS = {
    # Table 7: batch 64, LSTM 128, N = 256 basis functions, I = G = 500, lr 1e-3, wd 1e-5, 100 epochs
    "full": dict(downsample=1, hidden=128, n_basis=256, grid=500, epochs=100, batch=64, lr=1e-3,
                 weight_decay=1e-5, fcn_filters=(128, 256, 128), tst_d_model=64, tst_layers=2, tst_dropout=0.1,
                 tst_patch=16),
    # reduced for a shared 2-core CPU: every 5th point (L = 100, so I = G = 100), LSTM 32 units,
    # N = 64, 3 epochs, LSTM-FCN with 32/64/32 filters, a 1-layer d=32 transformer
    "cpu-small": dict(downsample=5, hidden=32, n_basis=64, grid=100, epochs=3, batch=64, lr=1e-3,
                      weight_decay=1e-5, fcn_filters=(32, 64, 32), tst_d_model=32, tst_layers=1,
                      tst_dropout=0.0, tst_patch=4),
    "quick": dict(downsample=5, hidden=8, n_basis=12, grid=100, epochs=1, batch=64, lr=1e-3, weight_decay=1e-5,
                  fcn_filters=(8, 8, 8), tst_d_model=8, tst_layers=1, tst_dropout=0.0, tst_patch=4,
                  train_subset=128, test_subset=128),
}
# the paper's network and series (Table 7), trained until early stopping on a stratified 10% validation
# split of the training set fires (patience 10), at most the paper's 100 epochs; best weights restored
CONFIGS["full-es"] = dict(CONFIGS["full"], val_fraction=0.1, patience=10)


def load(cfg, path=None):
    return C.load_ucr_split(DATASET, cfg, path)


SETUP_MODELS = ("discrete_softmax", "cts_softmax", "cts_sparsemax")    # the models --setup authors changes


def build(m: str, length: int, k: int, cfg, setup: str = "ours"):
    from attnlab.experiments.models.kernel_models import LSTMFCN, SeriesAttentionNet, TransformerClassifier

    if m == "lstm_fcn":
        return LSTMFCN(length, k, filters=cfg["fcn_filters"])
    if m in ("transformer", "transformer_patch"):
        d = cfg["tst_d_model"]
        return TransformerClassifier(length, k, d_model=d, heads=4 if d % 4 == 0 else 1, layers=cfg["tst_layers"],
                                     ff=2 * d, dropout=cfg["tst_dropout"],
                                     patch=cfg["tst_patch"] if m == "transformer_patch" else 1)
    return SeriesAttentionNet(m, length, k, hidden=cfg["hidden"], n_basis=cfg["n_basis"], grid_size=cfg["grid"],
                              sigmas=(0.025, 0.1, 0.5) if cfg["n_basis"] >= 3 else (0.1,), setup=setup)


def run_series_experiment(argv, experiment, dataset_desc, models, configs, loader, substitute=None,
                          default_seeds=10, description=""):
    p = experiment_parser(experiment, description, default_seeds=default_seeds)
    p.add_argument("--config", default="full", help="full (the paper's configuration) or another named config: "
                   + ", ".join(c for c in configs if c not in ("full", "quick"))
                   + " (full-es: the paper's network stopped early on a validation split; cpu-small: reduced for "
                     "a 2-core CPU; docs/kernel_experiments.md); --quick is the quick config (not combined with --config)")
    p.add_argument("--models", default=None, help="comma list of " + ",".join(models))
    p.add_argument("--data", default=None, help=f"folder holding your own copy of {dataset_desc}")
    p.add_argument("--setup", default="ours", choices=("ours", "authors"),
                   help="ours (default: the committed records) or authors (the released FordA code: the discrete "
                        "moments of the unimodal densities over positions l/L, l = 1..L, not linspace(0, 1, L); "
                        "records under <config>-authors)")
    add_lr_flag(p)
    args = p.parse_args(argv)
    name = C.config_name(args, configs, tuple(c for c in configs if c != "quick"))
    sel = C.parse_models(args.models, models)
    name, cfg = C.with_lr(args, name, configs[name])
    if args.setup == "authors":
        name, cfg = f"{name}-authors", dict(cfg, setup="authors")
        # the setting changes only the models that take moments over positions: the others' records under
        # <config>-authors were copies of ours (bit-identical metrics), filed as if another protocol
        left = [m for m in sel if m not in SETUP_MODELS]
        sel = [m for m in sel if m in SETUP_MODELS]
        if not sel:
            raise UsageError(f"--setup authors changes only {', '.join(SETUP_MODELS)} (their moments over the "
                             f"positions); --models {args.models} would repeat the runs of --setup ours")
        if left and not args.quiet:
            print(f"--setup authors: {', '.join(left)} left out (the setting does not change them; their records "
                  "are those of --setup ours)", file=sys.stderr)
    C.torch_setup()
    from attnlab.experiments.data import DataError

    try:
        train, test, k = loader(cfg, args.data)
    except DataError as exc:
        raise UsageError(f"{exc}") from None
    seeds = seeds_of(args)
    C.announce(experiment, substitute, name, cfg, seeds)
    length = train[0].shape[1]

    def one(task):
        """One run (seed, model): trains, writes its record, returns its line (None when it was done)."""
        seed, m = task
        ctx = C.make_context(args, experiment, name, cfg, m, seed, substitute)
        if ctx.done():
            return None
        torch.manual_seed(seed)
        model = build(m, length, k, cfg, args.setup)
        res = C.fit(ctx, model, train, test, epochs=cfg["epochs"], batch_size=cfg["batch"], lr=cfg["lr"],
                    weight_decay=cfg["weight_decay"], clip=1.0, val_fraction=cfg.get("val_fraction", 0.0),
                    patience=cfg.get("patience"))
        C.record(ctx, "test", m, res)
        return f"  seed {seed} {C.DISPLAY[m]:<18} accuracy {res['accuracy']:.2f}  F1 {res['f1']:.2f}"

    run_tasks(args, one, [(seed, m) for seed in seeds for m in sel])       # --jobs / --backend ray fan out
    print("\n".join(C.summary_lines(experiment, name, args)))
    return 0


def main(argv: list[str]) -> int:
    return run_series_experiment(argv, EXPERIMENT, "UCR FordA (FordA_TRAIN.tsv.gz, FordA_TEST.tsv.gz)", MODELS,
                                 CONFIGS, load, None, 10,
                                 "Table 2: FordA, conv-LSTM with discrete / continuous / mixture / kernel "
                                 "attention, LSTM-FCN and a transformer; accuracy and macro-F1.")
