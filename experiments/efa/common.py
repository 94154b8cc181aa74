"""Shared machinery of the EFA experiment runners: per-target examples, the training loop (Adam,
early stopping on validation with best-weight restore, one checkpoint per epoch, resume) and
small helpers.  The models come from :mod:`attnlab.experiments.models.efa` through
:mod:`attnlab.experiments.efa.nets`.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import sys
import time

import numpy as np

from attnlab.experiments.efa.data import Sequences


# --------------------------------------------------------------------------- per-target examples


def target_examples(seqs: Sequences):
    """One example per (sequence, position): the per-target masking of Sec 2.1/2.2 (spec §1.6),
    done by replicating each sequence once per observed position.  Returns a dict of torch tensors:
    items (N, L), values (N, L) (if any), lengths (N,), target (N,) = masked position."""
    import torch

    f_idx = np.repeat(np.arange(len(seqs)), seqs.lengths)
    pos = np.concatenate([np.arange(n) for n in seqs.lengths])
    out = {"items": torch.as_tensor(seqs.items[f_idx]), "lengths": torch.as_tensor(seqs.lengths[f_idx]),
           "target": torch.as_tensor(pos, dtype=torch.long)}
    if seqs.values is not None:
        out["values"] = torch.as_tensor(seqs.values[f_idx], dtype=torch.float32)
    return out


def n_examples(batch: dict) -> int:
    return int(next(iter(batch.values())).shape[0])


def take(batch: dict, idx) -> dict:
    return {k: v[idx] for k, v in batch.items()}


def to_device(batch: dict, device: str) -> dict:
    """Move a batch to `device`, trimming padded sequence tensors to the longest sequence in the
    batch (padding beyond it is never attended to, so this changes nothing but the cost)."""
    if "lengths" in batch and "items" in batch:
        L = int(batch["lengths"].max())
        batch = {k: (v[:, :L] if k in ("items", "values") else v) for k, v in batch.items()}
    return {k: v.to(device) for k, v in batch.items()}


# --------------------------------------------------------------------------- training


@dataclasses.dataclass
class TrainConfig:
    lr: float = 1e-4
    epochs: int = 1000
    patience: int = 10
    batch_size: int = 256
    max_train: int | None = None       # subsample training examples (quick configs)


def set_threads(n: int) -> None:
    import torch

    if n < 1:
        raise ValueError(f"--threads must be >= 1; got {n}")
    torch.set_num_threads(n)


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
    """Mean of the per-example loss over `data` (no gradient)."""
    import torch

    model.eval()
    tot, n = 0.0, n_examples(data)
    with torch.no_grad():
        for s in range(0, n, batch_size):
            b = to_device(take(data, slice(s, s + batch_size)), device)
            tot += float(loss_fn(model, b).sum())
    return tot / n


def fit(ctx, model, loss_fn, train: dict, val: dict, cfg: TrainConfig, name: str = "") -> FitResult:
    """Adam on the mean of `loss_fn(model, batch)` (a per-example loss), early stopping on the
    validation loss with `cfg.patience` (restoring the best weights, as the authors' code), and one
    checkpoint per epoch through `ctx` so that `--resume` loses at most one epoch."""
    import torch

    device = ctx.device
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng([ctx.seed, 7])
    n = n_examples(train)
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
    for epoch in range(start, cfg.epochs):
        if bad >= cfg.patience:
            break
        model.train()
        perm = torch.as_tensor(rng.permutation(n))
        tot = 0.0
        for s in range(0, n, cfg.batch_size):
            b = to_device(take(train, perm[s:s + cfg.batch_size]), device)
            loss = loss_fn(model, b).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * n_examples(b)
        v = evaluate(model, loss_fn, val, device)
        if not math.isfinite(v):
            raise FloatingPointError(f"{name}: validation loss is {v} at epoch {epoch + 1}")
        history.append((epoch + 1, tot / n, v))
        if v < best_val:
            best_val, best_epoch, bad = v, epoch + 1, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
        ctx.save_checkpoint({"name": name, "model": model.state_dict(), "opt": opt.state_dict(),
                             "rng": rng.bit_generator.state, "epoch": epoch + 1, "best_val": best_val,
                             "best_epoch": best_epoch, "bad": bad, "best_state": best_state,
                             "history": history, "seconds": spent + time.perf_counter() - t0})
        prog.update(epoch + 1, train=tot / n, val=v, best=best_val)
    model.load_state_dict(best_state)
    # early stopping fired; or the epochs ran out: the paper's fixed schedule when the config has no
    # early stopping (patience >= epochs, e.g. Instacart's 1,000 epochs with the best weights restored)
    stopped = ("early-stop" if bad >= cfg.patience and len(history) < cfg.epochs else
               "fixed-schedule" if cfg.patience >= cfg.epochs else "max-epochs")
    return FitResult(len(history), best_epoch, best_val, spent + time.perf_counter() - t0,
                     [list(h) for h in history], stopped, cfg.epochs)


# --------------------------------------------------------------------------- misc


def choice_error(arg: str, value, allowed):
    """A bad value of flag `arg`: UsageError (one line, exit 2)."""
    from attnlab.errors import UsageError

    raise UsageError(f"{arg} must be one of {', '.join(map(str, allowed))}; got {value!r}")


def parse_list(text: str, allowed, arg: str):
    vals = [v.strip() for v in str(text).split(",") if v.strip()]
    bad = [v for v in vals if v not in allowed]
    if bad or not vals:
        raise ValueError(f"{arg} must be a comma-separated subset of {', '.join(allowed)}; got {text!r}")
    return vals


def mean_ci(values) -> tuple[float, float | None]:
    from attnlab.results import ci95

    v = [float(x) for x in values]
    return sum(v) / len(v), ci95(v)
