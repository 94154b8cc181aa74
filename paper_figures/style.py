"""The one look of attnlab's figures: every figure module gets pyplot from :func:`pyplot`, which
selects the non-interactive Agg backend and applies ``attnlab.mplstyle`` (fonts, grid, resolution),
and writes every figure through :func:`save`: a PNG (shown in the docs and the report) and, with
``attnlab figures --vector``, a PDF and an SVG beside it.  The files carry no date and no
software version, so rendering the same records twice gives byte-identical files.

Each PNG also carries, in a text chunk (:data:`DIGEST_KEY`), a digest of what the figure draws
(:func:`content_digest`: its texts and its data, to four significant digits, not its pixels), so that
``attnlab figures --check`` can tell whether a committed figure is still what the records give
without comparing pixels, which change with the matplotlib and FreeType versions.

Every figure is as wide as a column of a two-column paper, :data:`ONE_COLUMN` (3.4 in) or
:data:`TWO_COLUMN` (7.0 in), at :data:`DPI` (300): placed at that width, its 8 pt text prints at 8 pt.
:func:`size` gives the ``figsize`` of either; :func:`save` refuses any other width.
"""
from __future__ import annotations

from pathlib import Path

STYLE = Path(__file__).resolve().parent / "attnlab.mplstyle"

DPI = 300                                 # savefig.dpi of attnlab.mplstyle
ONE_COLUMN = 3.4                          # inches: one column of a two-column paper
TWO_COLUMN = 7.0                          # inches: the full text width of a two-column paper
WIDTHS = {1: ONE_COLUMN, 2: TWO_COLUMN}
PNG_BUDGET = 400_000                      # bytes: a PNG larger is written as RGB, then in 256 colours

# Metadata that would change from one rendering to the next (dates) or from one machine to the
# next (the matplotlib version), removed per format.
_METADATA = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
    "svg": {"Creator": None, "Date": None},
}
_VECTOR = [False]                         # switched on by `attnlab figures --vector`
DIGEST_KEY = "attnlab-content"            # the PNG text chunk holding content_digest
PIXELS_KEY = "attnlab-pixels"             # the PNG text chunk holding the digest of its own pixels (pixel_digest)
_CHECK: list = [None]                     # {stem: digest} while `attnlab figures --check` draws (check_mode)


def pyplot():
    """matplotlib.pyplot on the Agg backend with the attnlab style applied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.style.use(["default", str(STYLE)])
    return plt


def size(columns: int, height: float) -> tuple[float, float]:
    """The ``figsize`` of a figure `columns` (1 or 2) columns wide and `height` inches high."""
    if columns not in WIDTHS:
        raise ValueError(f"a figure spans 1 or 2 columns; got {columns!r}")
    return (WIDTHS[columns], float(height))


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
    ``.pdf`` and ``.svg`` beside it; close the figure and return the paths written.  The figure must
    be one or two columns wide (:func:`size`); the files keep that width (the tight bounding box trims
    the margins, and nothing drawn reaches past the figure's edges in the committed figures)."""
    import matplotlib.pyplot as plt

    width = fig.get_figwidth()
    if not any(abs(width - w) < 1e-6 for w in WIDTHS.values()):
        plt.close(fig)
        raise RuntimeError(f"{name}: the figure is {width:g} in wide; attnlab figures are "
                           f"{ONE_COLUMN:g} in (one column) or {TWO_COLUMN:g} in (two columns): use style.size")

    stem = Path(name).stem
    digest = content_digest(fig)
    if _CHECK[0] is not None:                   # --check: what the figure draws, no file
        _CHECK[0][stem] = digest
        plt.close(fig)
        return []
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats(vector):
        p = outdir / f"{stem}.{fmt}"
        if fmt == "png":
            p.write_bytes(_with_pixel_digest(_png(fig, digest)))
        else:
            fig.savefig(p, format=fmt, metadata=_METADATA[fmt])
        paths.append(p)
    plt.close(fig)
    return paths


def _png(fig, digest: str) -> bytes:
    """The figure as PNG bytes at :data:`DPI`, no date or version.  Where matplotlib's file is over
    :data:`PNG_BUDGET` bytes: RGB (the background is opaque, so the alpha channel carries nothing) at
    the strongest compression, and where that is still over, 256 colours without dithering (dense
    scatter plots at 300 dpi), the antialiased edges rounded to the nearest of them."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={**_METADATA["png"], DIGEST_KEY: digest})
    if buf.tell() <= PNG_BUDGET:                # most figures: as matplotlib writes them (the cheapest)
        return buf.getvalue()
    from PIL import Image, PngImagePlugin

    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    info = PngImagePlugin.PngInfo()
    info.add_text(DIGEST_KEY, digest)
    out = io.BytesIO()
    image.save(out, format="png", optimize=True, dpi=(DPI, DPI), pnginfo=info)
    if out.tell() > PNG_BUDGET:
        out = io.BytesIO()
        image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            out, format="png", optimize=True, dpi=(DPI, DPI), pnginfo=info)
    return out.getvalue()


def _numbers(x) -> str:
    """`x` (any array-like of numbers) as text, with its shape: each number to four significant digits,
    and those below 1e-9 of the array's largest magnitude as 0 (a difference that is 0 up to rounding,
    an error at the rounding level), so that the last bits of a float, which a BLAS kernel or a numpy
    build may change, do not count."""
    import numpy as np

    a = np.ma.filled(np.ma.asarray(x, dtype=float), np.nan)
    finite = np.abs(a[np.isfinite(a)])
    if finite.size:
        a = np.where(np.abs(a) < 1e-9 * finite.max(), 0.0, a) + 0.0     # + 0.0: no "-0"
    return f"{a.shape}:" + ",".join(f"{v:.4g}" for v in a.ravel())


def content_digest(fig) -> str:
    """A digest (sha256, hex) of what `fig` draws, independent of how it is rasterised: the figure's and
    every axes' texts (titles, labels, legends, annotations with their anchor points), each axes' scales
    and limits, and the data of its lines, collections (markers, error bars, filled areas), patches (bars)
    and images, numbers to four significant digits.  Positions computed from the font metrics (tick
    placement, tight layout) do not count."""
    import hashlib

    parts = [f"size {fig.get_figwidth():.4g}x{fig.get_figheight():.4g}"]
    if getattr(fig, "_suptitle", None) is not None:
        parts.append("suptitle " + fig._suptitle.get_text())
    parts += ["text " + t.get_text() for t in fig.texts]
    for ax in fig.axes:
        parts.append("axes " + " | ".join((ax.get_title("left"), ax.get_title(), ax.get_title("right"),
                                           ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale())))
        parts.append("limits " + _numbers([*ax.get_xlim(), *ax.get_ylim()]))
        legend = ax.get_legend()
        if legend is not None:
            parts.append("legend " + " | ".join(t.get_text() for t in legend.get_texts()))
        for line in ax.get_lines():
            parts.append(f"line {line.get_label()} {line.get_linestyle()} {line.get_marker()} "
                         + _numbers(line.get_xydata()))
        for c in ax.collections:
            segments = getattr(c, "get_segments", None)
            shapes = segments() if segments is not None else [p.vertices for p in c.get_paths()]
            parts.append(f"collection {type(c).__name__} {c.get_label()} " + _numbers(c.get_offsets()) + " "
                         + " ".join(_numbers(v) for v in shapes)
                         + ("" if c.get_array() is None else " " + _numbers(c.get_array())))
        for patch in ax.patches:
            parts.append(f"patch {type(patch).__name__} "
                         + _numbers(patch.get_patch_transform().transform(patch.get_path().vertices)))
        for image in ax.get_images():
            parts.append("image " + _numbers(image.get_array()) + " " + _numbers(image.get_clim()))
        for t in ax.texts:
            xy = getattr(t, "xy", None)
            parts.append("text " + t.get_text() + " " + _numbers(t.get_position())
                         + ("" if xy is None else " " + _numbers(xy)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def pixel_digest(image) -> str:
    """sha256 (hex) of a decoded image's mode, size and pixels: what a viewer shows, whatever the PNG's
    compression and chunks."""
    import hashlib

    h = hashlib.sha256(f"{image.mode} {image.size}".encode())
    h.update(image.tobytes())
    if image.mode == "P":                       # (the colours of a palette image)
        h.update(bytes(image.getpalette() or ()))
    return h.hexdigest()


def _with_pixel_digest(png: bytes) -> bytes:
    """The PNG `png` with a text chunk PIXELS_KEY holding :func:`pixel_digest` of its own pixels, put before
    its IEND chunk (the pixels and the other chunks unchanged): `attnlab figures --check` then tells a file
    whose image was changed after it was drawn (edited, replaced, cropped) from the one attnlab wrote."""
    import io
    import struct
    import zlib

    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        im.load()
        text = f"{PIXELS_KEY}\0{pixel_digest(im)}".encode("latin-1")
    chunk = struct.pack(">I", len(text)) + b"tEXt" + text + struct.pack(">I", zlib.crc32(b"tEXt" + text))
    end = png.rindex(b"IEND") - 4                # (the IEND chunk: its length, 0, then its type)
    return png[:end] + chunk + png[end:]


def png_pixels_intact(path) -> bool | None:
    """Whether the PNG's pixels are those its PIXELS_KEY chunk was computed from; None without the chunk."""
    from PIL import Image

    with Image.open(path) as im:
        stored = (im.text if hasattr(im, "text") else im.info).get(PIXELS_KEY)
        if stored is None:
            return None
        im.load()
        return stored == pixel_digest(im)


def png_digest(path) -> str | None:
    """The content digest a PNG written by :func:`save` carries, or None (no such chunk)."""
    from PIL import Image

    with Image.open(path) as im:
        return im.text.get(DIGEST_KEY) if hasattr(im, "text") else im.info.get(DIGEST_KEY)


def tight_layout(fig, **kwargs) -> None:
    """``fig.tight_layout(**kwargs)``, except under ``attnlab figures --check`` (:func:`check_mode`), where nothing
    is drawn: the layout places the axes by the fonts' metrics, which :func:`content_digest` leaves out, and it
    took a third of the check's time."""
    if _CHECK[0] is None:
        fig.tight_layout(**kwargs)


def check_mode(digests: dict | None):
    """While `digests` is a dict, :func:`save` writes no file and puts each figure's content digest
    into it under the figure's stem (``attnlab figures --check``); None writes files again.  Returns
    the previous setting."""
    previous, _CHECK[0] = _CHECK[0], digests
    return previous


def wrap(text: str, width_in: float, fontsize: float = 8.0) -> str:
    """`text` broken into lines that fit `width_in` inches at `fontsize` points (about 0.55 em a
    character in the style's sans-serif font); lines already broken stay broken."""
    import textwrap

    chars = max(10, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) if line else line for line in text.split("\n"))
