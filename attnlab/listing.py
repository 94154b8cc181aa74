"""Tables and progress display for `attnlab list` and `attnlab verify` (rendered by attnlab.tables)."""
from __future__ import annotations

import sys
from collections import Counter

from attnlab.catalog import Claim, Record, format_value
from attnlab.tables import frame, markdown, text


def claims_table(claims: list[Claim]) -> str:
    rows = [(c.id, c.reference, c.method, c.tier, c.expected, c.statement[:70] + ("…" if len(c.statement) > 70 else ""))
            for c in claims]
    df = frame(rows, ("id", "reference", "method", "tier", "expected", "statement"))
    return text(df) + f"\n{len(claims)} claim(s)"


def claims_markdown(claims: list[Claim]) -> str:
    """Two Markdown tables: every claim; then the errata with the printed and corrected statements."""
    df = frame([(f"`{c.id}`", c.reference, c.method, c.tier, c.expected, c.statement) for c in claims],
               ("id", "reference", "method", "tier", "expected", "statement"))
    return markdown(df) + "\n\n" + errata_markdown(claims)


def errata_markdown(claims: list[Claim]) -> str:
    """The errata: the printed statement (whose check fails) beside the corrected one (whose check holds)."""
    df = frame([(f"`{c.id}`", c.reference, c.statement, c.corrected) for c in claims if c.expected == "erratum"],
               ("erratum", "reference", "as printed (fails)", "corrected (holds)"))
    return markdown(df)


def records_table(records: list[Record]) -> str:
    rows = []
    for r in records:
        v = r.verdict if r.ok else f"{r.verdict} (expected {r.claim.expected})"
        rows.append((r.claim.id, r.claim.reference[:28], r.claim.method, v,
                     format_value(r.evidence.measured, 34), format_value(r.evidence.tolerance, 18),
                     f"{r.seconds:.2f}"))
    return text(frame(rows, ("id", "reference", "method", "verdict", "measured", "tolerance", "seconds")))


def summary_line(records: list[Record]) -> str:
    counts = Counter(r.verdict for r in records)
    bad = [r for r in records if not r.ok]
    parts = ", ".join(f"{counts[v]} {v}" for v in ("holds", "erratum", "fails", "skipped", "error") if counts[v])
    total = sum(r.seconds for r in records)
    status = "all verdicts as expected" if not bad else f"{len(bad)} verdict(s) differ from expected: " + \
        ", ".join(r.claim.id for r in bad)
    return f"{len(records)} claim(s): {parts or 'none'} in {total:.1f}s; {status}"


class ProgressLine:
    """'[3/17] fenchel.thm1.strong-duality ... holds (0.41s)' on stderr, one line per claim."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.stream, self.i = total, stream, 0
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def start(self, cid: str) -> None:
        self.i += 1
        if self.tty:
            self.stream.write(f"\r\x1b[K[{self.i}/{self.total}] {cid} ...")
            self.stream.flush()

    def done(self, rec: Record) -> None:
        mark = "" if rec.ok else "  <-- expected " + rec.claim.expected
        line = f"[{self.i}/{self.total}] {rec.claim.id}: {rec.verdict} ({rec.seconds:.2f}s){mark}"
        if rec.verdict == "error":
            line += f"\n      {rec.evidence.explanation}"
        self.stream.write(("\r\x1b[K" if self.tty else "") + line + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()
