"""Every bad input the command line meets answers with one line, exit code 2, and nothing lost
(attnlab.errors: UsageError is the one error path)."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab import cli
from attnlab.experiment import RunContext


def _one_line_exit_2(capsys, argv, *fragments):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("attnlab: error: ")
    for f in fragments:
        assert f in err, err
    return err


@pytest.mark.parametrize("cmd", ["run", "compare"])
def test_run_and_compare_help_exit_0(capsys, cmd):
    assert cli.main([cmd, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: attnlab {cmd} NAME")


@pytest.mark.parametrize("cmd", [["verify", "--claim", "fenchel.eq7.kkt-identity"], ["list"]])
def test_json_to_unwritable_path_refused_before_any_work(capsys, tmp_path, cmd, monkeypatch):
    from attnlab import catalog

    ran = []
    monkeypatch.setattr(catalog, "run_claim", lambda c: ran.append(c))
    (tmp_path / "file").write_text("")
    _one_line_exit_2(capsys, [*cmd, "--json", str(tmp_path / "file" / "out.json")], "--json")
    assert ran == []


@pytest.mark.parametrize("args,frag", [
    (["--seed", "-1"], "--seed must be an integer in 0..4294967295; got -1"),
    (["--seeds", "1,-2"], "--seeds must be"),
    (["--seeds", "100000000000"], "--seeds must be a count N in 1..10000"),
    (["--seeds", "5-2"], "--seeds must be"),
    (["--seeds", "0,0"], "lists a seed twice"),
    (["--device", "gpu"], "--device must be one of auto, cpu, cuda"),
])
def test_runner_arguments(capsys, args, frag):
    _one_line_exit_2(capsys, ["run", "efa-synthetic", *args], frag)


def test_split_seed(capsys):
    _one_line_exit_2(capsys, ["run", "efa-movielens-sequences", "--split-seed", "-1"], "--split-seed")


def test_device_cuda_without_gpu_refused_while_parsing(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is available here")
    _one_line_exit_2(capsys, ["run", "kernel-time-warping", "--device", "cuda"], "--device cuda: no CUDA GPU")


def test_efa_data_nonexistent(capsys, tmp_path):
    _one_line_exit_2(capsys, ["run", "efa-movielens-sequences", "--quick", "--seed", "0", "--data",
                              str(tmp_path / "nonexistent"), "--results-dir", str(tmp_path / "r")],
                     "u.data.gz or u.data not found", "--data PATH")


def test_unknown_choice_in_a_runner(capsys):
    _one_line_exit_2(capsys, ["run", "kernel-time-warping", "--models", "nope"], "--models must be a comma-separated subset of")


@pytest.mark.parametrize("runner", ["kernel-gestures", "kernel-sentiment"])
@pytest.mark.parametrize("value", ["64,x", "1", ","])
def test_basis_flag(capsys, runner, value):
    _one_line_exit_2(capsys, ["run", runner, "--quick", "--basis", value], "--basis must be a comma list of integers in [4, ")


# --------------------------------------------------------------------------- results
def _record(tmp_path, name, text):
    f = tmp_path / "efa-synthetic" / "quick" / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


def test_results_skip_corrupt_records_and_print_the_rest(capsys, tmp_path):
    from attnlab.convergence import RULE

    good = {"experiment": "efa-synthetic", "config": "quick", "seed": 0, "device": "cpu", "converged": True,
            "convergence": {"status": "converged", "rule": RULE},        # (judged: no warning of its own)
            "metrics": [{"setting": "bidirectional", "model": "EFA", "metric": "test MSE", "value": 1.25}]}
    _record(tmp_path, "EFA-seed0.json", json.dumps(good))
    bad = [_record(tmp_path, "garbage-seed1.json", "{not json"),
           _record(tmp_path, "list-seed2.json", "[1, 2]"),
           _record(tmp_path, "nan-seed3.json", json.dumps({**good, "metrics": [{**good["metrics"][0], "value": "x"}]}))]
    assert cli.main(["results", "efa", "--results-dir", str(tmp_path), "--json", "-", "--all"]) == 0
    cap = capsys.readouterr()
    rows = json.loads(cap.out)
    ours = [r for r in rows if r["n_seeds"]]
    assert len(ours) == 1 and ours[0]["ours_mean"] == 1.25
    warnings = cap.err.strip().splitlines()
    assert len(warnings) == 3 and all(sum(str(b) in w for w in warnings) == 1 for b in bad)


def test_results_unknown_config_and_empty_dir(capsys, tmp_path):
    _one_line_exit_2(capsys, ["results", "efa", "--config", "nope"], "--config nope", "configs with records")
    _one_line_exit_2(capsys, ["results", "efa", "--results-dir", str(tmp_path / "missing")], "no such folder")
    assert cli.main(["results", "efa", "--results-dir", str(tmp_path)]) == 0
    assert "no efa records under" in capsys.readouterr().err


# --------------------------------------------------------------------------- figures
def test_figures_out_folder_is_created(tmp_path, capsys):
    out = tmp_path / "new" / "figs"
    assert cli.main(["figures", "--only", "fig2b-softplus", "--out", str(out)]) == 0
    assert any(out.glob("*.png"))


def test_figures_without_records_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)                          # outside the repository, records pointed elsewhere
    (tmp_path / "no-records-here").mkdir()
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "no-records-here"))
    assert cli.main(["figures", "--only", "exp_fig3", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("attnlab: error: ")]
    assert len(errors) == 1 and err[-1] == errors[0] and "attnlab run efa-instacart" in errors[0], err
    assert "Traceback" not in "\n".join(err)


def test_figures_outside_the_repository_read_the_committed_records(tmp_path, capsys, monkeypatch):
    """No ./results and no $ATTNLAB_RESULTS: the committed records (an installed package ships them) are
    drawn, into ./paper_figures of the working directory by default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNLAB_RESULTS", raising=False)
    assert cli.main(["figures", "--only", "exp_fig3"]) == 0
    assert [p.name for p in (tmp_path / "paper_figures").iterdir()] == ["efa_exp_fig3.png"]


def test_figures_render_the_others_and_name_each_missing_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "empty"))
    assert cli.main(["figures", "--only", "exp_fig3", "exp_fig4", "--out", str(tmp_path)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("attnlab: error: ")]
    assert len(errors) == 2 and "exp_fig3" in errors[0] and "exp_fig4" in errors[1]


# --------------------------------------------------------------------------- data layer
def _data_copy(tmp_path, name="ucr-ecg200"):
    from attnlab.experiments import data as D

    src = D.locate(name)
    dst = tmp_path / D.DATASETS[name].folder
    dst.mkdir(parents=True)
    for f in D.DATASETS[name].files:
        (dst / f.name).write_bytes((src / f.name).read_bytes())
    return D, dst


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_gz_is_a_data_error_naming_the_file(tmp_path, damage):
    D, dst = _data_copy(tmp_path)
    f = dst / "ECG200_TEST.tsv.gz"
    b = bytearray(f.read_bytes())
    if damage == "truncate":
        b = b[: len(b) // 2]
    else:
        b[len(b) // 2] ^= 0xFF
    f.write_bytes(bytes(b))
    D._VERIFIED.clear()
    with pytest.raises(D.DataError, match="ECG200_TEST.tsv.gz") as e:
        D.locate("ucr-ecg200", dst)
    assert "\n" not in str(e.value)


def test_attnlab_data_env_lacking_a_file_refuses_and_names_it(tmp_path, monkeypatch):
    D, dst = _data_copy(tmp_path)
    (dst / "ECG200_TEST.tsv.gz").unlink()
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))
    with pytest.raises(D.DataError) as e:
        D.locate("ucr-ecg200")
    msg = str(e.value)
    assert "ECG200_TEST.tsv.gz or ECG200_TEST.tsv not found" in msg and "ECG200_TRAIN" not in msg.split(";")[0]
    assert "$ATTNLAB_DATA" in msg                          # no silent fall-back to the bundle
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(D.DataError, match=r"\$ATTNLAB_DATA"):
        D.locate("ucr-ecg200")


def test_data_command_reports_a_corrupt_file_and_goes_on(tmp_path, monkeypatch, capsys):
    D, dst = _data_copy(tmp_path)
    (dst / "ECG200_TRAIN.tsv.gz").write_bytes(gzip.compress(b"x")[:10])
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))
    D._VERIFIED.clear()
    assert cli.main(["data", "ucr-ecg200", "ucr-ecg5000"]) == 1
    out = capsys.readouterr().out
    assert "ECG200_TRAIN.tsv.gz is corrupt" in out and "ucr-ecg5000" in out


# --------------------------------------------------------------------------- runs
def _ctx(tmp_path, monkeypatch, **flags):
    import argparse

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    args = argparse.Namespace(resume=True, force=False, quiet=True, results_dir=str(tmp_path / "res"),
                              device="cpu", seeds=None, seed=0, **flags)
    return RunContext("efa-movielens-sequences", 0, "cpu", False, {"lr": 1e-4}, args, tag="EFA")


def test_resume_refuses_a_checkpoint_of_other_settings(tmp_path, monkeypatch):
    from attnlab.errors import UsageError

    a = _ctx(tmp_path, monkeypatch, split_seed=42)
    a.save_checkpoint({"epoch": 3})
    assert _ctx(tmp_path, monkeypatch, split_seed=42).load_checkpoint() == {"epoch": 3}
    with pytest.raises(UsageError, match=r"--split-seed: 42 there, 7 now"):
        _ctx(tmp_path, monkeypatch, split_seed=7).load_checkpoint()


def test_resume_ignores_the_flags_that_only_pick_runs(tmp_path, monkeypatch):
    """--models (and --ks, --efa) choose which runs to do, and each run's tag names the pick: a sweep
    stopped under `--models EFA,FM` resumes under `--models EFA`, also from a checkpoint that still
    stores the flag (written before it stopped counting as a setting)."""
    import torch

    from attnlab.errors import UsageError
    from attnlab.experiment import SETTINGS_KEY

    _ctx(tmp_path, monkeypatch, split_seed=42, models="EFA,FM").save_checkpoint({"epoch": 3})
    assert _ctx(tmp_path, monkeypatch, split_seed=42, models="EFA").load_checkpoint() == {"epoch": 3}
    old = _ctx(tmp_path, monkeypatch, split_seed=42, models="EFA,FM")
    import io

    from attnlab.atomic_io import checked_torch_bytes

    state = torch.load(io.BytesIO(checked_torch_bytes(old.checkpoint_path)), weights_only=False)
    state[SETTINGS_KEY] = {**state[SETTINGS_KEY], "--models": "EFA,FM", "--ks": "1,2"}
    torch.save(state, old.checkpoint_path)
    assert _ctx(tmp_path, monkeypatch, split_seed=42).load_checkpoint() == {"epoch": 3}
    with pytest.raises(UsageError, match=r"--split-seed: 42 there, 7 now"):
        _ctx(tmp_path, monkeypatch, split_seed=7, models="EFA,FM").load_checkpoint()


def test_records_get_the_umask_mode(tmp_path, monkeypatch):
    from attnlab.atomic_io import atomic_write_text

    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert (p.stat().st_mode & 0o777) == 0o644


def test_no_traceback_through_the_installed_command(tmp_path):
    """The console script itself (a subprocess): one line on stderr, exit 2."""
    exe = Path(sys.executable).with_name("attnlab")
    if not exe.exists():
        pytest.skip("the attnlab console script is not installed beside this python")
    r = subprocess.run([str(exe), "run", "efa-synthetic", "--seeds", "1,-2"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script, argv, fragment", [
    ("epoch_cost.py", ["--steps", "0"], "--steps must be an integer >= 1"),
    ("epoch_cost.py", ["--experiments", "nope"], "--experiments must be a comma list"),
    ("epoch_cost.py", ["--device", "tpu"], "--device must be cpu or cuda[:N]"),
    ("step_profile.py", ["--rows", "0"], "--rows must be an integer in 1..1000"),
    ("epoch_cost_compare.py", ["nope.json", "nope.json"], "nope.json: not a JSON file of benchmarks/epoch_cost.py"),
    ("records_devices.py", ["nope", "nope"], "nope: not a folder of results records"),
    ("layer_speed.py", ["--device", "tpu"], "--device"),
    ("gb_grid_search.py", ["--rows", "3"], "--rows must be >= 20"),
    ("gb_grid_search.py", ["--setting", "9,9,9"], "--setting must be one of"),
    ("kernel_context.py", ["--batch", "0"], "--batch must be an integer >= 1"),
    ("malloc.py", ["--steps", "0"], "--steps must be an integer >= 1"),
    ("mutations.py", ["--only", "nope"], "--only: unknown mutation(s) nope"),
    ("training_step.py", ["--experiments", "nope"], "--experiments a subset of"),
    ("malloc.py", ["--bogus"], "unrecognized arguments: --bogus"),
])
def test_benchmark_scripts_take_the_one_error_path(capsys, benchmark_script, script, argv, fragment):
    """The benchmarks validate their arguments at the boundary as `attnlab` does: one line, exit 2."""
    mod = benchmark_script(script[:-3])
    assert cli.call(mod.main, argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("attnlab: error: ") and fragment in err, err


def test_benchmark_script_as_a_program_prints_one_line(tmp_path):
    """The `__main__` path of a benchmark (a subprocess): one line on stderr, exit 2, no traceback."""
    r = subprocess.run([sys.executable, str(BENCHMARKS / "malloc.py"), "--steps", "0"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == "attnlab: error: --steps must be an integer >= 1; got 0"


def test_a_folder_made_read_only_during_a_run_is_one_line(tmp_path, monkeypatch, capsys):
    """The results folder checked writable at the start, then unwritable when the record is written (chmod, a full
    disk): one line naming the file, exit 2, not a traceback."""
    import errno as _errno

    from attnlab import atomic_io, cli

    def refuse(path, *a, **k):
        raise PermissionError(_errno.EACCES, "Permission denied", str(path))
    monkeypatch.setattr(atomic_io, "_atomic_replace", refuse)
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    rc = cli.main(["run", "efa-synthetic", "--quick", "--seed", "0", "--settings", "unidirectional", "--models", "FM",
                   "--results-dir", str(tmp_path / "res"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "cannot write" in err and "Permission denied" in err


def test_resume_with_a_default_spelled_out_is_the_same_run(tmp_path, monkeypatch):
    """`--lr 1e-4` where the config's lr is 1e-4 is the run without the flag: its checkpoint resumes (it was
    refused: '--lr: None there, 0.0001 now'); another lr is another run."""
    from attnlab.errors import UsageError

    _ctx(tmp_path, monkeypatch, lr=None).save_checkpoint({"epoch": 3})
    assert _ctx(tmp_path, monkeypatch, lr=1e-4).load_checkpoint() == {"epoch": 3}
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    import argparse

    other = RunContext("efa-movielens-sequences", 0, "cpu", False, {"lr": 1e-3},
                       argparse.Namespace(resume=True, force=False, quiet=True, results_dir=str(tmp_path / "res"),
                                          device="cpu", seeds=None, seed=0, lr=1e-3), tag="EFA")
    with pytest.raises(UsageError, match="lr"):
        other.load_checkpoint()


def test_compare_api_and_flags_take_integers_one_way():
    """compare(prop=1+0j) raised a TypeError from int() (1+0j == 1 passed the check); heads=np.int64(2) was
    refused while seed=np.int64(2) was taken; `--heads 1_0` ran 10 heads; init_std=1e200 returned NaN
    deviations; verify() records lacked the `ok` their docstring named; attnlab.layers was no attribute."""
    import numpy as np

    import attnlab
    from attnlab import cli
    from attnlab.errors import UsageError

    for kw in (dict(prop=1 + 0j), dict(prop=1.0), dict(prop=True), dict(seed=1.5)):
        with pytest.raises(UsageError):
            attnlab.compare("efa-fm", **kw)
    assert attnlab.compare("efa-fm", prop=np.int64(2), seed=np.array(3))["prop"] == 2
    assert attnlab.compare("bidir-moe", heads=np.int64(2))["heads"] == 2
    with pytest.raises(UsageError, match="overflow float64"):
        attnlab.compare("bidir-moe", init_std=1e200)
    assert cli.main(["compare", "bidir-moe", "--heads", "1_0"]) == 2
    assert attnlab.verify(claims="efa.prop1.bidirectional")[0]["ok"] is True
    assert attnlab.layers.fenchel_attention is not None


@pytest.mark.parametrize("argv, said", [
    (["fenchel-ot-vit", "--lrs", "0.003,0.0034"], "one significant"),      # 0.0034 was never trained
    (["fenchel-ot-vit", "--lrs", "1e39"], "--lrs must be"),                 # Adam overflowed mid-run
    (["bidir-analogies", "--glove-txt", ""], "--glove-txt is empty"),      # dropped silently, rc 0
    (["bidir-analogies", "--word2vec-bin", "/nonexistent/x.bin"], "no such file"),   # a traceback
    (["kernel-time-warping", "--compile"], "unrecognized arguments: --compile"),     # accepted, ignored
    (["bidir-tabular-sim", "--backend", "ray"], "--backend ray"),           # ran locally, rc 0
    (["bidir-tabular-sim", "--epochs", "7", "--models", "LR"], "trains no ATN"),
    (["bidir-tabular-sim", "--seed", "4294967295", "--models", "LR"], "takes seeds"),  # 32 GiB asked
    (["bidir-auto-mpg", "--seed", "4294967295", "--no-tabular"], "takes seeds"),       # sklearn's seed range
    (["bidir-toy-corpus", "--sentences", "1000000000000"], "--sentences must be"),    # 36 TiB asked
    (["efa-temperature", "--ks", "none", "--efa", "none"], "nothing to run"),          # rc 0, nothing done
    (["efa-temperature", "--ks", "1_0", "--efa", "none"], "--ks must be"),
    (["fenchel-deviation", "--train-sentences", "\u00b2"], "--train-sentences must be"),  # a traceback
    (["fenchel-deviation", "--alpha", "1e200"], "--alpha must be"),       # refused only after training
    (["efa-synthetic", "--threads", "1_0"], "--threads"),                 # read as 10
    (["kernel-gestures", "--basis", "1_6"], "--basis"),                   # read as 16
    (["kernel-sentiment", "--data", ""], "--data is empty"),              # read as the current folder
    (["kernel-forda", "--setup", "authors", "--models", "lstm_fcn"], "changes only"),   # copies of ours
])
def test_runner_options_refused_before_any_work(tmp_path, monkeypatch, capsys, argv, said):
    """Found by an outside sweep of every runner's options: each was accepted and then misread, ignored, or
    ended in a traceback; now one line naming the option, exit 2, before any training."""
    from attnlab import cli

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    rc = cli.main(["run", argv[0], "--quick", "--seed", "0", "--results-dir", str(tmp_path / "res")] + argv[1:]
                  if "--seed" not in argv else ["run", argv[0], "--quick", "--results-dir", str(tmp_path / "res")]
                  + argv[1:])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and "Traceback" not in err, err
    assert not list((tmp_path / "res").rglob("*.json"))


def test_interrupt_inside_a_compiled_callback_is_one_line_exit_130(capsys, monkeypatch):
    """Ctrl-C during `converge` reached python-flint's acb.integral callback, which raises a SystemError chained
    to the KeyboardInterrupt: 2,036 lines of chained tracebacks and exit 1 (`figures` said 'interrupted', 130).
    A SystemError with no interrupt in its chain still propagates."""
    def interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("<cyfunction acb.integral> returned a result with an exception set") from exc

    monkeypatch.setattr(cli, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "attnlab: interrupted"

    def broken(args):
        raise SystemError("a real one")

    monkeypatch.setattr(cli, "cmd_list", broken)
    with pytest.raises(SystemError, match="a real one"):
        cli.main(["list"])


@pytest.mark.parametrize("argv", [["figures", "--paper", ""], ["report", "--paper", "", "--out", "{tmp}/r"]])
def test_empty_paper_is_refused_not_read_as_every_paper(capsys, tmp_path, argv):
    """`figures --paper ""` drew all 27 figures and exited 0 (an empty string read as "not given")."""
    _one_line_exit_2(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv], "unknown paper ''")


def test_endless_json_input_is_refused(capsys, tmp_path):
    """--instance /dev/zero was read without end (10 GB in 8 s, then a MemoryError traceback)."""
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(65 * 2 ** 20)                  # (sparse: no disk)
    _one_line_exit_2(capsys, ["compare", "fenchel", "--instance", str(big)], "larger than 64 MiB")


def test_converge_domain_r_keeps_the_default_steps_and_an_interval_asks_for_grids():
    """{"domain": "R"} alone was refused with "steps must be a list of >= 2 numbers; got null" (the default
    instance is on R, with its steps); an interval without grids now says that it needs grids."""
    from attnlab.theory.kernel import compare as kc

    assert kc.validate({"domain": "R"})["steps"] == kc.validate({})["steps"]
    with pytest.raises(kc.InstanceError, match="^a domain \\[a, b\\] needs grids"):
        kc.validate({"domain": [0, 1]})
    assert kc.validate({"domain": [0, 1], "grids": [9, 17]})["grids"] == [9, 17]


def test_wall_times_range_keeps_the_means_digits():
    """The min-max column was rounded to whole seconds ('0-3' around a mean of 1.11 whose fastest run took
    0.445 s) and 1000 epochs read '1e+03'."""
    from attnlab.results import wall_display_row

    row = {"experiment": "e", "config": "quick", "run": "r", "n": 5, "mean wall s": 1.11, "min wall s": 0.445,
           "max wall s": 3.2, "mean epochs": 1000.0, "s/epoch": 0.00111, "stopped": {"fixed-schedule": 5},
           "device": "cpu"}
    shown = wall_display_row(row)
    assert shown["min-max wall s"] == "0.445-3.20" and shown["mean epochs"] == "1000" and shown["s/epoch"] == "0.00111"
