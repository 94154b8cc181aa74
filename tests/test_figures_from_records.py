"""Figures are drawn from stored records, never from training: the kernel attention-density figures
read the samples the runner keeps in each record; without them, one line names the run to make them."""
from __future__ import annotations

import json

import pytest
import torch

from attnlab import cli
from attnlab.experiments.kernel import common as C
from attnlab.experiments.kernel import forda, time_warping
from attnlab.experiments.models.kernel_models import TimeWarpingNet
from attnlab.paper_figures import kernel_experiments as K


@pytest.fixture
def no_training(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a figure trained a model")

    monkeypatch.setattr(torch.Tensor, "backward", boom)


def _write(root, experiment, config, tag, seed, model, sample, config_values=None):
    folder = root / experiment / config
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"experiment": experiment, "config": config, "tag": tag, "seed": seed,
           "config_values": config_values or {}, "extra": {} if sample is None else {"attention_sample": sample},
           "metrics": [{"setting": "test", "model": model, "metric": "accuracy", "value": 75.0}]}
    (folder / f"{tag}-seed{seed}.json").write_text(json.dumps(rec))


def _forda_records(root, with_sample=True):
    cfg = forda.CONFIGS["quick"]
    torch.manual_seed(0)
    x = torch.randn(6, 100)
    for m in K.FORDA_KINDS:
        net = forda.build(m, 100, 2, cfg)
        sample = C.attention_sample(net, [x], torch.zeros(6, dtype=torch.long)) if with_sample else None
        _write(root, "kernel-forda", "quick", m, 0, C.DISPLAY[m], sample)


def _warping_records(root):
    cv = time_warping.CONFIGS["quick"]
    X, y, _, _ = C.time_warping_data(cv["n"], cv["length"], cv["lam_max"], seed=0)
    for m in K.TW_KINDS:
        torch.manual_seed(0)
        net = TimeWarpingNet(m, cv["length"], cv["n_basis"], cv["n_inducing"], cv["grid"], cv["hidden"])
        sample = C.attention_sample(net, [torch.from_numpy(X)], torch.from_numpy(y))
        _write(root, "kernel-time-warping", "quick", f"N{cv['n_basis']}-{m}", 0, C.DISPLAY[m], sample, cv)


def test_attention_sample_holds_inputs_grid_and_density():
    cfg = forda.CONFIGS["quick"]
    x = torch.randn(7, 100)
    s = C.attention_sample(forda.build("kernel_sparsemax", 100, 2, cfg), [x], torch.zeros(7, dtype=torch.long))
    assert s["rows"] == [0, 1, 2, 3] and len(s["input"]) == 4 and len(s["input"][0]) == 100
    assert len(s["density"]) == 4 and len(s["density"][0]) == len(s["grid"])
    json.dumps(s)
    assert C.attention_sample(forda.build("discrete_softmax", 100, 2, cfg), [x], torch.zeros(7)) is None
    assert C.attention_sample(forda.build("lstm_fcn", 100, 2, cfg), [x], torch.zeros(7)) is None


@pytest.mark.parametrize("name", ["kernel_exp_forda", "kernel_exp_time_warping"])
def test_density_figures_draw_from_records_identically(tmp_path, monkeypatch, no_training, name):
    root = tmp_path / "results"
    _forda_records(root)
    _warping_records(root)
    monkeypatch.setenv("ATTNLAB_RESULTS", str(root))
    pngs = []
    for k in range(2):
        (tmp_path / f"out{k}").mkdir()
        (png,) = K.FIGURES[name](tmp_path / f"out{k}")
        pngs.append(png.read_bytes())
    assert pngs[0][:8] == b"\x89PNG\r\n\x1a\n" and pngs[0] == pngs[1]


def test_missing_sample_names_the_run(tmp_path, monkeypatch, capsys, no_training):
    root = tmp_path / "results"
    _forda_records(root, with_sample=False)            # records written before samples were stored
    monkeypatch.setenv("ATTNLAB_RESULTS", str(root))
    assert cli.main(["figures", "--only", "kernel_exp_forda", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if line.startswith("attnlab: error:")]) == 1
    assert "attnlab run kernel-forda --config full-es --models cts_softmax,kernel_sparsemax" in err[-1]
    assert cli.main(["figures", "--only", "kernel_exp_time_warping", "--out", str(tmp_path / "o")]) == 2
    assert "attnlab run kernel-time-warping" in capsys.readouterr().err


def test_bidir_scatter_without_record_names_the_run(tmp_path, monkeypatch, capsys, no_training):
    (tmp_path / "none").mkdir()
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "none"))
    assert cli.main(["figures", "--only", "toy_scatter", "--out", str(tmp_path / "o")]) == 2
    assert "attnlab run bidir-toy-corpus --seed 0" in capsys.readouterr().err


def test_a_results_folder_that_is_not_there_is_refused_before_a_figure_is_replaced(tmp_path, monkeypatch, capsys,
                                                                                  no_training):
    """$ATTNLAB_RESULTS with a typo drew a figure of "no records yet" over a good one, exit 0."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "kernel_exp_results.png").write_bytes(b"a good figure")
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "typo"))
    assert cli.main(["figures", "--only", "kernel_exp_results", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "$ATTNLAB_RESULTS" in err and "no such folder" in err
    assert (out / "kernel_exp_results.png").read_bytes() == b"a good figure"


def test_instacart_figures_take_the_config_that_has_the_efa_record(tmp_path, monkeypatch, no_training):
    """Figures 3-4 come from the first Instacart config holding a unidirectional EFA record with Figure 3
    data: a config with FM records only (a sweep part-way) is passed over, not an error."""
    import shutil

    from attnlab.experiment import results_root

    src = results_root() / "efa-instacart" / "full-es" / "unidirectional-EFA-seed0.json"
    if not src.exists():
        pytest.skip("no committed full-es unidirectional EFA record")
    root = tmp_path / "results" / "efa-instacart"
    _write(tmp_path / "results", "efa-instacart", "full", "unidirectional-FM", 0, "FM", None)
    (root / "full-es").mkdir(parents=True)
    shutil.copy(src, root / "full-es" / src.name)
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    assert cli.main(["figures", "--only", "exp_fig3", "exp_fig4", "--out", str(tmp_path / "o")]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["efa_exp_fig3.png", "efa_exp_fig4.png"]
    (root / "full-es" / src.name).unlink()
    assert cli.main(["figures", "--only", "exp_fig3", "--out", str(tmp_path / "o2")]) == 2
