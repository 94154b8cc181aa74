"""`attnlab figures` is deterministic: rendering the same records twice gives byte-identical PNG,
PDF and SVG files (no dates or versions in them), and every figure module writes through the one
style's `save`."""
from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The cheapest figure drawn from committed records of each figure module with experiments (fenchel_experiments,
# efa_experiments, bidir_experiments, kernel_experiments), in PNG (what a module draws), and the cheapest of them
# in PDF and SVG too (what the writers add, the same for every module: dates, versions, ids): 3.5 s a rendering
FIGURES = ("fenchel-exp-ot-vit", "exp_fig6", "table2", "kernel_exp_forda")
VECTOR = FIGURES[:1]


def _render(out: Path) -> dict[str, bytes]:
    assert main(["figures", "--only", *VECTOR, "--vector", "--out", str(out)]) == 0
    assert main(["figures", "--only", *FIGURES[len(VECTOR):], "--out", str(out)]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    import os

    if not (ROOT / "results").is_dir() and not os.environ.get("ATTNLAB_RESULTS"):
        pytest.skip("no results/ folder to draw the figures from")
    return _render(tmp_path_factory.mktemp("a")), _render(tmp_path_factory.mktemp("b"))


def test_png_for_each_figure_and_pdf_svg_with_vector(twice):
    first, _ = twice
    stems = {Path(n).stem for n in first}
    assert len(stems) == len(FIGURES)
    assert all(f"{s}.png" in first for s in stems)
    vector = {Path(n).stem for n in first if n.endswith((".pdf", ".svg"))}
    assert len(vector) == len(VECTOR) and all(f"{s}{ext}" in first for s in vector for ext in (".pdf", ".svg"))


def test_rendering_twice_gives_identical_bytes(twice):
    first, second = twice
    assert first.keys() == second.keys()
    differ = [n for n in first if first[n] != second[n]]
    assert not differ, f"figures differ between two renderings: {differ}"


def test_no_date_or_version_in_the_files(twice):
    import matplotlib

    first, _ = twice
    for name, data in first.items():
        assert b"CreationDate" not in data and b"<dc:date>" not in data, name
        assert matplotlib.__version__.encode() not in data, name


def test_png_only_without_vector(tmp_path):
    assert main(["figures", "--only", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 0
    assert [p.suffix for p in tmp_path.iterdir()] == [".png"]


def test_every_figure_module_saves_through_the_style():
    modules = sorted((ROOT / "paper_figures").glob("*.py"))
    direct = [p.name for p in modules if p.name != "style.py" and "savefig(" in p.read_text(encoding="utf-8")]
    assert not direct, f"these modules call savefig themselves instead of style.save: {direct}"


def _png_width_dpi(data: bytes) -> tuple[int, float]:
    """Pixel width and dots per inch of a PNG (its IHDR and pHYs chunks)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return im.size[0], float(im.info["dpi"][0])


def _fits_a_column(width_px: int, dpi: float) -> bool:
    from attnlab.paper_figures.style import TWO_COLUMN

    pad = 2 * 0.02                                  # savefig.pad_inches on either side of the tight box
    return width_px / dpi <= TWO_COLUMN + pad + 1e-3


def test_pngs_are_300_dpi_and_column_wide(twice):
    first, _ = twice
    for name, data in first.items():
        if name.endswith(".png"):
            width, dpi = _png_width_dpi(data)
            assert round(dpi) == 300, name
            assert _fits_a_column(width, dpi), f"{name}: {width / dpi:.2f} in wide"


def test_committed_pngs_read_at_a_column_width():
    """Every committed figure: 300 dpi, no wider than two columns (7 in), a few hundred kB at most."""
    pngs = sorted((ROOT / "paper_figures").glob("*.png"))
    assert pngs
    for p in pngs:
        data = p.read_bytes()
        width, dpi = _png_width_dpi(data)
        assert round(dpi) == 300, p.name
        assert _fits_a_column(width, dpi), f"{p.name}: {width / dpi:.2f} in wide"
        assert len(data) <= 450_000, f"{p.name}: {len(data)} bytes"


def test_save_takes_one_or_two_columns_only(tmp_path):
    from attnlab.paper_figures import style

    plt = style.pyplot()
    assert style.size(1, 2.0) == (3.4, 2.0) and style.size(2, 3.0) == (7.0, 3.0)
    with pytest.raises(ValueError):
        style.size(3, 2.0)
    with pytest.raises(RuntimeError, match="one column"):
        style.save(plt.figure(figsize=(10, 3)), tmp_path, "wide.png")
    (png,) = style.save(plt.figure(figsize=style.size(1, 1.0)), tmp_path, "narrow.png")
    width, dpi = _png_width_dpi(png.read_bytes())
    assert round(dpi) == 300 and width / dpi <= 3.4 + 2 * 0.02 + 1e-3          # the column and the padding
