"""The benchmark scripts' argument checks: bad input is one line naming the argument and what is allowed (exit 2),
checked before any measurement; --json destinations are checked first and written atomically.

Fast: the scripts' main(argv) runs in this process, their measuring functions replaced where a check must come
before them (so that a check done too late fails here quickly instead of measuring for minutes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


class Measured(RuntimeError):
    """Raised by a stand-in for a measuring function: the script got past its checks."""


def _measured(*_a, **_k):
    raise Measured("measured before the arguments were checked")


@pytest.fixture
def load(benchmark_script, monkeypatch):
    """benchmarks/<name>.py as a module (conftest's benchmark_script); epoch_cost also as the module step_profile
    imports by name, so that what a test replaces in it is what step_profile sees."""
    def load_(name: str):
        mod = benchmark_script(name)
        if name == "epoch_cost":
            monkeypatch.setitem(sys.modules, "epoch_cost", mod)
        return mod
    return load_


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


# ---------------------------------------------------------------------------------------------- layer_speed.py

@pytest.mark.parametrize("argv, flag", [
    (["--reps", "0"], "--reps"), (["--reps", "-3"], "--reps"), (["--reps", "100000000000000000000"], "--reps"),
    (["--reps", "1001"], "--reps"), (["--runs", "0"], "--runs"), (["--threads", "0"], "--threads"),
])
def test_layer_speed_refuses_bad_counts(load, monkeypatch, argv, flag):
    ls = load("layer_speed")
    monkeypatch.setattr(ls, "measure", _measured)
    with pytest.raises(UsageError, match=f"{flag} must be an integer >= 1 and <= "):
        ls.main(argv)


def test_layer_speed_bad_reps_is_one_line_exit_2(tmp_path):
    p = subprocess.run([sys.executable, str(BENCH / "layer_speed.py"), "--reps", "0"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "--reps must be an integer >= 1 and <= 1000" in p.stderr
    assert "Traceback" not in p.stderr


def test_layer_speed_checks_json_before_measuring(load, monkeypatch, tmp_path):
    ls = load("layer_speed")
    monkeypatch.setattr(ls, "measure", _measured)
    with pytest.raises(UsageError, match="--json .*is a folder"):
        ls.main(["--json", str(tmp_path)])


def test_layer_speed_writes_json_atomically_with_newline(load, monkeypatch, tmp_path):
    ls = load("layer_speed")
    monkeypatch.setattr(ls, "measure", lambda shape, f, reps, device="cpu": (1.0, 2.0))
    dest = tmp_path / "new" / "rows.json"      # a missing folder is made, as attnlab's own --json does
    assert ls.main(["--reps", "1", "--json", str(dest)]) == 0
    text = dest.read_text()
    assert text.endswith("\n")
    rows = json.loads(text)
    assert len(rows) == len(ls.rows()) and all(r["ratio"] == 2.0 for r in rows)
    assert [p.name for p in dest.parent.iterdir()] == ["rows.json"]      # no temporary left


# ---------------------------------------------------------------------------------- fenchel_newton_vs_cvxpy.py

@pytest.mark.parametrize("argv, flag", [
    (["--instances", "0"], "--instances"), (["--instances", "-2"], "--instances"),
    (["--instances", "1", "--n", "0"], "--n"), (["--instances", "1", "--d", "0"], "--d"),
    (["--threads", "0"], "--threads"),
])
def test_fenchel_refuses_bad_sizes(load, argv, flag):
    fn = load("fenchel_newton_vs_cvxpy")
    with pytest.raises(UsageError, match=f"{flag} must be an integer >= 1"):
        fn.main(argv)


def test_fenchel_prints_the_reference_residual(load, monkeypatch, capsys):
    fn = load("fenchel_newton_vs_cvxpy")
    monkeypatch.setattr(fn, "throughput", lambda device, dtype: 1.0)
    monkeypatch.setattr(fn, "layer_vs_softmax", lambda device, dtype: (1.0, 2.0))
    assert fn.main(["--instances", "1", "--n", "3", "--d", "2"]) == 0
    out = capsys.readouterr().out
    assert "worst first-order residual" in out          # the docstring promises it


# -------------------------------------------------------------------------------------------- training_step.py

def test_training_step_checks_json_before_measuring(load, monkeypatch, tmp_path):
    ts = load("training_step")
    monkeypatch.setattr(ts, "load", _measured)
    with pytest.raises(UsageError, match="--json .*is a folder"):
        ts.main(["--json", str(tmp_path), "--steps", "1", "--experiments", "movielens"])


def test_training_step_json_says_which_target_is_met(load, monkeypatch, capsys):
    from attnlab.experiments.efa.data import pad_sequences

    ts = load("training_step")
    seqs = pad_sequences([[1, 2, 3], [4, 5], [6, 7, 8, 9], [2, 4], [3, 5, 7]], n_items=9)
    monkeypatch.setattr(ts, "load", lambda name: ("efa-movielens-sequences", seqs, 9, 4))
    rc = ts.main(["--json", "-", "--steps", "1", "--experiments", "movielens"])
    rows = json.loads(capsys.readouterr().out)
    judged = [r for r in rows if r["target"] is not None]
    assert {(r["model"], r["path"]) for r in judged} == {("EFA unidirectional", "sequences"),
                                                        ("EFA bidirectional", "sequences")}
    assert all(isinstance(r["met"], bool) and r["agreement"] == ts.AGREEMENT for r in judged)
    assert all(r["met"] == (r["ratio"] >= r["target"] and r["max_rel_diff"] <= r["agreement"]) for r in judged)
    assert rc == (0 if all(r["met"] for r in judged) else 1)          # the exit code, explained by the JSON


# ------------------------------------------------------------------------------------------ records_devices.py

def test_records_devices_refuses_a_folder_without_records(load, tmp_path):
    rd = load("records_devices")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "gpu").mkdir()
    with pytest.raises(UsageError, match="no results records there"):
        rd.main([str(tmp_path / "cpu"), str(tmp_path / "gpu")])


def test_records_devices_checks_json_before_reading(load, tmp_path):
    rd = load("records_devices")
    with pytest.raises(UsageError, match="--json .*is a folder"):
        rd.main([str(tmp_path / "nosuch-cpu"), str(tmp_path / "nosuch-gpu"), "--json", str(tmp_path)])


def test_records_devices_writes_json_into_a_new_folder(load, monkeypatch, tmp_path):
    rd = load("records_devices")
    key = ("efa-synthetic", "quick", "s", "EFA", "nll", 0)
    monkeypatch.setattr(rd, "rows", lambda folder, what="folder": ({key: 1.0}, {"cpu"}))
    dest = tmp_path / "newdir" / "x.json"
    assert rd.main(["a", "b", "--json", str(dest)]) == 0
    text = dest.read_text()
    assert text.endswith("\n") and json.loads(text)[0]["rel_diff"] == 0.0


# ------------------------------------------------------------------------------------------- kernel_context.py

@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_kernel_context_refuses_a_seed_out_of_range(load, seed):
    kc = load("kernel_context")
    with pytest.raises(UsageError, match=r"--seed must be an integer in 0\.\.4294967295"):
        kc.main(["--seed", seed, "--batch", "1"])


# ----------------------------------------------------------------------------------------------- epoch_cost.py

def test_epoch_cost_checks_json_before_the_first_row(load, monkeypatch, tmp_path):
    ec = load("epoch_cost")
    monkeypatch.setattr(ec, "cases", _measured)
    with pytest.raises(UsageError, match="--json .*is a folder"):
        ec.main(["--experiments", "bidir-toy-corpus", "--steps", "1", "--json", str(tmp_path)])


# --------------------------------------------------------------------------------------------- step_profile.py

def _lbfgs_case(ec):
    return ec.Case("bidir-toy-corpus", "CBOW", "full", "p=30", None, 1, 10, "L-BFGS", timer=lambda w, s: ([], ""))


def test_step_profile_refuses_when_only_lbfgs_rows_are_left(load, monkeypatch):
    ec = load("epoch_cost")
    sp = load("step_profile")
    monkeypatch.setattr(ec, "cases", lambda name, n: iter([_lbfgs_case(ec)]))
    with pytest.raises(UsageError, match="nothing to profile: bidir-toy-corpus CBOW p=30: .*L-BFGS"):
        sp.main(["--device", "cpu", "--experiments", "bidir-toy-corpus"])


def test_step_profile_names_the_rows_it_does_not_profile(load, monkeypatch, capsys):
    import torch

    ec = load("epoch_cost")
    sp = load("step_profile")
    x = torch.ones(4, requires_grad=True)
    fast = ec.Case("bidir-tabular-sim", "ATN", "full", "s", lambda: (x * 2).sum().backward(), 1, 1, "fixed")
    rows = {"bidir-tabular-sim": [fast], "bidir-toy-corpus": [_lbfgs_case(ec)]}
    monkeypatch.setattr(ec, "cases", lambda name, n: iter(rows[name]))
    assert sp.main(["--device", "cpu", "--experiments", "bidir-tabular-sim,bidir-toy-corpus", "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "==== bidir-tabular-sim ATN s" in out
    assert "bidir-toy-corpus CBOW p=30: no step profile" in out and "L-BFGS" in out


# ------------------------------------------------------------------------------------------- mutation_score.py

def _copy_without_git(ms, monkeypatch, tmp_path: Path) -> Path:
    """A copy of what `report` reads and writes, in a folder that is not a git repository."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "copy"
    (repo / "docs").mkdir(parents=True)
    (repo / "benchmarks" / "mutation_results").mkdir(parents=True)
    doc = repo / "docs" / "claims_mutations.md"
    doc.write_text(f"# Mutations\n\n{ms.BEGIN}\nthe old table\n{ms.END}\n", encoding="utf-8")
    survivor = {"operator": "core/ReplaceBinaryOperator_BitOr_BitAnd", "occurrence": 0, "line": 3, "diff": ""}
    (repo / "benchmarks" / "mutation_results" / "numerics_x.py.json").write_text(json.dumps(
        {"module": "numerics/x.py", "commit": "0123456789abcdef0123456789abcdef01234567", "mutants": 4, "killed": 3,
         "survivors": [survivor], "claims_reaching": 1, "seconds": 1.0}))
    monkeypatch.setattr(ms, "REPO", repo)
    monkeypatch.setattr(ms, "RESULTS", repo / "benchmarks" / "mutation_results")
    monkeypatch.setattr(ms, "DOC", doc)
    return doc


def test_mutation_report_refuses_without_git_history(load, monkeypatch, tmp_path, capsys):
    ms = load("mutation_score")
    doc = _copy_without_git(ms, monkeypatch, tmp_path)
    before = doc.read_text(encoding="utf-8")
    assert ms.main(["report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "git show" in err and "full clone" in err
    assert doc.read_text(encoding="utf-8") == before                      # the scores are not rewritten
    assert sorted(os.listdir(doc.parent)) == ["claims_mutations.md"]


def test_mutation_source_at_raises_where_git_fails(load, monkeypatch, tmp_path):
    ms = load("mutation_score")
    _copy_without_git(ms, monkeypatch, tmp_path)
    with pytest.raises(UsageError, match="git show 0123456789ab:numerics/x.py"):
        ms.source_at("numerics/x.py", "0123456789abcdef0123456789abcdef01234567")


def test_mutation_unreached_missing_map_is_one_line(load, tmp_path, capsys):
    ms = load("mutation_score")
    assert ms.main(["unreached", str(tmp_path / "nosuch.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nosuch.json" in err
