"""The flags every `attnlab run <experiment>` shares, and the argparse types behind them (DESIGN.md,
experiment contract): seeds, device, --quick/--resume/--force/--rerun-unjudged, --results-dir, --threads, --jobs and
--backend (only for the runners that fan out, FANS_OUT), --lr; bad values give one UsageError line
naming the flag (exit 2).
"""
from __future__ import annotations

import argparse
import math
import sys

from attnlab.devices import DEVICES
from attnlab.errors import ArgumentParser, strict_int


MAX_SEED = 2**32 - 1          # numpy / torch seeds
MAX_SEEDS = 10_000            # seeds in one command


def seed_value(text: str, what: str = "--seed") -> int:
    """One seed: an integer in 0 .. 2**32 - 1, written in ASCII digits."""
    try:
        s = strict_int(str(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be an integer in 0..{MAX_SEED}; got {text!r}") from None
    if not 0 <= s <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{what} must be an integer in 0..{MAX_SEED}; got {s}")
    return s


def parse_seeds(text: str) -> list[int]:
    """'5' -> [0..4]; '0,3,7' -> [0, 3, 7]; '2-5' -> [2, 3, 4, 5].  Seeds in 0 .. 2**32 - 1, at most
    MAX_SEEDS of them, none twice."""
    text = str(text).strip()
    usage = (f"--seeds must be a count N in 1..{MAX_SEEDS} (seeds 0..N-1), a list '0,3,7' or a range '2-5' "
             f"of seeds in 0..{MAX_SEED}; got {text!r}")
    try:
        if "," in text:
            seeds = [strict_int(s) for s in text.split(",")]      # an empty item ('1,,2', '1,') is refused
        elif "-" in text[1:]:
            a, b = (strict_int(x) for x in text.split("-", 1))
            if b < a or b - a + 1 > MAX_SEEDS:
                raise ValueError
            seeds = list(range(a, b + 1))
        else:
            n = strict_int(text)
            if not 1 <= n <= MAX_SEEDS:
                raise ValueError
            seeds = list(range(n))
    except ValueError:
        raise argparse.ArgumentTypeError(usage) from None
    if not seeds or len(seeds) > MAX_SEEDS or min(seeds) < 0 or max(seeds) > MAX_SEED:
        raise argparse.ArgumentTypeError(usage)
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"--seeds lists a seed twice: {text!r}")
    return seeds


def device_arg(name: str) -> str:
    """--device, checked while parsing: 'cuda' without a usable GPU is refused here, not mid-run."""
    if name not in DEVICES:
        raise argparse.ArgumentTypeError(f"--device must be one of {', '.join(DEVICES)}; got {name!r}")
    if name == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError("--device cuda: no CUDA GPU is available here "
                                             "(torch.cuda.is_available() is False); use --device cpu or auto")
    return name


class _ExperimentParser(ArgumentParser):
    """The runners' parser: flags that only mean something together are checked together; a runner's --data
    is never empty (`--data ''` was read as the current folder by some runners)."""

    def add_argument(self, *args, **kwargs):
        if "--data" in args and kwargs.get("type") is None:
            kwargs["type"] = _data_path
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
        if getattr(ns, "address", None) is not None and getattr(ns, "backend", "local") != "ray":
            self.error("--address is the Ray cluster of --backend ray; without --backend ray it would be ignored")
        given = list(sys.argv[1:] if args is None else args)
        if (getattr(ns, "quick", False) and getattr(ns, "config", "quick") != "quick"
                and any(a == "--config" or a.startswith("--config=") for a in given)):
            self.error(f"--quick runs config quick, --config {ns.config} another: give one of them (the configs "
                       f"--config takes are in {self.prog} --help)")
        return ns, rest


def experiment_parser(name: str, description: str, default_seeds: int = 5) -> argparse.ArgumentParser:
    """An argparse parser with the flags every experiment shares (bad values: UsageError, exit 2)."""
    # no abbreviations: `--results /path` was read as --results-dir, and the record's command kept the path
    p = _ExperimentParser(prog=f"attnlab run {name}", description=description, allow_abbrev=False)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seed", type=seed_value, help="run this one seed")
    g.add_argument("--seeds", type=parse_seeds, default=None,
                   help=f"seeds to run: a count N (0..N-1), a list 0,3,7 or a range 2-5 (default {default_seeds})")
    p.add_argument("--device", type=device_arg, default="auto", help="auto | cpu | cuda (auto = cuda when available)")
    p.add_argument("--quick", action="store_true",
                   help="reduced config (about a minute on a 2-core CPU); used by CI")
    p.add_argument("--resume", action="store_true",
                   help="resume an interrupted run from its last checkpoint")
    redo = p.add_mutually_exclusive_group()
    redo.add_argument("--force", action="store_true", help="re-run seeds whose record already exists")
    redo.add_argument("--rerun-unjudged", action="store_true",
                      help="re-run seeds whose record exists but whose convergence cannot be judged (status "
                           "unknown, e.g. written before the whole curve was stored); keep the others")
    p.add_argument("--results-dir", default=None, type=nonempty("--results-dir"),
                   help="where records go (default $ATTNLAB_RESULTS or ./results)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--threads", type=positive_int("--threads"), default=1,
                   help="torch CPU threads per run (default 1; never more than the available cores per job)")
    fans_out = name in FANS_OUT
    p.add_argument("--jobs", type=positive_int("--jobs", MAX_JOBS) if fans_out else _serial("--jobs", name, "1"),
                   default=1,
                   help="runs (setting, model, seed) in this many processes at once (joblib; default 1)"
                        if fans_out else "1 only: this runner does its runs one after another")
    p.add_argument("--backend", type=backend_arg if name in RAY else _serial("--backend", name, "local"),
                   default="local",
                   help="local (this machine; --jobs processes) or ray (a Ray cluster at --address or "
                        "$RAY_ADDRESS, else a local Ray runtime; needs the 'cluster' extra)")
    p.add_argument("--address", default=None, help="Ray cluster address for --backend ray (default $RAY_ADDRESS)")
    if name in COMPILES:                # (elsewhere it was accepted and ignored: not offered there)
        p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.set_defaults(_default_seeds=default_seeds)
    return p


BACKENDS = ("local", "ray")
MAX_JOBS = 512                # processes of one command (as verify --jobs): --jobs 100000 started one per run
# The runners that use --jobs and --backend (fan_out, or --jobs as scikit-learn's n_jobs); the others do
# their runs one after another and refuse --jobs N > 1 / --backend ray rather than ignore them (a test
# keeps this in step with the runners' code).
FANS_OUT = frozenset({"efa-synthetic", "efa-movielens-sequences", "efa-movielens-ratings", "efa-instacart",
                      "efa-temperature",
                      "bidir-tabular-sim", "bidir-auto-mpg", "kernel-time-warping", "kernel-forda",
                      "kernel-gestures", "kernel-sentiment", "kernel-ecg",
                      "fenchel-ot-vit", "fenchel-deviation", "bidir-toy-corpus", "bidir-analogies"})


# --backend ray: the runners whose runs go through attnlab.parallel.fan_out / run_tasks (the bidir tabular
# runners use --jobs as scikit-learn's n_jobs, in this process); --compile: the EFA runners (efa/common.py)
RAY = FANS_OUT - {"bidir-tabular-sim", "bidir-auto-mpg"}
COMPILES = frozenset({"efa-synthetic", "efa-movielens-sequences", "efa-movielens-ratings", "efa-instacart",
                      "efa-temperature"})


def _serial(flag: str, runner: str, only: str):
    """An argparse type for --jobs / --backend of a runner that does not fan out: only `only`."""
    def parse(text: str):
        value = positive_int(flag)(text) if flag == "--jobs" else backend_arg(text)
        if str(value) != only:
            raise argparse.ArgumentTypeError(
                f"{flag} {text}: attnlab run {runner} does its runs one after another in this process (it "
                f"does not fan out); run seeds side by side as separate commands (--seed k) instead")
        return value
    return parse


def _data_path(text: str) -> str:
    if not str(text).strip():
        raise argparse.ArgumentTypeError("--data is empty; give the folder (or file) of your copy, or leave --data out")
    return text


def nonempty(what: str):
    """An argparse type: a string that is not empty (a path: '' would silently mean the default)."""
    def parse(text: str) -> str:
        if not str(text).strip():
            raise argparse.ArgumentTypeError(f"{what} is empty; give a path")
        return text
    return parse


def positive_int(what: str, maximum: int | None = None):
    """An argparse type: an integer >= 1 (and <= maximum; bad values: one line naming `what`)."""
    def parse(text: str) -> int:
        try:
            n = strict_int(text)
        except ValueError:
            n = 0
        if n < 1 or (maximum is not None and n > maximum):
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= 1"
                                             + (f" and <= {maximum}" if maximum is not None else "") + f"; got {text!r}")
        return n
    return parse


def positive_float(what: str, low: float | None = None, high: float | None = None):
    """An argparse type: a finite number > 0, within [low, high] where given (bad values: one line naming `what`
    and the range)."""
    def parse(text: str) -> float:
        try:
            x = float(str(text).strip())
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and x > 0 and (low is None or x >= low) and (high is None or x <= high)):
            allowed = (f"a number in [{low:g}, {high:g}]" if low is not None and high is not None
                       else "a positive finite number")
            raise argparse.ArgumentTypeError(f"{what} must be {allowed}; got {text!r}")
        return x
    return parse


#: the learning rates --lr takes: up to 1e10, where a run diverges in its first epoch and says so in one line
#: (beyond float32's 3.4e38, e.g. 1e300, it was a traceback from inside the optimiser); from 1e-12, below which no
#: float32 parameter moves (1e-320 was taken)
LR_RANGE = (1e-12, 1e10)


def add_lr_flag(p) -> None:
    """`--lr`: train a config at another Adam learning rate, for choosing it on the validation split.
    The runner files such records under ``<config>-lr<LR>`` so they never mix with the config's own."""
    p.add_argument("--lr", type=positive_float("--lr", *LR_RANGE), default=None,
                   help="Adam learning rate instead of the config's, for choosing it on the validation split "
                        "(records go to the folder CONFIG-lrLR, never mixed with the config's own)")


def _folder_value(v) -> str:
    """A config value as it appears in a records folder's name: None is ``all`` (--train-sentences all), a list
    its items joined by ``_``, a number in its shortest form."""
    if v is None:
        return "all"
    if isinstance(v, (list, tuple)):
        return "_".join(_folder_value(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def overridden_folder(base: str, config: dict, defaults: dict, flags: dict) -> str:
    """The records folder of a run whose config may hold values given on the command line: `base` (``quick``,
    ``full`` or a named config) where each overridable value (`flags`: config key -> the flag that sets it) is the
    config's own, else `base` followed by each overriding flag and its value, ``full-epochs10``.  A run at another
    value is another config: written into `base` it sat, in a folder of its own, where the readers take the
    paper's configuration (``attnlab run fenchel-ot-vit --epochs 3`` gave `full` records of 3 epochs), as
    ``--lr`` runs are kept apart (:func:`add_lr_flag`)."""
    parts = [f"{flag}{_folder_value(config.get(key))}" for key, flag in flags.items()
             if config.get(key) != defaults.get(key)]
    return "-".join([base, *parts])

def backend_arg(name: str) -> str:
    if name not in BACKENDS:
        raise argparse.ArgumentTypeError(f"--backend must be one of {', '.join(BACKENDS)}; got {name!r}")
    return name


def parse_list(text, allowed, arg: str) -> list[str]:
    """'a,b' -> ['a', 'b'] for a flag `arg` taking a comma-separated subset of `allowed`; anything else
    (an empty list, a value not allowed) is a UsageError naming the flag and what it allows."""
    from attnlab.errors import UsageError

    vals = [v.strip() for v in str(text).split(",")]
    bad = [v for v in vals if v not in allowed]         # an empty item ('a,,b', 'a,') is not allowed either
    if bad or not vals:
        raise UsageError(f"{arg} must be a comma-separated subset of {', '.join(map(str, allowed))}; got {text!r}")
    twice = sorted({v for v in vals if vals.count(v) > 1})
    if twice:
        raise UsageError(f"{arg} lists {', '.join(twice)} twice: {text!r}")
    return vals


def seeds_of(args) -> list[int]:
    if getattr(args, "seed", None) is not None:
        return [args.seed]
    if getattr(args, "seeds", None):
        return list(args.seeds)
    return list(range(getattr(args, "_default_seeds", 5)))
