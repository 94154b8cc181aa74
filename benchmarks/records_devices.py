"""Records of the same runs on two devices, side by side: how far apart a GPU's records are from a CPU's.

    python benchmarks/records_devices.py CPU_DIR GPU_DIR [--json PATH]

Each folder is a results folder (``attnlab run ... --results-dir``: ``<experiment>/<config>/<name>.json``).
Every metric row that both folders hold for the same (experiment, config, setting, model, metric, seed) is
printed with both values and their relative difference |a - b| / max(|a|, |b|, 1e-12), timings left out
(metrics whose name ends in ``seconds``); then the largest difference per experiment and the devices each
folder's records name.  docs/costs.md states what to expect ("Records from the GPU equal the CPU's within
float rounding" for short runs; longer ones drift apart by training).  Reads records through
attnlab.results (unusable ones are skipped with a warning); trains nothing; exits 0 whatever the differences.
A folder holding no usable record is refused (one line, exit 2): there is nothing to compare.  --json FILE
is checked before the records are read and written atomically (a missing folder on its way is made, as
every attnlab --json does); with --json - the JSON alone goes to stdout and the table to stderr.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnlab.atomic_io import check_json_dest, write_json_dest  # noqa: E402
from attnlab.errors import ArgumentParser, UsageError  # noqa: E402


def rows(folder: Path, what: str = "folder") -> tuple[dict, set]:
    """{(experiment, config, setting, model, metric, seed): value} of the records under `folder`, timings left
    out, and the set of device names its records name; UsageError naming `what` (the argument) when the folder
    holds no usable record."""
    from attnlab.results import read_records, unique_rows

    if not folder.is_dir():
        raise UsageError(f"{what} {folder}: not a folder of results records (<experiment>/<config>/<name>.json)")
    files = sorted(folder.glob("*/*/*.json"))
    recs = read_records(files)
    if not recs:                                # ("0 metric rows in both", exit 0, said nothing of why)
        raise UsageError(f"{what} {folder}: no results records there (<experiment>/<config>/<name>.json)"
                         if not files else f"{what} {folder}: none of its {len(files)} record file(s) is usable "
                                           "(see the warnings above)")
    out = {}
    for rec, m in unique_rows(recs):
        if str(m["metric"]).endswith("seconds"):
            continue
        out[(rec["experiment"], rec["config"], m["setting"], m["model"], m["metric"], rec.get("seed"))] = float(m["value"])
    return out, {str(r.get("device_name") or r.get("device")) for r in recs}


def compare(cpu: dict, gpu: dict) -> list[dict]:
    out = []
    for key in sorted(set(cpu) & set(gpu), key=str):
        a, b = cpu[key], gpu[key]
        rel = abs(a - b) / max(abs(a), abs(b), 1e-12)
        out.append(dict(zip(("experiment", "config", "setting", "model", "metric", "seed"), key), cpu=a, gpu=b,
                        rel_diff=rel))
    return out


def main(argv=None) -> int:
    ap = ArgumentParser(prog="python benchmarks/records_devices.py", description=__doc__.split("\n")[0])
    ap.add_argument("cpu", help="results folder of the runs on the CPU")
    ap.add_argument("gpu", help="results folder of the same runs on the GPU")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON ('-' = stdout)")
    args = ap.parse_args(argv)
    check_json_dest(args.json)                  # before reading: a folder or an unwritable path, not after
    (cpu, cpu_dev), (gpu, gpu_dev) = rows(Path(args.cpu), "CPU folder"), rows(Path(args.gpu), "GPU folder")
    quiet = args.json == "-"
    shown = sys.stderr if quiet else sys.stdout     # --json -: stdout holds the JSON alone, the table on stderr
    pairs = compare(cpu, gpu)
    worst: dict[str, float] = {}
    for p in pairs:
        worst[p["experiment"]] = max(worst.get(p["experiment"], 0.0), p["rel_diff"])
        print(f"{p['experiment']:22s} {p['config']:8s} {str(p['setting'])[:14]:14s} {str(p['model'])[:22]:22s} "
              f"{p['metric']:12s} seed {p['seed']}  cpu {p['cpu']:.10g}  gpu {p['gpu']:.10g}  rel {p['rel_diff']:.2e}",
              file=shown)
    print(f"\n{len(pairs)} metric rows in both ({len(cpu)} on the CPU, {len(gpu)} on the GPU); devices: "
          f"CPU folder {', '.join(sorted(cpu_dev)) or 'none'}; GPU folder {', '.join(sorted(gpu_dev)) or 'none'}",
          file=shown)
    for exp, w in sorted(worst.items()):
        print(f"  {exp:22s} largest relative difference {w:.2e}", file=shown)
    if quiet:
        print(json.dumps(pairs, indent=1))
    else:
        write_json_dest(args.json, pairs)       # atomically (None: no --json, nothing written)
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
