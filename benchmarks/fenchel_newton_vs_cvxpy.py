"""Fenchel-dual attention: speed of the exact solvers, measured side by side in one run.

1. Per instance, at equal accuracy: cvxpy (CLARABEL, tight tolerances) on the primal (3) against float64
   Newton on the dual (7) (numpy, and torch), both to max |p - p_ref| <= 1e-8 where p_ref is an
   mpmath-free reference: Newton to a gradient norm of 1e-15 (its worst first-order residual over the
   instances, the largest |gradient of (7)| at lambda_ref, is printed).  Ratio = cvxpy / Newton.
2. Batched Newton throughput (torch, float32 and float64): problems solved per second.
3. The FenchelAttention layer's forward+backward against softmax attention
   (torch.nn.functional.scaled_dot_product_attention) at n = d = 64, batch 32, on this device.

    python benchmarks/fenchel_newton_vs_cvxpy.py [--instances 20] [--n 10] [--d 4] [--device cpu|cuda] [--threads 1]

--instances takes 1..10000, --n (templates) 1..1000, --d (dimension) 1..1000, --threads 1..1024.

Targets: Newton >= 100x faster than cvxpy per instance at equal or better accuracy; the layer within
3x of softmax attention (forward + backward, float32).  The script prints the measured ratios; it asserts nothing.

Times are the CPU time of this process (time.process_time), best of several repetitions, so that a
loaded machine (printed: the load average) slows both sides of a ratio alike instead of charging the
longer call for the time slices other processes take; the fast calls are timed in groups of 20.
With --device cuda the layer and throughput parts use wall-clock time (time.perf_counter).
"""
from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np

from attnlab.errors import ArgumentParser, UsageError
from attnlab.run_args import positive_int

CLOCK = time.process_time
MAX_INSTANCES, MAX_SIZE, MAX_THREADS = 10_000, 1000, 1024     # --instances; --n and --d; --threads


def _best(fn, reps, inner: int = 1):
    """(best over reps of the mean CPU time of `inner` consecutive calls, the last result)."""
    ts = []
    out = None
    for _ in range(reps):
        t = CLOCK()
        for _ in range(inner):
            out = fn()
        ts.append((CLOCK() - t) / inner)
    return min(ts), out


def per_instance(n_inst: int, n: int, d: int):
    import torch

    from attnlab.numerics import entropic_dual as ed

    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_inst):
        T = rng.normal(size=(n, d))
        u = rng.dirichlet(np.ones(n))
        z = rng.normal(size=d)
        a = float(10 ** rng.uniform(-1, 0.5))
        lam_ref, _ = ed.solve_dual_newton(T, u, z, a, tol=1e-15)
        res_ref = ed.dual_kkt_residual(lam_ref, T, u, z, a)     # the reference's first-order residual
        p_ref = ed.tilted(lam_ref, T, u)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                t_cvx, (p_cvx, _) = _best(lambda: ed.solve_primal_cvxpy(T, u, z, a, **ed.TIGHT), 5)
            except ed.SolverError:
                continue
        t_np, (lam_np, _) = _best(lambda: ed.solve_dual_newton(T, u, z, a, tol=1e-10), 5, 20)
        Tt, lu, zt = torch.tensor(T), torch.tensor(np.log(u)), torch.tensor(z)
        t_th, lam_th = _best(lambda: ed.solve_dual_newton_torch(Tt, lu, zt, a, tol=1e-10), 5, 20)
        rows.append(dict(cvxpy=t_cvx, newton_np=t_np, newton_torch=t_th, residual_ref=res_ref,
                         err_cvx=float(np.max(np.abs(p_cvx - p_ref))),
                         err_np=float(np.max(np.abs(ed.tilted(lam_np, T, u) - p_ref))),
                         err_torch=float(np.max(np.abs(ed.tilted(lam_th.numpy(), T, u) - p_ref)))))
    return rows


def throughput(device, dtype, B=4096, n=32, d=16):
    import torch

    from attnlab.numerics.entropic_dual import solve_dual_newton_torch

    g = torch.Generator().manual_seed(0)
    T = torch.randn(B, n, d, generator=g, dtype=dtype).to(device) / d ** 0.5
    z = torch.randn(B, d, generator=g, dtype=dtype).to(device)
    lu = torch.log(torch.rand(B, n, generator=g, dtype=dtype)).to(device)
    al = (torch.rand(B, generator=g, dtype=dtype) * 3 + 0.1).to(device)

    def run():
        lam = solve_dual_newton_torch(T, lu, z, al)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return lam

    run()
    t, _ = _best(run, 3)
    return B / t


def layer_vs_softmax(device, dtype, reps=5):
    import torch
    import torch.nn.functional as F

    from attnlab.numerics.fenchel_attention import fenchel_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(32, 64, 64, generator=g, dtype=dtype).to(device).requires_grad_() for _ in range(3))

    def step(f):
        def run():
            out = f()
            out.sum().backward()
            if device.type == "cuda":
                torch.cuda.synchronize()
        return run

    sd = step(lambda: F.scaled_dot_product_attention(q, k, v))
    fe = step(lambda: fenchel_attention(q, k, v, alpha=1.0))
    sd(), fe()                                                       # warm-up
    ts, tf = [], []
    for _ in range(reps):                                            # interleaved, best of reps
        ts.append(_best(sd, 1)[0])
        tf.append(_best(fe, 1)[0])
    return min(ts), min(tf)


def per_instance_summary(rows: list) -> None:
    """Print part 1: times, accuracies and ratios over the instances cvxpy solved (`rows`, at least one)."""
    r_np = np.array([r["cvxpy"] / r["newton_np"] for r in rows])
    r_th = np.array([r["cvxpy"] / r["newton_torch"] for r in rows])
    print(f"   reference p_ref (Newton, tol 1e-15): worst first-order residual max|b - lambda/alpha - h(lambda)| "
          f"{max(r['residual_ref'] for r in rows):.1e}")
    print(f"   cvxpy CLARABEL (tight): median {np.median([r['cvxpy'] for r in rows]) * 1e3:.2f} ms, "
          f"worst accuracy {max(r['err_cvx'] for r in rows):.1e}")
    print(f"   Newton numpy          : median {np.median([r['newton_np'] for r in rows]) * 1e3:.3f} ms, "
          f"worst accuracy {max(r['err_np'] for r in rows):.1e}")
    print(f"   Newton torch float64  : median {np.median([r['newton_torch'] for r in rows]) * 1e3:.3f} ms, "
          f"worst accuracy {max(r['err_torch'] for r in rows):.1e}")
    print(f"   ratio cvxpy / Newton numpy: median {np.median(r_np):.0f}x (min {r_np.min():.0f}x)   "
          f"cvxpy / Newton torch: median {np.median(r_th):.0f}x (min {r_th.min():.0f}x)   [target >= 100x]")


def main(argv=None) -> int:
    import torch

    ap = ArgumentParser(prog="python benchmarks/fenchel_newton_vs_cvxpy.py", description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=positive_int("--instances", MAX_INSTANCES), default=20,
                    help=f"random instances of part 1 (1..{MAX_INSTANCES}; default 20)")
    ap.add_argument("--n", type=positive_int("--n", MAX_SIZE), default=10,
                    help=f"templates per instance (part 1; 1..{MAX_SIZE}; default 10)")
    ap.add_argument("--d", type=positive_int("--d", MAX_SIZE), default=4,
                    help=f"dimension per instance (part 1; 1..{MAX_SIZE}; default 4)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=positive_int("--threads", MAX_THREADS), default=1,
                    help=f"torch CPU threads (1..{MAX_THREADS}; default 1)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: CUDA is not available here; use --device cpu")
    device = torch.device(args.device)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"torch {torch.__version__}, device {device}, threads {args.threads}, load average {load} "
          f"on {os.cpu_count()} CPUs; times are CPU times of this process")

    rows = per_instance(args.instances, args.n, args.d)
    print(f"\n1. per instance (n = {args.n}, d = {args.d}, {len(rows)} instances, alpha in [0.1, 3.2]); "
          "accuracy = max|p - p_ref|:")
    if rows:
        per_instance_summary(rows)
    else:                                       # (every instance skipped: no ratio to print)
        print(f"   cvxpy CLARABEL gave no answer within its tolerances on any of the {args.instances} instances: "
              "no ratio")

    global CLOCK
    if device.type == "cuda":
        CLOCK = time.perf_counter
    print("\n2. batched Newton throughput (B = 4096 problems, n = 32, d = 16, per-problem alpha):")
    for dt in (torch.float32, torch.float64):
        print(f"   {str(dt).replace('torch.', ''):8s}: {throughput(device, dt):,.0f} problems/s")

    print("\n3. layer forward+backward, batch 32, n = d = 64 (best of 5, interleaved; CPU time):")
    for dt in (torch.float32, torch.float64):
        ts, tf = layer_vs_softmax(device, dt)
        print(f"   {str(dt).replace('torch.', ''):8s}: softmax attention {ts * 1e3:.2f} ms, FenchelAttention "
              f"{tf * 1e3:.2f} ms, ratio {tf / ts:.1f}x   [target <= 3x in float32]")
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
