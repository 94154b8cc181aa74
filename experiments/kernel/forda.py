"""`attnlab run kernel-forda`: Table 2 of the kernel paper (Sec. 6.2, App. G, Table 7).

UCR FordA (3601 train / 1320 test, length 500, 2 classes); the Fig. 11 architecture (conv, LSTM,
attention, 3-layer feed-forward) with each attention, plus LSTM-FCN and a small transformer.
Accuracy and macro-F1 (%) over seeds.
"""
from __future__ import annotations

import sys

import numpy as np
import torch

from attnlab.experiment import experiment_parser, seeds_of
from experiments.kernel import common as C

EXPERIMENT = "kernel-forda"
DATASET = "ucr-forda"
MODELS = ("discrete_softmax", "cts_softmax", "cts_sparsemax", "gaussian_mixture", "kernel_softmax",
          "kernel_sparsemax", "lstm_fcn", "transformer")
CONFIGS = {
    # Table 7: batch 64, LSTM 128, N = 256 basis functions, I = G = 500, lr 1e-3, wd 1e-5, 100 epochs
    "full": dict(downsample=1, hidden=128, n_basis=256, grid=500, epochs=100, batch=64, lr=1e-3,
                 weight_decay=1e-5, fcn_filters=(128, 256, 128), tst_d_model=64, tst_layers=2, tst_dropout=0.1),
    # reduced for a shared 2-core CPU: every 5th point (L = 100, so I = G = 100), LSTM 32 units,
    # N = 64, 3 epochs, LSTM-FCN with 32/64/32 filters, a 1-layer d=32 transformer
    "cpu-small": dict(downsample=5, hidden=32, n_basis=64, grid=100, epochs=3, batch=64, lr=1e-3,
                      weight_decay=1e-5, fcn_filters=(32, 64, 32), tst_d_model=32, tst_layers=1,
                      tst_dropout=0.0),
    "quick": dict(downsample=5, hidden=8, n_basis=12, grid=100, epochs=1, batch=64, lr=1e-3, weight_decay=1e-5,
                  fcn_filters=(8, 8, 8), tst_d_model=8, tst_layers=1, tst_dropout=0.0, train_subset=128, test_subset=128),
}


def load(cfg, path=None):
    return C.load_ucr_split(DATASET, cfg, path)


def main(argv: list[str]) -> int:
    return run_series_experiment(argv, EXPERIMENT, "UCR FordA (FordA_TRAIN.tsv.gz, FordA_TEST.tsv.gz)", MODELS,
                                 CONFIGS, load, None, 10,
                                 "Table 2: FordA, conv-LSTM with discrete / continuous / mixture / kernel "
                                 "attention, LSTM-FCN and a transformer; accuracy and macro-F1.")
