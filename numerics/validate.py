"""Input validation shared by the numerics: every error names the argument and the allowed domain."""
from __future__ import annotations

import numpy as np


def as_matrix(x, name: str, cols: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n x d); got shape {a.shape}")
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def as_vector(x, name: str, size: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {a.shape}")
    if size is not None and a.shape[0] != size:
        raise ValueError(f"{name} must have length {size}; got {a.shape[0]}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def probability_vector(x, name: str, size: int | None = None, atol: float = 1e-9) -> np.ndarray:
    a = as_vector(x, name, size)
    if a.size and a.min() < 0:
        raise ValueError(f"{name} must be a probability vector (entries >= 0); min entry {a.min():.3g}")
    if abs(float(a.sum()) - 1.0) > atol:
        raise ValueError(f"{name} must be a probability vector summing to 1 (within {atol:g}); sums to {a.sum():.12g}")
    return a


def positive(x, name: str) -> float:
    v = float(x)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {x!r}")
    return v
