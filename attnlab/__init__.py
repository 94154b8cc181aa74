"""attnlab: checks, computes and reproduces four papers that read attention as statistical inference.

For notebooks: ``attnlab.verify(...)`` runs claims and returns their records; ``attnlab.compare(name,
...)`` runs an exact-against-approximate comparison and returns its rows; ``attnlab.layers`` holds the
papers' attention layers.  Everything heavy is imported on first use, so ``attnlab --help`` stays
instant.
"""
__version__ = "0.1.0"

__all__ = ["verify", "compare", "__version__"]


def verify(paper: str | None = None, claims=None, tier: str | None = None, **unknown) -> list[dict]:
    """Run claims (all of a paper and tier, or the given ids or globs of ids such as 'fenchel.thm1.*') and
    return one record per claim as a dict with the keys of ``attnlab verify --json`` (id, verdict, expected,
    ok -- the verdict is the expected one --, measured, tolerance, explanation, seconds, and the claim's
    statement, reference, method, tier, scope, data and vouches_for).  The arguments are those of ``attnlab verify`` (--paper,
    --claim, --tier; tier defaults to fast) and are checked the same way: a claim id of another paper or
    tier than the one given is refused, not run.  Bad arguments raise attnlab.errors.UsageError."""
    import argparse

    from attnlab import catalog
    from attnlab.cli import _select
    from attnlab.errors import UsageError

    if unknown:                                # (verify(claim=...), the command line's spelling, was a TypeError)
        hint = " (claims=, not claim=)" if "claim" in unknown else ""
        raise UsageError(f"verify(): unknown argument(s) {', '.join(sorted(unknown))}{hint}; the arguments are paper, "
                         "claims and tier")
    if claims is not None:
        ids = [claims] if isinstance(claims, str) else claims
        if (not isinstance(ids, (list, tuple)) or not ids
                or not all(isinstance(c, str) and c.strip() for c in ids)):
            raise UsageError(f"claims must be a claim id or a non-empty list of claim ids (see attnlab list); "
                             f"got {claims!r}")
        claims = list(ids)
    for name, value in (("paper", paper), ("tier", tier)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{name} must be a string; got {value!r}")
    try:
        selected = _select(argparse.Namespace(paper=paper, tier=tier, claim=claims))
    except UsageError as exc:                  # (named as the command line's flags: here they are arguments)
        text = str(exc)
        for flag, arg in (("--claim", "claims"), ("--paper", "paper"), ("--tier", "tier")):
            text = text.replace(flag, arg)
        raise UsageError(f"verify(): {text}") from None
    from attnlab.parallel import one_thread_within

    with one_thread_within():                  # (the command line's records, at one thread; the caller's kept)
        return [catalog.run_claim(c).to_json() for c in selected]


def compare(name: str, **kwargs):
    """Exact against approximate on your instance, returning what ``attnlab compare NAME --json -``
    prints:
      compare("fenchel", T=..., u=..., z=..., alphas=[...])      rows per alpha (Newton, cvxpy, (16), (13))
      compare("fenchel", seed=0)                                  the same on the random instance of a seed
      compare("kernel-quadrature", **instance)                    trapezoid vs the verified (Arb) reference
      compare("efa-fm", prop=1, seed=0)                           EFA vs its latent factor model (prop=None: all three)
      compare("bidir-moe", heads=1, layers=1, seed=0)             attention vs its mixture of experts (also batch,
                                                                  the masked sentences, and init_std, the weights' std)
    The arguments are checked as the command line checks its flags and instance files (numpy arrays and
    scalars are taken as lists and numbers; cvxpy=False as --no-cvxpy, allow_large=True as --allow-large):
    a bad or unknown one raises attnlab.errors.UsageError naming it."""
    from attnlab.errors import UsageError

    if name == "fenchel":
        from attnlab.theory.fenchel import compare as fc

        return fc.api(kwargs)          # validated as the command line validates (UsageError naming the argument)
    if name == "kernel-quadrature":
        from attnlab.theory.fenchel.compare import _plain
        from attnlab.theory.kernel import compare as kc

        # numpy arrays and scalars, tuples: the plain lists and numbers of an instance file
        plain = {k: (v.item() if hasattr(v, "item") and getattr(v, "ndim", 1) == 0 else _plain(v, k))
                 for k, v in kwargs.items()}
        allow_large = plain.pop("allow_large", False)
        if not isinstance(allow_large, bool):
            raise UsageError(f"compare('kernel-quadrature'): allow_large must be True or False; got {allow_large!r}")
        try:
            inst = kc.validate(plain)
        except kc.InstanceError as exc:
            raise UsageError(str(exc)) from None
        cost = kc.estimate(inst)
        if cost["seconds"] > kc.LARGE_SECONDS and not allow_large:     # as the command line's --allow-large
            raise UsageError(f"compare('kernel-quadrature'): estimated at ~{cost['seconds']:.0f} s (the mpmath "
                             f"reference: {cost['integrals']} integrals of ~{int(cost['pieces']):,} pieces at "
                             f"{inst['dps']} digits); pass allow_large=True to run it anyway")
        try:
            return kc.compare(inst)
        except UsageError as exc:           # (the command line's words: in Python the instance is the arguments)
            raise UsageError(str(exc).replace("--instance: ", "compare('kernel-quadrature'): ", 1)) from None
    if name == "efa-fm":
        from attnlab.theory.efa import compare as ec

        _known(name, kwargs, ("prop", "seed"))
        prop = kwargs.get("prop")
        if prop is not None:
            prop = _whole(name, "prop", prop, 1, 3, "1, 2 or 3 (or None: all three)")
        seed = _seed(name, kwargs.get("seed", 0))
        return [ec.compare(p, seed) for p in ec.PROPS] if prop is None else ec.compare(prop, seed)
    if name == "bidir-moe":
        from attnlab.theory.bidir import compare as bc

        _known(name, kwargs, ("heads", "layers", "seed", "batch", "init_std"))
        sizes = {key: _whole(name, key, kwargs[key], 1, hi) for key, hi in
                 (("heads", bc.MAX_HEADS), ("layers", bc.MAX_LAYERS), ("batch", 100_000)) if key in kwargs}
        seed = _seed(name, kwargs.get("seed", 0))
        extra = {}
        std = kwargs.get("init_std")
        if std is not None and hasattr(std, "item") and getattr(std, "ndim", None) == 0:
            extra["init_std"] = std.item()      # (a numpy or torch scalar is a number, as the docstring says)
        std = extra.get("init_std", std)
        if isinstance(std, int) and not isinstance(std, bool):
            try:                                # (an int was an OverflowError deep in the model: taken as a float)
                extra["init_std"] = float(std)
            except OverflowError:
                raise UsageError("compare('bidir-moe'): init_std must be a finite number > 0; got an integer of "
                                 f"{len(str(std))} digits") from None
        try:
            return bc.compare(**{**kwargs, **sizes, **extra, "seed": seed})
        except ValueError as exc:       # init_std
            raise UsageError(f"compare('bidir-moe'): {exc}") from None
    raise UsageError(f"unknown comparison {name!r}; valid: fenchel, kernel-quadrature, efa-fm, bidir-moe")


def __getattr__(name: str):
    """``attnlab.layers`` on first use (the package imports nothing heavy when it is imported)."""
    if name == "layers":
        import importlib

        return importlib.import_module("attnlab.layers")
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def _known(name: str, kwargs: dict, allowed: tuple) -> None:
    from attnlab.errors import UsageError

    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise UsageError(f"compare({name!r}): unknown argument(s) {', '.join(unknown)}; the arguments are "
                         f"{', '.join(allowed)}")


def _whole(name: str, key: str, value, lo: int, hi: int, allowed: str | None = None) -> int:
    """An integer argument, one rule for all: a Python or numpy integer (a 0-d integer array too), not a bool,
    a float (1.0) or a complex (1+0j: it compared equal to 1 and then failed in int()), in lo..hi."""
    import numbers

    from attnlab.errors import UsageError

    v = value.item() if getattr(value, "ndim", None) == 0 and getattr(getattr(value, "dtype", None), "kind", "") in "iu" \
        else value
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= v <= hi:
        raise UsageError(f"compare({name!r}): {key} must be {allowed or f'an integer in {lo}..{hi}'}; got {value!r}")
    return int(v)


def _seed(name: str, seed) -> int:
    """A seed as the command line takes it: an integer in 0..2**32-1 (not a bool, not 1.5)."""
    from attnlab.run_args import MAX_SEED

    return _whole(name, "seed", seed, 0, MAX_SEED)
