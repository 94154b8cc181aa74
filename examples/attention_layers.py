"""Two of attnlab's attention layers in a small model of your own, trained for a few steps.

The task: a sequence of 16 noisy scalars holds one bump; predict the bump's position (in [0, 1]).
The model embeds the sequence, runs one attention layer, pools and reads out a number.  The layer is
either the exact Fenchel-dual attention (FenchelMultiheadAttention) or kernel sparsemax continuous
attention (ContinuousMultiheadAttention); both are drop-ins for torch.nn.MultiheadAttention (same
constructor, same forward(query, key, value, ...) returning (output, weights)).

It shows how the layers plug in and train, not how well they do: one seed, a few dozen steps of Adam,
nothing tuned.  Each model's validation MSE is printed before and after training beside the MSE of
predicting the validation targets' mean (the best constant; about 0.09 here): only a model below that
has learned where the bump is, and the untrained model's MSE (over 1) is no yardstick.  At the defaults
(60 steps, seed 0) the Fenchel model ends at 0.0854 against the mean's 0.0870 -- it has learned almost
nothing beyond the mean yet -- while the kernel sparsemax model reaches 0.0023.  The Fenchel model is
slower to start, not stuck: with seeds 1 and 2 it ends at 0.011 and 0.074 after 60 steps, and after
200 steps both models are below 0.004 on seeds 0, 1 and 2 (CPU, one thread).  The layers are compared
on the papers' experiments (`attnlab run`), not here.

    python examples/attention_layers.py [--steps 60] [--seed 0]
"""
from __future__ import annotations

import torch
from torch import nn

from attnlab.errors import ArgumentParser, UsageError
from attnlab.layers import ContinuousMultiheadAttention, FenchelMultiheadAttention


def batch(n: int, L: int, g: torch.Generator):
    pos = torch.randint(0, L, (n,), generator=g)
    t = torch.arange(L)
    x = torch.exp(-0.5 * ((t[None, :] - pos[:, None]) / 1.5) ** 2) + 0.1 * torch.randn(n, L, generator=g)
    return x.unsqueeze(-1), pos.float() / (L - 1)


def validation(seed: int):
    """The seed's validation set: 256 sequences from a generator of its own."""
    return batch(256, 16, torch.Generator().manual_seed(10_000 + seed))


def mean_predictor_mse(seed: int) -> float:
    """The validation MSE of predicting the validation targets' mean for every sequence: the best a
    constant can do, and what a model must beat to have learned anything about the bump."""
    _, yv = validation(seed)
    return float(((yv - yv.mean()) ** 2).mean())


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


def train(name: str, make_attention, steps: int, seed: int, mean_mse: float) -> tuple[float, float]:
    torch.manual_seed(seed)             # before the layer is built: its initial weights are the seed's
    g = torch.Generator().manual_seed(seed)
    model = Model(make_attention())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    xv, yv = validation(seed)
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
    print(f"{name:>33}: validation MSE {first:.4f} -> {last:.4f} after {steps} steps "
          f"(predicting the mean: {mean_mse:.4f})")
    return first, last


def main(argv=None) -> dict:
    """{"fenchel": (MSE before, after), "kernel_sparsemax": (before, after), "mean_predictor": MSE}, all on
    the seed's validation set; a bad argument raises attnlab.errors.UsageError naming it."""
    p = ArgumentParser(prog="examples/attention_layers.py", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60, help="training steps, at least 1 (default 60)")
    p.add_argument("--seed", type=int, default=0, help="seed, 0 to 2**32 - 1 (default 0)")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"argument --steps: must be a whole number of at least 1 (got {args.steps})")
    if not 0 <= args.seed < 2**32:
        p.error(f"argument --seed: must be from 0 to 2**32 - 1 (got {args.seed})")
    mean_mse = mean_predictor_mse(args.seed)
    threads, rng = torch.get_num_threads(), torch.random.get_rng_state()
    torch.set_num_threads(1)            # (one thread, seeded runs: the caller's threads and generator come back)
    try:
        return {
            "fenchel": train("FenchelMultiheadAttention (exact)",
                             lambda: FenchelMultiheadAttention(16, 2, batch_first=True, alpha=1.0), args.steps,
                             args.seed, mean_mse),
            "kernel_sparsemax": train("kernel sparsemax attention",
                                      lambda: ContinuousMultiheadAttention(16, 1, batch_first=True,
                                                                           kind="kernel_sparsemax", n_basis=16,
                                                                           grid_size=128),
                                      args.steps, args.seed, mean_mse),
            "mean_predictor": mean_mse,
        }
    finally:
        torch.set_num_threads(threads)
        torch.random.set_rng_state(rng)


if __name__ == "__main__":
    import sys

    try:
        main()
    except UsageError as exc:           # a bad argument: one line naming it, exit code 2
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2)
