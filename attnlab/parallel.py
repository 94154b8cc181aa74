"""Processes and threads of the experiment runners: torch threads per run (never more than the cores
shared by a local fan-out), glibc's allocator kept from handing freed memory back (keep_freed_memory),
and `fan_out`, the runs of one command in this process, in --jobs joblib processes or on a Ray cluster
(`run_tasks`: the same for runs that print a line each).
"""
from __future__ import annotations

import contextlib
import os
import sys


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
    n = max(1, min(threads, available_cores() // jobs))
    if n < threads and not _NOTED:
        # said once: the numbers of a run depend on its thread count, so the same command gives other numbers on
        # a machine with more cores (the records say torch_threads)
        _NOTED.append(threads)
        print(f"attnlab: note: --threads {threads} with --jobs {jobs} on {available_cores()} core(s): each run gets {n} "
              f"thread(s), and numbers that differ at rounding level from a run with {threads} (its record says "
              "torch_threads)", file=sys.stderr)
    return n


_NOTED: list = []               # (the thread cap is noted once a process)


def set_torch_threads(args=None) -> int:
    import torch

    n = torch_threads(args)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


_ONE_THREAD = None      # the pid of the process one_thread() limited


def one_thread() -> None:
    """Limit this process to one thread of computation: torch's intra-op pool and the BLAS and OpenMP pools
    of the other libraries it has loaded (numpy's and scipy's OpenBLAS, through threadpoolctl).  For
    bidir-analogies, whose serial runs then sum as its joblib workers do, and for `attnlab verify`, whose
    checks are many small operations: torch's limit alone leaves numpy's OpenBLAS
    at one thread per core, whose threads wait for a core held by another process (a 20,001-point
    bisection of a check took 2-6 ms alone and 0.4 s with two other processes busy).  Inherited by
    forked children.  The verdicts are the same with any number of threads.  threadpoolctl limits the
    libraries loaded when it is called, so scipy.linalg (which loads scipy's own OpenBLAS; the checks
    import it anyway) is imported first."""
    global _ONE_THREAD
    if _ONE_THREAD == os.getpid():      # done in this process already (a forked child does it once itself)
        return
    import importlib

    import torch
    from threadpoolctl import threadpool_limits

    importlib.import_module("scipy.linalg")
    torch.set_num_threads(1)
    threadpool_limits(1)
    _ONE_THREAD = os.getpid()


@contextlib.contextmanager
def one_thread_within():
    """:func:`one_thread` for a block, the caller's thread counts put back after it (``attnlab.verify`` in a
    notebook: its records are those of ``attnlab verify``, which runs at one thread, and the notebook keeps its
    own threads)."""
    import importlib

    import torch
    from threadpoolctl import threadpool_limits

    importlib.import_module("scipy.linalg")
    before = torch.get_num_threads()
    try:
        with threadpool_limits(1):
            torch.set_num_threads(1)
            yield
    finally:
        torch.set_num_threads(before)


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


_WATCHED = False


def _exit_with_parent(every: float = 1.0) -> None:
    """End this worker process when the process that started it ends (once per process: a daemon thread that
    looks every `every` seconds whether this process was given another parent).  A joblib worker notices
    its parent's end only when it hands back a result, so a command killed with `kill PID` (not Ctrl-C,
    which reaches the whole process group) left its workers training for hours, holding their runs' locks
    (a resumed command skipped those seeds as running elsewhere) and the cores.  Checkpoints and records are
    written atomically, so ending mid-epoch loses that epoch only."""
    global _WATCHED
    if _WATCHED:
        return
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="attnlab-exit-with-parent", daemon=True).start()
    _WATCHED = True


def _in_worker(fn, task, threads: int):
    import torch

    from attnlab.experiment import restore_failed

    _exit_with_parent()
    keep_freed_memory()
    torch.set_num_threads(threads)
    try:
        return fn(task)
    except Exception as exc:                       # noqa: BLE001 -- one line only for a restored checkpoint's error
        usage = restore_failed(exc)
        if usage is None:
            raise
        raise usage from None


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


def run_tasks(args, one, tasks: list) -> None:
    """Run the independent runs `tasks` with `one(task)`, which trains, writes the run's record and returns
    its result line (None when the record existed): one after another with --jobs 1 (each line as its run
    ends), else fanned out with --jobs processes or --backend ray (:func:`fan_out`; the records are the same
    either way, each run seeding its own generators) and the lines printed at the end (stderr; none under
    --quiet)."""
    if getattr(args, "backend", "local") == "local" and int(getattr(args, "jobs", 1) or 1) == 1:
        set_torch_threads(args)
        for t in tasks:
            line = one(t)
            if line and not args.quiet:
                print(line, file=sys.stderr)
        return
    lines = fan_out(args, one, tasks)
    if not args.quiet:
        print("\n".join(x for x in lines if x), file=sys.stderr)


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
