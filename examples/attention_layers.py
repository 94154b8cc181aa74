"""Two of attnlab's attention layers in a small model of your own, trained for a few steps.

The task: a sequence of 16 noisy scalars holds one bump; predict the bump's position (in [0, 1]).
The model embeds the sequence, runs one attention layer, pools and reads out a number.  The layer is
either the exact Fenchel-dual attention (FenchelMultiheadAttention) or kernel sparsemax continuous
attention (ContinuousMultiheadAttention); both are drop-ins for torch.nn.MultiheadAttention (same
constructor, same forward(query, key, value, ...) returning (output, weights)).

    python examples/attention_layers.py [--steps 60] [--seed 0]
"""
from __future__ import annotations

import argparse

import torch
from torch import nn

from attnlab.layers import ContinuousMultiheadAttention, FenchelMultiheadAttention


def batch(n: int, L: int, g: torch.Generator):
    pos = torch.randint(0, L, (n,), generator=g)
    t = torch.arange(L)
    x = torch.exp(-0.5 * ((t[None, :] - pos[:, None]) / 1.5) ** 2) + 0.1 * torch.randn(n, L, generator=g)
    return x.unsqueeze(-1), pos.float() / (L - 1)


class Model(nn.Module):
    def __init__(self, attention: nn.Module, dim: int = 16, L: int = 16):
        super().__init__()
        self.embed = nn.Linear(1, dim)
        self.pos = nn.Parameter(torch.randn(L, dim) * 0.1)
        self.attention = attention
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        h = self.embed(x) + self.pos
        h = h + self.attention(h, h, h, need_weights=False)[0]      # as nn.MultiheadAttention
        return self.out(h.mean(1)).squeeze(-1)


def train(name: str, make_attention, steps: int, seed: int) -> tuple[float, float]:
    torch.manual_seed(seed)             # before the layer is built: its initial weights are the seed's
    g = torch.Generator().manual_seed(seed)
    model = Model(make_attention())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    xv, yv = batch(256, 16, torch.Generator().manual_seed(10_000 + seed))
    with torch.no_grad():
        first = float(nn.functional.mse_loss(model(xv), yv))
    for step in range(steps):
        x, y = batch(64, 16, g)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        last = float(nn.functional.mse_loss(model(xv), yv))
    print(f"{name:>28}: validation MSE {first:.4f} -> {last:.4f} after {steps} steps")
    return first, last


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    threads, rng = torch.get_num_threads(), torch.random.get_rng_state()
    torch.set_num_threads(1)            # (one thread, seeded runs: the caller's threads and generator come back)
    try:
        return {
            "fenchel": train("FenchelMultiheadAttention (exact)",
                             lambda: FenchelMultiheadAttention(16, 2, batch_first=True, alpha=1.0), args.steps,
                             args.seed),
            "kernel_sparsemax": train("kernel sparsemax attention",
                                      lambda: ContinuousMultiheadAttention(16, 1, batch_first=True,
                                                                           kind="kernel_sparsemax", n_basis=16,
                                                                           grid_size=128),
                                      args.steps, args.seed),
        }
    finally:
        torch.set_num_threads(threads)
        torch.random.set_rng_state(rng)


if __name__ == "__main__":
    main()
