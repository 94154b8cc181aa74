"""The experiment contract helpers: seeds, devices, atomic records, resume, summaries."""
import argparse
import io
import json
import sys

import pytest

from attnlab import atomic_io, devices, run_args
from attnlab import experiment as E
from attnlab.results import ci95, summarize


def test_parse_seeds():
    assert run_args.parse_seeds("3") == [0, 1, 2]
    assert run_args.parse_seeds("0,3,7") == [0, 3, 7]
    assert run_args.parse_seeds("2-4") == [2, 3, 4]
    for bad in ("0", "x", "-1", "1_0", "\u0663", "1e3", "2-1_0"):   # int() read '1_0' as 10, Arabic-Indic 3 as 3
        with pytest.raises(argparse.ArgumentTypeError, match="--seeds"):
            run_args.parse_seeds(bad)
    for bad in ("1_0", "\u0663", "+3"):
        with pytest.raises(argparse.ArgumentTypeError, match="--seed"):
            run_args.seed_value(bad)


def test_resolve_device():
    assert devices.resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="device must be one of"):
        devices.resolve_device("tpu")


def test_atomic_write_leaves_no_temp(tmp_path):
    p = atomic_io.atomic_write_json(tmp_path / "a" / "r.json", {"x": 1.5})
    assert json.loads(p.read_text()) == {"x": 1.5}
    assert [q.name for q in p.parent.iterdir()] == ["r.json"]


def test_records_resume_and_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seeds", "3", "--device", "cpu", "--quick", "--results-dir", str(tmp_path / "res"),
                         "--quiet", "--resume"])
    for ctx in E.contexts(args, "efa-demo", {"lr": 0.1}):
        assert not ctx.done()
        assert ctx.load_checkpoint() is None
        ctx.save_checkpoint({"epoch": 1})
        assert ctx.load_checkpoint() == {"epoch": 1}
        ctx.write_record([E.metric_row("s", "EFA", "mse", 1.0 + ctx.seed)])
        assert not ctx.checkpoint_path.exists()
        assert ctx.done()
    rows = summarize("efa", tmp_path / "res")
    r = [r for r in rows if r["model"] == "EFA"][0]
    assert r["n_seeds"] == 3 and r["ours_mean"] == pytest.approx(2.0) and r["config"] == "quick"
    assert r["ours_ci95"] == pytest.approx(ci95([1.0, 2.0, 3.0]))


def test_summary_pools_the_seeds_of_a_config_across_devices(tmp_path, monkeypatch):
    """Seeds of one config that ran on different devices are one row (as the verdicts pool them), and
    the device column names each device with its count of records."""
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seeds", "3", "--device", "cpu", "--quick", "--results-dir", str(tmp_path), "--quiet"])
    for ctx in E.contexts(args, "efa-demo", {"lr": 0.1}):
        path = ctx.write_record([E.metric_row("s", "EFA", "mse", 1.0 + ctx.seed)])
        if ctx.seed < 2:                     # as a record written on a GPU names it
            rec = json.loads(path.read_text())
            atomic_io.atomic_write_json(path, {**rec, "device": "cuda", "device_name": "cuda:GPU"})
    rows = [r for r in summarize("efa", tmp_path) if r["experiment"] == "efa-demo"]
    assert len(rows) == 1
    assert rows[0]["n_seeds"] == 3 and rows[0]["ours_mean"] == pytest.approx(2.0)
    cpu = json.loads(next((tmp_path / "efa-demo" / "quick").glob("*seed2.json")).read_text())["device_name"]
    assert rows[0]["device"] == "; ".join(sorted(["cuda:GPU ×2", f"{cpu} ×1"]))


def test_a_resumed_run_records_the_wall_time_of_its_earlier_invocations(tmp_path, monkeypatch):
    """wall_seconds of a resumed run = what the interrupted invocation had spent up to its checkpoint
    + this invocation, not this invocation alone."""
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet", "--resume"])
    first = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    first.t0 -= 1000.0                      # an invocation that ran 1,000 s before it was stopped
    first.save_checkpoint({"epoch": 7})
    second = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    assert second.load_checkpoint() == {"epoch": 7}
    rec = json.loads(second.write_record([E.metric_row("s", "EFA", "mse", 1.0)]).read_text())
    assert 1000.0 <= rec["wall_seconds"] < 1000.0 + 60
    # without --resume nothing is carried over
    fresh = E.context(p.parse_args(["--seed", "1", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"]),
                      "efa-demo", {"lr": 0.1}, 1)
    assert fresh.wall_seconds() < 60


def test_a_run_resumed_on_another_device_names_every_device(tmp_path, monkeypatch):
    """A checkpoint written on a GPU machine and finished on a CPU: the record's `devices` lists both,
    in order; a checkpoint from before devices were kept says so; a run never moved names one device."""
    import torch

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet", "--resume"])
    cpu = devices.device_description("cpu")
    monkeypatch.setattr(E, "device_description", lambda d: "cuda:GPU" if d == "cuda" else cpu)
    gpu = E.RunContext("efa-demo", 0, "cuda", False, {"lr": 0.1}, args)     # no GPU needed: nothing runs on it
    gpu.save_checkpoint({"epoch": 3})
    again = E.RunContext("efa-demo", 0, "cuda", False, {"lr": 0.1}, args)
    again.load_checkpoint()
    again.save_checkpoint({"epoch": 4})                       # same device again: not listed twice
    here = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    assert here.load_checkpoint() == {"epoch": 4}
    rec = json.loads(here.write_record([E.metric_row("s", "EFA", "mse", 1.0)]).read_text())
    assert rec["devices"] == ["cuda:GPU", cpu] and rec["device_name"] == cpu
    old = E.context(args, "efa-demo", {"lr": 0.1}, 1)
    old.save_checkpoint({"epoch": 1})
    state = torch.load(io.BytesIO(atomic_io.checked_torch_bytes(old.checkpoint_path)), weights_only=False)
    del state[E.DEVICES_KEY]
    torch.save(state, old.checkpoint_path)
    resumed = E.context(args, "efa-demo", {"lr": 0.1}, 1)
    resumed.load_checkpoint()
    assert json.loads(resumed.write_record([]).read_text())["devices"] == ["not recorded", cpu]
    one = E.context(args, "efa-demo", {"lr": 0.1}, 2)
    assert json.loads(one.write_record([]).read_text())["devices"] == [cpu]


def test_a_record_names_the_revision_its_run_started_under(tmp_path, monkeypatch):
    """A commit made while a long run trains does not change what its record says ran."""
    monkeypatch.setattr(E, "git_revision", lambda: "aaaaaaa")
    p = run_args.experiment_parser("efa-demo", "demo")
    ctx = E.context(p.parse_args(["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"]),
                    "efa-demo", {"lr": 0.1}, 0)
    monkeypatch.setattr(E, "git_revision", lambda: "bbbbbbb")
    assert json.loads(ctx.write_record([]).read_text())["git_revision"] == "aaaaaaa"


def test_a_record_of_other_settings_is_refused_not_skipped(tmp_path):
    """Seed skipping takes a record as done only when it was written with the same config values; one
    written with others is refused in one line (--force replaces it)."""
    from attnlab.errors import UsageError

    p = run_args.experiment_parser("efa-demo", "demo")
    base = ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"]
    ctx = E.context(p.parse_args(base), "efa-demo", {"lr": 0.1, "sampling": "sequences"}, 0)
    ctx.write_record([E.metric_row("s", "EFA", "mse", 1.0)])
    assert E.context(p.parse_args(base), "efa-demo", {"lr": 0.1, "sampling": "sequences"}, 0).done()
    # a key only one side names (a config grown since) does not count as a difference
    assert E.context(p.parse_args(base), "efa-demo", {"lr": 0.1, "sampling": "sequences", "new": 1}, 0).done()
    with pytest.raises(UsageError, match="other settings .*sampling: 'sequences' there, 'targets' now"):
        E.context(p.parse_args(base), "efa-demo", {"lr": 0.1, "sampling": "targets"}, 0).done()
    assert not E.context(p.parse_args(base + ["--force"]), "efa-demo", {"lr": 0.1, "sampling": "targets"}, 0).done()



def test_rerun_unjudged_redoes_only_records_whose_convergence_is_unknown(tmp_path, capsys):
    """--rerun-unjudged: a record whose convergence is judged (any status but unknown) is done; one whose status
    is unknown (e.g. only the last epochs of its curve stored) or that has no judgement is run again; without the
    flag all three are done.  It and --force exclude each other (one line, exit 2)."""
    from attnlab.errors import UsageError

    p = run_args.experiment_parser("efa-demo", "demo")
    base = ["--device", "cpu", "--results-dir", str(tmp_path)]
    cfg = {"lr": 0.1}
    for seed, conv in ((0, {"status": "converged"}), (1, {"status": "unknown", "reason": "5 epochs of the curve"}),
                       (2, None), (3, {"status": "not-levelled"})):
        path = E.context(p.parse_args(base + ["--seed", str(seed), "--quiet"]), "efa-demo", cfg, seed).write_record(
            [E.metric_row("s", "EFA", "mse", 1.0)])
        rec = json.loads(path.read_text())
        rec.pop("convergence", None)
        if conv is not None:
            rec["convergence"] = conv
        path.write_text(json.dumps(rec))

    def done(seed, *flags):
        return E.context(p.parse_args(base + ["--seed", str(seed), *flags]), "efa-demo", cfg, seed).done()
    assert [done(s) for s in range(4)] == [True] * 4
    capsys.readouterr()
    assert [done(s, "--rerun-unjudged") for s in range(4)] == [True, False, False, True]
    err = capsys.readouterr().err
    assert "cannot be judged (5 epochs of the curve)" in err and "(no convergence judgement stored)" in err
    with pytest.raises(UsageError, match="--rerun-unjudged.*not allowed with.*--force|--force.*not allowed with"):
        p.parse_args(base + ["--force", "--rerun-unjudged"])

def test_a_narrower_pick_of_runs_is_the_same_run(tmp_path, monkeypatch):
    """Picks (`--ks 30`, `--efa none`, `--models`) choose which runs to do; a run recorded or
    checkpointed while a wider pick was running is the same run: its record counts as done and its
    checkpoint resumes.  Any other config value still makes it another run."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    base = ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet", "--resume"]
    wide, narrow = {"lr": 0.1, "ks": [1, 5, 30], "efa": ["l1"]}, {"lr": 0.1, "ks": [30], "efa": []}
    E.context(p.parse_args(base), "efa-demo", wide, 0, tag="FM-k5").save_checkpoint({"epoch": 3})
    assert E.context(p.parse_args(base), "efa-demo", narrow, 0, tag="FM-k5").load_checkpoint() == {"epoch": 3}
    E.context(p.parse_args(base), "efa-demo", wide, 0, tag="FM-k30").write_record([E.metric_row("s", "FM", "mse", 1.0)])
    assert E.context(p.parse_args(base), "efa-demo", narrow, 0, tag="FM-k30").done()
    with pytest.raises(UsageError, match="other settings .*lr: 0.1 there, 0.2 now"):
        E.context(p.parse_args(base), "efa-demo", dict(narrow, lr=0.2), 0, tag="FM-k30").done()
    with pytest.raises(UsageError, match="--resume: the checkpoint .* other settings"):
        E.context(p.parse_args(base), "efa-demo", dict(narrow, lr=0.2), 0, tag="FM-k5").load_checkpoint()


def test_efa_sampling_modes_get_their_own_config_folder():
    from attnlab.experiments.efa.common import config_name

    ns = argparse.Namespace
    assert config_name(ns(sampling="sequences", quick=False)) is None
    assert config_name(ns(sampling="targets", quick=False)) == "full-targets"
    assert config_name(ns(sampling="targets", quick=True)) == "quick-targets"
    ctx = E.RunContext("efa-demo", 0, "cpu", True, {}, None, "t", None, "quick-targets")
    assert ctx.record_path.parent.name == "quick-targets" and ctx.converged(
        {"experiment": "efa-demo", "metrics": [], "training": {"stopped": "early-stop"}})["converged"] is None
    # --lr (choosing the learning rate on validation) gets its own folder too
    assert config_name(ns(sampling="sequences", quick=False, lr=3e-4)) == "full-lr0.0003"
    assert config_name(ns(sampling="targets", quick=True, lr=0.001)) == "quick-targets-lr0.001"
    assert config_name(ns(sampling="sequences", quick=False, lr=None)) is None
    # a named config (Instacart's full-es) names the folder; --quick overrides it
    assert config_name(ns(sampling="sequences", quick=False, config="full-es", lr=None)) == "full-es"
    assert config_name(ns(sampling="sequences", quick=True, config="full-es", lr=None)) is None


def test_ci95_student_t():
    # n = 2, sd = sqrt(0.5): t_{0.975,1} = 12.7062 -> 12.7062 * 0.5
    assert ci95([1.0, 2.0]) == pytest.approx(12.7062047 * 0.5, rel=1e-6)
    assert ci95([1.0]) is None


def test_a_records_command_leaves_out_where_it_was_written(monkeypatch):
    """The folder of --results-dir belongs to one machine; the record's command line drops it."""
    from attnlab import experiment as E

    monkeypatch.setattr(sys, "argv", ["attnlab", "run", "efa-synthetic", "--seed", "0", "--results-dir",
                                      "/some/folder", "--quick", "--results-dir=/other"])
    assert E._command_line("efa-synthetic") == "attnlab run efa-synthetic --seed 0 --quick"


def test_a_record_names_its_hosts_cpu_and_instruction_set(tmp_path, monkeypatch):
    """Two machines can train the same code and seed to different numbers (a kernel's last bit, grown over
    thousands of epochs): a record names the CPU model and the instruction set torch dispatched to."""
    import torch

    from attnlab.provenance import cpu_model

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    args = run_args.experiment_parser("efa-demo", "demo").parse_args(
        ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"])
    rec = json.loads(E.context(args, "efa-demo", {"lr": 0.1}, 0).write_record([]).read_text())
    assert rec["host"] == {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                           "torch_threads": torch.get_num_threads()}
    assert rec["host"]["cpu"] and rec["host"]["cpu_capability"]


def test_the_seeds_of_one_config_share_its_values(tmp_path, monkeypatch, capsys):
    """A run whose config values differ from its config's other seeds (an override such as --alpha on one seed)
    is refused before it trains (one line naming the value); records that mix them anyway (written by hand, or
    under --force) are read as the majority's, the others left out with a warning naming them."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seeds", "3", "--device", "cpu", "--quick", "--results-dir", str(tmp_path), "--quiet"])
    for ctx in E.contexts(args, "efa-demo", {"lr": 0.1}):
        assert not ctx.done()
        ctx.write_record([E.metric_row("s", "EFA", "mse", 1.0 + ctx.seed)])
    odd = E.context(args, "efa-demo", {"lr": 0.5}, 3)
    with pytest.raises(UsageError, match=r"other config values \(lr: 0.1 there, 0.5 now\)"):
        odd.done()
    forced = E.context(p.parse_args(["--seed", "3", "--device", "cpu", "--quick", "--results-dir", str(tmp_path),
                                     "--quiet", "--force"]), "efa-demo", {"lr": 0.5}, 3)
    assert not forced.done()
    assert "other config values" in capsys.readouterr().err
    forced.write_record([E.metric_row("s", "EFA", "mse", 100.0)])
    rows = [r for r in summarize("efa", tmp_path) if r["experiment"] == "efa-demo" and r["model"] == "EFA"]
    assert len(rows) == 1 and rows[0]["n_seeds"] == 3 and rows[0]["ours_mean"] == pytest.approx(2.0)
    assert "seed(s) 3 left out (3 of 4 share the other values)" in capsys.readouterr().err


def test_a_damaged_checkpoint_is_refused_not_resumed(tmp_path, monkeypatch):
    """One byte of a checkpoint's tensor data changed after it was written: --resume says so in one line (it
    loaded, and the resumed run's numbers moved by 1.6e-8); a checkpoint without the checksum (an earlier
    attnlab's) still resumes."""
    import torch

    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    args = run_args.experiment_parser("efa-demo", "demo").parse_args(
        ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet", "--resume"])
    ctx = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    ctx.save_checkpoint({"w": torch.arange(1000, dtype=torch.float64)})
    data = bytearray(ctx.checkpoint_path.read_bytes())
    data[-2000] ^= 0x11
    ctx.checkpoint_path.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="SHA-256 does not match"):
        E.context(args, "efa-demo", {"lr": 0.1}, 0).load_checkpoint()
    ctx.save_checkpoint({"w": torch.arange(3.0)})
    state = torch.load(io.BytesIO(atomic_io.checked_torch_bytes(ctx.checkpoint_path)), weights_only=False)
    torch.save(state, ctx.checkpoint_path)                   # as written before the checksum
    assert torch.equal(E.context(args, "efa-demo", {"lr": 0.1}, 0).load_checkpoint()["w"], torch.arange(3.0))


def test_a_record_renamed_onto_a_run_is_not_that_run(tmp_path, monkeypatch):
    """seed1's record copied to seed0's name made seed 0 'exist; skipping' (never trained); now one line, and
    the file is kept."""
    import shutil

    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    args = p.parse_args(["--seeds", "2", "--device", "cpu", "--quick", "--results-dir", str(tmp_path), "--quiet"])
    one = E.context(args, "efa-demo", {"lr": 0.1}, 1)
    assert not one.done()
    path = one.write_record([E.metric_row("s", "EFA", "mse", 1.0)])
    zero = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    shutil.copy(path, zero.record_path)
    with pytest.raises(UsageError, match=r"holds the record of another run \(seed 1, not seed 0\)"):
        zero.done()
    assert zero.record_path.exists()


def test_a_record_no_reader_could_use_is_not_written(tmp_path, monkeypatch):
    """A NaN metric (fenchel-deviation at --alpha 1e-200 wrote 24 of them) made a record that every reader skips
    and every re-run replaced, so the seed never counted: now one line and no record (the checkpoint stays)."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    args = run_args.experiment_parser("efa-demo", "demo").parse_args(
        ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"])
    ctx = E.context(args, "efa-demo", {"lr": 0.1}, 0)
    ctx.save_checkpoint({"epoch": 1})
    with pytest.raises(UsageError, match=r"seed 0: the run.s record cannot be used \(metrics\[0\].value is not a number"):
        ctx.write_record([E.metric_row("s", "EFA", "mse", float("nan"))])
    assert not ctx.record_path.exists() and ctx.checkpoint_path.exists()


def test_deviation_metrics_at_tiny_alpha_are_numbers():
    """||lambda* - alpha z|| / ||lambda*|| at alpha = 1e-200: both norms underflowed to 0 (NaN)."""
    import torch

    from attnlab.experiments.fenchel.dual_metrics import deviation_metrics

    g = torch.Generator().manual_seed(0)
    T, z = torch.randn(3, 5, 4, generator=g, dtype=torch.float64), torch.randn(3, 4, generator=g, dtype=torch.float64)
    logu = torch.zeros(3, 5, dtype=torch.float64)
    small, one = deviation_metrics(T, logu, z, 1e-200), deviation_metrics(T, logu, z, 1.0)
    assert torch.isfinite(small["rel_dev"]).all() and torch.isfinite(small["first_order"]).all()
    assert (small["rel_dev"] < one["rel_dev"]).all()


def test_one_results_folder_spelled_two_ways_has_one_checkpoint(tmp_path, monkeypatch, capsys):
    """--results-dir x/../res and res are one folder: a run resumes from the checkpoint written under the other
    spelling (it started from scratch, silently); a run with no checkpoint says that it starts afresh."""
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    (tmp_path / "x").mkdir()
    p = run_args.experiment_parser("efa-demo", "demo")

    def ctx(folder, quiet):
        return E.context(p.parse_args(["--seed", "0", "--device", "cpu", "--results-dir", str(folder), "--resume"]
                                      + (["--quiet"] if quiet else [])), "efa-demo", {"lr": 0.1}, 0)
    ctx(tmp_path / "res", True).save_checkpoint({"epoch": 2})
    assert ctx(tmp_path / "x" / ".." / "res", True).load_checkpoint() == {"epoch": 2}
    assert ctx(tmp_path / "other", False).load_checkpoint() is None
    assert "no checkpoint of this run" in capsys.readouterr().err


def test_the_data_source_is_part_of_the_run(tmp_path, monkeypatch):
    """--data does not define a run (a path), but the data it names does: a substitute run found the paper-data
    record of its seed and skipped as done (its summary showing the paper's number unmarked), and a killed
    substitute run resumed with --data at the paper's file spliced the two histories under the paper's label.
    Both are refused in one line now; --force replaces the record."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    base = ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"]
    paper = E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 0)
    paper.write_record([E.metric_row("s", "EFA", "mse", 1.0)])
    assert E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 0).done()
    with pytest.raises(UsageError, match="holds a record on the paper's data, this run is on substitute data"):
        E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 0, substitute="Colorado").done()
    assert not E.context(p.parse_args(base + ["--force"]), "efa-demo", {"lr": 0.1}, 0, substitute="Colorado").done()
    sub = E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 1, substitute="Colorado")
    sub.save_checkpoint({"epoch": 3})
    with pytest.raises(UsageError, match=r"other settings \(data: 'substitute data' there, \"the paper's data\" now\)"):
        E.context(p.parse_args(base + ["--resume"]), "efa-demo", {"lr": 0.1}, 1).load_checkpoint()
    assert E.context(p.parse_args(base + ["--resume"]), "efa-demo", {"lr": 0.1}, 1,
                     substitute="Colorado").load_checkpoint() == {"epoch": 3}


def test_resume_keeps_compile(tmp_path, monkeypatch):
    """--compile changes a run's numbers in the last digits (sums reordered): a run killed eager and resumed with
    --compile was neither run (test MSE 2.7715913477 against 2.7715913436), and was accepted."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")
    p.add_argument("--compile", action="store_true")
    base = ["--seed", "0", "--device", "cpu", "--results-dir", str(tmp_path), "--quiet", "--resume"]
    E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 0).save_checkpoint({"epoch": 2})
    with pytest.raises(UsageError, match="--compile: False there, True now"):
        E.context(p.parse_args(base + ["--compile"]), "efa-demo", {"lr": 0.1}, 0).load_checkpoint()
    assert E.context(p.parse_args(base), "efa-demo", {"lr": 0.1}, 0).load_checkpoint() == {"epoch": 2}


def test_a_flag_stored_in_the_config_under_another_name_is_one_run_with_its_default(monkeypatch, tmp_path):
    """--sentences 10000 (bidir-toy-corpus's n_sentences) and --epochs 20 (bidir-tabular-sim's atn_epochs at
    --config reduced), given at the value the config has anyway, refused the resume of the same run ("--sentences:
    None there, 10000 now"): the config value defines the run, not the flag."""
    from attnlab.experiments.bidir import tabular_sim, toy_corpus

    seen = []

    class Stop(Exception):
        pass

    def capture(args, experiment, config, seed, *a, **k):
        seen.append(E.run_settings(experiment, "x", config, k.get("tag", ""), seed, args))
        raise Stop

    base = ["--seed", "0", "--results-dir", str(tmp_path), "--quiet"]
    monkeypatch.setattr(E, "context", capture)
    for extra in ([], ["--sentences", "10000"]):
        with pytest.raises(Stop):
            toy_corpus.main(["--quick", "--dims", "30"] + base + extra)
    monkeypatch.setattr(tabular_sim, "run_context", capture)
    for extra in ([], ["--epochs", "20"]):
        with pytest.raises(Stop):
            tabular_sim.main(["--config", "reduced", "--models", "ATN"] + base + extra)
    assert seen[0] == seen[1] and seen[2] == seen[3], seen


@pytest.mark.parametrize("runner, flags, folder", [
    ("fenchel-ot-vit", ["--epochs", "3"], "full-epochs3"),
    ("fenchel-ot-vit", ["--quick", "--epochs", "3"], "quick-epochs3"),
    ("fenchel-deviation", ["--epochs", "10"], "full-epochs10"),
    ("fenchel-deviation", ["--alpha", "0.5", "--train-sentences", "100"], "full-alpha0.5-train-sentences100"),
    ("fenchel-deviation", ["--alpha", "1", "--epochs", "5"], "full"),                 # the config's own values
    ("bidir-toy-corpus", ["--dims", "30", "--steps", "100"], "full-dims30-steps100"),
    ("bidir-toy-corpus", ["--dims", "30,100,300,900"], "full"),
    ("bidir-tabular-sim", ["--models", "ATN", "--epochs", "50"], "full-epochs50"),
    ("bidir-tabular-sim", ["--models", "LR,ATN", "--epochs", "50"], "full"),         # LR's record: no epochs
    ("efa-movielens-sequences", ["--split-seed", "7", "--models", "EFA"], "full-split-seed7"),
    ("efa-movielens-ratings", ["--split-seed", "42", "--models", "EFA"], "full"),
])
def test_a_config_changed_by_a_flag_is_recorded_apart_from_the_config(runner, flags, folder, monkeypatch, tmp_path):
    """`attnlab run fenchel-ot-vit --epochs 3` wrote 3-epoch records into `full`, the folder the readers and
    the claims take for the paper's configuration (only a folder already holding full records refused it):
    a flag that changes a config value names the folder after itself, as --lr does; at the config's own value
    the run is the config's."""
    from attnlab.cli import main

    seen = []

    class Stop(Exception):
        pass

    def capture(experiment, seed, device, quick, config, args=None, tag="", substitute=None, config_name=None):
        seen.append(config_name or ("quick" if quick else "full"))
        raise Stop

    monkeypatch.setattr(E, "RunContext", capture)
    with pytest.raises(Stop):
        main(["run", runner, "--seed", "0", "--results-dir", str(tmp_path), "--quiet", *flags])
    assert seen == [folder]
    assert run_args.overridden_folder("full", {"a": None, "b": [1, 2], "c": 1e-5}, {"a": 5, "b": [1], "c": 1.0},
                                      {"a": "x", "b": "y", "c": "z"}) == "full-xall-y1_2-z1e-05"


def test_a_subset_of_the_basis_sizes_is_the_same_config(tmp_path, monkeypatch):
    """The kernel runners' --basis picks which numbers of basis functions N to run (each N a run tagged N<N>): a
    run of N = 128 alone beside the config's N = 128 records of basis (64, 128) was refused as another config
    ("basis: [64, 128] there, [128] now"); another value of a defining setting still is."""
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    p = run_args.experiment_parser("efa-demo", "demo")

    def ctx(seed, **cfg):
        args = p.parse_args(["--seed", str(seed), "--device", "cpu", "--results-dir", str(tmp_path), "--quiet"])
        return E.context(args, "kernel-demo", {"lr": 0.1, "basis": (64, 128), **cfg}, seed, tag="N128-m")

    first = ctx(0)
    assert not first.done()
    first.write_record([E.metric_row("N=128", "m", "accuracy", 0.5)])
    assert not ctx(1, basis=(128,)).done()
    with pytest.raises(UsageError, match=r"other config values \(lr: 0.1 there, 0.2 now\)"):
        ctx(2, lr=0.2).done()
