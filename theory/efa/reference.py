"""EFA: plain-torch transcriptions of the paper's equations -- the oracles the library is held against.

Nothing here calls library code: the transcriptions read a module's parameter tensors (and its torch
sub-modules, e.g. an ``nn.Linear`` lambda_1) and recompute the model from the equations as printed, one
masked copy at a time, one head at a time, with the paper's column layout.  They are slow (python loops
over copies, layers and heads) and meant for small instances.

- :func:`layer_reference`: one attention layer, Eq. (1) / Sec 2.2 step 3 (column-wise softmax of
  (W^Q Z)^T W^K Z / width + M; or linear attention, Sec 3.3), and the "standard" variants the authors'
  Keras code used (row softmax of q_i.k_j / sqrt(d_h), biases, W^O, residual; Remark 8's layer
  normalisation and feed-forward block);
- :func:`stack_reference`: Sec 2.1 steps 1-3 with Remark 8's recursion: for target i the sequence
  with column i replaced by its [MASK] column goes through the L layers, column i is read off;
- :func:`categorical_reference`, :func:`value_reference`: the natural parameters of Sec 2.1 (eta_i =
  delta^T X'_ii) and Sec 2.2 (kappa_i = lambda_2(Y'_ii)) built from the columns printed there;
- :func:`fm_categorical_reference`, :func:`fm_value_reference`, :func:`fm_attributes_reference`: the
  latent factor models of Sec 4 / Props 1-3 (and the authors' code normalisation, docs/efa.md);
- :func:`logpdf_reference`, :func:`mean_reference`, :func:`code_loss_reference`: the densities of Eq. (3)
  (h(y) exp(eta t(y) - A(eta)) as printed), their means and the losses the authors' code minimised, in
  mpmath at 40 digits;
- :func:`bai_reference`, :func:`bai_norm_reference`: the Sec 5.2 model (Bai et al.'s transformer on the
  clipped embedding) and its norm |||theta|||, from a dict of the paper's matrices.

Padding (not in the paper): a position with ``valid`` False is no one's context; an output column with
no allowed context gets zero weights (so 0 output before the residual).
"""
from __future__ import annotations

import math

import torch

# ------------------------------------------------------------------------------------------------
# Eq. (1): one layer, one copy
# ------------------------------------------------------------------------------------------------


def _layer_norm(x, norm):
    """LayerNorm over the last dimension written out: (x - mean) / sqrt(var + eps) * weight + bias."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _ffn(x, seq):
    """The ReLU feed-forward block Dense -> ReLU -> Dense, written out from its weights."""
    lin1, lin2 = seq[0], seq[2]
    return torch.clamp(x @ lin1.weight.T + lin1.bias, min=0) @ lin2.weight.T + lin2.bias


def layer_reference(layer, Z: torch.Tensor, allowed: torch.Tensor, return_weights: bool = False):
    """One attention layer on one copy (``layer``: an AttentionLayer, or anything with its tensors and
    ``convention``, ``attention``, ``norm1``, ``ffn``).  Z: (I, width) (row j = the paper's column z_j); allowed:
    (I, I) bool, allowed[i, j] True when output i may see context j (the paper's M[j, i] = 0).

    The layer's ``convention`` fixes the form (not its other attributes, so that a wrong default in the
    library shows): 'paper' is Eq. (1) -- S[j, i] = (W^Q_h z_j).(W^K_h z_i) / width, no biases, heads
    summed, no residual (biases b^Q, b^K, b^V added to W^Q z, W^K z, W^V z when the layer has
    ``paper_bias`` True, the form a paper-convention module with bias=True computes); 'standard' is the authors' Keras layer -- q_i.k_j / sqrt(width / heads) with
    q = W^Q z + b^Q, k = W^K z + b^K, v = W^V z + b^V, heads concatenated and mapped by W^O (+ b^O), the
    residual z_i added.  A[:, i] = softmax over the allowed j (the raw scores on the allowed j for linear
    attention); head output W^V_h Z^T A.  Then LayerNorm and the feed-forward block (Remark 8) when the
    layer has them.  With
    ``return_weights`` also the weights (heads, I, I), rows = output i, columns = context j (A^T)."""
    Zt = Z.T                                                  # width x I: the paper's columns
    I, width = Z.shape
    H = layer.W_Q.shape[0]
    paper = layer.convention == "paper"
    scale = 1.0 / width if paper else 1.0 / math.sqrt(width // H)
    heads, weights = [], []
    for h in range(H):
        Q = layer.W_Q[h] @ Zt
        Kk = layer.W_K[h] @ Zt
        V = layer.W_V[h] @ Zt
        if not paper or getattr(layer, "paper_bias", False):
            Q = Q + layer.b_Q[h][:, None]
            Kk = Kk + layer.b_K[h][:, None]
            V = V + layer.b_V[h][:, None]
        S = (Q.T @ Kk) if paper else (Kk.T @ Q)               # S[j, i]: q_j.k_i (Eq. (1)) or q_i.k_j
        S = S * scale
        ok = allowed.T                                        # ok[j, i]: M[j, i] = 0 (else -inf)
        if layer.attention == "softmax":
            # softmax over j of S[j, i] + M[j, i], column by column; a column with no context gets 0
            top = torch.where(ok, S, torch.full_like(S, -math.inf)).max(0).values
            top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
            e = torch.where(ok, torch.exp(S - top), torch.zeros_like(S))
            tot = e.sum(0)
            A = e / torch.where(tot > 0, tot, torch.ones_like(tot))
        else:
            A = torch.where(ok, S, torch.zeros_like(S))
        heads.append(V @ A)                                   # vdim x I
        weights.append(A.T)
    if paper:
        out = sum(heads)
    else:
        out = layer.W_O @ torch.cat(heads, 0) + layer.b_O[:, None]
    out = out.T                                               # I x width
    if not paper:
        out = Z + out
    if layer.norm1 is not None:
        out = _layer_norm(out, layer.norm1)
    if layer.ffn is not None:
        out = out + _ffn(out, layer.ffn)
        if layer.norm2 is not None:
            out = _layer_norm(out, layer.norm2)
    return (out, torch.stack(weights)) if return_weights else out


def allowed_reference(valid_row: torch.Tensor, direction: str) -> torch.Tensor:
    """(I, I): output i may see context j iff j is valid, and j <= i under the causal mask of Eq. (1)
    (M[j, i] = 0 if j <= i, -inf otherwise)."""
    I = valid_row.shape[0]
    a = torch.zeros(I, I, dtype=torch.bool)
    for i in range(I):
        for j in range(I):
            a[i, j] = bool(valid_row[j]) and (direction == "bidirectional" or j <= i)
    return a


def stack_reference(layers, direction, cols, masked, valid, targets=None, return_weights=False):
    """Sec 2.1 steps 1-3 with Remark 8's recursion: (B, T, width) outputs of column t of copy t.
    cols, masked: (B, I, width) the columns and the [MASK] columns (positional embeddings added);
    valid (B, I) bool; targets (B, T) (default: every position).  With ``return_weights`` also, per
    layer, the weights of every copy (B, T, heads, I, I)."""
    B, I, W = cols.shape
    if targets is None:
        targets = torch.arange(I).expand(B, I)
    T = targets.shape[1]
    out = torch.zeros(B, T, W, dtype=cols.dtype)
    ws = [None] * len(layers)
    for b in range(B):
        allowed = allowed_reference(valid[b], direction)
        for ti in range(T):
            t = int(targets[b, ti])
            Z = cols[b].clone()
            Z[t] = masked[b, t]
            for li, layer in enumerate(layers):
                Z, w = layer_reference(layer, Z, allowed, return_weights=True)
                if ws[li] is None:
                    ws[li] = torch.zeros(B, T, *w.shape, dtype=w.dtype)
                ws[li][b, ti] = w
            out[b, ti] = Z[t]
    return (out, ws) if return_weights else out


# ------------------------------------------------------------------------------------------------
# Sec 2.1 and Sec 2.2: the natural parameters
# ------------------------------------------------------------------------------------------------
def _valid(x, valid):
    return torch.ones(x.shape[:2], dtype=torch.bool) if valid is None else torch.as_tensor(valid, dtype=torch.bool)


def categorical_reference(m, x, valid=None, targets=None, return_weights=False):
    """eta_i = delta^T X'_ii of Sec 2.1 for an EFACategorical `m` (its tensors): columns
    beta_{x_j} + p_j, the target's column beta_[MASK] + p_i; logits (B, T, D)."""
    x = torch.as_tensor(x)
    valid = _valid(x, valid)
    x = torch.where(valid, x, torch.zeros_like(x))
    B, I = x.shape
    beta = m.beta
    cols = beta[x]
    masked = beta[beta.shape[0] - 1].expand(B, I, -1).clone()           # row D: beta_[MASK]
    if m.P is not None:
        cols = cols + m.P[:I]
        masked = masked + m.P[:I]
    H = stack_reference(list(m.stack.layers), m.stack.direction, cols, masked, valid, targets, return_weights)
    if return_weights:
        return H[0] @ m.delta.T, H[1]
    return H @ m.delta.T


def categorical_loglik_reference(logits, x_t):
    """log softmax(eta)_{x_t}: log p(x_i | context) from the logits, written out."""
    mx = logits.max(-1, keepdim=True).values
    lse = mx.squeeze(-1) + torch.log(torch.exp(logits - mx).sum(-1))
    return logits.gather(-1, x_t[..., None]).squeeze(-1) - lse


def value_reference(m, y, x=None, tau=None, valid=None, targets=None, return_weights=False):
    """kappa_i = lambda_2(Y'_ii) of Sec 2.2 for an EFAValue `m` (its tensors and torch sub-modules):
    column j = [beta_bar_{x_j}; delta_bar_{x_j}; g(tau_j); lambda_1(y_j)] + p_bar_j (the blocks the
    module has), the target's value block lambda_1([MASK]) (0 for the identity lambda_1, Remark 6; a
    learned vector otherwise); lambda_2 reads the last entries times the scale (Remark 6, Props 2-3) or
    is the module's map.  Raw outputs (B, T) (or (B, T, C))."""
    y = torch.as_tensor(y)
    valid = _valid(y, valid)
    B, I = y.shape[:2]
    dt = m.stack.layers[0].W_Q.dtype
    blocks = []
    if m.beta_bar is not None or m.delta_bar is not None:
        xx = torch.where(valid, torch.as_tensor(x), torch.zeros_like(torch.as_tensor(x)))
        if m.beta_bar is not None:
            blocks.append(m.beta_bar[xx])
        if m.delta_bar is not None:
            blocks.append(m.delta_bar[xx])
    if m.g is not None:
        t = torch.as_tensor(tau).to(dt)
        if t.ndim == 2:
            t = t.expand(B, *t.shape)
        blocks.append(m.g(t))
    fill = 1.0 if m.family.name == "poisson_v1" else 0.0
    yv = torch.where(valid, y, torch.full_like(y, fill))
    if m.value_embedding == "identity":
        lam = yv[..., None].to(dt)
        mask_vec = torch.zeros(1, dtype=dt)
    elif m.value_embedding == "lookup":
        idx = (torch.trunc(yv.double()).long() if yv.is_floating_point() else yv.long()) + m.value_offset
        lam = m.lambda1.weight[idx]
        mask_vec = m.value_mask
    else:
        lam = m.lambda1(yv[..., None].to(dt))
        mask_vec = m.value_mask
    cols = torch.cat(blocks + [lam], -1)
    masked = torch.cat(blocks + [mask_vec.expand(B, I, -1)], -1)
    if m.P is not None:
        cols = cols + m.P[:I]
        masked = masked + m.P[:I]
    R = stack_reference(list(m.stack.layers), m.stack.direction, cols, masked, valid, targets, return_weights)
    R, ws = R if return_weights else (R, None)
    n_out = m.family.n_out
    out = m.unembed_scale * R[..., R.shape[-1] - n_out:] if m.lambda2 is None else m.lambda2(R)
    out = out.squeeze(-1) if n_out == 1 else out
    return (out, ws) if return_weights else out


# ------------------------------------------------------------------------------------------------
# Sec 4: the latent factor models
# ------------------------------------------------------------------------------------------------
def _fm_context(valid_row, i, direction):
    """The context of target i: the other valid positions (the previous ones under the causal mask)."""
    j = torch.arange(valid_row.shape[0])
    keep = valid_row & (j != i) & ((j < i) if direction == "unidirectional" else torch.ones_like(valid_row))
    return j[keep]


def fm_categorical_reference(rho, alpha, x, direction, normalization="paper", valid=None):
    """x_i | ctx ~ Cat(softmax(c rho sum_{j in ctx} alpha_{x_j})) (Prop 1), logits (B, I, D): c = 1/(I-1)
    as printed ('paper'; I the valid length); 'code' (docs/efa.md): c = 1, and the unidirectional
    context adds alpha_[MASK] (row D of alpha)."""
    x = torch.as_tensor(x)
    valid = _valid(x, valid)
    B, I = x.shape
    out = torch.zeros(B, I, rho.shape[0], dtype=rho.dtype)
    for b in range(B):
        n = int(valid[b].sum())
        for i in range(I):
            ctx = _fm_context(valid[b], i, direction)
            s = alpha[x[b, ctx]].sum(0)                       # sum over the context of alpha_{x_j}
            if normalization == "paper":
                s = s / max(n - 1, 1)
            elif direction == "unidirectional":
                s = s + alpha[rho.shape[0]]
            out[b, i] = rho @ s
    return out


def fm_value_reference(rho, alpha, y, x, direction, normalization="paper", valid=None):
    """kappa_i = c rho_{x_i}^T sum_{j in ctx} alpha_{x_j} y_j (Prop 3 without exp; App. H.1): c = 1/(I-1)
    ('paper'); 'code': 1/(I-1) bidirectional, 1/max(i-1, 1) unidirectional (i the 1-based position;
    the mean over the previous items).  (B, I)."""
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    valid = _valid(x, valid)
    B, I = x.shape
    out = torch.zeros(B, I, dtype=rho.dtype)
    for b in range(B):
        n = int(valid[b].sum())
        for i in range(I):
            ctx = _fm_context(valid[b], i, direction)
            s = (alpha[x[b, ctx]] * y[b, ctx][:, None]).sum(0)  # sum over the context of alpha_{x_j} y_j
            if normalization == "paper" or direction == "bidirectional":
                c = 1.0 / max(n - 1, 1)
            else:
                c = 1.0 / max(len(ctx), 1)
            out[b, i] = c * (rho[int(x[b, i])] @ s)
    return out


def fm_attributes_reference(h, y, tau, valid=None, neighbors=None):
    """kappa_i = h(tau_i)^T sum_{j in N(i)} h(tau_j) y_j (Prop 2), (B, I); `h` a callable tau -> R^K;
    N(i) every other valid position, or the valid positions listed in ``neighbors`` (I, k) / (B, I, k)
    (the temperature baseline's nearest sites)."""
    y = torch.as_tensor(y)
    valid = _valid(y, valid)
    B, I = y.shape
    t = torch.as_tensor(tau)
    if t.ndim == 2:
        t = t.expand(B, *t.shape)
    Hh = h(t)
    out = torch.zeros(B, I, dtype=Hh.dtype)
    for b in range(B):
        for i in range(I):
            if neighbors is None:
                ctx = _fm_context(valid[b], i, "bidirectional")
            else:
                nb = neighbors if neighbors.ndim == 2 else neighbors[b]
                ctx = torch.tensor(sorted({int(j) for j in nb[i]} & {j for j in range(I) if bool(valid[b, j])}),
                                   dtype=torch.long)
            out[b, i] = ((Hh[b, ctx] @ Hh[b, i]) * y[b, ctx]).sum()
    return out


def gaussian_loglik_reference(mean, y, sigma2):
    """log N(y; mean, sigma2) = -log(2 pi sigma2)/2 - (y - mean)^2 / (2 sigma2), written out."""
    return -0.5 * math.log(2 * math.pi * sigma2) - (y - mean) ** 2 / (2 * sigma2)


def poisson_loglik_reference(z, y, version):
    """log pmf of Poisson v1 (y - 1 ~ Poisson(e^z)) or v2 (y ~ Poisson(1 + e^z)), from the rate as printed:
    k log(rate) - rate - log k! with k = y - 1 (v1) or y (v2)."""
    if version == "v1":
        rate, k = torch.exp(z), y - 1
        return k * z - rate - torch.lgamma(k + 1)
    rate, k = 1 + torch.exp(z), y
    return k * torch.log1p(torch.exp(z)) - rate - torch.lgamma(k + 1)


# ------------------------------------------------------------------------------------------------
# Eq. (3): densities, means, code losses (mpmath)
# ------------------------------------------------------------------------------------------------
DPS = 40


def _mp_family(fam):
    """(name, sigma2 or None, n_classes or None) of a family object, read from its attributes."""
    return fam.name, getattr(fam, "sigma2", None), getattr(fam, "n_classes", None)


def _mp_eta(name, out):
    """The natural parameter of the raw output as printed (module docstring of numerics.expfam and
    Secs 2.2, 3.3, 5): Gaussian mu / s2 (handled by the caller), Poisson v1 z, v2 log(1 + e^z),
    Bernoulli and Categorical the logits."""
    import mpmath as mp

    if name == "poisson_v2":
        return mp.log(1 + mp.exp(out))
    return out


def logpdf_reference(fam, out, y) -> float:
    """log p(y | out) = log h(y) + eta t(y) - A(eta), each piece as printed, in mpmath (DPS digits):
    Gaussian N(mu, s2); Poisson v1 y - 1 ~ Poisson(e^z); v2 y ~ Poisson(1 + e^z); Bernoulli(sigmoid);
    Categorical(softmax).  `out` a float (a list of floats for Categorical)."""
    import mpmath as mp

    name, s2, _ = _mp_family(fam)
    # eta y - A(eta) cancels to about e^-|eta| (Bernoulli at eta = 700, y = 1: -1e-304): carry enough digits
    big = max(abs(float(v)) for v in out) if isinstance(out, (list, tuple)) else abs(float(out))
    with mp.workdps(DPS + int(big / 2.3) + 5):
        if name == "gaussian":
            mu, s2, yy = mp.mpf(out), mp.mpf(s2), mp.mpf(y)
            eta = mu / s2
            return float(-mp.log(2 * mp.pi * s2) / 2 - yy ** 2 / (2 * s2) + eta * yy - s2 * eta ** 2 / 2)
        if name == "categorical":
            logits = [mp.mpf(v) for v in out]
            return float(logits[int(y)] - mp.log(mp.fsum(mp.exp(v) for v in logits)))
        eta = _mp_eta(name, mp.mpf(out))
        yy = int(y)
        if name == "poisson_v1":
            return float(eta * (yy - 1) - mp.exp(eta) - mp.loggamma(yy))
        if name == "poisson_v2":
            return float(eta * yy - mp.exp(eta) - mp.loggamma(yy + 1))
        if name == "bernoulli":
            return float(eta * yy - mp.log(1 + mp.exp(eta)))
    raise ValueError(f"unknown family {name!r}")


def mean_reference(fam, out):
    """E[y | out] from the printed density in mpmath (not from a closed form): Poisson by the series
    sum_y y p(y); Bernoulli p(1); Categorical the vector p(c); Gaussian N(mu, s2) has mean mu by
    definition (the raw output is the mean, Sec 3.2 and 5.2)."""
    import mpmath as mp

    name, _, C = _mp_family(fam)
    with mp.workdps(DPS):
        if name == "gaussian":
            return float(out)
        if name == "categorical":
            return [math.exp(logpdf_reference(fam, out, c)) for c in range(C)]
        if name == "bernoulli":
            return math.exp(logpdf_reference(fam, out, 1))
        lo = 1 if name == "poisson_v1" else 0
        eta = _mp_eta(name, mp.mpf(out))
        rate = mp.exp(eta)
        # terms up to rate + 12 sd + 30: the tail beyond is below e^-50 of the mean
        top = int(rate + 12 * mp.sqrt(rate + 1) + 30)
        # P(y = lo + k) = e^-rate rate^k / k!, by the recursion P(k + 1) = P(k) rate / (k + 1)
        total, pk = mp.mpf(0), mp.exp(-rate)
        for k in range(top):
            total += (lo + k) * pk
            pk = pk * rate / (k + 1)
        return float(total)


def code_loss_reference(fam, out, y) -> float:
    """The per-target loss of the authors' released code, as the docstring of numerics.expfam states it
    (MSE; v1 lambda - (y - 1) log lambda with lambda = e^z; v2 1 + lambda - y log(1 + lambda); binary and
    categorical cross-entropy), in mpmath."""
    import mpmath as mp

    name, _, _ = _mp_family(fam)
    with mp.workdps(DPS):
        if name == "gaussian":
            return float((mp.mpf(y) - mp.mpf(out)) ** 2)
        if name in ("bernoulli", "categorical"):
            return -logpdf_reference(fam, out, y)
        lam = mp.exp(mp.mpf(out))
        if name == "poisson_v1":
            return float(lam - (mp.mpf(y) - 1) * mp.log(lam))
        return float(1 + lam - mp.mpf(y) * mp.log(1 + lam))
    raise ValueError(f"unknown family {name!r}")


# ------------------------------------------------------------------------------------------------
# Sec 5.2: the theory model (Bai et al. 2023) and |||theta|||
# ------------------------------------------------------------------------------------------------
def _clip(h, R):
    """Project each vector (last dimension) onto the ball of radius R (identity for R None)."""
    if R is None:
        return h
    n = torch.sqrt((h * h).sum(-1, keepdim=True))
    return torch.where(n <= R, h, h * (R / torch.where(n > 0, n, torch.ones_like(n))))


def bai_reference(p: dict, L: int, M: int, tau, y, R=None, By=None, columns: bool = False) -> torch.Tensor:
    """Predictions clip_{B_y}(read_y(TF^R_theta(Exp^R_theta(Z_i)))) of Sec 5.2, (B, I), from the paper's
    matrices p = {G1, G2, Q.l, Kw.l, V.l, W1.l, W2.l} (Q.l etc. (M, D, D)): for target i, column j of
    Exp is [G_2 ReLU(G_1 clip_R(tau_j)); y_j] with y_i = 0, every column clipped to R; each layer
    h_a <- clip_R(h_a + (1/I) sum_m sum_j ReLU(<Q_m h_a, K_m h_j>) V_m h_j), then
    h_a <- clip_R(h_a + W_2 ReLU(W_1 h_a)); the prediction is the last entry of column i, clipped to
    [-B_y, B_y].  One copy, one column, one head and one context column at a time (vectorised over the
    batch only).  ``columns``: instead every column of every copy after the transformer, (B, I, I, D)."""
    tau, y = torch.as_tensor(tau), torch.as_tensor(y)
    B, I = y.shape
    dt = p["G1"].dtype
    relu = lambda a: torch.clamp(a, min=0)
    emb = [relu(_clip(tau[:, j].to(dt), R) @ p["G1"].T) @ p["G2"].T for j in range(I)]      # (B, K) each
    preds = torch.zeros(B, I, dtype=dt)
    cols = torch.zeros(B, I, I, p["G2"].shape[0] + 1, dtype=dt)
    for i in range(I):
        H = [_clip(torch.cat([emb[j], (y[:, j] if j != i else torch.zeros(B, dtype=y.dtype))[:, None].to(dt)], -1), R)
             for j in range(I)]
        for l in range(L):
            Q, Kw, V, W1, W2 = (p[f"{n}.{l}"] for n in ("Q", "Kw", "V", "W1", "W2"))
            new = []
            for a in range(I):
                acc = H[a].clone()
                for mm in range(M):
                    q = H[a] @ Q[mm].T
                    for j in range(I):
                        s = relu((q * (H[j] @ Kw[mm].T)).sum(-1, keepdim=True))
                        acc = acc + s / I * (H[j] @ V[mm].T)
                acc = _clip(acc, R)
                new.append(_clip(acc + relu(acc @ W1.T) @ W2.T, R))
            H = new
        for a in range(I):
            cols[:, i, a] = H[a]
        pred = H[i][:, -1]
        preds[:, i] = pred if By is None else torch.clamp(pred, -By, By)
    return cols if columns else preds


def bai_embed_reference(p: dict, tau, R=None) -> torch.Tensor:
    """g~(tau) = G_2 ReLU(G_1 clip_R(tau)) (Sec 5.2.1), (..., K)."""
    return torch.clamp(_clip(torch.as_tensor(tau).to(p["G1"].dtype), R) @ p["G1"].T, min=0) @ p["G2"].T


def bai_loss_reference(p, L, M, tau, y, R=None, By=None) -> torch.Tensor:
    """l(theta; Z) = (1/(2I)) sum_i (y_i - prediction_i)^2 (Sec 5.2.2), (B,)."""
    y = torch.as_tensor(y)
    pred = bai_reference(p, L, M, tau, y, R, By)
    return ((y - pred) ** 2).sum(-1) / (2 * y.shape[1])


def _op(A):
    """Operator (spectral) norm: the largest singular value."""
    return float(torch.linalg.svdvals(A)[0])


def bai_norm_reference(p: dict, L: int, M: int) -> float:
    """|||theta||| = max_l {max_m {||Q_m||, ||K_m||} + sum_m ||V_m|| + ||W_1|| + ||W_2||} + ||G_1|| + ||G_2||
    (operator norms; Sec 5.2.2)."""
    per = []
    for l in range(L):
        qk = max(max(_op(p[f"Q.{l}"][m]), _op(p[f"Kw.{l}"][m])) for m in range(M))
        per.append(qk + sum(_op(p[f"V.{l}"][m]) for m in range(M)) + _op(p[f"W1.{l}"]) + _op(p[f"W2.{l}"]))
    return max(per) + _op(p["G1"]) + _op(p["G2"])
