"""The EFA theory model of Sec 5.2 (after Bai et al. 2023): the model Theorem 2 is about.

Data Z = {(tau_i, y_i)}_{i<=I}.  For target i (per-target masking, y_i -> 0):
  Exp^R_theta(Z_i) = [g~(tau_1) ... g~(tau_I); y_1 ... 0 ... y_I] in R^{(K+1) x I},
  g~(tau) = G_2 ReLU(G_1 clip_R(tau)),  G_1 in R^{K' x tau}, G_2 in R^{K x K'};
then an L-layer, M-head transformer TF^R_theta of Bai et al. (each layer: ReLU attention
  h_i <- h_i + (1/I) sum_m sum_j ReLU(<Q_m h_i, K_m h_j>) V_m h_j,
then an MLP  h_i <- h_i + W_2 ReLU(W_1 h_i), with W_1 in R^{D' x D}, W_2 in R^{D x D'}, D = K+1; the
token norms are clipped to R after every layer when R is given), and the prediction
clip_{B_y}(read_y(Y'_ii)) = clip_{B_y}((Y'_ii)_{K+1}).  Loss (Sec 5.2.2):
  l(theta; Z) = (1/(2I)) sum_i (y_i - clip_{B_y}(read_y(TF(Exp(Z_i)))))^2.
No biases anywhere, so the parameter count is exactly d = L(3 M D^2 + 2 D D') + K'(K + tau).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn

from attnlab.experiments.models.efa import _posint, _prepare, gather_targets, replicate_targets

__all__ = ["BaiEFA", "clip_norm", "parameter_count"]


def parameter_count(L: int, M: int, D: int, Dp: int, Kp: int, K: int, tau: int) -> int:
    """d = L (3 M D^2 + 2 D D') + K' (K + tau)  (Theorem 2)."""
    return L * (3 * M * D * D + 2 * D * Dp) + Kp * (K + tau)


def clip_norm(h: torch.Tensor, R: Optional[float]) -> torch.Tensor:
    """Project every vector (last dim) onto the ball of radius R (identity when R is None)."""
    if R is None:
        return h
    n = h.norm(dim=-1, keepdim=True)
    # R / n only where n > R: a floor of 1e-300 is 0 in float32, and R / 0 = inf sent NaN into the gradient of
    # every all-zero vector (a masked column whose ReLU is off); the unused branch gets a safe denominator
    over = n > R
    return h * torch.where(over, R / torch.where(over, n, torch.ones_like(n)), torch.ones_like(n))


class BaiEFA(nn.Module):
    """The Sec 5.2 EFA model; see the module docstring.  ``K`` embedding width (token width
    D = K + 1), ``tau_dim``, ``Kp`` = K' (hidden width of g), ``layers`` L, ``heads`` M,
    ``mlp_hidden`` D', ``R`` clipping radius (None: no clipping), ``B_y`` output clip (None: none).
    The defaults are Sec 5.2's teacher: L = 1, M = 2, K = 4, tau = 2, K' = 16 (D' = 16, not given in the paper).
    Initialisation (from torch's global generator): every weight matrix N(0, init_scale^2 / fan_in), fan_in the
    width it multiplies (tau for G_1, K' for G_2, D for Q, K, V and W_1, D' for W_2)."""

    def __init__(self, K: int = 4, tau_dim: int = 2, Kp: int = 16, layers: int = 1, heads: int = 2,
                 mlp_hidden: int = 16, R: Optional[float] = None, B_y: Optional[float] = None,
                 init_scale: float = 0.5):
        super().__init__()
        self.K, self.tau_dim, self.Kp = _posint(K, "K"), _posint(tau_dim, "tau_dim"), _posint(Kp, "Kp")
        self.L, self.M, self.Dp = _posint(layers, "layers"), _posint(heads, "heads"), _posint(mlp_hidden, "mlp_hidden")
        for v, n in ((R, "R"), (B_y, "B_y")):
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                      and v > 0):            # ('1' gave a TypeError from math.isfinite)
                raise ValueError(f"{n} must be None or a finite number > 0; got {v!r}")
        self.R, self.B_y = R, B_y
        D = self.D = self.K + 1
        s = init_scale
        self.G1 = nn.Parameter(torch.randn(self.Kp, self.tau_dim) * s / math.sqrt(self.tau_dim))
        self.G2 = nn.Parameter(torch.randn(self.K, self.Kp) * s / math.sqrt(self.Kp))
        self.Q = nn.ParameterList(nn.Parameter(torch.randn(self.M, D, D) * s / math.sqrt(D)) for _ in range(self.L))
        self.Kw = nn.ParameterList(nn.Parameter(torch.randn(self.M, D, D) * s / math.sqrt(D)) for _ in range(self.L))
        self.V = nn.ParameterList(nn.Parameter(torch.randn(self.M, D, D) * s / math.sqrt(D)) for _ in range(self.L))
        self.W1 = nn.ParameterList(nn.Parameter(torch.randn(self.Dp, D) * s / math.sqrt(D)) for _ in range(self.L))
        self.W2 = nn.ParameterList(nn.Parameter(torch.randn(D, self.Dp) * s / math.sqrt(self.Dp)) for _ in range(self.L))

    def n_parameters(self) -> int:
        return parameter_count(self.L, self.M, self.D, self.Dp, self.Kp, self.K, self.tau_dim)

    def norm(self) -> float:
        """|||theta||| = max_l {max_m {||Q_m||, ||K_m||} + sum_m ||V_m|| + ||W_1|| + ||W_2||}
        + ||G_1|| + ||G_2||  (operator norms; Sec 5.2.2)."""
        op = lambda A: torch.linalg.matrix_norm(A.detach(), ord=2)
        per = []
        for l in range(self.L):
            qk = torch.maximum(op(self.Q[l]), op(self.Kw[l])).max()
            per.append(qk + op(self.V[l]).sum() + op(self.W1[l]) + op(self.W2[l]))
        return float(torch.stack(per).max() + op(self.G1) + op(self.G2))

    def embed(self, tau: torch.Tensor) -> torch.Tensor:
        """g~(tau) = G_2 ReLU(G_1 clip_R(tau)), (B, I, K)."""
        return torch.relu(clip_norm(tau, self.R) @ self.G1.T) @ self.G2.T

    def columns(self, tau, y):
        """Exp(Z) without masking (B, I, D) and with y masked to 0 (B, I, D)."""
        g = self.embed(tau)
        cols = torch.cat([g, y[..., None].to(g.dtype)], -1)
        masked = torch.cat([g, torch.zeros_like(y[..., None], dtype=g.dtype)], -1)
        return cols, masked

    def _layer(self, l, Hq, Hk):
        """Layer l for the output columns Hq (N, R, D) attending to all columns Hk (N, I, D)."""
        I = Hk.shape[1]
        q = torch.einsum("mde,nie->nmid", self.Q[l], Hq)
        k = torch.einsum("mde,nje->nmjd", self.Kw[l], Hk)
        v = torch.einsum("mde,nje->nmjd", self.V[l], Hk)
        w = torch.relu(q @ k.transpose(-1, -2)) / I
        H = clip_norm(Hq + (w @ v).sum(1), self.R)
        H = H + torch.relu(H @ self.W1[l].T) @ self.W2[l].T
        return clip_norm(H, self.R)

    def transformer(self, H: torch.Tensor) -> torch.Tensor:
        """TF^R_theta on (N, I, D)."""
        H = clip_norm(H, self.R)
        for l in range(self.L):
            H = self._layer(l, H, H)
        return H

    @staticmethod
    def _targets(targets, y: torch.Tensor) -> torch.Tensor:
        """targets as a (B, T) long tensor of positions (all positions when None), checked as EFACategorical
        checks them (experiments.models.efa._prepare; out of range was a deep torch error)."""
        return _prepare(y, None, targets)[1]

    def forward_literal(self, tau, y, targets=None):
        """The same prediction by running every copy fully through the transformer (for tests)."""
        B, I = y.shape
        targets = self._targets(targets, y)
        cols, masked = self.columns(tau, y)
        T = targets.shape[1]
        Z = replicate_targets(cols, masked, targets).reshape(B * T, I, self.D)
        pred = gather_targets(self.transformer(Z).reshape(B, T, I, self.D), targets)[..., -1]
        return pred if self.B_y is None else pred.clamp(-self.B_y, self.B_y)

    def forward(self, tau: torch.Tensor, y: torch.Tensor, targets=None) -> torch.Tensor:
        """clip_{B_y}(read_y(Y'_ii)) for the targets, (B, T)."""
        if not torch.is_tensor(y) or y.dim() != 2:          # (a 1-D y: "not enough values to unpack")
            raise ValueError(f"y must be a tensor of shape (B, I); got "
                             f"{tuple(y.shape) if torch.is_tensor(y) else type(y).__name__}")
        B, I = y.shape
        if tau.shape != (B, I, self.tau_dim):
            raise ValueError(f"tau must have shape (B, I, tau_dim) = {(B, I, self.tau_dim)}; got {tuple(tau.shape)}")
        targets = self._targets(targets, y)
        cols, masked = self.columns(tau, y)
        T = targets.shape[1]
        if self.L == 1:
            # one layer: copy t differs from the sequence only in column t, so the target column
            # attends to the unmasked columns j != t and to its own masked column (no copies needed)
            C = clip_norm(cols, self.R)
            Mq = clip_norm(masked.gather(1, targets[..., None].expand(-1, -1, self.D)), self.R)
            q = torch.einsum("mde,nte->nmtd", self.Q[0], Mq)
            k = torch.einsum("mde,nje->nmjd", self.Kw[0], C)
            v = torch.einsum("mde,nje->nmjd", self.V[0], C)
            w = torch.relu(q @ k.transpose(-1, -2)) / I                           # (B, M, T, I)
            not_self = (torch.arange(I, device=y.device) != targets[..., None])[:, None]
            w = w * not_self
            ks = torch.einsum("mde,nte->nmtd", self.Kw[0], Mq)
            vs = torch.einsum("mde,nte->nmtd", self.V[0], Mq)
            ws = torch.relu((q * ks).sum(-1, keepdim=True)) / I
            H = clip_norm(Mq + (w @ v + ws * vs).sum(1), self.R)
            H = clip_norm(H + torch.relu(H @ self.W1[0].T) @ self.W2[0].T, self.R)
            pred = H[..., -1]
            return pred if self.B_y is None else pred.clamp(-self.B_y, self.B_y)
        # per-target copies through the first L-1 layers; in the last layer only the target column
        # is needed (exactly what `transformer` gives for it)
        Z = clip_norm(replicate_targets(cols, masked, targets).reshape(B * T, I, self.D), self.R)
        for l in range(self.L - 1):
            Z = self._layer(l, Z, Z)
        Zq = gather_targets(Z.reshape(B, T, I, self.D), targets).reshape(B * T, 1, self.D)
        pred = self._layer(self.L - 1, Zq, Z).reshape(B, T, self.D)[..., -1]
        return pred if self.B_y is None else pred.clamp(-self.B_y, self.B_y)

    def loss(self, tau, y) -> torch.Tensor:
        """(B,) l(theta; Z^f) = (1/(2I)) sum_i (y_i - prediction_i)^2."""
        return 0.5 * ((y - self.forward(tau, y)) ** 2).mean(-1)
