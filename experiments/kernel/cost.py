"""`attnlab run kernel-cost`: Table 6 / App. F of the kernel paper -- time and peak memory of one
forward + backward pass of every attention block, per batch, as ratios to discrete softmax.

The block is what differs between the models of Fig. 11: from the encoder's hidden states
h [b, L, D] and scores s [b, H, L] to the context [b, H, D].  Discrete softmax: softmax(s) h.
Continuous: ridge value function B = h^T F^T (F F^T + lambda I)^{-1} (Eq. 6), density parameters
(mu, sigma^2 from softmax(s); mixture parameters; kernel weights gamma), E_p[Psi] (closed form or
trapezoid on G points), c = B E_p[Psi].  Shapes are those of the paper's experiments (Tables 7, 8, 10).
Peak memory = the maximum of live tensor bytes over the pass above what was live before it (CPU:
torch profiler allocation events; CUDA: torch.cuda.max_memory_allocated).  `--device cuda` times on
the GPU (synchronised).
The paper's Table 6 reports whole-epoch wall clock on an A40 for the kernel methods only; ratios to
discrete softmax on this CPU are what is comparable across machines.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import os
import statistics
import time

import torch

from attnlab.experiment import metric_row
from attnlab.run_args import experiment_parser, seeds_of
from attnlab.experiments.kernel import common as C

EXPERIMENT = "kernel-cost"
KINDS = ("discrete_softmax", "cts_softmax", "cts_sparsemax", "gaussian_mixture", "kernel_softmax", "kernel_sparsemax")
# (batch, heads H, length L, value dim D, basis N, inducing I, grid G)
SETTINGS = {
    "FordA": dict(b=64, H=1, L=500, D=128, N=256, I=500, G=500),
    "MIT BIH": dict(b=64, H=1, L=187, D=512, N=24, I=187, G=187),
    "uWave": dict(b=25, H=100, L=95, D=1, N=128, I=256, G=100),
}
QUICK = {"tiny": dict(b=4, H=2, L=20, D=8, N=8, I=10, G=20)}


def make_block(kind: str, s: dict, device: str = "cpu"):
    from attnlab.numerics.continuous_layers import ContinuousAttention, GaussianBasis, moments_from_discrete
    from attnlab.experiments.models.kernel_models import ridge_operator

    if kind == "discrete_softmax":
        return lambda h, sc, gamma, mix: torch.softmax(sc, -1) @ h                  # [b, H, D]
    basis = GaussianBasis(s["N"], (0.025, 0.1, 0.5) if s["N"] >= 3 else (0.1,))
    L = s["L"]
    G = ridge_operator(torch.linspace(1 / (2 * L), 1 - 1 / (2 * L), L), basis, 0.5).to(device)
    attn = ContinuousAttention(kind, basis, s["G"], s["I"], "laplace", 1.0 / s["I"]).to(device)

    def block(h, sc, gamma, mix):
        B = h.transpose(1, 2) @ G                                                     # [b, D, N]
        if kind in ("cts_softmax", "cts_sparsemax"):
            mu, s2 = moments_from_discrete(torch.softmax(sc, -1))
            r = attn(mu=mu, sigma2=s2)
        elif kind == "gaussian_mixture":
            w, m, v = mix.unbind(-2)
            r = attn(weights_logits=w, mu=torch.sigmoid(m), sigma2=torch.nn.functional.softplus(v) + 1e-3)
        else:
            r = attn(gamma=gamma)
        return r @ B.transpose(1, 2)                                                  # [b, H, D]
    return block


def inputs(s: dict, seed: int, device: str = "cpu"):
    g = torch.Generator().manual_seed(seed)
    shapes = [(s["b"], s["L"], s["D"]), (s["b"], s["H"], s["L"]), (s["b"], s["H"], s["I"]), (s["b"], s["H"], 3, 10)]
    return [torch.randn(*sh, generator=g).to(device).requires_grad_() for sh in shapes]


def peak_bytes(fn) -> int:
    """Peak live CPU tensor bytes while running fn (allocation/free events of the torch profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    cur = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        cur += e.self_cpu_memory_usage
        peak = max(peak, cur)
    return int(peak)


MAX_REPEATS = 10_000         # timed repetitions per block


def measure(kind: str, s: dict, seed: int, repeats: int, device: str = "cpu") -> tuple[float, int]:
    block = make_block(kind, s, device)
    xs = inputs(s, seed, device)
    cuda = device == "cuda"

    def step():
        out = block(*xs)
        out.square().mean().backward()
        for x in xs:
            x.grad = None
        if cuda:
            torch.cuda.synchronize()

    step()                                                    # warm-up (allocator, oneDNN primitives)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    if cuda:                                                  # peak above what was live before the pass
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        return statistics.median(times), int(torch.cuda.max_memory_allocated() - base)
    return statistics.median(times), peak_bytes(step)


def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, "Table 6 / App. F: time and peak memory per batch (forward + backward) "
                          "of each attention block, as ratios to discrete softmax.", default_seeds=1)
    p.add_argument("--repeats", type=int, default=5, help="timed repetitions per block (median reported)")
    p.add_argument("--settings", default=None, help="comma list of " + ",".join(SETTINGS))
    args = p.parse_args(argv)
    if not 1 <= args.repeats <= MAX_REPEATS:     # 10**20 repetitions ran until killed
        raise UsageError(f"--repeats must be an integer in 1..{MAX_REPEATS}; got {args.repeats}")
    settings = QUICK if args.quick else SETTINGS
    if args.settings is not None:
        from attnlab.run_args import parse_list

        sel = parse_list(args.settings, tuple(SETTINGS), "--settings")
        if args.quick:                  # was ignored silently
            raise UsageError(f"--settings {args.settings}: --quick measures its one small shape "
                             f"({', '.join(QUICK)}); drop --quick to measure {', '.join(sel)}")
        settings = {k: SETTINGS[k] for k in dict.fromkeys(sel)}
    C.torch_setup()
    from attnlab.parallel import set_torch_threads

    set_torch_threads(args)             # (--threads was accepted and ignored: the timings were one thread's)
    name = "quick" if args.quick else "full"
    cfg = {"settings": settings, "repeats": args.repeats, "threads": torch.get_num_threads()}
    for seed in seeds_of(args):
        ctx = C.make_context(args, EXPERIMENT, name, cfg, "blocks", seed, None)
        if ctx.done():
            continue
        rows, table = [], []
        dev = ctx.device
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        for sname, s in settings.items():
            res = {k: measure(k, s, seed, args.repeats, dev) for k in KINDS}
            t0, m0 = res["discrete_softmax"]
            for k, (t, m) in res.items():
                rows += [metric_row(sname, C.DISPLAY[k], "seconds_per_batch", t),
                         metric_row(sname, C.DISPLAY[k], "peak_MB", m / 2 ** 20),
                         metric_row(sname, C.DISPLAY[k], "time_ratio", t / t0),
                         metric_row(sname, C.DISPLAY[k], "memory_ratio", m / max(m0, 1))]
                table.append(f"  {sname:<8} {C.DISPLAY[k]:<18} {1e3 * t:9.2f} ms  x{t / t0:6.2f}   "
                             f"{m / 2 ** 20:9.2f} MB  x{m / max(m0, 1):6.2f}")
            # the one ratio the paper's Table 6 allows (it times the two kernel families only, per epoch)
            rows.append(metric_row(sname, C.DISPLAY["kernel_sparsemax"], "time_ratio_to_kernel_softmax",
                                   res["kernel_sparsemax"][0] / res["kernel_softmax"][0]))
        load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        ctx.write_record(rows, extra={"shapes": settings, "load_average_1min": [load_before, load_after]})
        print(f"seed {seed}: forward+backward per batch on {dev}, {torch.get_num_threads()} thread(s); "
              "ratios to Discrete Softmax")
        print("\n".join(table))
    return 0
