"""Regenerate docs/claims.md from the live catalog: `python -m attnlab.docs`."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from attnlab import catalog
from attnlab.experiment import atomic_write_text
from attnlab.report import claims_markdown

HEADER = """# Claims and errata

Generated from the catalog by `python -m attnlab.docs`; a test fails when this file and the catalog
disagree. `attnlab verify --tier all --json -` gives the measured values, tolerances and verdicts.
Per paper: {counts}.

"""


def render() -> str:
    claims = catalog.all_claims()
    by = Counter((c.paper, c.expected) for c in claims)
    counts = "; ".join(f"{p} {by[(p, 'holds')] + by[(p, 'erratum')]} claims ({by[(p, 'erratum')]} errata)"
                       for p in catalog.PAPERS)
    return HEADER.format(counts=counts) + claims_markdown(claims) + "\n"


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    path = atomic_write_text(root / "docs" / "claims.md", render())
    print(path)


if __name__ == "__main__":
    main()
