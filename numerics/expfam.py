"""Exponential families in torch: natural parameter, sufficient statistic, log-partition, base measure.

A member of a family is written  p(y | eta) = h(y) exp(eta^T t(y) - A(eta))  (EFA paper, Sec 2.2 and
Eq. (3)).  A network does not output eta directly but a *raw output* `out` (what the EFA paper calls
kappa = lambda_2(Y'_ii)); each family says how `out` maps to the canonical natural parameter:

| family          | raw output `out`      | eta = natural(out)   | t(y)   | A(eta)          | log h(y)                      |
|-----------------|-----------------------|----------------------|--------|-----------------|-------------------------------|
| Gaussian(s2)    | mean mu               | mu / s2              | y      | s2 eta^2 / 2    | -log(2 pi s2)/2 - y^2/(2 s2)  |
| PoissonV1       | log rate z            | z                    | y - 1  | exp(eta)        | -log((y-1)!)                  |
| PoissonV2       | z, rate = 1 + e^z     | softplus(z)          | y      | exp(eta)        | -log(y!)                      |
| Bernoulli       | logit                 | logit                | y      | softplus(eta)   | 0                             |
| Categorical(C)  | logits (C)            | logits               | 1_y    | logsumexp(eta)  | 0                             |

(The Gaussian row is the paper's known-variance Gaussian: the paper identifies kappa with the mean,
Sec 3.2 and 5.2; strictly eta = mu / sigma^2.)  `code_loss` is the per-target loss the authors'
released code minimised (MSE; Poisson NLL without the factorial; binary / categorical cross-entropy),
which differs from -log_prob by a term free of the parameters (plus the 1/(2 s2) scale for Gaussian).
softplus is the exact form of numerics.exact (torch's F.softplus drops e^-x above x = 20).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnlab.numerics.exact import bernoulli_nll, softplus

__all__ = ["ExpFamily", "Gaussian", "PoissonV1", "PoissonV2", "Bernoulli", "Categorical", "family"]


class ExpFamily:
    """Base class.  Scalar families take y of shape (...) and raw outputs of shape (...);
    Categorical takes integer y of shape (...) and raw outputs of shape (..., C)."""

    name = "expfam"
    n_out = 1            # size of the raw output per target (last dim for Categorical)
    discrete = False

    # --- the exponential-family pieces -----------------------------------------------------------
    def natural(self, out: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def sufficient(self, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def log_partition(self, eta: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def log_base(self, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def mean(self, out: torch.Tensor) -> torch.Tensor:
        """E[y] under the raw output `out`."""
        raise NotImplementedError

    def validate_y(self, y: torch.Tensor, name: str = "y") -> None:
        if not torch.all(torch.isfinite(torch.as_tensor(y, dtype=torch.float64))):
            raise ValueError(f"{name} must be finite")

    # --- derived ---------------------------------------------------------------------------------
    def log_prob(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | out) = eta^T t(y) - A(eta) + log h(y)   (the summand of Eq. (3) plus log h).  A floating y
        is taken in the outputs' dtype first (log h of a float32 y beside float64 outputs was float32's: PoissonV2's
        lgamma 1e-8 off), and log h of an integer y is computed in it.  y outside the family's support is refused
        by validate_y (a Poisson count of 0.5 or -1 gave a number or -inf, v1 at y = 0.5 a 'probability' above 1)."""
        self.validate_y(y)
        return self._log_prob(out, y)

    def _log_prob(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log_prob for a y already validated (validate_y): the models validate their targets once per call, and
        a second check costs a host synchronisation per step on a GPU."""
        eta = self.natural(out)
        y = _like(y, eta)
        # log h of an integer y (counts) in the outputs' dtype too: lgamma of an int64 y was taken in the default
        # float32 (PoissonV2 1.9e-9 off beside float64 outputs)
        yb = y.to(eta.dtype) if eta.is_floating_point() and not y.is_floating_point() else y
        return self.inner(eta, y) - self.log_partition(eta) + self.log_base(yb).to(eta.dtype)

    def inner(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """eta^T t(y); 0 where t(y) = 0, also at an infinite eta (PoissonV1 at out = -inf, y = 1 gave NaN)."""
        t = self.sufficient(y).to(eta.dtype)
        prod = eta * t
        return torch.where(t == 0, torch.zeros_like(prod), prod)

    def nll(self, out, y):
        return -self.log_prob(out, y)

    def code_loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The per-target loss of the authors' released code (see the module docstring)."""
        raise NotImplementedError

    def torch_distribution(self, out: torch.Tensor):
        """The matching torch.distributions object (for checks of Eq. (3))."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class Gaussian(ExpFamily):
    """y ~ N(mu, sigma2) with known variance sigma2 > 0; the raw output is the mean mu."""

    name = "gaussian"

    def __init__(self, sigma2: float = 1.0):
        s = float(sigma2)
        if not math.isfinite(s) or s <= 0:
            raise ValueError(f"sigma2 (the known variance) must be a finite number > 0; got {sigma2!r}")
        self.sigma2 = s

    def natural(self, out):
        return out / self.sigma2

    def sufficient(self, y):
        return y

    def log_partition(self, eta):
        return self.sigma2 * eta ** 2 / 2

    def log_base(self, y):
        return -0.5 * math.log(2 * math.pi * self.sigma2) - y ** 2 / (2 * self.sigma2)

    def _log_prob(self, out, y):
        """-(y - mu)^2 / (2 sigma2) - log(2 pi sigma2) / 2: Eq. (3)'s eta y - A(eta) + log h(y) with its three
        terms of size y^2 / sigma2 cancelled by hand (summed as they are, float32 lost every digit from y = mu =
        1e4, float64 from 1e8, and a mean log-likelihood came out +1.0 where it is below -0.92).  A y that is not
        finite is refused (log_prob's validate_y)."""
        dt = torch.promote_types(out.dtype, y.dtype) if torch.is_tensor(y) and y.is_floating_point() else out.dtype
        r = _float(y).to(dt) - out.to(dt)
        return (-(r * r) / (2 * self.sigma2) - 0.5 * math.log(2 * math.pi * self.sigma2)).to(out.dtype)

    def mean(self, out):
        return out

    def code_loss(self, out, y):
        return (y - out) ** 2          # MSE: the NLL is (MSE)/(2 sigma2) + const (footnote 3)

    def torch_distribution(self, out):
        return torch.distributions.Normal(out, math.sqrt(self.sigma2))

    def __repr__(self):
        return f"Gaussian(sigma2={self.sigma2:g})"


def _float(y):
    t = torch.as_tensor(y)
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


def _like(y, eta):
    """y as a tensor (a number, a list or an array taken as one: the Poisson log-densities failed on them), in
    eta's floating dtype where y is floating-point (integer y, the categories and counts, as it is)."""
    if not torch.is_tensor(y):
        y = torch.as_tensor(y, device=eta.device)
    return y.to(eta.dtype) if y.is_floating_point() and eta.is_floating_point() else y


def _check_int(y, name, low):
    yy = torch.as_tensor(y)
    if not torch.all(torch.isfinite(yy.double())) or not torch.all(yy == torch.round(yy)) or \
            not torch.all(yy >= low):
        raise ValueError(f"{name} must hold integers >= {low}")


class PoissonV1(ExpFamily):
    """y - 1 ~ Poisson(exp(z)) (Sec 3.3, Prop 3, MovieLens 'v1'): y in {1, 2, ...}; raw output z."""

    name = "poisson_v1"
    discrete = True

    def natural(self, out):
        return out

    def sufficient(self, y):
        return y - 1

    def log_partition(self, eta):
        return torch.exp(eta)

    def log_base(self, y):
        return -torch.lgamma(_float(y))

    def mean(self, out):
        return 1 + torch.exp(out)

    def validate_y(self, y, name="y"):
        _check_int(y, name, 1)

    def code_loss(self, out, y):
        # repo: mean(lambda - (y-1) log(lambda + 1e-8)); the 1e-8 guard is dropped (log lambda = z exactly)
        return torch.exp(out) - (y - 1) * out

    def torch_distribution(self, out):
        return torch.distributions.Poisson(torch.exp(out))   # of y - 1

    @staticmethod
    def out_from_rate(rate):
        """Raw output z = log(rate) for a Poisson rate > 0 of y - 1."""
        r = torch.as_tensor(rate)
        if not torch.all(torch.isfinite(r)) or not torch.all(r > 0):
            raise ValueError("rate must be > 0 (Poisson rate of y - 1)")
        return torch.log(r)


class PoissonV2(ExpFamily):
    """y ~ Poisson(1 + exp(z)) (MovieLens 'v2'): y in {0, 1, ...}; non-canonical link,
    eta = log(1 + e^z) = softplus(z)."""

    name = "poisson_v2"
    discrete = True

    def natural(self, out):
        return softplus(out)

    def sufficient(self, y):
        return y

    def log_partition(self, eta):
        return torch.exp(eta)

    def log_base(self, y):
        return -torch.lgamma(_float(y) + 1)

    def mean(self, out):
        return 1 + torch.exp(out)

    def validate_y(self, y, name="y"):
        _check_int(y, name, 0)

    def code_loss(self, out, y):
        # repo: mean(1 + lambda - y log(1 + lambda)) with lambda = e^z; log(1 + e^z) = softplus(z)
        return 1 + torch.exp(out) - y * softplus(out)

    def torch_distribution(self, out):
        return torch.distributions.Poisson(1 + torch.exp(out))

    @staticmethod
    def out_from_rate(rate):
        """Raw output z = log(rate - 1) for a Poisson rate > 1 (the v2 rate is 1 + e^z > 1)."""
        r = torch.as_tensor(rate)
        if not torch.all(torch.isfinite(r)) or not torch.all(r > 1):
            raise ValueError("rate must be > 1 (Poisson v2 rate 1 + e^z)")
        return torch.log(r - 1)


class Bernoulli(ExpFamily):
    """y ~ Bernoulli(sigmoid(logit)) (Remark 11); y in {0, 1}."""

    name = "bernoulli"
    discrete = True

    def natural(self, out):
        return out

    def sufficient(self, y):
        return y

    def log_partition(self, eta):
        return softplus(eta)

    def _log_prob(self, out, y):
        """-softplus(-eta) for y = 1, -softplus(eta) for y = 0: exact, where eta y - softplus(eta) cancels
        (it gives 0 for y = 1 at eta = 40, where log p = -4.2e-18).  y other than 0 and 1 refused (log_prob's validate_y)."""
        return -bernoulli_nll(self.natural(out), y)

    def log_base(self, y):
        return torch.zeros_like(_float(y))

    def mean(self, out):
        return torch.sigmoid(out)

    def validate_y(self, y, name="y"):
        yy = torch.as_tensor(y)
        if not torch.all((yy == 0) | (yy == 1)):
            raise ValueError(f"{name} must hold 0 or 1 (Bernoulli)")

    def code_loss(self, out, y):
        # binary cross-entropy with logits, in the exact form (torch's is off by 5e-7 at out = -21, y = 0)
        return bernoulli_nll(out, y)

    def torch_distribution(self, out):
        return torch.distributions.Bernoulli(logits=out)


class Categorical(ExpFamily):
    """y ~ Categorical(softmax(logits)), y in {0, ..., C-1} (Sec 2.1 and the x-part of Eq. (3))."""

    name = "categorical"
    discrete = True

    def __init__(self, n_classes: int):
        if int(n_classes) != n_classes or n_classes < 2:
            raise ValueError(f"n_classes must be an integer >= 2; got {n_classes!r}")
        self.n_classes = int(n_classes)
        self.n_out = self.n_classes

    def natural(self, out):
        return out

    def sufficient(self, y):
        return F.one_hot(torch.as_tensor(y).long(), self.n_classes)

    def inner(self, eta, y):
        return eta.gather(-1, torch.as_tensor(y).long().unsqueeze(-1)).squeeze(-1)

    def log_partition(self, eta):
        return torch.logsumexp(eta, dim=-1)

    def log_base(self, y):
        return torch.zeros(torch.as_tensor(y).shape, dtype=torch.get_default_dtype())

    def _log_prob(self, out, y):
        """log softmax(out)[y]; y must hold integers in [0, C - 1] (log_prob's validate_y: torch's gather named no y)."""
        return self.inner(out, y) - self.log_partition(out)

    def mean(self, out):
        return torch.softmax(out, dim=-1)

    def validate_y(self, y, name="y"):
        yy = torch.as_tensor(y)
        if yy.is_floating_point() or not torch.all((yy >= 0) & (yy < self.n_classes)):
            raise ValueError(f"{name} must hold integers in [0, {self.n_classes - 1}]")

    def code_loss(self, out, y):
        return -self.log_prob(out, y)

    def torch_distribution(self, out):
        return torch.distributions.Categorical(logits=out)

    def __repr__(self):
        return f"Categorical(n_classes={self.n_classes})"


_FAMILIES = {"gaussian": Gaussian, "poisson_v1": PoissonV1, "poisson_v2": PoissonV2,
             "bernoulli": Bernoulli, "categorical": Categorical}


def family(name: str | ExpFamily, **kw) -> ExpFamily:
    """A family by name ('gaussian' [sigma2], 'poisson_v1', 'poisson_v2', 'bernoulli',
    'categorical' [n_classes]); an ExpFamily instance is returned as is."""
    if isinstance(name, ExpFamily):
        return name
    if name not in _FAMILIES:
        raise ValueError(f"family must be one of {', '.join(_FAMILIES)}; got {name!r}")
    return _FAMILIES[name](**kw)
