"""Unit tests of the claim catalog itself."""
import json

import pytest

from attnlab import catalog
from attnlab.catalog import Claim, Evidence, Skip, erratum_if, holds_if, run_claim


def _claim(check, expected="holds", requires=()):
    return Claim("fenchel.test.x", "fenchel", "Eq. (0)", "a test claim", "float64", "fast",
                 expected, check, "corrected form" if expected == "erratum" else "", tuple(requires))


def test_failing_check_fails_its_test():
    rec = run_claim(_claim(lambda: holds_if(False, 1.0, 1e-12, "boom")))
    assert rec.verdict == "fails" and not rec.ok


def test_holding_check_passes():
    rec = run_claim(_claim(lambda: holds_if(True, 0.0, 1e-12)))
    assert rec.verdict == "holds" and rec.ok


def test_erratum_whose_printed_form_holds_is_flagged():
    rec = run_claim(_claim(lambda: erratum_if(printed_holds=True, corrected_holds=True), expected="erratum"))
    assert rec.verdict == "holds" and not rec.ok


def test_erratum_with_failing_correction_is_flagged():
    rec = run_claim(_claim(lambda: erratum_if(False, False), expected="erratum"))
    assert rec.verdict == "fails" and not rec.ok


def test_erratum_confirmed():
    rec = run_claim(_claim(lambda: erratum_if(False, True), expected="erratum"))
    assert rec.verdict == "erratum" and rec.ok
    assert rec.evidence.data["printed_holds"] is False


def test_raising_check_is_error_with_last_line():
    def bad():
        raise ZeroDivisionError("division by zero in the check")
    rec = run_claim(_claim(bad))
    assert rec.verdict == "error" and not rec.ok
    assert "ZeroDivisionError: division by zero in the check" in rec.evidence.explanation


def test_skip_and_missing_dependency():
    def sk():
        raise Skip("no data")
    assert run_claim(_claim(sk)).verdict == "skipped"
    rec = run_claim(_claim(lambda: holds_if(True), requires=("no_such_module_xyz",)))
    assert rec.verdict == "skipped" and "no_such_module_xyz" in rec.evidence.explanation
    assert rec.ok  # a skipped claim is not a disagreement


def test_non_evidence_return_is_error():
    assert run_claim(_claim(lambda: True)).verdict == "error"


def test_empirical_claim_expected_to_fail():
    """expected="fails" (a results claim the records do not support): its fails verdict is as expected, and
    a later holds (the records changed) is flagged; a theory claim may not be expected to fail."""
    def results_claim(check):
        return Claim("fenchel.test.y", "fenchel", "Table 0", "an empirical claim", "results", "fast",
                     "fails", check, "", ())
    assert run_claim(results_claim(lambda: holds_if(False, 1.0, "CI"))).ok
    rec = run_claim(results_claim(lambda: holds_if(True, 1.0, "CI")))
    assert rec.verdict == "holds" and not rec.ok
    with pytest.raises(ValueError, match="only an empirical claim"):
        catalog.claim("fenchel.x", reference="r", statement="s", method="float64", expected="fails")


def test_registration_validates():
    with pytest.raises(ValueError, match="method"):
        catalog.claim("fenchel.x", reference="r", statement="s", method="guess")
    with pytest.raises(ValueError, match="paper"):
        catalog.claim("nopaper.x", reference="r", statement="s", method="sympy")
    with pytest.raises(ValueError, match="corrected"):
        catalog.claim("fenchel.x", reference="r", statement="s", method="sympy", expected="erratum")
    with pytest.raises(ValueError, match="verdict"):
        Evidence("maybe")


def test_catalog_is_well_formed():
    claims = catalog.all_claims()
    assert claims, "the catalog is empty"
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids))
    for c in claims:
        assert c.id.startswith(c.paper + ".")
        assert c.reference and c.statement
        if c.expected == "erratum":
            assert c.corrected


def test_record_json_keys_and_jsonable():
    import numpy as np

    rec = run_claim(_claim(lambda: holds_if(True, {"a": np.float64(1e-13), "b": float("inf")}, 1e-12)))
    d = rec.to_json()
    for k in ("id", "paper", "reference", "statement", "method", "tier", "expected", "verdict",
              "measured", "tolerance", "seconds", "explanation"):
        assert k in d
    json.dumps(d)
    assert d["measured"]["b"] == "inf"


def test_cli_paper_list_matches_catalog():
    from attnlab import cli

    assert tuple(cli.PAPERS) == tuple(catalog.PAPERS)


def test_no_verdict_stands_on_a_nan():
    """A NaN among a check's numbers (measured or data, at any depth) turns holds and erratum into fails: a
    NaN is the largest error, and max(worst, nan) would have dropped it."""
    import math

    import numpy as np

    from attnlab.catalog import erratum_if, holds_if

    assert holds_if(True, measured=1e-16, per_case={"a": 1e-16}).verdict == "holds"
    for measured, data in ((math.nan, {}), (1e-16, {"per_case": {"a": 1e-16, "b": math.nan}}),
                           ({"x": [0.0, np.float64("nan")]}, {}), (np.array([1.0, np.nan]), {})):
        ev = holds_if(True, measured=measured, **data)
        assert ev.verdict == "fails" and "NaN" in ev.explanation
        assert erratum_if(False, True, measured=measured, **data).verdict == "fails"
    assert holds_if(False, measured=math.nan).verdict == "fails"
    assert holds_if(True, measured={"slope": None, "label": "at floor"}).verdict == "holds"
