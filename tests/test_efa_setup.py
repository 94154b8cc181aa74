"""`--setup authors` of the EFA runners: the authors' Keras initialisation bounds and Adam epsilon,
pinned (docs/efa_experiments.md, "Our setup against the authors' code")."""
import argparse
import math

import pytest
import torch

from attnlab.experiments.efa import common as C
from attnlab.experiments.efa import nets
from attnlab.numerics.efa_attention import AttentionLayer


def _net(setup: str, seed: int = 0):
    cfg = {"setup": setup} if setup == "authors" else {}
    # the MovieLens / Instacart network: width 32, 2 heads of key size 16, 2 layers, 20 positions
    return C.init_model(C.with_setup(lambda: nets.Categorical("EFA", "bidirectional", 50, 20, 32, 2, 2), cfg), seed)


def _layers(net):
    return [m for m in net.modules() if isinstance(m, AttentionLayer)]


def _positions(net):
    return [m.P for m in net.modules() if isinstance(getattr(m, "P", None), torch.nn.Parameter)]


@pytest.mark.parametrize("setup, qkv, pos", [
    ("ours", math.sqrt(6 / (32 + 16)), 0.05),                 # per head: U(+-0.354); positions U(+-0.05)
    ("authors", math.sqrt(6 / (32 + 2 * 16)), math.sqrt(6 / (20 + 32))),   # Keras: U(+-0.306), U(+-0.340)
])
def test_initialisation_bounds(setup, qkv, pos):
    net = _net(setup)
    layers, P = _layers(net), _positions(net)
    assert len(layers) == 2 and len(P) == 1
    for layer in layers:
        for W in (layer.W_Q, layer.W_K, layer.W_V):
            m = float(W.detach().abs().max())
            assert m <= qkv and m > 0.97 * qkv, (setup, m, qkv)      # 1,024 draws reach the bound
    m = float(P[0].detach().abs().max())
    assert m <= pos and m > 0.97 * pos, (setup, m, pos)


def test_authors_setup_is_seeded_and_leaves_the_rest_alone():
    a, b, ours = _net("authors", 3), _net("authors", 3), _net("ours", 3)
    for (n, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(x, y), n                              # the same seed draws the same network
    changed = {n for (n, x), (_, y) in zip(a.named_parameters(), ours.named_parameters())
               if x.shape != y.shape or not torch.equal(x, y)}
    assert changed and all(("W_Q" in n or "W_K" in n or "W_V" in n or n.endswith(".P")) or n.startswith("net.delta")
                           for n in changed), changed


def test_adam_epsilon_and_records_folder():
    args = argparse.Namespace(setup="authors", quick=False, sampling="sequences", lr=None)
    cfg = C.apply_setup({"lr": 1e-4, "epochs": 5, "patience": 2, "batch_size": 8}, args)
    assert cfg["adam_eps"] == 1e-7 and cfg["setup"] == "authors"
    tc = C.train_config(cfg)
    opt = C.adam(torch.nn.Linear(2, 2), tc.lr, tc.adam_eps)
    assert opt.param_groups[0]["eps"] == 1e-7
    assert C.config_name(args) == "full-authors"
    ours = argparse.Namespace(setup="ours", quick=False, sampling="sequences", lr=None)
    assert C.apply_setup({"lr": 1e-4}, ours) == {"lr": 1e-4}                # the committed records' config
    assert C.train_config({"lr": 1e-4, "epochs": 1, "patience": 1, "batch_size": 1}).adam_eps == 1e-8
    assert C.config_name(ours) is None
