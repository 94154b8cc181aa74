"""The tabular extension of bidirectional attention (ATN), Wibisono & Wang (UAI 2023), Sec. 3.1.

A table row (X_i, Y_i) with K ordinal features and a response, each with C classes, is read as a
"sentence" of K+1 tokens over a vocabulary shared by all features (class ids 0..C-1; id C is
``[MASK]``).  Feature identity comes only from a learned position ("feature") encoding.  Training is
the masked-language-model (MLM) objective over features: every row is copied K+1 times, copy j has
position j replaced by ``[MASK]``, and the cross entropy of the masked token is minimised.  At test
time the response position is masked and the most probable class is predicted.

The network follows the authors' released Keras code (one post-LN BERT block: 5 heads of key size 4,
embedding 20, a ReLU feed-forward layer of width 5, dropout 0.1, LayerNorm eps 1e-6; a dense softmax
head shared by all positions; Adam lr 1e-3, batch 128, 200 epochs) ported to torch.  It is *not* the
linear single-head model of Theorem 2 (no LayerNorm/FFN there), although Sec. 3.1 presents the tabular model as its extension.

Deviations from the Keras code, all documented in docs/bidir_experiments.md:
- the loss is the mean cross entropy over masked positions; Keras divides the same sum by all
  N·(K+1) label slots.  The factor 1/(K+1) only rescales gradients, which Adam (nearly) undoes;
- initialisations: uniform(±0.05) token embeddings as Keras' Embedding; glorot_uniform for every other
  weight matrix, but the query, key and value weights are one fused (d, 3d) matrix, U(±0.274) at d = 20,
  where Keras' MultiHeadAttention draws each of Q, K, V over its own (d, heads·key_dim) kernel,
  U(±0.387).  Not switched: the committed records use the fused bound.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn


@dataclass
class ATNConfig:
    """Hyper-parameters of the tabular attention model (paper App. E)."""
    embed_dim: int = 20
    num_heads: int = 5
    ff_dim: int = 5
    dropout: float = 0.1
    layer_norm_eps: float = 1e-6
    lr: float = 1e-3
    adam_eps: float = 1e-7          # Keras Adam default
    batch_size: int = 128
    epochs: int = 200

    def validate(self) -> "ATNConfig":
        for name in ("embed_dim", "num_heads", "ff_dim", "batch_size", "epochs"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer; got {v!r}")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim ({self.embed_dim}) must be divisible by num_heads ({self.num_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0; got {self.lr}")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


class TabularATN(nn.Module):
    """M independent copies of one post-LN bidirectional transformer block over K+1 tokens (Sec. 3.1).

    The M copies have separate parameters (leading dimension M) and are trained on separate data
    in lock-step: the loss is the sum of the M per-copy losses, so gradients -- and Adam, which acts
    element-wise -- are exactly those of M separate trainings.  This batching is only a speed-up
    on CPUs, where a model this small is dominated by per-call overhead.

    Input: int tokens (M, B, K+1) in 0..C (C = ``[MASK]``).  Output: logits (M, B, K+1, C) at every
    position (the head is shared across positions, as the Keras ``Dense(C, softmax)``).
    """

    def __init__(self, n_classes: int, seq_len: int, cfg: ATNConfig | None = None,
                 generator: torch.Generator | None = None, n_models: int = 1):
        super().__init__()
        if not isinstance(n_classes, int) or n_classes < 2:
            raise ValueError(f"n_classes must be an integer >= 2; got {n_classes!r}")
        if not isinstance(seq_len, int) or seq_len < 2:
            raise ValueError(f"seq_len must be an integer >= 2 (K features + the response); got {seq_len!r}")
        if not isinstance(n_models, int) or n_models < 1:
            raise ValueError(f"n_models must be a positive integer; got {n_models!r}")
        cfg = (cfg or ATNConfig()).validate()
        self.cfg, self.n_classes, self.seq_len, self.n_models = cfg, n_classes, seq_len, n_models
        self.mask_id = n_classes
        M, d, f, C = n_models, cfg.embed_dim, cfg.ff_dim, n_classes

        def P(*shape):
            return nn.Parameter(torch.zeros(M, *shape))
        self.tok, self.pos = P(C + 1, d), P(seq_len, d)
        self.w_qkv, self.b_qkv = P(d, 3 * d), P(3 * d)      # W^Q, W^K, W^V of all heads (+ biases, as Keras)
        self.w_o, self.b_o = P(d, d), P(d)                  # output projection W^O
        self.ln1_w, self.ln1_b = P(d), P(d)
        self.w_1, self.b_1 = P(d, f), P(f)
        self.w_2, self.b_2 = P(f, d), P(d)
        self.ln2_w, self.ln2_b = P(d), P(d)
        self.w_h, self.b_h = P(d, C), P(C)
        self._init(generator)

    @torch.no_grad()
    def _init(self, g: torch.Generator | None) -> None:
        # Seeded initialisation so that a model depends only on its generator, not on global RNG.
        for w in (self.pos, self.w_qkv, self.w_o, self.w_1, self.w_2, self.w_h):
            bound = math.sqrt(6.0 / (w.shape[-2] + w.shape[-1]))          # glorot_uniform (Keras)
            w.uniform_(-bound, bound, generator=g)
        self.tok.uniform_(-0.05, 0.05, generator=g)                       # Keras Embedding default
        self.ln1_w.fill_(1.0)
        self.ln2_w.fill_(1.0)

    def _ln(self, x, w, b):
        x = nn.functional.layer_norm(x, x.shape[-1:], eps=self.cfg.layer_norm_eps)
        return x * w[:, None, None] + b[:, None, None]

    def _lin(self, x, w, b):
        return torch.einsum("mbld,mde->mble", x, w) + b[:, None, None]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        M, B, L = tokens.shape
        if M != self.n_models:
            raise ValueError(f"tokens must have leading dimension n_models={self.n_models}; got {M}")
        d, h = self.cfg.embed_dim, self.cfg.num_heads
        mi = torch.arange(M, device=tokens.device)[:, None, None]
        x = self.tok[mi, tokens] + self.pos[:, None, :L]
        q, k, v = self._lin(x, self.w_qkv, self.b_qkv).view(M * B, L, 3, h, d // h).permute(2, 0, 3, 1, 4)
        # Bidirectional (unmasked) scaled dot-product attention, softmax over keys.
        # (Written out: torch's fused CPU kernel is slow for 6x6 attention maps.)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
        a = att @ v
        a = self._lin(a.transpose(1, 2).reshape(M, B, L, d), self.w_o, self.b_o)
        x = self._ln(x + nn.functional.dropout(a, self.cfg.dropout, self.training), self.ln1_w, self.ln1_b)
        ff = self._lin(torch.relu(self._lin(x, self.w_1, self.b_1)), self.w_2, self.b_2)
        x = self._ln(x + nn.functional.dropout(ff, self.cfg.dropout, self.training), self.ln2_w, self.ln2_b)
        return self._lin(x, self.w_h, self.b_h)


def masked_copies(rows: np.ndarray, mask_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MLM over features: each row of ``rows`` (N, L) becomes L copies, copy j with position j masked.

    Returns (inputs (N·L, L), masked position (N·L,), target token (N·L,)).
    """
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] < 2:
        raise ValueError(f"rows must be a 2-d integer array (N, K+1) with K >= 1; got shape {rows.shape}")
    if rows.min() < 0 or rows.max() >= mask_id:
        raise ValueError(f"tokens must lie in 0..{mask_id - 1} (mask_id={mask_id}); got range "
                         f"{rows.min()}..{rows.max()}")
    n, L = rows.shape
    inp = np.repeat(rows, L, axis=0)
    pos = np.tile(np.arange(L), n)
    tgt = inp[np.arange(n * L), pos].copy()
    inp[np.arange(n * L), pos] = mask_id
    return inp.astype(np.int64), pos.astype(np.int64), tgt.astype(np.int64)


def train_atn(train_rows, n_classes: int, cfg: ATNConfig | None = None, seed: int | list[int] = 0,
              device: str = "cpu", state: dict | None = None,
              on_epoch: Callable[[int, float, dict], None] | None = None) -> tuple[TabularATN, list]:
    """Train ATN with the MLM objective over features (Sec. 3.1) on integer rows (N, K+1), y last.

    ``train_rows`` is one array, or a list of M arrays with the same shape: M independent models are
    then trained in lock-step (see :class:`TabularATN`), with per-model seeds ``seed`` (int or list).
    ``state`` (from an ``on_epoch`` checkpoint) resumes training after its epoch.  ``on_epoch(epoch,
    mean_loss, state)`` is called after every epoch with a resumable state dict.
    Returns the model and the per-epoch losses (list of M-lists).
    """
    cfg = (cfg or ATNConfig()).validate()
    sets = [np.asarray(train_rows)] if not isinstance(train_rows, (list, tuple)) else [np.asarray(r) for r in train_rows]
    if len({r.shape for r in sets}) != 1:
        raise ValueError(f"train_rows must all have the same shape; got {[r.shape for r in sets]}")
    M = len(sets)
    seeds = [int(seed)] * M if np.ndim(seed) == 0 else [int(s) for s in seed]
    if len(seeds) != M:
        raise ValueError(f"seed must be an int or a list of {M} ints; got {len(seeds)}")
    cop = [masked_copies(r, n_classes) for r in sets]
    g = torch.Generator().manual_seed(seeds[0] * 7919 + M)
    model = TabularATN(n_classes, sets[0].shape[1], cfg, generator=g, n_models=M).to(device)
    with torch.no_grad():            # per-model initial weights from each model's own seed
        for j, s in enumerate(seeds):
            gj = torch.Generator().manual_seed(s)
            one = TabularATN(n_classes, sets[0].shape[1], cfg, generator=gj, n_models=1)
            for (_, p), (_, q) in zip(model.named_parameters(), one.named_parameters()):
                p[j].copy_(q[0])
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
    losses: list = []
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        g.set_state(state["generator"])
        losses = list(state["losses"])
        start = int(state["epoch"])
    X = torch.as_tensor(np.stack([c[0] for c in cop]), device=device)     # (M, n, L)
    P = torch.as_tensor(np.stack([c[1] for c in cop]), device=device)     # (M, n)
    T = torch.as_tensor(np.stack([c[2] for c in cop]), device=device)     # (M, n)
    n = X.shape[1]
    mi = torch.arange(M, device=device)[:, None]
    for epoch in range(start, cfg.epochs):
        # Dropout draws from torch's global RNG; fork it so runs are reproducible without touching it.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seeds[0] * 100003 + epoch)
            model.train()
            perm = torch.argsort(torch.rand(M, n, generator=g), dim=1).to(device)   # one shuffle per model
            tot = torch.zeros(M, device=device)
            for i in range(0, n, cfg.batch_size):
                idx = perm[:, i:i + cfg.batch_size]
                b = idx.shape[1]
                logits = model(X[mi, idx])                                 # (M, b, L, C)
                lg = logits[mi, torch.arange(b, device=device)[None], P[mi, idx]]   # masked positions
                per = nn.functional.cross_entropy(lg.reshape(M * b, -1), T[mi, idx].reshape(-1),
                                                  reduction="none").view(M, b)
                loss = per.mean(1).sum()          # sum of per-model mean losses: separate gradients
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                tot += per.detach().sum(1)        # summed on the device: no host sync per step
        losses.append((tot / n).cpu().tolist())
        if on_epoch is not None:
            on_epoch(epoch + 1, float(np.mean(losses[-1])),
                     {"model": model.state_dict(), "optim": opt.state_dict(), "generator": g.get_state(),
                      "losses": losses, "epoch": epoch + 1})
    model.eval()
    return model, losses


@torch.no_grad()
def predict_response(model: TabularATN, x_rows, device: str = "cpu", which: int | None = None) -> np.ndarray:
    """Feed (X, [MASK]) and return the most probable class of the response (last position).

    ``x_rows``: (N, K) for a single model (or with ``which`` = the model index), else a list of M arrays
    (one per model, M = ``model.n_models``).
    """
    model.eval()
    if which is not None and (isinstance(which, bool) or not isinstance(which, (int, np.integer))
                              or not 0 <= which < model.n_models):
        raise ValueError(f"which must be a model index in [0, {model.n_models - 1}]; got {which!r}")
    if which is not None or not isinstance(x_rows, (list, tuple)):
        sets = [np.asarray(x_rows)]
    else:
        if len(x_rows) != model.n_models:
            raise ValueError(f"x_rows must be one (N, {model.seq_len - 1}) array or a list of n_models = "
                             f"{model.n_models} of them; got a list of {len(x_rows)}")
        sets = [np.asarray(r) for r in x_rows]
    out = []
    for j, xr in enumerate(sets):
        if xr.ndim != 2 or xr.shape[1] != model.seq_len - 1:
            raise ValueError(f"x_rows must have shape (N, {model.seq_len - 1}); got {xr.shape}")
        m = which if which is not None else j
        tok = np.concatenate([xr, np.full((len(xr), 1), model.mask_id)], axis=1)
        full = torch.full((model.n_models, len(xr), model.seq_len), model.mask_id, dtype=torch.long, device=device)
        full[m] = torch.as_tensor(tok, dtype=torch.long, device=device)
        out.append(model(full)[m, :, -1].argmax(-1).cpu().numpy())
    return out[0] if len(out) == 1 and (which is not None or not isinstance(x_rows, (list, tuple))) else out
