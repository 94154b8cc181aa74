"""Helpers for the claims that check a library function at the edges of its input domain.

- :func:`at_run_time`: a name as a program reads it from a config file or the command line -- an equal
  string that is not the interned literal, so that a comparison by identity (``is``) instead of equality
  shows;
- :func:`refused`: whether a call is refused the documented way, one ValueError line naming what is
  allowed (any other exception, or none, is not a refusal);
- :func:`uniform_fit`: how well a tensor of initial weights fits U(-bound, bound), by its range and two
  z-tests (mean and second moment).
"""
from __future__ import annotations

import math


def at_run_time(name: str) -> str:
    """An equal copy of `name` that is not the interned literal (``at_run_time("width") is "width"`` is False)."""
    return "".join(list(name))


def refused(call, *words: str, error: type = ValueError) -> bool:
    """True when call() raises `error` with a one-line message containing every one of `words`."""
    try:
        call()
    except error as exc:
        msg = str(exc)
        return "\n" not in msg and all(w in msg for w in words)
    except Exception:                      # noqa: BLE001 -- another error is not the documented refusal
        return False
    return False


def uniform_fit(x, bound: float) -> dict:
    """Fit of the entries of `x` to U(-bound, bound): ``inside`` (max |x| <= bound), ``reaches`` (max |x| >=
    bound (1 - 20/n): the chance that n uniform draws stop short of that is below 2 e^-20), ``z_mean`` (the mean
    against sd bound / sqrt(3 n)) and ``z_var`` (the mean square against bound^2/3, sd bound^2 sqrt(4/(45 n))).
    ``ok`` when inside, reaches and both |z| <= 5."""
    import torch

    v = torch.as_tensor(x).detach().double().reshape(-1)
    n, b = v.numel(), float(bound)
    top = float(v.abs().max())
    z_mean = float(v.mean()) / (b / math.sqrt(3 * n))
    z_var = (float((v * v).mean()) - b * b / 3) / (b * b * math.sqrt(4 / (45 * n)))
    out = dict(n=n, bound=b, max_abs=top, inside=top <= b, reaches=top >= b * (1 - 20 / n),
               z_mean=z_mean, z_var=z_var)
    out["ok"] = bool(out["inside"] and out["reaches"] and abs(z_mean) <= 5 and abs(z_var) <= 5)
    return out
