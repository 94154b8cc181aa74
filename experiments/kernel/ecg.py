"""`attnlab run kernel-ecg`: the Table 9 protocol of the kernel paper (App. I, Table 10) on UCR ECG5000.

The paper uses the Kaggle MIT-BIH heartbeat CSVs (87,553 train / 21,891 test beats of length 187,
5 classes), which are not available offline.  ECG5000 (UCR; 500 train / 4500 test beats of length
140, 5 classes; from the BIDMC congestive-heart-failure database) is a SUBSTITUTE with the same
task shape.  Architecture (Fig. 11): two conv layers, LSTM, attention (discrete, continuous,
10-component Gaussian mixture, kernel), 3-layer feed-forward; plus LSTM-FCN and a transformer.
"""
from __future__ import annotations

from attnlab.experiments.kernel import common as C
from attnlab.experiments.kernel.forda import MODELS as FORDA_MODELS
from attnlab.experiments.kernel.forda import run_series_experiment

EXPERIMENT = "kernel-ecg"
# the transformer with patch tokens is FordA's diagnosis of TST at chance; ECG's TST trains with point tokens
MODELS = tuple(m for m in FORDA_MODELS if m != "transformer_patch")
DATASET = "ucr-ecg5000"
SUBSTITUTE = ("UCR ECG5000 (500 train / 4500 test beats, length 140, 5 classes) substitutes for the Kaggle "
              "MIT-BIH heartbeat set (87,553 / 21,891 beats, length 187)")
CONFIGS = {
    # Table 10: batch 64, LSTM 512, N = 24, I = G = sequence length, lr 1e-3, wd 1e-5, 30 epochs
    "full": dict(downsample=1, hidden=512, n_basis=24, grid=140, epochs=30, batch=64, lr=1e-3, weight_decay=1e-5,
                 fcn_filters=(128, 256, 128), tst_d_model=64, tst_layers=2, tst_dropout=0.1),
    # reduced for a shared 2-core CPU: LSTM 32 units, 10 epochs, smaller baselines
    "cpu-small": dict(downsample=1, hidden=32, n_basis=24, grid=140, epochs=10, batch=64, lr=1e-3,
                      weight_decay=1e-5, fcn_filters=(32, 64, 32), tst_d_model=32, tst_layers=1,
                      tst_dropout=0.0),
    # Table 10's network trained until early stopping on a stratified 10% validation split fires
    # (patience 10; best weights restored), at most 100 epochs: the substitute has 450 training beats
    # after the split, so the paper's 30 epochs are only 240 steps.  lr 1e-3 (the paper's) chosen on the
    # validation split: best validation CE of Cts / Kernel Softmax (seed 0) at 3e-4 0.411 / 0.320, 1e-3
    # 0.222 / 0.364, 3e-3 0.379 / 0.325 (mean lowest at 1e-3)
    "full-es": dict(downsample=1, hidden=512, n_basis=24, grid=140, epochs=100, batch=64, lr=1e-3, weight_decay=1e-5,
                    fcn_filters=(128, 256, 128), tst_d_model=64, tst_layers=2, tst_dropout=0.1,
                    val_fraction=0.1, patience=10),
    "quick": dict(downsample=2, hidden=8, n_basis=12, grid=70, epochs=1, batch=64, lr=1e-3, weight_decay=1e-5,
                  fcn_filters=(8, 8, 8), tst_d_model=8, tst_layers=1, tst_dropout=0.0, train_subset=128, test_subset=128),
}


def load(cfg, path=None):
    return C.load_ucr_split(DATASET, cfg, path)


def main(argv: list[str]) -> int:
    return run_series_experiment(argv, EXPERIMENT, "UCR ECG5000 (ECG5000_TRAIN.tsv.gz, ECG5000_TEST.tsv.gz)", MODELS,
                                 CONFIGS, load, SUBSTITUTE, 10,
                                 "Table 9 protocol on ECG5000 (substitute for MIT-BIH): conv-LSTM with each "
                                 "attention, LSTM-FCN and a transformer; accuracy and macro-F1.")
