"""Networks of the kernel paper's experiments (Moreno et al., NeurIPS 2022), built on
:mod:`attnlab.numerics.continuous_layers`, plus the LSTM-FCN and transformer baselines.

- :class:`TimeWarpingNet` -- Sec. 6.1 / App. B.3: MLP encoder, two heads (one per class), logits
  <p_ik, V> with V the ridge fit of the observed curve.
- :class:`SeriesAttentionNet` -- Fig. 11 (FordA App. G, MIT-BIH App. I): two conv layers -> LSTM ->
  discrete scores -> attention -> 3-layer feed-forward classifier.
- :class:`GestureNet` -- App. H.1 (uWave): value function fitted at irregular observation times,
  conv/max-pool/dense encoder of V on a reference grid, H heads with a shared value function.
- :class:`SentenceNet` -- Sec. 6.4 (IMDB, after Martins et al.'s BiLSTM + continuous attention).
- :class:`LSTMFCN` (Karim et al. 2017) and :class:`TransformerClassifier` (a small TST-style encoder).
"""
from __future__ import annotations

import torch
import torch.nn.functional as Fn
from torch import nn

from attnlab.numerics import kernel_layer_math as km
from attnlab.numerics.continuous_layers import (ATTENTIONS, ContinuousAttention, GaussianBasis,
                                                     moments_from_discrete, ridge_value_coefficients)


def _sizes(**kw) -> None:
    """Each keyword a whole number >= its minimum (n_classes 2, ref_points 6: conv of 5 taps and a pool of 2,
    else 1), or a ValueError naming it: length 0 was a ZeroDivisionError, 20.7 read as 20, heads = 0 or
    n_classes = 0 built zero-width layers."""
    from attnlab.numerics.efa_attention import _posint

    for name, value in kw.items():
        _posint(value, name, {"n_classes": 2, "ref_points": 6}.get(name, 1))


def _check_series(x, length: int, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != length or not x.is_floating_point():
        raise ValueError(f"{name} must be a float tensor of shape (batch, {length}); got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")


def _check_kind(kind: str, allowed=ATTENTIONS) -> None:
    if kind not in allowed:
        raise ValueError(f"kind must be one of {', '.join(allowed)}; got {kind!r}")


def _positive(x: torch.Tensor, floor: float = 1e-4) -> torch.Tensor:
    return Fn.softplus(x) + floor


def ridge_operator(t: torch.Tensor, basis: GaussianBasis, lam: float) -> torch.Tensor:
    """G = F^T (F F^T + lam I)^{-1} [L, N] for fixed observation times t [L], so that B = H G (Eq. 6)."""
    L = t.numel()
    return ridge_value_coefficients(torch.eye(L, dtype=t.dtype).unsqueeze(0), t, basis, lam)[0]


# --------------------------------------------------------------------------- time warping
class TimeWarpingNet(nn.Module):
    """Two heads; logit_k = <p_k, V> = B E_{p_k}[Psi] with V the ridge fit of the observed curve.

    ``setup``: 'ours' (the committed records) observes the curve at t = linspace(0, 1, L), ends the
    encoder with a ReLU and puts mu through a sigmoid (so mu lies in the support [0, 1]); 'authors' is
    the released time-warping code: the midpoints t_i = (i - 1/2)/L, no ReLU after the encoder's last
    layer, mu unconstrained.  Both draw the same parameters from the same seed."""

    SETUPS = ("ours", "authors")

    def __init__(self, kind: str, length: int = 95, n_basis: int = 64, n_inducing: int = 128,
                 grid_size: int = 100, hidden: int = 128, kernel: str = "laplace", bandwidth: float = 0.05,
                 ridge: float = 0.01, sigmas=(0.1, 0.5), setup: str = "ours"):
        super().__init__()
        _check_kind(kind, ATTENTIONS[1:3] + ATTENTIONS[4:])
        if setup not in self.SETUPS:
            raise ValueError(f"setup must be one of {', '.join(self.SETUPS)}; got {setup!r}")
        self.kind, self.heads, self.setup, self.ridge = kind, 2, setup, float(ridge)
        self.basis = GaussianBasis(n_basis, sigmas)
        if setup == "authors":
            t = (torch.arange(length, dtype=torch.get_default_dtype()) + 0.5) / length
        else:
            t = torch.linspace(0.0, 1.0, length)
        self.register_buffer("G", ridge_operator(t, self.basis, ridge))
        last = [nn.ReLU()] if setup == "ours" else []
        self.length = length
        self.encoder = nn.Sequential(nn.Linear(length, hidden), nn.ReLU(), nn.Linear(hidden, hidden), *last)
        # (mu, sigma^2) per head: the unimodal densities and kernel softmax's Gaussian base density.
        # Kernel sparsemax has no base density here (as the released code) and does not use them; they
        # are still built so that parameter initialisation (and so the committed records) reproduce.
        self.mu = nn.Linear(hidden, 2)
        self.sigma2 = nn.Linear(hidden, 2)
        base = "gaussian" if kind == "kernel_softmax" else "none"    # as the released time-warping code
        self.attn = ContinuousAttention(kind, self.basis, grid_size, n_inducing, kernel, bandwidth, base=base)
        self.gamma = nn.Linear(hidden, 2 * n_inducing) if kind.startswith("kernel") else None

    def params(self, x):
        _check_series(x, self.length)           # (another length was a matmul error from inside the encoder)
        z = self.encoder(x)
        mu = torch.sigmoid(self.mu(z)) if self.setup == "ours" else self.mu(z)
        s2 = _positive(self.sigma2(z), 1e-3)
        gamma = self.gamma(z).view(x.shape[0], 2, -1) if self.gamma is not None else None
        return dict(gamma=gamma, mu=mu, sigma2=s2)

    def forward(self, x):
        r = self.attn(**self.params(x))                               # [b, 2, N]
        # logit_k = r_k B^T with B = x G: taken as (r G^T) x, without forming B
        return ((r @ self.G.T) @ x.unsqueeze(-1)).squeeze(-1)         # [b, 2]

    def density(self, x):
        return self.attn.density(**self.params(x))


# --------------------------------------------------------------------------- FordA / ECG (Fig. 11)
class SeriesAttentionNet(nn.Module):
    """conv(1->24,5) ReLU conv(24->24,5) ReLU -> LayerNorm -> LSTM(hidden) -> LayerNorm -> additive
    scores s_t -> attention -> FF(hidden->256->128->C).  Discrete softmax pools the states with
    softmax(s); unimodal densities take mu, sigma^2 from the discrete attention (App. I); the Gaussian
    mixture reads its parameters from the discretely pooled state; kernel methods use gamma_t = s_t at
    I = L inducing points (as in the released FordA code).  Value function: ridge fit of the LSTM states.

    ``setup``: 'ours' (the committed records) takes the discrete moments mu, sigma^2 of the unimodal
    densities over positions linspace(0, 1, L) (quati's); 'authors' over l/L, l = 1..L (the released
    FordA code's).  Both draw the same parameters from the same seed."""

    SETUPS = ("ours", "authors")

    def __init__(self, kind: str, length: int, n_classes: int, hidden: int = 128, n_basis: int = 256,
                 grid_size: int | None = None, kernel: str = "laplace", bandwidth: float | None = None,
                 ridge: float = 0.5, sigmas=(0.025, 0.1, 0.5), mixture_components: int = 10, setup: str = "ours"):
        super().__init__()
        _check_kind(kind)
        _sizes(length=length, n_classes=n_classes, hidden=hidden, n_basis=n_basis, mixture_components=mixture_components)
        if setup not in self.SETUPS:
            raise ValueError(f"setup must be one of {', '.join(self.SETUPS)}; got {setup!r}")
        self.kind, self.length, self.setup = kind, int(length), setup
        self.conv = nn.Sequential(nn.Conv1d(1, 24, 5, padding="same"), nn.ReLU(),
                                  nn.Conv1d(24, 24, 5, padding="same"), nn.ReLU())
        self.lstm = nn.LSTM(24, hidden, batch_first=True)
        self.score = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.head = nn.Sequential(nn.Linear(hidden, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                  nn.Linear(128, n_classes))
        self.attn = None
        if kind != "discrete_softmax":
            self.basis = GaussianBasis(n_basis, sigmas)
            L = self.length
            t = torch.linspace(1.0 / (2 * L), 1.0 - 1.0 / (2 * L), L)
            self.register_buffer("G", ridge_operator(t, self.basis, ridge))
            self.attn = ContinuousAttention(kind, self.basis, grid_size or L, L, kernel,
                                            bandwidth or 1.0 / L)
        self.K = mixture_components
        self.mix = nn.Linear(hidden, 3 * mixture_components) if kind == "gaussian_mixture" else None

    def states(self, x):
        _check_series(x, self.length)           # (discrete softmax took any length without a word)
        z = self.conv(x.unsqueeze(1)).transpose(1, 2)                 # [b, L, 24]
        z = Fn.layer_norm(z, z.shape[-1:])
        h, _ = self.lstm(z)
        return Fn.layer_norm(h, h.shape[-1:])                         # [b, L, hidden]

    def attention_params(self, h):
        s = self.score(h).squeeze(-1)                                 # [b, L]
        p = torch.softmax(s, -1)
        if self.kind in ("discrete_softmax", "cts_softmax", "cts_sparsemax"):
            mu, s2 = moments_from_discrete(p, "index" if self.setup == "authors" else "linspace")
            return p, dict(mu=mu[:, None], sigma2=s2[:, None])
        if self.kind == "gaussian_mixture":
            pooled = (p.unsqueeze(-1) * h).sum(1)
            w, m, v = self.mix(pooled).view(-1, 3, self.K).unbind(1)
            return p, dict(weights_logits=w[:, None], mu=torch.sigmoid(m)[:, None],
                           sigma2=_positive(v, 1e-3)[:, None])
        return p, dict(gamma=s[:, None])                              # kernel: gamma_t = s_t

    def context(self, h):
        p, prm = self.attention_params(h)
        if self.kind == "discrete_softmax":
            return (p.unsqueeze(-1) * h).sum(1)
        r = self.attn(**prm)                                          # [b, 1, N]
        # c = r B^T with B = h^T G [b, hidden, N]: taken as (r G^T) h, O(L N + L hidden) per
        # example instead of O(hidden L N) for forming B
        return ((r @ self.G.T) @ h).squeeze(1)                        # [b, hidden]

    def forward(self, x):
        return self.head(self.context(self.states(x)))

    def density(self, x):
        """Attention density on the grid [b, G] (the discrete weights for discrete softmax)."""
        p, prm = self.attention_params(self.states(x))
        if self.kind == "discrete_softmax":
            return p
        return self.attn.density(**prm)[:, 0]


# --------------------------------------------------------------------------- uWave / gestures (App. H.1)
class GestureNet(nn.Module):
    """Irregularly sampled series (x, t, mask) -> ridge value function V = B Psi (App. H.1) ->
    V on a reference grid -> conv(1->4,5) ReLU maxpool(2) -> dense(256) ReLU -> v -> per head h:
    mu_h = sigmoid(w_h1^T v), sigma_h = softplus(w_h2^T v), gamma_h = W_h v (I inducing points) ->
    c_h = E_{p_h}[V] -> linear classifier on (c_1..c_H)."""

    def __init__(self, kind: str, n_classes: int, heads: int = 100, n_basis: int = 64, n_inducing: int = 256,
                 grid_size: int = 100, ref_points: int = 945, hidden: int = 256, kernel: str = "gaussian",
                 bandwidth: float = 0.01, ridge: float = 0.01, sigmas=(0.03, 0.1), mixture_components: int = 100):
        super().__init__()
        _check_kind(kind, ATTENTIONS[1:])
        _sizes(n_classes=n_classes, heads=heads, n_basis=n_basis, n_inducing=n_inducing, grid_size=grid_size,
               ref_points=ref_points, hidden=hidden, mixture_components=mixture_components)
        self.kind, self.heads, self.ridge = kind, int(heads), float(ridge)
        self.basis = GaussianBasis(n_basis, sigmas)
        self.register_buffer("psi_ref", self.basis(torch.linspace(0.0, 1.0, ref_points)))   # [N, R]
        self.conv = nn.Conv1d(1, 4, 5)
        self.dense = nn.Linear(4 * ((ref_points - 4) // 2), hidden)
        H = self.heads
        self.mu = nn.Linear(hidden, H) if kind != "gaussian_mixture" else None
        self.sigma = nn.Linear(hidden, H) if kind != "gaussian_mixture" else None
        base = "gaussian" if kind.startswith("kernel") else "none"   # App. H.1: Gaussian base term
        self.attn = ContinuousAttention(kind, self.basis, grid_size, n_inducing, kernel, bandwidth, base=base)
        self.gamma = nn.Linear(hidden, H * n_inducing) if kind.startswith("kernel") else None
        self.K = mixture_components
        self.mix = nn.Linear(hidden, H * 3 * mixture_components) if kind == "gaussian_mixture" else None
        self.classifier = nn.Linear(H, n_classes)

    def value_coefficients(self, x, t, mask):
        return ridge_value_coefficients(x.unsqueeze(1), t, self.basis, self.ridge, mask)   # [b, 1, N]

    def params(self, B):
        v_ref = B @ self.psi_ref                                      # [b, 1, R]
        z = Fn.max_pool1d(torch.relu(self.conv(v_ref)), 2).flatten(1)
        v = torch.relu(self.dense(z))
        b, H = v.shape[0], self.heads
        if self.kind == "gaussian_mixture":
            w, m, s = self.mix(v).view(b, H, 3, self.K).unbind(2)
            return dict(weights_logits=w, mu=torch.sigmoid(m), sigma2=_positive(s, 1e-2) ** 2)
        prm = dict(mu=torch.sigmoid(self.mu(v)), sigma2=_positive(self.sigma(v), 1e-2) ** 2)
        if self.gamma is not None:
            prm["gamma"] = self.gamma(v).view(b, H, -1)
        return prm

    def forward(self, x, t, mask):
        B = self.value_coefficients(x, t, mask)
        r = self.attn(**self.params(B))                               # [b, H, N]
        c = (r @ B.transpose(1, 2)).squeeze(-1)                       # [b, H]
        return self.classifier(c)

    def density(self, x, t, mask):
        return self.attn.density(**self.params(self.value_coefficients(x, t, mask)))


# --------------------------------------------------------------------------- sentences (Sec. 6.4)
class SentenceNet(nn.Module):
    """Embedding -> BiLSTM -> additive scores -> attention over token positions -> linear classifier.
    Positions of a sentence of length n are (l + 1/2)/n; the value function is the ridge fit of the
    BiLSTM states (Martins et al.).  Unimodal densities take mu, sigma^2 from the discrete attention;
    kernel families use I inducing points, a Gaussian kernel, weights gamma = W (discretely pooled state)
    and a base density (Gaussian for kernel softmax, truncated parabola for kernel sparsemax: "alpha = 2
    in exponential and multiplication terms", Table 4 caption).  The defaults are the full config of the
    sentiment experiment: Martins et al.'s embeddings of 300 and BiLSTM of 128 per direction, N = 32 (Table 4's
    first column), I = 10 inducing points, bandwidth sqrt(0.01), a grid of 100."""

    def __init__(self, kind: str, vocab_size: int, n_classes: int = 2, embed: int = 300, hidden: int = 128,
                 n_basis: int = 32, n_inducing: int = 10, grid_size: int = 100, bandwidth: float = 0.1,
                 ridge: float = 0.1, sigmas=(0.1, 0.5)):
        super().__init__()
        _check_kind(kind, ("discrete_softmax",) + ATTENTIONS[1:3] + ATTENTIONS[4:])
        _sizes(vocab_size=vocab_size, n_classes=n_classes, embed=embed, hidden=hidden, n_basis=n_basis,
               n_inducing=n_inducing, grid_size=grid_size)
        self.kind, self.ridge = kind, float(ridge)
        self.embed = nn.Embedding(vocab_size, embed, padding_idx=0)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
        self.score = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.out = nn.Linear(2 * hidden, n_classes)
        self.attn = None
        if kind != "discrete_softmax":
            self.basis = GaussianBasis(n_basis, sigmas)
            base = {"kernel_softmax": "gaussian", "kernel_sparsemax": "parabola"}.get(kind, "none")
            self.attn = ContinuousAttention(kind, self.basis, grid_size, n_inducing, "gaussian", bandwidth, base=base)
            self.gamma = nn.Linear(2 * hidden, n_inducing) if kind.startswith("kernel") else None

    def forward(self, tokens, lengths):
        """tokens (B, L) ids (0 = padding, after the words), lengths (B,) the words per sentence, >= 1."""
        V = self.embed.num_embeddings
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2 or tokens.is_floating_point():
            raise ValueError("tokens must be an integer tensor of shape (batch, L)")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= V):
            raise ValueError(f"tokens must hold ids in [0, {V - 1}]; got range [{int(tokens.min())}, {int(tokens.max())}]")
        if (not isinstance(lengths, torch.Tensor) or lengths.shape != tokens.shape[:1]
                or not torch.equal(lengths.to(tokens.device).long(), (tokens != 0).sum(1))
                or bool((lengths < 1).any())):
            raise ValueError("lengths must be a (batch,) tensor of each sentence's number of (non-zero) tokens, "
                             "each >= 1 (an empty sentence has no positions to attend to)")
        tokens = tokens[:, :int(lengths.max())]                       # drop all-padding columns of this batch
        mask = tokens != 0
        h, _ = self.lstm(self.embed(tokens))                          # [b, L, 2h]
        s = self.score(h).squeeze(-1).masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, -1)
        pooled = (p.unsqueeze(-1) * h).sum(1)
        if self.kind == "discrete_softmax":
            return self.out(pooled)
        L = tokens.shape[1]
        n = lengths.to(h.dtype).unsqueeze(1)
        pos = (torch.arange(L, dtype=h.dtype, device=h.device).unsqueeze(0) + 0.5) / n
        # discrete moments at the same positions the value function uses
        mu = (p * pos).sum(-1)
        s2 = ((p * pos ** 2).sum(-1) - mu ** 2).clamp_min(1e-4)
        B = ridge_value_coefficients(h.transpose(1, 2), pos.clamp(max=1.0), self.basis, self.ridge, mask)
        prm = dict(mu=mu[:, None], sigma2=s2[:, None])
        if self.kind.startswith("kernel"):
            prm["gamma"] = self.gamma(pooled)[:, None]
        r = self.attn(**prm)                                          # [b, 1, N]
        return self.out((r @ B.transpose(1, 2)).squeeze(1))


# --------------------------------------------------------------------------- baselines
class LSTMFCN(nn.Module):
    """LSTM-FCN (Karim et al. 2017): an LSTM branch on the dimension-shuffled series (one step with
    L features) and a fully convolutional branch (128/256/128 filters, kernels 8/5/3, BN, ReLU, GAP),
    concatenated -> linear."""

    def __init__(self, length: int, n_classes: int, lstm_units: int = 8, dropout: float = 0.8,
                 filters=(128, 256, 128)):
        super().__init__()
        self.lstm = nn.LSTM(length, lstm_units, batch_first=True)
        self.drop = nn.Dropout(dropout)
        f1, f2, f3 = filters
        # kernel 8 padded by hand (3 left, 4 right): 'same' with an even kernel
        self.fcn = nn.Sequential(
            nn.ConstantPad1d((3, 4), 0.0), nn.Conv1d(1, f1, 8), nn.BatchNorm1d(f1), nn.ReLU(),
            nn.Conv1d(f1, f2, 5, padding="same"), nn.BatchNorm1d(f2), nn.ReLU(),
            nn.Conv1d(f2, f3, 3, padding="same"), nn.BatchNorm1d(f3), nn.ReLU())
        self.out = nn.Linear(lstm_units + f3, n_classes)

    def forward(self, x):
        a, _ = self.lstm(x.unsqueeze(1))                              # dimension shuffle: 1 step
        a = self.drop(a[:, -1])
        b = self.fcn(x.unsqueeze(1)).mean(-1)
        return self.out(torch.cat([a, b], -1))


class TransformerClassifier(nn.Module):
    """A small time-series transformer (after TST, Zerveas et al. 2021): input tokens, learned
    positional embedding, pre-norm encoder layers, mean pooling, linear classifier.

    ``patch = 1`` (TST's, the paper's baseline): one token per time point, a linear projection of
    the scalar value.  ``patch = P > 1``: one token per window of P points with stride P // 2 (a
    Conv1d with P taps), ``(length - P) // (P // 2) + 1`` tokens.  On z-normalised series a point
    token carries no local shape, and the mean of the linear projections is the same for every
    series, so the class signal starts in the attention products alone; on FordA such a model stays
    at chance (as the paper's TST, 49.48 %) while patch tokens train (docs/kernel_experiments.md)."""

    def __init__(self, length: int, n_classes: int, d_model: int = 64, heads: int = 4, layers: int = 2,
                 ff: int = 128, dropout: float = 0.1, patch: int = 1):
        super().__init__()
        _sizes(length=length, n_classes=n_classes, d_model=d_model, heads=heads, layers=layers, ff=ff)
        if not isinstance(patch, int) or not 1 <= patch <= length:
            raise ValueError(f"patch must be an integer in 1..length ({length}); got {patch!r}")
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        self.patch = patch
        if patch == 1:
            self.proj, n_tokens = nn.Linear(1, d_model), length
        else:
            stride = max(1, patch // 2)
            self.proj, n_tokens = nn.Conv1d(1, d_model, patch, stride=stride), (length - patch) // stride + 1
        self.pos = nn.Parameter(torch.zeros(1, n_tokens, d_model))
        nn.init.normal_(self.pos, std=0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d_model, n_classes)

    def tokens(self, x):
        """(B, length) -> (B, n_tokens, d_model), before the positional embedding."""
        if self.patch == 1:
            return self.proj(x.unsqueeze(-1))
        return self.proj(x.unsqueeze(1)).transpose(1, 2)

    def forward(self, x):
        z = self.enc(self.tokens(x) + self.pos)
        return self.out(z.mean(1))
