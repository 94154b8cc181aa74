"""Which CBOW-with-MoE models are attention models: the two directions of Theorem 2 (Sec. 2.2) of
"Bidirectional Attention as a Mixture of Continuous Word Experts" (`bidir.thm2.image-constraints`,
`bidir.thm2.inverse-map`).

Lemma 1's map (App. C) sends attention parameters to W^KQ = W^K^T W^Q, W^LOV = W^l W^O^T W^V,
g = W^l c_{|V|+1}, D = W^l P^T with W^l = W'' + W''W'.  The paper treats W^KQ, W^LOV, g, D as free;
they are tied: rank W^KQ <= d_w and the columns of W^LOV, g, D lie in col(W^l), of dimension <= p.
The first claim measures these constraints on the library's map and shows that generic MoE parameters
violate them when d_w < p, p < |V| or p < S+1; the second builds attention parameters from MoE
parameters inside the image (experiments/models/bidir.py: attention_from_moe) and compares logits.
"""
from __future__ import annotations

import numpy as np

from attnlab.theory._inputs import refused
from attnlab.theory._errors import worse as _worse
from attnlab.catalog import claim, holds_if

REL_TOL = 1e-12
BINDING_MIN = 1e-3     # a violated constraint must miss by at least this (relative)


def _t(a):
    import torch

    return torch.as_tensor(np.asarray(a, dtype=float), dtype=torch.float64)


def image_residuals(q) -> dict:
    """For the MoEParameters q of an attention model: the largest (d_w+1)-th singular value of W^KQ_i
    relative to its first (0 when d_w >= p), and ||(I - W^l W^l^+)[W^LOV_1..H, g, D]|| / ||[...]||."""
    import torch

    H, p = q.W_KQ.shape[0], q.W_KQ.shape[1]
    kq = 0.0
    for i in range(H):
        s = torch.linalg.svdvals(q.W_KQ[i])
        if q.d_w < p:
            kq = max(kq, float(s[q.d_w] / s[0]))
    B = torch.cat([*q.W_LOV, q.g[:, None], q.D], dim=1)
    proj = q.W_l @ torch.linalg.pinv(q.W_l)
    col = float(torch.linalg.norm(B - proj @ B) / torch.linalg.norm(B))
    return dict(kq_rank_excess=kq, outside_col_W_l=col)


def generic_violations(V: int, S: int, p: int, d_w: int, rng) -> dict:
    """Generic MoE parameters (all N(0, 1)) at these sizes: how far they are from the image of
    Lemma 1's map (relative), and whether attention_from_moe refuses them."""
    from attnlab.experiments.models.bidir import attention_from_moe

    C, P = rng.normal(size=(V + 1, p)), rng.normal(size=(S, p))
    KQ, LOV, g, D = rng.normal(size=(p, p)), rng.normal(size=(V, p)), rng.normal(size=V), rng.normal(size=(V, S))
    out = {}
    s = np.linalg.svd(KQ, compute_uv=False)
    out["kq_rank_excess"] = float(s[d_w] / s[0]) if d_w < p else 0.0
    B = np.hstack([LOV, g[:, None], D])                       # must lie in a <= p dimensional column space
    sb = np.linalg.svd(B, compute_uv=False)
    out["outside_any_p_dim_space"] = float(sb[p] / sb[0]) if len(sb) > p else 0.0
    K = np.hstack([C[-1][:, None], P.T])                      # W^l K = [g, D] needs [g, D] y = 0 on null(K)
    _, sk, Vt = np.linalg.svd(K)
    null = Vt[int((sk > 1e-12 * sk[0]).sum()):]
    G = np.hstack([g[:, None], D])
    out["g_D_on_null_K"] = float(np.linalg.norm(G @ null.T) / np.linalg.norm(G)) if len(null) else 0.0
    words = (f"got p={p}, |V|={V}, S={S}",) if p < V or p < S + 1 else ("rank",)   # the size test names the sizes
    out["refused"] = refused(lambda: attention_from_moe(*(_t(a) for a in (C, P, KQ, LOV, g, D)), d_w=d_w), *words)
    return out


# p = S is the edge of p >= S+1: the size test must refuse it (the rank test behind it would too, without
# naming the sizes)
GENERIC_SIZES = {"d_w < p": (4, 2, 6, 3), "p < |V|": (9, 3, 5, 5), "p < S+1": (3, 7, 5, 5), "p = S": (3, 5, 5, 5)}


def check_image_constraints(seed: int = 4) -> object:
    import torch

    from attnlab.experiments.models.bidir import moe_parameters
    from attnlab.theory.bidir.equivalences import build_case, size_cases

    from attnlab.theory.bidir.equivalences import lemma1_map_printed, map_deviation

    worst = dict(kq_rank_excess=0.0, outside_col_W_l=0.0, map_vs_app_c=0.0)
    cases = size_cases(seed, heads=(1, 2, 3))
    for c in cases:
        model, _, _, _ = build_case(c)
        q = moe_parameters(model)
        with torch.no_grad():
            r = dict(image_residuals(q), map_vs_app_c=map_deviation(q, lemma1_map_printed(model)))
        worst = {k: max(worst[k], r[k]) for k in worst}
    rng = np.random.default_rng(seed)
    generic = {name: generic_violations(*sz, rng) for name, sz in GENERIC_SIZES.items()}
    binding = (generic["d_w < p"]["kq_rank_excess"] > BINDING_MIN
               and generic["p < |V|"]["outside_any_p_dim_space"] > BINDING_MIN
               and generic["p < S+1"]["g_D_on_null_K"] > BINDING_MIN
               and generic["p = S"]["g_D_on_null_K"] > BINDING_MIN
               and all(v["refused"] for v in generic.values()))
    ok = _worse(*worst.values()) <= REL_TOL and binding
    return holds_if(ok, measured=dict(image=worst, generic=generic),
                    tolerance=dict(image=REL_TOL, generic_violation_min=BINDING_MIN),
                    explanation=f"{len(cases)} attention models (sizes of bidir.lemma1.explicit-loss, H in 1..3), "
                                "float64: the library's map (moe_parameters) against App. C's map as printed, "
                                "sigma_{d_w+1}(W^KQ_i)/sigma_1 and the part of [W^LOV, g, D] outside "
                                "col(W^l); generic N(0,1) MoE parameters at (|V|, S, p, d_w) = "
                                + ", ".join(f"{k}: {v}" for k, v in GENERIC_SIZES.items())
                                + ": relative violation and attention_from_moe's refusal")


@claim("bidir.thm2.image-constraints",
       reference="Theorem 2 (Sec. 2.2), Lemma 1's reparameterization (App. C)",
       statement="Lemma 1's map is not onto: every MoE it produces has rank W^KQ_i <= d_w, and the columns "
                 "of W^LOV_i, g and D lie in col(W^l) (dimension <= p) with [g, D] = W^l [c_{|V|+1}, P^T]; "
                 "generic MoE parameters violate this when d_w < p, p < |V| or p < S+1. Theorem 2's "
                 "equivalence makes every attention MLM a CBOW MoE, not every CBOW MoE an attention MLM.",
       # attention_from_moe is called here only for its refusals (a fault in its output cannot show); its
       # output is vouched for by bidir.thm2.inverse-map
       method="torch", vouches_for=("experiments.models.bidir.moe_parameters",))
def _image():
    return check_image_constraints()


INVERSE_SIZES = [  # (|V|, S, p, d_w): p = |V| = S+1 edges, S = 1, |V| >= 100, p = S+1 > |V|, d_w < p
    (2, 1, 2, 1), (3, 2, 3, 3), (100, 4, 104, 8), (5, 9, 10, 2), (6, 1, 6, 6)]


def inverse_deviations(V: int, S: int, p: int, d_w: int, rng) -> dict:
    """Random MoE parameters in the image (rank W^KQ <= d_w) at these sizes; the attention model of
    attention_from_moe against the MoE: relative logits deviation and parameter round trip."""
    import torch

    from attnlab.experiments.models.bidir import CBOWMoE, attention_from_moe, mask_sentences, moe_parameters
    from attnlab.theory.bidir.equivalences import lemma1_map_printed, thm2_printed

    k = min(d_w, p)
    C, P = rng.normal(size=(V + 1, p)), rng.normal(size=(S, p))
    KQ = rng.normal(size=(k, p)).T @ rng.normal(size=(k, p)) / np.sqrt(k)
    LOV, g, D = rng.normal(size=(V, p)), rng.normal(size=V), rng.normal(size=(V, S))
    params = [_t(a) for a in (C, P, KQ, LOV, g, D)]
    moe = CBOWMoE(*params, d_w=d_w)
    try:
        att = attention_from_moe(*params, d_w=d_w, generator=torch.Generator().manual_seed(int(rng.integers(1 << 30))))
    except ValueError as e:
        return dict(logits=float("inf"), round_trip=float("inf"), attention_vs_printed=float("inf"),
                    moe_vs_printed=float("inf"), round_trip_printed=float("inf"), refused=str(e))
    B = max(24, S)
    tokens = torch.as_tensor(rng.integers(0, V, size=(B, S)))
    m = torch.arange(B) % S
    x = mask_sentences(tokens, m, V)
    with torch.no_grad():
        lo_att, lo_moe = att(x, m), moe(x, m)
        printed = thm2_printed(*params, d_w, x, m)["F"]          # Theorem 2 as printed on the given parameters
        pm = lemma1_map_printed(att)                              # App. C's map of the constructed model
    q = moe_parameters(att)
    rel = lambda a, b: float((a - b).abs().max()) / max(1.0, float(b.abs().max()))     # noqa: E731
    rt = max(rel(a, b) for a, b in ((q.W_KQ[0], params[2]), (q.W_LOV[0], params[3]), (q.g, params[4]),
                                    (q.D, params[5])))
    rt_printed = max(rel(a, b) for a, b in ((pm["W_KQ"][0], params[2]), (pm["W_LOV"][0], params[3]),
                                            (pm["g"], params[4]), (pm["D"], params[5])))
    return dict(logits=rel(lo_att, lo_moe), round_trip=rt, attention_vs_printed=rel(lo_att, printed),
                moe_vs_printed=rel(lo_moe, printed), round_trip_printed=rt_printed)


def check_inverse_map(seed: int = 5, n_random: int = 4):
    rng = np.random.default_rng(seed)
    sizes = list(INVERSE_SIZES)
    for _ in range(n_random):
        V, S = int(rng.integers(2, 20)), int(rng.integers(1, 10))
        p = max(V, S + 1) + int(rng.integers(0, 4))
        sizes.append((V, S, p, int(rng.integers(1, p + 1))))
    per = {f"|V|={V},S={S},p={p},d_w={d_w}": inverse_deviations(V, S, p, d_w, rng) for V, S, p, d_w in sizes}
    worst = {k: max(v[k] for v in per.values())
             for k in ("logits", "round_trip", "attention_vs_printed", "moe_vs_printed", "round_trip_printed")}
    return holds_if(_worse(*worst.values()) <= REL_TOL, measured=worst, tolerance=REL_TOL,
                    explanation=f"{len(sizes)} random MoEs in the image (p >= |V|, p >= S+1, rank W^KQ <= d_w; "
                                "edges p = |V| = S+1, S = 1, |V| = 100), float64: attention_from_moe, then max "
                                "|attention logits - MoE logits| / max(1, max |logit|) over every masked "
                                "position, and Lemma 1's map of the result against the MoE parameters; both "
                                "models' logits against Theorem 2 as printed on the given parameters, and App. "
                                "C's map as printed of the constructed model against them",
                    per_case=per)


@claim("bidir.thm2.inverse-map",
       reference="Theorem 2 (Sec. 2.2), Lemma 1 (App. C); inverse derived here",
       statement="Conversely, MoE parameters (C, P, W^KQ, W^LOV, g, D) with p >= |V|, p >= S+1, [c_{|V|+1}, "
                 "P^T] of full column rank and rank W^KQ <= d_w are those of a one-head attention MLM: W^l "
                 "of full row rank solving W^l [c_{|V|+1}, P^T] = [g, D], W' = 0, W'' = W^l, W^V = I, W^O = "
                 "(W^l^+ W^LOV)^T and W^K^T W^Q = W^KQ give the same logits, and Lemma 1's map returns the "
                 "MoE parameters.",
       method="torch",
       vouches_for=("experiments.models.bidir.attention_from_moe", "experiments.models.bidir.moe_parameters",
                    "experiments.models.bidir.BidirAttentionMLM.forward", "experiments.models.bidir.CBOWMoE.forward"))
def _inverse():
    return check_inverse_map()
