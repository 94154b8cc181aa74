"""Bidirectional attention as a mixture of continuous word experts (Wibisono & Wang, UAI 2023).

Torch modules of the paper's models, in the paper's notation (Sec. 2,
Apps. B-C).  Token ids are 0-based: words are 0..V-1 and the ``[MASK]`` token is id ``V`` (the paper's
index |V|+1).  A *masked sentence* is a LongTensor ``x`` of shape (B, S) whose position ``m[b]`` holds
``V``; ``m`` is a LongTensor (B,) of masked positions and ``b`` a LongTensor (B,) of true tokens.

Modules (all default to float64, so the exact identities can be checked to ~1e-14):

``BidirAttentionMLM``  Sec. 2.1 / App. B: linear bidirectional attention with positional encodings,
    H heads (concat-then-project) and L layers, each layer ``Z' = X' + Attn(X') W^O``,
    ``Z'' = Z' + W' Z'`` (residual=True; residual=False drops both residuals), and the MLM head
    ``y_hat = softmax(W'' Z''_m)``.  ``.forward(x, m) -> logits (B, V)``; ``.loss(x, m, b)``.
``CBOWMoE``  Lemma 1 / Theorem 2: the same model (one layer) reparameterized as CBOW with
    mixture-of-experts weights, ``F = sum_i sum_j pi^i_j f^i_j`` (stacked MoE for H heads, Sec. 2.2).
    ``CBOWMoE.from_attention(model)`` maps the parameters (W^KQ, W^LOV, g, D); ``.gate``,
    ``.experts``, ``.forward``, ``.lemma1_loss`` give pi, f, F and Lemma 1's explicit loss.
``MixtureOfMoEs``  Sec. 2.2 "mixture of MoEs" for L >= 1 layers (explicit form derived in
    docs/instances.md): each layer is an MoE over positions k of CBOW-type experts; the last layer is a CBOW MoE
    over the previous layer's outputs.  ``MixtureOfMoEs.from_attention(model)``.
``CBOW``  CBOW with a full softmax (no negative sampling, Sec. 2.2 / App. G.1): ``logits = W mean(c)``
    over the window ``1 <= |j - m| <= w`` (w = None: the whole sentence except the center).
``AttentionCBOW``  the Sec. 4 / App. G.2 attention objective, Eq. (1): no residuals, no positions,
    ``logits = W sum_j gamma_j c_{a_j}`` with ``gamma_j = tau_{a_j} / sum_s tau_{a_s}`` and
    ``tau_j = exp(c_j^T W^KQ c_{|V|+1} / sqrt(d_w))``; the mask position is included.

Helpers: ``mask_sentences(tokens, m, vocab_size)``, ``moe_parameters(model)`` (Lemma 1's map) and
``attention_from_moe(C, P, W_KQ, W_LOV, g, D, d_w)`` (its inverse, one head, where the MoE parameters
are in the map's image: p >= |V|, p >= S+1, rank W^KQ <= d_w).
"""
from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

__all__ = ["BidirAttentionMLM", "CBOWMoE", "MixtureOfMoEs", "CBOW", "AttentionCBOW",
           "MoEParameters", "mask_sentences", "moe_parameters", "attention_from_moe"]


# --------------------------------------------------------------------------- validation helpers
def _pos_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return value


def _check_inputs(x: torch.Tensor, m: torch.Tensor, vocab_size: int, seq_len: int | None,
                  masked: bool = True) -> None:
    """Validate a batch of (masked) sentences and masked positions."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype not in (torch.int64, torch.int32):
        raise ValueError("x must be an integer tensor of shape (batch, S)")
    if seq_len is not None and x.shape[1] != seq_len:
        raise ValueError(f"x must have S = {seq_len} columns; got {x.shape[1]}")
    if x.shape[0] == 0:
        raise ValueError("x must hold at least one sentence (batch >= 1)")
    if (not isinstance(m, torch.Tensor) or m.shape != (x.shape[0],) or m.is_floating_point()
            or m.dtype == torch.bool):
        raise ValueError(f"m must be an integer tensor of shape ({x.shape[0]},)")
    if int(m.min()) < 0 or int(m.max()) >= x.shape[1]:
        raise ValueError(f"m must lie in [0, {x.shape[1] - 1}]")
    top = vocab_size if masked else vocab_size - 1
    if int(x.min()) < 0 or int(x.max()) > top:
        raise ValueError(f"token ids of x must lie in [0, {top}] (id {vocab_size} is [MASK])")
    if masked and not bool((x.gather(1, m[:, None]).squeeze(1) == vocab_size).all()):
        raise ValueError(f"x must hold the [MASK] id {vocab_size} at every masked position m")


def _check_targets(b: torch.Tensor, n: int, vocab_size: int) -> None:
    if not isinstance(b, torch.Tensor) or b.shape != (n,):
        raise ValueError(f"b must be an integer tensor of shape ({n},)")
    if b.dtype != torch.long:                  # (cross_entropy's own error came from deep inside torch)
        raise ValueError(f"b (the masked tokens) must be an int64 tensor (the class indices of the loss); got {b.dtype}")
    if int(b.min()) < 0 or int(b.max()) >= vocab_size:
        raise ValueError(f"b (the masked tokens) must lie in [0, {vocab_size - 1}]")


def mask_sentences(tokens: torch.Tensor, m: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Replace position ``m[b]`` of sentence ``b`` by the [MASK] id ``vocab_size`` (Sec. 2.1)."""
    _pos_int(vocab_size, "vocab_size", 2)
    _check_inputs(tokens, m, vocab_size, None, masked=False)
    x = tokens.clone()
    x.scatter_(1, m[:, None], vocab_size)
    return x


def _check_init_std(init_std) -> None:
    if not (isinstance(init_std, (int, float)) and not isinstance(init_std, bool) and math.isfinite(init_std)
            and init_std > 0):
        raise ValueError(f"init_std must be a finite number > 0; got {init_std!r}")


def _normal(shape, std, generator, dtype):
    return nn.Parameter(torch.randn(*shape, generator=generator, dtype=dtype) * std)


# --------------------------------------------------------------------------- attention MLM
class BidirAttentionMLM(nn.Module):
    """Linear bidirectional attention trained with the MLM objective (Sec. 2.1, App. B).

    Per layer l and head i: ``A_i = softmax_row(X' W^Q_i^T W^K_i X'^T / sqrt(d_w))``,
    ``Z = sum_i A_i X' W^V_i^T W^O_i`` (W^O_i = i-th row block of W^O), ``Z' = X' + Z``,
    ``Z'' = (I + W') Z'`` (row-wise); the next layer reads Z''.  The MLM head is
    ``y_hat = softmax(W'' Z''_m)`` and the loss is the cross entropy ``-log y_hat_b``.

    Parameters (shapes): C (V+1, p) token embeddings (row V = [MASK]); P (S, p) positional
    encodings (a zero buffer when positional=False); per layer WQ, WK (H, d_w, p), WV, WO (H, d, p),
    W1 (p, p) = W'; W2 (V, p) = W''.  residual=False drops both residual connections
    (``Z' = Z``, ``Z'' = W' Z'``), as in the Sec. 4 / App. G.2 analysis.
    Initialisation: N(0, init_std^2) for everything, W' scaled by w1_scale.
    """

    def __init__(self, vocab_size: int, seq_len: int, p: int, d: int | None = None,
                 d_w: int | None = None, heads: int = 1, layers: int = 1, positional: bool = True,
                 residual: bool = True, init_std: float = 1.0, w1_scale: float = 0.3,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.vocab_size = _pos_int(vocab_size, "vocab_size", 2)
        self.seq_len = _pos_int(seq_len, "seq_len", 1)
        self.p = _pos_int(p, "p")
        self.d = _pos_int(p if d is None else d, "d")
        self.d_w = _pos_int(p if d_w is None else d_w, "d_w")
        self.heads = _pos_int(heads, "heads")
        self.layers = _pos_int(layers, "layers")
        _check_init_std(init_std)
        if not (isinstance(w1_scale, (int, float)) and not isinstance(w1_scale, bool) and math.isfinite(w1_scale)
                and w1_scale >= 0):                  # (nan filled W' with NaN)
            raise ValueError(f"w1_scale must be a finite number >= 0; got {w1_scale!r}")
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype must be a floating-point torch dtype; got {dtype!r}")
        self.positional, self.residual = bool(positional), bool(residual)
        g, H = generator, self.heads
        self.C = _normal((vocab_size + 1, p), init_std, g, dtype)
        if self.positional:
            self.P = _normal((seq_len, p), init_std, g, dtype)
        else:
            self.register_buffer("P", torch.zeros(seq_len, p, dtype=dtype))
        self.WQ = nn.ParameterList([_normal((H, self.d_w, p), init_std, g, dtype) for _ in range(layers)])
        self.WK = nn.ParameterList([_normal((H, self.d_w, p), init_std, g, dtype) for _ in range(layers)])
        self.WV = nn.ParameterList([_normal((H, self.d, p), init_std, g, dtype) for _ in range(layers)])
        self.WO = nn.ParameterList([_normal((H, self.d, p), init_std, g, dtype) for _ in range(layers)])
        self.W1 = nn.ParameterList([_normal((p, p), init_std * w1_scale, g, dtype) for _ in range(layers)])
        self.W2 = _normal((vocab_size, p), init_std, g, dtype)

    # X' = X_bar C + P (step 1)
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.C[x] + self.P

    def attention_weights(self, x: torch.Tensor, m: torch.Tensor) -> list[torch.Tensor]:
        """Row-stochastic attention matrices, one (B, H, S, S) tensor per layer."""
        _check_inputs(x, m, self.vocab_size, self.seq_len)
        return self._run(x)[1]

    def _layer(self, h: torch.Tensor, l: int):
        q = torch.einsum("bsp,hdp->bhsd", h, self.WQ[l])
        k = torch.einsum("bsp,hdp->bhsd", h, self.WK[l])
        A = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d_w), dim=-1)   # (B,H,S,S)
        v = torch.einsum("bsp,hdp->bhsd", h, self.WV[l])
        z = torch.einsum("bhsd,hdp->bsp", A @ v, self.WO[l])                        # concat-then-project
        zp = h + z if self.residual else z
        zpp = zp + zp @ self.W1[l].T if self.residual else zp @ self.W1[l].T
        return zpp, A

    def _run(self, x):
        h = self.embed(x)
        attn = []
        for l in range(self.layers):
            h, A = self._layer(h, l)
            attn.append(A)
        return h, attn

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Pre-softmax logits ``W'' Z''_m`` (B, V) of the masked sentences x (masked at m)."""
        _check_inputs(x, m, self.vocab_size, self.seq_len)
        h, _ = self._run(x)
        return h[torch.arange(x.shape[0]), m] @ self.W2.T

    def loss(self, x: torch.Tensor, m: torch.Tensor, b: torch.Tensor, reduction: str = "mean"):
        """MLM cross entropy ``-log softmax(W'' Z''_m)_b`` (Sec. 2.1)."""
        _check_targets(b, x.shape[0], self.vocab_size)
        return nn.functional.cross_entropy(self(x, m), b, reduction=reduction)


# --------------------------------------------------------------------------- the MoE form
@dataclasses.dataclass
class MoEParameters:
    """The reparameterization of Lemma 1 (App. C): W^KQ_i = W^K_i^T W^Q_i (H, p, p),
    W^LOV_i = W^l W^O_i^T W^V_i (H, V, p) with W^l = W'' + W'' W' (W''W' without residuals),
    g = W^l c_{|V|+1} (V,), D = W^l P^T (V, S); C, P and d_w are carried over."""
    C: torch.Tensor
    P: torch.Tensor
    W_KQ: torch.Tensor
    W_LOV: torch.Tensor
    g: torch.Tensor
    D: torch.Tensor
    W_l: torch.Tensor
    d_w: int


def moe_parameters(model: BidirAttentionMLM) -> MoEParameters:
    """Map a one-layer BidirAttentionMLM to the parameters of its CBOW-with-MoE form (Lemma 1)."""
    if not isinstance(model, BidirAttentionMLM):
        raise ValueError("model must be a BidirAttentionMLM")
    if model.layers != 1:
        raise ValueError(f"moe_parameters needs layers == 1 (use MixtureOfMoEs); got {model.layers}")
    with torch.no_grad():
        W1, W2 = model.W1[0], model.W2
        I = torch.eye(model.p, dtype=W2.dtype)
        W_l = W2 @ (I + W1) if model.residual else W2 @ W1
        W_KQ = model.WK[0].transpose(-1, -2) @ model.WQ[0]                       # (H,p,p)
        W_LOV = W_l @ model.WO[0].transpose(-1, -2) @ model.WV[0]                 # (H,V,p)
        if model.residual:
            g, D = W_l @ model.C[model.vocab_size], W_l @ model.P.T
        else:                                    # no residual X'_m term: g = 0, D = 0 (App. G.2)
            g = torch.zeros(model.vocab_size, dtype=W2.dtype)
            D = torch.zeros(model.vocab_size, model.seq_len, dtype=W2.dtype)
    return MoEParameters(model.C.detach().clone(), model.P.detach().clone(), W_KQ.clone(),
                         W_LOV.clone(), g.clone(), D.clone(), W_l.clone(), model.d_w)


def _lift_W_l(C: torch.Tensor, P: torch.Tensor, g: torch.Tensor, D: torch.Tensor,
              generator: torch.Generator | None) -> torch.Tensor:
    """A W^l (V, p) of full row rank with W^l [c_{|V|+1}, P^T] = [g, D]: the least-squares solution
    plus a random term in the null space of [c_{|V|+1}, P^T]^T."""
    K = torch.cat([C[-1][:, None], P.T], dim=1)                                   # (p, S+1)
    G = torch.cat([g[:, None], D], dim=1)                                         # (V, S+1)
    Kp = torch.linalg.pinv(K)
    Z = torch.randn(G.shape[0], K.shape[0], generator=generator, dtype=K.dtype)
    return G @ Kp + Z @ (torch.eye(K.shape[0], dtype=K.dtype) - K @ Kp)


def attention_from_moe(C, P, W_KQ, W_LOV, g, D, d_w: int,
                       generator: torch.Generator | None = None) -> "BidirAttentionMLM":
    """The inverse of Lemma 1's map for one layer and one head: a BidirAttentionMLM whose CBOW-with-MoE
    form (Theorem 2) has exactly the parameters (C, P, W^KQ, W^LOV, g, D) and the gate scale d_w.

    The map of Lemma 1 is not onto: its image has rank W^KQ <= d_w and the columns of W^LOV, g and
    D in col(W^l).  This inverse covers the generic case p >= |V|, p >= S+1 with [c_{|V|+1}, P^T] of
    full column rank: W^l solves W^l [c_{|V|+1}, P^T] = [g, D] with full row rank (`_lift_W_l`),
    W' = 0, W'' = W^l, d = p, W^V = I, W^O = (W^l^+ W^LOV)^T, and W^K, W^Q (d_w x p) are the two
    square-root factors of the SVD of W^KQ.  Raises ValueError outside that case."""
    C, P, W_KQ, W_LOV, g, D = (torch.as_tensor(t, dtype=torch.float64) for t in (C, P, W_KQ, W_LOV, g, D))
    V1, p = C.shape
    V, S = V1 - 1, P.shape[0]
    d_w = _pos_int(d_w, "d_w")
    for name, t, shp in (("P", P, (S, p)), ("W_KQ", W_KQ, (p, p)), ("W_LOV", W_LOV, (V, p)),
                         ("g", g, (V,)), ("D", D, (V, S))):
        if tuple(t.shape) != shp:
            raise ValueError(f"{name} must have shape {shp}; got {tuple(t.shape)}")
    if p < V or p < S + 1:
        raise ValueError(f"attention_from_moe needs p >= |V| and p >= S+1; got p={p}, |V|={V}, S={S}")
    U, s, Vh = torch.linalg.svd(W_KQ)
    rank_kq = int((s > 1e-12 * max(float(s[0]), 1e-300)).sum())
    if rank_kq > d_w:
        raise ValueError(f"W_KQ has rank {rank_kq} > d_w = {d_w}: not the product W^K^T W^Q of d_w x p maps")
    K = torch.cat([C[-1][:, None], P.T], dim=1)
    if int(torch.linalg.matrix_rank(K)) < S + 1:
        raise ValueError("[c_mask, P^T] must have full column rank S+1")
    W_l = _lift_W_l(C, P, g, D, generator)
    if int(torch.linalg.matrix_rank(W_l)) < V:
        raise ValueError("no W^l of full row rank solves W^l [c_mask, P^T] = [g, D]")
    model = BidirAttentionMLM(V, S, p, d=p, d_w=d_w, generator=generator)
    sq = s[:d_w].sqrt() if d_w <= p else torch.cat([s.sqrt(), torch.zeros(d_w - p, dtype=s.dtype)])
    WK = torch.zeros(d_w, p, dtype=torch.float64)
    WQ = torch.zeros(d_w, p, dtype=torch.float64)
    k = min(d_w, p)
    WK[:k] = (U[:, :k] * sq[:k]).T                                                  # W^K^T W^Q = U S V^T
    WQ[:k] = sq[:k, None] * Vh[:k]
    with torch.no_grad():
        model.C.copy_(C)
        model.P.copy_(P)
        model.WK[0][0].copy_(WK)
        model.WQ[0][0].copy_(WQ)
        model.WV[0][0].copy_(torch.eye(p, dtype=torch.float64))
        model.WO[0][0].copy_((torch.linalg.pinv(W_l) @ W_LOV).T)
        model.W1[0].zero_()
        model.W2.copy_(W_l)
    return model


class CBOWMoE(nn.Module):
    """CBOW with mixture-of-experts weights (Lemma 1, Theorem 2; Sec. 2.2 for H heads).

    ``h^i_j = e_j^T (X_bar C + P) W^KQ_i (c_{|V|+1} + P^T e_m) / sqrt(d_w)``, ``pi^i = softmax(h^i)``
    (the gate: it reads the masked sentence only, never the masked token b),
    ``f^i_j = W^LOV_i (X_bar C + P)^T e_j + (g + D e_m) / H`` (expert j), ``F = sum_i sum_j pi^i_j f^i_j``,
    and ``softmax(F)`` is the attention model's prediction.  The sum over j includes j = m.
    """

    def __init__(self, C, P, W_KQ, W_LOV, g, D, d_w: int):
        super().__init__()
        C, P, W_KQ, W_LOV, g, D = (torch.as_tensor(t) for t in (C, P, W_KQ, W_LOV, g, D))
        if W_KQ.dim() == 2:
            W_KQ = W_KQ[None]
        if W_LOV.dim() == 2:
            W_LOV = W_LOV[None]
        V1, p = C.shape
        V, S, H = V1 - 1, P.shape[0], W_KQ.shape[0]
        shapes = dict(P=(P, (S, p)), W_KQ=(W_KQ, (H, p, p)), W_LOV=(W_LOV, (H, V, p)), g=(g, (V,)),
                      D=(D, (V, S)))
        for name, (t, shp) in shapes.items():
            if tuple(t.shape) != shp:
                raise ValueError(f"{name} must have shape {shp} (from C {tuple(C.shape)}, P, W_KQ); got {tuple(t.shape)}")
        self.vocab_size, self.seq_len, self.p, self.heads = V, S, p, H
        self.d_w = _pos_int(d_w, "d_w")
        self.C, self.P = nn.Parameter(C.clone()), nn.Parameter(P.clone())
        self.W_KQ, self.W_LOV = nn.Parameter(W_KQ.clone()), nn.Parameter(W_LOV.clone())
        self.g, self.D = nn.Parameter(g.clone()), nn.Parameter(D.clone())

    @classmethod
    def from_attention(cls, model: BidirAttentionMLM) -> "CBOWMoE":
        q = moe_parameters(model)
        return cls(q.C, q.P, q.W_KQ, q.W_LOV, q.g, q.D, q.d_w)

    def _xp(self, x):
        return self.C[x] + self.P                                                  # (B,S,p)

    def gate_logits(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """h^i_j (B, H, S) of Theorem 2."""
        _check_inputs(x, m, self.vocab_size, self.seq_len)
        xp = self._xp(x)
        query = self.C[self.vocab_size] + self.P[m]                               # c_mask + P^T e_m
        return torch.einsum("bsp,hpq,bq->bhs", xp, self.W_KQ, query) / math.sqrt(self.d_w)

    def gate(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """pi^i_j (B, H, S): softmax over positions j of h^i_j."""
        return torch.softmax(self.gate_logits(x, m), dim=-1)

    def experts(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """f^i_j (B, H, S, V) of Theorem 2 (with g/H and D e_m/H per head, Sec. 2.2)."""
        _check_inputs(x, m, self.vocab_size, self.seq_len)
        xp = self._xp(x)
        cbow = torch.einsum("hvp,bsp->bhsv", self.W_LOV, xp)
        resid = (self.g[None] + self.D.T[m]) / self.heads                         # (B,V)
        return cbow + resid[:, None, None, :]

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """F(X_bar) = sum_i sum_j pi^i_j f^i_j, the logits (B, V)."""
        return torch.einsum("bhs,bhsv->bv", self.gate(x, m), self.experts(x, m))

    def loss(self, x, m, b, reduction: str = "mean"):
        _check_targets(b, x.shape[0], self.vocab_size)
        return nn.functional.cross_entropy(self(x, m), b, reduction=reduction)

    def lemma1_loss(self, x: torch.Tensor, m: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Lemma 1 written out (one head): ``-sum_j theta chi_b / sum theta + log sum_k exp(
        sum_j theta chi_k / sum theta)`` with theta(j,m) = exp(h_j) and chi(j,m,k) = f_j,k.
        Per-example losses (B,).  theta is shifted by max_j h_j, which cancels in every ratio."""
        if self.heads != 1:
            raise ValueError(f"Lemma 1 is stated for one head; this model has heads = {self.heads}")
        _check_targets(b, x.shape[0], self.vocab_size)
        h = self.gate_logits(x, m)[:, 0]                                           # (B,S)
        theta = torch.exp(h - h.max(dim=1, keepdim=True).values)
        chi = self.experts(x, m)[:, 0]                                             # (B,S,V)
        avg = torch.einsum("bs,bsv->bv", theta, chi) / theta.sum(1, keepdim=True)
        return -avg.gather(1, b[:, None]).squeeze(1) + torch.logsumexp(avg, dim=1)


class MixtureOfMoEs(nn.Module):
    """An L-layer BidirAttentionMLM as a mixture of MoEs (Sec. 2.2; explicit form in docs/instances.md).

    With A_l = I + W'_l (0 without residuals), U_{l,i} = W^{O_l,i}^T W^{V_l,i} and
    L_{l,i} = (I + W'_l) U_{l,i} (W'_l U_{l,i} without residuals), layer l < L is an MoE over k:
    ``h^l_j = A_l h^{l-1}_j + sum_i sum_k pi^{l,i}_{jk} L_{l,i} h^{l-1}_k``,
    ``pi^{l,i}_{jk} = softmax_k(h^{l-1}_j^T W^{KQ_l,i} h^{l-1}_k / sqrt(d_w))`` (query position j),
    with h^0 = x'.  The last layer is the CBOW MoE of Theorem 2 over h^{L-1}:
    ``F = sum_i sum_j pi^{L,i}_{mj} (W^LOV_i h^{L-1}_j + W^l h^{L-1}_m / H)``, W^l = W'' A_L
    (W'' W'_L without residuals), W^LOV_i = W^l U_{L,i}.
    """

    def __init__(self, model: BidirAttentionMLM):
        super().__init__()
        if not isinstance(model, BidirAttentionMLM):
            raise ValueError("model must be a BidirAttentionMLM")
        self.vocab_size, self.seq_len, self.heads = model.vocab_size, model.seq_len, model.heads
        self.d_w, self.layers, self.residual = model.d_w, model.layers, model.residual
        with torch.no_grad():
            I = torch.eye(model.p, dtype=model.W2.dtype)
            self.C = nn.Parameter(model.C.detach().clone())
            self.P = nn.Parameter(model.P.detach().clone())
            kq, A, Lm = [], [], []
            for l in range(model.layers):
                kq.append(model.WK[l].transpose(-1, -2) @ model.WQ[l])
                U = model.WO[l].transpose(-1, -2) @ model.WV[l]                    # (H,p,p)
                Al = I + model.W1[l] if model.residual else model.W1[l]
                A.append(Al)
                Lm.append(Al @ U)
            self.W_KQ = nn.ParameterList([nn.Parameter(t.clone()) for t in kq])
            self.A = nn.ParameterList([nn.Parameter(t.clone()) for t in A[:-1]])
            self.L = nn.ParameterList([nn.Parameter(t.clone()) for t in Lm[:-1]])
            W_l = model.W2 @ A[-1]
            self.W_l = nn.Parameter(W_l.clone())
            self.W_LOV = nn.Parameter((model.W2 @ Lm[-1]).clone())                 # W'' A_L U_L
        self._skip = model.residual

    @classmethod
    def from_attention(cls, model: BidirAttentionMLM) -> "MixtureOfMoEs":
        return cls(model)

    def _gate(self, h, kq, rows):
        # pi_{jk} for query rows j: softmax_k(h_j^T W^KQ h_k / sqrt(d_w))
        return torch.softmax(torch.einsum("bjp,hpq,bkq->bhjk", rows, kq.transpose(-1, -2), h)
                             / math.sqrt(self.d_w), dim=-1)

    def hidden(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """h^{L-1} (B, S, p): the outputs of the first L-1 layers in their MoE form."""
        _check_inputs(x, m, self.vocab_size, self.seq_len)
        h = self.C[x] + self.P
        for l in range(self.layers - 1):
            pi = self._gate(h, self.W_KQ[l], h)                                    # (B,H,S,S)
            experts = torch.einsum("hpq,bkq->bhkp", self.L[l], h)                  # L_{l,i} h_k
            mix = torch.einsum("bhjk,bhkp->bjp", pi, experts)
            h = (h @ self.A[l].T if self._skip else 0.0) + mix
        return h

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Logits (B, V): the last layer's gate over j mixes CBOW experts on h^{L-1}."""
        h = self.hidden(x, m)
        hm = h[torch.arange(x.shape[0]), m]                                        # (B,p)
        pi = self._gate(h, self.W_KQ[-1], hm[:, None, :])[:, :, 0, :]              # (B,H,S)
        experts = torch.einsum("hvp,bjp->bhjv", self.W_LOV, h)
        if self._skip:
            experts = experts + (hm @ self.W_l.T)[:, None, None, :] / self.heads
        return torch.einsum("bhj,bhjv->bv", pi, experts)


# --------------------------------------------------------------------------- CBOW
class CBOW(nn.Module):
    """CBOW with a full softmax (no negative sampling; Sec. 2.2, App. G.1, App. H).

    ``logits_k = w_k^T mean_{j in J} c_{a_j}`` with J = {j : 1 <= |j - m| <= window} (window None:
    every position but m), i.e. the MoE with the fixed gate omega(j, m) / sum omega.
    W (V, p): center embeddings w_k; C (V, p): context embeddings c_j.  Inputs may hold any token
    at m (the center is never read), including the [MASK] id V.
    """

    def __init__(self, vocab_size: int, p: int, window: int | None = None, init_std: float = 0.1,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.vocab_size = _pos_int(vocab_size, "vocab_size", 2)
        self.p = _pos_int(p, "p")
        self.window = None if window is None else _pos_int(window, "window")
        _check_init_std(init_std)
        self.W = _normal((vocab_size, p), init_std, generator, dtype)
        self.C = _normal((vocab_size, p), init_std, generator, dtype)

    def gate(self, S: int, m: torch.Tensor) -> torch.Tensor:
        """omega(j, m) / sum_j omega (B, S): the fixed CBOW gate."""
        j = torch.arange(S, device=m.device)[None, :]
        dist = (j - m[:, None]).abs()
        om = (dist >= 1) & (dist <= (S if self.window is None else self.window))
        om = om.to(self.W.dtype)
        return om / om.sum(1, keepdim=True)

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        # the center is never read, so it may hold a word or the [MASK] id V
        _check_inputs(x.clamp(max=self.vocab_size - 1), m, self.vocab_size, None, masked=False)
        if int(x.max()) > self.vocab_size:
            raise ValueError(f"token ids of x must lie in [0, {self.vocab_size}]")
        context = torch.ones_like(x, dtype=torch.bool).scatter_(1, m[:, None], False)
        if bool((x[context] == self.vocab_size).any()):     # (it was read as word V - 1)
            raise ValueError(f"x may hold the [MASK] id {self.vocab_size} only at the centre m; a context word "
                             f"must lie in [0, {self.vocab_size - 1}]")
        if x.shape[1] < 2:
            raise ValueError("x must have S >= 2 columns (CBOW needs a context)")
        om = self.gate(x.shape[1], m)
        xc = x.clamp(max=self.vocab_size - 1)           # the center (maybe [MASK]) has weight 0
        ctx = torch.einsum("bs,bsp->bp", om, self.C[xc])
        return ctx @ self.W.T

    def loss(self, x, m, b, reduction: str = "mean"):
        _check_targets(b, x.shape[0], self.vocab_size)
        return nn.functional.cross_entropy(self(x, m), b, reduction=reduction)

    def similarity(self) -> torch.Tensor:
        """W C^T (V, V): entry (i, j) = w_i^T c_j, the matrix of Prop 9."""
        return self.W @ self.C.T


class AttentionCBOW(nn.Module):
    """The attention objective of Sec. 4 / App. G.2, Eq. (1) (Lemma 1 with P = g = D = 0).

    ``tau_j = exp(c_j^T W^KQ c_{|V|+1} / sqrt(d_w))`` for j in [|V|+1], W^KQ = W^K^T W^Q,
    ``gamma_j = tau_{a_j} / sum_s tau_{a_s}`` (the sum includes the mask position),
    ``logits_k = w_k^T sum_j gamma_j c_{a_j}``.  W (V, p) center embeddings (= W^LOV),
    C (V+1, p) token embeddings (row V = [MASK]), WQ, WK (d_w, p).
    """

    def __init__(self, vocab_size: int, p: int, d_w: int | None = None, init_std: float = 0.1,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.vocab_size = _pos_int(vocab_size, "vocab_size", 2)
        self.p = _pos_int(p, "p")
        self.d_w = _pos_int(p if d_w is None else d_w, "d_w")
        _check_init_std(init_std)
        self.W = _normal((vocab_size, p), init_std, generator, dtype)
        self.C = _normal((vocab_size + 1, p), init_std, generator, dtype)
        self.WQ = _normal((self.d_w, p), init_std, generator, dtype)
        self.WK = _normal((self.d_w, p), init_std, generator, dtype)

    @property
    def W_KQ(self) -> torch.Tensor:
        return self.WK.T @ self.WQ

    def log_tau(self) -> torch.Tensor:
        """log tau_j (V+1,) = c_j^T W^KQ c_{|V|+1} / sqrt(d_w)."""
        # (C W^K^T)(W^Q c_mask): O(|V| p d_w), never forms the p x p matrix W^KQ
        return (self.C @ self.WK.T) @ (self.WQ @ self.C[self.vocab_size]) / math.sqrt(self.d_w)

    def gamma(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """gamma (B, S): the attention weights of the masked query on every position."""
        _check_inputs(x, m, self.vocab_size, None)
        return torch.softmax(self.log_tau()[x], dim=1)

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        ctx = torch.einsum("bs,bsp->bp", self.gamma(x, m), self.C[x])
        return ctx @ self.W.T

    def loss(self, x, m, b, reduction: str = "mean"):
        _check_targets(b, x.shape[0], self.vocab_size)
        return nn.functional.cross_entropy(self(x, m), b, reduction=reduction)

    def similarity(self) -> torch.Tensor:
        """W C[:V]^T (V, V): entry (i, j) = w_i^T c_j, the matrix of Prop 14."""
        return self.W @ self.C[: self.vocab_size].T
