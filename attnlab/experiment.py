"""The experiment contract (DESIGN.md): shared flags, seeds, devices, progress, checkpoints and
atomic results records.  Every `attnlab run <experiment>` builds on this module.

A runner looks like::

    def main(argv):
        p = experiment_parser("efa-synthetic", "Table 1 (left) ...")
        p.add_argument(...)                       # experiment-specific flags
        args = p.parse_args(argv)
        for ctx in contexts(args, "efa-synthetic", config=CONFIG_QUICK if args.quick else CONFIG):
            if ctx.done():                        # record already there: skip (resume at run level)
                continue
            state = ctx.load_checkpoint()          # resume inside a run (None when fresh)
            ...train, calling ctx.save_checkpoint({...}) once per epoch...
            ctx.write_record([metric_row(setting, model, metric, value), ...])
        return 0

Records are written to ``<results-dir>/<experiment>/<quick|full>/<tag>seed<k>.json`` (default
results dir: ``./results``, or ``$ATTNLAB_RESULTS``); checkpoints go to ``$ATTNLAB_RUNS`` or
``./runs`` (not committed) and are removed once the record is written.
"""
from __future__ import annotations

import argparse
import math
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from attnlab.errors import ArgumentParser

DEVICES = ("auto", "cpu", "cuda")


# --------------------------------------------------------------------------- atomic writes
def _umask_mode() -> int:
    """The mode a new file gets from the process umask (mkstemp's files are 0600 whatever the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """Fail early, before any work, when `path` cannot be written: UsageError naming the argument."""
    from attnlab.errors import ArgumentParser, UsageError

    if not str(path).strip():                   # Path("") is "." (the current folder): never meant
        raise UsageError(f"{what} is empty; give a file name")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    probe = _check_names(path, what)
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a folder; give a file name")
    if probe == path:                           # the file exists: its folder is what must be writable
        probe = folder
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write there ({probe} is not a writable folder)")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: the file exists and is not writable")
    # what access() cannot tell (/proc, a read-only mount, a process running as root): try, in the folder or,
    # when it is still to be made, in the existing folder it will be made in
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".attnlab-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return path


def _check_names(path: Path, what: str) -> Path:
    """The nearest existing ancestor of `path` (itself when it exists), after checking that no name on
    the way down from it exceeds the file system's limit (NAME_MAX) or the whole path PATH_MAX."""
    from attnlab.errors import UsageError

    def exists(q: Path) -> bool:
        try:
            return q.exists() or q.is_symlink()
        except OSError:                         # a name too long for the file system
            return False

    probe = path
    while not exists(probe) and probe != probe.parent:
        probe = probe.parent
    base = probe if probe.is_dir() else probe.parent
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise UsageError(f"{what} {str(path)[:80]}...: the name {part[:20]}... is {len(os.fsencode(part))} "
                             f"bytes long, over the file system's limit of {name_max}")
    if len(os.fsencode(str(path.absolute()))) >= path_max:
        raise UsageError(f"{what} {str(path)[:80]}...: the path is longer than the file system's limit "
                         f"of {path_max} bytes")
    return probe


def check_folder(path: str | os.PathLike, what: str, make: bool = False) -> Path:
    """Fail early, before any work, when the folder `path` (made if missing) cannot hold new files:
    UsageError naming the argument (a file there, a file on the way to it, a read-only folder, a name
    over the file system's limit)."""
    from attnlab.errors import UsageError

    if not str(path).strip():                   # Path("") is "." (the current folder): never meant
        raise UsageError(f"{what} is empty; give a folder")
    path = Path(path)
    probe = _check_names(path, what)
    if probe == path and not path.is_dir():
        raise UsageError(f"{what} {path}: is a file, not a folder")
    if not probe.is_dir():
        raise UsageError(f"{what} {path}: cannot make it ({probe} is a file, not a folder)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write there ({probe} is not a writable folder)")
    if make:                                    # what access() cannot tell (/proc, a read-only mount)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{what} {path}: cannot make it ({exc.strerror or exc})") from None
    return path


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"the number {text[:20]} is beyond float64")
    return x


def _float_range_int(text: str) -> int:
    x = int(text)
    if abs(x) > 1.7e308:
        raise ValueError(f"the integer {text[:20]}... ({len(text)} digits) is beyond float64")
    return x


def _unique_keys(pairs: list) -> dict:
    """A JSON object whose keys are unique ({"T": ..., "T": ...} kept the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice[:40]!r} appears twice in one object")
    return out


def _no_constant(name: str):
    raise ValueError(f"it holds {name}, a number that is not finite (and not JSON)")


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in the file at `path`, or ValueError with a one-line reason: unreadable, not UTF-8
    text (a binary file), not JSON, nested too deeply, or holding a number float64 cannot hold (NaN,
    Infinity, 1e400, 10**400)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text (a binary file?)") from None
    try:
        return json.loads(text, parse_float=_finite_float, parse_int=_float_range_int,
                          parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path} is nested too deeply to be read") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {str(exc).splitlines()[0]}") from None


def check_json_dest(dest: str | None, what: str = "--json") -> None:
    """A `--json FILE` destination ('-' is stdout, None is none) checked before any work."""
    if dest and dest != "-":
        check_writable(dest, what)


def write_json_dest(dest: str | None, obj: Any) -> None:
    """Write `obj` as JSON to a `--json FILE` destination (checked by check_json_dest), atomically."""
    if dest and dest != "-":
        atomic_write_text(dest, json.dumps(obj, indent=2) + "\n")


def _remove_stale_temporaries(path: Path, older_than: float = 3600.0) -> None:
    """Remove the temporary files (``.<name>.<random>.tmp``) that writes of `path` killed mid-way left,
    once they are an hour old (no live write of one file takes that long)."""
    now = time.time()
    try:
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            try:
                if now - tmp.stat().st_mtime > older_than:
                    tmp.unlink()
            except OSError:
                pass
    except OSError:
        pass


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` atomically (temporary file in the same folder, then rename), with the
    mode the umask gives new files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _umask_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    from attnlab.catalog import jsonable

    return atomic_write_text(path, json.dumps(jsonable(obj), indent=2, sort_keys=False) + "\n")


def atomic_torch_save(path: str | os.PathLike, obj: Any) -> Path:
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, _umask_mode())
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


# --------------------------------------------------------------------------- arguments
MAX_SEED = 2**32 - 1          # numpy / torch seeds
MAX_SEEDS = 10_000            # seeds in one command


def seed_value(text: str, what: str = "--seed") -> int:
    """One seed: an integer in 0 .. 2**32 - 1."""
    try:
        s = int(str(text).strip())
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
            seeds = [int(s) for s in text.split(",")]      # an empty item ('1,,2', '1,') is refused
        elif "-" in text[1:]:
            a, b = (int(x) for x in text.split("-", 1))
            if b < a or b - a + 1 > MAX_SEEDS:
                raise ValueError
            seeds = list(range(a, b + 1))
        else:
            n = int(text)
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
    """The runners' parser: flags that only mean something together are checked together."""

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
        if getattr(ns, "address", None) is not None and getattr(ns, "backend", "local") != "ray":
            self.error("--address is the Ray cluster of --backend ray; without --backend ray it would be ignored")
        return ns, rest


def experiment_parser(name: str, description: str, default_seeds: int = 5) -> argparse.ArgumentParser:
    """An argparse parser with the flags every experiment shares (bad values: UsageError, exit 2)."""
    p = _ExperimentParser(prog=f"attnlab run {name}", description=description)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seed", type=seed_value, help="run this one seed")
    g.add_argument("--seeds", type=parse_seeds, default=None,
                   help=f"seeds to run: a count N (0..N-1), a list 0,3,7 or a range 2-5 (default {default_seeds})")
    p.add_argument("--device", type=device_arg, default="auto", help="auto | cpu | cuda (auto = cuda when available)")
    p.add_argument("--quick", action="store_true",
                   help="reduced config (about a minute on a 2-core CPU); used by CI")
    p.add_argument("--resume", action="store_true",
                   help="resume an interrupted run from its last checkpoint")
    p.add_argument("--force", action="store_true", help="re-run seeds whose record already exists")
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
    p.add_argument("--backend", type=backend_arg if fans_out else _serial("--backend", name, "local"),
                   default="local",
                   help="local (this machine; --jobs processes) or ray (a Ray cluster at --address or "
                        "$RAY_ADDRESS, else a local Ray runtime; needs the 'cluster' extra)")
    p.add_argument("--address", default=None, help="Ray cluster address for --backend ray (default $RAY_ADDRESS)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model where a runner supports it")
    p.set_defaults(_default_seeds=default_seeds)
    return p


# --------------------------------------------------------------------------- processes and threads
BACKENDS = ("local", "ray")
MAX_JOBS = 512                # processes of one command (as verify --jobs): --jobs 100000 started one per run
# The runners that use --jobs and --backend (fan_out, or --jobs as scikit-learn's n_jobs); the others do
# their runs one after another and refuse --jobs N > 1 / --backend ray rather than ignore them (a test
# keeps this in step with the runners' code).
FANS_OUT = frozenset({"efa-synthetic", "efa-movielens-sequences", "efa-movielens-ratings", "efa-instacart",
                      "efa-temperature",
                      "bidir-tabular-sim", "bidir-auto-mpg", "kernel-time-warping", "kernel-forda",
                      "kernel-gestures", "kernel-sentiment", "kernel-ecg"})


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
            n = int(str(text).strip())
        except ValueError:
            n = 0
        if n < 1 or (maximum is not None and n > maximum):
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= 1"
                                             + (f" and <= {maximum}" if maximum is not None else "") + f"; got {text!r}")
        return n
    return parse


def positive_float(what: str):
    """An argparse type: a finite number > 0 (bad values: one line naming `what`)."""
    def parse(text: str) -> float:
        try:
            x = float(str(text).strip())
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and x > 0):
            raise argparse.ArgumentTypeError(f"{what} must be a positive finite number; got {text!r}")
        return x
    return parse


def add_lr_flag(p) -> None:
    """`--lr`: train a config at another Adam learning rate, for choosing it on the validation split.
    The runner files such records under ``<config>-lr<LR>`` so they never mix with the config's own."""
    p.add_argument("--lr", type=positive_float("--lr"), default=None,
                   help="Adam learning rate instead of the config's, for choosing it on the validation split "
                        "(records go to the folder CONFIG-lrLR, never mixed with the config's own)")


def backend_arg(name: str) -> str:
    if name not in BACKENDS:
        raise argparse.ArgumentTypeError(f"--backend must be one of {', '.join(BACKENDS)}; got {name!r}")
    return name


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:              # not Linux
        return os.cpu_count() or 1


def torch_threads(args=None) -> int:
    """torch threads for one run: --threads, but never more than the available cores shared by the
    --jobs processes of a local fan-out."""
    threads = int(getattr(args, "threads", 1) or 1)
    jobs = int(getattr(args, "jobs", 1) or 1) if getattr(args, "backend", "local") == "local" else 1
    return max(1, min(threads, available_cores() // jobs))


def set_torch_threads(args=None) -> int:
    import torch

    n = torch_threads(args)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
MALLOC_MODES = ("keep", "default")


def malloc_mode() -> str:
    """$ATTNLAB_MALLOC: 'keep' (the default: see keep_freed_memory) or 'default' (glibc's own settings);
    anything else is a UsageError naming the variable."""
    from attnlab.errors import UsageError

    mode = os.environ.get("ATTNLAB_MALLOC", "").strip() or "keep"
    if mode not in MALLOC_MODES:
        raise UsageError(f"ATTNLAB_MALLOC must be one of {', '.join(MALLOC_MODES)}; got {mode!r}")
    return mode


def keep_freed_memory() -> bool:
    """Let a training process keep the memory it frees instead of handing it back to the OS (glibc).

    glibc serves an allocation above its mmap threshold (128 KiB at first) by mmap and unmaps it on
    free, and trims the heap's top beyond 128 KiB of free space; a training step that frees and
    re-allocates the same large tensors then page-faults all of that memory in again, step after step
    (the full-batch temperature runs of the EFA paper spent ~40% of their time in the kernel so on a
    2-core virtual machine).  With the mmap threshold at 1 GiB, the heap trimmed only beyond 2 GiB
    of free space and 256 MiB of padding, those tensors re-use the same heap pages.  The numbers do
    not change (torch aligns its buffers itself); a process holds on to up to 2 GiB it has freed.
    `benchmarks/malloc.py` measures the step time both ways.  Returns whether the settings were
    applied: False with ATTNLAB_MALLOC=default, and where the C library has no glibc mallopt."""
    if malloc_mode() == "default":
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = ((_M_MMAP_THRESHOLD, 1 << 30), (_M_TRIM_THRESHOLD, 2**31 - 1), (_M_TOP_PAD, 256 << 20))
    return all([mallopt(param, value) == 1 for param, value in settings])


def _in_worker(fn, task, threads: int):
    import torch

    keep_freed_memory()
    torch.set_num_threads(threads)
    return fn(task)


def fan_out(args, fn, tasks: list) -> list:
    """``[fn(task) for task in tasks]``, in task order: in this process (--jobs 1), in --jobs joblib
    processes, or as tasks of a Ray cluster (--backend ray: ``ray.init(address=--address or
    $RAY_ADDRESS)``, a local Ray runtime when neither is set).  Each task is one run that writes its
    own record atomically (and skips itself when its record exists), so an interrupted fan-out
    resumes like a serial one.  `fn` and the tasks are shipped with cloudpickle (closures allowed);
    every worker runs with :func:`torch_threads` threads."""
    tasks = list(tasks)
    threads = torch_threads(args)
    backend = getattr(args, "backend", "local")
    jobs = int(getattr(args, "jobs", 1) or 1)
    if backend == "ray":
        return _ray_map(args, fn, tasks, threads)
    if jobs == 1 or len(tasks) <= 1:
        set_torch_threads(args)
        return [fn(t) for t in tasks]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=min(jobs, len(tasks)), backend="loky")(
        delayed(_in_worker)(fn, t, threads) for t in tasks)


def _ray_map(args, fn, tasks: list, threads: int) -> list:
    from attnlab.errors import UsageError

    try:
        import ray
    except ImportError:
        raise UsageError("--backend ray needs Ray: pip install 'attnlab[cluster]' (or pip install ray)") from None
    address = getattr(args, "address", None) or os.environ.get("RAY_ADDRESS") or None
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"num_cpus": available_cores()}))
        started = True
    try:
        remote = ray.remote(num_cpus=threads)(_in_worker)
        return ray.get([remote.remote(fn, t, threads) for t in tasks])
    finally:
        if started:
            ray.shutdown()


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


def resolve_device(name: str) -> str:
    """'auto' -> 'cuda' when available else 'cpu'; 'cuda' without a GPU is a ValueError."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {name!r}")
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch.cuda.is_available() is False; use --device cpu")
    return name


def device_description(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return f"cpu:{platform.processor() or platform.machine()} x{os.cpu_count()}"


def results_root(args=None, read: bool = False) -> Path:
    """Where records go (``--results-dir``, else $ATTNLAB_RESULTS, else ./results).  For reading
    (``read=True``: results, report, figures) without either, ./results where it exists, else the
    committed records (attnlab.evidence.committed_records: the repository's, or an installed package's
    copy), so that an install outside the repository shows the repository's results."""
    d = getattr(args, "results_dir", None) if args is not None else None
    if d is not None and not str(d).strip():    # '' would silently mean $ATTNLAB_RESULTS or ./results
        from attnlab.errors import UsageError

        raise UsageError("--results-dir is empty; give a folder")
    chosen = d or os.environ.get("ATTNLAB_RESULTS")
    if chosen:
        return Path(chosen)
    if read and not Path("results").is_dir():
        from attnlab.evidence import committed_records

        return committed_records()
    return Path("results")


def runs_root() -> Path:
    return Path(os.environ.get("ATTNLAB_RUNS") or "runs")


# --------------------------------------------------------------------------- provenance
def git_revision() -> str | None:
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        rev = out.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions(names: Iterable[str] = ("numpy", "scipy", "torch", "cvxpy", "sympy", "mpmath",
                                               "scikit-learn", "pandas")) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            pass
    return out


# --------------------------------------------------------------------------- progress
class Progress:
    """Progress for long loops: 'name  12/100  loss=0.53  ETA 1m03s' on stderr, at most ~2 lines/s."""

    def __init__(self, total: int, name: str = "", enabled: bool = True, min_interval: float = 0.5):
        self.total, self.name, self.enabled = int(total), name, enabled
        self.min_interval = min_interval
        self.t0 = time.perf_counter()
        self._last = 0.0
        self.i = 0

    def update(self, i: int | None = None, **stats) -> None:
        self.i = self.i + 1 if i is None else i
        now = time.perf_counter()
        if not self.enabled or (now - self._last < self.min_interval and self.i < self.total):
            return
        self._last = now
        el = now - self.t0
        eta = el / max(self.i, 1) * (self.total - self.i)
        s = "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items())
        print(f"  {self.name} {self.i}/{self.total}  {s}  elapsed {_fmt_t(el)}  ETA {_fmt_t(eta)}",
              file=sys.stderr, flush=True)


def _fmt_t(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


# --------------------------------------------------------------------------- one run
def metric_row(setting: str, model: str, metric: str, value: float, converged: bool | None = None) -> dict:
    """One number of a record.  `converged` is for a record that trains several models whose
    optimisers may end differently: it says whether this row's model converged, and overrides the
    record's flag for this row (attnlab.results.row_converged)."""
    row = {"setting": str(setting), "model": str(model), "metric": str(metric), "value": float(value)}
    if converged is not None:
        row["converged"] = bool(converged)
    return row


SETTINGS_KEY = "_attnlab_run_settings"
# wall seconds the run had spent up to its last checkpoint, so that a resumed run's record counts them
WALL_KEY = "_attnlab_wall_seconds"
# the devices (device_description) of the invocations up to the last checkpoint, in order, so that the
# record of a run resumed elsewhere (a GPU machine's checkpoint finished on a CPU) names every one
DEVICES_KEY = "_attnlab_devices"
# what a checkpoint written before DEVICES_KEY existed says about its invocations' devices
_UNRECORDED = "not recorded"
# Flags (and config values of the same name) that only pick which runs to do; every runner names the
# pick in the run's tag, so a run is the same run whichever other runs were picked beside it.
_PICKS = {"models", "ks", "efa"}
# Flags that say how to run, not what the run is: they may change between an interrupted run and its resume.
# `--settings` picks settings the same way where the setting is in the tag (the EFA runners); a runner whose
# config holds the settings themselves (kernel-cost) still has them in its config values, which define it.
_NOT_DEFINING = {"seed", "seeds", "device", "resume", "force", "results_dir", "quiet", "threads", "jobs",
                 "backend", "address", "compile", "data", "_default_seeds", "settings"} | _PICKS


def _run_config(config: dict) -> dict:
    """The config values that define one run: `config` without the picks (_PICKS)."""
    return {k: v for k, v in config.items() if k not in _PICKS}


def _defining(settings: dict) -> dict:
    """`settings` without the flags and config values that do not define a run (checkpoints written
    before a flag joined _NOT_DEFINING still carry it)."""
    out = {k: v for k, v in settings.items()
           if not (k.startswith("--") and k[2:].replace("-", "_") in _NOT_DEFINING)}
    if isinstance(out.get("config_values"), dict):
        out["config_values"] = _run_config(out["config_values"])
    return out


def run_settings(experiment: str, config_name: str, config: dict, tag: str, seed: int, args=None) -> dict:
    """The settings that define a run (what its checkpoint must match on --resume), JSON-plain."""
    import json as _json

    from attnlab.catalog import jsonable

    flags = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_DEFINING} if args is not None else {}
    out = {"experiment": experiment, "config": config_name, "tag": tag, "seed": int(seed),
           "config_values": _run_config(config), **{f"--{k.replace('_', '-')}": v for k, v in flags.items()}}
    return _json.loads(_json.dumps(jsonable(out), sort_keys=True, default=str))


_HELD: set = set()          # the run locks this process holds (absolute lock paths)
LOCK_POLL_SECONDS = 1.0     # how often a run waiting for another process's lock on it tries again


class RunContext:
    """One (experiment, config, tag, seed) run: its record path, checkpoints, and record writing."""

    def __init__(self, experiment: str, seed: int, device: str, quick: bool, config: dict,
                 args=None, tag: str = "", substitute: str | None = None, config_name: str | None = None):
        self.experiment, self.seed, self.device = experiment, int(seed), device
        self.device_name = device_description(device)
        # quick, full (the paper's), or a named intermediate config whose records get their own folder
        self.config_name = config_name or ("quick" if quick else "full")
        self.config, self.tag, self.substitute = dict(config), tag, substitute
        self.args = args
        self.force = bool(getattr(args, "force", False))
        self.resume = bool(getattr(args, "resume", False))
        self.verbose = not bool(getattr(args, "quiet", False))
        self.settings = run_settings(experiment, self.config_name, self.config, tag, self.seed, args)
        stem = f"{tag + '-' if tag else ''}seed{self.seed}"
        self.record_path = results_root(args) / experiment / self.config_name / f"{stem}.json"
        self.checkpoint_path = runs_root() / experiment / self.config_name / f"{stem}.ckpt"
        # every output path is checked before the first step, not found unwritable after hours of training
        where = "--results-dir" if getattr(args, "results_dir", None) else (
            "$ATTNLAB_RESULTS" if os.environ.get("ATTNLAB_RESULTS") else "the results folder")
        check_folder(self.record_path.parent, where, make=True)
        check_writable(self.record_path, where)
        for longest in (f".{self.record_path.name}.lock", f".{self.record_path.name}.{'x' * 8}.tmp"):
            _check_names(self.record_path.parent / longest, where)     # the lock and the atomic write's temporary
        _check_names(self.checkpoint_path.parent / f".{self.checkpoint_path.name}.{'x' * 8}.tmp",
                     "$ATTNLAB_RUNS" if os.environ.get("ATTNLAB_RUNS") else "the checkpoint folder ./runs")
        runs_where = "$ATTNLAB_RUNS" if os.environ.get("ATTNLAB_RUNS") else "the checkpoint folder ./runs"
        check_folder(self.checkpoint_path.parent, runs_where, make=True)
        check_writable(self.checkpoint_path, runs_where)
        self._lock = None           # the open lock file while this process holds the run (done())
        self.t0 = time.perf_counter()
        # the code this run executes: the revision when it starts, not when its record is written hours later
        self.revision = git_revision()
        self.wall_before = 0.0      # seconds spent by earlier, interrupted invocations (from --resume)
        self.devices_before: list[str] = []     # their devices, in order (from --resume)

    def devices(self) -> list[str]:
        """The devices this run has trained on, in order (one entry per change of device)."""
        moved = self.devices_before[-1:] != [self.device_name]
        return self.devices_before + ([self.device_name] if moved else [])

    def wall_seconds(self) -> float:
        """Wall time of this run: this invocation plus what earlier invocations had spent up to the
        checkpoint it resumed from."""
        return self.wall_before + time.perf_counter() - self.t0

    def done(self) -> bool:
        """A record of this run already exists (and --force was not given).  A record at this path
        written with other config values (those both sides name) is not this run: refused with one line
        rather than silently taken as done.  While another live process holds the run (a second identical
        command into the same results folder), this waits for it, saying so: then the record it wrote is
        found (done), or, if it stopped without one, the run is done here -- never skipped unrecorded."""
        if self._lock is None and not self._take_lock():   # said even under --quiet
            holder = self._lock_holder()
            print(f"attnlab: warning: {self.record_path}: another live process{holder} is running this run; "
                  "waiting for it to finish (Ctrl-C to stop waiting) ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            while not self._take_lock():
                time.sleep(LOCK_POLL_SECONDS)
            print(f"attnlab: {self.record_path}: the other process let go of this run after "
                  f"{_fmt_t(time.perf_counter() - t0)}", file=sys.stderr, flush=True)
        self._clean_temporaries()
        if not self.record_path.exists() or self.force:
            return False
        from attnlab.results import _record_problem

        try:
            rec = read_json(self.record_path)
            problem = _record_problem(rec)
        except ValueError as exc:
            problem = str(exc)
        if problem:                 # a half-written or damaged record is not a finished run
            print(f"attnlab: warning: {self.record_path} exists but cannot be used ({problem}); running this "
                  "seed again (the new record replaces it)", file=sys.stderr)
            return False
        saved = rec.get("config_values") or {}
        if isinstance(saved, dict):
            from attnlab.catalog import jsonable

            now = json.loads(json.dumps(jsonable(_run_config(self.config)), default=str))
            diff = [k for k in sorted(set(_run_config(saved)) & set(now)) if saved[k] != now[k]]
            if diff:
                from attnlab.errors import UsageError

                self._release_lock()
                raise UsageError(f"{self.record_path} exists but was written with other settings ("
                                 + ", ".join(f"{k}: {saved[k]!r} there, {now[k]!r} now" for k in diff)
                                 + "); pass --force to replace it, or --results-dir for another folder")
        if self.verbose:
            print(f"  {self.record_path} exists; skipping (use --force to re-run)", file=sys.stderr)
        self._release_lock()
        return True

    def _lock_path(self) -> Path:
        return self.record_path.with_name(f".{self.record_path.name}.lock")

    def _lock_holder(self) -> str:
        """' (pid N)' of the process named in the lock file, or '' when it cannot be read."""
        try:
            pid = self._lock_path().read_text().strip()
        except (OSError, UnicodeDecodeError):
            return ""
        return f" (pid {pid})" if pid.isdigit() else ""

    def _take_lock(self) -> bool:
        """Hold this run (results folder, experiment, config, tag, seed) for this process: False when another
        live process holds it.  flock is released by the kernel when its holder dies, so the lock of a
        killed run is taken over; the lock file is removed when the record is written."""
        import fcntl

        path = self._lock_path()
        if str(path.absolute()) in _HELD:          # this process holds it already (another context of the run)
            return True
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, _umask_mode())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except OSError:                        # a file system without flock: run unlocked
                os.close(fd)
                return True
            try:                                   # the file we locked may have been removed by its holder
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._lock = fd
                _HELD.add(str(path.absolute()))
                return True
            os.close(fd)

    def _release_lock(self) -> None:
        if self._lock is not None:
            _HELD.discard(str(self._lock_path().absolute()))
            try:
                self._lock_path().unlink()
            except OSError:
                pass
            os.close(self._lock)
            self._lock = None

    def __del__(self):
        try:
            self._release_lock()
        except Exception:
            pass

    def _clean_temporaries(self) -> None:
        """Remove what a run killed while writing left behind: the temporary files of this run's record
        and checkpoint (atomic writes: ``.<name>.<random>.tmp``).  Called while holding the run's lock, so
        no live writer of these files exists."""
        for final in (self.record_path, self.checkpoint_path):
            for tmp in final.parent.glob(f".{final.name}.*.tmp"):
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def progress(self, total: int, name: str = "") -> Progress:
        return Progress(total, name or f"{self.experiment} seed {self.seed}", enabled=self.verbose)

    def save_checkpoint(self, state: dict) -> None:
        """Save `state` (tensors, numbers, strings, None, numpy arrays and scalars, in dicts, lists and
        tuples) so that it loads without pickle (``torch.load(weights_only=True)``)."""
        try:
            plain = _plain({**state, SETTINGS_KEY: self.settings, WALL_KEY: self.wall_seconds(),
                            DEVICES_KEY: self.devices()})
        except TypeError as exc:    # never crash a training run over its checkpoint: it goes on without one
            if not getattr(self, "_warned_checkpoint", False):
                print(f"attnlab: warning: {self.checkpoint_path}: not checkpointed ({exc})", file=sys.stderr)
                self._warned_checkpoint = True
            return
        atomic_torch_save(self.checkpoint_path, plain)

    def load_checkpoint(self) -> dict | None:
        """The last checkpoint when --resume was given and one exists, else None.  A checkpoint written
        under other settings (another config, split seed, model, ...) is refused: a resumed run must be
        the same run."""
        if not self.resume or not self.checkpoint_path.exists():
            return None
        from attnlab.errors import UsageError

        state = _load_plain(self.checkpoint_path)
        saved = state.pop(SETTINGS_KEY, None) if isinstance(state, dict) else None
        wall = state.pop(WALL_KEY, 0.0) if isinstance(state, dict) else 0.0
        devices = state.pop(DEVICES_KEY, [_UNRECORDED]) if isinstance(state, dict) else [_UNRECORDED]
        if isinstance(saved, dict):
            saved = _defining(saved)
        if saved != self.settings:
            diff = ("it records no settings" if not isinstance(saved, dict) else ", ".join(
                f"{k}: {saved.get(k)!r} there, {self.settings.get(k)!r} now"
                for k in sorted(set(saved) | set(self.settings)) if saved.get(k) != self.settings.get(k)))
            raise UsageError(f"--resume: the checkpoint {self.checkpoint_path} was written under other settings "
                             f"({diff}); run with those settings, or without --resume to start afresh")
        if self.verbose:
            print(f"  resuming from {self.checkpoint_path}", file=sys.stderr)
        self.wall_before = float(wall)
        self.devices_before = [str(d) for d in devices]
        return state

    def converged(self, record: dict, trivial: dict | None = None) -> dict:
        """The judgement of :mod:`attnlab.convergence` on `record` (its stored curves): {"converged":
        True | False | None, "convergence": {...}, "rows": ...}.  How training stopped is not evidence."""
        from attnlab.convergence import judge_record

        return judge_record(record, trivial)

    def write_record(self, metrics: list[dict], extra: dict | None = None, training: dict | None = None,
                     trivial: dict | None = None) -> Path:
        """Write the run's record.  `training` says how training ended: {stopped: early-stop | tolerance |
        max-epochs | time-limit | fixed-schedule, best_epoch, epochs_run, max_epochs}; `extra.history` holds
        the whole per-epoch curve; `trivial` the trivial predictor's value on the compared metric
        ({"value": ..., "perfect": ...}, :func:`attnlab.convergence.judge_record`).  The record's
        `converged` and `convergence` are judged from the stored curves (:mod:`attnlab.convergence`)."""
        from attnlab.convergence import apply

        rec = {
            "experiment": self.experiment, "config": self.config_name, "tag": self.tag,
            "seed": self.seed, "device": self.device, "device_name": self.device_name,
            "devices": self.devices(),
            "substitute": self.substitute, "config_values": self.config, "metrics": metrics,
            "wall_seconds": round(self.wall_seconds(), 3),
            "git_revision": self.revision, "versions": package_versions(),
            "command": _command_line(self.experiment),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        rec["training"] = training
        rec["converged"] = None
        if extra:
            rec["extra"] = extra
        from attnlab.catalog import jsonable

        rec = apply(json.loads(json.dumps(jsonable(rec), default=str)), trivial)
        path = atomic_write_json(self.record_path, rec)
        if self.checkpoint_path.exists():
            self.checkpoint_path.unlink()
        self._release_lock()
        return path


_NDARRAY = "_attnlab_ndarray"      # a numpy array in a checkpoint: {_NDARRAY: tensor, "dtype": str}
_TUPLE = "_attnlab_tuple"          # a tuple (torch's safe loader keeps tuples, but a dict key marks it plainly)


def _plain(obj):
    """`obj` with what torch.load(weights_only=True) cannot read made plain: numpy arrays as tensors
    (tagged, restored by _unplain), numpy scalars as Python numbers.  Anything else that is not a tensor,
    number, string, bytes, None, dict, list or tuple is refused (it would need pickle to load)."""
    import numpy as np
    import torch

    if isinstance(obj, np.generic):             # before the Python types: np.float64 is a float subclass
        return obj.item()
    if isinstance(obj, (torch.Tensor, str, bytes, bool, int, float, type(None), torch.Size, torch.dtype,
                        torch.device)):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError("a checkpoint cannot hold a numpy array of Python objects")
        return {_NDARRAY: torch.from_numpy(np.ascontiguousarray(obj).copy()), "dtype": str(obj.dtype)}
    if isinstance(obj, dict):
        return type(obj)((_plain(k), _plain(v)) for k, v in obj.items()) if type(obj) is not dict else \
            {_plain(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        vals = [_plain(v) for v in obj]
        return vals if isinstance(obj, list) else tuple(vals)
    raise TypeError(f"a checkpoint cannot hold a {type(obj).__name__} (it would need pickle to load); "
                    "store tensors, numbers, strings and numpy arrays in dicts and lists")


def _unplain(obj):
    if isinstance(obj, dict):
        if _NDARRAY in obj and set(obj) == {_NDARRAY, "dtype"}:
            return obj[_NDARRAY].numpy().astype(obj["dtype"], copy=False)
        return type(obj)((k, _unplain(v)) for k, v in obj.items()) if type(obj) is not dict else \
            {k: _unplain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unplain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_unplain(v) for v in obj)
    return obj


def _load_plain(path: Path):
    """A checkpoint loaded without pickle (weights_only=True: a crafted file cannot run code); a
    truncated, garbage or unsafe one is a UsageError naming it."""
    import torch

    from attnlab.errors import UsageError

    import pickle

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "global" not in str(exc).lower():   # no pickled object named: garbage, not a crafted file
            raise UsageError(f"--resume: the checkpoint {path} cannot be loaded safely (it is not a checkpoint "
                             "written by attnlab); delete it, or run without --resume to start afresh") from None
        # pickled objects other than tensors and plain data: refused unread
        raise UsageError(f"--resume: the checkpoint {path} holds Python objects that only pickle could load, "
                         "which attnlab refuses (a crafted file could run code); it was not written by this "
                         "attnlab: delete it, or run without --resume to start afresh") from None
    except Exception as exc:        # truncated (EOFError, RuntimeError), garbage
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"--resume: the checkpoint {path} cannot be loaded safely ({reason}); it is damaged "
                         "or was not written by this attnlab: delete it, or run without --resume to start "
                         "afresh") from None
    return _unplain(state)


def _command_line(experiment: str) -> str:
    """The command that produced a record, as the user typed it when run through `attnlab run`, less
    ``--results-dir``: where a record is written does not change it, and a folder of one machine has no
    place in a record that travels."""
    import shlex

    argv = _without_results_dir(sys.argv[1:])
    if argv[:2] == ["run", experiment]:
        return "attnlab " + " ".join(shlex.quote(a) for a in argv)
    return f"attnlab run {experiment} (called as: {' '.join(shlex.quote(a) for a in sys.argv)})"


def _without_results_dir(argv: list[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--results-dir":
            skip = True
        elif not a.startswith("--results-dir="):
            out.append(a)
    return out


def contexts(args, experiment: str, config: dict, tag: str = "",
             substitute: str | None = None, config_name: str | None = None) -> Iterator[RunContext]:
    """One RunContext per requested seed (torch threads set from --threads)."""
    set_torch_threads(args)
    for s in seeds_of(args):
        yield context(args, experiment, config, s, tag, substitute, config_name)


def context(args, experiment: str, config: dict, seed: int, tag: str = "",
            substitute: str | None = None, config_name: str | None = None,
            device: str | None = None) -> RunContext:
    """The RunContext of one seed (for a task of :func:`fan_out`).  `device` overrides --device for a
    run that cannot use it (a scikit-learn baseline always runs, and is recorded, on the CPU)."""
    device = resolve_device(device or getattr(args, "device", "auto"))
    return RunContext(experiment, seed, device, bool(getattr(args, "quick", False)), config, args,
                      tag, substitute, config_name)
