"""Benchmark: training seconds per epoch of every experiment runner's full config, as it trains.

One row per model, so that the s/epoch (wall-time) tables of docs/*_experiments.md can be
re-measured on an idle machine and the papers' full runs projected from them (the kernel paper's
Tables 1-4 and 9, the bidirectional-attention paper's Tables 1-2 and App. I, the Fenchel-dual
attention paper's Sec 8-9, the EFA paper's Sec 6).

    python benchmarks/epoch_cost.py [--experiments a,b,...] [--steps 10] [--device cpu] [--json -]

For every row the model, the data and the optimiser are built as the runner builds them (its config
dicts, loaders and builders are imported, not copied) and one training step is timed as the runner's
loop takes it: forward, loss, backward, the runner's gradient clipping, the optimiser step and the
scheduler step where it has one.  ms_per_step is the median of --steps timed steps after 2 warm-up
steps, every step on a full batch; s_per_epoch = ms_per_step x steps_per_epoch (training only: the
per-epoch validation of early stopping, checkpoints and the final evaluation are not included);
hours_at_max_epochs = s_per_epoch x max_epochs x trainings_per_run / 3600, an upper bound where the
config stops early (column `stopping`).  One torch thread: what one process of
`attnlab run ... --jobs N` uses.  With `--device cuda` the model, its data and the step run on the GPU
as the runner's `--device cuda` puts them (the data sets on the device once, as the runners' fits do;
the host-side batch index and the runner's per-step loss read-back included), and a step's time is
taken between two `torch.cuda.synchronize()` calls.  The load average (1 min) is read before and after each row: run it on an otherwise
idle machine.

Units that are not a minibatch step: bidir-tabular-sim and bidir-auto-mpg train ATN copies in
lock-step (a step trains all copies at once, as the runners do); bidir-toy-corpus trains with
full-batch L-BFGS, timed by running the runner's own `train` for warm-up + --steps iterations: a step
is one function evaluation (full-batch forward and backward, and the L-BFGS update up to the next
evaluation), an epoch is one step, and max_epochs is the optimiser's cap on evaluations.

A row's timing stops early once its timed steps took --max-seconds (default 20), after at least 3 of
them (timed_steps says how many ran).  Rows whose data set is not found (under $ATTNLAB_DATA or the
offline bundle) are skipped with the reason.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from attnlab.errors import ArgumentParser, UsageError  # noqa: E402
from attnlab.provenance import cpu_model  # noqa: E402

WARMUP = 2
DEVICE = torch.device("cpu")       # --device: where the models, their data and the steps run
MIN_TIMED = 3       # timed steps of a row before --max-seconds may end its timing
# `attnlab run bidir-auto-mpg` trains ATN for all its seeds (default --seeds: 10) x protocols at once
AUTO_MPG_SEEDS = 10


@dataclasses.dataclass
class Case:
    """One row: a model of one config, with its training step (a closure) and epoch size."""
    experiment: str
    model: str
    config: str
    setting: str
    step: Callable[[], None]
    steps_per_epoch: int
    max_epochs: int
    stopping: str
    trainings_per_run: int = 1
    note: str = ""
    substitute: str | None = None
    timer: Callable[[int, int], tuple[list, str]] | None = None   # replaces `step` (L-BFGS)
    also: tuple = ()            # extra rows with the same timing: dicts overriding config and epoch fields


@dataclasses.dataclass
class Skip:
    experiment: str
    config: str
    reason: str


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def early(patience: int, epochs: int) -> str:
    if patience >= epochs:
        return "fixed schedule (best validation weights restored)"
    return f"early stopping, patience {patience}: ends earlier than max_epochs"


# --------------------------------------------------------------------------- kernel paper
def kernel_step(model, train, cfg) -> tuple[Callable[[], None], int]:
    """The step of attnlab.experiments.kernel.common.fit: Adam (the config's lr and weight decay),
    cross entropy, gradient norm clipped at 1 (every kernel runner calls fit with clip=1.0)."""
    *xs, y = [t.to(DEVICE) for t in train]
    model.to(DEVICE)
    n, bs = int(y.shape[0]), cfg["batch"]
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], weight_decay=cfg.get("weight_decay", 0.0))
    gen = torch.Generator().manual_seed(0)
    lossf = torch.nn.CrossEntropyLoss()
    model.train()

    def step():
        idx = torch.randperm(n, generator=gen)[:bs]
        loss = lossf(model(*[x[idx] for x in xs]), y[idx])
        if not torch.isfinite(loss):
            return
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        float(loss.detach())
    return step, math.ceil(n / bs)


def kernel_stopping(cfg) -> str:
    if cfg.get("patience") is None:
        return "fixed schedule"
    return (f"early stopping, patience {cfg['patience']} on a {cfg['val_fraction']:.0%} validation split: "
            "ends earlier than max_epochs")


def kernel_time_warping(n_steps: int) -> Iterator:
    from attnlab.experiments.kernel import common as C
    from attnlab.experiments.kernel import time_warping as tw
    from attnlab.experiments.models.kernel_models import TimeWarpingNet

    cfg = tw.CONFIGS["full"]
    X, y, _, _ = C.time_warping_data(cfg["n"], cfg["length"], cfg["lam_max"], seed=0)
    n_test = int(round(cfg["test_fraction"] * cfg["n"]))
    train = [torch.from_numpy(X)[n_test:], torch.from_numpy(y)[n_test:]]
    for m in tw.MODELS:
        torch.manual_seed(0)
        model = TimeWarpingNet(m, cfg["length"], cfg["n_basis"], cfg["n_inducing"], cfg["grid"], cfg["hidden"])
        step, spe = kernel_step(model, train, cfg)
        yield Case(tw.EXPERIMENT, C.DISPLAY[m], "full", f"N={cfg['n_basis']}", step, spe, cfg["epochs"],
                   kernel_stopping(cfg))


def _series(module, configs: tuple[str, ...]) -> Iterator:
    """FordA and ECG: the conv-LSTM with each attention, LSTM-FCN and the transformer
    (attnlab.experiments.kernel.forda.run_series_experiment)."""
    from attnlab.experiments.kernel import common as C
    from attnlab.experiments.kernel import forda

    cfg = module.CONFIGS["full"]
    train, _, k = module.load(cfg)
    length = train[0].shape[1]
    also = []
    for name in configs[1:]:             # same network and batch: only the epoch size and stopping differ
        c2 = module.CONFIGS[name]
        n = len(C.validation_split(train[-1], c2["val_fraction"])[0]) if c2.get("patience") else len(train[-1])
        also.append({"config": name, "steps_per_epoch": math.ceil(n / c2["batch"]), "max_epochs": c2["epochs"],
                     "stopping": kernel_stopping(c2)})
    for m in module.MODELS:                # ECG has no patched transformer (ecg.MODELS)
        torch.manual_seed(0)
        model = forda.build(m, length, k, cfg)
        step, spe = kernel_step(model, train, cfg)
        yield Case(module.EXPERIMENT, C.DISPLAY[m], "full", "test", step, spe, cfg["epochs"],
                   kernel_stopping(cfg), substitute=getattr(module, "SUBSTITUTE", None), also=tuple(also))


def kernel_forda(n_steps: int) -> Iterator:
    from attnlab.experiments.kernel import forda

    yield from _series(forda, ("full", "full-es"))


def kernel_ecg(n_steps: int) -> Iterator:
    from attnlab.experiments.kernel import ecg

    yield from _series(ecg, ("full",))


def kernel_gestures(n_steps: int) -> Iterator:
    from attnlab.experiments.kernel import common as C
    from attnlab.experiments.kernel import gestures as gs
    from attnlab.experiments.models.kernel_models import GestureNet

    cfg = gs.CONFIGS["full"]
    tr, ytr, _, _, k, substitute = gs.load_series()
    train = [*gs.irregular_sample(tr, cfg["sample_fraction"], 0), torch.as_tensor(ytr)]
    for N in cfg["basis"]:
        for m in gs.MODELS:
            torch.manual_seed(0)
            model = GestureNet(m, k, heads=cfg["heads"], n_basis=N, n_inducing=cfg["n_inducing"],
                               grid_size=cfg["grid"], ref_points=cfg["ref_points"], hidden=cfg["hidden"],
                               mixture_components=cfg["mixture_components"])
            step, spe = kernel_step(model, train, cfg)
            yield Case(gs.EXPERIMENT, C.DISPLAY[m], "full", f"N={N}", step, spe, cfg["epochs"],
                       kernel_stopping(cfg), substitute=substitute)


def kernel_sentiment(n_steps: int) -> Iterator:
    from attnlab.experiments.kernel import common as C
    from attnlab.experiments.kernel import sentiment as st
    from attnlab.experiments.models.kernel_models import SentenceNet

    cfg = st.CONFIGS["full"]
    tr, ytr, _, _, substitute = st.load_texts()
    vocab = st.build_vocab(tr, cfg["min_count"])
    train = [*st.encode(tr, vocab, cfg["max_len"]), torch.as_tensor(ytr)]
    for N in cfg["basis"]:
        for m in st.MODELS:
            torch.manual_seed(0)
            model = SentenceNet(m, len(vocab) + 2, 2, embed=cfg["embed"], hidden=cfg["hidden"], n_basis=N,
                                n_inducing=cfg["n_inducing"], grid_size=cfg["grid"],
                                bandwidth=float(np.sqrt(cfg["kernel_variance"])))
            step, spe = kernel_step(model, train, cfg)
            yield Case(st.EXPERIMENT, C.DISPLAY[m], "full", f"N={N}", step, spe, cfg["epochs"],
                       kernel_stopping(cfg), substitute=substitute)


# --------------------------------------------------------------------------- bidirectional attention paper
def atn_step(rows: list, n_classes: int, acfg) -> tuple[Callable[[], None], int]:
    """The step of attnlab.experiments.models.bidir_tabular.train_atn: len(rows) ATN copies in
    lock-step, MLM over features, the sum of per-copy mean losses, Adam (the copies' initial weights
    and the shuffling seeds, which do not change the cost, are not reproduced)."""
    from torch import nn

    from attnlab.experiments.models.bidir_tabular import TabularATN, masked_copies

    cop = [masked_copies(r, n_classes) for r in rows]
    M = len(rows)
    g = torch.Generator().manual_seed(0)
    model = TabularATN(n_classes, rows[0].shape[1], acfg, generator=g, n_models=M).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=acfg.lr, eps=acfg.adam_eps)
    X, P, T = (torch.as_tensor(np.stack([c[j] for c in cop])).to(DEVICE) for j in range(3))
    n = X.shape[1]
    mi = torch.arange(M, device=DEVICE)[:, None]
    perm = torch.argsort(torch.rand(M, n, generator=g), dim=1).to(DEVICE)
    pos = [0]
    model.train()

    def step():
        if pos[0] + acfg.batch_size > n:
            pos[0] = 0
        idx = perm[:, pos[0]:pos[0] + acfg.batch_size]
        pos[0] += acfg.batch_size
        b = idx.shape[1]
        logits = model(X[mi, idx])
        lg = logits[mi, torch.arange(b, device=DEVICE)[None], P[mi, idx]]
        per = nn.functional.cross_entropy(lg.reshape(M * b, -1), T[mi, idx].reshape(-1), reduction="none").view(M, b)
        loss = per.mean(1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        per.detach().sum(1).cpu()
    return step, math.ceil(n / acfg.batch_size)


def bidir_tabular_sim(n_steps: int) -> Iterator:
    from attnlab.experiments.bidir import tabular_sim as ts
    from attnlab.experiments.models.bidir_tabular import ATNConfig

    cfg = ts.CONFIGS["full"]
    data_seed = ts.authors_seeds(1)[0]
    datasets = ts.make_datasets(data_seed, cfg["n"], ts.SETTINGS)
    group = datasets[:cfg["atn_parallel"]]
    rows = [np.concatenate([d["x_train"], d["y_train"][:, None]], 1) for _, d in group]
    acfg = ATNConfig(epochs=cfg["atn_epochs"], batch_size=cfg["atn_batch"])
    step, spe = atn_step(rows, ts.C, acfg)
    groups = math.ceil(len(datasets) / cfg["atn_parallel"])
    yield Case(ts.EXPERIMENT, f"ATN x{len(group)} lock-step", "full", "one group of data sets", step, spe,
               acfg.epochs, "fixed schedule", trainings_per_run=groups,
               note=f"a seed trains {len(datasets)} data sets in {groups} lock-step groups of "
                    f"{cfg['atn_parallel']}; the LR/RF/GB/MLP grid searches are not included")


def bidir_auto_mpg(n_steps: int) -> Iterator:
    from attnlab.experiments.bidir import auto_mpg as am
    from attnlab.experiments.models.bidir_tabular import ATNConfig

    cfg = am.CONFIGS["full"]
    df = am.load_auto_mpg()
    data = {prot: am.origin_split(df, prot) for prot in am.PROTOCOLS}
    jobs = [(s, prot) for s in range(AUTO_MPG_SEEDS) for prot in am.PROTOCOLS]
    rows = [np.concatenate([data[pr]["x_train"], data[pr]["y_train"][:, None]], 1) for _, pr in jobs]
    acfg = ATNConfig(epochs=cfg["atn_epochs"], batch_size=cfg["atn_batch"])
    step, spe = atn_step(rows, am.C, acfg)
    yield Case(am.EXPERIMENT, f"ATN x{len(jobs)} lock-step", "full",
               f"{AUTO_MPG_SEEDS} seeds x {len(am.PROTOCOLS)} protocols", step, spe, acfg.epochs,
               "fixed schedule", note="the runner's default seeds in one lock-step batch; baselines and the "
                                      "pytorch_tabular models are not included")


def bidir_toy_corpus(n_steps: int) -> Iterator:
    from attnlab.experiments.bidir import toy_corpus as tc
    from attnlab.experiments.models.bidir import CBOW, AttentionCBOW

    cfg = tc.CONFIG
    corpus = tc.sample_corpus(cfg["n_sentences"], np.random.default_rng(0))
    tdata, _ = tc._torch_instances(corpus)
    tdata = tuple(t.to(DEVICE) for t in tdata)                  # as the runner's fit puts them
    for p in cfg["dims"]:
        for name, cls in (("CBOW", CBOW), ("attention", AttentionCBOW)):
            g = torch.Generator().manual_seed(p)
            model = (cls(tc.V, p, window=None, init_std=cfg["init_std"], generator=g) if cls is CBOW
                     else cls(tc.V, p, init_std=cfg["init_std"], generator=g)).to(DEVICE)
            caps = lbfgs_caps(tc.train, model, tdata, cfg["steps"])
            yield Case("bidir-toy-corpus", name, "full", f"p={p}", None, 1, caps["max_eval"],
                       f"L-BFGS: at most {caps['max_iter']} iterations or {caps['max_eval']} function evaluations "
                       "(max_epochs), whichever comes first; its tolerances may end it earlier",
                       timer=lbfgs_timer(tc.train, model, tdata),
                       note="full-batch L-BFGS: a step is one function evaluation (forward, backward, the "
                            "L-BFGS update) and an epoch one step; a run trains CBOW and attention at every p")


class _Probed(Exception):
    pass


def lbfgs_caps(train, model, data, iterations: int) -> dict:
    """The settings (max_iter, max_eval, ...) of the torch.optim.LBFGS that the runner's `train` builds
    for `iterations`: read in its constructor, the call then stopped before the first evaluation."""
    seen, orig = {}, torch.optim.LBFGS

    class Probe(orig):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen.update(self.param_groups[0])
            raise _Probed
    torch.optim.LBFGS = Probe
    try:
        train(model, data, iterations)
    except _Probed:
        pass
    finally:
        torch.optim.LBFGS = orig
    return seen


def lbfgs_timer(train, model, data) -> Callable[[int, int], tuple[list, str]]:
    """Times the runner's own full-batch L-BFGS `train` over warm-up + timed iterations.  The start of
    every function evaluation is read from the model's loss calls (the last one is train()'s final
    loss without gradient), the iteration and evaluation counts from the optimiser's state
    (torch.optim.LBFGS is observed, not replaced).  Samples: ms from one evaluation's start to the
    next (full-batch forward, backward and the L-BFGS update), the first `warmup` left out."""
    def timer(warmup: int, steps: int):
        starts, made = [], []
        orig_loss, orig_cls = model.loss, torch.optim.LBFGS

        class Observed(orig_cls):
            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                made.append(self)

        def loss(*a, **k):
            synchronize()
            starts.append(time.perf_counter())
            return orig_loss(*a, **k)
        model.loss, torch.optim.LBFGS = loss, Observed
        try:
            train(model, data, warmup + steps)
        finally:
            torch.optim.LBFGS = orig_cls
            del model.loss
        st = made[-1].state[made[-1]._params[0]]
        note = f"{st['func_evals']} evaluations in {st['n_iter']} timed-run iterations"
        return [1e3 * float(g) for g in np.diff(starts)[warmup:]], note
    return timer


# --------------------------------------------------------------------------- Fenchel-dual attention paper
def fenchel_ot_vit(n_steps: int) -> Iterator:
    from attnlab.experiments.fenchel import ot_vit as ov
    from attnlab.experiments.models.fenchel_vit import same_class_partners

    runs = [("full", ov.CONFIG_DIGITS, ov.load_digits_split, ov.SUBSTITUTE_DIGITS)]
    runs += [(f"paper ({ds})", dict(ov.CONFIG_PAPER, dataset=ds), ds, None) for ds in ov.DATASETS[1:]]
    for config, cfg, loader, substitute in runs:
        if isinstance(loader, str):                  # the paper's data sets: only from a local copy
            folder = _paper_data_folder(loader)
            if folder is None:
                yield Skip(ov.EXPERIMENT, config, f"no {' or '.join(PAPER_IMAGE_FOLDERS[loader])} folder under "
                           "$ATTNLAB_DATA or the offline bundle (format: attnlab run fenchel-ot-vit --help)")
                continue
            loader = (lambda ds=loader, folder=folder: ov.load_local(ds, str(folder)))
        try:
            Xtr, ytr, _, _, n_cls = loader()
        except FileNotFoundError as exc:
            yield Skip(ov.EXPERIMENT, config, one_line(exc))
            continue
        C, S = Xtr.shape[1], Xtr.shape[2]
        spe = math.ceil(len(Xtr) / cfg["batch_size"])
        lr = cfg["lrs"][0]
        for name in ("vit", "ot-vit"):
            torch.manual_seed(0)
            model = ov.build(cfg, n_cls, name == "ot-vit", S, C).to(DEVICE)
            opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=cfg["weight_decay"])
            sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=spe * cfg["epochs"], pct_start=0.1)
            g = torch.Generator().manual_seed(0)
            model.train()

            def step(model=model, opt=opt, sch=sch, g=g, name=name, cfg=cfg, Xtr=Xtr, ytr=ytr):
                idx = torch.randperm(len(Xtr), generator=g)[:cfg["batch_size"]].numpy()
                xb, yb = torch.from_numpy(Xtr[idx]), torch.from_numpy(ytr[idx]).long()
                partner = same_class_partners(yb, cfg["partner_prob"], g) if name == "ot-vit" else None
                xb, yb = xb.to(DEVICE), yb.to(DEVICE)
                partner = None if partner is None else partner.to(DEVICE)
                loss = torch.nn.functional.cross_entropy(model(xb, partner=partner), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if sch.last_epoch + 1 < sch.total_steps:
                    sch.step()
                loss.item()
            yield Case(ov.EXPERIMENT, "ViT" if name == "vit" else "OT-ViT", config, cfg["dataset"], step, spe,
                       cfg["epochs"], "fixed schedule", trainings_per_run=len(cfg["lrs"]), substitute=substitute,
                       note="a seed trains ViT and OT-ViT at every learning rate of --lrs")


PAPER_IMAGE_FOLDERS = {"fashion-mnist": ("fashion-mnist",), "cifar10": ("cifar-10-batches-py", "cifar10"),
                       "cifar100": ("cifar-100-python", "cifar100")}


def _paper_data_folder(dataset: str) -> Path | None:
    """The folder of an image data set of the OT-ViT runner under $ATTNLAB_DATA, else in the offline
    bundle (../shared/data seen from the project root or the current directory), as the data layer
    looks for its data sets; None when absent."""
    from attnlab.experiments.data import ENV_VAR

    names = PAPER_IMAGE_FOLDERS[dataset]
    env = os.environ.get(ENV_VAR)
    roots = ([Path(env).expanduser()] if env else
             [base.parent / "shared" / "data" for base in dict.fromkeys((ROOT, Path.cwd()))])
    for root in roots:
        for name in names:
            if (root / name).is_dir():
                return root / name
    return None


def fenchel_deviation(n_steps: int) -> Iterator:
    from attnlab.experiments.fenchel import deviation as dv
    from attnlab.experiments.fenchel import text as tx

    cfg = dv.CONFIG
    sentences = tx.load_sentences()
    train, _ = tx.split_corpus(sentences, cfg["n_eval"], cfg["max_words"])
    if cfg["train_sentences"]:
        train = train[:cfg["train_sentences"]]
    vocab = tx.Vocab(train, cfg["vocab_size"])
    tr_ids = [vocab.encode(s) for s in train]
    spe = math.ceil(len(tr_ids) / cfg["batch_size"])
    torch.manual_seed(0)
    models = dv.build_models(cfg, len(vocab))
    for kind, model in models.items():
        model.to(DEVICE)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
        sch = torch.optim.lr_scheduler.LambdaLR(opt, dv._lr_lambda(cfg["warmup"], spe * cfg["epochs"]))
        make = dv._bert_batch if kind == "bert" else dv._t5_batch
        g = torch.Generator().manual_seed(0)
        rng = np.random.default_rng(0)
        model.train()

        def step(model=model, opt=opt, sch=sch, make=make, g=g, rng=rng, kind=kind):
            order = torch.randperm(len(tr_ids), generator=g)[:cfg["batch_size"]].tolist()
            batch = make([tr_ids[i] for i in order], vocab, rng)
            loss = dv._loss(kind, model, batch, DEVICE)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sch.step()
            loss.item()
        yield Case(dv.EXPERIMENT, {"bert": "BERT-like", "t5": "T5-like"}[kind], "full", "training", step, spe,
                   cfg["epochs"], "fixed schedule", substitute=dv.SUBSTITUTE,
                   note="a seed trains both models, then solves lambda* for every head (not included)")


# --------------------------------------------------------------------------- EFA paper
def efa_step(net, loss_fn, train: dict, cfg: dict, n_steps: int) -> tuple[Callable[[], None], int]:
    """One step of attnlab.experiments.efa.common.train_epoch (length groups, the fused Adam of
    common.fit), run by train_epoch itself on the step's examples; the examples of the n_steps
    calls are drawn beforehand."""
    from attnlab.experiments.efa import common as C

    net.to(DEVICE)
    opt = C.adam(net, cfg["lr"])
    step_n = C.step_sizes(train, cfg["batch_size"])
    n = C.n_examples(train)
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(n_steps):
        idx = torch.as_tensor(np.sort(rng.permutation(n)[:step_n]))
        parts.append(C.take(train, idx))
    causal = bool(getattr(net, "causal", False))
    it = iter(parts)
    net.train()

    def step():
        from attnlab.experiments.models import efa as M

        sub = next(it)
        k = C.n_examples(sub)
        with M.input_checks(False):                      # as every epoch after the first
            C.train_epoch(net, loss_fn, opt, sub, torch.arange(k), k, causal, str(DEVICE))
    return step, math.ceil(n / step_n)


def _efa_cases(experiment, label, setting, net, loss_fn, train, cfg, n_steps):
    step, spe = efa_step(net, loss_fn, train, cfg, n_steps)
    return Case(experiment, label, "full", setting, step, spe, cfg["epochs"], early(cfg["patience"], cfg["epochs"]),
                note=f"sampling {cfg['sampling']}" if "sampling" in cfg else "")


def efa_synthetic(n_steps: int) -> Iterator:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import synthetic as sy

    cfg = dict(sy.FULL, sampling="sequences")
    train, _, _, _ = sy.make_data(cfg, 0, "sequences")
    for setting in sy.SETTINGS:
        for model in sy.MODELS:
            net = C.init_model(lambda: sy.build(model, setting, cfg), 0)
            yield _efa_cases(sy.EXPERIMENT, model, setting, net, sy.mse_loss, train, cfg, n_steps)


def _categorical(experiment, train, n_items, max_len, cfg, n_steps) -> Iterator:
    from attnlab.experiments.efa import categorical as T
    from attnlab.experiments.efa import common as C

    for setting in T.SETTINGS:
        for model in T.MODELS:
            net = C.init_model(lambda: T.build(model, setting, n_items, max_len, cfg), 0)
            yield _efa_cases(experiment, model, setting, net, T.ce_loss, train, cfg, n_steps)


def efa_movielens_sequences(n_steps: int) -> Iterator:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import data as D
    from attnlab.experiments.efa import movielens_sequences as ms

    cfg = dict(ms.FULL, sampling="sequences")
    seqs, info = D.movielens_preprocess(D.movielens_frame(None), "sequences", seed=cfg["dedup_seed"])
    tr, _, _ = D.split_three(len(seqs), tuple(cfg["split"]), seed=cfg["split_seed"])
    yield from _categorical(ms.EXPERIMENT, C.examples(seqs.subset(tr), "sequences"), info["movies"],
                            seqs.items.shape[1], cfg, n_steps)


def efa_instacart(n_steps: int) -> Iterator:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import data as D
    from attnlab.experiments.efa import instacart as ic

    cfg = dict(ic.FULL, sampling="sequences")
    train_b, test_b = D.instacart_load(None)
    tr, _ = D.split_two(len(train_b), cfg["val_fraction"], seed=cfg["split_seed"])
    max_len = max(train_b.items.shape[1], test_b.items.shape[1])
    yield from _categorical(ic.EXPERIMENT, C.examples(train_b.subset(tr), "sequences"), len(D.INSTACART_ITEMS),
                            max_len, cfg, n_steps)


def efa_movielens_ratings(n_steps: int) -> Iterator:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import data as D
    from attnlab.experiments.efa import movielens_ratings as mr

    cfg = dict(mr.FULL, sampling="sequences")
    seqs, _ = D.movielens_preprocess(D.movielens_frame(None), "ratings", seed=cfg["dedup_seed"])
    tr, _, _ = D.split_three(len(seqs), tuple(cfg["split"]), seed=cfg["split_seed"])
    train = C.examples(seqs.subset(tr), "sequences")
    L = seqs.items.shape[1]
    for version in mr.VERSIONS:
        for setting in mr.SETTINGS:
            for model in mr.MODELS:
                net = C.init_model(lambda: mr.build(version, model, setting, L, cfg), 0)
                yield _efa_cases(mr.EXPERIMENT, model, f"{version} {setting}", net, mr.loss_fn(version), train,
                                 cfg, n_steps)


def efa_temperature(n_steps: int) -> Iterator:
    from attnlab.experiments.efa import common as C
    from attnlab.experiments.efa import data as D
    from attnlab.experiments.efa import nets
    from attnlab.experiments.efa import temperature as tp

    cfg = tp.FULL
    grid = tp.load_grid(None)
    tr = grid.split == "train"                       # scaling as tp.main does it
    mu, s = float(grid.temps[tr].mean()), float(grid.temps[tr].std())
    coords_std = (grid.coords - grid.coords.mean(0)) / grid.coords.std(0)
    data = {kind: tp.examples(grid, "train", sc) for kind, sc in (("EFA", (mu, s)), ("FM", (0.0, s)))}
    setting = tp.SETTING_SUBSTITUTE if grid.substitute else tp.SETTING_PAPER
    for v in cfg["efa"]:
        label, layers, lags = tp.EFA_VARIANTS[v]
        c = dict(lr=cfg["lr"], epochs=cfg["lag_epochs"] if lags else cfg["epochs"],
                 patience=cfg["lag_patience"] if lags else cfg["patience"],
                 batch_size=cfg["lag_batch_size"] if lags else cfg["batch_size"])
        net = C.init_model(lambda: nets.Spatial("EFA", coords_std, layers=layers, n_lags=lags), 0)
        case = _efa_cases(tp.EXPERIMENT, label, setting, net, tp.mse_loss, data["EFA"], c, n_steps)
        yield dataclasses.replace(case, substitute=grid.substitute)
    c = dict(lr=cfg["lr"], epochs=cfg["epochs"], patience=cfg["patience"], batch_size=cfg["batch_size"])
    for k in cfg["ks"]:
        nbr = D.nearest_neighbours(grid.coords, k)
        net = C.init_model(lambda: nets.Spatial("FM", coords_std, neighbours=nbr), 0)
        case = _efa_cases(tp.EXPERIMENT, f"FM(k={k})", setting, net, tp.mse_loss, data["FM"], c, n_steps)
        yield dataclasses.replace(case, substitute=grid.substitute)


EXPERIMENTS: dict[str, Callable] = {
    "kernel-time-warping": kernel_time_warping, "kernel-forda": kernel_forda, "kernel-gestures": kernel_gestures,
    "kernel-sentiment": kernel_sentiment, "kernel-ecg": kernel_ecg,
    "bidir-tabular-sim": bidir_tabular_sim, "bidir-auto-mpg": bidir_auto_mpg, "bidir-toy-corpus": bidir_toy_corpus,
    "fenchel-ot-vit": fenchel_ot_vit, "fenchel-deviation": fenchel_deviation,
    "efa-synthetic": efa_synthetic, "efa-movielens-sequences": efa_movielens_sequences,
    "efa-movielens-ratings": efa_movielens_ratings, "efa-instacart": efa_instacart,
    "efa-temperature": efa_temperature,
}
PAPERS = ("kernel", "bidir", "fenchel", "efa")


def cases(name: str, n_steps: int) -> Iterator:
    """The rows of one experiment; a data set that is not found ends it with one Skip."""
    from attnlab.experiments.data import DataError

    gen = EXPERIMENTS[name](n_steps)
    while True:
        try:
            case = next(gen)
        except StopIteration:
            return
        except (DataError, FileNotFoundError) as exc:
            yield Skip(name, "full", f"data not found: {one_line(exc)}")
            return
        yield case


def measure(case: Case, steps: int, max_seconds: float) -> list[dict]:
    """The row(s) of one case: the median of `steps` timed steps after WARMUP warm-up steps; the timed
    steps stop early once they have taken `max_seconds`, after at least MIN_TIMED of them."""
    load0 = os.getloadavg()[0]
    if case.timer is not None:
        samples, counts = case.timer(WARMUP, steps)
        note = "; ".join(filter(None, [case.note, counts]))
    else:
        for _ in range(WARMUP):
            case.step()
        samples = []
        for _ in range(steps):
            synchronize()
            t0 = time.perf_counter()
            case.step()
            synchronize()
            samples.append(1e3 * (time.perf_counter() - t0))
            if len(samples) >= MIN_TIMED and sum(samples) > 1e3 * max_seconds:
                break
        note = case.note
    load1 = os.getloadavg()[0]
    ms = statistics.median(samples)
    base = {"experiment": case.experiment, "model": case.model, "setting": case.setting, "ms_per_step": sig(ms),
            "timed_steps": len(samples), "device": device_name(), "threads": torch.get_num_threads(),
            "load_start": round(load0, 2), "load_end": round(load1, 2), "trainings_per_run": case.trainings_per_run,
            "note": note, "substitute": case.substitute}
    rows = []
    for over in ({"config": case.config, "steps_per_epoch": case.steps_per_epoch, "max_epochs": case.max_epochs,
                  "stopping": case.stopping}, *case.also):
        spe = ms * over["steps_per_epoch"] / 1e3
        hours = spe * over["max_epochs"] * case.trainings_per_run / 3600
        rows.append({**base, **over, "s_per_epoch": sig(spe), "hours_at_max_epochs": sig(hours)})
    return rows


def set_device(text: str) -> None:
    """--device: where the rows' models, data and steps go (DEVICE); one line and exit 2 otherwise."""
    global DEVICE
    try:
        dev = torch.device(text)
    except RuntimeError:
        raise UsageError(f"--device must be cpu or cuda[:N]; got {text!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise UsageError(f"--device must be cpu or cuda[:N]; got {text!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available to this torch")
    DEVICE = dev


def synchronize() -> None:
    """Wait for the GPU's queued work (a step's time is taken between two of these); nothing on a CPU."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


def device_name() -> str:
    if DEVICE.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(DEVICE)})"
    return f"cpu ({cpu_model()})"


def sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def parse_experiments(text: str) -> list[str] | None:
    """Experiment ids and paper names (every experiment of that paper), in the table's order."""
    want = [s.strip() for s in text.split(",") if s.strip()]
    if not want or any(w not in EXPERIMENTS and w not in PAPERS for w in want):
        return None
    return [n for n in EXPERIMENTS if n in want or n.split("-")[0] in want]


def print_row(row: dict) -> None:
    if "skipped" in row:
        print(f"{row['experiment']:24s} {row['config']:18s} skipped: {row['skipped']}", flush=True)
        return
    print(f"{row['experiment']:24s} {row['config']:8s} {row['setting'][:24]:24s} {row['model'][:20]:20s} "
          f"{row['ms_per_step']:9.4g} ms/step x {row['steps_per_epoch']:4d} = {row['s_per_epoch']:8.4g} s/epoch "
          f"x {row['max_epochs']:4d} ep x {row['trainings_per_run']} = {row['hours_at_max_epochs']:7.3g} h  "
          f"(load {row['load_start']:.2f} -> {row['load_end']:.2f})", flush=True)


MD_COLUMNS = ("experiment", "model", "setting", "config", "ms/step", "steps/epoch", "s/epoch", "max epochs", "stopping",
              "h at max epochs", "load before/after")


def markdown(summary: dict) -> str:
    """The rows as a Markdown table (attnlab.tables), with the machine and the load on a line above it."""
    from attnlab.tables import frame
    from attnlab.tables import markdown as md

    out = []
    for r in summary["rows"]:
        if "skipped" in r:
            out.append({"experiment": r["experiment"], "config": r["config"], "stopping": f"skipped: {r['skipped']}"})
            continue
        lb, la = r.get("load_start"), r.get("load_end")
        out.append({"experiment": r["experiment"], "model": r.get("model"), "setting": r.get("setting"),
                    "config": r.get("config"),
                    "ms/step": f"{r['ms_per_step']:.1f}", "steps/epoch": r.get("steps_per_epoch"),
                    "s/epoch": f"{r['s_per_epoch']:.2f}", "max epochs": r.get("max_epochs"),
                    "stopping": r.get("stopping"), "h at max epochs": f"{r['hours_at_max_epochs']:.2f}",
                    "load before/after": "" if lb is None else f"{lb:.2f} / {la:.2f}"})
    gpu = summary.get("device", "cpu").startswith("cuda")
    head = (f"{summary['device'] + ', ' if gpu else ''}{summary['cpu']}, {summary['cores']} cores, torch {summary['torch']}, {summary['threads']} thread; "
            f"median of {summary['steps']} steps after {summary['warmup']} warm-up (at most "
            f"{summary['max_seconds']:g} s a row); load average {summary['load_start'][0]:.2f} at the start, "
            f"{summary['load_end'][0]:.2f} at the end; {summary['seconds']:.0f} s in all.")
    return head + "\n\n" + md(frame(out, MD_COLUMNS))


def main(argv=None) -> int:
    ap = ArgumentParser(prog="benchmarks/epoch_cost.py", description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", default="all",
                    help="comma list of experiment ids (" + ", ".join(EXPERIMENTS) + ") or papers ("
                         + ", ".join(PAPERS) + "); default all")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per row, after 2 warm-up steps (default 10)")
    ap.add_argument("--max-seconds", type=float, default=20.0,
                    help="stop timing a row once its timed steps took this long, after at least "
                         f"{MIN_TIMED} of them (default 20)")
    ap.add_argument("--device", default="cpu",
                    help="cpu (default) or cuda[:N]: where the models, their data and the steps run")
    ap.add_argument("--json", default=None, metavar="PATH", help="write the rows as JSON ('-' = stdout)")
    ap.add_argument("--markdown", default=None, metavar="PATH",
                    help="also write the rows as a Markdown table (the one docs/costs.md shows)")
    args = ap.parse_args(argv)
    names = list(EXPERIMENTS) if args.experiments == "all" else parse_experiments(args.experiments)
    if names is None:
        raise UsageError(f"--experiments must be a comma list of {', '.join(EXPERIMENTS)} or {', '.join(PAPERS)}; "
                     f"got {args.experiments!r}")
    if args.steps < 1:
        raise UsageError(f"--steps must be an integer >= 1; got {args.steps}")
    if not args.max_seconds > 0:
        raise UsageError(f"--max-seconds must be a number > 0; got {args.max_seconds}")
    from attnlab.atomic_io import check_json_dest, check_writable

    check_json_dest(args.json)                  # before the first row is timed, not after it
    if args.markdown is not None:
        check_writable(args.markdown, "--markdown")
    set_device(args.device)
    from attnlab.parallel import keep_freed_memory, malloc_mode

    keep_freed_memory()                         # as `attnlab run` does (ATTNLAB_MALLOC=default: glibc's own)
    torch.set_num_threads(1)
    quiet = args.json == "-"
    t_start, load_start = time.perf_counter(), os.getloadavg()
    if not quiet:
        print(f"torch {torch.__version__}, {device_name()}, {cpu_model()}, {os.cpu_count()} cores, "
              f"1 torch thread; load average {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}; "
              f"median of {args.steps} steps after {WARMUP} warm-up", flush=True)
    from attnlab.atomic_io import atomic_write_text

    def summary(rows: list, done: bool) -> dict:
        load_end = os.getloadavg()
        return {"rows": rows, "torch": torch.__version__, "python": platform.python_version(),
                "cpu": cpu_model(), "device": device_name(), "cores": os.cpu_count(), "threads": 1,
                "malloc": malloc_mode(), "steps": args.steps, "warmup": WARMUP, "max_seconds": args.max_seconds,
                "load_start": list(load_start), "load_end": list(load_end), "complete": done,
                "seconds": round(time.perf_counter() - t_start, 1)}

    def write(summ: dict) -> None:
        if args.markdown:
            atomic_write_text(args.markdown, markdown(summ) + "\n")
        if args.json and args.json != "-":
            atomic_write_text(args.json, json.dumps(summ, indent=1) + "\n")

    rows = []
    for name in names:
        for case in cases(name, WARMUP + args.steps):
            out = ([{"experiment": case.experiment, "config": case.config, "skipped": case.reason}]
                   if isinstance(case, Skip) else measure(case, args.steps, args.max_seconds))
            rows += out
            if not quiet:
                for r in out:
                    print_row(r)
        write(summary(rows, False))          # the rows so far (complete: false), should a later row be cut off
    summ = summary(rows, True)
    if not quiet:
        print(f"done in {summ['seconds']:.0f} s; load average {summ['load_end'][0]:.2f} {summ['load_end'][1]:.2f} "
              f"{summ['load_end'][2]:.2f}", flush=True)
    write(summ)
    if args.json == "-":
        print(json.dumps(summ, indent=1))
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
