"""Exponential Family Attention (EFA; Wibisono & Wang 2025) and its latent factor ("FM") baselines.

The modules here are the ones the EFA experiments train and the ones the `efa.*` theory claims check.

Models
------
- :class:`EFACategorical`  the self-attention model of categorical sequences (Sec 2.1, Eq. (1)):
  for every target position i the sequence is copied with x_i replaced by [MASK] (per-target
  masking, done for all targets at once by a batched replication, no loop over positions), the
  copy goes through the attention layers, and column i gives the logits  delta^T X'_ii.
- :class:`EFAValue`  the exponential-family value part (Sec 2.2): columns
  [beta_bar_{x_j}; delta_bar_{x_j}; g(tau_j); lambda_1(y_j)] + p_bar_j with lambda_1([MASK]) at the
  target (x_i stays visible), attention, and kappa_i = lambda_2(Y'_ii) is the raw output of an
  exponential family of :mod:`attnlab.numerics.expfam` (Gaussian with known sigma^2, Poisson v1, Poisson v2,
  Bernoulli, Categorical).
- :class:`EFA`  the joint model of Eq. (2): the sum of the two (their parameters theta_1, theta_2 are
  disjoint, Sec 5.1.1).
- :class:`FMCategorical`, :class:`FMValue`, :class:`FMAttributes`  the latent factor models of
  Props 1, 3 and 2 (Sec 4; docs/instances.md), with ``normalization='paper'`` (the printed 1/(I-1))
  or ``'code'`` (what the authors' code computed).

Common arguments (all constructors)
-----------------------------------
direction   'bidirectional' (M = 0, Remarks 4/5: models p(x_i | x_{-i}); a pseudo-likelihood) or
            'unidirectional' (the causal mask M of Eq. (1), Remark 3).
attention   'softmax' (Eq. (1)) or 'linear' (no softmax; Sec 3.3 and Props 2, 3).
convention  'paper': the literal Eq. (1) -- scores S[j, i] = (W^Q x_j).(W^K x_i) scaled by 1/width
            (1/K, not 1/sqrt K), softmax over j for each output column i (column-wise), no biases,
            no output projection, no residual; several heads each have full-width W^Q, W^K, W^V and
            their outputs add up.
            'standard': the usual multi-head attention the authors' Keras code used --
            q_i.k_j / sqrt(head_dim), softmax over j for each output i, biases, heads of width
            width/heads concatenated and projected back (W^O), residual connection.
            Any of ``orientation`` ('column' | 'row'), ``scale`` (a float, 'width' or 'sqrt_head'),
            ``bias``, ``out_proj``, ``residual`` overrides the convention's default.
heads, layers, head_dim, layer_norm, ffn_hidden
            multi-head / multi-layer (Remarks 2, 8); post-residual LayerNorm and a ReLU feed-forward
            block (residual) after each attention layer, as in the temperature models.
positional  learned positional embeddings P (Sec 2.1) / P_bar (Sec 2.2); off for sets (Sec 3.1).
max_len     the largest sequence length I (rows of P).

Call convention (all models)
----------------------------
Inputs are batches: ``x`` (B, I) long item ids in [0, D); ``y`` (B, I) values; ``tau`` (B, I, tau_dim)
attributes, or (I, tau_dim) when every sequence has the same ones (sites at fixed coordinates: the
attribute map is then evaluated once per position, :func:`shared_map`); ``valid`` (B, I) bool, False at padding (padding is excluded as context and as target;
default: all valid); ``targets`` (B, T) long target positions (default: all I positions, T = I).

- ``forward(...)`` / ``natural_params(...)``: the raw outputs per target -- logits (B, T, D) for the
  categorical part; kappa (B, T) (or (B, T, C) for a categorical value family) for the value part.
  ``family.natural(out)`` maps a raw output to the canonical natural parameter.
- ``loglik(...)``: (B, T) log p(target | context), 0 where the target is padding.
- ``nll(...)`` (alias ``loss``): the mean negative log-likelihood over valid targets, i.e. minus the
  per-target average of Eq. (3) (with the base measure log h included; it does not depend on theta).
- ``code_loss(...)`` (value models): the mean of the loss the authors' code minimised (MSE,
  Poisson without factorials).
- ``predict_mean(...)`` (value models): E[y_target | context].

Attention weights are reported with rows = output (target) position i and columns = context
position j, whatever the convention (for 'paper' that is the transpose of Eq. (1)'s matrix).
"""
from __future__ import annotations

import contextlib
import math
from typing import Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.numerics import expfam

__all__ = ["AttentionLayer", "AttentionStack", "EFACategorical", "EFAValue", "EFA",
           "FMCategorical", "FMValue", "FMAttributes", "replicate_targets", "gather_targets",
           "all_targets", "per_target_outputs", "context_matrix", "all_targets_exact",
           "bidirectional_all_targets", "input_checks"]

DIRECTIONS = ("bidirectional", "unidirectional")
NORMALIZATIONS = ("paper", "code")


from attnlab.numerics.efa_attention import ATTENTIONS, CONVENTIONS, AttentionLayer, _choice, _posint  # noqa: E402,F401


class AttentionStack(nn.Module):
    """`layers` attention layers (Remark 8) with the causal mask M (Remark 3) or none (Remark 4)."""

    def __init__(self, width, layers=1, heads=1, attention="softmax", convention="paper",
                 direction="bidirectional", **layer_kw):
        super().__init__()
        self.direction = _choice(direction, DIRECTIONS, "direction")
        _posint(layers, "layers")
        self.layers = nn.ModuleList(AttentionLayer(width, heads, attention, convention, **layer_kw)
                                    for _ in range(layers))

    def allowed(self, valid: torch.Tensor) -> torch.Tensor:
        """(N, I) valid -> (N, I, I): context j valid, and j <= i when unidirectional."""
        a = valid[:, None, :].expand(-1, valid.shape[1], -1)
        if self.direction == "unidirectional":
            I = valid.shape[1]
            a = a & torch.ones(I, I, dtype=torch.bool, device=valid.device).tril()
        return a

    def forward(self, Z, valid, return_weights=False):
        allowed = self.allowed(valid)
        ws = []
        for layer in self.layers:
            if return_weights:
                Z, w = layer(Z, allowed, True)
                ws.append(w)
            else:
                Z = layer(Z, allowed)
        return (Z, ws) if return_weights else Z


# ------------------------------------------------------------------------------------------------
# per-target masking (batched)
# ------------------------------------------------------------------------------------------------
def all_targets(B: int, I: int, device=None) -> torch.Tensor:
    return torch.arange(I, device=device).expand(B, I)


def replicate_targets(cols: torch.Tensor, masked_cols: torch.Tensor,
                      targets: torch.Tensor) -> torch.Tensor:
    """One copy of the sequence per target: (B, I, W), (B, I, W), (B, T) -> (B, T, I, W), where copy
    t has column targets[b, t] replaced by the masked column (Sec 2.1 steps 1-2).  Batched."""
    B, I, W = cols.shape
    T = targets.shape[1]
    hit = F.one_hot(targets, I).bool()[..., None]                       # (B, T, I, 1)
    return torch.where(hit, masked_cols[:, None].expand(B, T, I, W), cols[:, None].expand(B, T, I, W))


def gather_targets(Z: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, T, I, W), (B, T) -> (B, T, W): column targets[b, t] of copy t."""
    idx = targets[..., None, None].expand(-1, -1, 1, Z.shape[-1])
    return Z.gather(2, idx).squeeze(2)


METHODS = ("fast", "replicate")


def per_target_outputs(stack: AttentionStack, cols: torch.Tensor, masked_cols: torch.Tensor,
                       valid: torch.Tensor, targets: torch.Tensor, method: str = "fast"):
    """Column t of copy t after the attention stack, (B, T, W), for every target t.

    method 'replicate': the literal definition (Sec 2.1 steps 1-3): one masked copy of the
    sequence per target, all copies through all layers (cost O(T I^2) per layer).
    method 'fast' (default), exactly equal:
      - unidirectional: in copy t the columns j < t never see column t (causal mask), so they equal
        the unmasked sequence's causal pass (the 'content stream'); only column t differs, and it
        sees the content columns j < t and itself.  One causal pass plus one [MASK] 'query stream'
        (as in XLNet's two-stream attention): O(I^2) per layer instead of O(I^3).
      - bidirectional: copies through the first L-1 layers, and in the last layer only the target
        column is computed.
    """
    _choice(method, METHODS, "method")
    B, I, W = cols.shape
    T = targets.shape[1]
    if method == "fast" and stack.direction == "bidirectional" and T > 1 and all_targets_exact(stack):
        out = bidirectional_all_targets(stack, cols, masked_cols, valid)          # (B, I, W)
        return out.gather(1, targets[..., None].expand(-1, -1, W))
    if method == "fast" and stack.direction == "unidirectional":
        j = torch.arange(I, device=cols.device)
        allowed_q = valid[:, None, :] & (j < targets[..., None])                 # (B, T, I)
        G = masked_cols.gather(1, targets[..., None].expand(-1, -1, W))          # (B, T, W)
        C = cols
        allowed_c = stack.allowed(valid)
        for layer in stack.layers:
            G = layer.cross(G, C, allowed_q, self_key=True)
            C = layer(C, allowed_c)
        return G
    Z = replicate_targets(cols, masked_cols, targets).reshape(B * T, I, W)
    v = valid[:, None, :].expand(B, T, I).reshape(B * T, I)
    layers = list(stack.layers)
    if method == "replicate":
        Z = stack(Z, v)
        return gather_targets(Z.reshape(B, T, I, W), targets)
    allowed = stack.allowed(v)
    for layer in layers[:-1]:
        Z = layer(Z, allowed)
    Zq = gather_targets(Z.reshape(B, T, I, W), targets).reshape(B * T, 1, W)
    out = layers[-1].cross(Zq, Z, v[:, None, :])
    return out.reshape(B, T, W)


def all_targets_exact(stack: AttentionStack) -> bool:
    """Whether :func:`bidirectional_all_targets` computes this stack exactly: one layer of any
    kind, or two softmax layers whose first has no LayerNorm and no feed-forward block (so that
    the second layer's keys and values are affine in the first layer's attention outputs)."""
    layers = list(stack.layers)
    if len(layers) == 1:
        return True
    if len(layers) != 2:
        return False
    first = layers[0]
    return (first.attention == "softmax" and layers[1].attention == "softmax"
            and first.norm1 is None and first.ffn is None)


def _exclusive_sums(E: torch.Tensor, dim: int) -> torch.Tensor:
    """out[..., t, ...] = sum over k != t of E[..., k, ...] along `dim`, as a prefix plus a suffix
    sum (no subtraction, so no cancellation when one term dominates)."""
    z = torch.zeros_like(E.narrow(dim, 0, 1))
    pre = torch.cat([z, E.narrow(dim, 0, E.shape[dim] - 1).cumsum(dim)], dim)
    rev = E.flip(dim)
    suf = torch.cat([z, rev.narrow(dim, 0, E.shape[dim] - 1).cumsum(dim)], dim).flip(dim)
    return pre + suf


def _head_maps(layer) -> torch.Tensor:
    """(H, width, vdim): the map of each head's attention output into the layer's output (the
    head's block of W^O, or the identity when the heads are summed without a projection)."""
    H, e = layer.heads, layer.W_V.shape[1]
    if layer.out_proj:
        return layer.W_O.reshape(layer.width, H, e).permute(1, 0, 2)
    return torch.eye(layer.width, dtype=layer.W_V.dtype, device=layer.W_V.device).expand(H, -1, -1)


def bidirectional_all_targets(stack: AttentionStack, cols: torch.Tensor, masked_cols: torch.Tensor,
                              valid: torch.Tensor) -> torch.Tensor:
    """Column t of copy t after a bidirectional stack, for every position t at once: (B, I, W).

    Exactly the per-target masking of Sec 2.1 (Remark 4), without the I masked copies.  In copy t
    every column j != t of layer 1 attends to the unmasked columns k != t and to the [MASK] column
    at t ('leave-one-out' attention: the unmasked terms k != t plus the masked term); the target
    column t is the [MASK] query stream.  Layer 2 needs only column t, and its keys and values are
    affine in layer 1's outputs, so W^K_2 W^O_1 and W^V_2 W^O_1 are applied to the per-head sums
    instead of forming the layer-1 columns of every copy: matrix products of I x I x I and
    I x I x head_dim per pair of heads instead of O(I^3 width + I^2 width^2) per sequence.  The
    sums over k != t are taken by zeroing the diagonal before a product, never by subtracting
    the t term from a full sum (no cancellation when one term dominates).  For stacks accepted by
    :func:`all_targets_exact` (the authors' 2-layer standard configuration without LayerNorm).
    Note that 'masked-diagonal' two-stream attention is a different model for two layers
    (layer-1 column j would see x_t)."""
    if stack.direction != "bidirectional" or not all_targets_exact(stack):
        raise ValueError("bidirectional_all_targets needs a bidirectional stack accepted by all_targets_exact")
    B, I, W = cols.shape
    eye = torch.eye(I, dtype=torch.bool, device=cols.device)
    L1 = stack.layers[0]
    # the target column of layer 1: [MASK] at t attends to the unmasked k != t and to itself
    G = L1.cross(masked_cols, cols, valid[:, None, :] & ~eye, self_key=True)          # (B, I, W)
    if len(stack.layers) == 1:
        return G
    L2 = stack.layers[1]
    b = (lambda name: getattr(L1, name) if L1.use_bias else None)
    (Wo, bo), (Wc, bc) = ((L1.W_Q, b("b_Q")), (L1.W_K, b("b_K"))) if L1.orientation == "row"         else ((L1.W_K, b("b_K")), (L1.W_Q, b("b_Q")))
    a = L1._proj(cols, Wo, bo)                                          # (B, H, I_j, d) outputs j
    c = L1._proj(cols, Wc, bc)                                          # (B, H, I_k, d) contexts k
    cm = L1._proj(masked_cols, Wc, bc)                                  # (B, H, I_t, d) [MASK] at t
    v = L1._proj(cols, L1.W_V, b("b_V"))                                # (B, H, I_k, e)
    vm = L1._proj(masked_cols, L1.W_V, b("b_V"))                        # (B, H, I_t, e)
    s = (a @ c.transpose(-1, -2)) * L1.scale                            # (B, H, j, k)
    sm = (a @ cm.transpose(-1, -2)) * L1.scale                          # (B, H, j, t)
    vk = valid[:, None, None, :]
    neg = torch.finfo(s.dtype).min
    # Copy t's row j holds the terms s[j, k], k != t, and sm[j, t]: its softmax is shifted by their own largest,
    # ref[j, t] = max(max_{k != t} s[j, k], sm[j, t]).  (One shift per row, taken over every k and every t,
    # let all of copy t's terms underflow where the excluded s[j, t] or another copy's sm[j, t'] exceeded them by
    # ~745 (float64) or ~100 (float32): the column came out 0, the log-likelihood off, and NaN for a padded row.)
    # The largest over k != t is the row's largest, or its second where t is the row's argmax: two versions of
    # the unmasked terms, E1 shifted by the largest (for t != argmax) and E2 by the second with the argmax column
    # left out (for t = argmax), each scaled to ref[j, t] by f = exp(shift - ref) <= 1.
    sv = s.detach().masked_fill(~vk, neg)
    top = sv.topk(min(2, I), dim=-1)
    top1, arg = top.values[..., :1], top.indices[..., :1]
    top2 = top.values[..., 1:2] if I > 1 else torch.full_like(top1, neg)
    kk = torch.arange(I, device=cols.device)
    is_arg = kk == arg                                                  # (B, H, j, t or k): t = argmax_k s[j, k]
    E1 = torch.exp((s - top1).masked_fill(~vk, -math.inf))             # unmasked terms (j, k), for t != argmax
    E2 = torch.exp((s - top2).masked_fill(~vk | is_arg, -math.inf))    # ... for t = argmax (k = argmax left out)
    excl = torch.where(is_arg, top2, top1)                              # max_{k != t} s[j, k], (B, H, j, t)
    ref = torch.maximum(excl, sm.detach().masked_fill(~vk, neg))
    f = torch.exp(excl - ref)                                           # (B, H, j, t), <= 1
    Em = torch.exp((sm - ref).masked_fill(~vk, -math.inf))              # [MASK] term (j, t)
    den = f * torch.where(is_arg, _exclusive_sums(E2, -1), _exclusive_sums(E1, -1)) + Em
    den = den + (den == 0)                     # a padded column j of a padded copy t: unused
    F1, F2 = f * ~is_arg, f * is_arg                                    # the weight of E1 and of E2 at (j, t)
    # head h's output at column j != t of copy t is A[j, t] = (sum_{k != t} E[j, k] v_k
    # + Em[j, t] vm_t) / den[j, t]; it is only needed in contractions, done below without forming it
    offd = ~eye
    P = _head_maps(L1)                                                  # (H, W, e)
    bO = L1.b_O if (L1.out_proj and L1.b_O is not None) else None
    r1 = 1.0 if L1.residual else 0.0
    # layer 2, target column t: its query, and the affine maps of its keys/values
    b2 = (lambda name: getattr(L2, name) if L2.use_bias else None)
    (Wo2, bo2), (Wc2, bc2) = ((L2.W_Q, b2("b_Q")), (L2.W_K, b2("b_K"))) if L2.orientation == "row"         else ((L2.W_K, b2("b_K")), (L2.W_Q, b2("b_Q")))
    q2 = L2._proj(G, Wo2, bo2)                                          # (B, G2, t, d2)
    rk = q2 @ Wc2                                                       # (B, G2, t, W): W_c2^T q
    off = r1 * (rk @ cols[:, None].transpose(-1, -2))                          # (B, G2, t, j): r.x_j
    rho = torch.einsum("bgtw,hwe->bghte", rk, P)                        # (B, G2, H, t, e)
    R = (rho @ v[:, None].transpose(-1, -2)) * offd                     # rho_t . v_k, k != t
    Rm = (rho * vm[:, None]).sum(-1)                                    # rho_t . vm_t
    num = (F1[:, None] * (E1[:, None] @ R.transpose(-1, -2)) + F2[:, None] * (E2[:, None] @ R.transpose(-1, -2))
           + Em[:, None] * Rm[..., None, :])                            # (B, G2, H, j, t)
    off = off + (num / den[:, None]).sum(2).transpose(-1, -2)           # sum_h rho_t . A[j, t]
    if bO is not None:
        off = off + (rk @ bO)[..., None]
    if bc2 is not None:
        cb = (q2 * bc2[None, :, None, :]).sum(-1, keepdim=True)        # q . b_c2
        off = off + cb
    diag = (q2 * L2._proj(G, Wc2, bc2)).sum(-1)                         # (B, G2, t): own key
    s2 = torch.where(eye, diag[..., None], off) * L2.scale
    w2 = L2._normalize(s2, valid[:, None, None, :])                     # (B, G2, t, j)
    w2o = w2.masked_fill(eye, 0.0)
    wd = w2.diagonal(dim1=-2, dim2=-1)                                  # (B, G2, t)
    # sum_j w2[t, j] * (layer-1 column j of copy t), then W^V_2
    Zs = r1 * (w2o @ cols[:, None]) + wd[..., None] * G[:, None]        # (B, G2, t, W)
    U = w2o[:, :, None] / den.transpose(-1, -2)[:, None]                # (B, G2, H, t, j)
    Qs = (((U * F1.transpose(-1, -2)[:, None]) @ E1[:, None] + (U * F2.transpose(-1, -2)[:, None]) @ E2[:, None])
          * offd) @ v[:, None] \
        + (U * Em.transpose(-1, -2)[:, None]).sum(-1, keepdim=True) * vm[:, None]   # sum_j w2o A[j, t]
    Zs = Zs + torch.einsum("bghte,hwe->bgtw", Qs, P)
    if bO is not None:
        Zs = Zs + w2o.sum(-1, keepdim=True) * bO
    o = Zs @ L2.W_V.transpose(-1, -2)                                   # (B, G2, t, e2)
    if L2.use_bias:
        o = o + w2.sum(-1, keepdim=True) * L2.b_V[None, :, None, :]
    return L2._post(G, L2._heads_out(o, G))


_INPUT_CHECKS = [True]


@contextlib.contextmanager
def input_checks(enabled: bool):
    """Turn the models' value checks of their inputs (ids in range, target positions in range) on
    or off inside the block.  They read tensor values, a host synchronisation per call on a GPU;
    a training loop checks every input once (its first epoch) and then runs without them."""
    prev = _INPUT_CHECKS[0]
    _INPUT_CHECKS[0] = bool(enabled)
    try:
        yield
    finally:
        _INPUT_CHECKS[0] = prev


def _prepare(x_like: torch.Tensor, valid, targets):
    if x_like.ndim < 2 or x_like.shape[1] == 0:
        raise ValueError(f"the sequences must have shape (B, I) with I >= 1; got {tuple(x_like.shape)}")
    B, I = x_like.shape[:2]
    dev = x_like.device
    if valid is None:
        valid = torch.ones(B, I, dtype=torch.bool, device=dev)
    else:
        valid = torch.as_tensor(valid, dtype=torch.bool, device=dev)
        if valid.shape != (B, I):
            raise ValueError(f"valid must have shape (B, I) = {(B, I)}; got {tuple(valid.shape)}")
    if targets is None:
        targets = all_targets(B, I, dev)
    else:
        targets = torch.as_tensor(targets, device=dev)
        if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
            raise ValueError(f"targets must be integer positions in [0, {I - 1}]; got dtype {targets.dtype}")
        targets = targets.long()
        if targets.ndim != 2 or targets.shape[0] != B:
            raise ValueError(f"targets must have shape (B, T) with B = {B}; got {tuple(targets.shape)}")
        if _INPUT_CHECKS[0] and targets.numel() and (targets.min() < 0 or targets.max() >= I):
            raise ValueError(f"targets must hold positions in [0, {I - 1}]")
    target_valid = valid.gather(1, targets)
    return valid, targets, target_valid


def shared_map(f, tau, B: int, I: int, attr_dim: int, dtype=None) -> torch.Tensor:
    """f(tau) of shape (B, I, ·) for attributes tau of shape (B, I, attr_dim), or of shape (I, attr_dim):
    the same attributes for every sequence of the batch (sites at fixed coordinates, Sec 3.2).  A
    shared tau is mapped once per position and broadcast over the batch: the same function, B times
    fewer evaluations."""
    if tau is None:
        raise ValueError(f"tau must have shape (B, I, attr_dim) = {(B, I, attr_dim)} or (I, attr_dim) = "
                         f"{(I, attr_dim)}; got None")
    tau = torch.as_tensor(tau)
    if dtype is not None:
        tau = tau.to(dtype)
    if tuple(tau.shape) == (I, attr_dim):
        out = f(tau)
        return out.expand(B, *out.shape)
    if tau.ndim != 3 or tuple(tau.shape[:2]) != (B, I) or tau.shape[-1] != attr_dim:
        raise ValueError(f"tau must have shape (B, I, attr_dim) = {(B, I, attr_dim)} or (I, attr_dim) = "
                         f"{(I, attr_dim)}; got {tuple(tau.shape)}")
    return f(tau)


def _check_ids(x, n, name):
    if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"{name} must be an integer tensor of ids in [0, {n - 1}]")
    if _INPUT_CHECKS[0] and x.numel() and (x.min() < 0 or x.max() >= n):
        raise ValueError(f"{name} must hold ids in [0, {n - 1}]; got range [{int(x.min())}, {int(x.max())}]")


def _masked_mean(v, m):
    m = m.to(v.dtype)
    return (v * m).sum() / m.sum().clamp_min(1)


# ------------------------------------------------------------------------------------------------
# EFA, categorical part (Sec 2.1)
# ------------------------------------------------------------------------------------------------
class EFACategorical(nn.Module):
    """p(x_i | x_{1:i-1}) (unidirectional) or p(x_i | x_{-i}) (bidirectional) of Sec 2.1.

    Parameters (paper names; rows here are the paper's columns):
    ``beta`` (D+1, K) context embeddings, row D = beta_[MASK]; ``P`` (max_len, K) positional
    embeddings; ``stack`` the attention layers (W^Q, W^K, W^V per layer and head); ``delta`` (D, K)
    center embeddings.  Logits of target i: delta X'_ii (B, T, D).
    """

    def __init__(self, n_items: int, dim: int = 32, max_len: int = 64, *, heads: int = 1,
                 layers: int = 1, attention: str = "softmax", direction: str = "bidirectional",
                 convention: str = "paper", positional: bool = True, **layer_kw):
        super().__init__()
        self.n_items = _posint(n_items, "n_items", 2)
        self.dim = _posint(dim, "dim")
        self.max_len = _posint(max_len, "max_len")
        self.direction = _choice(direction, DIRECTIONS, "direction")
        self.MASK = self.n_items
        self.beta = nn.Parameter(torch.empty(self.n_items + 1, self.dim))
        self.P = nn.Parameter(torch.zeros(self.max_len, self.dim)) if positional else None
        self.stack = AttentionStack(self.dim, layers, heads, attention, convention, direction, **layer_kw)
        self.delta = nn.Parameter(torch.empty(self.n_items, self.dim))
        nn.init.uniform_(self.beta, -0.05, 0.05)       # Keras Embedding default
        if self.P is not None:
            nn.init.uniform_(self.P, -0.05, 0.05)
        bound = math.sqrt(6.0 / (self.n_items + self.dim))
        nn.init.uniform_(self.delta, -bound, bound)

    def _columns(self, x):
        B, I = x.shape
        if I > self.max_len:
            raise ValueError(f"sequence length I = {I} exceeds max_len = {self.max_len}")
        cols = self.beta[x]
        masked = self.beta[self.MASK].expand(B, I, self.dim)
        if self.P is not None:
            cols = cols + self.P[:I]
            masked = masked + self.P[:I]
        return cols, masked

    def context(self, x, valid=None, targets=None, return_weights=False, method="fast"):
        """H(x)_i = X'_ii, (B, T, K): the context representation of Def 1.
        ``method``: 'fast' or 'replicate' (see :func:`per_target_outputs`; equal results)."""
        x = torch.as_tensor(x)
        if x.ndim != 2:
            raise ValueError(f"x must have shape (B, I); got {tuple(x.shape)}")
        valid, targets, _ = _prepare(x, valid, targets)
        _check_ids(torch.where(valid, x, torch.zeros_like(x)), self.n_items, "x")
        x = torch.where(valid, x, torch.zeros_like(x))
        cols, masked = self._columns(x)
        if not return_weights:
            return per_target_outputs(self.stack, cols, masked, valid, targets, method)
        Z = replicate_targets(cols, masked, targets)                    # (B, T, I, K)
        B, T, I, K = Z.shape
        v = valid[:, None, :].expand(B, T, I).reshape(B * T, I)
        out = self.stack(Z.reshape(B * T, I, K), v, return_weights)
        if return_weights:
            out, ws = out
            ws = [w.reshape(B, T, *w.shape[1:]) for w in ws]
        H = gather_targets(out.reshape(B, T, I, K), targets)
        return (H, ws) if return_weights else H

    def forward(self, x, valid=None, targets=None):
        """Logits delta^T X'_ii of the targets, (B, T, D) (the natural parameters)."""
        return self.context(x, valid, targets) @ self.delta.T

    natural_params = forward

    def attention_weights(self, x, valid=None, targets=None):
        """Per layer, (B, T, heads, I, I): the weights in copy t (target targets[b, t] masked)."""
        return self.context(x, valid, targets, return_weights=True)[1]

    def loglik(self, x, valid=None, targets=None):
        """(B, T) log p(x_t | context), 0 at padded targets."""
        x = torch.as_tensor(x)
        valid, targets, tv = _prepare(x, valid, targets)
        logits = self.forward(x, valid, targets)
        xt = torch.where(tv, x.gather(1, targets), torch.zeros_like(targets))
        lp = logits.gather(-1, xt[..., None]).squeeze(-1) - torch.logsumexp(logits, -1)
        return lp * tv.to(lp.dtype)

    def nll(self, x, valid=None, targets=None):
        """Mean negative log-likelihood (nats) over the valid targets (minus Eq. (3)'s x-term)."""
        x = torch.as_tensor(x)
        valid, targets, tv = _prepare(x, valid, targets)
        return -_masked_mean(self.loglik(x, valid, targets), tv)

    loss = nll


# ------------------------------------------------------------------------------------------------
# EFA, exponential-family value part (Sec 2.2)
# ------------------------------------------------------------------------------------------------
def _mlp(d_in, hidden, d_out, name="hidden"):
    h = _posint(hidden, name)
    return nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out))


class EFAValue(nn.Module):
    """y_i | x_{1:i}, y_{1:i-1} (unidirectional) or y_i | x, y_{-i} (bidirectional) ~ ExpFam(kappa_i).

    Columns of Y_i (Sec 2.2, Sec 3.2): [beta_bar_{x_j}; delta_bar_{x_j}; g(tau_j); lambda_1(y_j)]
    + p_bar_j, with lambda_1([MASK]) in place of lambda_1(y_i) at the target (x_i stays visible).

    family           an :class:`attnlab.numerics.expfam.ExpFamily` or its name ('gaussian', 'poisson_v1',
                     'poisson_v2', 'bernoulli', 'categorical'; give sigma2 / n_classes in family_kw).
    n_items          D (None or 0: no item rows, e.g. Sec 3.2).
    item_embeddings  'both' (beta_bar and delta_bar), 'center' (beta_bar only; Remark 7),
                     'context' (delta_bar only) or 'none'.
    attr_dim, attr_map
                     attributes tau (Sec 3.2): g = ``attr_map`` (a module tau -> dim), or 'mlp'
                     (Dense(attr_hidden, ReLU) -> Dense(dim)) or 'linear'.
    value_embedding  lambda_1: 'identity' (K' = 1, lambda_1([MASK]) = 0; Remark 6), 'linear' or
                     'mlp' (Dense(value_hidden, ReLU) -> Dense(K')) with a learned [MASK] vector, or
                     'lookup' (a table over the integers trunc(y) + value_offset in
                     [0, n_values), plus a [MASK] row; Remark 6 / the authors' code).
    unembedding      lambda_2: 'linear' (Dense, bias ``unembed_bias``), 'mlp'
                     (Dense(unembed_hidden, ReLU) -> Dense) or 'last' (unembed_scale times the last
                     n_out entries; Remark 6, Props 2 and 3 with unembed_scale = width).
    """

    def __init__(self, family="gaussian", n_items: Optional[int] = None, dim: int = 32,
                 value_dim: int = 32, max_len: int = 64, *, family_kw: Optional[dict] = None,
                 item_embeddings: str = "center", attr_dim: Optional[int] = None, attr_map="mlp",
                 attr_hidden: int = 128, value_embedding: str = "mlp", value_hidden: int = 32,
                 n_values: Optional[int] = None, value_offset: int = 0, unembedding: str = "mlp",
                 unembed_hidden: int = 32, unembed_bias: bool = True, unembed_scale: float = 1.0,
                 heads: int = 1, layers: int = 1, attention: str = "softmax",
                 direction: str = "bidirectional", convention: str = "paper",
                 positional: bool = True, **layer_kw):
        super().__init__()
        self.family = expfam.family(family, **(family_kw or {}))
        self.dim = _posint(dim, "dim")
        self.max_len = _posint(max_len, "max_len")
        self.direction = _choice(direction, DIRECTIONS, "direction")
        self.n_items = 0 if n_items is None else _posint(n_items, "n_items", 0)
        self.item_embeddings = _choice(item_embeddings, ("both", "center", "context", "none"),
                                       "item_embeddings")
        if self.n_items == 0:
            self.item_embeddings = "none"
        self.beta_bar = self.delta_bar = None
        if self.item_embeddings in ("both", "center"):
            self.beta_bar = nn.Parameter(torch.empty(self.n_items, self.dim))
            nn.init.uniform_(self.beta_bar, -0.05, 0.05)
        if self.item_embeddings in ("both", "context"):
            self.delta_bar = nn.Parameter(torch.empty(self.n_items, self.dim))
            nn.init.uniform_(self.delta_bar, -0.05, 0.05)
        self.attr_dim = None if attr_dim is None else _posint(attr_dim, "attr_dim")
        self.g = None
        if self.attr_dim:
            if isinstance(attr_map, nn.Module):
                self.g = attr_map
            elif attr_map == "mlp":
                self.g = _mlp(self.attr_dim, attr_hidden, self.dim, "attr_hidden")
            elif attr_map == "linear":
                self.g = nn.Linear(self.attr_dim, self.dim)
            else:
                raise ValueError(f"attr_map must be an nn.Module, 'mlp' or 'linear'; got {attr_map!r}")
        self.value_embedding = _choice(value_embedding, ("identity", "linear", "mlp", "lookup"),
                                       "value_embedding")
        if self.value_embedding == "identity":
            if self.family.n_out != 1:
                raise ValueError("value_embedding='identity' needs a scalar family; use 'lookup' "
                                 "for a categorical value")
            value_dim = 1
        self.value_dim = _posint(value_dim, "value_dim")
        self.lambda1 = None
        self.value_mask = None
        if self.value_embedding == "linear":
            self.lambda1 = nn.Linear(1, self.value_dim)
        elif self.value_embedding == "mlp":
            self.lambda1 = _mlp(1, value_hidden, self.value_dim, "value_hidden")
        elif self.value_embedding == "lookup":
            if n_values is None:
                raise ValueError("n_values (size of the value table) is needed for value_embedding='lookup'")
            self.n_values = _posint(n_values, "n_values")
            self.value_offset = int(value_offset)
            self.lambda1 = nn.Embedding(self.n_values, self.value_dim)
            nn.init.uniform_(self.lambda1.weight, -0.05, 0.05)
        if self.value_embedding != "identity":
            self.value_mask = nn.Parameter(torch.empty(self.value_dim).uniform_(-0.05, 0.05))
        n_item_rows = {"both": 2, "center": 1, "context": 1, "none": 0}[self.item_embeddings]
        self.width = self.dim * n_item_rows + (self.dim if self.attr_dim else 0) + self.value_dim
        self.P = nn.Parameter(torch.empty(self.max_len, self.width).uniform_(-0.05, 0.05)) \
            if positional else None
        self.stack = AttentionStack(self.width, layers, heads, attention, convention, direction,
                                    **layer_kw)
        n_out = self.family.n_out
        self.unembedding = _choice(unembedding, ("linear", "mlp", "last"), "unembedding")
        self.unembed_scale = float(unembed_scale)
        if self.unembedding == "linear":
            self.lambda2 = nn.Linear(self.width, n_out, bias=unembed_bias)
        elif self.unembedding == "mlp":
            self.lambda2 = _mlp(self.width, unembed_hidden, n_out, "unembed_hidden")
        else:
            if n_out > self.width:
                raise ValueError(f"unembedding='last' needs width >= {n_out}")
            self.lambda2 = None

    # -- pieces ------------------------------------------------------------------------------------
    def embed_values(self, y):
        """lambda_1(y), (B, I, K')."""
        if self.value_embedding == "identity":
            return y[..., None].to(self._dtype())
        if self.value_embedding == "lookup":
            idx = torch.trunc(y.double()).long() + self.value_offset if y.is_floating_point() \
                else y.long() + self.value_offset
            if idx.numel() and (idx.min() < 0 or idx.max() >= self.n_values):
                raise ValueError(f"y: trunc(y) + value_offset must lie in [0, {self.n_values - 1}]")
            return self.lambda1(idx)
        return self.lambda1(y[..., None].to(self._dtype()))

    def _dtype(self):
        return self.stack.layers[0].W_Q.dtype

    def _columns(self, y, x, tau, valid):
        B, I = y.shape[:2]
        if I > self.max_len:
            raise ValueError(f"sequence length I = {I} exceeds max_len = {self.max_len}")
        blocks = []
        if self.item_embeddings != "none":
            if x is None:
                raise ValueError("x (item ids, shape (B, I)) is required: this model has item embeddings")
            x = torch.as_tensor(x)
            if x.shape != (B, I):
                raise ValueError(f"x must have shape {(B, I)}; got {tuple(x.shape)}")
            x = torch.where(valid, x, torch.zeros_like(x))
            _check_ids(x, self.n_items, "x")
            if self.beta_bar is not None:
                blocks.append(self.beta_bar[x])
            if self.delta_bar is not None:
                blocks.append(self.delta_bar[x])
        if self.attr_dim:
            blocks.append(shared_map(self.g, tau, B, I, self.attr_dim, self._dtype()))
        yv = torch.where(valid, y, torch.ones_like(y) if self.family.name == "poisson_v1"
                         else torch.zeros_like(y))
        lam = self.embed_values(yv)
        mask_vec = torch.zeros(self.value_dim, dtype=lam.dtype, device=lam.device) \
            if self.value_mask is None else self.value_mask
        cols = torch.cat(blocks + [lam], -1)
        masked = torch.cat(blocks + [mask_vec.expand(B, I, self.value_dim)], -1)
        if self.P is not None:
            cols = cols + self.P[:I]
            masked = masked + self.P[:I]
        return cols, masked

    def representation(self, y, x=None, tau=None, valid=None, targets=None, return_weights=False,
                       method="fast"):
        """Y'_ii, (B, T, width): the representation K_theta2 of Assumption 1.
        ``method``: 'fast' or 'replicate' (see :func:`per_target_outputs`; equal results)."""
        y = torch.as_tensor(y)
        if y.ndim != 2:
            raise ValueError(f"y must have shape (B, I); got {tuple(y.shape)}")
        valid, targets, _ = _prepare(y, valid, targets)
        cols, masked = self._columns(y, x, tau, valid)
        if not return_weights:
            return per_target_outputs(self.stack, cols, masked, valid, targets, method)
        Z = replicate_targets(cols, masked, targets)
        B, T, I, W = Z.shape
        v = valid[:, None, :].expand(B, T, I).reshape(B * T, I)
        out = self.stack(Z.reshape(B * T, I, W), v, return_weights)
        if return_weights:
            out, ws = out
            ws = [w.reshape(B, T, *w.shape[1:]) for w in ws]
        R = gather_targets(out.reshape(B, T, I, W), targets)
        return (R, ws) if return_weights else R

    def unembed(self, R):
        """lambda_2: (B, T, width) -> raw outputs (B, T) or (B, T, C)."""
        n_out = self.family.n_out
        out = self.unembed_scale * R[..., -n_out:] if self.lambda2 is None else self.lambda2(R)
        return out.squeeze(-1) if n_out == 1 else out

    def forward(self, y, x=None, tau=None, valid=None, targets=None):
        """kappa_i = lambda_2(Y'_ii): the family's raw outputs for the targets."""
        return self.unembed(self.representation(y, x, tau, valid, targets))

    natural_params = forward

    def natural(self, y, x=None, tau=None, valid=None, targets=None):
        """Canonical natural parameters family.natural(kappa)."""
        return self.family.natural(self.forward(y, x, tau, valid, targets))

    def attention_weights(self, y, x=None, tau=None, valid=None, targets=None):
        return self.representation(y, x, tau, valid, targets, return_weights=True)[1]

    def _targets_y(self, y, targets, tv):
        yt = torch.as_tensor(y).gather(1, targets)
        fill = 1 if self.family.name == "poisson_v1" else 0
        return torch.where(tv, yt, torch.full_like(yt, fill))

    def loglik(self, y, x=None, tau=None, valid=None, targets=None):
        """(B, T) log p(y_t | context) (Eq. (3)'s y-term plus log h), 0 at padded targets."""
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, x, tau, valid, targets)
        yt = self._targets_y(y, targets, tv)
        self.family.validate_y(yt, "y")
        lp = self.family._log_prob(out, yt)          # (yt validated above)
        return lp * tv.to(lp.dtype)

    def nll(self, y, x=None, tau=None, valid=None, targets=None):
        """Mean negative log-likelihood over valid targets."""
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        return -_masked_mean(self.loglik(y, x, tau, valid, targets), tv)

    loss = nll

    def code_loss(self, y, x=None, tau=None, valid=None, targets=None):
        """Mean over valid targets of the authors' code loss (MSE; Poisson NLL without factorials)."""
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, x, tau, valid, targets)
        return _masked_mean(self.family.code_loss(out, self._targets_y(y, targets, tv)), tv)

    def predict_mean(self, y, x=None, tau=None, valid=None, targets=None):
        """E[y_t | context], (B, T) (or class probabilities (B, T, C))."""
        return self.family.mean(self.forward(y, x, tau, valid, targets))


class EFA(nn.Module):
    """The joint model of Eq. (2): log p(x, y) = sum_i log p(x_i | ...) + log p(y_i | ...).
    theta_1 (the categorical part) and theta_2 (the value part) are disjoint (Sec 5.1.1)."""

    def __init__(self, x_model: EFACategorical, y_model: EFAValue):
        super().__init__()
        if x_model.direction != y_model.direction:
            raise ValueError("x_model and y_model must have the same direction")
        self.x_model, self.y_model = x_model, y_model

    def loglik(self, x, y, tau=None, valid=None, targets=None):
        """(B, T): log p(x_t | ctx) + log p(y_t | ctx)."""
        return self.x_model.loglik(x, valid, targets) + self.y_model.loglik(y, x, tau, valid, targets)

    def forward(self, x, y, tau=None, valid=None, targets=None):
        """(logits (B, T, D), kappa (B, T))."""
        return self.x_model(x, valid, targets), self.y_model(y, x, tau, valid, targets)

    def nll(self, x, y, tau=None, valid=None, targets=None):
        x = torch.as_tensor(x)
        valid, targets, tv = _prepare(x, valid, targets)
        return -_masked_mean(self.loglik(x, y, tau, valid, targets), tv)

    loss = nll


# ------------------------------------------------------------------------------------------------
# latent factor ("FM") models (Sec 4, Props 1-3)
# ------------------------------------------------------------------------------------------------
def context_matrix(valid: torch.Tensor, targets: torch.Tensor, direction: str) -> torch.Tensor:
    """(B, T, I) 0/1: j is in the context of target t (j != t, valid; j < t when unidirectional)."""
    B, I = valid.shape
    j = torch.arange(I, device=valid.device)
    t = targets[..., None]
    c = valid[:, None, :] & (j != t)
    if direction == "unidirectional":
        c = c & (j < t)
    return c


def _fm_norm(valid, targets, ctx, direction, normalization, kind):
    """The factor in front of the context sum (Sec 4; the code's choice: docs/instances.md)."""
    n = valid.sum(1, keepdim=True).to(torch.float64)     # I (valid length); cast by the caller
    paper = 1.0 / (n - 1).clamp_min(1)                                     # 1/(I-1)
    if normalization == "paper":
        return paper.expand(targets.shape)
    if kind == "categorical":       # code: a plain sum (bidir); sum + alpha_[MASK] (unidir)
        return torch.ones(targets.shape, dtype=paper.dtype, device=valid.device)
    if direction == "bidirectional":  # code: the mean over the I-1 other items
        return paper.expand(targets.shape)
    return 1.0 / ctx.sum(-1).to(paper.dtype).clamp_min(1)                 # code: 1/max(i-1, 1)


class FMCategorical(nn.Module):
    """Prop 1: x_i | context ~ Categorical(softmax(c rho^T sum_{j in ctx} alpha_{x_j})).

    normalization 'paper': c = 1/(I-1) in both directions (as printed); 'code': c = 1, and the
    unidirectional context adds alpha_[MASK] (the authors' code).  ``rho`` (D, K) center,
    ``alpha`` (D+1, K) context embeddings (row D = alpha_[MASK])."""

    def __init__(self, n_items: int, dim: int = 32, *, direction: str = "bidirectional",
                 normalization: str = "paper"):
        super().__init__()
        self.n_items = _posint(n_items, "n_items", 2)
        self.dim = _posint(dim, "dim")
        self.direction = _choice(direction, DIRECTIONS, "direction")
        self.normalization = _choice(normalization, NORMALIZATIONS, "normalization")
        self.rho = nn.Parameter(torch.empty(self.n_items, self.dim))
        self.alpha = nn.Parameter(torch.empty(self.n_items + 1, self.dim).uniform_(-0.05, 0.05))
        bound = math.sqrt(6.0 / (self.n_items + self.dim))
        nn.init.uniform_(self.rho, -bound, bound)

    def context(self, x, valid=None, targets=None):
        x = torch.as_tensor(x)
        valid, targets, _ = _prepare(x, valid, targets)
        x = torch.where(valid, x, torch.zeros_like(x))
        _check_ids(x, self.n_items, "x")
        ctx = context_matrix(valid, targets, self.direction).to(self.alpha.dtype)
        s = ctx @ self.alpha[x]                                                # (B, T, K)
        c = _fm_norm(valid, targets, ctx, self.direction, self.normalization, "categorical")
        s = s * c.to(s.dtype)[..., None]
        if self.normalization == "code" and self.direction == "unidirectional":
            s = s + self.alpha[self.n_items]
        return s

    def forward(self, x, valid=None, targets=None):
        """Logits (B, T, D)."""
        return self.context(x, valid, targets) @ self.rho.T

    natural_params = forward
    loglik = EFACategorical.loglik
    nll = EFACategorical.nll
    loss = nll


class FMValue(nn.Module):
    """Props 3 / the synthetic FM: kappa_i = c rho_{x_i}^T sum_{j in ctx} alpha_{x_j} y_j.

    family: 'gaussian' (synthetic; kappa is the mean), 'poisson_v1' / 'poisson_v2' (Prop 3), or
    'bernoulli'.  normalization 'paper': c = 1/(I-1) in both directions; 'code': 1/(I-1)
    bidirectional (mean over the others), 1/max(i-1, 1) unidirectional (mean over the previous
    items; the first position predicts kappa = 0).  rho and alpha start as Keras embeddings do,
    U(-0.05, 0.05)."""

    def __init__(self, family="gaussian", n_items: int = 5, dim: int = 32, *,
                 family_kw: Optional[dict] = None, direction: str = "bidirectional",
                 normalization: str = "paper"):
        super().__init__()
        self.family = expfam.family(family, **(family_kw or {}))
        if self.family.n_out != 1:
            raise ValueError("FMValue needs a scalar family (gaussian, poisson_v1, poisson_v2, bernoulli)")
        self.n_items = _posint(n_items, "n_items", 1)
        self.dim = _posint(dim, "dim")
        self.direction = _choice(direction, DIRECTIONS, "direction")
        self.normalization = _choice(normalization, NORMALIZATIONS, "normalization")
        self.rho = nn.Parameter(torch.empty(self.n_items, self.dim).uniform_(-0.05, 0.05))
        self.alpha = nn.Parameter(torch.empty(self.n_items, self.dim).uniform_(-0.05, 0.05))

    def forward(self, y, x, valid=None, targets=None):
        """kappa (B, T)."""
        y, x = torch.as_tensor(y), torch.as_tensor(x)
        if y.shape != x.shape:         # (I,) was broadcast over the batch without a word
            raise ValueError(f"y must have the shape of x, (B, I) = {tuple(x.shape)}; got {tuple(y.shape)}")
        valid, targets, _ = _prepare(x, valid, targets)
        x = torch.where(valid, x, torch.zeros_like(x))
        _check_ids(x, self.n_items, "x")
        yv = torch.where(valid, y, torch.zeros_like(y)).to(self.alpha.dtype)
        ctx = context_matrix(valid, targets, self.direction).to(self.alpha.dtype)
        s = ctx @ (self.alpha[x] * yv[..., None])                               # (B, T, K)
        c = _fm_norm(valid, targets, ctx, self.direction, self.normalization, "value")
        xt = x.gather(1, targets)
        return (self.rho[xt] * s).sum(-1) * c.to(s.dtype)

    natural_params = forward

    def _targets_y(self, y, targets, tv):
        return EFAValue._targets_y(self, y, targets, tv)

    def loglik(self, y, x, valid=None, targets=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, x, valid, targets)
        yt = self._targets_y(y, targets, tv)
        self.family.validate_y(yt, "y")
        lp = self.family._log_prob(out, yt)          # (yt validated above)
        return lp * tv.to(lp.dtype)

    def nll(self, y, x, valid=None, targets=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        return -_masked_mean(self.loglik(y, x, valid, targets), tv)

    loss = nll

    def code_loss(self, y, x, valid=None, targets=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, x, valid, targets)
        return _masked_mean(self.family.code_loss(out, self._targets_y(y, targets, tv)), tv)

    def predict_mean(self, y, x, valid=None, targets=None):
        return self.family.mean(self.forward(y, x, valid, targets))


def _check_neighbors(neighbors, targets, I: int) -> torch.Tensor:
    """neighbors as a (B, T, k) long tensor: integer positions in [0, I - 1], one row per target ((T, k) is
    shared by the batch), and never the target itself (its own y would be in its context: a leak).  A list
    with fewer rows than targets gave the others an empty context; a target among its neighbours saw its y."""
    B, T = targets.shape
    nb = torch.as_tensor(neighbors, device=targets.device)
    if nb.is_floating_point() or nb.is_complex() or nb.dtype == torch.bool:
        raise ValueError(f"neighbors must be integer positions in [0, {I - 1}]; got dtype {nb.dtype}")
    nb = nb.long()
    if nb.ndim == 2:
        nb = nb.expand(B, *nb.shape)
    if nb.ndim != 3 or tuple(nb.shape[:2]) != (B, T) or nb.shape[2] < 1:
        raise ValueError(f"neighbors must have shape (B, T, k) = ({B}, {T}, k) or (T, k) = ({T}, k) with k >= 1; "
                         f"got {tuple(torch.as_tensor(neighbors).shape)}")
    if _INPUT_CHECKS[0]:
        if nb.min() < 0 or nb.max() >= I:
            raise ValueError(f"neighbors must hold positions in [0, {I - 1}]; got range [{int(nb.min())}, "
                             f"{int(nb.max())}]")
        if bool((nb == targets[..., None]).any()):
            raise ValueError("neighbors must not list a target among its own neighbours (its own y would be in "
                             "its context)")
    return nb


class FMAttributes(nn.Module):
    """Prop 2: y_i | y_{-i} ~ N(h(tau_i)^T sum_{j in N(i)} h(tau_j) y_j, sigma^2) (no normalization).

    The context N(i) is every other valid position, or the k nearest neighbours given as
    ``neighbors`` (B, T, k) or (T, k) position indices (temperature baseline).  ``h`` is a module
    tau -> dim; default Dense(hidden, ReLU) -> Dense(dim) as in the temperature code."""

    def __init__(self, attr_dim: int, dim: int = 32, *, family="gaussian",
                 family_kw: Optional[dict] = None, h: Optional[nn.Module] = None, hidden: int = 128):
        super().__init__()
        self.family = expfam.family(family, **(family_kw or {}))
        self.attr_dim = _posint(attr_dim, "attr_dim")
        self.h = h if h is not None else _mlp(self.attr_dim, hidden, _posint(dim, "dim"))

    def forward(self, y, tau, valid=None, targets=None, neighbors=None):
        """kappa (B, T) (the Gaussian mean)."""
        y = torch.as_tensor(y)
        valid, targets, _ = _prepare(y, valid, targets)
        Hh = shared_map(self.h, tau, *y.shape[:2], self.attr_dim)
        dt = Hh.dtype
        yv = torch.where(valid, y, torch.zeros_like(y)).to(dt)
        if neighbors is None:
            ctx = context_matrix(valid, targets, "bidirectional").to(dt)
        else:
            nb = _check_neighbors(neighbors, targets, y.shape[1])
            ctx = torch.zeros(*targets.shape, y.shape[1], dtype=dt, device=y.device)
            ctx.scatter_(2, nb, 1.0)
            ctx = ctx * valid[:, None, :].to(dt)
        s = ctx @ (Hh * yv[..., None])
        ht = Hh.gather(1, targets[..., None].expand(-1, -1, Hh.shape[-1]))
        return (ht * s).sum(-1)

    natural_params = forward

    def _targets_y(self, y, targets, tv):
        return EFAValue._targets_y(self, y, targets, tv)

    def loglik(self, y, tau, valid=None, targets=None, neighbors=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, tau, valid, targets, neighbors)
        yt = self._targets_y(y, targets, tv)
        self.family.validate_y(yt, "y")
        lp = self.family._log_prob(out, yt)          # (yt validated above)
        return lp * tv.to(lp.dtype)

    def nll(self, y, tau, valid=None, targets=None, neighbors=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        return -_masked_mean(self.loglik(y, tau, valid, targets, neighbors), tv)

    loss = nll

    def code_loss(self, y, tau, valid=None, targets=None, neighbors=None):
        y = torch.as_tensor(y)
        valid, targets, tv = _prepare(y, valid, targets)
        out = self.forward(y, tau, valid, targets, neighbors)
        yt = self._targets_y(y, targets, tv)
        self.family.validate_y(yt, "y")
        return _masked_mean(self.family.code_loss(out, yt), tv)
