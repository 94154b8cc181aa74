"""Benchmark: the training step with glibc's own allocator settings against keep_freed_memory.

`attnlab run` (and every fan-out worker) calls `attnlab.parallel.keep_freed_memory`, which keeps
the memory a training step frees in the process instead of unmapping it and faulting it in again at
the next step.  This script runs `benchmarks/epoch_cost.py` twice, one process each, on the same rows:
first with ATTNLAB_MALLOC=default (glibc's own settings: the reference), then with the setting
`attnlab run` uses, and prints ms/step of both and their ratio (reference / kept), one row per model.
The numbers a run trains to are the same either way (tests/test_training_speed.py counts the page
faults; the records do not depend on the allocator).

    python benchmarks/malloc.py [--experiments efa-temperature,kernel-forda] [--steps 5] [--json -]

Run it on an otherwise idle machine; the load average is printed with each half.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from attnlab.errors import ArgumentParser, UsageError

ROOT = Path(__file__).resolve().parents[1]


def measure(mode: str, experiments: str, steps: int, max_seconds: float) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "epoch_cost.py"), "--experiments", experiments,
           "--steps", str(steps), "--max-seconds", str(max_seconds), "--json", "-"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "ATTNLAB_MALLOC": mode})
    if out.returncode:
        raise SystemExit(out.stderr.strip() or f"epoch_cost.py exited with {out.returncode}")
    return json.loads(out.stdout)


def main(argv=None) -> int:
    ap = ArgumentParser(prog="benchmarks/malloc.py", description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", default="efa-temperature,kernel-forda",
                    help="comma list passed to benchmarks/epoch_cost.py (default efa-temperature,kernel-forda)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per row (default 5)")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="per row, as in epoch_cost.py (default 10)")
    ap.add_argument("--json", default=None, metavar="PATH", help="write the rows as JSON ('-' = stdout)")
    args = ap.parse_args(argv)
    if args.steps < 1:
        raise UsageError(f"--steps must be an integer >= 1; got {args.steps}")
    runs = {mode: measure(mode, args.experiments, args.steps, args.max_seconds) for mode in ("default", "keep")}
    ref = {(r["experiment"], r.get("model"), r.get("setting"), r.get("config")): r for r in runs["default"]["rows"]}
    rows = []
    for r in runs["keep"]["rows"]:
        key = (r["experiment"], r.get("model"), r.get("setting"), r.get("config"))
        if "ms_per_step" not in r or key not in ref or "ms_per_step" not in ref[key]:
            continue
        rows.append({"experiment": key[0], "model": key[1], "setting": key[2], "config": key[3],
                     "ms_default": ref[key]["ms_per_step"], "ms_keep": r["ms_per_step"],
                     "ratio": ref[key]["ms_per_step"] / r["ms_per_step"]})
    summary = {"rows": rows, "cpu": runs["keep"]["cpu"], "torch": runs["keep"]["torch"],
               "load": {m: [runs[m]["load_start"][0], runs[m]["load_end"][0]] for m in runs},
               "malloc": {m: runs[m].get("malloc") for m in runs}}
    if args.json == "-":
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{summary['cpu']}, torch {summary['torch']}, 1 thread; load average (1 min) default half "
          f"{summary['load']['default'][0]:.2f} -> {summary['load']['default'][1]:.2f}, keep half "
          f"{summary['load']['keep'][0]:.2f} -> {summary['load']['keep'][1]:.2f}")
    print(f"{'experiment':<18} {'model':<22} {'config':<8} {'ms/step default':>16} {'ms/step keep':>13} {'ratio':>6}")
    for r in rows:
        print(f"{r['experiment']:<18} {str(r['model']):<22} {str(r['config']):<8} {r['ms_default']:>16.1f} "
              f"{r['ms_keep']:>13.1f} {r['ratio']:>6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
