"""Every claim of the catalog is a test: the verdict must equal the expected one.

Parametrized from attnlab.catalog, so pytest and `attnlab verify` run the same checks.  Fast claims
run by default; slow claims (Monte Carlo, training) with `pytest -m slow`.
"""
import pytest

from attnlab import catalog

_CLAIMS = catalog.all_claims()


@pytest.mark.parametrize(
    "claim",
    [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.tier == "slow" else []) for c in _CLAIMS],
)
def test_claim(claim):
    rec = catalog.run_claim(claim)
    if rec.verdict == "skipped":
        pytest.skip(rec.evidence.explanation)
    assert rec.verdict == claim.expected, (
        f"{claim.id} ({claim.reference}): verdict {rec.verdict}, expected {claim.expected}; "
        f"measured {rec.evidence.measured!r}, tolerance {rec.evidence.tolerance!r}; "
        f"{rec.evidence.explanation}\n{rec.evidence.data.get('traceback', '')}")
