"""The EFA claims vouch for the library (issue 43): the transcriptions of theory/efa/reference.py are
independent oracles, and each rewritten check fails on a library (or input) mutation it must see.
Fast: each test runs one check on a mutated model or input."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from attnlab import catalog

catalog.discover()


def test_every_efa_claim_declares_its_scope():
    """Every non-records claim of the EFA paper names the library functions it vouches for or says why
    it is the paper's algebra alone."""
    efa = [c for c in catalog.all_claims(paper="efa") if c.method != "results"]
    assert efa and not [c.id for c in efa if c.scope == "undeclared"]
    assert all(not n.startswith("theory.") for c in efa for n in c.vouches_for)


def test_the_transcriptions_call_no_library_code():
    """The oracles read the modules' tensors but never call library functions."""
    from attnlab import vouching
    from attnlab.experiments.models.efa import EFACategorical, EFAValue
    from attnlab.experiments.models.efa_theory import BaiEFA
    from attnlab.theory.efa import reference as ref

    torch.manual_seed(0)
    xm = EFACategorical(4, 2, 3, layers=2, heads=2, convention="standard").double()
    ym = EFAValue("poisson_v2", n_items=4, dim=2, value_dim=2, max_len=3, attr_dim=2).double()
    bm = BaiEFA(2, 2, 3, 2, 2, 3, R=1.0).double()
    p = {n: q.detach() for n, q in bm.named_parameters()}
    x = torch.randint(0, 4, (2, 3))
    y = torch.randint(0, 4, (2, 3)).double()
    tau = torch.randn(3, 2, dtype=torch.float64)

    def oracles():
        with torch.no_grad():
            ref.categorical_reference(xm, x)
            ref.value_reference(ym, y, x, tau)
            ref.bai_reference(p, 2, 2, torch.randn(2, 3, 2, dtype=torch.float64), y, 1.0)
            ref.bai_norm_reference(p, 2, 2)
            ref.logpdf_reference(ym.family, 0.3, 2)
            ref.mean_reference(ym.family, 0.3)
            ref.code_loss_reference(ym.family, 0.3, 2)

    _, seen = vouching.library_calls(oracles)
    assert not seen, seen


def test_multilayer_fails_when_the_scores_are_scaled_by_sqrt_k():
    """Library mutation: 1/sqrt(K) instead of Eq. (1)'s 1/K."""
    from attnlab.experiments.models.efa import EFACategorical
    from attnlab.theory.efa import transcribed as tr

    build = functools.partial(EFACategorical, scale="sqrt_head")
    cases = [c for c in tr.STACK_CASES if c[5] > 0][:2]
    assert tr.check_multilayer(cases=cases, build=build).verdict == "fails"


def test_value_model_fails_when_the_poisson_mean_drops_the_shift(monkeypatch):
    """Library mutation: E[y] = e^z for Poisson v1 (the mean of y - 1, not of y)."""
    from attnlab.numerics import expfam
    from attnlab.theory.efa import transcribed as tr

    monkeypatch.setattr(expfam.PoissonV1, "mean", lambda self, out: torch.exp(out))
    assert tr.check_value_model(cases=[tr.VALUE_CASES[1]]).verdict == "fails"


def test_family_check_sees_torch_bce_at_large_logits(monkeypatch):
    """Library mutation: the Bernoulli code loss by torch's binary_cross_entropy_with_logits, off by 5e-7
    relative at z = -21 (y = 0) and 0 at z = -40 where the loss is 4.2e-18."""
    from attnlab.numerics import expfam
    from attnlab.theory.efa import transcribed as tr

    monkeypatch.setattr(expfam.Bernoulli, "code_loss", lambda self, out, y: torch.nn.functional
                        .binary_cross_entropy_with_logits(out, torch.as_tensor(y, dtype=out.dtype), reduction="none"))
    assert tr.check_family_functions([expfam.Bernoulli()]).verdict == "fails"


def test_eq3_sees_a_thresholded_softplus(monkeypatch):
    """Library mutation: the Bernoulli log-likelihood through torch's F.softplus (threshold 20)."""
    from attnlab.numerics import exact
    from attnlab.theory.efa import structure

    monkeypatch.setattr(exact, "softplus", lambda x: torch.nn.functional.softplus(torch.as_tensor(x)))
    assert structure.check_eq3().verdict == "fails"


def test_order_irrelevance_fails_when_positional_embeddings_leak(monkeypatch):
    """Library mutation: the bidirectional stack sees positions (the causal mask everywhere): the
    set-like model without P is then order dependent."""
    from attnlab.experiments.models import efa as efa_models
    from attnlab.theory.efa import transcribed as tr

    real = efa_models.AttentionStack.allowed

    def causal(self, valid):
        I = valid.shape[1]
        return real(self, valid) & torch.ones(I, I, dtype=torch.bool).tril()

    monkeypatch.setattr(efa_models.AttentionStack, "allowed", causal)
    assert tr.check_order_irrelevance().verdict == "fails"


def test_torch_layer_fails_with_the_row_orientation(monkeypatch):
    """Library mutation: EFAMultiheadAttention(paper) projects the query side by W^Q (the usual q_i.k_j),
    the transpose of Eq. (1)."""
    from attnlab.numerics import efa_attention as ea
    from attnlab.theory.efa import transcribed as tr

    original = ea.EFAMultiheadAttention._project

    def swapped(self, x, i):
        if self.convention != "paper":            # (the standard convention is torch's, untouched)
            return original(self, x, i)
        w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[i]
        return torch.nn.functional.linear(x, w)

    monkeypatch.setattr(ea.EFAMultiheadAttention, "_project", swapped)
    assert tr.check_torch_layer().verdict == "fails"


def test_erm_decomposition_fails_when_theta_hat_is_not_the_empirical_minimiser():
    """What the algebra claim checks: the inequality is a property of the minimiser; the empirical
    maximiser breaks it on the same losses."""
    from attnlab.theory.efa import thm2_proof

    assert thm2_proof.check_erm_decomposition().verdict == "holds"
    assert thm2_proof.check_erm_decomposition(select=np.argmax).verdict == "fails"


def test_lipschitz_bound_fails_for_a_model_that_does_not_clip(monkeypatch):
    """Without the clipping to R the tokens of the 1e3-sized inputs are unbounded and the ratio exceeds 1
    (not only the transcription premise)."""
    from attnlab.experiments.models import efa_theory
    from attnlab.theory.efa import thm2_proof

    monkeypatch.setattr(efa_theory, "clip_norm", lambda h, R: h)
    grid = dict(L=(1, 2), R=(1.0,), scale=(0.3, 1.0), pair=("close", "far"))
    ev = thm2_proof.check_lipschitz(grid=grid)
    assert ev.verdict == "fails" and ev.measured["max_ratio"] > 1


def test_parameter_count_premise_fails_when_the_attention_is_not_divided_by_I(monkeypatch):
    """Library mutation: sum instead of Bai et al.'s (1/I) sum over the columns in every layer."""
    from attnlab.experiments.models import efa_theory
    from attnlab.theory.efa import generalization as gen

    real = efa_theory.BaiEFA._layer

    def no_mean(self, l, Hq, Hk):
        I = Hk.shape[1]
        q = torch.einsum("mde,nie->nmid", self.Q[l], Hq)
        k = torch.einsum("mde,nje->nmjd", self.Kw[l], Hk)
        v = torch.einsum("mde,nje->nmjd", self.V[l], Hk)
        w = torch.relu(q @ k.transpose(-1, -2))
        H = efa_theory.clip_norm(Hq + (w @ v).sum(1), self.R)
        H = H + torch.relu(H @ self.W1[l].T) @ self.W2[l].T
        return efa_theory.clip_norm(H, self.R)

    assert real is not no_mean
    monkeypatch.setattr(efa_theory.BaiEFA, "_layer", no_mean)
    ev = gen.check_parameter_count(cases=[gen.PARAM_COUNT_CASES[0]])
    assert ev.verdict == "fails"


def test_synthetic_rules_are_the_printed_ones():
    """The transcription of App. H.1: movie 2 after movie 1 has mean 1, before it 5; 4 directly after 3
    (and 3 directly after 4) 1; movie 5 last 5; otherwise 3."""
    from attnlab.theory.efa import synthetic

    assert {m: int(v) for m, v in synthetic.mu_of_order((1, 2, 3, 4, 5)).items()} == {1: 3, 2: 1, 3: 3, 4: 1, 5: 5}
    assert {m: int(v) for m, v in synthetic.mu_of_order((2, 5, 4, 3, 1)).items()} == {1: 3, 2: 5, 3: 1, 4: 3, 5: 3}
    assert synthetic.generator_disagreements() == 0


@pytest.mark.parametrize("cid", ["efa.thm1.recovery-theta1", "efa.thm1.gap-shift", "efa.thm2.erm-decomposition"])
def test_algebra_claims_say_why(cid):
    c = catalog.get_claim(cid)
    assert c.scope == "algebra" and len(c.algebra) > 40


def test_excess_rate_needs_the_teacher_to_be_the_transcribed_model():
    """Input mutation: a teacher whose predictions leave Sec 5.2's model (or a result without the premise)
    fails, whatever the rate."""
    from attnlab.theory.efa import generalization as gen

    Fs = [2 ** k for k in range(6, 14)]
    res = dict(inf_L=0.124, B_y=5.0, teacher_mc_loss=0.124, max_abs_y=4.9, teacher_norm=19.0,
               excess={"teacher": {F: [0.5 / F] * 5 for F in Fs}}, erm_gap={"teacher": {F: [-1e-3] * 5 for F in Fs}})
    assert gen.check_excess_rate(dict(res, teacher_vs_transcription=1e-16)).verdict == "holds"
    assert gen.check_excess_rate(dict(res, teacher_vs_transcription=1e-3)).verdict == "fails"
    assert gen.check_excess_rate(res).verdict == "fails"


def test_thm2_rate_premise_sees_how_y_enters_the_model(monkeypatch):
    """The teacher's weights are zero wherever y enters, so its premise test could not see a fault in the y
    path (the context y's sign flipped: 2e-15 at the teacher); the class at random parameters that read y
    is held to the transcription too."""
    import copy

    from attnlab.experiments.models import efa_theory as et
    from attnlab.theory.efa import generalization as gen

    teacher = gen.make_teacher(5.0)
    plain = copy.deepcopy(teacher).double()
    plain.B_y = None
    assert gen.premise_deviation(gen._reads_y(5.0), teacher.L, teacher.M, teacher.R) < gen.PREMISE_TOL
    real = et.BaiEFA.columns

    def flipped(self, tau, y):
        cols, masked = real(self, tau, y)
        cols = cols.clone()
        cols[..., -1] = -cols[..., -1]
        return cols, masked
    monkeypatch.setattr(et.BaiEFA, "columns", flipped)
    assert gen.premise_deviation(plain, teacher.L, teacher.M, teacher.R) < gen.PREMISE_TOL      # blind
    assert gen.premise_deviation(gen._reads_y(5.0), teacher.L, teacher.M, teacher.R) > gen.PREMISE_TOL
