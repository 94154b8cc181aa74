"""Every claim vouches for the library (attnlab.vouching; the rule is in docs/claims.md).

Fast: every theory claim declares its scope; every function a claim names resolves to library code (not
to the claim modules under attnlab.theory); the tracer and the fault injector work on a known function.
Slow: each `library` claim calls every function it names, and a fault injected into any of them changes
its verdict.
"""
from __future__ import annotations

import pytest

from attnlab import catalog, vouching

catalog.discover()
CLAIMS = catalog.all_claims()
LIBRARY = [c for c in CLAIMS if c.scope == "library"]


def test_every_claim_declares_its_scope():
    undeclared = [c.id for c in CLAIMS if c.scope == "undeclared"]
    assert not undeclared, (f"{len(undeclared)} claims name neither the library functions they vouch for "
                            f"(vouches_for=) nor why none is involved (algebra=): {undeclared}")


def test_vouched_names_are_library_functions():
    bad = []
    for c in LIBRARY:
        for name in c.vouches_for:
            if name.startswith("theory.") or name.startswith("paper_figures."):
                bad.append(f"{c.id}: {name} (claim code, not library code)")
                continue
            try:
                vouching.resolve(name)
            except ValueError as exc:
                bad.append(f"{c.id}: {exc}")
    assert not bad, "\n".join(bad)


def test_algebra_claims_use_an_exact_or_reference_method():
    bad = [c.id for c in CLAIMS if c.scope == "algebra" and c.method in ("training", "results")]
    assert not bad, bad


def test_resolve_and_qualified_name_round_trip():
    from attnlab.numerics import fenchel_attention as fa

    fn = vouching.resolve("numerics.fenchel_attention.fenchel_attention")
    assert fn is fa.fenchel_attention
    assert vouching.resolve(vouching.qualified_name(fn)) is fn
    with pytest.raises(ValueError, match="vouches_for"):
        vouching.resolve("numerics.fenchel_attention.no_such_function")
    with pytest.raises(ValueError, match="vouches_for"):
        vouching.resolve("no_such_module.f")


def test_tracer_sees_calls_however_imported_and_fault_reaches_them():
    import torch

    from attnlab.numerics import fenchel_attention as fa

    name = vouching.qualified_name(fa.fenchel_attention)
    q = torch.randn(2, 3, 4, dtype=torch.float64)

    def check():
        from attnlab.numerics.fenchel_attention import fenchel_attention  # a local import, as claims do
        return fenchel_attention(q, q, q)

    clean, seen = vouching.library_calls(check)
    assert name in seen
    assert all(not n.startswith("theory.") for n in seen)
    with vouching.inject_fault(name, rel=1e-3) as n_refs:
        assert n_refs >= 1
        faulty = check()
    out_clean = clean[0] if isinstance(clean, tuple) else clean
    out_faulty = faulty[0] if isinstance(faulty, tuple) else faulty
    assert torch.allclose(out_faulty, out_clean * (1 + 1e-3), rtol=1e-12, atol=1e-15)
    again = check()                                   # the original is back after the block
    assert torch.equal(again[0] if isinstance(again, tuple) else again, out_clean)


@pytest.mark.slow
@pytest.mark.parametrize("claim", [c for c in LIBRARY if c.tier == "fast"], ids=lambda c: c.id)
def test_library_claim_calls_what_it_vouches_for_and_a_fault_changes_its_verdict(claim):
    if claim.missing_requirements():
        pytest.skip(f"needs {claim.missing_requirements()}")
    rec, seen = vouching.library_calls(lambda: catalog.run_claim(claim))
    if rec.evidence.verdict == "skipped":
        pytest.skip(rec.evidence.explanation)
    assert rec.ok, f"{claim.id}: {rec.evidence.verdict} ({rec.evidence.explanation})"
    missing = [n for n in claim.vouches_for if n not in seen]
    assert not missing, f"{claim.id} names {missing} but its check never calls them"
    survived = []
    for name in claim.vouches_for:
        with vouching.inject_fault(name, rel=1e-3):
            if catalog.run_claim(claim).evidence.verdict == claim.expected:
                survived.append(name)
    assert not survived, f"{claim.id}: a 1e-3 relative fault in {survived} leaves the verdict {claim.expected!r}"


def test_fault_reaches_exact_rationals_models_dataclasses_and_experiment_data_code():
    """Outputs a fault must reach besides tensors and floats: Fractions (exact distributions), a model a
    function builds (its parameters), a dataclass of tensors; and the tracer sees an experiment's data code."""
    from fractions import Fraction

    import torch

    from attnlab.experiments.models.bidir import BidirAttentionMLM, moe_parameters

    name = "experiments.bidir.toy_corpus.sentence_distribution"
    clean, seen = vouching.library_calls(lambda: __import__(
        "attnlab.experiments.bidir.toy_corpus", fromlist=["x"]).sentence_distribution())
    assert name in seen
    with vouching.inject_fault(name, rel=1e-3) as n_refs:
        assert n_refs >= 1
        from attnlab.experiments.bidir import toy_corpus as tc
        faulty = tc.sentence_distribution()
    assert sum(clean.values()) == 1 and sum(faulty.values()) == 1 + Fraction(1e-3)

    model = BidirAttentionMLM(4, 3, 2, generator=torch.Generator().manual_seed(0))
    out = vouching._perturb(model, 1e-3)
    assert out is not model and torch.allclose(out.C, model.C * (1 + 1e-3), rtol=1e-14, atol=0)
    q = moe_parameters(model)
    qf = vouching._perturb(q, 1e-3)
    assert qf.d_w == q.d_w and torch.allclose(qf.W_KQ, q.W_KQ * (1 + 1e-3), rtol=1e-14, atol=0)


def test_fault_reaches_mpmath_numbers():
    """The library's mpmath twins (numerics.deformed_exp.mp_*, numerics.mp_reference) return mpf/mpc: a
    fault scales them too."""
    import mpmath as mp

    name = "numerics.deformed_exp.mp_exp_beta"
    with vouching.inject_fault(name, rel=1e-3) as n_refs:
        assert n_refs >= 1
        from attnlab.numerics import deformed_exp as de
        faulty = de.mp_exp_beta(mp.mpf(1), 0.5)
    assert abs(faulty - mp.mpf("2.25") * (1 + mp.mpf(1e-3))) < 1e-14
    assert vouching._perturb(mp.mpc(1, 2), 1e-3) == mp.mpc(1, 2) * (1 + 1e-3)


def test_fault_puts_integer_outputs_off_by_one():
    """A relative fault rounds away on integers (indices, buckets): there the first entry is off by one."""
    import numpy as np
    import torch

    t = torch.tensor([3, 5, 7])
    assert vouching._perturb(t, 1e-3).tolist() == [4, 5, 7] and t.tolist() == [3, 5, 7]
    a = np.array([[2, 4]])
    assert vouching._perturb(a, 1e-3).tolist() == [[3, 4]] and a.tolist() == [[2, 4]]
    assert vouching._perturb(torch.tensor([True]), 1e-3).tolist() == [True]
    assert vouching._perturb(torch.zeros(0, dtype=torch.long), 1e-3).numel() == 0
    assert vouching._perturb(406, 1e-3) == 407 and vouching._perturb(True, 1e-3) is True
    assert vouching._perturb((2, 0.5), 1e-3) == (2, 0.5 * 1.001)          # sizes inside containers stay


def test_a_nan_error_is_the_worst_error():
    """max(0.1, nan) is 0.1 in Python: a claim whose library output turned NaN would keep the error of the
    cases before it.  The claims' error measures go through theory._errors instead."""
    import math

    from attnlab.theory._errors import finite_or_inf, worse

    assert max(0.1, math.nan) == 0.1                       # the trap
    assert worse(0.1, math.nan) == math.inf and worse(math.nan, 0.1) == math.inf
    assert worse(0.1, 0.3, 0.2) == 0.3 and finite_or_inf(2.0) == 2.0
