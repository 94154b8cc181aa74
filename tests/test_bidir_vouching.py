"""The bidir claims vouch for the library (issue 43; the rule is in docs/claims.md): every claim declares its
scope, and the claims that could not fail before can now -- each test injects a fault the old check could not
see and asserts the verdict changes."""
from __future__ import annotations

import numpy as np
import pytest

from attnlab import catalog


def _verdict(claim_id: str) -> str:
    return catalog.run_claim(catalog.get_claim(claim_id)).evidence.verdict


def test_every_bidir_claim_declares_its_scope():
    claims = catalog.all_claims(paper="bidir")
    assert claims and not [c.id for c in claims if c.scope == "undeclared"]
    # the claims that read no library code say why; the others name what they vouch for
    assert all(len(c.algebra) > 20 for c in claims if c.scope == "algebra")


def test_gate_independence_fails_when_the_masked_token_reaches_the_model(monkeypatch):
    """Without the [MASK] at m (the true token left in place, input validation off) the weights of the masked
    query depend on b: the rewritten claim sees it (the old one compared gates that take no b argument)."""
    from attnlab.experiments.models import bidir as bm

    monkeypatch.setattr(bm, "mask_sentences", lambda tokens, m, vocab_size: tokens.clone())
    monkeypatch.setattr(bm, "_check_inputs", lambda *a, **k: None)
    assert _verdict("bidir.thm2.gate-independent-of-b") == "fails"


def test_toy_corpus_population_fails_when_the_library_misreads_app_i(monkeypatch):
    """A score of App. I mistyped in the library: its exact distribution no longer matches App. I as printed
    (the old check read the library's constants on both sides)."""
    from attnlab.experiments.bidir import toy_corpus as tc

    monkeypatch.setitem(tc.SCORES, "history", (1, 5, 0, 6))
    assert _verdict("bidir.app-i.toy-corpus-population") == "fails"


def test_toy_corpus_population_fails_when_the_sampler_draws_type1_subjects_uniformly(monkeypatch):
    """The exact distribution intact, the sampler wrong (Type 1 subjects uniform, not (4, 5, 1, 1)/11): the
    per-sentence z of the sample against App. I as printed catches it."""
    from attnlab.experiments.bidir import toy_corpus as tc

    real = tc.sample_corpus

    def uniform_type1(n=tc.N_SENTENCES, rng=None):
        out = real(n, rng)
        t1 = out[:, 0] == tc.IDX["I"]
        subj = np.array([tc.IDX[s] for s in tc.SUBJECTS])
        out[t1, 2] = subj[rng.integers(0, 4, size=int(t1.sum()))]
        out[t1, 4] = subj[rng.integers(0, 4, size=int(t1.sum()))]
        return out

    monkeypatch.setattr(tc, "sample_corpus", uniform_type1)
    assert _verdict("bidir.app-i.toy-corpus-population") == "fails"


@pytest.mark.parametrize("claim_id", ["bidir.sec3-1.tabular-atn-block", "bidir.app-d.covariance-design",
                                      "bidir.app-f.analogy-protocol", "bidir.sec4-2.toy-statistics"])
def test_new_library_claims_hold(claim_id):
    assert _verdict(claim_id) == "holds"


def test_app_d_fails_with_the_covariances_swapped(monkeypatch):
    """Train and test covariances swapped in the generator (no covariate shift in the intended direction)."""
    from attnlab.experiments.bidir import tabular_sim as ts

    real = ts.generate_continuous
    monkeypatch.setattr(ts, "generate_continuous",
                        lambda n, nc, corr, noise, seed, **kw: real(n, nc, 1 - corr, noise, seed, **kw))
    assert _verdict("bidir.app-d.covariance-design") == "fails"


def test_table1_gain_claim_fails_on_a_table_with_the_corr_rows_swapped():
    from attnlab.experiments.paper_numbers.bidir import TABLE1_ACC, TABLE1_MSE
    from attnlab.theory.bidir.printed_numbers import check_table1_gain

    assert check_table1_gain().verdict == "holds"
    swap = lambda t: {k.replace("0.1)", "X").replace("0.9)", "0.1)").replace("X", "0.9)"): v  # noqa: E731
                      for k, v in t.items()}
    assert check_table1_gain(swap(TABLE1_ACC), swap(TABLE1_MSE)).verdict == "fails"


@pytest.mark.parametrize("fault", ["shared_seed", "mean_over_models", "target_shifted", "prediction_not_masked"])
def test_atn_training_fails_under_a_faulty_trainer(monkeypatch, fault):
    """Trainer faults: every lock-step model drawn from the first seed; the loss averaged over the models
    (each model's gradient scaled by 1/M, which Adam's epsilon does not ignore); the MLM target read one
    position off; the prediction made with the response slot holding class 0 instead of [MASK]."""
    from attnlab.experiments.models import bidir_tabular as bt

    real_train, real_copies, real_predict = bt.train_atn, bt.masked_copies, bt.predict_response
    if fault == "shared_seed":
        monkeypatch.setattr(bt, "train_atn", lambda rows, C, cfg=None, seed=0, **kw: real_train(
            rows, C, cfg, seed=[seed[0]] * len(seed) if isinstance(seed, list) else seed, **kw))
    elif fault == "mean_over_models":
        def train(rows, C, cfg=None, seed=0, **kw):
            import torch
            M = len(rows) if isinstance(rows, list) else 1
            real_ce = torch.nn.functional.cross_entropy
            monkeypatch.setattr(torch.nn.functional, "cross_entropy", lambda *a, **k: real_ce(*a, **k) / M)
            try:
                return real_train(rows, C, cfg, seed, **kw)
            finally:
                monkeypatch.setattr(torch.nn.functional, "cross_entropy", real_ce)
        monkeypatch.setattr(bt, "train_atn", train)
    elif fault == "target_shifted":
        def copies(rows, mask_id):
            inp, pos, tgt = real_copies(rows, mask_id)
            return inp, pos, (tgt + 1) % mask_id
        monkeypatch.setattr(bt, "masked_copies", copies)
    else:
        def predict(model, x_rows, device="cpu", which=None):
            import torch
            sets = [x_rows] if which is not None or not isinstance(x_rows, list) else x_rows
            out = []
            for j, xr in enumerate(sets):
                m = which if which is not None else j
                tok = np.concatenate([xr, np.zeros((len(xr), 1), int)], 1)
                full = torch.zeros((model.n_models, len(xr), model.seq_len), dtype=torch.long)
                full[m] = torch.as_tensor(tok)
                with torch.no_grad():
                    out.append(model(full)[m, :, -1].argmax(-1).numpy())
            return out[0] if which is not None or not isinstance(x_rows, list) else out
        monkeypatch.setattr(bt, "predict_response", predict)
    assert _verdict("bidir.sec3-1.atn-training") == "fails"


@pytest.mark.parametrize("fault", ["answer_kept_in_case", "category_of_the_next", "windows_stride_2"])
def test_analogy_protocol_fails_when_its_inputs_are_misread(monkeypatch, fault):
    """read_questions keeping the answer's case or reading each question under the next header, windows at
    stride 2 (read_questions returns words, which the numeric fault of test_vouching cannot touch)."""
    from attnlab.experiments.models import bidir_analogy as ba

    real_read, real_windows = ba.read_questions, ba.windows
    if fault == "answer_kept_in_case":
        def read(path):
            raw = [ln.split() for ln in open(path, encoding="utf-8") if ln.strip() and not ln.startswith(":")]
            return [(c, a, b, x, w[3]) for (c, a, b, x, _), w in zip(real_read(path), raw)]
        monkeypatch.setattr(ba, "read_questions", read)
    elif fault == "category_of_the_next":
        def read(path):
            qs = real_read(path)
            return [(qs[min(k + 1, len(qs) - 1)][0], *q[1:]) for k, q in enumerate(qs)]
        monkeypatch.setattr(ba, "read_questions", read)
    else:
        monkeypatch.setattr(ba, "windows", lambda docs, S: real_windows(docs, S)[::2])
    assert _verdict("bidir.app-f.analogy-protocol") == "fails"
