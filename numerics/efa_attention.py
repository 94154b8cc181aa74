"""The attention block of Exponential Family Attention (EFA; Wibisono & Wang 2025), Eq. (1): one
(multi-head) self-attention layer on column features, in the paper's convention (column-wise softmax of
(W^Q Z^T)^T (W^K Z^T) / width plus the mask M, summed over heads, no biases, no output projection) or in
the standard one (row-wise softmax, 1/sqrt(head_dim), biases, W^O, residual).

The EFA models (attnlab.experiments.models.efa) stack these layers; users get the block from
attnlab.layers.  Shapes: Z (N, I, width) column features; ``allowed`` (N, I, I) bool, True where output
position i may attend to context position j (rows = output, whatever the convention).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn

from attnlab.numerics.multihead import (MultiheadAttentionBase, _autocast, additive_mask, check_dropout, check_flag,
                                         check_qkv, check_scale, compute_dtype, empty_attention, excluded, sdpa_mask)

__all__ = ["AttentionLayer", "EFAMultiheadAttention", "efa_attention", "ATTENTIONS", "CONVENTIONS"]

ATTENTIONS = ("softmax", "linear")
CONVENTIONS = ("paper", "standard")


def _choice(value, allowed, name):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


def _posint(value, name, minimum=1):
    """value as an int >= minimum, or a ValueError naming `name` (for None, a string, NaN, inf, 2.7, True)."""
    import numbers

    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or int(value) != value or value < minimum):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


# ------------------------------------------------------------------------------------------------
# attention
# ------------------------------------------------------------------------------------------------
class AttentionLayer(nn.Module):
    """One (multi-head) self-attention layer on column features Z of shape (N, I, width).

    Paper convention (Eq. (1)):  Z'^T = W^V Z^T softmax_col((W^Q Z^T)^T (W^K Z^T) / width + M),
    summed over heads.  Parameters: ``W_Q, W_K`` (heads, head_dim, width), ``W_V`` (heads, vdim,
    width) with vdim = width without an output projection, head_dim with one; optional biases
    ``b_Q, b_K, b_V`` and output projection ``W_O`` (width, heads*head_dim), ``b_O``.
    """

    def __init__(self, width: int, heads: int = 1, attention: str = "softmax",
                 convention: str = "paper", *, head_dim: Optional[int] = None,
                 orientation: Optional[str] = None, scale=None, bias: Optional[bool] = None,
                 out_proj: Optional[bool] = None, residual: Optional[bool] = None,
                 layer_norm: bool = False, ffn_hidden: Optional[int] = None):
        super().__init__()
        self.width = _posint(width, "width")
        self.heads = _posint(heads, "heads")
        self.attention = _choice(attention, ATTENTIONS, "attention")
        self.convention = _choice(convention, CONVENTIONS, "convention")
        paper = convention == "paper"
        self.orientation = _choice(orientation or ("column" if paper else "row"),
                                   ("column", "row"), "orientation")
        self.use_bias = (not paper) if bias is None else bool(bias)
        self.out_proj = (not paper) if out_proj is None else bool(out_proj)
        self.residual = (not paper) if residual is None else bool(residual)
        if head_dim is None:
            if paper:
                head_dim = width
            else:
                if width % heads:
                    raise ValueError(f"width ({width}) must be divisible by heads ({heads}) for "
                                     f"the standard convention, or give head_dim")
                head_dim = width // heads
        self.head_dim = _posint(head_dim, "head_dim")
        if scale is None:
            scale = "width" if paper else "sqrt_head"
        if scale == "width":
            self.scale = 1.0 / width
        elif scale == "sqrt_head":
            self.scale = 1.0 / math.sqrt(self.head_dim)
        elif isinstance(scale, (str, bool)) or not (isinstance(scale, (int, float)) and math.isfinite(scale)
                                                    and scale > 0):
            raise ValueError(f"scale must be 'width', 'sqrt_head' or a finite number > 0; got {scale!r}")
        else:
            self.scale = float(scale)
        vdim = self.head_dim if self.out_proj else width
        H, d = self.heads, self.head_dim
        self.W_Q = nn.Parameter(torch.empty(H, d, width))
        self.W_K = nn.Parameter(torch.empty(H, d, width))
        self.W_V = nn.Parameter(torch.empty(H, vdim, width))
        if self.use_bias:
            self.b_Q = nn.Parameter(torch.zeros(H, d))
            self.b_K = nn.Parameter(torch.zeros(H, d))
            self.b_V = nn.Parameter(torch.zeros(H, vdim))
        if self.out_proj:
            self.W_O = nn.Parameter(torch.empty(width, H * vdim))
            self.b_O = nn.Parameter(torch.zeros(width)) if self.use_bias else None
        self.norm1 = nn.LayerNorm(width) if layer_norm else None
        self.ffn = None
        if ffn_hidden is not None and ffn_hidden is not False and ffn_hidden != 0:
            hidden = _posint(ffn_hidden, "ffn_hidden")
            self.ffn = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, width))
            self.norm2 = nn.LayerNorm(width) if layer_norm else None
        self.reset_parameters()

    def reset_parameters(self):
        # Glorot-uniform per head, U(+-sqrt(6 / (width + d))).  The authors' Keras MultiHeadAttention
        # draws over the whole (width, heads*d) kernel instead, U(+-sqrt(6 / (width + H d))): that is
        # experiments.efa.common.keras_init (`attnlab run efa-* --setup authors`); W^O agrees with it.
        for W in (self.W_Q, self.W_K, self.W_V):
            bound = math.sqrt(6.0 / (W.shape[1] + W.shape[2]))
            nn.init.uniform_(W, -bound, bound)
        if self.out_proj:
            bound = math.sqrt(6.0 / (self.W_O.shape[0] + self.W_O.shape[1]))
            nn.init.uniform_(self.W_O, -bound, bound)

    def _proj(self, Z, W, b):
        # one (N I, width) x (width, H d) matmul, then split heads: (N, H, I, d)
        H, d, _ = W.shape
        out = Z @ W.reshape(H * d, -1).T
        if b is not None:
            out = out + b.reshape(H * d)
        return out.reshape(*Z.shape[:-1], H, d).transpose(-3, -2)

    def _check_z(self, Z) -> None:
        if not isinstance(Z, torch.Tensor) or Z.dim() != 3 or Z.shape[-1] != self.width:
            got = tuple(Z.shape) if isinstance(Z, torch.Tensor) else type(Z).__name__
            raise ValueError(f"Z must be a tensor of shape (N, I, width = {self.width}); got {got}")

    def scores(self, Z: torch.Tensor) -> torch.Tensor:
        """Scaled scores s[n, h, i, j] of context j for output i, before the mask."""
        self._check_z(Z)
        q = self._proj(Z, self.W_Q, self.b_Q if self.use_bias else None)
        k = self._proj(Z, self.W_K, self.b_K if self.use_bias else None)
        if self.orientation == "row":      # s[i, j] = q_i . k_j
            s = q @ k.transpose(-1, -2)
        else:                              # paper: S[j, i] = q_j . k_i, stored as s[i, j]
            s = k @ q.transpose(-1, -2)
        return s * self.scale

    def weights(self, Z: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Attention weights w[n, h, i, j] (rows: outputs i; columns: contexts j)."""
        s = self.scores(Z)
        N, I = Z.shape[0], Z.shape[1]
        if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool or tuple(allowed.shape) != (N, I, I):
            got = (f"{allowed.dtype} {tuple(allowed.shape)}" if isinstance(allowed, torch.Tensor)
                   else type(allowed).__name__)
            raise ValueError(f"allowed must be a bool tensor of shape (N, I, I) = ({N}, {I}, {I}); got {got}")
        return self._normalize(s, allowed[:, None])

    def _normalize(self, s, allowed):
        if self.attention == "softmax":
            w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
            return w.masked_fill(~allowed, 0.0)     # rows with no allowed context (padding) -> 0
        return s.masked_fill(~allowed, 0.0)

    def _heads_out(self, o, Z):
        """(N, H, R, vdim) head outputs -> (N, R, width) (W^O, or the sum over heads)."""
        if self.out_proj:
            o = o.transpose(1, 2).reshape(Z.shape[0], Z.shape[1], -1) @ self.W_O.T
            return o + self.b_O if self.b_O is not None else o
        return o.sum(dim=1)

    def cross(self, Zq: torch.Tensor, Zk: torch.Tensor, allowed: torch.Tensor,
              self_key: bool = False) -> torch.Tensor:
        """Outputs for the columns Zq (N, R, width) attending to the columns Zk (N, I, width)
        (allowed (N, R, I)) and, with ``self_key``, each to itself as one more context column.

        Exactly what `forward` gives for those columns when they sit among the context columns
        Zk: it lets the per-target models compute only the columns they need (the target column
        in the last layer; the [MASK] 'query stream' of a unidirectional model)."""
        bQ = self.b_Q if self.use_bias else None
        bK = self.b_K if self.use_bias else None
        bV = self.b_V if self.use_bias else None
        # output side and context side projections: row convention q_i . k_j, paper q_j . k_i
        (Wo, bo), (Wc, bc) = ((self.W_Q, bQ), (self.W_K, bK)) if self.orientation == "row" \
            else ((self.W_K, bK), (self.W_Q, bQ))
        a_out = self._proj(Zq, Wo, bo)                        # (N, H, R, d)
        c_ctx = self._proj(Zk, Wc, bc)                        # (N, H, I, d)
        s = (a_out @ c_ctx.transpose(-1, -2)) * self.scale    # (N, H, R, I)
        v = self._proj(Zk, self.W_V, bV)                      # (N, H, I, vdim)
        if self_key:
            c_self = self._proj(Zq, Wc, bc)
            s = torch.cat([s, (a_out * c_self).sum(-1, keepdim=True) * self.scale], -1)
            allowed = torch.cat([allowed, torch.ones_like(allowed[..., :1])], -1)
        w = self._normalize(s, allowed[:, None])
        if self_key:
            o = w[..., :-1] @ v + w[..., -1:] * self._proj(Zq, self.W_V, bV)
        else:
            o = w @ v
        return self._post(Zq, self._heads_out(o, Zq))

    def _post(self, Z, o):
        out = Z + o if self.residual else o
        if self.norm1 is not None:
            out = self.norm1(out)
        if self.ffn is not None:
            out = out + self.ffn(out)
            if self.norm2 is not None:
                out = self.norm2(out)
        return out

    def forward(self, Z: torch.Tensor, allowed: torch.Tensor, return_weights: bool = False):
        """Z (N, I, width); allowed (N, I, I) bool, allowed[n, i, j]: output i may see context j."""
        w = self.weights(Z, allowed)
        v = self._proj(Z, self.W_V, self.b_V if self.use_bias else None)   # (N, H, I, vdim)
        out = self._post(Z, self._heads_out(w @ v, Z))
        return (out, w) if return_weights else out


# ------------------------------------------------------------------------------------------------
# torch's calling conventions: scaled_dot_product_attention and nn.MultiheadAttention
# ------------------------------------------------------------------------------------------------
def efa_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                  scale=None, *, attention: str = "softmax", return_weights: bool = False):
    r"""The attention of Exponential Family Attention, Eq. (1), called like
    ``torch.nn.functional.scaled_dot_product_attention``.

    Per query, the weights of the keys are

    $$
    w_{ij} = \text{softmax}_j\big(\text{scale}\,\langle q_i, k_j\rangle + M_{ij}\big)
    \quad\text{(softmax)},\qquad
    w_{ij} = \text{scale}\,\langle q_i, k_j\rangle\,[M_{ij} \ne -\infty]\quad\text{(linear)},
    $$

    and the output is $\sum_j w_{ij} v_j$ (Eq. (1) reads the paper's column-wise softmax with the
    roles of $W^Q$ and $W^K$ exchanged; :class:`EFAMultiheadAttention` does that exchange).

    Args:
        query: (..., L, E); any leading dimensions (batch, heads).
        key: (..., S, E).
        value: (..., S, Ev).
        attn_mask: broadcastable to (..., L, S), as in ``scaled_dot_product_attention``: bool True where
            the query may attend, a float mask added to the scores (softmax) or ``-inf`` (or an entry at
            or below -1e4, as -1e9 and finfo.min, which softmax gives no weight) to exclude (linear).  Other dtypes raise ValueError.
        dropout_p: dropout probability on the weights (applied whenever > 0).
        is_causal: the causal (top-left aligned) mask; then attn_mask must be None.
        scale: default $1/\sqrt{E}$ (the paper's convention divides by the model width instead).
        attention: keyword-only; ``"softmax"`` or ``"linear"``.
        return_weights: keyword-only; also return the weights.

    Shape:
        - output: (..., L, Ev), in the dtype of the inputs (float16/bfloat16 computed in float32).
        - weights: (..., L, S).

    Returns:
        The output, or ``(output, weights)``.  A query with every key masked gets 0, as in SDPA.

    Example:
        >>> import torch
        >>> from attnlab.layers import efa_attention
        >>> q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
        >>> ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        >>> bool(torch.allclose(efa_attention(q, k, v), ref, atol=1e-6))
        True
    """
    batch = check_qkv(query, key, value)
    if _autocast(query):
        # float16/bfloat16 inside autocast's products (1e-2 off in float32 where the docs promise float32, and
        # not what fenchel_attention's softmax form computes there): the products in float32 as documented
        with torch.autocast(query.device.type, enabled=False):
            return efa_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, attention=attention,
                                 return_weights=return_weights)
    _choice(attention, ATTENTIONS, "attention")
    check_flag(return_weights, "return_weights")              # ("no" was truthy: a tuple came back)
    dropout_p = check_dropout(dropout_p)
    L, S = query.shape[-2], key.shape[-2]
    cdt, odt = compute_dtype(query, key, value)
    query, key, value = query.to(cdt), key.to(cdt), value.to(cdt)
    mask = additive_mask(sdpa_mask(attn_mask, is_causal, L, S, query.device, batch=batch), cdt)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else check_scale(scale)
    if L == 0 or S == 0 or 0 in batch:         # no query, or no key to attend to: 0, as in SDPA
        out, w = empty_attention(query, key, value, odt, batch, (S,))
        return (out, w) if return_weights else out
    s = scale * (query @ key.transpose(-1, -2))
    if attention == "softmax":
        if mask is not None:
            s = s + mask
            empty = torch.isneginf(s).all(-1, keepdim=True)
            s = s.masked_fill(empty, 0.0)
        w = torch.softmax(s, -1)
        if mask is not None:
            w = w.masked_fill(empty, 0.0)
    else:
        w = s if mask is None else s.masked_fill(excluded(mask), 0.0)
    if dropout_p > 0:
        w = nn.functional.dropout(w, dropout_p)
    out = (w @ value).to(odt)
    return (out, w.to(odt)) if return_weights else out


class NoOutputProjection(nn.Identity):
    """The paper convention's missing W^O (Eq. (1) sums the heads): the identity, with ``weight`` and ``bias``
    None, as torch's encoder reads ``self_attn.out_proj.weight`` before it calls the layer (None was read as a
    module and raised an AttributeError there)."""

    weight = None
    bias = None


class EFAMultiheadAttention(MultiheadAttentionBase):
    r"""The attention block of Exponential Family Attention (Eq. (1)) as a drop-in for
    ``torch.nn.MultiheadAttention``: the same constructor, masks, and ``forward`` returning
    ``(output, weights)``; it can be the ``self_attn`` / ``multihead_attn`` of torch's transformer layers.

    ``convention="standard"`` (default): MHA's parameters under MHA's names, row-wise softmax (or linear)
    attention with scale $1/\sqrt{d_h}$, the heads concatenated and projected by ``out_proj``: with
    ``attention="softmax"`` it computes exactly what ``nn.MultiheadAttention`` computes.

    ``convention="paper"``: Eq. (1) as printed,

    $$
    Z'^\top = \sum_h W^V_h Z^\top\,\text{softmax}_{\text{col}}\Big(\frac{(W^Q_h Z^\top)^\top (W^K_h Z^\top)}{E} + M\Big),
    $$

    i.e. per head full-width projections (``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``, each
    (H E, E)), scale $1/E$, the column-wise softmax (output $i$ scores context $j$ by
    $\langle W^K z_i, W^Q z_j\rangle$), the heads summed, no biases (by default) and no ``out_proj``.

    Args:
        embed_dim: model width E.
        num_heads: number of heads H.
        dropout: dropout probability on the weights (in training mode).
        bias: projection biases; default True for the standard convention, False for the paper's.
        add_bias_kv: not supported (must be False).
        add_zero_attn: not supported (must be False).
        kdim: features of key (default E).
        vdim: features of value (default E).
        batch_first: (N, L, E) if True, (L, N, E) if False (torch's default).
        device: as in torch.
        dtype: as in torch.
        attention: keyword-only; ``"softmax"`` or ``"linear"`` (the paper's two variants).
        convention: keyword-only; ``"standard"`` or ``"paper"``.

    Shape:
        - query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
        - key, value: (N, S, kdim / vdim), (S, N, ·) or (S, ·).
        - output: like query.  weights: (N, L, S), or (N, H, L, S) with ``average_attn_weights=False``.

    Example:
        >>> import torch
        >>> from attnlab.layers import EFAMultiheadAttention
        >>> attn = EFAMultiheadAttention(8, 2, batch_first=True, convention="paper")
        >>> z = torch.randn(4, 5, 8)
        >>> out, w = attn(z, z, z, attn_mask=torch.eye(5, dtype=torch.bool))   # no self-attention
        >>> out.shape, w.shape
        (torch.Size([4, 5, 8]), torch.Size([4, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, dropout: float = 0.0, bias: Optional[bool] = None,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Optional[int] = None,
                 vdim: Optional[int] = None, batch_first: bool = False, device=None, dtype=None, *,
                 attention: str = "softmax", convention: str = "standard"):
        _choice(attention, ATTENTIONS, "attention")
        _choice(convention, CONVENTIONS, "convention")
        paper = convention == "paper"
        bias = (not paper) if bias is None else bool(bias)
        self._heads_split_embed = not paper          # (Eq. (1)'s heads are full width: any H)
        super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
                         batch_first, device, dtype)
        self.attention, self.convention = attention, convention
        if paper:
            # Eq. (1): per head full-width W^Q, W^K, W^V, summed heads, no W^O
            E, H, fk = self.embed_dim, self.num_heads, {"device": device, "dtype": dtype}
            self._packed = False
            self.head_dim = E
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = nn.Parameter(torch.empty((H * E, self.kdim), **fk))    # acts on key
            self.k_proj_weight = nn.Parameter(torch.empty((H * E, E), **fk))             # acts on query
            self.v_proj_weight = nn.Parameter(torch.empty((H * E, self.vdim), **fk))
            if bias:
                self.in_proj_bias = nn.Parameter(torch.zeros(3 * H * E, **fk))
            self.out_proj = NoOutputProjection()
            self._reset_parameters()

    def _reset_parameters(self):
        if getattr(self, "convention", "standard") != "paper":
            return super()._reset_parameters()
        E = self.embed_dim
        for W in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):   # Glorot per head (see AttentionLayer)
            bound = math.sqrt(6.0 / (E + W.shape[1]))
            nn.init.uniform_(W, -bound, bound)
        if self.in_proj_bias is not None:
            nn.init.zeros_(self.in_proj_bias)

    def _project(self, x, i: int):
        if self.convention != "paper":
            return super()._project(x, i)
        # the column-wise softmax of Eq. (1): output i scores context j by <W^K z_i, W^Q z_j>, so the
        # query side is projected by W^K (bias block 1) and the key side by W^Q (bias block 0)
        j = (1, 0, 2)[i]
        w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[j]
        n = w.shape[0]
        b = None if self.in_proj_bias is None else self.in_proj_bias[j * n:(j + 1) * n]
        return nn.functional.linear(x, w, b)

    def _combine_heads(self, out):
        if self.convention != "paper":
            return super()._combine_heads(out)
        return out.sum(1)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        r"""Attention of query to key/value, as ``nn.MultiheadAttention.forward``.

        Args:
            query: (N, L, E) if batch_first, else (L, N, E); (L, E) unbatched.
            key: (N, S, kdim), (S, N, kdim) or (S, kdim).
            value: (N, S, vdim), (S, N, vdim) or (S, vdim).
            key_padding_mask: (N, S); bool True marks padding; a float mask is added (softmax; linear
                attention takes only its -inf entries and those at or below -1e4, which exclude a key).
            need_weights: also return the attention weights (else None).
            attn_mask: (L, S) or (N * num_heads, L, S); bool True = not allowed (the paper's M = -inf);
                a float mask is added (softmax; linear attention: -inf or an entry at or below -1e4 excludes,
                other entries do nothing).
            average_attn_weights: average the returned weights over the heads.
            is_causal: hint that attn_mask is causal; without attn_mask the causal mask is built.

        Returns:
            ``(output, weights)``: output like query; weights (N, L, S) (or (N, H, L, S) with
            ``average_attn_weights=False``), None when ``need_weights=False``.
        """
        return super().forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                               is_causal)

    def _attend(self, q, k, v, mask, query, need_weights):
        scale = 1.0 / self.embed_dim if self.convention == "paper" else 1.0 / math.sqrt(self.head_dim)
        return efa_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
                             scale=scale, attention=self.attention, return_weights=True)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", attention={self.attention!r}, convention={self.convention!r}"
