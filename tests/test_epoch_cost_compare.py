"""benchmarks/epoch_cost_compare.py: the GPU-beside-CPU table is read from two stored epoch_cost runs."""
import json

from attnlab import cli


def _run(device, rows):
    return {"device": device, "cpu": "some cpu", "rows": rows}


def _row(model, s, config="full"):
    return {"experiment": "e", "model": model, "setting": "s", "config": config, "s_per_epoch": s}


def test_ratio_is_cpu_over_gpu_per_full_row(benchmark_script, tmp_path, capsys):
    mod = benchmark_script("epoch_cost_compare")
    cpu = _run("cpu (x)", [_row("A", 10.0), _row("B", 1.0), _row("A", 99.0, "full-es"), _row("C", 3.0),
                           {"experiment": "e", "config": "full", "skipped": "no data"}])
    gpu = _run("cuda (H)", [_row("A", 1.0), _row("B", 2.0), _row("A", 1.0, "full-es")])
    table = {r["model"]: r for r in mod.table(cpu, gpu)}
    assert set(table) == {"A", "B"}                    # only config full, only rows in both
    assert table["A"]["CPU / GPU"] == "10.00" and table["A"]["≥ 5×"] == "yes"
    assert table["B"]["CPU / GPU"] == "0.50" and table["B"]["≥ 5×"] == "no"
    (tmp_path / "c.json").write_text(json.dumps(cpu))
    (tmp_path / "g.json").write_text(json.dumps(gpu))
    assert mod.main([str(tmp_path / "c.json"), str(tmp_path / "g.json")]) == 0
    out = capsys.readouterr().out
    assert "1 of 2 rows at least 5x faster" in out and "| e | A | s | 10 | 1 | 10.00 | yes |" in out


def test_a_cpu_file_in_the_gpu_place_is_refused(benchmark_script, tmp_path, capsys):
    mod = benchmark_script("epoch_cost_compare")
    (tmp_path / "c.json").write_text(json.dumps(_run("cpu (x)", [])))
    assert cli.call(mod.main, [str(tmp_path / "c.json"), str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not measured with --device cuda" in err
