"""Thin task wrappers around the EFA and FM modules of :mod:`attnlab.experiments.models.efa`.

The experiments train those very modules; a wrapper only (a) builds them in the configuration of
the authors' code (docs/instances.md; App. H: 2 layers x 2 heads of key width 16 with biases, output projection
and residual, learned positions, 32-d embeddings; FM with the code's normalisation) and (b) maps a
batch dict of per-target examples from :func:`attnlab.experiments.efa.common.target_examples` — items
(B, L) with 0 = padding, values (B, L), target (B,) — or of whole sequences from
:func:`~attnlab.experiments.efa.common.sequence_examples` (no ``target``: every position is a
target) to the models' call convention (ids in [0, D), ``valid`` mask, ``targets`` (B, 1) or all).
Each wrapper's ``forward(b)`` returns the raw output of the masked targets: logits (B, D) or one
number per example (the family's raw output κ) for per-target examples; (B, L, D) or (B, L) for
sequences.
"""
from __future__ import annotations

import torch
from torch import nn

from attnlab.experiments.models import efa as M

# the authors' Keras attention: MultiHeadAttention(num_heads=2, key_dim=16) + residual (docs/instances.md)
CODE_ATTENTION = {"convention": "standard", "head_dim": 16}


def _ids_valid(items):
    valid = items > 0
    return torch.where(valid, items - 1, torch.zeros_like(items)), valid


def _targets(b):
    """(B, 1) target positions of per-target examples, or None: every position a target."""
    return b["target"][:, None] if "target" in b else None


def _per_target(b, out):
    """Drop the target axis of per-target examples' outputs (B, 1, ...) -> (B, ...)."""
    return out[:, 0] if "target" in b else out


class Categorical(nn.Module):
    """x-part (Sec 2.1) on items 1..D: EFA (:class:`EFACategorical`) or FM (:class:`FMCategorical`,
    Prop 1, code normalisation: sum of context embeddings; unidirectional + α_[MASK])."""

    def __init__(self, kind: str, direction: str, n_items: int, max_len: int, dim: int = 32,
                 heads: int = 2, layers: int = 2):
        super().__init__()
        self.kind = kind
        if kind == "EFA":
            self.net = M.EFACategorical(n_items, dim, max_len, heads=heads, layers=layers,
                                        direction=direction, **CODE_ATTENTION)
        elif kind == "FM":
            self.net = M.FMCategorical(n_items, dim, direction=direction, normalization="code")
        else:
            raise ValueError(f"kind must be EFA or FM; got {kind!r}")

    @property
    def causal(self) -> bool:
        return self.net.direction == "unidirectional"

    def forward(self, b):
        x, valid = _ids_valid(b["items"])
        return _per_target(b, self.net(x, valid, _targets(b)))

    def attention(self, items: torch.Tensor):
        """EFA only: per layer, (T, heads, I, I) weights of one sequence (1, I) for all targets."""
        x, valid = _ids_valid(items)
        return [w[0] for w in self.net.attention_weights(x, valid)]

    def item_embeddings(self):
        """(context, center) embeddings of the D items: EFA (β, δ), FM (α, ρ)."""
        if self.kind == "EFA":
            return self.net.beta[:-1].detach(), self.net.delta.detach()
        return self.net.alpha[:-1].detach(), self.net.rho.detach()


class Ratings(nn.Module):
    """Value part (Sec 2.2) for ratings of items 1..D: EFA (:class:`EFAValue`: β̄ item rows,
    λ₁ a lookup table over trunc(y) as in the authors' code, λ₂ = Dense(32, ReLU) -> Dense(1))
    or FM (:class:`FMValue`, Props 2/3, code normalisation)."""

    def __init__(self, kind: str, direction: str, family: str, n_items: int, max_len: int,
                 n_values: int, value_offset: int, dim: int = 32, heads: int = 2, layers: int = 2):
        super().__init__()
        self.kind = kind
        if kind == "EFA":
            self.net = M.EFAValue(family, n_items, dim, dim, max_len, item_embeddings="center",
                                  value_embedding="lookup", n_values=n_values, value_offset=value_offset,
                                  unembedding="mlp", unembed_hidden=32, heads=heads, layers=layers,
                                  direction=direction, **CODE_ATTENTION)
        elif kind == "FM":
            self.net = M.FMValue(family, n_items, dim, direction=direction, normalization="code")
        else:
            raise ValueError(f"kind must be EFA or FM; got {kind!r}")
        self.family = self.net.family

    @property
    def causal(self) -> bool:
        return self.net.direction == "unidirectional"

    def forward(self, b):
        x, valid = _ids_valid(b["items"])
        y = torch.where(valid, b["values"], torch.ones_like(b["values"]))
        if self.kind == "EFA":
            return _per_target(b, self.net(y, x, None, valid, _targets(b)))
        return _per_target(b, self.net(y, x, valid, _targets(b)))


class Spatial(nn.Module):
    """Gaussian spatial model of Sec 3.2 / App. H.4 on sites with coordinates (lat, lon).

    EFA: :class:`EFAValue` with attributes τ_j (g = Dense(128, ReLU) -> Dense(32)), λ₁ =
    Dense(128, ReLU) -> Dense(32) with a learned [MASK] vector, no positional embeddings,
    bidirectional, `layers` x [2-head attention + residual, LayerNorm, FFN(64) + residual,
    LayerNorm], λ₂ = Dense(128, ReLU) -> Dense(1).  With lags, the previous samples' values of all
    sites are extra columns, and a one-hot day indicator (0 = current, 1, 2 = lags) is appended to τ,
    so that g learns the day-indicator embedding.
    FM: :class:`FMAttributes` (Prop 2), h = Dense(128, ReLU) -> Dense(32), context = the k nearest
    other sites."""

    def __init__(self, kind: str, coords, layers: int = 1, n_lags: int = 0, neighbours=None, dim: int = 32,
                 heads: int = 2):
        super().__init__()
        self.kind, self.n_lags = kind, n_lags
        # the sites' (standardised) coordinates, the attributes tau_i: the same for every sample, so
        # g / h are evaluated once per site (shared tau of shape (I, 2), models.efa.shared_map)
        self.register_buffer("coords", torch.as_tensor(coords, dtype=torch.float32))
        if self.coords.ndim != 2 or self.coords.shape[1] != 2:
            raise ValueError(f"coords must have shape (I, 2); got {tuple(self.coords.shape)}")
        if kind == "EFA":
            self.net = M.EFAValue("gaussian", None, dim, dim, 1024, attr_dim=2 + (n_lags + 1 if n_lags else 0),
                                  attr_hidden=128, value_embedding="mlp", value_hidden=128,
                                  unembedding="mlp", unembed_hidden=128, heads=heads, layers=layers,
                                  direction="bidirectional", positional=False, layer_norm=True,
                                  ffn_hidden=64, **CODE_ATTENTION)
        elif kind == "FM":
            self.net = M.FMAttributes(2, dim, hidden=128)
            self.register_buffer("nbr", torch.as_tensor(neighbours, dtype=torch.long))
        else:
            raise ValueError(f"kind must be EFA or FM; got {kind!r}")

    def forward(self, b):
        y, tau, t = b["y"], self.coords, b["target"][:, None]
        if self.kind == "FM":
            return self.net(y, tau, None, t, self.nbr[t])[:, 0]
        if self.n_lags:
            I = tau.shape[0]
            cols_y = [y] + [b["lags"][:, k] for k in range(self.n_lags)]
            day = torch.eye(self.n_lags + 1, dtype=tau.dtype, device=tau.device)
            cols_tau = [torch.cat([tau, day[k].expand(I, -1)], -1) for k in range(self.n_lags + 1)]
            y, tau = torch.cat(cols_y, 1), torch.cat(cols_tau, 0)
        return self.net(y, None, tau, None, t)[:, 0]
