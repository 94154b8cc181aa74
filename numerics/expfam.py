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

The Poisson log-densities n log(rate) - rate - log n! (n = y - 1 for v1, y for v2) are summed in Loader's saddle-point
form (C. Loader, "Fast and accurate computation of binomial probabilities", 2000; R's dpois):
-log(2 pi n)/2 - stirlerr(n) - bd0(n, rate), whose terms of size n log n cancel analytically, in float64 (float32
outputs rounded once, at the end).  Against mpmath (counts 0 to 1e15, rates 1e-300 to 1e300, near and far from
the count): float64 within 8 ulps of |log p| + |n - rate| (the second term is d log p / d log rate times the
rounding of the rate e^z or 1 + e^z, a bound of the inputs' own), float32 within one float32 ulp.
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


# lgamma(n + 1) - (n + 1/2) log n + n - log(2 pi)/2 for n = 0 (unused), 1, ..., 15 (mpmath, 40 digits): that
# difference of terms up to 39 in float64 was off by 15 ulps of log p at rate n; the Stirling series is used above 15
_STIRLERR = (0.0, 0.08106146679532725822, 0.041340695955409294094, 0.027677925684998339149,
             0.020790672103765093112, 0.016644691189821192163, 0.013876128823070747999,
             0.011896709945891770095, 0.010411265261972096497, 0.0092554621827127329177,
             0.0083305634333628712565, 0.007573675487951840795, 0.0069428401072095298657,
             0.0064089941880042070684, 0.0059513701127588477356, 0.005554733551962801371)
# its asymptotic series sum_k B_2k / (2k (2k - 1) n^(2k - 1)), 8 terms: below 1e-17 relative for n >= 16
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)


def _stirlerr(n):
    """lgamma(n + 1) - (n + 1/2) log n + n - log(2 pi)/2 for integers n >= 1 (Stirling's remainder, ~1/(12 n))."""
    small = n <= 15
    table = torch.tensor(_STIRLERR, dtype=n.dtype, device=n.device)
    tab = table[torch.where(small, n, torch.zeros_like(n)).long()]
    nb = torch.where(small, torch.full_like(n, 16.0), n)
    u = 1.0 / (nb * nb)
    ser = torch.zeros_like(n)
    for c in reversed(_STIRLING):
        ser = ser * u + c
    return torch.where(small, tab, ser / nb)


def _bd0(x, lam, log_lam):
    """x log(x / lam) + lam - x >= 0 for x > 0 (Loader's deviance term): where x and lam are within 10 % of each
    other, as (x - lam) v + 2 x sum_j v^(2j+1) / (2j + 1), v = (x - lam)/(x + lam) (the series of log((1 + v)/(1 - v)),
    no cancellation); elsewhere as written, where no two terms nearly cancel."""
    ser = (x - lam).abs() < 0.1 * (x + lam)
    xs, ls = torch.where(ser, x, torch.ones_like(x)), torch.where(ser, lam, torch.ones_like(lam))
    v = (xs - ls) / (xs + ls)
    v2, ej = v * v, 2 * xs * v
    s = (xs - ls) * v
    for j in range(1, 10):                     # |v| < 0.1: the 10th term is below 1e-18 of the sum
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    # log(x / lam) as log x - log lam where that loses at most a bit (|difference| >= half their |sum|); else, where
    # they nearly cancel (34 ulps off log 1.25 at x = 1e14), as the log of the ratio, lam bounded first (its
    # gradient -x / lam^2 was inf for lam = 1e-304 and met a zero gradient: 0 * inf = NaN)
    lx = torch.log(x)
    sub = lx - log_lam
    apart = sub.abs() >= 0.5 * (lx.abs() + log_lam.abs())
    fi = torch.finfo(x.dtype)
    ok = ~apart & (lam >= math.sqrt(fi.tiny)) & (lam <= math.sqrt(fi.max))
    q = x / torch.where(ok, lam, torch.ones_like(lam))
    lq = torch.where(ok, torch.log(torch.where(ok, q, torch.ones_like(q))), sub)
    direct = x * lq + lam - x
    out = torch.where(ser, s, direct)
    return torch.where(torch.isinf(lam), lam, out)          # an infinite rate: log p = -inf (and its gradient)


def _poisson_log_pmf(n, lam, log_lam):
    """log(lam^n e^-lam / n!) for integers n >= 0 as -log(2 pi n)/2 - stirlerr(n) - bd0(n, lam) (Loader's saddle
    point form, as R's dpois), -lam at n = 0: n log lam, lam and log n! (each up to ~1e15 here) cancel analytically
    (summed as they are, float32 gave +2097152 for log p = -14.8 at y = 1e12, float64 -17.0 for -17.037 at 1e14).
    n, lam, log_lam of one floating dtype."""
    pos = n > 0
    ns = torch.where(pos, n, torch.ones_like(n))
    body = -0.5 * torch.log(2 * math.pi * ns) - _stirlerr(ns) - _bd0(ns, lam, log_lam)
    return torch.where(pos, body, -lam)


def _work_dtype(out):
    """The dtype the Poisson log-densities are computed in: float64 (float32 outputs are rounded once, at the end;
    a float32 e^z carries 6e-8 of the rate into log p times |y - rate|), but the outputs' own on MPS, which has no
    float64."""
    return out.dtype if out.device.type == "mps" else torch.float64


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

    def _log_prob(self, out, y):
        """(y - 1) z - e^z - log (y - 1)! with its large terms cancelled analytically (_poisson_log_pmf), computed in
        float64 and cast to the outputs' dtype: float64 within a few ulps of |log p| + |y - 1 - e^z| (the second the
        rounding of e^z, times d log p / d log rate), float32 correctly rounded but for an ulp (against mpmath,
        y to 1e15).  y must hold integers >= 1 (log_prob's validate_y)."""
        wd = _work_dtype(out)
        eta = self.natural(out.to(wd))
        n = _float(y).to(device=eta.device, dtype=wd) - 1
        return _poisson_log_pmf(n, self.log_partition(eta), eta).to(out.dtype)

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

    def _log_prob(self, out, y):
        """y eta - e^eta - log y! at rate e^eta = 1 + e^z, eta = softplus(z), with its large terms cancelled
        analytically (_poisson_log_pmf), in float64 and cast back, to the accuracy of PoissonV1's (the rate's rounding
        times |y - rate|).  y must hold integers >= 0 (log_prob's validate_y)."""
        wd = _work_dtype(out)
        z = out.to(wd)
        n = _float(y).to(device=z.device, dtype=wd)
        # the rate as 1 + e^z, not exp(eta): that carried eta's rounding times eta
        return _poisson_log_pmf(n, 1 + torch.exp(z), self.natural(z)).to(out.dtype)

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
