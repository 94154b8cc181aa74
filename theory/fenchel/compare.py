"""`attnlab compare fenchel`: the exact solution of the Fenchel-dual problem (3)/(7) against the
paper's attention approximation (16) and the refined (13), on the user's instance.

    attnlab compare fenchel [--instance FILE.json] [--seed S] [--json -|OUT.json]

FILE.json holds {"T": n x d, "u": n (a probability vector), "z": d, "alphas": [alpha, ...]}.  Without
--instance a random instance is drawn with --seed: n = 8 templates in R^4 (T ~ N(0, I)), u ~
Dirichlet(1), z ~ N(0, I), alphas = 4, 2, 1, 0.5, 0.25, 0.1.

Per alpha: h exact by cvxpy (primal (3)) and by float64 Newton on the dual (7), the approximation (16)
(lambda = alpha z) and the refined (13), their errors against the Newton solution, the paper's
relative deviation ||lambda* - alpha z|| / ||lambda*|| (Figs 4-8) and the total variation between
p(lambda*) and p(alpha z).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

DEFAULT_ALPHAS = (4.0, 2.0, 1.0, 0.5, 0.25, 0.1)
DEFAULT_N, DEFAULT_D = 8, 4


def random_instance(seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    T = rng.normal(size=(DEFAULT_N, DEFAULT_D))
    u = rng.dirichlet(np.ones(DEFAULT_N))
    z = rng.normal(size=DEFAULT_D)
    return T, u, z, list(DEFAULT_ALPHAS)


KEYS = ("T", "u", "z", "alphas")
MAX_ENTRY = 1e100                   # largest |T_ij|, |z_j| of an instance file
MIN_ALPHA = 1e-290                  # smallest alpha: lambda* = alpha nu stays a normal float64 for |nu| >= 1e-17
# (Measured again on 2026-12-07, idle machine, one alpha: random N(0, 1) templates with Dirichlet u, as the
# random instance draws them, 2.0 s at (2000, 50), 9.9 s at (4500, 50), ~50 s at (4000, 200); templates
# normalised to norm ~1 (N(0, 1/d)) 0.8, 2.4 and 14 s.  The fit below is an upper bound, 5-20x above these.)
# A size guard: the cvxpy column (CLARABEL on the primal, an n-variable exponential cone, retried at the
# default tolerances when the tight ones fail, plus the hull projection) costs about
# 3.3 s (n/1000)^1.7 (d/50)^1.6 per alpha (fitted on n = 1000..2000, d = 50..200 on 2 cores; n = 4000,
# d = 200 took 287 s where the former estimate n^1.5 d^0.5 said 14 s; n = 20000, d = 200 took 165 s and
# 1.9 GB per alpha before failing).  Newton costs ~1e-7 n d^2 s per alpha (centred covariance, ~100 steps).
LARGE_SECONDS = 30.0
MAX_BYTES = 4 * 2 ** 30             # Newton's working memory


def _cost_estimate(n: int, d: int, n_alphas: int) -> float:
    """Seconds of the cvxpy column (primal per alpha and the projection once): a solve's fixed cost (~9 ms on an
    idle 2-core machine at n = 3, d = 2: without it 100,000 alphas were estimated at 0 s and took 15 minutes)
    and the growth with n and d."""
    per_alpha = 0.01 + 3.3 * (n / 1000) ** 1.7 * (max(d, 1) / 50) ** 1.6
    return (n_alphas + 0.1) * per_alpha


def _newton_estimate(n: int, d: int, n_alphas: int) -> float:
    """Seconds of the Newton column."""
    return n_alphas * (1e-7 * n * max(d, 4) ** 2 + 1e-3)


def _number(x, name: str) -> float:
    """A JSON number (not a bool, not a string) -> float, or ValueError naming it."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        try:
            shown = json.dumps(x)
        except (TypeError, ValueError):         # (a complex, a Fraction: json's own TypeError took the message's place)
            shown = repr(x)
        raise ValueError(f"{name} must be a number; got {shown[:40]}")
    try:
        return float(x)
    except OverflowError:                       # (an int of 400 digits, given in Python: a traceback)
        raise ValueError(f"{name} is the integer {str(x)[:20]}... ({len(str(abs(x)))} digits), beyond float64") from None


def _array(x, name: str, ndim: int):
    import numpy as np

    def walk(v, depth, path):
        if depth == ndim:
            return _number(v, name + path)
        if not isinstance(v, list):
            raise ValueError(f"{name} must be a {ndim}-D list of numbers; {name}{path} is {json.dumps(v)[:40]}")
        return [walk(w, depth + 1, f"{path}[{i}]") for i, w in enumerate(v)]

    rows = walk(x, 0, "")
    if ndim == 2:
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise ValueError(f"{name} is ragged: its rows have lengths {sorted(widths)}; every row needs d numbers")
        if not rows or not rows[0]:
            raise ValueError(f"{name} must have at least one row and one column (n >= 1, d >= 1); got {len(rows)} x "
                             f"{len(rows[0]) if rows else 0}")
    elif not rows:
        raise ValueError(f"{name} must not be empty")
    return np.asarray(rows, dtype=float)


def load_instance(path: str):
    """Read and validate FILE.json; raises ValueError with a one-line message (an unknown key too)."""
    from attnlab.atomic_io import read_json

    data = read_json(path)          # ValueError (one line): unreadable, binary, not JSON, too deep, 1e400
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object with keys T, u, z, alphas")
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise ValueError(f"{path} lacks key(s) {', '.join(missing)} (needs T: n x d, u: n, z: d, alphas: list)")
    extra = sorted(set(data) - set(KEYS))
    if extra:                       # a misspelt key ("alpha" for "alphas") was ignored with a warning
        raise ValueError(f"{path}: unknown key(s) {', '.join(extra)[:200]}; the keys are {', '.join(KEYS)}")
    return validate_instance(data)


def validate_instance(data: dict):
    """(T, u, z, alphas) of an instance {T, u, z, alphas} of plain lists and numbers (an instance file's,
    or attnlab.compare's arguments made plain), validated; ValueError with a one-line message."""
    import numpy as np

    from attnlab.numerics.entropic_dual import check_instance
    from attnlab.numerics.validate import positive

    try:
        T = _array(data["T"], "T", 2)
        T, u, z = check_instance(T, _array(data["u"], "u", 1), _array(data["z"], "z", 1))
        alphas = data["alphas"]
        if not isinstance(alphas, list) or not alphas:
            raise ValueError("alphas must be a non-empty list of numbers > 0")
        alphas = [positive(_number(a, "alphas[%d]" % i), "alphas[%d]" % i) for i, a in enumerate(alphas)]
        tiny = [i for i, a in enumerate(alphas) if a < MIN_ALPHA]
        if tiny:                        # lambda* = alpha nu is subnormal there: h = b - lambda*/alpha loses digits
            raise ValueError(f"alphas[{tiny[0]}] = {alphas[tiny[0]]:g} is below {MIN_ALPHA:g} (lambda* = alpha nu "
                             "would be a subnormal float64 and h lose its digits); h tends to mu = u^T T as alpha -> 0")
        for name, v in (("T", T), ("z", z)):   # the solvers square them: |t|^2 must stay well inside float64
            big = float(np.abs(v).max())
            if big > MAX_ENTRY:
                raise ValueError(f"{name} has an entry of size {big:.3g}, beyond {MAX_ENTRY:g} (the solvers form "
                                 f"|t|^2 and alpha <t, lambda> in float64); rescale the instance")
    except (TypeError, ValueError) as e:
        raise ValueError(str(e).splitlines()[0]) from None
    return T, u, z, alphas


def compare(T, u, z, alphas, cvxpy: bool = True, progress=None, limit: bool = True) -> list[dict]:
    """One dict per alpha with the keys of the JSON output.

    h_newton (float64 Newton on the scaled dual, :func:`attnlab.numerics.entropic_dual.solve`) is the
    reference: its row says how it ended (newton_iterations, newton_grad_norm, newton_converged).
    h_exact is cvxpy's primal (3), the least accurate column (accepted at a KKT residual <= 1e-6; its h is
    off h_newton by 1e-8 to a few 1e-7); where cvxpy gives no acceptable answer it is null and cvxpy_status says why.
    h_limit (null without `limit`: it is a cvxpy QP too) is the alpha -> infinity limit, the projection of mu + z onto the convex hull of the
    templates that u gives weight to (u_i > 0)."""
    import numpy as np

    from attnlab.numerics import entropic_dual as ed

    h_limit = None                  # the projection is a cvxpy QP: null without `limit` or where cvxpy fails
    if limit:
        try:
            with np.errstate(all="ignore"):
                h_limit = ed.project_onto_hull(T, u @ T + z, u)
        except Exception as exc:    # cvxpy raises its own errors (SolverError, ValueError on huge data)
            print(f"attnlab compare fenchel: warning: h_limit is null: the projection onto the hull failed "
                  f"({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})", file=sys.stderr)
    # the scale of h: |mu + z|, or the templates' where that is smaller (h-hat lies near conv{t_i} for small alpha,
    # and mu + z may cancel to 0); with max(1, |mu + z|) the "relative" error of templates of size 1e-200 was
    # absolute, and a row with h_newton = b, wrong at its own scale, read converged with error 0
    scale = max(_norm(u @ T + z), float(np.abs(T).max())) or 1.0
    rows = []
    for k, a in enumerate(alphas):
        if progress is not None:
            progress.update(k, alpha=f"{a:g}")
        h_cvx, status, kkt = None, "not run", None
        if cvxpy:
            try:
                p_cvx, _, info = ed.solve_primal_cvxpy(T, u, z, a, return_info=True)
                h_cvx, status, kkt = (p_cvx @ T).tolist(), info["status"], info["kkt_residual"]
            except ed.SolverError as exc:
                status = str(exc)
        with np.errstate(all="ignore"):     # overflow at huge alpha is caught below: such a row is not converged
            ex = ed.solve(T, u, z, a)
            h_apx = ed.h_approx(T, u, z, a)
            try:                        # I + alpha Sigma singular in float64 (alpha |T|^2 ~ 1e16 and beyond)
                h_ref = ed.h_refined(T, u, z, a)
            except np.linalg.LinAlgError:
                h_ref = np.full(T.shape[1], np.nan)     # reported as null
            lam = ex["lam"]
            # the norms taken of lambda* / max|lambda*|: |lambda*| below 1e-154 (alpha down to 1e-290 is allowed)
            # squares to 0 in float64, which read as lambda* = 0
            big = float(np.abs(lam).max()) if lam.size else 0.0
            unit = big if 0 < big < math.inf else 1.0
            nl = float(np.linalg.norm(lam / unit))
            gn, step = newton_error(T, u, z, a, lam, ex["h"])
        rel_err = step / scale
        # lambda*'s own relative error, alpha ||nu - nu*|| / ||lambda*||: what rel_dev and tv rest on (z far below
        # |mu| (T ~ 1, z ~ 1e-13): Newton's absolute test stops at lambda = 0, whose h_newton is right to 1e-13)
        lam_step = a * step / unit
        lam_rel = (lam_step / nl if nl > 0 else 0.0 if lam_step == 0 else math.inf) if math.isfinite(lam_step) \
            else math.inf
        # Newton's own flag is held to its rounding floor, which grows with alpha and says nothing at huge
        # alpha; the row is converged only when the answer is finite, the gradient is small against the
        # problem's scale |b| (else the first-order estimate does not apply) and the estimated error of
        # h_newton is below 1e-8 |b|
        ok = (bool(ex["info"]["converged"]) and math.isfinite(gn) and math.isfinite(step)
              and bool(np.all(np.isfinite(lam))) and gn <= 1e-2 * scale and rel_err <= 1e-8 and lam_rel <= 1e-8)
        with np.errstate(all="ignore"):
            rows.append(_finite_or_null(dict(
                alpha=float(a),
                h_exact=h_cvx,
                cvxpy_status=status,
                cvxpy_kkt_residual=kkt,
                h_newton=ex["h"].tolist(),
                newton_iterations=int(ex["info"]["iterations"]),
                newton_grad_norm=float(ex["info"]["grad_norm"]),
                newton_rel_error=rel_err,
                lambda_rel_error=lam_rel,
                newton_converged=ok,
                h_approx=h_apx.tolist(),
                h_refined=h_ref.tolist(),
                h_limit=None if h_limit is None else h_limit.tolist(),
                lambda_star=lam.tolist(),
                err_approx=_norm(ex["h"] - h_apx),
                err_refined=_norm(ex["h"] - h_ref),
                err_limit=None if h_limit is None else _norm(ex["h"] - h_limit),
                # lambda* = 0 (z = 0, or z lost below the rounding of mu + z) against alpha z != 0: the
                # relative deviation is infinite, reported null, not 0
                rel_dev=(float(np.linalg.norm((lam - a * z) / unit) / nl) if nl > 0 or not math.isfinite(nl)
                         else 0.0 if not np.any(a * z) else math.inf),
                tv=float(0.5 * np.abs(ex["p"] - ed.tilted(a * z, T, u)).sum()),
            )))
    if progress is not None:
        progress.update(len(alphas))
    return rows


def _norm(x) -> float:
    """|x|_2 without underflow or overflow: the vector scaled by its largest entry first (np.linalg.norm
    squares the entries, and |x| ~ 1e-200 read as 0: err_limit = 0 for an h_limit 5e-201 away)."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    m = float(np.abs(x).max()) if x.size else 0.0
    return m * float(np.linalg.norm(x / m)) if 0.0 < m < math.inf else float(np.linalg.norm(x))


def newton_error(T, u, z, alpha, lam, h_hat=None) -> tuple[float, float]:
    """(||g||, ||H^-1 g||) at lambda of the scaled dual (nu = lambda / alpha; g = b - nu - h(lambda),
    H = I + alpha Cov_p(lambda)(t)).  The Newton step ||H^-1 g|| is the first-order estimate of
    ||nu - nu*|| = ||h_newton - h*||, in h's own units: scale-free, where ||g|| is not (at large alpha
    the gradient carries the rounding noise ~eps alpha |T|^2 of the logits, which H divides out again:
    at alpha = 1e12, ||g|| ~ 1e-3 while h is right to ~1e-15).  h_hat: b - nu where the caller has it
    (lambda / alpha loses nu where alpha nu underflows)."""
    import numpy as np
    from scipy.special import softmax

    from attnlab.numerics.entropic_dual import _log_u

    with np.errstate(all="ignore"):
        b = u @ T + z
        p = softmax(_log_u(u) + T @ lam)
        h = T.T @ p
        g = (b - lam / float(alpha) if h_hat is None else np.asarray(h_hat, dtype=float)) - h
        C = T - h
        H = np.eye(T.shape[1]) + float(alpha) * (C.T * p) @ C
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            return _norm(g), math.inf
    gn, sn = _norm(g), _norm(step)
    return (gn if math.isfinite(gn) else math.inf), (sn if math.isfinite(sn) else math.inf)


def _finite_or_null(row: dict) -> dict:
    """A non-finite number (overflow at huge alpha) is reported as null, never as NaN or Infinity."""
    def clean(v):
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, list):
            vs = [clean(x) for x in v]
            return None if any(x is None for x in vs) else vs
        return v
    return {k: clean(v) for k, v in row.items()}


def _fmt(v):
    """A vector in fixed point, or in exponent form where an entry is far from 1 (an instance at scale 1e-13
    printed as all zeros)."""
    fixed = all(x == 0 or 1e-3 <= abs(x) < 1e6 for x in v)
    return "(" + ", ".join(f"{x:+.6f}" if fixed else f"{x:+.6e}" for x in v) + ")"


def check_size(n: int, d: int, n_alphas: int, cvxpy: bool, allow_large: bool,
               flags=("--instance", "--no-cvxpy", "--allow-large")) -> float:
    """The cvxpy column's estimated seconds, after refusing (UsageError) an instance whose cvxpy column
    would take over LARGE_SECONDS unless allowed, or whose Newton arrays need over MAX_BYTES."""
    from attnlab.errors import UsageError

    where, skip, allow = flags
    est = _cost_estimate(n, d, n_alphas)
    if cvxpy and est > LARGE_SECONDS and not allow_large:
        raise UsageError(f"{where}: n = {n} templates in R^{d} with {n_alphas} alphas: the cvxpy column "
                         f"is estimated at up to ~{est:.0f} s (and memory ~n^2; the bound is for templates of norm "
                         f"~sqrt(d): normalised ones take about a tenth); pass {skip} to skip it, or "
                         f"{allow} to run it anyway")
    # Newton's working arrays: the n x (d+1)^2 products of a_i a_i^T (d <= 16) or n x (d+1), a few copies, and its
    # (d+1) x (d+1) Hessian and factorisation, a few copies (d = 300,000 asked for 671 GiB in one of them, a traceback)
    mem = 8 * (n * ((d + 1) ** 2 if d <= 16 else 4 * (d + 1)) * 3 + 4 * (d + 1) ** 2)
    if mem > MAX_BYTES:
        raise UsageError(f"{where}: n = {n} templates in R^{d}: Newton needs ~{mem / 2 ** 30:.1f} GiB, over "
                         f"{MAX_BYTES / 2 ** 30:g} GiB; use fewer templates or fewer dimensions d")
    return est


API_KEYS = ("T", "u", "z", "alphas", "seed", "cvxpy", "allow_large")


def _plain(x, name: str):
    """An argument of attnlab.compare('fenchel', ...) as the plain lists and numbers of an instance file
    (numpy arrays, tensors and tuples become lists; numpy scalars numbers)."""
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        x = x.tolist()
    if isinstance(x, tuple):
        x = list(x)
    if isinstance(x, list):
        return [_plain(v, name) for v in x]
    return x


def api(kwargs: dict) -> list[dict]:
    """attnlab.compare('fenchel', **kwargs), validated as the command line validates its flags and instance
    file: T, u and z together (an instance; alphas optional) or none of them (the random instance of
    `seed`); every bad value a UsageError naming the argument."""
    from attnlab.errors import UsageError

    unknown = sorted(set(kwargs) - set(API_KEYS))
    if unknown:                     # a misspelt key (alpha for alphas) was ignored
        raise UsageError(f"compare('fenchel'): unknown argument(s) {', '.join(unknown)}; the arguments are "
                         f"{', '.join(API_KEYS)}")
    for flag in ("cvxpy", "allow_large"):
        if flag in kwargs and not isinstance(kwargs[flag], bool):      # cvxpy='no' was truthy
            raise UsageError(f"compare('fenchel'): {flag} must be True or False; got {kwargs[flag]!r}")
    given = [k for k in ("T", "u", "z") if k in kwargs]
    if given and len(given) < 3:    # T alone was ignored for the random instance
        raise UsageError(f"compare('fenchel'): give T, u and z together (an instance); got only {', '.join(given)}")
    if given and "seed" in kwargs:
        raise UsageError("compare('fenchel'): seed draws a random instance; give T, u, z or seed, not both")
    if given:
        shape = getattr(kwargs["T"], "shape", None)
        if shape is not None and len(shape) == 2:         # an array: its size refused before it is copied into lists
            try:
                n_alphas = len(kwargs.get("alphas", DEFAULT_ALPHAS))
            except TypeError:                             # (a number, a 0-d array)
                n_alphas = 1
            check_size(int(shape[0]), int(shape[1]), max(n_alphas, 1), kwargs.get("cvxpy", True) is not False,
                       kwargs.get("allow_large", False) is True,
                       ("compare('fenchel')", "cvxpy=False", "allow_large=True"))
        data = {k: _plain(kwargs[k], k) for k in ("T", "u", "z")}
        # (a numpy or torch scalar, or a 0-d array, is a number as alphas=2.0 is: it was refused as "not a list")
        alphas = _plain(kwargs.get("alphas", list(DEFAULT_ALPHAS)), "alphas")
        data["alphas"] = [alphas] if isinstance(alphas, (int, float)) and not isinstance(alphas, bool) else alphas
        try:
            T, u, z, alphas = validate_instance(data)
        except ValueError as exc:
            raise UsageError(f"compare('fenchel'): {exc}") from None
    else:
        if "alphas" in kwargs:
            raise UsageError("compare('fenchel'): alphas needs an instance (T, u, z); the random instance of "
                             f"seed uses {', '.join(map(str, DEFAULT_ALPHAS))}")
        from attnlab.run_args import seed_value

        if isinstance(kwargs.get("seed"), (bool, float, str)):       # 1.5 was read as 1, True as 1; "3" (refused
            # by the other comparisons) as 3
            raise UsageError(f"compare('fenchel'): seed must be an integer in 0..2**32-1; got {kwargs['seed']!r}")
        try:
            seed = seed_value(kwargs.get("seed", 0), "seed")
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"compare('fenchel'): {exc}") from None
        T, u, z, alphas = random_instance(seed)
    use = kwargs.get("cvxpy", True)
    check_size(T.shape[0], T.shape[1], len(alphas), use, kwargs.get("allow_large", False),
               ("compare('fenchel')", "cvxpy=False", "allow_large=True"))
    return compare(T, u, z, alphas, cvxpy=use, limit=use)


def main(argv: list[str]) -> int:
    from attnlab.errors import ArgumentParser, UsageError

    ap = ArgumentParser(
        prog="attnlab compare fenchel",
        description="Exact solution of the Fenchel-dual problem (Newton on the dual (7), and cvxpy on the "
                    "primal (3)) against the attention approximation (16), the refined (13) and the "
                    "alpha -> infinity limit, per alpha.  h_newton is the reference; h_exact (cvxpy) is "
                    "the least accurate column (accepted at KKT residual <= 1e-6: off by 1e-8 to a few 1e-7) "
                    "and is null where cvxpy fails.  newton_rel_error estimates ||h_newton - h*|| / max(|mu + z|, max |t_ij|).")
    ap.add_argument("--instance", metavar="FILE.json",
                    help="JSON with T (n x d), u (n, probability vector), z (d), alphas (list of numbers > 0); "
                         f"default: a random instance (n = {DEFAULT_N}, d = {DEFAULT_D}, "
                         f"alphas = {', '.join(map(str, DEFAULT_ALPHAS))})")
    from attnlab.run_args import seed_value

    ap.add_argument("--seed", type=seed_value, default=None,
                    help="seed of the random instance (0..2**32-1; default 0); not with --instance")
    ap.add_argument("--json", metavar="OUT", help="write the rows as JSON to OUT ('-' for stdout)")
    ap.add_argument("--no-cvxpy", action="store_true", help="skip cvxpy: the h_exact column and the alpha -> infinity limit h_limit are null")
    ap.add_argument("--allow-large", action="store_true",
                    help=f"run even when the cvxpy column is estimated to take more than {LARGE_SECONDS:g} s")
    args = ap.parse_args(argv)
    from attnlab.atomic_io import check_json_dest, write_json_dest

    check_json_dest(args.json)                 # before the work, not after it
    if args.instance is not None:
        if not args.instance.strip():
            raise UsageError("--instance is empty; give a JSON file (or leave --instance out for a random instance)")
        if args.seed is not None:      # the seed only draws the random instance: with a file it did nothing
            raise UsageError("--seed draws a random instance; give --instance FILE or --seed S, not both")
        try:
            T, u, z, alphas = load_instance(args.instance)
        except ValueError as e:
            raise UsageError(f"--instance: {e}") from None
        src = args.instance
    else:
        seed = 0 if args.seed is None else args.seed
        T, u, z, alphas = random_instance(seed)
        src = f"random instance, seed {seed}"
    n, d = T.shape
    est = check_size(n, d, len(alphas), not args.no_cvxpy, args.allow_large)
    total = _newton_estimate(n, d, len(alphas)) + (0.0 if args.no_cvxpy else est)
    progress = None
    if total > 5.0:                 # say so before the work, and show each alpha as it is done
        from attnlab.progress import Progress

        print(f"attnlab compare fenchel: n = {n} templates in R^{d}, {len(alphas)} alpha(s): estimated ~{total:.0f} s"
              + ("" if args.no_cvxpy else f" (cvxpy ~{est:.0f} s; --no-cvxpy skips it)"), file=sys.stderr, flush=True)
        progress = Progress(len(alphas), "alpha")
    rows = compare(T, u, z, alphas, cvxpy=not args.no_cvxpy, progress=progress, limit=not args.no_cvxpy)
    for r in rows:
        if not r["newton_converged"]:
            err = "n/a" if r["newton_rel_error"] is None else f"{r['newton_rel_error']:.1e}"
            lerr = "n/a" if r["lambda_rel_error"] is None else f"{r['lambda_rel_error']:.1e}"
            print(f"attnlab compare fenchel: warning: alpha {r['alpha']:g}: Newton did not converge "
                  f"({r['newton_iterations']} iterations, estimated relative error of h_newton {err}, of lambda* "
                  f"{lerr}; float64 cannot resolve alpha <t, nu> at a huge alpha, nor lambda* where z lies below the "
                  "rounding of mu + z): this row's errors, rel_dev and tv are not to be trusted (non-finite values "
                  "are null)", file=sys.stderr)
        if r["h_exact"] is None and not args.no_cvxpy:
            print(f"attnlab compare fenchel: warning: alpha {r['alpha']:g}: h_exact is null: {r['cvxpy_status']}",
                  file=sys.stderr)
    if args.json == "-":
        print(json.dumps(rows, indent=2))
        return 0
    write_json_dest(args.json, rows)
    print(f"Fenchel-dual attention, {src}: n = {n} templates in R^{d}")
    print("h_newton: Newton on the dual (7) (the reference); h_exact: cvxpy primal (3) (least accurate); "
          "h_approx: (16); h_refined: h at (13); h_limit: projection of mu + z onto the hull (alpha -> inf); "
          "errors against h_newton; rel_dev = ||lambda*-alpha z||/||lambda*||; tv = TV(p(lambda*), p(alpha z))")
    hdr = (f"{'alpha':>7}  {'err_approx':>10}  {'err_refined':>11}  {'err_limit':>10}  {'rel_dev':>8}  "
           f"{'tv':>8}  {'|h_cvx-h_newton|':>16}  {'newton it/err':>14}")
    print(hdr)
    import numpy as np
    def num(v, spec):
        width = "".join(ch for ch in spec.split(".")[0] if ch.isdigit())
        return ("null".rjust(int(width)) if width else "null") if v is None else format(v, spec)

    def vec(v):
        return "null" if v is None else _fmt(v)

    for r in rows:
        dcv = ("null" if r["h_exact"] is None or r["h_newton"] is None
               else f"{float(np.linalg.norm(np.subtract(r['h_exact'], r['h_newton']))):.2e}")
        nw = f"{r['newton_iterations']}/{num(r['newton_rel_error'], '.0e')}" + ("" if r["newton_converged"] else "!")
        print(f"{r['alpha']:>7g}  {num(r['err_approx'], '>10.3e')}  {num(r['err_refined'], '>11.3e')}  "
              f"{num(r['err_limit'], '>10.3e')}  {num(r['rel_dev'], '>8.4f')}  {num(r['tv'], '>8.4f')}  {dcv:>16}  "
              f"{nw:>14}")
    for r in rows:
        print(f"alpha {r['alpha']:g}: h_newton {vec(r['h_newton'])}  h_approx {vec(r['h_approx'])}  "
              f"h_refined {vec(r['h_refined'])}  lambda* {vec(r['lambda_star'])}")
    return 0
