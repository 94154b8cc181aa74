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


def load_instance(path: str):
    """Read and validate FILE.json; raises ValueError with a one-line message."""
    import numpy as np

    from attnlab.numerics.entropic_dual import check_instance
    from attnlab.numerics.validate import positive

    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object with keys T, u, z, alphas")
    missing = [k for k in ("T", "u", "z", "alphas") if k not in data]
    if missing:
        raise ValueError(f"{path} lacks key(s) {', '.join(missing)} (needs T: n x d, u: n, z: d, alphas: list)")
    try:
        T, u, z = check_instance(np.asarray(data["T"], dtype=float), np.asarray(data["u"], dtype=float),
                                 np.asarray(data["z"], dtype=float))
        alphas = data["alphas"]
        if not isinstance(alphas, list) or not alphas:
            raise ValueError("alphas must be a non-empty list of numbers > 0")
        alphas = [positive(a, "alphas[%d]" % i) for i, a in enumerate(alphas)]
    except (TypeError, ValueError) as e:
        raise ValueError(str(e).splitlines()[0]) from None
    return T, u, z, alphas


def compare(T, u, z, alphas) -> list[dict]:
    """One dict per alpha with the keys of the JSON output."""
    import numpy as np

    from attnlab.numerics import entropic_dual as ed

    import warnings

    rows = []
    for a in alphas:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                  # cvxpy's 'may be inaccurate' is handled below
            try:
                p_cvx, _ = ed.solve_primal_cvxpy(T, u, z, a, **ed.TIGHT)
            except RuntimeError:
                p_cvx, _ = ed.solve_primal_cvxpy(T, u, z, a)   # default tolerances if the tight solve stalls
        ex = ed.solve(T, u, z, a)
        h_apx = ed.h_approx(T, u, z, a)
        h_ref = ed.h_refined(T, u, z, a)
        lam = ex["lam"]
        nl = float(np.linalg.norm(lam))
        rows.append(dict(
            alpha=float(a),
            h_exact=(p_cvx @ T).tolist(),
            h_newton=ex["h"].tolist(),
            h_approx=h_apx.tolist(),
            h_refined=h_ref.tolist(),
            lambda_star=lam.tolist(),
            err_approx=float(np.linalg.norm(ex["h"] - h_apx)),
            err_refined=float(np.linalg.norm(ex["h"] - h_ref)),
            rel_dev=float(np.linalg.norm(lam - a * z) / nl) if nl > 0 else 0.0,
            tv=float(0.5 * np.abs(ex["p"] - ed.tilted(a * z, T, u)).sum()),
        ))
    return rows


def _fmt(v):
    return "(" + ", ".join(f"{x:+.6f}" for x in v) + ")"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="attnlab compare fenchel",
        description="Exact solution of the Fenchel-dual problem (cvxpy and Newton) against the attention "
                    "approximation (16) and the refined (13), per alpha.")
    ap.add_argument("--instance", metavar="FILE.json",
                    help="JSON with T (n x d), u (n, probability vector), z (d), alphas (list of numbers > 0); "
                         f"default: a random instance (n = {DEFAULT_N}, d = {DEFAULT_D}, "
                         f"alphas = {', '.join(map(str, DEFAULT_ALPHAS))})")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random instance (default 0)")
    ap.add_argument("--json", metavar="OUT", help="write the rows as JSON to OUT ('-' for stdout)")
    args = ap.parse_args(argv)
    if args.instance:
        try:
            T, u, z, alphas = load_instance(args.instance)
        except ValueError as e:
            print(f"attnlab compare fenchel: error: --instance: {e}", file=sys.stderr)
            return 2
        src = args.instance
    else:
        T, u, z, alphas = random_instance(args.seed)
        src = f"random instance, seed {args.seed}"
    rows = compare(T, u, z, alphas)
    if args.json:
        text = json.dumps(rows, indent=2)
        if args.json == "-":
            print(text)
            return 0
        with open(args.json, "w") as f:
            f.write(text + "\n")
    n, d = T.shape
    print(f"Fenchel-dual attention, {src}: n = {n} templates in R^{d}")
    print("h_exact: cvxpy primal (3); h_newton: Newton on the dual (7); h_approx: (16); h_refined: h at (13); "
          "errors against h_newton; rel_dev = ||lambda*-alpha z||/||lambda*||; tv = TV(p(lambda*), p(alpha z))")
    hdr = f"{'alpha':>7}  {'err_approx':>10}  {'err_refined':>11}  {'rel_dev':>8}  {'tv':>8}  {'|h_cvx-h_newton|':>16}"
    print(hdr)
    import numpy as np
    for r in rows:
        dcv = float(np.linalg.norm(np.subtract(r["h_exact"], r["h_newton"])))
        print(f"{r['alpha']:>7g}  {r['err_approx']:>10.3e}  {r['err_refined']:>11.3e}  {r['rel_dev']:>8.4f}  "
              f"{r['tv']:>8.4f}  {dcv:>16.2e}")
    for r in rows:
        print(f"alpha {r['alpha']:g}: h_newton {_fmt(r['h_newton'])}  h_approx {_fmt(r['h_approx'])}  "
              f"h_refined {_fmt(r['h_refined'])}  lambda* {_fmt(r['lambda_star'])}")
    return 0
