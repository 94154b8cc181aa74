"""Unit tests of the EFA experiment runners: preprocessing counts, splits, the synthetic generator,
Table 3 scores, the temperature substitute, and the quick configs (EFA beats FM)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attnlab.cli import call

from attnlab.experiments.efa import data as D


# --------------------------------------------------------------------------- preprocessing


@pytest.fixture(scope="module")
def movielens():
    return D.movielens_frame()


@pytest.mark.parametrize("experiment,counts", [("sequences", (902, 50, 69.50, 13757)),
                                               ("ratings", (893, 50, 72.08, 12465))])
def test_movielens_counts(movielens, experiment, counts):
    seqs, info = D.movielens_preprocess(movielens, experiment)
    assert (info["users"], info["movies"], info["sparsity_percent"], info["ratings"]) == counts
    assert len(seqs) == counts[0] and seqs.n_targets == counts[3]
    assert seqs.items.max() == 50 and seqs.items[seqs.items > 0].min() == 1
    if experiment == "ratings":
        v = seqs.values[seqs.items > 0]
        assert set(np.unique(v)) == {1.0, 2.0, 3.0}


def test_movielens_tie_break_matters(movielens):
    """The other choice at the rank-50 tie does not give the paper's 902 users."""
    top = D.top_movies(movielens, 51)
    assert top[49] == 28 and top[50] == 191
    alt = movielens[movielens.item_id != 28]
    seqs, info = D.movielens_preprocess(alt, "sequences", check=False)
    assert info["users"] != 902


def test_movielens_split_keeps_every_user():
    for n in (902, 893):
        tr, va, te = D.split_three(n)
        allu = np.concatenate([tr, va, te])
        assert len(allu) == n and len(np.unique(allu)) == n          # a partition: nobody dropped
        assert len(te) == round(0.25 * n) and len(va) == round(0.1875 * n)
    with pytest.raises(ValueError, match="fractions"):
        D.split_three(10, (0.5, 0.5, 0.5))


def test_instacart_counts():
    train, test = D.instacart_load()
    assert (len(train), len(test)) == (24781, 1433)
    assert (train.n_targets, test.n_targets) == (275345, 16066)
    tr, va = D.split_two(len(train), 0.25)
    assert len(va) == round(0.25 * 24781) and len(np.intersect1d(tr, va)) == 0


# --------------------------------------------------------------------------- synthetic generator


def test_synthetic_means_rules():
    orders = np.array([[1, 2, 3, 4, 5],      # 2 after 1 -> 1; 4 directly after 3 -> 1; 5 last -> 5
                       [2, 1, 4, 3, 5],      # 2 before 1 -> 5; 3 directly after 4 -> 1
                       [5, 3, 1, 4, 2]])     # 4 not directly after 3; 5 not last
    mu = D.synthetic_means(orders)
    assert mu.tolist() == [[3, 1, 3, 1, 5], [5, 3, 3, 1, 5], [3, 3, 3, 3, 1]]


def test_synthetic_noise_is_unit_gaussian():
    orders, y, mu = D.synthetic_ratings(20000, np.random.default_rng(0))
    r = (y - mu).ravel()
    assert abs(r.mean()) < 0.02 and abs(np.mean(r ** 2) - 1) < 0.02      # Bayes MSE = 1
    # every order is a permutation; all 120 appear about equally often
    assert np.all(np.sort(orders, 1) == np.arange(1, 6))
    _, counts = np.unique(orders, axis=0, return_counts=True)
    assert len(counts) == 120 and counts.min() > 100


# --------------------------------------------------------------------------- Table 3 and temperature


def test_co_purchase_scores():
    from attnlab.experiments.efa.instacart import co_purchase_scores, top_k

    rng = np.random.default_rng(1)
    b, d = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    S = co_purchase_scores(b, d)
    off = ~np.eye(6, dtype=bool)
    assert np.allclose(S[off], S.T[off])
    assert np.isclose(S[0, 1], b[0] @ d[1] + d[0] @ b[1])
    for i, t in enumerate(top_k(S, 3)):
        assert i not in t and len(t) == 3


def test_paper_table3_names_are_data_items():
    from attnlab.experiments.paper_numbers.efa import PAPER_TABLE3

    for item, cells in PAPER_TABLE3.items():
        assert item in D.INSTACART_ITEMS and len(cells) == 4
        for top in cells.values():
            assert len(set(top)) == 3 and item not in top and set(top) <= set(D.INSTACART_ITEMS)


def test_table3_rows_counts_agreement_per_seed():
    from attnlab.experiments.efa.instacart import TABLE3_ITEMS, table3_rows
    from attnlab.experiments.paper_numbers.efa import PAPER_TABLE3

    paper = PAPER_TABLE3["Carrots"][("unidirectional", "EFA")]
    others = [n for n in D.INSTACART_ITEMS if n not in paper and n != "Carrots"]

    def rec(seed, carrots):
        t3 = {i: others[:3] for i in TABLE3_ITEMS}
        t3["Carrots"] = list(carrots)
        return {"tag": "unidirectional-EFA", "seed": seed, "extra": {"table3": t3}}

    recs = [rec(1, [paper[0], others[0], paper[2]]), rec(0, [paper[0], paper[1], paper[2]]),
            rec(2, [others[1], paper[0], others[2]])]
    rows = {(r["item"], r["setting"], r["model"]): r for r in table3_rows(recs)}
    assert len(rows) == 16
    r = rows[("Carrots", "unidirectional", "EFA")]
    assert r["shared with paper, per seed"] == "3 2 1" and r["seeds"] == 3
    assert r["ours (lowest seed)"] == ", ".join(paper) and r["in every seed's top 3"] == paper[0]
    assert rows[("Carrots", "bidirectional", "FM")]["seeds"] == 0


def test_haversine_and_neighbours():
    assert abs(D.haversine_km(0, 0, 0, 1) - 111.195) < 0.01
    coords = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 3.0], [0.0, 6.0]])
    nb = D.nearest_neighbours(coords, 2)
    assert nb.tolist() == [[1, 2], [0, 2], [1, 0], [2, 1]]
    with pytest.raises(ValueError, match="k must be"):
        D.nearest_neighbours(coords, 4)


def test_colorado_substitute_grid():
    g = D.colorado_grid()
    assert g.temps.shape[1] == 44 and g.substitute and np.isfinite(g.temps).all() and np.isfinite(g.lags).all()
    years = np.array([int(s[:4]) for s in g.sample_labels])
    assert years[g.split == "train"].max() < years[g.split == "val"].min() <= years[g.split == "val"].max() \
        < years[g.split == "test"].min()


def test_paper_numbers_keys():
    from attnlab.experiments.paper_numbers.efa import PAPER_NUMBERS

    assert PAPER_NUMBERS[("efa-synthetic", "unidirectional", "FM", "test MSE")] == 4.519
    assert PAPER_NUMBERS[("efa-temperature", "44 cities, October", "FM(k=5)", "test MSE")] == 22.685
    # the paper's claim behind Table 2: EFA's mean predictions are closer to (1, 2, 3) than FM's
    for s in ("v1 bidirectional", "v1 unidirectional", "v2 bidirectional", "v2 unidirectional"):
        for r in (1, 2, 3):
            fm = PAPER_NUMBERS[("efa-movielens-ratings", s, "FM", f"mean pred | y={r}")]
            efa = PAPER_NUMBERS[("efa-movielens-ratings", s, "EFA", f"mean pred | y={r}")]
            assert abs(efa - r) <= abs(fm - r)


# --------------------------------------------------------------------------- quick configs


def _metrics(root, experiment):
    out = {}
    for p in sorted((root / experiment / "quick").glob("*.json")):
        rec = json.loads(p.read_text())
        assert rec["config"] == "quick" and rec["seed"] == 0
        for m in rec["metrics"]:
            out[(m["setting"], m["model"], m["metric"])] = m["value"]
    return out


def _run(name, args, tmp_path):
    from attnlab.cli import main

    assert main(["run", name, "--quick", "--seed", "0", "--quiet", "--results-dir", str(tmp_path)] + args) == 0
    return _metrics(tmp_path, name)


def test_quick_synthetic(tmp_path):
    m = _run("efa-synthetic", ["--settings", "bidirectional"], tmp_path)
    fm, efa = m[("bidirectional", "FM", "test MSE")], m[("bidirectional", "EFA", "test MSE")]
    assert efa < fm - 0.5                    # EFA beats FM (population optima: 1 vs 2.605)
    assert fm > 2.605 - 0.15                 # no FM beats its population optimum (SE ~ 0.05 here)


def test_quick_movielens_sequences(tmp_path):
    m = _run("efa-movielens-sequences", ["--settings", "bidirectional"], tmp_path)
    assert m[("bidirectional", "EFA", "test CE")] < m[("bidirectional", "FM", "test CE")] < np.log(50)


def test_quick_movielens_ratings(tmp_path):
    m = _run("efa-movielens-ratings", ["--settings", "bidirectional", "--versions", "v1"], tmp_path)
    s = "v1 bidirectional"
    for model in ("FM", "EFA"):
        ce, full = m[(s, model, "test CE")], m[(s, model, "test NLL (with log-factorial)")]
        assert full > ce                      # log((y-1)!) >= 0, > 0 for y = 3
    assert m[(s, "EFA", "test CE")] < m[(s, "FM", "test CE")]


def test_quick_instacart(tmp_path):
    m = _run("efa-instacart", ["--settings", "bidirectional"], tmp_path)
    # the quick config (2 epochs on 1,200 baskets) is too short for EFA to overtake FM (the paper's
    # gap, 3.420 vs 3.476, needs the long run), so only learning is asserted: both beat uniform
    for model in ("FM", "EFA"):
        assert m[("bidirectional", model, "test CE")] < np.log(63) - 0.2
    rec = json.loads(next((tmp_path / "efa-instacart" / "quick").glob("bidirectional-EFA*.json")).read_text())
    assert set(rec["extra"]["table3"]) == {"Asparagus", "Carrots", "Fresh Cauliflower", "Organic Avocado"}


def test_lr_flag_trains_at_that_rate_into_its_own_folder(tmp_path, capsys):
    """`--lr` for choosing the learning rate on validation: the config values record it, the records go
    to quick-lrLR, and a rate that is not a positive finite number is a usage error."""
    from attnlab.cli import main

    _run("efa-movielens-sequences", ["--settings", "unidirectional", "--models", "FM", "--lr", "0.02"], tmp_path)
    (path,) = (tmp_path / "efa-movielens-sequences").glob("*/*.json")
    assert path.parent.name == "quick-lr0.02"
    assert json.loads(path.read_text())["config_values"]["lr"] == 0.02
    for bad in ("0", "-1", "nan"):
        assert main(["run", "efa-movielens-sequences", "--quick", "--seed", "0", f"--lr={bad}",
                     "--results-dir", str(tmp_path)]) == 2
        assert "--lr must be a number in [1e-12, 1e+10]" in capsys.readouterr().err


def test_quick_temperature(tmp_path):
    m = _run("efa-temperature", ["--ks", "5", "--efa", "l1"], tmp_path)
    s = "Colorado substitute"
    assert m[(s, "EFA(l=1)", "test MSE")] < m[(s, "FM(k=5)", "test MSE")]
    rec = json.loads(next((tmp_path / "efa-temperature" / "quick").glob("FM-k5*.json")).read_text())
    assert rec["substitute"] and "SUBSTITUTE" in rec["substitute"]


def test_bad_arguments(capsys):
    from attnlab.experiments.efa import synthetic, temperature

    assert call(synthetic.main, ["--settings", "sideways"]) == 2
    assert "--settings" in capsys.readouterr().err
    assert call(temperature.main, ["--efa", "l3"]) == 2
    assert "--efa" in capsys.readouterr().err
