"""Claims of the Fenchel-dual attention paper at large reliability alpha (`fenchel.large-alpha.*`).

As alpha -> infinity the KL term of (3) loses weight: h-hat tends to the point of the templates' convex
hull closest to b = mu + z, the Euclidean projection (the dual (7) divided by alpha tends to
max <nu, b> - ||nu||^2/2 - max_i <t_i, nu>, whose solution gives h = b - nu = proj(b)).  The exact solver
(attnlab.numerics.entropic_dual.solve, Newton on the scaled dual nu = lambda/alpha) must converge there.
"""
from __future__ import annotations

from attnlab.catalog import claim, holds_if


@claim("fenchel.large-alpha.projection-limit",
       reference="Sec. 3-4, problem (3) and dual (7), alpha -> infinity",
       statement="h-hat(alpha) tends to the Euclidean projection of mu + z onto the convex hull of the "
                 "templates that u weighs (u_i > 0), at the rate 1/alpha when the projection lies inside an edge (error ratio per "
                 "x100 in alpha within [50, 200]), and the float64 Newton solver converges up to alpha = 1e13 "
                 "(h-hat within 1e-8 of the limit from alpha = 1e10).",
       method="float64",
       # (solve runs the Newton iteration itself since 2026-12-08, taking h = b - nu from it, not through
       # solve_dual_newton's lambda: the claim vouches for what it calls)
       vouches_for=("numerics.entropic_dual.solve", "numerics.entropic_dual.project_onto_hull"))
def _():
    import numpy as np

    from attnlab.numerics import entropic_dual as ed

    # a fourth template (5, 5) with u = 0 (a padding token): p cannot weigh it, so the limit is the projection
    # onto the triangle, not onto the hull with it (which holds mu + z itself)
    T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    u = np.array([0.2, 0.3, 0.5, 0.0])
    z = np.array([1.0, 1.0]) - u @ T                    # mu + z = (1, 1): projection (1/2, 1/2)
    proj = ed.project_onto_hull(T, u @ T + z, u)
    alphas = [1e2, 1e4, 1e6, 1e10, 1e12, 1e13]
    sols = [ed.solve(T, u, z, a) for a in alphas]
    errs = [float(np.linalg.norm(s["h"] - proj)) for s in sols]
    conv = [bool(s["info"]["converged"]) for s in sols]
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    ok = (all(conv) and all(50 <= r <= 200 for r in ratios) and max(errs[3:]) <= 1e-8
          and float(np.abs(proj - 0.5).max()) < 1e-9)
    return holds_if(ok, measured=dict(errors=errs, ratios=ratios, converged=conv), tolerance="see statement",
                    explanation="instance: triangle (0,0), (1,0), (0,1) and (5,5) with u = 0, mu + z = (1, 1); projection (by cvxpy QP, onto the templates with u > 0) against (1/2, 1/2)")
