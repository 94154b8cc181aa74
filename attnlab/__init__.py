"""attnlab: checks, computes and reproduces four papers that read attention as statistical inference.

For notebooks: ``attnlab.verify(...)`` runs claims and returns their records; ``attnlab.compare(name,
...)`` runs an exact-against-approximate comparison and returns its rows; ``attnlab.layers`` holds the
papers' attention layers.  Everything heavy is imported on first use, so ``attnlab --help`` stays
instant.
"""
__version__ = "0.1.0"

__all__ = ["verify", "compare", "__version__"]


def verify(paper: str | None = None, claims=None, tier: str = "fast") -> list[dict]:
    """Run claims (all of a paper and tier, or the given ids) and return one record per claim as a
    dict: id, verdict, expected, ok, measured, tolerance, explanation, seconds (as ``attnlab verify
    --json``).  Bad arguments raise attnlab.errors.UsageError."""
    from attnlab import catalog
    from attnlab.errors import UsageError

    if tier not in ("fast", "slow", "all"):
        raise UsageError(f"tier must be fast, slow or all; got {tier!r}")
    if paper is not None and paper not in catalog.PAPERS:
        raise UsageError(f"paper must be one of {', '.join(catalog.PAPERS)}; got {paper!r}")
    if claims:
        try:
            selected = [catalog.get_claim(c) for c in ([claims] if isinstance(claims, str) else claims)]
        except KeyError as exc:
            raise UsageError(f"unknown claim id {exc.args[0]!r} (see attnlab list)") from None
    else:
        selected = catalog.all_claims(paper=paper, tier=tier)
    return [catalog.run_claim(c).to_json() for c in selected]


def compare(name: str, **kwargs):
    """Exact against approximate on your instance, returning what ``attnlab compare NAME --json -``
    prints:
      compare("fenchel", T=..., u=..., z=..., alphas=[...])      rows per alpha (Newton, cvxpy, (16), (13))
      compare("kernel-quadrature", **instance)                    trapezoid vs the verified mpmath reference
      compare("efa-fm", prop=1, seed=0)                           EFA vs its latent factor model
      compare("bidir-moe", heads=1, layers=1, seed=0)             attention vs its mixture of experts"""
    from attnlab.errors import UsageError

    if name == "fenchel":
        import numpy as np

        unknown = sorted(set(kwargs) - {"T", "u", "z", "alphas", "seed", "cvxpy"})
        if unknown:                     # a misspelt key (alpha for alphas) was ignored
            raise UsageError(f"compare('fenchel'): unknown argument(s) {', '.join(unknown)}; "
                             "the arguments are T, u, z, alphas, seed, cvxpy")

        from attnlab.numerics.entropic_dual import check_instance
        from attnlab.theory.fenchel import compare as fc

        if {"T", "u", "z"} - set(kwargs):
            T, u, z, alphas = fc.random_instance(int(kwargs.get("seed", 0)))
        else:
            T, u, z = check_instance(np.asarray(kwargs["T"], float), np.asarray(kwargs["u"], float),
                                     np.asarray(kwargs["z"], float))
            alphas = None
        alphas = list(kwargs.get("alphas") or alphas or fc.DEFAULT_ALPHAS)
        use = bool(kwargs.get("cvxpy", True))          # without cvxpy, the hull projection (a QP) is skipped too
        return fc.compare(T, u, z, alphas, cvxpy=use, limit=use)
    if name == "kernel-quadrature":
        from attnlab.theory.kernel import compare as kc

        try:
            inst = kc.validate(dict(kwargs))
        except kc.InstanceError as exc:
            raise UsageError(str(exc)) from None
        return kc.compare(inst)
    if name == "efa-fm":
        from attnlab.theory.efa import compare as ec

        return ec.compare(**kwargs)
    if name == "bidir-moe":
        from attnlab.theory.bidir import compare as bc

        return bc.compare(**kwargs)
    raise UsageError(f"unknown comparison {name!r}; valid: fenchel, kernel-quadrature, efa-fm, bidir-moe")
