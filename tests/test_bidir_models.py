"""Unit tests of the bidir modules: experiments/models/bidir.py, experiments/bidir/toy_corpus.py,
theory/bidir/compare.py.  (The paper's identities themselves are claims, run by tests/test_claims.py.)"""
from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from attnlab.cli import call
import torch

from attnlab.experiments.bidir import toy_corpus as tc
from attnlab.experiments.models.bidir import (CBOW, AttentionCBOW, BidirAttentionMLM, CBOWMoE, MixtureOfMoEs,
                                      mask_sentences, moe_parameters)


def _batch(V=7, S=5, n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, V, (n, S), generator=g)
    m = torch.arange(n) % S
    return tokens, m, mask_sentences(tokens, m, V), tokens[torch.arange(n), m]


# --------------------------------------------------------------------------- models
def test_mask_sentences_puts_mask_and_keeps_rest():
    tokens, m, x, b = _batch()
    assert (x[torch.arange(len(m)), m] == 7).all()
    keep = torch.ones_like(x, dtype=torch.bool)
    keep[torch.arange(len(m)), m] = False
    assert (x[keep] == tokens[keep]).all()
    assert (tokens == _batch()[0]).all()                  # input not modified


@pytest.mark.parametrize("kw, msg", [(dict(vocab_size=1), "vocab_size"), (dict(heads=0), "heads"),
                                     (dict(layers=0), "layers"), (dict(p=0), "p"),
                                     (dict(init_std=-1.0), "init_std")])
def test_attention_constructor_validates(kw, msg):
    args = dict(vocab_size=7, seq_len=5, p=6)
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        BidirAttentionMLM(**args)


def test_attention_forward_validates_inputs():
    model = BidirAttentionMLM(7, 5, 6, generator=torch.Generator().manual_seed(0))
    tokens, m, x, b = _batch()
    with pytest.raises(ValueError, match="MASK"):
        model(tokens, m)                                  # no mask at m
    with pytest.raises(ValueError, match="m must lie"):
        model(x, m + 10)
    with pytest.raises(ValueError, match="S = 5"):
        model(x[:, :4], m % 4)
    with pytest.raises(ValueError, match="b"):
        model.loss(x, m, b + 7)


def test_shapes_dtype_and_gradients():
    g = torch.Generator().manual_seed(1)
    model = BidirAttentionMLM(7, 5, 6, d=4, d_w=3, heads=2, layers=2, generator=g)
    _, m, x, b = _batch()
    out = model(x, m)
    assert out.shape == (12, 7) and out.dtype == torch.float64
    A = model.attention_weights(x, m)
    assert len(A) == 2 and A[0].shape == (12, 2, 5, 5)
    assert torch.allclose(A[1].sum(-1), torch.ones(12, 2, 5, dtype=torch.float64))
    model.loss(x, m, b).backward()
    assert all(p.grad is not None for p in model.parameters())


def test_moe_parameters_shapes_and_one_layer_only():
    model = BidirAttentionMLM(7, 5, 6, d=4, d_w=3, heads=3, generator=torch.Generator().manual_seed(2))
    q = moe_parameters(model)
    assert q.W_KQ.shape == (3, 6, 6) and q.W_LOV.shape == (3, 7, 6)
    assert q.g.shape == (7,) and q.D.shape == (7, 5)
    with pytest.raises(ValueError, match="layers"):
        moe_parameters(BidirAttentionMLM(7, 5, 6, layers=2))


def test_cbowmoe_validates_shapes_and_gate_is_distribution():
    model = BidirAttentionMLM(7, 5, 6, generator=torch.Generator().manual_seed(3))
    moe = CBOWMoE.from_attention(model)
    _, m, x, b = _batch()
    pi = moe.gate(x, m)
    assert pi.shape == (12, 1, 5) and torch.allclose(pi.sum(-1), torch.ones(12, 1, dtype=torch.float64))
    q = moe_parameters(model)
    with pytest.raises(ValueError, match="W_LOV"):
        CBOWMoE(q.C, q.P, q.W_KQ, q.W_LOV[:, :3], q.g, q.D, 6)
    with pytest.raises(ValueError, match="one head"):
        CBOWMoE.from_attention(BidirAttentionMLM(7, 5, 6, heads=2)).lemma1_loss(x, m, b)


def test_mixture_of_moes_is_a_separate_computation_that_agrees():
    model = BidirAttentionMLM(7, 5, 6, layers=2, init_std=0.5, generator=torch.Generator().manual_seed(4))
    mix = MixtureOfMoEs.from_attention(model)
    _, m, x, _ = _batch()
    with torch.no_grad():
        ref = model(x, m)
        assert (mix(x, m) - ref).abs().max() < 1e-10
        model.W2.mul_(2.0)                                 # the copy does not track the model
        assert (mix(x, m) - ref).abs().max() < 1e-10


def test_cbow_gate_and_masking():
    cb = CBOW(7, 4, window=1, generator=torch.Generator().manual_seed(5))
    om = cb.gate(5, torch.tensor([0, 2, 4]))
    assert torch.equal(om, torch.tensor([[0, 1, 0, 0, 0], [0, .5, 0, .5, 0], [0, 0, 0, 1, 0]], dtype=torch.float64))
    tokens, m, x, b = _batch()
    assert torch.allclose(cb(x, m), cb(tokens, m))
    with pytest.raises(ValueError, match="window"):
        CBOW(7, 4, window=0)
    assert cb.similarity().shape == (7, 7)


def test_attention_cbow_tau_matches_formula():
    att = AttentionCBOW(7, 4, d_w=3, init_std=0.5, generator=torch.Generator().manual_seed(6))
    explicit = att.C @ (att.WK.T @ att.WQ) @ att.C[7] / math.sqrt(3)
    assert torch.allclose(att.log_tau(), explicit)
    _, m, x, b = _batch()
    gam = att.gamma(x, m)
    tau = torch.exp(explicit)[x]
    assert torch.allclose(gam, tau / tau.sum(1, keepdim=True))
    assert att.similarity().shape == (7, 7)


# --------------------------------------------------------------------------- toy corpus
def test_sentence_distribution_exact():
    d = tc.sentence_distribution()
    assert sum(d.values()) == 1 and all(isinstance(v, Fraction) and v > 0 for v in d.values())
    mm = (tc.IDX["mathematics"],)
    # "I like mathematics and mathematics": 1/3 * (4/11)^2
    assert d[(0, 1) + mm + (2,) + mm] == Fraction(1, 3) * Fraction(16, 121)
    # history is never fun: no type-3 sentence "history is fun ..."
    assert (tc.IDX["history"], 3, tc.IDX["fun"], 2, tc.IDX["boring"]) not in d


def test_sampler_and_instances():
    with pytest.raises(ValueError, match="rng"):
        tc.sample_corpus(10, None)
    with pytest.raises(ValueError, match="n must"):
        tc.sample_corpus(0, np.random.default_rng(0))
    c = tc.sample_corpus(300, np.random.default_rng(0))
    assert c.shape == (300, 5) and c.min() >= 0 and c.max() < 12
    d = tc.sentence_distribution()
    assert all(tuple(s) in d for s in c)                  # only sentences of positive probability
    assert np.array_equal(c, tc.sample_corpus(300, np.random.default_rng(0)))
    x, m, b, w = tc.masking_instances(c)
    assert w.sum() == 300 * 5 and (x[np.arange(len(m)), m] == 12).all()
    n = tc.cooccurrence_counts(c)
    assert n.sum() == 300 * 20 and np.array_equal(n, n.T)
    R, M = tc.prop9_targets(n)
    assert np.isnan(M[R == 0]).all() and np.allclose(R.sum(0), 1)


def test_prop14_statistics_constant_tau():
    c = tc.sample_corpus(200, np.random.default_rng(1))
    x, m, b, w = tc.masking_instances(c)
    A, B, Q = tc.prop14_statistics(x, m, b, w, np.zeros(13))
    assert np.allclose(B, A.sum(0)) and np.allclose(5 * Q[B > 0], B[B > 0])
    with pytest.raises(ValueError, match="log_tau"):
        tc.prop14_statistics(x, m, b, w, np.zeros(12))


def test_runner_writes_record(tmp_path, monkeypatch):
    rc = tc.main(["--seed", "3", "--dims", "4", "--steps", "5", "--sentences", "60", "--quiet",
                  "--results-dir", str(tmp_path)])
    assert rc == 0
    # (a config changed by flags is recorded in a folder named after them)
    rec = json.loads((tmp_path / "bidir-toy-corpus" / "full-dims4-steps5-sentences60" / "seed3.json").read_text())
    keys = {(r["setting"], r["model"], r["metric"]) for r in rec["metrics"]}
    assert ("p=4", "CBOW", "spearman_prop9_ratio") in keys and ("p=4", "attention", "spearman_prop14_eq2") in keys
    # 5 L-BFGS iterations do not converge: every model row says so, and so does the record
    per = rec["extra"]["per_dim"]["4"]
    for key, model in (("cbow_lbfgs", "CBOW"), ("attn_lbfgs", "attention")):
        info = per[key]
        assert info["iterations"] <= 5 and info["max_abs_grad"] > tc.GRAD_TOL and info["converged"] is False
        rows = [r for r in rec["metrics"] if r["model"] == model]
        assert rows and all(r["converged"] is False for r in rows)
        assert any(r["metric"] == "lbfgs_max_abs_grad" for r in rows)
    assert rec["converged"] is False and rec["training"]["stopped"] == "max-epochs"
    t = tc.record_targets(rec, 4)
    assert t["sim_cbow"].shape == (12, 12) and t["eq2"].shape == (12, 12)
    assert call(tc.main, ["--dims", "x", "--results-dir", str(tmp_path)]) == 2
    paper_keys = {k[1:] for k in tc.TOY_PAPER_NUMBERS}
    assert ("p=30", "CBOW", "spearman_prop9_ratio") in paper_keys
    # the scatter figure renders from such a record
    from attnlab.paper_figures import bidir as fig

    rec_path = tmp_path / "seed0.json"
    rec_path.write_text(json.dumps(rec))
    monkeypatch.setattr(fig, "RECORD", rec_path)
    (png,) = fig.FIGURES["toy_scatter"](tmp_path / "figs")
    assert png.name == "bidir_toy_scatter.png" and png.stat().st_size > 10_000


# --------------------------------------------------------------------------- compare
def test_compare_json_and_errors(capsys):
    from attnlab.theory.bidir.compare import compare, main

    assert main(["--heads", "2", "--layers", "2", "--seed", "1", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("heads", "layers", "seed", "max_abs_dev_logits", "max_abs_dev_loss"):
        assert k in out
    assert out["heads"] == 2 and out["max_abs_dev_logits"] < 1e-10
    assert call(main, ["--heads", "0"]) == 2
    assert "--heads" in capsys.readouterr().err
    assert call(main, ["--seed", "-1"]) == 2
    with pytest.raises(ValueError, match="layers"):
        compare(layers=99)


def test_bidir_models_refuse_what_they_cannot_mean():
    """An empty batch (a RuntimeError of min()), a float m (of gather), init_std = inf (accepted), and a [MASK]
    id at a context position of CBOW (read as word V - 1: two different sentences gave the same logits)."""
    from attnlab.experiments.models.bidir import CBOW, BidirAttentionMLM

    c = CBOW(5, 3, generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(c(torch.tensor([[5, 4, 2, 3]]), torch.tensor([0]))).all()
    with pytest.raises(ValueError, match="only at the centre"):
        c(torch.tensor([[5, 5, 2, 3]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="at least one sentence"):
        c(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="m must be an integer tensor"):
        c(torch.tensor([[5, 4, 2, 3]]), torch.tensor([0.0]))
    for build in (lambda: CBOW(5, 3, init_std=float("inf")), lambda: BidirAttentionMLM(5, 4, 3, init_std=float("nan"))):
        with pytest.raises(ValueError, match="init_std must be a finite number > 0"):
            build()


@pytest.mark.skipif(not __import__("pathlib").Path(__file__).resolve().parents[1].joinpath(
    "results", "bidir-toy-corpus", "full", "seed0.json").is_file(), reason="no committed toy-corpus records")
def test_prop9_toy_corpus_judge_fails_a_pipeline_that_learns_nothing():
    """The registered rule gives 'not reproduced on a substitute' as soon as one part is contradicted, which
    embeddings of pure noise met too; the corrected statement's positive correlations now make that 'fails'.
    On the committed records' similarities the verdict is the expected one."""
    from pathlib import Path

    from attnlab.experiments.bidir.toy_corpus import cooccurrence_counts, correlations, prop9_targets, sample_corpus
    from attnlab.theory.bidir.toy_corpus import PROP9_DIMS, PROP9_SEEDS, judge_prop9

    root = Path(__file__).resolve().parents[1] / "results" / "bidir-toy-corpus" / "full"
    counts = {s: cooccurrence_counts(sample_corpus(10_000, np.random.default_rng(s))) for s in PROP9_SEEDS}
    rng = np.random.default_rng(0)

    def values(noise):
        out = {}
        for p in PROP9_DIMS:
            sp, pe = [], []
            for s in PROP9_SEEDS:
                sim = np.array(json.loads((root / f"seed{s}.json").read_text())["extra"]["per_dim"][str(p)]["similarity_cbow"])
                sim = rng.normal(size=sim.shape) if noise else sim
                R, M = prop9_targets(counts[s])
                sp.append(correlations(sim, R)["spearman"])
                pe.append(correlations(sim, M, R > 0)["pearson"])
            out[(p, "spearman")], out[(p, "pearson")] = sp, pe
        return out
    assert judge_prop9(values(False)).verdict == "not-reproduced-on-substitute"
    assert judge_prop9(values(True)).verdict == "fails"
