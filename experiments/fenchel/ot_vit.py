"""`attnlab run fenchel-ot-vit`: ViT against OT-ViT (Fenchel-dual attention paper, Sec 9, Tables 1-2).

OT-ViT = the ViT with the final layer's attention replaced by the OT-based attention (22), cost
M(a, b) = -a^T b + C, alpha = 1, gamma = sqrt(hidden dim); in training, with probability 1/2 the
template set also holds the patch templates of another image of the same class (see
:mod:`attnlab.experiments.models.fenchel_vit`).

Data.  ``--dataset digits`` (default) is scikit-learn's 8x8 digits (1,797 images, ships with
scikit-learn; a fixed stratified 80/20 split) -- a SUBSTITUTE for the paper's data, with a small
model (2x2 patches).  ``--dataset fashion-mnist|cifar10|cifar100 --data PATH`` runs the paper's
setup (4x4 patches, dropout 0.2, 6 layers, about 3.2M parameters) on a local copy in the official
distribution format (see ``--help`` of ``--data``); these need a GPU to finish in reasonable time.
Each seed trains both models at every learning rate of ``--lrs`` (``3e-3,3e-4,3e-5`` = Table 1) and
records the test accuracy (one record per seed; ``--jobs N`` trains N seeds at once, with the records of
``--jobs 1``); ``attnlab results fenchel`` gives the mean and 95% t-interval over seeds.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import gzip
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import torch

from attnlab.devices import resolve_device
from attnlab.experiment import context, metric_row
from attnlab.parallel import run_tasks
from attnlab.run_args import experiment_parser, overridden_folder, seeds_of
from attnlab.experiments.bidir.baselines import majority_class_accuracy

EXPERIMENT = "fenchel-ot-vit"
DATASETS = ("digits", "fashion-mnist", "cifar10", "cifar100")
SUBSTITUTE_DIGITS = ("scikit-learn 8x8 digits with a small ViT (2x2 patches), standing in for "
                     "Fashion-MNIST / CIFAR-10 / CIFAR-100 with the paper's 3.2M-parameter ViT")
FORMATS = {
    "fashion-mnist": "a folder with the original IDX files train-images-idx3-ubyte.gz, "
                     "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz "
                     "(https://github.com/zalandoresearch/fashion-mnist)",
    "cifar10": "the folder cifar-10-batches-py of the CIFAR-10 python version (data_batch_1..5, test_batch; "
               "https://www.cs.toronto.edu/~kriz/cifar.html)",
    "cifar100": "the folder cifar-100-python of the CIFAR-100 python version (train, test; "
                "https://www.cs.toronto.edu/~kriz/cifar.html)",
}

# digits: a small ViT that trains on a 2-core CPU (substitute)
# (sized for a 2-core CPU: 5 seeds x 2 models = 3,600 steps, ~5 min of CPU, ~30 min wall on a loaded
# machine; --lrs 3e-3,3e-4,3e-5 gives the Table 1 grid at three times the cost)
CONFIG_DIGITS = dict(dataset="digits", image_size=8, patch=2, channels=1, dim=32, depth=3, heads=4,
                     mlp_dim=64, dropout=0.2, epochs=30, batch_size=128, lrs=[3e-3],
                     weight_decay=0.05, partner_prob=0.5)
CONFIG_DIGITS_QUICK = dict(CONFIG_DIGITS, dim=16, depth=2, heads=2, mlp_dim=32, epochs=2, lrs=[3e-3],
                           batch_size=64, train_limit=256)
# the paper's setup (Sec 9): patch 4x4, dropout 0.2, 6 layers, ~3.2M parameters (embedding 256, MLP 512:
# our reading of "hidden dimension 512" under the 3.2M budget), LR 3e-4; optimizer, epochs and
# batch size are not stated -- AdamW, 100 epochs, batch 128 are ours.
CONFIG_PAPER = dict(patch=4, dim=256, depth=6, heads=8, mlp_dim=512, dropout=0.2, epochs=100,
                    batch_size=128, lrs=[3e-4], weight_decay=0.05, partner_prob=0.5)


def lr_tag(lr: float) -> str:
    return f"{lr:.0e}"          # 3e-04


def setting_of(dataset: str, lr: float) -> str:
    return f"{dataset}/lr={lr_tag(lr)}"


# --------------------------------------------------------------------------- data
def load_digits_split():
    """scikit-learn digits, scaled to [0, 1], fixed stratified 80/20 split (random_state 0)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    X = (d.images / 16.0).astype(np.float32)[:, None]
    Xtr, Xte, ytr, yte = train_test_split(X, d.target, test_size=0.2, stratify=d.target, random_state=0)
    return Xtr, ytr, Xte, yte, 10


def _idx(path: Path):
    """An IDX file (gzip) of unsigned bytes; a truncated or foreign file is a ValueError naming it."""
    import zlib

    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{path} is corrupt: cannot decompress it ({type(exc).__name__}: {exc})") from None
    magic = int.from_bytes(data[:4], "big")
    ndim = magic & 0xFF
    if len(data) < 4 + 4 * ndim or magic >> 8 != 0x08 or not 1 <= ndim <= 3:
        raise ValueError(f"{path} is not an IDX file of unsigned bytes (magic {magic:#x})")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    if len(data) != 4 + 4 * ndim + int(np.prod(dims)):
        raise ValueError(f"{path} holds {len(data) - 4 - 4 * ndim} bytes of data where its header says "
                         f"{' x '.join(map(str, dims))}")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class _ArraysOnly(pickle.Unpickler):
    """Unpickles CIFAR's python batches (dicts, lists, bytes, numpy arrays) and nothing else: pickle can
    call any function a crafted file names, so a --data file could run code; every other global is refused."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar"), ("builtins", "bytes"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a CIFAR batch does not (refused unread: "
                                         "a crafted file could run code)")
        return super().find_class(module, name)


def _check_split(Xtr, ytr, Xte, yte, n_classes: int, path):
    """Images and labels of each split agree in number and the labels lie in 0..n_classes-1 (a file of 60
    labels for 100 images, or labels up to 249, trained until an IndexError mid-run)."""
    for name, X, y in (("training", Xtr, ytr), ("test", Xte, yte)):
        y = np.asarray(y)
        if len(X) != len(y) or len(y) == 0:
            raise ValueError(f"the {name} split has {len(X)} images and {len(y)} labels")
        # whole numbers only (0.5 ... 9.5 passed the range test and were truncated into other classes; a NaN
        # passed it too and failed at the conversion to int)
        if y.dtype.kind not in "iub" and not (y.dtype.kind == "f" and np.isfinite(y).all() and (y == np.round(y)).all()):
            raise ValueError(f"the {name} labels are not all whole numbers; they must be integers in [0, {n_classes - 1}]")
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(f"the {name} labels lie in [{y.min()}, {y.max()}], not in [0, {n_classes - 1}]")


def load_local(dataset: str, path: str | None):
    """(Xtr, ytr, Xte, yte, n_classes), images float32 (N, C, H, W) in [0, 1]."""
    if path is None:
        raise FileNotFoundError(f"--dataset {dataset} needs --data PATH: {FORMATS[dataset]}")
    p = Path(path).expanduser()
    try:
        if dataset == "fashion-mnist":
            f = lambda n: _idx(p / n)
            Xtr, ytr = f("train-images-idx3-ubyte.gz"), f("train-labels-idx1-ubyte.gz")
            Xte, yte = f("t10k-images-idx3-ubyte.gz"), f("t10k-labels-idx1-ubyte.gz")
            _check_split(Xtr, ytr, Xte, yte, 10, p)
            return (Xtr[:, None] / 255.0).astype(np.float32), ytr.astype(int), \
                   (Xte[:, None] / 255.0).astype(np.float32), yte.astype(int), 10
        if dataset == "cifar10":
            def rd(n):
                with open(p / n, "rb") as fh:
                    d = _ArraysOnly(fh, encoding="latin1").load()
                return d["data"], d["labels"]
            parts = [rd(f"data_batch_{i}") for i in range(1, 6)]
            Xtr = np.concatenate([a for a, _ in parts])
            ytr = np.concatenate([b for _, b in parts])
            Xte, yte = rd("test_batch")
            n_cls = 10
        else:
            def rd(n):
                with open(p / n, "rb") as fh:
                    d = _ArraysOnly(fh, encoding="latin1").load()
                return d["data"], d["fine_labels"]
            (Xtr, ytr), (Xte, yte) = rd("train"), rd("test")
            n_cls = 100
        Xtr, Xte = (np.asarray(X) for X in (Xtr, Xte))
        if Xtr.ndim != 2 or Xtr.shape[1:] != (3072,) or Xte.shape[1:] != (3072,):
            raise ValueError(f"images of shape {Xtr.shape[1:]} and {Xte.shape[1:]}, not 3072 bytes (3 x 32 x 32)")
        _check_split(Xtr, ytr, Xte, yte, n_cls, p)
    except (OSError, KeyError, ValueError, TypeError, EOFError, pickle.UnpicklingError) as exc:
        raise FileNotFoundError(f"--data {path}: could not read {dataset} ({exc}); expected {FORMATS[dataset]}") from None
    sh = lambda X: (np.asarray(X).reshape(-1, 3, 32, 32) / 255.0).astype(np.float32)
    return sh(Xtr), np.asarray(ytr, dtype=int), sh(Xte), np.asarray(yte, dtype=int), n_cls


# --------------------------------------------------------------------------- training
def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def build(cfg, n_classes, ot: bool, image_size: int, channels: int):
    from attnlab.experiments.models.fenchel_vit import ViT

    return ViT(image_size, cfg["patch"], channels, n_classes, cfg["dim"], cfg["depth"], cfg["heads"],
               cfg["mlp_dim"], cfg["dropout"], ot=ot, gamma=math.sqrt(cfg["mlp_dim"]))


def evaluate(model, X, y, device, batch=512) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for s in range(0, len(X), batch):
            xb = torch.from_numpy(X[s:s + batch]).to(device)
            correct += int((model(xb).argmax(-1).cpu() == torch.from_numpy(y[s:s + batch])).sum())
    return correct / len(X)


def run_seed(ctx, cfg, data, device):
    """Train ViT and OT-ViT at every LR, one checkpoint per epoch; returns metric rows and extra."""
    from attnlab.experiments.models.fenchel_vit import same_class_partners

    Xtr, ytr, Xte, yte, n_cls = data
    C, S = Xtr.shape[1], Xtr.shape[2]
    jobs = [(lr, m) for lr in cfg["lrs"] for m in ("vit", "ot-vit")]
    state = ctx.load_checkpoint() or {"results": {}, "current": None}
    state.setdefault("curves", {})
    prog = ctx.progress(len(jobs) * cfg["epochs"], f"{EXPERIMENT} seed {ctx.seed}")
    for j, (lr, name) in enumerate(jobs):
        key = f"{name}@{lr_tag(lr)}"
        if key in state["results"]:
            continue
        torch.manual_seed(ctx.seed)            # same initial trunk for both models at a given seed
        model = build(cfg, n_cls, name == "ot-vit", S, C).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=cfg["weight_decay"])
        steps = math.ceil(len(Xtr) / cfg["batch_size"]) * cfg["epochs"]
        sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
        start = 0
        cur = state.get("current")
        if cur is not None and cur["key"] == key:
            model.load_state_dict(cur["model"])
            opt.load_state_dict(cur["opt"])
            sch.load_state_dict(cur["sched"])
            start = cur["epoch"]
            ctx.resume_rng()                    # (dropout's stream where the checkpoint left it, not after the seed)
        if start == 0:
            state["curves"][key] = {"train_loss": [], "test_acc": []}
        curve = state["curves"][key]
        for epoch in range(start, cfg["epochs"]):
            model.train()
            g = torch.Generator().manual_seed(10_000 * ctx.seed + 100 * j + epoch)
            order = torch.randperm(len(Xtr), generator=g)
            tot = torch.zeros((), dtype=torch.float64, device=device)   # summed on the device: no host sync a step
            for s in range(0, len(order), cfg["batch_size"]):
                idx = order[s:s + cfg["batch_size"]].numpy()
                xb = torch.from_numpy(Xtr[idx]).to(device)
                yb = torch.from_numpy(ytr[idx]).long()
                partner = (same_class_partners(yb, cfg["partner_prob"], g).to(device)
                           if name == "ot-vit" else None)
                loss = torch.nn.functional.cross_entropy(model(xb, partner=partner), yb.to(device))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sch.step()
                tot += loss.detach().double() * len(idx)      # (the float64 sum a Python float would give)
            # the curve attnlab.convergence judges (no validation split: training loss, and test accuracy);
            # evaluating draws no random number, so the run is the same as without it
            curve["train_loss"].append(float(f"{float(tot) / len(Xtr):.6e}"))
            curve["test_acc"].append(evaluate(model, Xte, yte, device))
            state["current"] = {"key": key, "epoch": epoch + 1, "model": model.state_dict(),
                                "opt": opt.state_dict(), "sched": sch.state_dict()}
            ctx.save_checkpoint(state)
            prog.update(j * cfg["epochs"] + epoch + 1, model=name, lr=lr, loss=tot / len(Xtr))
        state["results"][key] = {"test_acc": evaluate(model, Xte, yte, device),
                                 "train_acc": evaluate(model, Xtr, ytr, device),
                                 "n_params": count_parameters(model)}
        state["current"] = None
        ctx.save_checkpoint(state)
    rows = []
    for lr in cfg["lrs"]:
        for name in ("vit", "ot-vit"):
            r = state["results"][f"{name}@{lr_tag(lr)}"]
            rows.append(metric_row(setting_of(cfg["dataset"], lr), name, "test_acc", r["test_acc"]))
            rows.append(metric_row(setting_of(cfg["dataset"], lr), name, "train_acc", r["train_acc"]))
    curves = {setting_of(cfg["dataset"], lr): {name: state["curves"].get(f"{name}@{lr_tag(lr)}")
                                                for name in ("vit", "ot-vit")} for lr in cfg["lrs"]}
    return rows, {"runs": state["results"], "curves": curves,
                  "majority_class_accuracy": majority_class_accuracy(ytr, yte)}


def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, __doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="digits",
                   help=f"one of {', '.join(DATASETS)} (digits ships with scikit-learn; the others need --data)")
    p.add_argument("--data", default=None, metavar="PATH",
                   help="local copy: " + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    p.add_argument("--lrs", default=None, help="comma-separated learning rates (default: 3e-3 on digits, "
                                               "3e-4 on the paper's data sets; Table 1 grid: 3e-3,3e-4,3e-5)")
    p.add_argument("--epochs", type=int, default=None, help="override the config's number of epochs")
    args = p.parse_args(argv)
    if args.dataset not in DATASETS:
        raise UsageError(f"--dataset must be one of {', '.join(DATASETS)}; got {args.dataset!r}")
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(f"--device: {exc}") from None
    if args.dataset == "digits":
        if args.data is not None:           # (it was ignored: a run on digits, recorded, exit 0)
            raise UsageError("--data is for --dataset fashion-mnist, cifar10 or cifar100; digits ships with "
                             "scikit-learn and takes none")
        cfg = dict(CONFIG_DIGITS_QUICK if args.quick else CONFIG_DIGITS)
        substitute = SUBSTITUTE_DIGITS
        data = load_digits_split()
        if cfg.get("train_limit"):
            data = (data[0][:cfg["train_limit"]], data[1][:cfg["train_limit"]]) + data[2:]
    else:
        cfg = dict(CONFIG_PAPER, dataset=args.dataset)
        if args.quick:
            cfg.update(dim=32, depth=2, heads=2, mlp_dim=64, epochs=1)
        substitute = None
        try:
            data = load_local(args.dataset, args.data)
        except FileNotFoundError as exc:
            raise UsageError(f"{exc}") from None
        if args.quick:
            data = (data[0][:512], data[1][:512], data[2][:512], data[3][:512], data[4])
    folder = "quick" if args.quick else "full"
    if args.lrs is not None:                 # '' is refused, not read as "not given"
        try:
            cfg["lrs"] = [float(x) for x in args.lrs.split(",")]
            # at most 10 (1e39 overflowed Adam's float32 step), and no two rates of one tag: the runs and their
            # rows are keyed by lr_tag (one significant digit), so 0.0034 beside 0.003 was never trained
            if (not all(0 < x <= 10 and math.isfinite(x) for x in cfg["lrs"])
                    or len({lr_tag(x) for x in cfg["lrs"]}) != len(cfg["lrs"])):
                raise ValueError
        except ValueError:
            raise UsageError(f"--lrs must be comma-separated numbers in (0, 10], no two the same to one significant "
                             f"digit (the runs are named by it: 3e-03); got {args.lrs!r}") from None
        if any(float(lr_tag(x)) != x for x in cfg["lrs"]):
            raise UsageError(f"--lrs {args.lrs}: give each rate to one significant digit (the runs and their rows are "
                             f"named by it, e.g. {lr_tag(cfg['lrs'][0])}), so that the record says the rate it trained")
    if args.epochs is not None:
        if args.epochs < 1:
            raise UsageError(f"--epochs must be >= 1; got {args.epochs}")
        # another number of epochs is another config: its records go to their own folder (full-epochs3)
        folder = overridden_folder(folder, dict(cfg, epochs=args.epochs), cfg, {"epochs": "epochs"})
        cfg["epochs"] = args.epochs
    if substitute and not args.quiet:
        print(f"[{EXPERIMENT}] SUBSTITUTE: {substitute}", file=sys.stderr)
    tag = "" if args.dataset == "digits" else args.dataset
    if args.lrs:   # a non-default LR list gets its own records (settings carry the LR anyway)
        tag = "-".join(filter(None, [tag, "lrs" + "_".join(lr_tag(x) for x in cfg["lrs"])]))

    def one(seed):
        """One seed's runs (ViT and OT-ViT at every learning rate): trains, writes the seed's record, returns
        its lines (None when the record existed)."""
        ctx = context(args, EXPERIMENT, cfg, seed, tag=tag, substitute=substitute, config_name=folder)
        if ctx.done():
            return None
        rows, extra = run_seed(ctx, cfg, data, device)
        path = ctx.write_record(rows, extra=extra, training={"stopped": "fixed-schedule"})
        return "\n".join([f"seed {ctx.seed}: {path}" + ("  [substitute data/model]" if substitute else "")]
                         + [f"  {r['setting']:<22} {r['model']:<7} test_acc {r['value']:.4f}"
                            for r in rows if r["metric"] == "test_acc"])

    run_tasks(args, one, seeds_of(args))                # --jobs / --backend ray fan the seeds out
    return 0
