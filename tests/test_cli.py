"""The command line: exit codes, JSON output, error messages."""
import json
import subprocess
import sys

import pytest

from attnlab.cli import main


def test_unknown_claim_exits_2(capsys):
    assert main(["verify", "--claim", "no.such.claim"]) == 2
    err = capsys.readouterr().err
    assert "unknown claim id 'no.such.claim'" in err and "attnlab list" in err


@pytest.mark.parametrize("argv,word", [(["verify", "--tier", "bogus"], "tier"),
                                       (["verify", "--paper", "xx"], "paper"),
                                       (["list", "--paper", "xx"], "paper"),
                                       (["results", "xx"], "paper"),
                                       (["run", "no-such-experiment"], "run target"),
                                       (["compare", "no-such"], "compare target")])
def test_bad_input_exits_2(argv, word, capsys):
    assert main(argv) == 2
    assert word in capsys.readouterr().err


def test_verify_json_stdout(capsys):
    rc = main(["verify", "--claim", "fenchel.sec5.gaussian-grid", "--json", "-"])
    out = capsys.readouterr().out
    rows = json.loads(out)
    assert rc == 0 and rows[0]["id"] == "fenchel.sec5.gaussian-grid" and rows[0]["verdict"] == "holds"
    for k in ("id", "paper", "reference", "statement", "method", "tier", "expected", "verdict",
              "measured", "tolerance", "seconds", "explanation"):
        assert k in rows[0]


def test_verify_exits_1_on_disagreement(monkeypatch, capsys):
    from attnlab import catalog
    from attnlab.catalog import Claim, holds_if

    c = Claim("fenchel.test.broken", "fenchel", "r", "s", "float64", "fast", "holds",
              lambda: holds_if(False, 1.0, 0.0), "", ())
    monkeypatch.setitem(catalog._REGISTRY, c.id, c)
    assert main(["verify", "--claim", c.id]) == 1


def test_list_json(capsys):
    assert main(["list", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"id", "method", "tier", "expected"} <= set(rows[0])


def test_help_is_fast_and_light():
    code = ("import sys, attnlab.cli as c\n"
            "heavy = [m for m in ('torch', 'cvxpy', 'sympy', 'scipy', 'numpy', 'pandas') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "", f"`attnlab --help` would import {out.strip()}"


def test_results_wall_times_from_records(tmp_path, capsys):
    """`attnlab results P --wall-times` reads the cost of each run from its records: mean wall seconds,
    epochs run, wall seconds per epoch, and how training stopped."""
    import argparse

    from attnlab import experiment as E

    args = argparse.Namespace(results_dir=str(tmp_path), quiet=True, force=False, resume=False)
    for seed, (wall, epochs) in enumerate([(10.0, 5), (30.0, 10)]):
        ctx = E.RunContext("efa-demo", seed, "cpu", False, {"lr": 0.1}, args, "uni-EFA")
        path = ctx.write_record([E.metric_row("s", "EFA", "mse", 1.0)],
                                training={"stopped": "early-stop", "epochs_run": epochs, "best_epoch": epochs - 1})
        rec = json.loads(path.read_text())
        assert rec["wall_seconds"] >= 0
        path.write_text(json.dumps({**rec, "wall_seconds": wall}))    # what the table reads, not a clock
    assert main(["results", "efa", "--wall-times", "--results-dir", str(tmp_path), "--json", "-"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["run"] == "uni-EFA" and row["n"] == 2 and row["stopped"] == {"early-stop": 2}   # one value a key
    assert row["mean wall s"] == pytest.approx(20.0) and (row["min wall s"], row["max wall s"]) == (10.0, 30.0)
    assert main(["results", "efa", "--wall-times", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "10.0-30.0" in out and "early-stop 2" in out
    assert main(["results", "efa", "--wall-times", "--results-dir", str(tmp_path), "--format", "csv"]) == 0
    csv = capsys.readouterr().out.splitlines()
    assert "min wall s" in csv[0] and "early-stop 2" in csv[1]
    assert row["s/epoch"] == pytest.approx((10 / 5 + 30 / 10) / 2)
    assert main(["results", "efa", "--wall-times", "--results-dir", str(tmp_path), "--config", "quick"]) == 2
    assert "--wall-times: no efa records of config quick" in capsys.readouterr().err


def test_results_per_seed_lists_every_seed_in_order(tmp_path, capsys):
    """`attnlab results P --per-seed`: every seed's value in seed order (written out of order here),
    the converged count, the paper's number; with --wall-times it is a usage error."""
    import argparse

    from attnlab import experiment as E

    args = argparse.Namespace(results_dir=str(tmp_path), quiet=True, force=False, resume=False)
    for seed, value in [(2, 3.0), (0, 1.0), (1, 2.5)]:
        ctx = E.RunContext("efa-demo", seed, "cpu", False, {"lr": 0.1}, args, "uni-EFA")
        # seeds 1, 2: a validation curve that levelled off; seed 0: one still falling (attnlab.convergence)
        val = [5.0, 3.0, 2.0, 2.0, 2.0, 2.1] if seed else [5.0, 4.0, 3.0, 2.0, 1.5, 1.0]
        ctx.write_record([E.metric_row("s", "EFA", "mse", value)],
                         training={"stopped": "early-stop" if seed else "max-epochs", "epochs_run": 6},
                         extra={"history": [[i + 1, v, v] for i, v in enumerate(val)]}, trivial={"value": 10.0})
    assert main(["results", "efa", "--per-seed", "--results-dir", str(tmp_path), "--json", "-"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["seeds"] == [0, 1, 2] and row["values"] == [1.0, 2.5, 3.0]
    assert row["n"] == 3 and row["converged"] == 2
    assert main(["results", "efa", "--per-seed", "--results-dir", str(tmp_path), "--format", "md"]) == 0
    assert "| 0, 1, 2 | 1, 2.5, 3 | 2/3 |" in capsys.readouterr().out
    assert main(["results", "efa", "--per-seed", "--wall-times", "--results-dir", str(tmp_path)]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["results", "efa", "--per-seed", "--results-dir", str(tmp_path), "--config", "quick"]) == 2
    assert "--per-seed: no efa records of config quick" in capsys.readouterr().err


def test_a_claim_runs_as_if_first_in_its_process():
    """A claim's numbers do not depend on what ran before it in the process (verify --jobs runs claims in other
    orders): with mpmath's precision and the global generators disturbed, as earlier checks left them, the
    records equal those of a clean start, and the disturbed states come back afterwards."""
    import random

    import mpmath as mp
    import numpy as np
    import torch

    from attnlab import catalog

    ids = ("kernel.eq3.gaussian-case", "kernel.eq1.sequence-layer", "kernel.ref.super-exponential-rate")

    def records():
        return [json.dumps(catalog.jsonable(catalog.run_claim(catalog.get_claim(i)).evidence.measured), sort_keys=True)
                for i in ids]

    clean = records()
    prec = mp.mp.prec
    try:
        mp.mp.dps = 40
        random.seed(5), np.random.seed(5), torch.manual_seed(5)
        states = (random.getstate(), np.random.get_state()[1].tolist(), torch.random.get_rng_state())
        assert records() == clean
        assert mp.mp.dps == 40 and random.getstate() == states[0]
        assert np.random.get_state()[1].tolist() == states[1] and torch.equal(torch.random.get_rng_state(), states[2])
    finally:
        mp.mp.prec = prec


def test_verify_in_two_processes_gives_the_same_records(tmp_path, capsys):
    """`verify --jobs 2` (two worker processes) returns the claims in catalog order with the verdicts, measurements and
    tolerances of a run in one process; a bad --jobs is one line, exit 2."""
    claims = ["fenchel.sec5.gaussian-grid", "efa.results.movielens-ratings-v1", "kernel.results.ecg",
              "bidir.results.toy-corpus-p300"]
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["verify", "--claim", *claims, "--json", str(one)]) == 0
    assert main(["verify", "--claim", *claims, "--jobs", "2", "--json", str(two)]) == 0
    keep = ("id", "verdict", "measured", "tolerance", "explanation", "n_seeds_used", "ci95")
    a, b = ([{k: r.get(k) for k in keep} for r in json.loads(p.read_text())] for p in (one, two))
    assert a == b and len(b) == len(claims)
    capsys.readouterr()
    for bad in ("0", "two", "-3"):
        assert main(["verify", "--claim", claims[0], "--jobs", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--jobs" in err[0]


def test_verify_processes_use_one_thread_of_every_pool():
    """attnlab.parallel.one_thread (what `verify` calls in its process and in each worker) limits torch and
    every BLAS / OpenMP pool loaded (scipy's OpenBLAS included, which scipy.linalg loads) to one thread."""
    code = ("import numpy, torch, threadpoolctl\n"
            "from attnlab.parallel import one_thread\n"
            "one_thread()\n"
            "pools = threadpoolctl.threadpool_info()\n"
            "print(torch.get_num_threads(), sorted({p['num_threads'] for p in pools}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "[1]"], out


def test_converge_names_itself_in_its_help_and_errors(capsys):
    """`attnlab converge --help` printed the usage of `attnlab compare kernel-quadrature` (outside review)."""
    from attnlab.cli import main

    with pytest.raises(SystemExit):
        main(["converge", "--help"])
    assert capsys.readouterr().out.startswith("usage: attnlab converge")
    assert main(["converge", "--bogus"]) == 2
    assert "attnlab converge: unrecognized arguments: --bogus" in capsys.readouterr().err
