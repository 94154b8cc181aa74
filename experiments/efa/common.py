"""Shared machinery of the EFA experiment runners: examples (per sequence or per target), the
training loop (Adam, early stopping on validation with best-weight restore, one checkpoint per
epoch, resume) and small helpers.  The models come from :mod:`attnlab.experiments.models.efa`
through :mod:`attnlab.experiments.efa.nets`.

Sampling (which targets share an Adam step; recorded as ``sampling`` in every record):
- 'sequences' (default): a step takes whole sequences with every position a target (the
  per-target masking of Sec 2.1/2.2 done by the models' exact all-targets passes), as many
  sequences as make about ``batch_size`` targets, so that an epoch has about as many steps as
  with per-target sampling;
- 'targets': the authors' code: a step takes ``batch_size`` shuffled (sequence, position)
  targets.  Each step is evaluated in length groups, each trimmed to its own longest effective
  length (the target position + 1 for a causal model, the sequence length otherwise): the same
  step, at a lower cost.
The loss of a step is the mean over its targets in both modes, and evaluation is always by
sequence with all targets at once (a per-target loss does not depend on the batch).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time

import numpy as np

from attnlab.experiments.efa.data import Sequences

SAMPLINGS = ("sequences", "targets")
#: the seed of the MovieLens runners' user-level split (the configs' split_seed; --split-seed another is
#: another config, recorded in its own folder)
SPLIT_SEED = 42


def config_name(args) -> str | None:
    """The records' config folder for a run: the config's name (``quick``, ``full``, or a named one such
    as Instacart's ``full-es``); the default sampling keeps it; the
    authors' per-target sampling gets its own (``quick-targets`` / ``full-targets``), so that records of
    the two modes are never mixed in one table nor taken for each other by seed skipping.  A learning
    rate given with ``--lr`` (choosing it on validation) appends ``-lr<LR>`` for the same reason, as does another
    user-level split (``--split-seed 7``: ``-split-seed7``), and
    ``--setup authors`` (the authors' initialisation and Adam epsilon) appends ``-authors``."""
    sampling = getattr(args, "sampling", "sequences")
    name = "quick" if getattr(args, "quick", False) else (getattr(args, "config", None) or "full")
    if sampling != "sequences":
        name = f"{name}-{sampling}"
    split = getattr(args, "split_seed", SPLIT_SEED)
    if split != SPLIT_SEED:             # (it was written into `full`, the paper's configuration)
        name = f"{name}-split-seed{split}"
    lr = getattr(args, "lr", None)
    if lr is not None:
        name = f"{name}-lr{lr:g}"
    if getattr(args, "setup", "ours") == "authors":
        name = f"{name}-authors"
    return None if name in ("quick", "full") else name


# --------------------------------------------------------------------------- examples


def sequence_examples(seqs: Sequences):
    """One example per sequence, every observed position a target: a dict of torch tensors
    items (N, L), values (N, L) (if any), lengths (N,)."""
    import torch

    out = {"items": torch.as_tensor(seqs.items), "lengths": torch.as_tensor(seqs.lengths)}
    if seqs.values is not None:
        out["values"] = torch.as_tensor(seqs.values, dtype=torch.float32)
    return out


def target_examples(seqs: Sequences):
    """One example per (sequence, position): the per-target masking of Sec 2.1/2.2, done by
    replicating each sequence once per observed position (the authors' sampling).  Returns a dict
    of torch tensors: items (N, L), values (N, L) (if any), lengths (N,), target (N,) = masked
    position."""
    import torch

    f_idx = np.repeat(np.arange(len(seqs)), seqs.lengths)
    pos = np.concatenate([np.arange(n) for n in seqs.lengths])
    out = {"items": torch.as_tensor(seqs.items[f_idx]), "lengths": torch.as_tensor(seqs.lengths[f_idx]),
           "target": torch.as_tensor(pos, dtype=torch.long)}
    if seqs.values is not None:
        out["values"] = torch.as_tensor(seqs.values[f_idx], dtype=torch.float32)
    return out


def examples(seqs: Sequences, sampling: str = "sequences"):
    """Training examples for `sampling` (see the module docstring)."""
    if sampling not in SAMPLINGS:
        choice_error("--sampling", sampling, SAMPLINGS)
    return sequence_examples(seqs) if sampling == "sequences" else target_examples(seqs)


def n_examples(batch: dict) -> int:
    return int(next(iter(batch.values())).shape[0])


def n_targets(data: dict) -> int:
    """Number of targets: one per example, or every observed position of every sequence."""
    return n_examples(data) if "target" in data or "lengths" not in data else int(data["lengths"].sum())


def take(batch: dict, idx) -> dict:
    return {k: v[idx] for k, v in batch.items()}


def to_device(batch: dict, device: str, length: int | None = None) -> dict:
    """Move a batch to `device`, trimming padded sequence tensors to `length` (default: the
    longest sequence in the batch; columns beyond it are never attended to, so this changes
    nothing but the cost)."""
    if "lengths" in batch and "items" in batch:
        L = int(batch["lengths"].max()) if length is None else int(length)
        batch = {k: (v[:, :L] if k in ("items", "values") else v) for k, v in batch.items()}
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def at_targets(b: dict, t):
    """The entries of a (B, L, ...) tensor at the batch's targets: (B, ...) for per-target
    examples, the whole (B, L, ...) tensor for sequences (every position a target)."""
    import torch

    if "target" in b:
        return t[torch.arange(t.shape[0], device=t.device), b["target"]]
    return t


def target_mask(b: dict):
    """Bool mask of the real targets, shaped as :func:`at_targets` gives: all True for per-target
    examples, False at the padded positions of sequences."""
    import torch

    if "target" in b or "lengths" not in b:
        return torch.ones(n_examples(b), dtype=torch.bool, device=b["lengths" if "lengths" in b else next(iter(b))].device)
    L = b["items"].shape[1] if "items" in b else int(b["lengths"].max())
    return torch.arange(L, device=b["lengths"].device) < b["lengths"][:, None]


def target_weight(b: dict, loss):
    """`loss` (per-target, shaped as :func:`at_targets` gives) with padded positions set to 0."""
    import torch

    if "target" in b or "lengths" not in b:
        return loss
    return torch.where(target_mask(b), loss, torch.zeros_like(loss))


def effective_lengths(data: dict, causal: bool):
    """Host-side (N,) number of leading columns an example's loss depends on: the target
    position + 1 for a causal (unidirectional) model with per-target examples, else the length."""
    if "target" in data and causal:
        return data["target"] + 1
    return data["lengths"]


def groups(data: dict, idx, causal: bool, min_group: int = 16, call_cost: int = 16384):
    """Split the examples `idx` of one step into length groups, each with the length to trim it
    to: sorted by effective length and cut into k equal groups (k in 1, 2, 4; groups of at least
    `min_group` examples), k chosen to minimise the padded attention cells sum(n_g L_g^2) plus
    `call_cost` cells per extra forward call."""
    import torch

    if "lengths" not in data:
        return [(idx, None)]
    eff = effective_lengths(data, causal)[idx]
    order = torch.argsort(eff, stable=True)
    best = None
    for k in (1, 2, 4):
        if k > 1 and len(idx) < k * min_group:
            break
        parts = [part for part in torch.tensor_split(order, k) if len(part)]
        lens = [int(eff[part].max()) for part in parts]
        cost = sum(len(part) * L * L for part, L in zip(parts, lens)) + call_cost * (len(parts) - 1)
        if best is None or cost < best[0]:
            best = (cost, [(idx[part], L) for part, L in zip(parts, lens)])
    return best[1]


def step_sizes(data: dict, batch_size: int) -> int:
    """Examples per step: `batch_size` targets, or as many whole sequences as hold about
    `batch_size` targets on average."""
    if "target" in data or "lengths" not in data:
        return batch_size
    n, t = n_examples(data), n_targets(data)
    return max(1, round(batch_size * n / max(t, 1)))


# --------------------------------------------------------------------------- training


@dataclasses.dataclass
class TrainConfig:
    lr: float = 1e-4
    epochs: int = 1000
    patience: int = 10
    batch_size: int = 256
    max_train: int | None = None       # subsample training examples (quick configs)
    adam_eps: float = 1e-8             # torch's default; the authors' Keras Adam: 1e-7 (--setup authors)


def adam(model, lr: float, eps: float = 1e-8):
    """Adam with the fused (one kernel per step) implementation where this torch has it."""
    import torch

    try:
        return torch.optim.Adam(model.parameters(), lr=lr, eps=eps, fused=True)
    except (TypeError, RuntimeError):          # torch without a fused Adam for this device
        return torch.optim.Adam(model.parameters(), lr=lr, eps=eps)


SETUPS = ("ours", "authors")
# what --setup authors changes (docs/efa_experiments.md, "Our setup against the authors' code")
AUTHORS_ADAM_EPS = 1e-7              # keras.optimizers.Adam's epsilon


def keras_init(net):
    """Re-draw, in place, the attention and position parameters of an EFA network with the bounds of
    the authors' Keras code (--setup authors): glorot_uniform over the 2-D kernel (width, heads x
    key_dim) of each of W^Q, W^K, W^V (Keras MultiHeadAttention: U(+-sqrt(6 / (width + H d))), where
    ours draws each head alone: U(+-sqrt(6 / (width + d)))) and over (max_len, width) for the learned
    position embeddings (keras_nlp PositionEmbedding's glorot_uniform, where ours draws U(+-0.05)).
    W^O is glorot over (width, H d) in both.  Draws from torch's global generator in module order (call
    it inside :func:`init_model` to keep the seed's draw reproducible); returns `net`."""
    import torch
    from torch import nn

    from attnlab.numerics.efa_attention import AttentionLayer

    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, AttentionLayer):
                for W in (m.W_Q, m.W_K, m.W_V):
                    H, d, width = W.shape
                    bound = math.sqrt(6.0 / (width + H * d))
                    nn.init.uniform_(W, -bound, bound)
            P = getattr(m, "P", None)
            if isinstance(P, nn.Parameter) and P.dim() == 2:
                bound = math.sqrt(6.0 / (P.shape[0] + P.shape[1]))
                nn.init.uniform_(P, -bound, bound)
    return net


def apply_setup(cfg: dict, args) -> dict:
    """`cfg` as the run's --setup has it: unchanged for 'ours' (the config of the committed records),
    with ``setup: authors`` and Keras' Adam epsilon (:data:`AUTHORS_ADAM_EPS`) recorded for 'authors'."""
    if getattr(args, "setup", "ours") != "authors":
        return dict(cfg)
    return dict(cfg, setup="authors", adam_eps=AUTHORS_ADAM_EPS)


def train_config(cfg: dict, epochs: int | None = None, patience: int | None = None,
                 batch_size: int | None = None) -> "TrainConfig":
    """The TrainConfig of a runner's config dict (lr, epochs, patience, batch_size, adam_eps)."""
    return TrainConfig(cfg["lr"], cfg["epochs"] if epochs is None else epochs,
                       cfg["patience"] if patience is None else patience,
                       cfg["batch_size"] if batch_size is None else batch_size,
                       adam_eps=cfg.get("adam_eps", 1e-8))


def with_setup(builder, cfg: dict):
    """`builder` wrapped so that the network it builds gets the authors' initialisation when the
    config's setup is 'authors' (:func:`keras_init`); the builder itself otherwise."""
    if cfg.get("setup", "ours") == "authors":
        return lambda: keras_init(builder())
    return builder


def init_model(builder, seed: int):
    """Build a module with a seeded initialisation without touching the caller's global RNG state
    (torch initialisers draw from the global generator, so it is forked and seeded here)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return builder()


@dataclasses.dataclass
class FitResult:
    epochs_run: int
    best_epoch: int
    best_val: float
    train_seconds: float
    history: list
    stopped: str = "max-epochs"       # early-stop | max-epochs | fixed-schedule
    max_epochs: int = 0

    def training(self) -> dict:
        """How training ended, for the record (attnlab.experiment.RunContext.write_record)."""
        return {"stopped": self.stopped, "best_epoch": self.best_epoch, "epochs_run": self.epochs_run,
                "max_epochs": self.max_epochs}


def evaluate(model, loss_fn, data: dict, device: str, batch_size: int = 4096) -> float:
    """Mean of the per-target loss over `data` (no gradient), in length-sorted chunks of about
    `batch_size` targets, each trimmed to its longest sequence."""
    import torch

    model.eval()
    causal = bool(getattr(model, "causal", False))
    n = n_examples(data)
    order = torch.argsort(effective_lengths(data, causal), stable=True) if "lengths" in data else torch.arange(n)
    step = step_sizes(data, batch_size)
    tot = torch.zeros((), dtype=torch.float64, device=device)
    with torch.no_grad():
        for s in range(0, n, step):
            idx = order[s:s + step]
            L = int(effective_lengths(data, causal)[idx].max()) if "lengths" in data else None
            b = to_device(take(data, idx), device, L)
            tot += loss_fn(model, b).sum(dtype=torch.float64)
    return float(tot) / n_targets(data)


def train_epoch(model, loss_fn, opt, train: dict, perm, step: int, causal: bool, device: str) -> float:
    """One pass over `train` in the order `perm`, `step` examples a step, each step evaluated in
    trimmed length groups (:func:`groups`); returns the mean training loss over the targets.  No
    host synchronisation inside the loop (the loss is summed on the device)."""
    import torch

    n = n_examples(train)
    tot = torch.zeros((), dtype=torch.float64, device=device)
    for s in range(0, n, step):
        idx = perm[s:s + step]
        parts = groups(train, idx, causal)
        count = len(idx) if "target" in train or "lengths" not in train else int(train["lengths"][idx].sum())
        opt.zero_grad(set_to_none=True)
        for part, L in parts:
            lsum = loss_fn(model, to_device(take(train, part), device, L)).sum()
            (lsum / count).backward()
            tot += lsum.detach().to(torch.float64)
        opt.step()
    return float(tot) / n_targets(train)


def fit(ctx, model, loss_fn, train: dict, val: dict, cfg: TrainConfig, name: str = "") -> FitResult:
    """Adam on the mean of `loss_fn(model, batch)` (a per-example loss), early stopping on the
    validation loss with `cfg.patience` (restoring the best weights, as the authors' code), and one
    checkpoint per epoch through `ctx` so that `--resume` loses at most one epoch."""
    import torch

    from attnlab.experiments.models import efa as M

    device = ctx.device
    model.to(device)
    opt = adam(model, cfg.lr, cfg.adam_eps)
    rng = np.random.default_rng([ctx.seed, 7])
    n = n_examples(train)
    step = step_sizes(train, cfg.batch_size)
    causal = bool(getattr(model, "causal", False))
    start, best_val, best_epoch, bad, history, spent = 0, math.inf, -1, 0, [], 0.0
    best_state = copy.deepcopy(model.state_dict())
    ck = ctx.load_checkpoint()
    if ck is not None and ck.get("name") == name:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        rng.bit_generator.state = ck["rng"]
        start, best_val, best_epoch, bad = ck["epoch"], ck["best_val"], ck["best_epoch"], ck["bad"]
        best_state, history, spent = ck["best_state"], ck["history"], ck["seconds"]
    prog = ctx.progress(cfg.epochs, f"{ctx.experiment} {name} seed {ctx.seed}")
    t0 = time.perf_counter()
    epoch = start
    fwd = model
    if getattr(ctx.args, "compile", False):
        fwd = torch.compile(model, dynamic=True)      # the wrapper forwards attributes to `model`
    for epoch in range(start, cfg.epochs):
        if bad >= cfg.patience:
            break
        model.train()
        perm = torch.as_tensor(rng.permutation(n))
        with M.input_checks(epoch == start):          # every input checked once, then no host syncs
            tot = train_epoch(fwd, loss_fn, opt, train, perm, step, causal, device)
            v = evaluate(fwd, loss_fn, val, device)
        if not math.isfinite(v):
            from attnlab.errors import Diverged

            raise Diverged(f"{name} diverged: validation loss is {v} at epoch {epoch + 1} (lr {cfg.lr:g}; a smaller "
                           "--lr, as a rule)")
        history.append((epoch + 1, tot, v))
        if v < best_val:
            best_val, best_epoch, bad = v, epoch + 1, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
        ctx.save_checkpoint({"name": name, "model": model.state_dict(), "opt": opt.state_dict(),
                             "rng": rng.bit_generator.state, "epoch": epoch + 1, "best_val": best_val,
                             "best_epoch": best_epoch, "bad": bad, "best_state": best_state,
                             "history": history, "seconds": spent + time.perf_counter() - t0})
        prog.update(epoch + 1, train=tot, val=v, best=best_val)
    model.load_state_dict(best_state)
    # early stopping fired; or the epochs ran out: the paper's fixed schedule when the config has no
    # early stopping (patience >= epochs, e.g. Instacart's 1,000 epochs with the best weights restored)
    stopped = ("early-stop" if bad >= cfg.patience and len(history) < cfg.epochs else
               "fixed-schedule" if cfg.patience >= cfg.epochs else "max-epochs")
    return FitResult(len(history), best_epoch, best_val, spent + time.perf_counter() - t0,
                     [[int(h[0]), _sig7(float(h[1])), _sig7(float(h[2]))] for h in history], stopped, cfg.epochs)


def _target_values(data: dict, key: str) -> np.ndarray:
    """`data[key]` at every target of an example dict (masked position, or every real position of a
    sequence example), as a float64 array."""
    t = np.asarray(data[key])
    if "target" in data:
        t = t[np.arange(t.shape[0]), np.asarray(data["target"])]
    elif "lengths" in data:
        t = t[np.arange(t.shape[1])[None, :] < np.asarray(data["lengths"])[:, None]]
    return np.asarray(t, dtype=np.float64).reshape(-1)


def trivial_loss(train: dict, val: dict, kind: str, n_items: int | None = None,
                 key: str | None = None, perfect: float | None = None) -> dict:
    """The trivial predictor's validation loss, the input of attnlab.convergence's test (a): the
    training targets' mean (kind "mse"; `perfect` the Bayes MSE where known, else 0), their add-one
    smoothed marginal frequencies over `n_items` items ("categorical", items numbered from 1; perfect
    0), or a constant Poisson rate fitted on them ("poisson_v1": y-1 ~ Poisson(e^z); "poisson_v2":
    y ~ Poisson(1+e^z); in the authors' code loss, whose perfect value is the saturated model's).
    Returns {"value", "perfect", "what"}."""
    if kind == "categorical":
        ytr = _target_values(train, key or "items").astype(np.int64) - 1
        yva = _target_values(val, key or "items").astype(np.int64) - 1
        counts = np.bincount(ytr, minlength=n_items).astype(np.float64) + 1.0
        logp = np.log(counts / counts.sum())
        return {"value": float(-logp[yva].mean()), "perfect": 0.0,
                "what": "cross-entropy of the training items' marginal frequencies (add-one)"}
    ytr, yva = _target_values(train, key or "values"), _target_values(val, key or "values")
    if kind == "mse":
        return {"value": float(np.mean((yva - ytr.mean()) ** 2)), "perfect": 0.0 if perfect is None else perfect,
                "what": "MSE of the training mean"}
    if kind in ("poisson_v1", "poisson_v2"):
        k_tr, k_va = (ytr - 1, yva - 1) if kind == "poisson_v1" else (ytr, yva)
        rate = max(float(k_tr.mean()), 1e-12) if kind == "poisson_v1" else max(float(k_tr.mean()), 1.0)
        xlogx = np.where(k_va > 0, k_va * np.log(np.where(k_va > 0, k_va, 1.0)), 0.0)
        return {"value": float(np.mean(rate - k_va * math.log(rate))), "perfect": float(np.mean(k_va - xlogx)),
                "what": "Poisson code loss of the training targets' constant rate"}
    raise ValueError(f"kind must be one of mse, categorical, poisson_v1, poisson_v2; got {kind!r}")


def _sig7(x: float) -> float:
    return float(f"{x:.6e}") if math.isfinite(x) and x != 0 else x


# --------------------------------------------------------------------------- misc


def choice_error(arg: str, value, allowed):
    """A bad value of flag `arg`: UsageError (one line, exit 2)."""
    from attnlab.errors import UsageError

    raise UsageError(f"{arg} must be one of {', '.join(map(str, allowed))}; got {value!r}")


def mean_ci(values) -> tuple[float, float | None]:
    from attnlab.results import ci95

    v = [float(x) for x in values]
    return sum(v) / len(v), ci95(v)
