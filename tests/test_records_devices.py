"""benchmarks/records_devices.py: the same runs' records on two devices, metric by metric."""
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copy(src: Path, root: Path) -> Path:
    dst = root / src.parent.parent.name / src.parent.name / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return dst


def test_differences_per_metric_without_timings(benchmark_script, tmp_path, capsys):
    mod = benchmark_script("records_devices")
    src = sorted((ROOT / "results").glob("kernel-ecg/*/*-seed0.json"))[0]
    _copy(src, tmp_path / "cpu")
    moved = _copy(src, tmp_path / "gpu")
    rec = json.loads(moved.read_text())
    kept = [m for m in rec["metrics"] if not m["metric"].endswith("seconds")]
    timed = [m for m in rec["metrics"] if m["metric"].endswith("seconds")]
    assert kept and timed
    kept[0]["value"] = kept[0]["value"] * 1.001 + 0.001    # one metric moved on the "GPU"
    for m in timed:
        m["value"] *= 3                                      # timings are left out
    rec["device_name"] = "cuda:0 (a GPU)"
    moved.write_text(json.dumps(rec))
    pairs = mod.compare(mod.rows(tmp_path / "cpu")[0], mod.rows(tmp_path / "gpu")[0])
    assert len(pairs) == len(kept) and not any(p["metric"].endswith("seconds") for p in pairs)
    moved_rows = [p for p in pairs if p["rel_diff"] > 0]
    assert len(moved_rows) == 1 and moved_rows[0]["metric"] == kept[0]["metric"]
    a = float(kept[0]["value"])
    b = (a - 0.001) / 1.001
    assert abs(moved_rows[0]["rel_diff"] - abs(a - b) / max(abs(a), abs(b))) < 1e-15
    assert mod.main([str(tmp_path / "cpu"), str(tmp_path / "gpu")]) == 0
    out = capsys.readouterr().out
    assert "cuda:0 (a GPU)" in out and f"{len(kept)} metric rows in both" in out

