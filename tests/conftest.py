"""Suite-wide: the header says how many claims tests/test_claims.py judges on the records of the last
`attnlab verify` of this tree (attnlab.verdict_cache) rather than by running them."""


def pytest_report_header(config):
    from attnlab import catalog, verdict_cache

    kept = verdict_cache.load() or {}
    n = sum(c.id in kept for c in catalog.all_claims())
    if not n:
        return "claims: each run here (no attnlab verify of this tree and environment kept)"
    return (f"claims: {n} judged on the records of the last attnlab verify of this tree and environment "
            f"(ATTNLAB_RUN_CLAIMS=1 runs them all)")
