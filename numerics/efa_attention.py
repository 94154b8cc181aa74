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

__all__ = ["AttentionLayer", "ATTENTIONS", "CONVENTIONS"]

ATTENTIONS = ("softmax", "linear")
CONVENTIONS = ("paper", "standard")


def _choice(value, allowed, name):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


def _posint(value, name, minimum=1):
    if isinstance(value, bool) or int(value) != value or value < minimum:
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
        if ffn_hidden:
            self.ffn = nn.Sequential(nn.Linear(width, int(ffn_hidden)), nn.ReLU(),
                                     nn.Linear(int(ffn_hidden), width))
            self.norm2 = nn.LayerNorm(width) if layer_norm else None
        self.reset_parameters()

    def reset_parameters(self):
        # Glorot-uniform as Keras' Dense/MultiHeadAttention kernels
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

    def scores(self, Z: torch.Tensor) -> torch.Tensor:
        """Scaled scores s[n, h, i, j] of context j for output i, before the mask."""
        q = self._proj(Z, self.W_Q, self.b_Q if self.use_bias else None)
        k = self._proj(Z, self.W_K, self.b_K if self.use_bias else None)
        if self.orientation == "row":      # s[i, j] = q_i . k_j
            s = q @ k.transpose(-1, -2)
        else:                              # paper: S[j, i] = q_j . k_i, stored as s[i, j]
            s = k @ q.transpose(-1, -2)
        return s * self.scale

    def weights(self, Z: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Attention weights w[n, h, i, j] (rows: outputs i; columns: contexts j)."""
        return self._normalize(self.scores(Z), allowed[:, None])

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
