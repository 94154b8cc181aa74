"""One rule for the claims' error measures: a NaN is the largest error, not a missing one.

Python's max(worst, nan) keeps `worst` (NaN compares False), so a check whose library output turned NaN
would otherwise report the error of the cases before it and hold."""
from __future__ import annotations

import math


def finite_or_inf(x: float) -> float:
    """x, or inf where x is NaN."""
    return math.inf if math.isnan(x) else x


def worse(*xs: float) -> float:
    """max(xs), with a NaN counting as the worst (inf) wherever it stands."""
    return max(finite_or_inf(float(x)) for x in xs)
