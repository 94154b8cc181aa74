"""Shared pieces of the kernel paper's experiment runners: data loading, the time-warping generator,
the training loop (per-epoch checkpoints, resume, progress) and the record layout.

Records: ``results/<experiment>/<config>/<setting>-<model>-seed<k>.json`` with metric rows
(setting, model, metric, value); metrics in percent, as the paper prints them.
"""
from __future__ import annotations

import math
import argparse
import os
import time

import numpy as np
import torch

from attnlab.devices import resolve_device
from attnlab.experiment import RunContext, metric_row, results_root
from attnlab.run_args import seeds_of

# Display names = the paper's table rows; keys = our model identifiers.
DISPLAY = {
    "discrete_softmax": "Discrete Softmax",
    "cts_softmax": "Cts Softmax",
    "cts_sparsemax": "Cts Sparsemax",
    "gaussian_mixture": "Gaussian Mixture",
    "kernel_softmax": "Kernel Softmax",
    "kernel_sparsemax": "Kernel Sparsemax",
    "lstm_fcn": "LSTM FCN",
    "transformer": "TST (Transformer)",
    "transformer_patch": "TST, patch tokens",
}


def bad_arg(name: str, value, allowed):
    """A bad value of flag `name`: UsageError (one line, exit 2)."""
    from attnlab.errors import UsageError

    raise UsageError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")


def parse_models(text: str | None, allowed: tuple[str, ...]) -> list[str]:
    """--models: 'a,b' -> ['a', 'b']; every model when not given (a UsageError for a model not allowed)."""
    from attnlab.run_args import parse_list

    return list(allowed) if text is None else parse_list(text, allowed, "--models")   # '' is refused, not "all"


def config_name(args, configs, allowed) -> str:
    """The config a run uses: "quick" under --quick, else --config.  --config is checked either way (a
    misspelt --config beside --quick was ignored): a UsageError unless it is one of `allowed`."""
    if args.config not in allowed:
        bad_arg("--config", args.config, allowed)
    name = "quick" if args.quick else args.config
    if name not in configs:
        bad_arg("--config", args.config, allowed)
    return name


#: the most basis functions --basis takes (the paper's largest is 128; 10,000,000 ran without end)
MAX_BASIS = 4096


def add_basis_flag(p, default: tuple[int, ...]) -> None:
    """--basis: the numbers of basis functions N to run (a subset of a config's, e.g. for choosing the
    learning rate on one N)."""
    p.add_argument("--basis", default=None, help="comma list of N values (default: the config's, "
                   + ",".join(map(str, default)) + ")")


def basis_minimum(model_cls) -> int:
    """The fewest basis functions `model_cls` builds its GaussianBasis from: two centres for each of its widths
    (its `sigmas`)."""
    import inspect

    return 2 * len(inspect.signature(model_cls).parameters["sigmas"].default)


def with_basis(args, config: dict, minimum: int = 2) -> dict:
    """The config with `--basis` applied (a UsageError unless every value is an integer in [minimum,
    MAX_BASIS]: the runner's :func:`basis_minimum`; --basis 2 passed here and failed in the model, a traceback)."""
    from attnlab.errors import UsageError, strict_int

    if getattr(args, "basis", None) is None:
        return config
    try:
        basis = tuple(strict_int(v) for v in args.basis.split(","))
        if not basis or any(v < minimum or v > MAX_BASIS for v in basis) or len(set(basis)) != len(basis):
            raise ValueError
    except ValueError:
        shown = args.basis if len(args.basis) <= 60 else args.basis[:40] + f"...({len(args.basis)} characters)"
        raise UsageError(f"--basis must be a comma list of integers in [{minimum}, {MAX_BASIS}], none twice; got "
                         f"{shown!r}") from None
    return dict(config, basis=basis)


def with_lr(args, config_name: str, config: dict) -> tuple[str, dict]:
    """(records folder, config) after `--lr`: unchanged without it; with it, the config's lr replaced
    and the folder ``<config>-lr<lr>``, so runs at another learning rate never mix with the config's."""
    lr = getattr(args, "lr", None)
    if lr is None:
        return config_name, config
    return f"{config_name}-lr{lr:g}", dict(config, lr=lr)


def make_context(args, experiment: str, config_name: str, config: dict, tag: str, seed: int,
                 substitute: str | None) -> RunContext:
    """A RunContext whose record folder is the named config (quick, full, or a reduced CPU config)."""
    return RunContext(experiment, seed, resolve_device(args.device), bool(args.quick), config, args, tag,
                      substitute, config_name=None if config_name in ("quick", "full") else config_name)


def torch_setup(threads: int | None = None) -> None:
    if not threads:
        from attnlab.run_args import positive_int

        text = os.environ.get("ATTNLAB_THREADS", "1")
        try:
            threads = positive_int("ATTNLAB_THREADS")(text)
        except argparse.ArgumentTypeError as exc:      # was a ValueError traceback
            from attnlab.errors import UsageError

            raise UsageError(str(exc)) from None
    n = threads
    torch.set_num_threads(max(1, n))


# --------------------------------------------------------------------------- data
def read_ucr(name: str, split: str, path=None, prefix: str | None = None):
    """(X [n, L] float64 with NaN padding, y [n] ints) of a UCR TSV through the data layer."""
    from attnlab.experiments.data import read_table

    fname = {"ucr-forda": "FordA", "ucr-ecg5000": "ECG5000"}.get(name, prefix)
    df = read_table(name, f"{fname}_{split}.tsv.gz", path, sep="\t", header=None)
    return df.iloc[:, 1:].to_numpy(dtype=np.float64), df[0].to_numpy()


def encode_labels(*ys):
    classes = np.unique(np.concatenate(ys))
    return [np.searchsorted(classes, y) for y in ys], len(classes)


def quick_subset(cfg: dict, tr, ytr, te, yte):
    """The first cfg['subset'] of a fixed random order of each split (seeded, as load_ucr_split's): the
    files are sorted by class, and their first rows held one or two classes (kernel-sentiment's IMDB quick
    subset was 400 positive reviews and no negative one).  Without 'subset' the splits as they are."""
    n = cfg.get("subset")
    if not n:
        return tr, ytr, te, yte
    i = np.random.default_rng(0).permutation(len(ytr))[:n]
    j = np.random.default_rng(1).permutation(len(yte))[:n]
    return [tr[k] for k in i], np.asarray(ytr)[i], [te[k] for k in j], np.asarray(yte)[j]


def load_ucr_split(dataset: str, cfg: dict, path=None):
    """A UCR set's TRAIN/TEST as torch tensors: labels encoded 0..k-1, every cfg['downsample']-th point
    of each series (reduced configs), and fixed random subsets for the quick config."""
    (Xtr, ytr), (Xte, yte) = read_ucr(dataset, "TRAIN", path), read_ucr(dataset, "TEST", path)
    (ytr, yte), k = encode_labels(ytr, yte)
    step = cfg.get("downsample", 1)
    Xtr, Xte = Xtr[:, ::step], Xte[:, ::step]
    if cfg.get("train_subset"):
        i = np.random.default_rng(0).permutation(len(ytr))[:cfg["train_subset"]]
        Xtr, ytr = Xtr[i], ytr[i]
    if cfg.get("test_subset"):
        i = np.random.default_rng(1).permutation(len(yte))[:cfg["test_subset"]]
        Xte, yte = Xte[i], yte[i]
    f = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    g = lambda a: torch.tensor(a, dtype=torch.int64)  # noqa: E731
    return [f(Xtr), g(ytr)], [f(Xte), g(yte)], k

# --------------------------------------------------------------------------- time warping (App. B.3)
def time_warping_data(n: int, length: int = 95, lam_max: float = 25.0, seed: int = 0):
    """The paper's synthetic time-warping process (Sec. 6.1, App. B.3), exactly:

    X*(t) = Z0 cos 9πt (t<1/4), Z1 t^2 (t<1/2), Z2 sin t (t<3/4), Z3 cos 17πt (t<1), Z_k ~ U(-4, 4);
    observed X_i(t) = X*(g_i(t)) at `length` evenly spaced t in [0, 1], inverse warp
    g_i(t) = C_i ∫_0^t e^{-s λ_i} ds = C_i (1 - e^{-λ_i t}) / λ_i, λ_i ~ U(0, lam_max), with
    C_i = λ_i / (1 - e^{-λ_i}) so that g_i(1) = 1 (C_i is undefined in the paper);
    label = argmax(<p1, X*>, <p2, X*>) for p1 = U(0, 1/2), p2 = U(1/2, 1), in closed form.
    Returns X [n, length] float32, y [n] int64, plus (Z [n, 4], lam [n]) for checks."""
    if n < 1 or length < 2:
        raise ValueError(f"n must be >= 1 and length >= 2; got n={n}, length={length}")
    if lam_max <= 0:
        raise ValueError(f"lam_max must be > 0; got {lam_max}")
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-4.0, 4.0, size=(n, 4))
    lam = rng.uniform(0.0, lam_max, size=n)
    t = np.linspace(0.0, 1.0, length)
    g = warp(t[None, :], lam[:, None])
    X = aligned_process(g, Z)
    c1, c2 = class_means(Z)
    y = (c2 > c1).astype(np.int64)
    return X.astype(np.float32), y, Z, lam


def time_warping_split(cfg: dict, seed: int):
    """(X, y, n_test) of one seed of the time-warping runner's data (time_warping_data at cfg's n, length and
    lam_max): the first n_test = round(test_fraction n) series are the test split, the rest the training split
    (the runner's split, and the one attnlab.migrate_convergence recomputes the trivial predictor on)."""
    X, y, _, _ = time_warping_data(cfg["n"], cfg["length"], cfg["lam_max"], seed=seed)
    return X, y, int(round(cfg["test_fraction"] * cfg["n"]))


def warp(t, lam):
    """g(t) = (1 - e^{-λt}) / (1 - e^{-λ}) (the limit t as λ -> 0), computed with expm1 for small λ."""
    lam = np.maximum(lam, 1e-12)
    return np.expm1(-lam * t) / np.expm1(-lam)


def aligned_process(u, Z):
    """X*(u) for u in [0, 1] (App. B.3; the paper's index k = 1..4 read as 0..3)."""
    u = np.asarray(u, dtype=np.float64)
    z = [Z[:, k:k + 1] if Z.ndim == 2 and u.ndim == 2 else Z[..., k] for k in range(4)]
    return np.select([u < 0.25, u < 0.5, u < 0.75],
                     [z[0] * np.cos(9 * np.pi * u), z[1] * u ** 2, z[2] * np.sin(u)],
                     z[3] * np.cos(17 * np.pi * u))


def class_means(Z):
    """c1 = E_{U(0,1/2)} X*, c2 = E_{U(1/2,1)} X* in closed form (Sec. 4, App. B)."""
    s2 = math.sqrt(2) / 2
    c1 = 2 * (Z[:, 0] * s2 / (9 * np.pi) + 7 * Z[:, 1] / 192)
    c2 = 2 * (Z[:, 2] * (math.cos(0.5) - math.cos(0.75)) - Z[:, 3] * s2 / (17 * np.pi))
    return c1, c2


# --------------------------------------------------------------------------- training
def _diverged_if_trained(exc: ValueError, stepped: bool, what: str, epoch: int) -> None:
    """A model that refuses its own forward pass after optimiser steps (the continuous layers check what the
    parameters produce: at --lr 1e10 sigma^2 overflowed and 'sigma2 must be finite and > 0' came back as a
    traceback) has diverged: one line (Diverged, exit 2), the records written before it kept.  Before any step
    the error is the input's or the code's, and goes on as it is."""
    if stepped:
        from attnlab.errors import Diverged

        raise Diverged(f"{what} diverged at epoch {epoch}: its forward pass refused what the trained parameters give "
                       f"({str(exc).splitlines()[0][:120]}; a smaller --lr, as a rule); no record written") from None


def _batches(n, batch_size, gen):
    perm = torch.randperm(n, generator=gen)
    for i in range(0, n, batch_size):
        yield perm[i:i + batch_size]


@torch.no_grad()
def predict(model, xs, batch_size: int = 256) -> np.ndarray:
    model.eval()
    out = []
    n = xs[0].shape[0]
    for i in range(0, n, batch_size):
        out.append(model(*[x[i:i + batch_size] for x in xs]).argmax(-1))
    return torch.cat(out).cpu().numpy()


def scores(y_true, y_pred) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": 100.0 * accuracy_score(y_true, y_pred),
            "f1": 100.0 * f1_score(y_true, y_pred, average="macro")}


VAL_SPLIT_SEED = 20_231   # the validation split is fixed across seeds and models: CIs cover training randomness


def validation_split(y: torch.Tensor, fraction: float, seed: int = VAL_SPLIT_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """Stratified (train, validation) index tensors: round(fraction * count) of every class (at least
    one when the class has two or more members) go to validation, drawn with a fixed generator."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1); got {fraction!r}")
    gen = torch.Generator().manual_seed(seed)
    tr, va = [], []
    yc = y.cpu()
    for c in torch.unique(yc).tolist():
        idx = torch.nonzero(yc == c).flatten()
        idx = idx[torch.randperm(idx.numel(), generator=gen)]
        k = int(round(fraction * idx.numel()))
        k = min(max(k, 1 if idx.numel() >= 2 else 0), idx.numel() - 1)
        va.append(idx[:k])
        tr.append(idx[k:])
    return torch.sort(torch.cat(tr)).values, torch.sort(torch.cat(va)).values


@torch.no_grad()
def _evaluate(model, xs, y, lossf, batch_size: int = 256) -> tuple[float, float]:
    """(mean cross-entropy, accuracy %) on (xs, y) in eval mode."""
    model.eval()
    tot, correct, n = 0.0, 0, y.shape[0]
    for i in range(0, n, batch_size):
        out = model(*[x[i:i + batch_size] for x in xs])
        tot += float(lossf(out, y[i:i + batch_size])) * out.shape[0]
        correct += int((out.argmax(-1) == y[i:i + batch_size]).sum())
    return tot / max(n, 1), 100.0 * correct / max(n, 1)


def fit(ctx: RunContext, model, train: list[torch.Tensor], test: list[torch.Tensor], *, epochs: int,
        batch_size: int, lr: float, weight_decay: float = 0.0, clip: float | None = None,
        name: str = "", val_fraction: float = 0.0, patience: int | None = None) -> dict:
    """Train with Adam + cross-entropy, checkpointing after every epoch (resume with --resume loses at
    most one epoch), then score on `test` (last tensor = labels).

    Without `patience`: the fixed schedule of `epochs` epochs (the paper's protocol).  With
    `patience` and `val_fraction`: a stratified validation split (:func:`validation_split`, fixed
    across seeds) is held out of `train`; after every epoch the validation cross-entropy is measured,
    the weights with the lowest one are kept, and training stops when it has not improved for
    `patience` epochs (early stopping) or after `epochs` (then the run did not converge); the best
    weights are restored before testing.  Returns {'accuracy', 'f1' (macro, %), 'train_loss',
    'epoch_seconds', 'non_finite_batches', 'history', 'training'}."""
    early = patience is not None
    if early and not 0.0 < val_fraction < 1.0:
        raise ValueError("early stopping (patience) needs val_fraction in (0, 1)")
    dev = ctx.device
    model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(10_000 + ctx.seed)
    start, history, skipped = 0, [], 0
    best = {"loss": math.inf, "epoch": 0, "state": None}
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        start, history, skipped = state["epoch"], state["history"], state.get("skipped", 0)
        best = state.get("best", best)
    *xs, y = [t.to(dev) for t in train]
    if early:
        tri, vai = validation_split(y, val_fraction)
        vxs, vy = [x[vai.to(dev)] for x in xs], y[vai.to(dev)]
        xs, y = [x[tri.to(dev)] for x in xs], y[tri.to(dev)]
    n = y.shape[0]
    steps = math.ceil(n / batch_size)
    prog = ctx.progress(epochs * steps, name or f"{ctx.experiment} {ctx.tag} seed {ctx.seed}")
    prog.resume_at(start * steps)
    lossf = torch.nn.CrossEntropyLoss()
    stopped = "fixed-schedule" if not early else "max-epochs"
    if early and start > 0 and start - best["epoch"] >= patience:
        stopped = "early-stop"
    for ep in range(start, epochs):
        if stopped == "early-stop":
            break
        model.train()
        t0, tot, cnt = time.perf_counter(), 0.0, 0
        for k, idx in enumerate(_batches(n, batch_size, gen)):
            try:
                loss = lossf(model(*[x[idx] for x in xs]), y[idx])
            except ValueError as exc:
                _diverged_if_trained(exc, stepped=ep > 0 or k > 0, what=f"{name or ctx.experiment}", epoch=ep + 1)
                raise
            if not torch.isfinite(loss):
                skipped += 1            # counted and reported, never silently averaged in
                continue
            opt.zero_grad()
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            tot += float(loss.detach()) * idx.numel()
            cnt += idx.numel()
            prog.update(ep * steps + k + 1, epoch=ep + 1, loss=tot / max(cnt, 1),
                        **({"best": best["epoch"]} if early else {}))
        if cnt == 0:        # not one finite batch: the weights are no model (at --lr 1e308 the record held NaN densities)
            from attnlab.errors import Diverged

            raise Diverged(f"{name or ctx.experiment} diverged at epoch {ep + 1}: no batch had a finite loss "
                           "(a smaller --lr, as a rule); no record written")
        h = {"epoch": ep + 1, "loss": tot / max(cnt, 1), "seconds": time.perf_counter() - t0}
        if early:
            try:
                h["val_loss"], h["val_accuracy"] = _evaluate(model, vxs, vy, lossf)
            except ValueError as exc:
                _diverged_if_trained(exc, stepped=True, what=f"{name or ctx.experiment}", epoch=ep + 1)
                raise
            if h["val_loss"] < best["loss"]:
                best = {"loss": h["val_loss"], "epoch": ep + 1,
                        "state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}
            if ep + 1 - best["epoch"] >= patience:
                stopped = "early-stop"
        history.append(h)
        ctx.save_checkpoint({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                             "epoch": ep + 1, "history": history, "skipped": skipped, "best": best})
    if early and best["state"] is not None:
        model.load_state_dict(best["state"])
    *txs, ty = [t.to(dev) for t in test]
    res = scores(ty.cpu().numpy(), predict(model, txs))
    sample = attention_sample(model, txs, ty)
    if sample is not None:
        res["attention_sample"] = sample
    res["train_loss"] = history[-1]["loss"] if history else float("nan")
    res["epoch_seconds"] = float(np.mean([h["seconds"] for h in history])) if history else float("nan")
    res["non_finite_batches"] = skipped
    res["history"] = history
    res["trivial"] = trivial_accuracy(y, vy if early else ty)
    res["training"] = {"stopped": stopped, "best_epoch": best["epoch"] if early else len(history),
                       "epochs_run": len(history), "max_epochs": epochs}
    if early:
        res["training"].update(patience=patience, val_fraction=val_fraction, best_val_loss=best["loss"])
    return res


def trivial_accuracy(y_train, y_eval) -> dict:
    """Accuracy (%) on `y_eval` of the trivial predictor, the training labels' majority class: the input of
    attnlab.convergence's test (a) (the validation split where there is one, else the test split)."""
    ytr, yev = np.asarray(torch.as_tensor(y_train).cpu()), np.asarray(torch.as_tensor(y_eval).cpu())
    major = np.bincount(ytr.astype(np.int64)).argmax()
    return {"value": float(100.0 * np.mean(yev == major)), "perfect": 100.0, "n": int(yev.size),
            "what": "accuracy of the training split's majority class"}


SAMPLE_ROWS = 4


@torch.no_grad()
def attention_sample(model, xs, y, rows: int = SAMPLE_ROWS) -> dict | None:
    """The trained model's attention density on its grid for the first `rows` test inputs, with those
    inputs and labels, kept in the record so that `attnlab figures` draws the densities (Figs. 1a, 4, 9;
    the time-warping heads) without training.  None for a model without a continuous density (discrete
    softmax, the baselines) or with more than one input tensor."""
    attn = getattr(model, "attn", None)
    if len(xs) != 1 or attn is None or not hasattr(model, "density") or not hasattr(attn, "grid"):
        return None
    model.eval()
    x = xs[0][:rows]

    def short(t):           # 6 decimals: what a figure needs, a few kB per record
        return np.round(t.detach().double().cpu().numpy(), 6).tolist()

    return {"rows": list(range(x.shape[0])), "input": short(x), "label": y[:rows].cpu().tolist(),
            "grid": short(attn.grid), "density": short(model.density(x))}


def record(ctx: RunContext, setting: str, model_key: str, res: dict, metrics=("accuracy", "f1"),
           extra: dict | None = None):
    rows = [metric_row(setting, DISPLAY[model_key], m, res[m]) for m in metrics]
    rows.append(metric_row(setting, DISPLAY[model_key], "epoch_seconds", res["epoch_seconds"]))
    ex = {"train_loss": res["train_loss"], "non_finite_batches": res["non_finite_batches"],
          "history": res["history"]}
    if "attention_sample" in res:
        ex["attention_sample"] = res["attention_sample"]
    ex.update(extra or {})
    return ctx.write_record(rows, extra=ex, training=res["training"], trivial=res.get("trivial"))


def announce(experiment: str, substitute: str | None, config_name: str, config: dict, seeds) -> None:
    print(f"attnlab run {experiment}: config {config_name}, seeds {list(seeds)}")
    if substitute:
        print(f"  SUBSTITUTE DATA: {substitute}")
    print("  " + ", ".join(f"{k}={v}" for k, v in config.items()))


def summary_lines(experiment: str, config_name: str, args) -> list[str]:
    """Mean ± 95% CI per (setting, model, metric) of the records just written, beside the paper's number."""
    from attnlab.results import summarize

    rows = [r for r in summarize("kernel", results_root(args), config=config_name) if r["experiment"] == experiment
            and r["ours_mean"] is not None and r["metric"] != "epoch_seconds"]
    out = []
    for r in rows:
        ci = "" if r["ours_ci95"] is None else f" ± {r['ours_ci95']:.2f}"
        paper = "" if r["paper"] is None else f"   paper {r['paper']:.2f}"
        sub = "   [substitute data]" if r.get("substitute") else ""
        out.append(f"  {r['setting']:>8} {r['model']:<20} {r['metric']:<9} {r['ours_mean']:6.2f}{ci}"
                   f" (n={r['n_seeds']}){paper}{sub}")
    return out


__all__ = ["DISPLAY", "make_context", "fit", "record", "seeds_of", "time_warping_data", "read_ucr"]
