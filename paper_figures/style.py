"""The one look of attnlab's figures: every figure module gets pyplot from :func:`pyplot`, which
selects the non-interactive Agg backend and applies ``attnlab.mplstyle`` (fonts, grid, resolution),
and writes every figure through :func:`save`: a PNG (shown in the docs and the report) and, with
``attnlab figures --vector``, a PDF and an SVG beside it.  The files carry no date and no
software version, so rendering the same records twice gives byte-identical files.
"""
from __future__ import annotations

from pathlib import Path

STYLE = Path(__file__).resolve().parent / "attnlab.mplstyle"

# Metadata that would change from one rendering to the next (dates) or from one machine to the
# next (the matplotlib version), removed per format.
_METADATA = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
    "svg": {"Creator": None, "Date": None},
}
_VECTOR = [False]                         # switched on by `attnlab figures --vector`


def pyplot():
    """matplotlib.pyplot on the Agg backend with the attnlab style applied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.style.use(["default", str(STYLE)])
    return plt


def vector_output(on: bool) -> bool:
    """Make :func:`save` also write PDF and SVG (`on`) or PNG only; return the previous setting."""
    previous, _VECTOR[0] = _VECTOR[0], bool(on)
    return previous


def formats(vector: bool | None = None) -> tuple[str, ...]:
    """The formats :func:`save` writes: PNG, plus PDF and SVG when `vector` (default: the setting of
    :func:`vector_output`)."""
    if vector is None:
        vector = _VECTOR[0]
    return ("png", "pdf", "svg") if vector else ("png",)


def save(fig, outdir, name: str, vector: bool | None = None) -> list[Path]:
    """Write `fig` as `outdir/name` (a ``.png`` name) and, where vector output is asked for, the
    ``.pdf`` and ``.svg`` beside it; close the figure and return the paths written."""
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    stem = Path(name).stem
    paths = []
    for fmt in formats(vector):
        p = outdir / f"{stem}.{fmt}"
        fig.savefig(p, format=fmt, metadata=_METADATA[fmt])
        paths.append(p)
    plt.close(fig)
    return paths
