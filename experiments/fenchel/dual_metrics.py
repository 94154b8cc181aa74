"""The paper's deviation metric ||lambda* - alpha z|| / ||lambda*|| (Sec 8, Figs 4-8) and the
output-level errors (docs/instances.md), for attention heads read as the convex problem (3).

For one query of one head the instance is (T, log u, z) with
  t_i = x_i / sqrt(d')                         (templates, Sec 8 reparameterisation, Eq. 19)
  z   = c * W_K^T (W_Q y_k + b_Q)              (evidence; c = 1 when the logits carry 1/sqrt(d'), as in
                                                BERT; c = sqrt(d') when they do not, as in T5 -- docs/instances.md)
  log u_i = additive logit term (T5: relative-position bias, Eq. 17; -inf on masked/padded atoms)
so that <t_i, z> + log u_i is exactly the model's attention logit (a key bias only adds a constant
over i, which the softmax drops).  lambda* is the maximiser of the dual (7), found by the batched
float64 Newton solver of :mod:`attnlab.numerics.entropic_dual`; alpha = 1 as in the paper.
"""
from __future__ import annotations

import math
import warnings

import torch

from attnlab.numerics.entropic_dual import solve_dual_newton_torch

METRICS = ("rel_dev", "out_err", "tv", "first_order", "p_max")


def head_problems(xq, xk, add, W_Q, b_Q, W_K, logit_scale: float, valid_q=None):
    """Instances (T, logu, z) of one head, one per valid query, in float64.

    xq (B, Lq, D), xk (B, Lk, D): query/key-side inputs; add (B|1, Lq|1, Lk): additive logit term of
    this head; W_Q, W_K (d', D), b_Q (d',); logit_scale = the factor on <K x, Q y> (1/sqrt(d') or 1).
    valid_q (B, Lq) bool selects the queries (default: all).  Returns T (P, Lk, D), logu (P, Lk),
    z (P, D) and the (b, k) index pairs (P, 2).
    """
    xq, xk = xq.double(), xk.double()
    W_Q, b_Q, W_K = W_Q.double(), b_Q.double(), W_K.double()
    d_head = W_Q.shape[0]
    B, Lq, _ = xq.shape
    Lk = xk.shape[1]
    add = add.double().expand(B, Lq, Lk)
    if valid_q is None:
        valid_q = torch.ones(B, Lq, dtype=torch.bool)
    idx = valid_q.nonzero()
    b, k = idx[:, 0], idx[:, 1]
    q = xq[b, k] @ W_Q.T + b_Q                                   # (P, d')
    z = (q @ W_K) * (logit_scale * math.sqrt(d_head))            # so that <t_i, z> = scale <K x_i, Q y_k>
    T = xk[b] / math.sqrt(d_head)
    return T, add[b, k], z, idx


def _norm_ratio(a, b):
    """||a|| / ||b|| per row, both divided by max |b| first: the plain norms squared their entries, so that at
    alpha = 1e-200 (lambda* ~ 1e-200) both underflowed to 0 and the ratio was NaN."""
    s = b.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(b.dtype).tiny)
    return (a / s).norm(dim=-1) / (b / s).norm(dim=-1)


def deviation_metrics(T, logu, z, alpha: float = 1.0, lam=None, min_atoms: int = 2, chunk: int = 256):
    """Per-instance metrics (dict of 1-D float64 tensors over the P instances).

    - ``rel_dev``     ||lambda* - alpha z|| / ||lambda*||          (the paper's Fig 4-8 metric)
    - ``out_err``     ||h(lambda*) - h(alpha z)||                  (output-level error, in template units)
    - ``tv``          TV(p(lambda*), p(alpha z)) = 1/2 sum_i |p*_i - p_i|
    - ``first_order`` alpha ||Sigma z|| / ||z||                    (first-order predictor of rel_dev, docs/instances.md)
    - ``p_max``       max_i p_i(alpha z)                           (how peaked the head's attention is)
    - ``n_atoms``     number of atoms with u_i > 0
    Instances with fewer than ``min_atoms`` atoms (trivially lambda* = alpha z) are dropped; ``kept``
    (bool over the input instances) says which were kept.  lambda* comes from
    ``solve_dual_newton_torch`` (float64) unless given.
    """
    if alpha <= 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite number > 0; got {alpha!r}")
    T, logu, z = T.double(), logu.double(), z.double()
    n_atoms = torch.isfinite(logu).sum(-1)
    kept = n_atoms >= min_atoms
    T, logu, z, n_atoms = T[kept], logu[kept], z[kept], n_atoms[kept]
    if lam is not None:
        lam = lam.double()[kept]
    out = {m: [] for m in METRICS}
    out["n_atoms"] = n_atoms.double()
    max_grad, n_bad = 0.0, 0
    for s in range(0, T.shape[0], chunk):
        Tc, lc, zc = T[s:s + chunk], logu[s:s + chunk], z[s:s + chunk]
        if lam is None:
            lam_c, info = solve_dual_newton_torch(Tc, lc, zc, alpha, return_info=True)
            max_grad = max(max_grad, info["grad_norm"])
            n_bad += int((~info["converged"]).sum())
        else:
            lam_c = lam[s:s + chunk]
        u = torch.softmax(lc, -1)
        mu = (u.unsqueeze(-2) @ Tc).squeeze(-2)
        Tm = Tc - mu.unsqueeze(-2)
        Sz = ((u * (Tm @ zc.unsqueeze(-1)).squeeze(-1)).unsqueeze(-2) @ Tm).squeeze(-2)   # Sigma z
        p_star = torch.softmax(lc + (Tc @ lam_c.unsqueeze(-1)).squeeze(-1), -1)
        p_att = torch.softmax(lc + alpha * (Tc @ zc.unsqueeze(-1)).squeeze(-1), -1)
        h_star = (p_star.unsqueeze(-2) @ Tc).squeeze(-2)
        h_att = (p_att.unsqueeze(-2) @ Tc).squeeze(-2)
        out["rel_dev"].append(_norm_ratio(lam_c - alpha * zc, lam_c))
        out["out_err"].append((h_star - h_att).norm(dim=-1))
        out["tv"].append(0.5 * (p_star - p_att).abs().sum(-1))
        out["first_order"].append(alpha * _norm_ratio(Sz, zc))
        out["p_max"].append(p_att.max(-1).values)
    for m in METRICS:
        out[m] = torch.cat(out[m]) if out[m] else torch.zeros(0, dtype=torch.float64)
    if n_bad:
        warnings.warn(f"deviation_metrics: lambda* did not converge for {n_bad} of {T.shape[0]} queries at alpha = "
                      f"{alpha:g} (largest gradient norm {max_grad:.3g}); their metrics are not those of lambda*",
                      RuntimeWarning, stacklevel=2)
    out["kept"] = kept
    out["max_grad_norm"] = max_grad
    return out
