#!/usr/bin/env bash
# The GPU measurements of docs/costs.md ("On a GPU") and docs/layers.md ("Speed") as one prepared run, for a
# machine with a GPU and many CPU cores whose own python3 holds torch (nothing need be fetched there):
#
#   ATTNLAB_DATA=/path/to/data bash benchmarks/device_run.sh OUTDIR [cuda|cpu]
#
# In the repository root.  It installs attnlab editable without its dependencies (offline; the training code
# needs none of python-flint, cvxpy, entmax or latex2mathml), then, in this order (the GPU alone while it is timed):
# 1. benchmarks/epoch_cost.py on the GPU (--steps 10 --max-seconds 3), and meanwhile the same rows on one
#    thread of this machine's own CPU, one process per paper (--steps 5 --max-seconds 4);
# 2. benchmarks/layer_speed.py on the GPU;
# 3. three short runs at --quick, seed 0, on the CPU and on the GPU (efa-synthetic, kernel-ecg, bidir-tabular-sim
#    ATN), compared by benchmarks/records_devices.py;
# 4. benchmarks/epoch_cost_compare.py: s/epoch of both and the 5x target; layer_speed.py on one CPU thread.
# OUTDIR gets at most 8 files, none in sub-folders: epoch-front.json (the GPU's rows), epoch-cpu1.json (one CPU
# thread's), compare.md, layer-front.json, layer-cpu1.json, records.txt, records.tgz (both results folders),
# log.txt.  The second argument cpu puts the CPU in the GPU's place: a check of this script where no GPU is (set
# EXPERIMENTS to a few rows then, e.g. EXPERIMENTS=efa-synthetic).  BUDGET (seconds, default 540) bounds the
# whole run, so that it ends inside a 10-minute command with what it measured; LIMIT (default 300) bounds
# each epoch_cost run.
set -uo pipefail
out=${1:?usage: ATTNLAB_DATA=... bash benchmarks/device_run.sh OUTDIR [cuda|cpu]}
dev=${2:-cuda}
case "$dev" in cuda|cpu) ;; *) echo "device_run.sh: the device must be cuda or cpu; got '$dev'" >&2; exit 2 ;; esac
experiments=${EXPERIMENTS:-all}
limit=${LIMIT:-300}
deadline=$((SECONDS + ${BUDGET:-540}))
py=${PYTHON:-python3}
mkdir -p "$out" || exit 2
tmp=$(mktemp -d)
log="$out/log.txt"
export PYTHONUNBUFFERED=1
say() { echo "[device_run $(date +%H:%M:%S), ${SECONDS}s] $*" | tee -a "$log"; }
within() { local want=$1 left=$((deadline - SECONDS)); ((left < want)) && want=$left; ((want < 1)) && want=1; echo "$want"; }

$py -m pip install -q --no-deps --no-build-isolation --no-index -e . >>"$log" 2>&1 || { say "install failed"; exit 1; }
$py -c "import torch, attnlab; print('torch', torch.__version__, '| cuda', torch.cuda.is_available(),
torch.cuda.get_device_name() if torch.cuda.is_available() else '')" 2>&1 | tee -a "$log"

say "1. epoch_cost on $dev; one CPU thread per paper meanwhile"
papers=$([ "$experiments" = all ] && echo "efa bidir fenchel kernel" || echo "$experiments" | tr , ' ')
for p in $papers; do
    OMP_NUM_THREADS=1 timeout "$(within "$limit")" $py benchmarks/epoch_cost.py --experiments "$p" --steps 5 \
        --max-seconds 4 --json "$tmp/cpu-$p.json" >"$tmp/cpu-$p.log" 2>&1 &
done
timeout "$(within "$limit")" $py benchmarks/epoch_cost.py --experiments "$experiments" --device "$dev" --steps 10 \
    --max-seconds 3 --json "$out/epoch-front.json" >>"$log" 2>&1 || say "epoch_cost on $dev: exit $?"

say "2. layer_speed on $dev"
timeout "$(within 90)" $py benchmarks/layer_speed.py --device "$dev" --runs 3 --json "$out/layer-front.json" 2>&1 \
    | tee -a "$log"

say "3. records: --quick, seed 0, on the CPU and on $dev"
for d in cpu "$dev"; do
    for run in "efa-synthetic" "kernel-ecg" "bidir-tabular-sim --models ATN"; do
        # shellcheck disable=SC2086
        timeout "$(within 60)" $py -m attnlab run $run --quick --seeds 1 --device "$d" \
            --results-dir "$tmp/records-$d" >>"$tmp/records.log" 2>&1 || say "attnlab run $run on $d: exit $?"
    done
done
$py benchmarks/records_devices.py "$tmp/records-cpu" "$tmp/records-$dev" >"$out/records.txt" 2>&1
tar czf "$out/records.tgz" -C "$tmp" $(cd "$tmp" && ls -d records-* 2>/dev/null) 2>/dev/null
tail -4 "$out/records.txt" | tee -a "$log"

say "4. the CPU rows (waiting for them), the table, layer_speed on one CPU thread"
wait
cat "$tmp"/cpu-*.log >>"$log" 2>/dev/null
# the per-paper runs' rows in one file (the first one's machine fields)
$py - "$out/epoch-cpu1.json" "$tmp"/cpu-*.json <<'EOF' 2>&1 | tee -a "$log"
import json, sys
parts = []
for p in sys.argv[2:]:
    try:
        parts.append(json.load(open(p)))
    except (OSError, ValueError) as exc:
        print(f"skipping {p}: {exc}")
if parts:
    merged = dict(parts[0], rows=[r for d in parts for r in d["rows"]])
    json.dump(merged, open(sys.argv[1], "w"), indent=1)
    print(f"epoch-cpu1.json: {len(merged['rows'])} rows from {len(parts)} runs")
EOF
if [ -f "$out/epoch-cpu1.json" ] && [ -f "$out/epoch-front.json" ]; then
    $py benchmarks/epoch_cost_compare.py "$out/epoch-cpu1.json" "$out/epoch-front.json" --markdown "$out/compare.md" \
        2>&1 | head -2 | tee -a "$log"
fi
timeout "$(within 90)" $py benchmarks/layer_speed.py --device cpu --runs 3 --json "$out/layer-cpu1.json" 2>&1 \
    | tee -a "$log"
rm -rf "$tmp"
say "done: $(ls "$out" | tr '\n' ' ')"
