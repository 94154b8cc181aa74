"""Benchmark table: seconds per epoch on a GPU beside one CPU thread, from two stored runs of
benchmarks/epoch_cost.py (``--json``), one with ``--device cuda`` and one on the CPU of the same
machine.

    python benchmarks/epoch_cost_compare.py CPU.json GPU.json [--markdown PATH]

One row per (experiment, model, setting) at config ``full`` found in both files: the CPU's and the
GPU's s/epoch and their ratio (CPU / GPU: above 1 the GPU is faster), and whether it meets the 5x that
docs/costs.md sets as the target for a paper-size config.  Nothing is trained or timed here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnlab.errors import ArgumentParser, UsageError  # noqa: E402

TARGET = 5.0          # the GPU's speed-up per epoch a paper-size config should reach (docs/costs.md)
COLUMNS = ("experiment", "model", "setting", "CPU s/epoch", "GPU s/epoch", "CPU / GPU", "≥ 5×")


def load(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a JSON file of benchmarks/epoch_cost.py ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise UsageError(f"{path}: not a JSON file of benchmarks/epoch_cost.py (no 'rows' list)")
    return data


def rows(data: dict) -> dict:
    return {(r["experiment"], r["model"], r["setting"]): r for r in data["rows"]
            if "skipped" not in r and r.get("config") == "full"}


def table(cpu: dict, gpu: dict) -> list[dict]:
    a, b = rows(cpu), rows(gpu)
    out = []
    for key, rc in a.items():
        rg = b.get(key)
        if rg is None:
            continue
        ratio = rc["s_per_epoch"] / rg["s_per_epoch"]
        out.append({"experiment": key[0], "model": key[1], "setting": key[2],
                    "CPU s/epoch": f"{rc['s_per_epoch']:.3g}", "GPU s/epoch": f"{rg['s_per_epoch']:.3g}",
                    "CPU / GPU": f"{ratio:.2f}", "≥ 5×": "yes" if ratio >= TARGET else "no"})
    return out


def main(argv=None) -> int:
    ap = ArgumentParser(prog="benchmarks/epoch_cost_compare.py", description=__doc__.split("\n")[0])
    ap.add_argument("cpu", help="JSON of benchmarks/epoch_cost.py on one CPU thread")
    ap.add_argument("gpu", help="JSON of benchmarks/epoch_cost.py --device cuda, same machine")
    ap.add_argument("--markdown", default=None, metavar="PATH", help="write the table here (default: print it)")
    args = ap.parse_args(argv)
    cpu, gpu = load(args.cpu), load(args.gpu)
    if not str(gpu.get("device", "")).startswith("cuda"):
        raise UsageError(f"{args.gpu}: its rows were not measured with --device cuda (device {gpu.get('device')!r})")
    from attnlab.tables import frame, markdown

    out = table(cpu, gpu)
    met = sum(r["≥ 5×"] == "yes" for r in out)
    head = (f"{gpu['device']} beside one thread of its host CPU ({cpu['cpu']}); {met} of {len(out)} rows "
            f"at least {TARGET:g}x faster on the GPU.")
    text = head + "\n\n" + markdown(frame(out, COLUMNS)) + "\n"
    if args.markdown:
        Path(args.markdown).write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
