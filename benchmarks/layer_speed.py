"""Speed of the attnlab.layers functions against scaled_dot_product_attention, forward + backward,
float32, CPU time (or, with --device cuda, GPU wall time) measured side by side (interleaved, best of --reps)
in one run.

Rows (the issue's targets in brackets):
- exact Fenchel attention at n = d = 64 [<= 3x] and at L = 256, d = 64 [<= 4x];
- continuous attention (cts_softmax, kernel_sparsemax) at L = 256 [<= 2x].

    python benchmarks/layer_speed.py [--reps 5] [--runs 1] [--threads 1] [--malloc default|keep]
                                     [--device cpu|cuda] [--json -]

Prints ms per forward+backward of each and the ratio to SDPA; the ratios are the result (absolute times
depend on the machine and its load, which it prints: the load average and the number of CPUs).  With
--runs N each row is measured N times and the median ratio is printed with its range.  --malloc keep
measures both under the allocator settings `attnlab run` uses (attnlab.parallel.keep_freed_memory: glibc
keeps freed memory instead of unmapping it and faulting it in again); the default is glibc's own settings,
what a process that does not ask for them gets.  --device cuda times both on the GPU instead, by wall time
between two synchronisations (CPU time says nothing of a GPU's work); the tensors are made on the device.
--reps takes 1..1000, --runs 1..100, --threads 1..1024.  --json FILE writes the rows atomically (the
destination is checked before anything is measured); with --json - the JSON alone goes to stdout and the
table to stderr.  Exits 0 whatever the ratios: it reports, it does not judge.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnlab.atomic_io import check_json_dest, write_json_dest  # noqa: E402
from attnlab.errors import ArgumentParser, UsageError  # noqa: E402
from attnlab.run_args import positive_int  # noqa: E402

#: the largest --reps and --runs (a row is measured reps x runs times, each a fraction of a second to
#: seconds: --reps 10**20 was accepted and never ended) and --threads
MAX_REPS, MAX_RUNS, MAX_THREADS = 1000, 100, 1024


def _cpu_ms(fn) -> float:
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) * 1e3


def _cuda_ms(fn) -> float:
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def rows():
    from attnlab.layers import continuous_attention, fenchel_attention

    return [
        ("fenchel exact, n = d = 64", (8, 4, 64, 64), lambda q, k, v: fenchel_attention(q, k, v, alpha=1.0), 3.0),
        ("fenchel exact, L = 256, d = 64", (2, 4, 256, 64), lambda q, k, v: fenchel_attention(q, k, v, alpha=1.0),
         4.0),
        ("cts_softmax, L = 256", (2, 4, 256, 64), lambda q, k, v: continuous_attention(q, k, v, kind="cts_softmax"),
         2.0),
        ("kernel_sparsemax, L = 256", (2, 4, 256, 64),
         lambda q, k, v: continuous_attention(q, k, v, kind="kernel_sparsemax"), 2.0),
    ]


def measure(shape, f, reps: int, device: str = "cpu"):
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*shape, generator=g).to(device).requires_grad_() for _ in range(3))
    clock = _cuda_ms if device == "cuda" else _cpu_ms

    def step(fn):
        def run():
            fn(q, k, v).sum().backward()
            for x in (q, k, v):
                x.grad = None
        return run

    base, mine = step(F.scaled_dot_product_attention), step(f)
    base(), mine()                                                   # warm-up
    tb, tm = [], []
    for _ in range(reps):                                            # interleaved, best of reps
        tb.append(clock(base))
        tm.append(clock(mine))
    return min(tb), min(tm)


def main(argv=None) -> int:
    import torch

    ap = ArgumentParser(prog="python benchmarks/layer_speed.py", description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=positive_int("--reps", MAX_REPS), default=5,
                    help=f"timings of each side per row, the best one kept (1..{MAX_REPS}; default 5)")
    ap.add_argument("--runs", type=positive_int("--runs", MAX_RUNS), default=1,
                    help=f"measure each row this many times (median, range; 1..{MAX_RUNS}; default 1)")
    ap.add_argument("--threads", type=positive_int("--threads", MAX_THREADS), default=1,
                    help=f"torch CPU threads (1..{MAX_THREADS}; default 1)")
    ap.add_argument("--malloc", choices=("default", "keep"), default="default",
                    help="glibc's own allocator settings (default), or those `attnlab run` uses (keep_freed_memory)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="time on the CPU (CPU time of this process) or on the GPU (wall time, synchronised)")
    ap.add_argument("--json", default=None, help="write the rows as JSON to this file ('-' = stdout)")
    args = ap.parse_args(argv)
    check_json_dest(args.json)                  # before measuring: a folder or an unwritable path, not after
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available here (torch.cuda.is_available() is False)")
    where = (f"wall time on {torch.cuda.get_device_name()}" if args.device == "cuda"
             else f"CPU time, {args.threads} thread(s)")
    if args.malloc == "keep":
        from attnlab.parallel import keep_freed_memory

        if not keep_freed_memory():
            raise UsageError("--malloc keep: this C library has no glibc mallopt (or ATTNLAB_MALLOC=default is set)")
    out = []
    shown = sys.stderr if args.json == "-" else sys.stdout     # --json -: stdout holds the JSON alone
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"forward + backward, float32, {where}, best of {args.reps}, "
          f"allocator: {'kept freed memory' if args.malloc == 'keep' else 'glibc default'}"
          + (f", {args.runs} runs" if args.runs > 1 else "")
          + (f"; load average {load[0]:.2f} on {os.cpu_count()} CPUs" if load else ""), file=shown)
    for name, shape, f, target in rows():
        runs = [measure(shape, f, args.reps, args.device) for _ in range(args.runs)]
        ratios = [tm / tb for tb, tm in runs]
        ratio = statistics.median(ratios)
        tb, tm = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        out.append({"row": name, "shape": list(shape), "sdpa_ms": tb, "layer_ms": tm, "ratio": ratio,
                    "ratios": ratios, "target": target, "load_average": load[0] if load else None,
                    "malloc": args.malloc, "device": args.device,
                    "device_name": torch.cuda.get_device_name() if args.device == "cuda" else None})
        spread = f" [{min(ratios):.2f}, {max(ratios):.2f}]" if len(ratios) > 1 else ""
        print(f"  {name:32s} {str(shape):18s} SDPA {tb:8.2f} ms   layer {tm:8.2f} ms   "
              f"ratio {ratio:6.2f}x{spread} (target <= {target:g}x)", file=shown)
    if args.json == "-":
        print(json.dumps(out, indent=2))
    else:
        write_json_dest(args.json, out)         # atomically (None: no --json, nothing written)
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
