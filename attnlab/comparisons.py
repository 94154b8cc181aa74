"""The exact-against-approximate tables of `attnlab compare` on their default instances, as the
report shows them: per paper, tables of (title, note, columns, rows of strings).

- efa: Props 1-3 (App. E-G): a random EFA in each construction against the latent factor model.
- bidir: Lemma 1 and Thm 2: random bidirectional attention models against their CBOW mixture of
  experts, for one and two heads and layers.
- fenchel: Thm 2, (7), (13), (16): on the random instance of seed 0, the exact ĥ (Newton on the dual
  (7), cvxpy on (3)) against the attention approximation (16), the refined (13) and the α → ∞ limit.
- kernel: Cor E.3 / Thm E.1: the trapezoid rule against a 50-digit verified (Arb) integral on the built-in
  kernel softmax instance.

Each comes from :func:`attnlab.compare`, the function behind `attnlab compare NAME --json -`.
"""
from __future__ import annotations


def _e(x) -> str:
    return "-" if x is None else f"{x:.2e}"


def efa() -> list[dict]:
    import attnlab

    rows = []
    for prop in (1, 2, 3):
        r = attnlab.compare("efa-fm", prop=prop, seed=0)
        rows.append([f"Prop {prop}", _e(r["max_abs_dev_natural"]), _e(r["max_abs_dev_loglik"]),
                     _e(r["printed_form_max_abs"]), ", ".join(f"{k} = {v}" for k, v in r["sizes"].items())])
    return [{"title": "attnlab compare efa-fm (seed 0, float64)",
             "note": "A random EFA in the construction of each proposition against the latent factor model it "
                     "should equal. Prop 3 uses the corrected W^K; the matrix as printed gives natural "
                     "parameters identically 0 (the printed-form column).",
             "columns": ["proposition", "max |dev| natural parameters", "max |dev| log-likelihood",
                         "printed form max |.|", "sizes"], "rows": rows}]


def bidir() -> list[dict]:
    import attnlab

    rows = []
    for heads, layers in ((1, 1), (2, 1), (1, 2), (2, 2)):
        r = attnlab.compare("bidir-moe", heads=heads, layers=layers, seed=0)
        rows.append([str(heads), str(layers), _e(r["max_abs_dev_logits"]), _e(r["max_abs_dev_loss"]),
                     f"{r['max_abs_logit']:.3g}", str(r["n_sentences"]), r["moe_form"]])
    return [{"title": "attnlab compare bidir-moe (seed 0, float64)",
             "note": "A random bidirectional attention model against its CBOW mixture-of-experts form "
                     "(Lemma 1, Thm 2) on masked sentences.",
             "columns": ["heads", "layers", "max |dev| logits", "max |dev| loss", "max |logit|", "sentences",
                         "mixture form"], "rows": rows}]


def fenchel() -> list[dict]:
    import numpy as np

    import attnlab

    rows = []
    for r in attnlab.compare("fenchel", seed=0):
        cvx = None if r["h_exact"] is None else float(np.linalg.norm(np.subtract(r["h_exact"], r["h_newton"])))
        rows.append([f"{r['alpha']:g}", _e(r["err_approx"]), _e(r["err_refined"]), _e(r["err_limit"]),
                     f"{r['rel_dev']:.4f}", f"{r['tv']:.4f}", _e(cvx),
                     f"{r['newton_iterations']}" + ("" if r["newton_converged"] else " (not converged)")])
    return [{"title": "attnlab compare fenchel (random instance, seed 0)",
             "note": "Errors ‖ĥ − ĥ_Newton‖ against Newton on the scaled dual (7): the attention approximation "
                     "(16), the refined (13) and the α → ∞ limit (projection of µ + z onto the templates' hull); "
                     "the paper's relative deviation ‖λ*−αz‖/‖λ*‖ and the total variation between p(λ*) and "
                     "p(αz); cvxpy on the primal (3) as a check of Newton.",
             "columns": ["α", "error of (16)", "error of (13)", "error of the limit", "‖λ*−αz‖/‖λ*‖",
                         "TV(p(λ*), p(αz))", "‖ĥ_cvxpy − ĥ_Newton‖", "Newton iterations"], "rows": rows}]


def kernel() -> list[dict]:
    import attnlab
    from attnlab.theory.kernel.compare import rate_text, short_number

    r = attnlab.compare("kernel-quadrature")
    inst = r["instance"]
    rows = [[str(g), f"{z:.15g}", _e(ez), _e(ec)]
            for g, z, ez, ec in zip(r["grids"], r["Z"], r["err_Z"], r["err_context"])]
    slope = "n/a" if r["slope"] is None else f"{r['slope']:.3f}"
    return [{"title": f"attnlab compare kernel-quadrature ({inst['family']}, base {inst['base']}, "
                      f"domain {inst['domain']})",
             "note": f"The batched trapezoid rule against a {inst['dps']}-digit verified integral (Arb: a ball "
                     f"that contains it) split at every "
                     f"kink, inducing point and basis centre (its stated relative error "
                     f"{r['ref_error_estimate']:.1e}); Z_ref = {short_number(r['Z_ref'], 17)}. Rate of the context error: "
                     f"{rate_text(r)} (log-log slope {slope} against {r['slope_against']}, "
                     f"{r['points_in_fit']} grids above the float64 floor {r['float64_floor']:.1e}).",
             "columns": ["grid", "Z (trapezoid)", "|Z − Z_ref|", "max |c − c_ref|"], "rows": rows}]


TABLES = {"efa": efa, "bidir": bidir, "fenchel": fenchel, "kernel": kernel}


def tables(paper: str) -> list[dict]:
    """The comparison tables of `paper`; a comparison that cannot run here (a missing optional
    package) is one table whose note says why."""
    try:
        return TABLES[paper]()
    except ImportError as exc:
        return [{"title": f"attnlab compare ({paper})", "note": f"not run here: {exc}", "columns": [], "rows": []}]
