"""`attnlab figures` is deterministic: rendering the same records twice gives byte-identical PNG,
PDF and SVG files (no dates or versions in them), and every figure module writes through the one
style's `save`."""
from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
# Cheap figures drawn from committed records, one per figure module with experiments.
FIGURES = ("fenchel-exp-fig4-bert", "fenchel-exp-ot-vit", "exp_fig4", "table2", "kernel_exp_results")


def _render(out: Path) -> dict[str, bytes]:
    assert main(["figures", "--only", *FIGURES, "--vector", "--out", str(out)]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    import os

    if not (ROOT / "results").is_dir() and not os.environ.get("ATTNLAB_RESULTS"):
        pytest.skip("no results/ folder to draw the figures from")
    return _render(tmp_path_factory.mktemp("a")), _render(tmp_path_factory.mktemp("b"))


def test_png_pdf_svg_for_each_figure(twice):
    first, _ = twice
    stems = {Path(n).stem for n in first}
    assert len(stems) == len(FIGURES)
    assert {Path(n).suffix for n in first} == {".png", ".pdf", ".svg"}
    assert all(f"{s}{ext}" in first for s in stems for ext in (".png", ".pdf", ".svg"))


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
