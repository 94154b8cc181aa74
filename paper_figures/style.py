"""The one look of attnlab's figures: every figure module gets pyplot from :func:`pyplot`, which
selects the non-interactive Agg backend and applies ``attnlab.mplstyle`` (fonts, grid, resolution)."""
from __future__ import annotations

from pathlib import Path

STYLE = Path(__file__).resolve().parent / "attnlab.mplstyle"


def pyplot():
    """matplotlib.pyplot on the Agg backend with the attnlab style applied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.style.use(["default", str(STYLE)])
    return plt
