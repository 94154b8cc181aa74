"""Every claim of the catalog is a test: the verdict must equal the expected one.

Parametrized from attnlab.catalog, so pytest and `attnlab verify` run the same checks.  Fast claims
run by default; slow claims (Monte Carlo, training) with `pytest -m slow`.  A claim that `attnlab verify`
ran on this very tree and environment (attnlab.verdict_cache: same sources, records, data, libraries and
BLAS settings) is judged on that run's record instead of running twice; ATTNLAB_RUN_CLAIMS=1 runs them all.
"""
import pytest

from attnlab import catalog, verdict_cache

_CLAIMS = catalog.all_claims()
_VERIFIED = verdict_cache.load() or {}


@pytest.mark.parametrize(
    "claim",
    [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.tier == "slow" else []) for c in _CLAIMS],
)
def test_claim(claim):
    judge(claim, _VERIFIED.get(claim.id))


def judge(claim, kept: dict | None = None):
    """The claim's verdict must be the expected one: from `kept` (its record in the last attnlab verify of this
    tree) when given, else from running it."""
    if kept is not None:
        verdict, measured, tolerance = kept["verdict"], kept["measured"], kept["tolerance"]
        explanation, data = kept["explanation"], kept.get("data") or {}
    else:
        rec = catalog.run_claim(claim)
        verdict, measured, tolerance = rec.verdict, rec.evidence.measured, rec.evidence.tolerance
        explanation, data = rec.evidence.explanation, rec.evidence.data
    if verdict == "skipped":
        pytest.skip(explanation)
    assert verdict == claim.expected, (
        f"{claim.id} ({claim.reference}): verdict {verdict}, expected {claim.expected}"
        f"{' (the record of the last attnlab verify of this tree)' if kept is not None else ''}; "
        f"measured {measured!r}, tolerance {tolerance!r}; {explanation}\n{data.get('traceback', '')}")
