"""Benchmark: where one training step of an experiment runner spends its time, host against device.

    python benchmarks/step_profile.py [--experiments efa-instacart,kernel-time-warping] [--rows 2]
                                      [--device cuda] [--steps 5]

For the first --rows rows of each experiment, built exactly as benchmarks/epoch_cost.py builds them (the
runner's model, data and step), 5 warm-up steps and then --steps steps under torch.profiler: the table
of operators by host (self CPU) time, and per step the host time, the device time and the number of
device kernels.  A step whose host time is many times its device time is bound by launching kernels,
not by arithmetic (docs/costs.md, "On a GPU"); on a CPU the device columns are empty.

A row with no step to profile is named with the reason, in one line: bidir-toy-corpus trains with full-batch
L-BFGS (epoch_cost.py times the runner's own `train`, not a step), and a row whose data set is not found is
skipped.  When no row at all is left to profile, that line is the error (exit 2).
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

from attnlab.errors import ArgumentParser, UsageError  # noqa: E402


def main(argv=None) -> int:
    import epoch_cost as ec

    ap = ArgumentParser(prog="benchmarks/step_profile.py", description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", default="efa-instacart,kernel-time-warping,bidir-tabular-sim",
                    help="comma list of epoch_cost.py experiment ids or papers")
    ap.add_argument("--rows", type=int, default=1, help="rows (models) of each experiment to profile (default 1)")
    ap.add_argument("--steps", type=int, default=5, help="profiled steps per row, after 5 warm-up steps (default 5)")
    ap.add_argument("--device", default="cuda", help="cuda[:N] (default) or cpu")
    args = ap.parse_args(argv)
    names = ec.parse_experiments(args.experiments)
    if names is None:
        raise UsageError(f"--experiments must be a comma list of {', '.join(ec.EXPERIMENTS)} or "
                         f"{', '.join(ec.PAPERS)}; got {args.experiments!r}")
    for flag, v in (("--rows", args.rows), ("--steps", args.steps)):
        if not 1 <= v <= 1000:
            raise UsageError(f"{flag} must be an integer in 1..1000; got {v}")
    ec.set_device(args.device)
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ec.DEVICE.type == "cuda" else [])
    unprofiled, said, profiled = [], 0, 0      # (those rows were skipped silently: no output at all, exit 0)
    for name in names:
        for case in itertools.islice(ec.cases(name, 10 + args.steps), args.rows):
            if isinstance(case, ec.Skip):
                unprofiled.append(f"{name} {case.config}: not profiled, its data set is not here ({case.reason})")
                continue
            if case.step is None:
                why = ("it trains with full-batch L-BFGS (the runner's own train loop, timed whole by epoch_cost.py), "
                       "not in steps" if case.timer is not None else "epoch_cost.py builds no training step for it")
                unprofiled.append(f"{name} {case.model} {case.setting}: no step profile, {why}")
                continue
            for line in unprofiled[said:]:      # (said in order, before the next profile)
                print(line, flush=True)
            said = len(unprofiled)
            for _ in range(5):
                case.step()
            ec.synchronize()
            with profile(activities=acts) as prof:
                for _ in range(args.steps):
                    case.step()
                ec.synchronize()
            ka = prof.key_averages()
            print(f"==== {name} {case.model} {case.setting} ({ec.device_name()})")
            print(ka.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
            host = sum(e.self_cpu_time_total for e in ka) / 1e3 / args.steps
            dev = sum(getattr(e, "self_device_time_total", 0) for e in ka) / 1e3 / args.steps
            kernels = sum(e.count for e in ka if e.device_type.name == "CUDA") / args.steps
            print(f"per step: host {host:.2f} ms, device {dev:.2f} ms, {kernels:.0f} device kernels", flush=True)
            profiled += 1
    if not profiled and unprofiled:
        raise UsageError(f"--experiments {args.experiments}: nothing to profile: " + "; ".join(unprofiled))
    for line in unprofiled[said:]:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
