"""ViT and OT-ViT (Fenchel-dual attention paper, Sec 9, App. D, Tables 1-2).

OT-ViT is the ViT with its **final** transformer layer's attention replaced by the OT-based attention
(22)/(44) with cost M(a, b) = -a^T b + C, alpha = 1 and temperature gamma:

    p*(t) = sum_i u_i softmax_{t in A}( (alpha <t, z> + <t, t_i>) / gamma )            (C cancels)
    h     = sum_{t in A} p*(t) t

Reading of the paper's reparameterisation (Sec 8, Eq. 19) used here, per head h with d' = head width:
templates t = x / sqrt(d') (x = the LayerNorm'd token features entering the last layer), evidence
z = K_h^T Q_h y_cls (y_cls = the LayerNorm'd class token, "a special learnable token", which is the
query), so alpha <t, z> = <K_h x, Q_h y_cls> / sqrt(d') is the usual attention logit and <t, t_i> =
<x, x_i> / d'.  u is uniform on the input image's patch templates T; A = T, or, in training with
probability 1/2, T together with the patch templates of another image of the same class in the batch
(the paper's training trick).  The output is V' h = sum_t p*(t) V_h x_t per head, then the output
projection, residual and MLP as in a transformer layer.  Only the class token is computed in the last
layer (the classifier reads nothing else).
"""
from __future__ import annotations

import math

import torch
from torch import nn


class MLP(nn.Sequential):
    def __init__(self, dim, hidden, dropout):
        super().__init__(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim),
                         nn.Dropout(dropout))


class Block(nn.Module):
    """Pre-LN transformer layer with standard multi-head dot-product attention."""

    def __init__(self, dim, heads, mlp_dim, dropout):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.mlp = MLP(dim, mlp_dim, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, **_):
        y = self.n1(x)
        x = x + self.drop(self.attn(y, y, y, need_weights=False)[0])
        return x + self.mlp(self.n2(x))


def ot_attention_weights(qk, G, a_mask, u, gamma: float):
    """p*(t) of (22) with M = -<t, t'> + C and alpha = 1, batched.

    qk (B, H, NA): alpha <t, z> for every template t in A (per head); G (B, N, NA): <t_i, t> for the
    atoms t_i of u (rows) and the templates of A (columns); a_mask (B, NA) bool: which templates of A
    exist; u (B, N): preference weights (rows sum to 1).  Returns p* (B, H, NA), each row summing to 1.
    """
    if isinstance(gamma, bool) or not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be a finite number > 0; got {gamma!r}")      # (NaN gave NaN weights)
    s = (qk.unsqueeze(2) + G.unsqueeze(1)) / gamma                   # (B, H, N, NA): (alpha t^T z - M(t, t_i))/gamma
    s = s.masked_fill(~a_mask[:, None, None, :], -math.inf)
    return (u[:, None, :, None] * torch.softmax(s, dim=-1)).sum(2)    # sum_i u_i softmax_t(...)


class OTAttention(nn.Module):
    """Multi-head OT-based attention (22) for one query (the class token)."""

    def __init__(self, dim, heads, dropout, gamma: float):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads; got {dim} and {heads}")
        self.dim, self.heads, self.dh, self.gamma = dim, heads, dim // heads, float(gamma)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, y, xa, a_mask, n_atoms: int):
        """y (B, D): the query's input; xa (B, NA, D): templates' inputs, the first n_atoms of them the
        input image's (supp u); a_mask (B, NA) bool.  Returns (B, D)."""
        B, NA, D = xa.shape
        q = self.q(y).view(B, self.heads, 1, self.dh)
        k = self.k(xa).view(B, NA, self.heads, self.dh).transpose(1, 2)      # (B, H, NA, dh)
        v = self.v(xa).view(B, NA, self.heads, self.dh).transpose(1, 2)
        qk = (q @ k.transpose(-1, -2)).squeeze(2) / math.sqrt(self.dh)        # alpha <t, z>, alpha = 1
        G = xa[:, :n_atoms] @ xa.transpose(1, 2) / self.dh                   # <t_i, t> with t = x / sqrt(d')
        u = torch.full((B, n_atoms), 1.0 / n_atoms, dtype=xa.dtype, device=xa.device)
        p = self.drop(ot_attention_weights(qk, G, a_mask, u, self.gamma))    # (B, H, NA)
        out = (p.unsqueeze(2) @ v).squeeze(2).reshape(B, D)
        return self.o(out)


class OTBlock(nn.Module):
    """The final layer of OT-ViT: OT attention for the class token, residual, MLP."""

    def __init__(self, dim, heads, mlp_dim, dropout, gamma):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = OTAttention(dim, heads, dropout, gamma)
        self.mlp = MLP(dim, mlp_dim, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, partner=None):
        """x (B, 1 + N, D) with the class token first; partner (B,) long: index in the batch of a
        same-class image whose patch templates join A, or -1 (None: no extra templates)."""
        y = self.n1(x)
        cls, patches = y[:, 0], y[:, 1:]
        B, N, _ = patches.shape
        xa, a_mask = patches, torch.ones(B, N, dtype=torch.bool, device=x.device)
        if partner is not None and (partner.shape != (x.shape[0],) or int(partner.max()) >= x.shape[0]
                                    or int(partner.min()) < -1):      # (an IndexError)
            raise ValueError(f"partner must have shape ({x.shape[0]},) and hold batch indices in [0, {x.shape[0] - 1}] "
                             "or -1 (none)")
        if partner is not None and bool((partner >= 0).any()):
            extra = patches[partner.clamp(min=0)]
            xa = torch.cat([patches, extra], 1)
            a_mask = torch.cat([a_mask, (partner >= 0)[:, None].expand(B, N)], 1)
        c = x[:, 0] + self.drop(self.attn(cls, xa, a_mask, N))
        c = c + self.mlp(self.n2(c))
        return c[:, None]


class ViT(nn.Module):
    """A ViT (Dosovitskiy et al. 2021): patch embedding, class token, learned positions, pre-LN
    layers, classifier on the class token.  ``ot=True`` makes the last layer an :class:`OTBlock`.
    Dropout 0.2 by default (the paper's, Sec 9); the positions start N(0, 0.02^2), the class token 0."""

    def __init__(self, image_size: int, patch: int, channels: int, n_classes: int, dim: int = 64,
                 depth: int = 4, heads: int = 4, mlp_dim: int = 128, dropout: float = 0.2,
                 ot: bool = False, gamma: float | None = None):
        super().__init__()
        from attnlab.numerics.efa_attention import _posint

        for name, value in (("image_size", image_size), ("patch", patch), ("channels", channels), ("dim", dim),
                            ("depth", depth), ("heads", heads), ("mlp_dim", mlp_dim)):
            _posint(value, name)                # (patch 0 was a ZeroDivisionError)
        _posint(n_classes, "n_classes", 2)
        if image_size % patch:
            raise ValueError(f"image_size must be divisible by patch; got {image_size} and {patch}")
        if dim % heads:                          # (an AssertionError of nn.MultiheadAttention without ot)
            raise ValueError(f"dim must be divisible by heads; got {dim} and {heads}")
        if gamma is not None and (isinstance(gamma, bool) or not isinstance(gamma, (int, float))
                                  or not math.isfinite(gamma) or gamma <= 0):
            raise ValueError(f"gamma must be a finite number > 0 (None: sqrt(mlp_dim)); got {gamma!r}")
        n = (image_size // patch) ** 2
        self.ot = ot
        self.embed = nn.Conv2d(channels, dim, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_dim, dropout) for _ in range(depth - 1))
        self.last = (OTBlock(dim, heads, mlp_dim, dropout, math.sqrt(mlp_dim) if gamma is None else gamma) if ot
                     else Block(dim, heads, mlp_dim, dropout))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, img, partner=None):
        x = self.embed(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.drop(x)
        for b in self.blocks:
            x = b(x)
        x = self.last(x, partner=partner) if self.ot else self.last(x)
        return self.head(self.norm(x[:, 0]))


def same_class_partners(labels: torch.Tensor, prob: float, generator: torch.Generator) -> torch.Tensor:
    """For each sample, with probability `prob`, a random other sample of the batch with the same
    label (-1 when not drawn or when none exists).

    The draw, in this order from `generator`: U = rand(B, B), and sample i's candidate is the j != i with
    labels[j] == labels[i] that maximises U[i, j] (uniform among them); then rand(B) < prob keeps it."""
    B = labels.shape[0]
    same = (labels[:, None] == labels[None, :]) & ~torch.eye(B, dtype=torch.bool)
    score = torch.rand(B, B, generator=generator).masked_fill(~same, -1.0)
    best, idx = score.max(1)
    draw = torch.rand(B, generator=generator) < prob
    return torch.where(draw & (best >= 0), idx, torch.full_like(idx, -1))
