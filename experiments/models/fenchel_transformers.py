"""Small BERT-like and T5-like transformers for the Fenchel-dual deviation experiment (Figs 4-8).

They are **substitutes** for the pretrained bert-base and t5-small of the paper (Sec 8), which cannot
be downloaded offline.  They keep the parts of the architectures that enter the paper's
reparameterisation of attention as (16) (Sec 8, Eq. 19):

- ``BertLike``: post-LayerNorm encoder, learned absolute positions, Q/K/V with bias, logits
  <K x_i, Q x_k>/sqrt(d'), trained by masked-language modelling.  The self-attention input x_i is
  the previous layer's LayerNorm output (docs/instances.md, attention heads).
- ``T5Like``: pre-RMSNorm encoder-decoder, no bias in projections, **no 1/sqrt(d') scaling**, a
  bucketed relative-position bias (32 buckets, max distance 128; bidirectional in the encoder,
  causal in the decoder) computed once and shared by all layers of a stack, no position bias in
  cross-attention; trained by span corruption.  log u = the relative-position bias + the mask
  (Eqs. 17-18).

Every attention module can *capture* what the deviation measurement needs: the normalised query
and key inputs and the additive logit term (position bias and masks), see :class:`Attention`.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def _sizes(**kw) -> None:
    """Each a whole number >= 1, or a ValueError naming it (n_heads = 0 was a ZeroDivisionError, vocab = 0 and
    n_layers = -1 built empty models)."""
    from attnlab.numerics.efa_attention import _posint

    for name, value in kw.items():
        _posint(value, name)


class Attention(nn.Module):
    """Multi-head attention: logits_h = <K_h x_i + b_K, Q_h y_k + b_Q> * scale + add_h[k, i].

    ``scale`` is 1/sqrt(d') (BERT) or 1 (T5).  When ``self.capture`` is a list, each forward call
    appends ``{"xq", "xk", "add"}``: the query-side input y (B, Lq, D), the key-side input x
    (B, Lk, D) and the additive logit term (B|1, H|1, Lq, Lk) with -inf on excluded atoms, all
    detached.  That is everything needed to rebuild t_i, z and u of (16) for every head.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool, scaled: bool, dropout: float = 0.0):
        super().__init__()
        _sizes(d_model=d_model, n_heads=n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads; got {d_model} and {n_heads}")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, d_model, bias=bias)
        self.v = nn.Linear(d_model, d_model, bias=bias)
        self.o = nn.Linear(d_model, d_model, bias=bias)
        self.scale = 1.0 / math.sqrt(self.d_head) if scaled else 1.0
        self.drop = nn.Dropout(dropout)
        self.capture: list | None = None

    def split(self, x):
        B, L, _ = x.shape
        return x.view(B, L, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, y, x, add):
        """y: queries' inputs (B, Lq, D); x: keys' inputs (B, Lk, D); add: additive logit term."""
        if self.capture is not None:
            self.capture.append({"xq": y.detach(), "xk": x.detach(), "add": add.detach()})
        q, k, v = self.split(self.q(y)), self.split(self.k(x)), self.split(self.v(x))
        logits = (q @ k.transpose(-1, -2)) * self.scale + add
        # a query with every key excluded (a left-padded target under the causal mask: its first row) attends
        # to nothing and gives 0, as SDPA; its softmax of -inf's was NaN, which the next layer spread to
        # every position
        none = torch.isneginf(logits).all(-1, keepdim=True)
        a = torch.softmax(logits.masked_fill(none, 0.0), dim=-1).masked_fill(none, 0.0)
        a = self.drop(a)
        out = (a @ v).transpose(1, 2).reshape(y.shape[0], y.shape[1], self.d_model)
        return self.o(out)

    def head_weights(self, h: int):
        """(W_Q, b_Q, W_K) of head h: W_Q, W_K of shape (d', D); b_Q of shape (d',) (zeros if no bias)."""
        s = slice(h * self.d_head, (h + 1) * self.d_head)
        bq = self.q.bias[s] if self.q.bias is not None else torch.zeros(self.d_head, dtype=self.q.weight.dtype)
        return self.q.weight[s], bq, self.k.weight[s]


# --------------------------------------------------------------------------- BERT-like
class _BertLayer(nn.Module):
    def __init__(self, d, h, ff, dropout):
        super().__init__()
        self.attn = Attention(d, h, bias=True, scaled=True, dropout=dropout)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, add):
        x = self.ln1(x + self.drop(self.attn(x, x, add)))        # post-LN as in BERT
        return self.ln2(x + self.drop(self.ff(x)))


class BertLike(nn.Module):
    """A small BERT: embeddings + LayerNorm, post-LN encoder layers, an MLM head.  The defaults are the
    deviation experiment's full configuration (width 64, 4 heads, 4 layers, feed-forward 128, sentences of
    up to 32 words plus [CLS] and [SEP])."""

    def __init__(self, vocab: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 4,
                 d_ff: int = 128, max_len: int = 34, dropout: float = 0.1):
        super().__init__()
        _sizes(vocab=vocab, d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, max_len=max_len)
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.ln = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(_BertLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.head = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model),
                                  nn.Linear(d_model, vocab))

    def attentions(self):
        return {f"layer{i + 1}": layer.attn for i, layer in enumerate(self.layers)}

    def forward(self, ids, pad_mask, only=None):
        """ids (B, L) int; pad_mask (B, L) bool, True on real tokens.  Returns MLM logits (B, L, V),
        or (P, V) at the positions where the bool mask `only` is True (saves the vocabulary head)."""
        L, V = ids.shape[1], self.tok.num_embeddings
        if L > self.pos.num_embeddings:          # (an IndexError of the position embedding)
            raise ValueError(f"ids has {L} positions; this model takes at most max_len = {self.pos.num_embeddings}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= V):
            raise ValueError(f"ids must lie in [0, {V - 1}]; got range [{int(ids.min())}, {int(ids.max())}]")
        x = self.drop(self.ln(self.tok(ids) + self.pos(torch.arange(L, device=ids.device))))
        add = torch.zeros(pad_mask.shape, dtype=x.dtype, device=x.device).masked_fill(~pad_mask, -math.inf)
        add = add[:, None, None, :]                                      # (B, 1, 1, Lk)
        for layer in self.layers:
            x = layer(x, add)
        return self.head(x if only is None else x[only])


# --------------------------------------------------------------------------- T5-like
class RMSNorm(nn.Module):
    """T5's LayerNorm: scale only, no mean subtraction, no bias."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def relative_position_bucket(rel: torch.Tensor, bidirectional: bool, num_buckets: int = 32,
                             max_distance: int = 128) -> torch.Tensor:
    """T5's bucketing of rel = key position - query position (Raffel et al. 2020; as in the
    reference T5 code): exact buckets for small distances, logarithmic ones up to max_distance."""
    ret = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = -torch.clamp(rel, max=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return ret + torch.where(is_small, n, large)


class RelativePositionBias(nn.Module):
    def __init__(self, n_heads, bidirectional, num_buckets=32, max_distance=128):
        super().__init__()
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.emb = nn.Embedding(num_buckets, n_heads)

    def forward(self, Lq, Lk, device):
        ctx = torch.arange(Lq, device=device)[:, None]
        mem = torch.arange(Lk, device=device)[None, :]
        b = relative_position_bucket(mem - ctx, self.bidirectional, self.num_buckets, self.max_distance)
        return self.emb(b).permute(2, 0, 1)[None]                        # (1, H, Lq, Lk)


class _T5FF(nn.Module):
    def __init__(self, d, ff, dropout):
        super().__init__()
        self.wi, self.wo = nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.wo(self.drop(F.relu(self.wi(x))))


class _T5EncLayer(nn.Module):
    def __init__(self, d, h, ff, dropout):
        super().__init__()
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.attn = Attention(d, h, bias=False, scaled=False, dropout=dropout)
        self.ff = _T5FF(d, ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, add):
        y = self.n1(x)
        x = x + self.drop(self.attn(y, y, add))
        return x + self.drop(self.ff(self.n2(x)))


class _T5DecLayer(nn.Module):
    def __init__(self, d, h, ff, dropout):
        super().__init__()
        self.n1, self.n2, self.n3 = RMSNorm(d), RMSNorm(d), RMSNorm(d)
        self.self_attn = Attention(d, h, bias=False, scaled=False, dropout=dropout)
        self.cross_attn = Attention(d, h, bias=False, scaled=False, dropout=dropout)
        self.ff = _T5FF(d, ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, enc, self_add, cross_add):
        y = self.n1(x)
        x = x + self.drop(self.self_attn(y, y, self_add))
        x = x + self.drop(self.cross_attn(self.n2(x), enc, cross_add))
        return x + self.drop(self.ff(self.n3(x)))


class T5Like(nn.Module):
    """A small T5: shared embedding, pre-RMSNorm encoder/decoder stacks, relative position bias.  The
    defaults are the deviation experiment's full configuration (width 64, 4 heads, 3 layers per stack,
    feed-forward 128)."""

    def __init__(self, vocab: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 3,
                 d_ff: int = 128, dropout: float = 0.1):
        super().__init__()
        _sizes(vocab=vocab, d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff)
        self.emb = nn.Embedding(vocab, d_model)
        self.enc_bias = RelativePositionBias(n_heads, bidirectional=True)
        self.dec_bias = RelativePositionBias(n_heads, bidirectional=False)
        self.enc = nn.ModuleList(_T5EncLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.dec = nn.ModuleList(_T5DecLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.enc_norm, self.dec_norm = RMSNorm(d_model), RMSNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def attentions(self):
        out = {}
        for i, layer in enumerate(self.enc):
            out[f"enc-self/layer{i + 1}"] = layer.attn
        for i, layer in enumerate(self.dec):
            out[f"dec-self/layer{i + 1}"] = layer.self_attn
        for i, layer in enumerate(self.dec):
            out[f"cross/layer{i + 1}"] = layer.cross_attn
        return out

    def forward(self, src, src_mask, tgt_in, tgt_mask):
        """src (B, Ls), tgt_in (B, Lt) int; masks bool, True on real tokens.  Returns logits (B, Lt, V)."""
        dev = src.device
        Ls, Lt = src.shape[1], tgt_in.shape[1]
        x = self.drop(self.emb(src))
        pad_s = torch.zeros(src_mask.shape, dtype=x.dtype, device=dev).masked_fill(~src_mask, -math.inf)
        enc_add = self.enc_bias(Ls, Ls, dev) + pad_s[:, None, None, :]
        for layer in self.enc:
            x = layer(x, enc_add)
        enc = self.drop(self.enc_norm(x))
        y = self.drop(self.emb(tgt_in))
        causal = torch.full((Lt, Lt), -math.inf, device=dev).triu(1)
        pad_t = torch.zeros(tgt_mask.shape, dtype=y.dtype, device=dev).masked_fill(~tgt_mask, -math.inf)
        dec_add = self.dec_bias(Lt, Lt, dev) + causal[None, None] + pad_t[:, None, None, :]
        cross_add = pad_s[:, None, None, :]                               # no position bias (as in T5)
        for layer in self.dec:
            y = layer(y, enc, dec_add, cross_add)
        return self.lm_head(self.drop(self.dec_norm(y)))
