"""The EFA fast paths against the per-target reference (the literal per-target masking of Sec 2.1/2.2
of the EFA paper: one masked copy of the sequence per target).  Method: float64, loss and every
parameter gradient; tolerance 1e-12 relative to the largest entry (outputs) or the largest gradient."""
from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest
import torch

from attnlab.experiments.efa import common as C
from attnlab.experiments.efa import nets
from attnlab.experiments.efa.categorical import ce_loss
from attnlab.experiments.efa.data import Sequences
from attnlab.experiments.models import efa as M

torch.set_num_threads(1)
TOL = 1e-12


def _perturb(net, seed, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return net


def _grads(net):
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in net.parameters()]


def _rel(a, b):
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max()) / max(float(b.abs().max()), 1e-300)


def _grad_rel(g1, g2):
    scale = max(float(g.abs().max()) for g in g2)
    return max(float((a - b).abs().max()) for a, b in zip(g1, g2)) / scale


def _compare(net, call, valid):
    """Outputs (at valid targets) and gradients of a fixed linear read-out, fast vs replicate."""
    res = []
    for method in ("fast", "replicate"):
        net.zero_grad()
        H = call(method)
        w = torch.linspace(-1, 1, H.shape[-1], dtype=H.dtype)
        ((H * w).sum(-1) * valid).sum().backward()
        res.append((H.detach()[valid], _grads(net)))
    (h1, g1), (h2, g2) = res
    return _rel(h1, h2), _grad_rel(g1, g2)


def _batch(rng, B, I, D):
    x = torch.as_tensor(rng.integers(0, D, (B, I)))
    lengths = rng.integers(1, I + 1, B)
    lengths[0] = I
    valid = torch.as_tensor(np.arange(I)[None] < lengths[:, None])
    return x, valid


CONFIGS = [("standard", {"head_dim": 4}), ("standard", {"head_dim": 3, "residual": False}),
           ("paper", {}), ("paper", {"out_proj": True, "bias": True}),
           ("standard", {"head_dim": 4, "orientation": "column"})]


@pytest.mark.parametrize("direction", ["bidirectional", "unidirectional"])
@pytest.mark.parametrize("conv,kw", CONFIGS)
def test_categorical_all_targets_equal_replicate(direction, conv, kw):
    rng = np.random.default_rng(zlib.crc32(f"{direction}{conv}{sorted(kw.items())}".encode()))
    for B, I, layers in ((1, 1, 2), (2, 2, 2), (3, 7, 2), (2, 9, 1), (4, 5, 2)):
        net = M.EFACategorical(11, 8, 16, heads=2, layers=layers, direction=direction, convention=conv,
                               **kw).double()
        _perturb(net, int(rng.integers(1 << 30)))
        x, valid = _batch(rng, B, I, 11)
        e_out, e_grad = _compare(net, lambda m: net.context(x, valid, method=m), valid)
        assert e_out <= TOL and e_grad <= TOL, (B, I, layers, e_out, e_grad)


@pytest.mark.parametrize("direction", ["bidirectional", "unidirectional"])
def test_value_model_all_targets_equal_replicate(direction):
    rng = np.random.default_rng(5)
    net = M.EFAValue("poisson_v2", 6, 8, 8, 12, item_embeddings="center", value_embedding="lookup",
                     n_values=4, value_offset=0, unembedding="mlp", unembed_hidden=5, heads=2, layers=2,
                     direction=direction, convention="standard", head_dim=4).double()
    _perturb(net, 3)
    x, valid = _batch(rng, 4, 8, 6)
    y = torch.as_tensor(rng.integers(0, 4, (4, 8)))
    e_out, e_grad = _compare(net, lambda m: net.representation(y, x, None, valid, method=m), valid)
    assert e_out <= TOL and e_grad <= TOL


def test_layer_norm_stack_is_not_claimed_exact():
    """LayerNorm after layer 1 makes layer 2's keys non-affine in layer 1's attention outputs: the
    all-targets pass refuses it and the models keep the per-target path."""
    net = M.EFACategorical(5, 8, 8, heads=2, layers=2, convention="standard", layer_norm=True)
    assert not M.all_targets_exact(net.stack)
    with pytest.raises(ValueError, match="all_targets_exact"):
        M.bidirectional_all_targets(net.stack, torch.zeros(1, 3, 8), torch.zeros(1, 3, 8),
                                    torch.ones(1, 3, dtype=torch.bool))
    assert M.all_targets_exact(M.EFACategorical(5, 8, 8, layers=2, convention="standard", head_dim=4).stack)
    assert not M.all_targets_exact(M.EFACategorical(5, 8, 8, layers=3, convention="standard", head_dim=4).stack)


def _sequences(rng, N, L, D):
    lengths = rng.integers(1, L + 1, N)
    items = np.zeros((N, L), dtype=np.int64)
    for f, n in enumerate(lengths):
        items[f, :n] = rng.integers(1, D + 1, n)
    return Sequences(items, lengths)


@pytest.mark.parametrize("direction", ["bidirectional", "unidirectional"])
@pytest.mark.parametrize("kind", ["EFA", "FM"])
def test_sequence_sampling_loss_equals_per_target(direction, kind):
    """The summed loss of a batch of whole sequences (every position a target) and of the same
    targets as per-target examples, with their gradients (the training step's two samplings on the
    same targets); and the per-target step evaluated in trimmed length groups."""
    rng = np.random.default_rng(11)
    seqs = _sequences(rng, 9, 8, 7)
    net = nets.Categorical(kind, direction, 7, 8, dim=8, heads=2, layers=2).double()
    _perturb(net, 1, 0.2)
    seq, tgt = C.sequence_examples(seqs), C.target_examples(seqs)
    assert C.n_targets(seq) == C.n_targets(tgt) == int(seqs.lengths.sum())
    res = []
    for data, grouped in ((seq, False), (tgt, False), (tgt, True)):
        net.zero_grad()
        idx = torch.arange(C.n_examples(data))
        parts = C.groups(data, idx, net.causal, min_group=5, call_cost=0) if grouped else [(idx, None)]
        if grouped:
            assert len(parts) > 1
        total = sum(ce_loss(net, C.to_device(C.take(data, p), "cpu", L)).sum() for p, L in parts)
        total.backward()
        res.append((total.detach(), _grads(net)))
    for tot, g in res[1:]:
        assert _rel(tot, res[0][0]) <= TOL and _grad_rel(g, res[0][1]) <= TOL


def test_evaluate_by_sequence_equals_per_target():
    rng = np.random.default_rng(2)
    seqs = _sequences(rng, 13, 9, 6)
    for direction in ("bidirectional", "unidirectional"):
        net = _perturb(nets.Categorical("EFA", direction, 6, 9, dim=8).double(), 4, 0.2)
        a = C.evaluate(net, ce_loss, C.sequence_examples(seqs), "cpu", batch_size=20)
        b = C.evaluate(net, ce_loss, C.target_examples(seqs), "cpu", batch_size=7)
        assert abs(a - b) <= TOL * abs(b)


def test_sequence_step_size():
    seqs = Sequences(np.ones((10, 4), dtype=np.int64), np.full(10, 4))
    assert C.step_sizes(C.sequence_examples(seqs), 8) == 2          # 2 sequences = 8 targets
    assert C.step_sizes(C.target_examples(seqs), 8) == 8
    from attnlab.errors import UsageError

    with pytest.raises(UsageError, match="--sampling"):
        C.examples(seqs, "batches")


# --------------------------------------------------------------------------- processes
TIMING = ("wall_seconds", "finished", "train_seconds", "command", "fixed_models_eval_s")


def _no_seconds(x):
    """x without the timings a record keeps per epoch (keys 'seconds' / '*_seconds', at any depth)."""
    if isinstance(x, dict):
        return {k: _no_seconds(v) for k, v in x.items() if not (k == "seconds" or k.endswith("_seconds"))}
    if isinstance(x, list):
        return [_no_seconds(v) for v in x]
    return x


def _records(root):
    out = {}
    for p in sorted(root.rglob("*.json")):
        rec = json.loads(p.read_text())
        for k in TIMING:
            rec.pop(k, None)
            rec.get("extra", {}).pop(k, None)
        rec["metrics"] = [m for m in rec.get("metrics", []) if not str(m.get("metric")).endswith("_seconds")]
        out[p.relative_to(root).as_posix()] = _no_seconds(rec)
    return out


def _synthetic(tmp_path, *flags):
    from attnlab.cli import main

    assert main(["run", "efa-synthetic", "--quick", "--seeds", "2", "--settings", "unidirectional", "--models", "EFA",
                 "--quiet", "--results-dir", str(tmp_path), *flags]) == 0


def test_jobs_give_the_same_records_and_resume(tmp_path, monkeypatch, capsys):
    """--jobs 2 (two joblib processes) writes records identical to --jobs 1 except for timings;
    a re-issued command skips the recorded runs; --jobs and --threads reject bad values."""
    from attnlab.parallel import torch_threads
    from attnlab.experiments.efa import synthetic

    monkeypatch.setitem(synthetic.QUICK, "epochs", 2)
    monkeypatch.setitem(synthetic.QUICK, "n_users", 200)
    monkeypatch.setitem(synthetic.QUICK, "n_train_users", 120)
    _synthetic(tmp_path / "one", "--jobs", "1")
    _synthetic(tmp_path / "two", "--jobs", "2")
    one, two = _records(tmp_path / "one"), _records(tmp_path / "two")
    assert len(one) == 2 and one == two
    assert all(r["extra"]["sampling"] == "sequences" for r in one.values())
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "two").rglob("*.json")}
    _synthetic(tmp_path / "two", "--jobs", "2")                       # resume: nothing re-run
    assert stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "two").rglob("*.json")}
    assert torch_threads(type("A", (), {"threads": 64, "jobs": 1})()) <= os.cpu_count()
    assert torch_threads(type("A", (), {"threads": 1, "jobs": 2})()) == 1
    capsys.readouterr()                                                 # (the cap's note, said once a process)
    from attnlab.experiments.efa import movielens_sequences

    from attnlab.cli import call

    for flags, name in ((["--jobs", "0"], "--jobs"), (["--threads", "x"], "--threads"),
                        (["--backend", "slurm"], "--backend"), (["--sampling", "all"], "--sampling")):
        assert call(movielens_sequences.main, ["--quick", "--quiet", *flags]) == 2
        err = capsys.readouterr().err
        assert name in err and len(err.strip().splitlines()) == 1


def test_kernel_runner_jobs_give_the_same_records(tmp_path, monkeypatch):
    """A kernel runner fans its (seed, model) runs out with --jobs 2 (attnlab.parallel.run_tasks): the records are those
    of --jobs 1 except for timings, and a re-issued command re-runs nothing."""
    from attnlab.cli import main
    from attnlab.experiments.kernel import time_warping

    monkeypatch.setitem(time_warping.CONFIGS, "quick", dict(time_warping.CONFIGS["quick"], n=120, epochs=1))
    for jobs in ("1", "2"):
        assert main(["run", "kernel-time-warping", "--quick", "--seeds", "2", "--models", "cts_softmax,kernel_softmax",
                     "--quiet", "--jobs", jobs, "--results-dir", str(tmp_path / jobs)]) == 0
    one, two = _records(tmp_path / "1"), _records(tmp_path / "2")
    assert len(one) == 4 and one == two
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "2").rglob("*.json")}
    assert main(["run", "kernel-time-warping", "--quick", "--seeds", "2", "--models", "cts_softmax,kernel_softmax",
                 "--quiet", "--jobs", "2", "--results-dir", str(tmp_path / "2")]) == 0
    assert stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "2").rglob("*.json")}


def _shrunk(monkeypatch, runner: str) -> list[str]:
    """The quick config of `runner` cut to seconds per seed; returns the runner's extra flags."""
    from attnlab.experiments.bidir import toy_corpus
    from attnlab.experiments.fenchel import deviation, ot_vit

    if runner == "fenchel-ot-vit":
        monkeypatch.setattr(ot_vit, "CONFIG_DIGITS_QUICK", dict(ot_vit.CONFIG_DIGITS_QUICK, epochs=1, train_limit=96))
    elif runner == "fenchel-deviation":
        monkeypatch.setattr(deviation, "CONFIG_QUICK", dict(deviation.CONFIG_QUICK, train_sentences=48, n_eval=2))
    elif runner == "bidir-toy-corpus":
        monkeypatch.setattr(toy_corpus, "CONFIG_QUICK", dict(toy_corpus.CONFIG_QUICK, dims=[4], steps=5))
        return ["--sentences", "200"]
    return []                                    # (bidir-analogies: its quick config takes seconds a seed)


@pytest.mark.parametrize("runner", ["fenchel-ot-vit", "fenchel-deviation", "bidir-toy-corpus", "bidir-analogies"])
def test_seed_runners_jobs_give_the_same_records(runner, tmp_path, monkeypatch):
    """The runners that write one record per seed fan the seeds out with --jobs 2 (attnlab.parallel.run_tasks):
    the records are those of --jobs 1 except for timings, and a re-issued command re-runs nothing."""
    from attnlab.cli import main

    if runner == "bidir-analogies":
        from attnlab.experiments.bidir.analogies import have_nlp

        if not have_nlp():
            pytest.skip("bidir-analogies needs the nlp extra")

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    flags = _shrunk(monkeypatch, runner)
    for jobs in ("1", "2"):
        assert main(["run", runner, "--quick", "--seeds", "2", "--device", "cpu", "--quiet", "--jobs", jobs,
                     "--results-dir", str(tmp_path / jobs)] + flags) == 0
    one, two = _records(tmp_path / "1"), _records(tmp_path / "2")
    assert len(one) == 2 and one == two
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "2").rglob("*.json")}
    assert main(["run", runner, "--quick", "--seeds", "2", "--device", "cpu", "--quiet", "--jobs", "2",
                 "--results-dir", str(tmp_path / "2")] + flags) == 0
    assert stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "2").rglob("*.json")}


@pytest.mark.slow
def test_efa_temperature_jobs_give_the_same_records(tmp_path):
    """efa-temperature fans its (model, seed) runs out: --jobs 2 writes the records of --jobs 1 (timings
    aside).  Slow tier: the quick config trains five models twice (about 3 minutes)."""
    from attnlab.cli import main

    for jobs in ("1", "2"):
        assert main(["run", "efa-temperature", "--quick", "--seeds", "2", "--quiet", "--jobs", jobs,
                     "--results-dir", str(tmp_path / jobs)]) == 0
    one, two = _records(tmp_path / "1"), _records(tmp_path / "2")
    assert len(one) == 10 and one == two


@pytest.mark.slow
def test_baseline_grid_search_n_jobs_same_choice():
    """bidir baselines: GridSearchCV over 2 processes chooses and scores exactly as over one."""
    from attnlab.experiments.bidir.baselines import run_baselines

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (120, 4))
    y = (X.sum(1) + rng.integers(0, 2, 120)) % 3
    a, b = (run_baselines(X[:90], y[:90], X[90:], y[90:], 3, seed=0, grid="reduced", models=("RF",), n_jobs=j)
            for j in (1, 2))
    assert a == b


@pytest.mark.parametrize("kind", ["kernel_softmax", "cts_softmax"])
def test_kernel_context_without_forming_B(kind):
    """Kernel models: c = (r G^T) h equals r B^T with B = h^T G formed (Eq. 6 of the kernel paper),
    float64, 1e-12 relative; outputs and gradients."""
    from attnlab.experiments.models.kernel_models import SeriesAttentionNet, TimeWarpingNet

    torch.manual_seed(0)
    net = SeriesAttentionNet(kind, length=30, n_classes=3, hidden=8, n_basis=6, sigmas=(0.1, 0.5)).double()
    h = torch.randn(4, 30, 8, dtype=torch.float64, requires_grad=True)
    c = net.context(h)
    p, prm = net.attention_params(h)
    ref = (net.attn(**prm) @ (h.transpose(1, 2) @ net.G).transpose(1, 2)).squeeze(1)
    assert _rel(c, ref) <= TOL
    g1, = torch.autograd.grad(c.sum(), h)
    g2, = torch.autograd.grad(ref.sum(), h)
    assert _rel(g1, g2) <= TOL
    tw = TimeWarpingNet(kind, length=20, n_basis=6, n_inducing=5).double()
    x = torch.randn(5, 20, dtype=torch.float64)
    ref = (tw.attn(**tw.params(x)) @ (x @ tw.G).unsqueeze(1).transpose(1, 2)).squeeze(-1)
    assert _rel(tw(x), ref) <= TOL


@pytest.mark.slow
def test_ray_backend_writes_the_same_records(tmp_path, monkeypatch):
    """--backend ray on a real local Ray runtime writes the records --jobs 1 writes (timings aside)."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'attnlab[cluster]')")
    from attnlab.experiments.efa import synthetic

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setitem(synthetic.QUICK, "epochs", 2)
    monkeypatch.setitem(synthetic.QUICK, "n_users", 200)
    monkeypatch.setitem(synthetic.QUICK, "n_train_users", 120)
    _synthetic(tmp_path / "one", "--jobs", "1")
    _synthetic(tmp_path / "ray", "--backend", "ray")
    one, ray_ = _records(tmp_path / "one"), _records(tmp_path / "ray")
    assert len(one) == 2 and one == ray_


def test_input_checks_switch():
    """Inside input_checks(False) the models skip the value checks (no host sync); they are back after."""
    net = M.EFACategorical(5, 4, 6)
    bad = torch.tensor([[0, 7, 1]])
    with pytest.raises(ValueError, match="ids"):
        net(bad)
    with M.input_checks(False):
        with pytest.raises(IndexError):           # the unchecked lookup fails later, in indexing
            net(bad)
    with pytest.raises(ValueError, match="ids"):
        net(bad)


_FAULTS = """
import resource, sys, torch
from attnlab.parallel import keep_freed_memory
applied = keep_freed_memory()
for _ in range(10):                               # warm-up: the heap reaches its working size
    y = torch.ones(8 << 20) * 2.0                 # 32 MiB tensors, freed and re-allocated as in a step
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(8):
    y = torch.ones(8 << 20) * 2.0
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _faults(mode: str) -> tuple[bool, int]:
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, check=True,
                         env={**os.environ, "ATTNLAB_MALLOC": mode}).stdout.split()
    return out[0] == "True", int(out[1])


def test_keep_freed_memory_stops_a_training_step_from_faulting_its_tensors_in_again():
    """glibc unmaps a freed large tensor, so the next step faults its pages in again (8 steps of two
    32 MiB tensors: ~16k faults a step); with keep_freed_memory (what `attnlab run` and every fan-out
    worker call), once the heap has grown to the step's size, the steps re-use it: at most a one-off growth
    by a few tensors' pages in all 8 steps.  Page faults are counted, not
    timed; ATTNLAB_MALLOC=default is the reference."""
    import ctypes

    try:
        ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        pytest.skip("the C library has no mallopt (not glibc)")
    applied_ref, ref = _faults("default")
    applied, kept = _faults("keep")
    assert not applied_ref and applied
    assert ref > 8 * 8000, ref                     # each step faulted its 2 x 8192 pages in again
    # at most a one-off growth of the heap by a few tensors (seen: 0 or 4 x 8192 pages), never a
    # fault per step (that would be >= 8 x 2 x 8192)
    assert kept <= 6 * 8192, (kept, ref)


def test_attnlab_malloc_takes_keep_or_default(monkeypatch):
    from attnlab.errors import UsageError
    from attnlab.parallel import keep_freed_memory, malloc_mode

    monkeypatch.setenv("ATTNLAB_MALLOC", "default")
    assert malloc_mode() == "default" and keep_freed_memory() is False
    monkeypatch.delenv("ATTNLAB_MALLOC")
    assert malloc_mode() == "keep"
    monkeypatch.setenv("ATTNLAB_MALLOC", "fast")
    with pytest.raises(UsageError, match="ATTNLAB_MALLOC must be one of keep, default; got 'fast'"):
        keep_freed_memory()


def test_fan_out_workers_end_with_their_parent(tmp_path):
    """A fan-out whose parent is killed (SIGTERM to it alone, as `kill PID` sends) takes its workers with it
    within seconds (attnlab.parallel._exit_with_parent), instead of leaving them training, holding their runs'
    locks and the cores."""
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    script = tmp_path / "fan.py"
    script.write_text(textwrap.dedent(f"""
        import os, time, types
        from attnlab.parallel import fan_out

        def task(i):
            open(os.path.join({str(tmp_path)!r}, f"w{{i}}.pid"), "w").write(str(os.getpid()))
            time.sleep(120)

        fan_out(types.SimpleNamespace(jobs=2, threads=1, backend="local"), task, [0, 1])
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        pids = [tmp_path / f"w{i}.pid" for i in (0, 1)]
        deadline = time.monotonic() + 120
        while not all(p.exists() and p.read_text() for p in pids):
            assert parent.poll() is None and time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        workers = [int(p.read_text()) for p in pids]
        parent.send_signal(signal.SIGTERM)
        parent.wait(30)

        def alive(pid):                    # (a zombie waiting for its new parent to reap it has ended)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] != "Z"
            except FileNotFoundError:      # gone since, or no /proc (not Linux): os.kill's answer
                return not os.path.isdir("/proc")
        deadline = time.monotonic() + 15
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [w for w in workers if alive(w)]
        for w in left:
            os.kill(w, signal.SIGKILL)
        assert not left, f"workers {left} outlived their parent by 15 s"
    finally:
        if parent.poll() is None:
            parent.kill()
