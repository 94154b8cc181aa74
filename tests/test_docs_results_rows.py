"""The results rows the pages quote are what the committed records give now: every row of a table in
README.md or docs/*.md in the format of `attnlab results P --all --format md` (experiment, setting, model,
metric, paper, ours, diff, n, config, device, notes) that has records (n > 0) equals the row that command
prints today for the same experiment, setting, model, metric and config.  A page that quotes a table and
is not refreshed when a record moves fails here, with the rows that differ."""
from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
HEADER = "| experiment | setting | model | metric | paper | ours (mean ± 95% CI) | diff | n | config | device | notes |"
PAPERS = ("efa", "bidir", "fenchel", "kernel")


def _cells(line: str) -> list[str]:
    """The cells of a markdown table row (escaped pipes kept inside their cell)."""
    body = line.strip()[1:-1].replace("\\|", "\0")
    return [c.strip().replace("\0", "\\|") for c in body.split("|")]


def quoted_rows() -> list[tuple[str, list[str]]]:
    """(page, cells) for every row with records under a results-table header in the pages."""
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        inside = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.strip() == HEADER:
                inside = True
            elif inside and not line.startswith("|"):
                inside = False
            elif inside and not line.startswith("|---"):
                cells = _cells(line)
                if len(cells) == 11 and cells[7] not in ("0", ""):
                    out.append((page.name, cells))
    return out


def _printed(capsys, paper: str, config: str) -> dict:
    assert main(["results", paper, "--all", "--config", config, "--format", "md"]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("| ") and line.strip() != HEADER and not line.startswith("|---"):
            cells = _cells(line)
            if len(cells) == 11:
                rows[(cells[0], cells[1], cells[2], cells[3], cells[8])] = cells
    return rows


def test_quoted_results_rows_are_the_records(capsys):
    if not (ROOT / "results").is_dir():
        pytest.skip("no results/ folder")
    quoted = quoted_rows()
    assert quoted, "no page quotes a results table any more: drop this test"
    printed = {}
    stale = []
    for page, cells in quoted:
        paper = cells[0].split("-")[0]
        assert paper in PAPERS, f"{page}: {cells[0]} is no experiment of a paper"
        if (paper, cells[8]) not in printed:
            printed[paper, cells[8]] = _printed(capsys, paper, cells[8])
        now = printed[paper, cells[8]].get((cells[0], cells[1], cells[2], cells[3], cells[8]))
        if now != cells:
            stale.append(f"{page}: {' | '.join(cells)}\n    now: {' | '.join(now) if now else '(no such row)'}")
    assert not stale, ("rows quoted from `attnlab results P --all --config C --format md` that the records no "
                       "longer give (paste the command's rows):\n" + "\n".join(stale))
