"""Tables and progress display for `attnlab list` and `attnlab verify` (rendered by attnlab.tables)."""
from __future__ import annotations

import sys
from collections import Counter

from attnlab.catalog import VERDICTS, VERDICT_WORDS, Claim, Record, format_value, on_results_scale
from attnlab.tables import frame, markdown, text


def claims_table(claims: list[Claim], width: int | None = None) -> str:
    """One line per claim; with `width` (the terminal's) the columns are cut to fit, the reference first and
    the statement last, and left out (the reference first) where that is not enough."""
    rows = [(c.id, c.reference, c.method, c.tier, c.expected, c.statement) for c in claims]   # (cut by the fit)
    df = frame(rows, ("id", "reference", "method", "tier", "expected", "statement"))
    return text(df, width=width, whole="--json -", priority=("id", "statement", "expected", "method", "tier", "reference"),
                keep=("id",), overflow="elide") + f"\n{len(claims)} claim(s)"


def claims_markdown(claims: list[Claim]) -> str:
    """Markdown tables: every claim; the theory errata with the printed and corrected statements; the
    empirical findings on their verdict scale."""
    df = frame([(f"`{c.id}`", c.reference, c.method, c.tier, VERDICT_WORDS[c.expected], c.statement) for c in claims],
               ("id", "reference", "method", "tier", "expected", "statement"))
    return (markdown(df) + "\n\n### Theory errata\n\n" + errata_markdown(claims)
            + "\n\n### Empirical findings\n\n" + findings_markdown(claims))


def errata_markdown(claims: list[Claim]) -> str:
    """The theory errata: the printed statement (whose check fails) beside the corrected one (whose check
    holds).  Empirical claims are not here: they are :func:`findings_markdown`."""
    df = frame([(f"`{c.id}`", c.reference, c.statement, c.corrected) for c in claims
                if c.expected == "erratum" and not on_results_scale(c)],
               ("erratum", "reference", "as printed (fails)", "corrected (holds)"))
    return markdown(df)


def findings_markdown(claims: list[Claim]) -> str:
    """The empirical claims (`results`, and `training` claims with a registration) on their verdict scale,
    each with its data source and, where the evidence does not reproduce the paper, what we measured."""
    rows = []
    for c in claims:
        if not on_results_scale(c):
            continue
        reg = c.registration
        source = "paper" if reg is None or reg.data_source == "paper" else f"substitute ({reg.deviation})"
        rows.append((f"`{c.id}`", c.reference, source, VERDICT_WORDS[c.expected], c.statement, c.corrected or "-"))
    return markdown(frame(rows, ("claim", "reference", "data source", "verdict (registered evidence)",
                                 "statement", "what we measured")))


def records_table(records: list[Record], width: int | None = None) -> str:
    """The verdicts, with the reason of every `skipped` (and `error`) claim in the last column; with
    `width` (the terminal's) the table fits it, the reasons wrapped and the reference cut first."""
    rows = []
    for r in records:
        v = VERDICT_WORDS[r.verdict] if r.ok else f"{VERDICT_WORDS[r.verdict]} (expected {VERDICT_WORDS[r.claim.expected]})"
        reason = r.evidence.explanation if r.verdict in ("skipped", "error") else ""
        rows.append((r.claim.id, r.claim.reference, r.claim.method, v,       # (cut by the fit, with a mark)
                     format_value(r.evidence.measured, 34), format_value(r.evidence.tolerance, 18),
                     f"{r.seconds:.2f}", reason))
    columns = ("id", "reference", "method", "verdict", "measured", "tolerance", "seconds", "reason")
    if not any(r[-1] for r in rows):                   # no claim skipped: no empty column
        rows, columns = [r[:-1] for r in rows], columns[:-1]
    return text(frame(rows, columns), width=width, whole="--json -", priority=("id", "verdict", "reason", "measured", "tolerance", "seconds", "method",
                                       "reference"), keep=("id",))


def summary_line(records: list[Record], results_folder: str | None = None) -> str:
    """The last line of `verify`: counts, time, and what differs from expected (`results_folder`: where the
    empirical claims read their records, named where some found none)."""
    counts = Counter(r.verdict for r in records)
    bad = [r for r in records if not r.ok]
    parts = ", ".join(f"{counts[v]} {VERDICT_WORDS[v]}" for v in VERDICTS if counts[v])
    total = sum(r.seconds for r in records)
    status = "all verdicts as expected" if not bad else f"{len(bad)} verdict(s) differ from expected: " + \
        ", ".join(r.claim.id for r in bad)
    where = f" in {results_folder}" if results_folder else ""
    lost = [r for r in bad if r.claim.method == "results" and r.verdict == "skipped"]
    if lost:
        status += (f"; {len(lost)} empirical claim(s) found no usable records{where} (are the committed records "
                   "there? $ATTNLAB_RESULTS names another folder)")
    moved = [r for r in bad if r.claim.method == "results" and r.verdict != "skipped"]
    # registered seeds missing from the records read: the evidence is incomplete here, not a new finding
    missing = [r for r in moved if ((r.evidence.data or {}).get("results") or {}).get("seeds_missing")]
    if missing:
        status += (f"; {len(missing)} empirical claim(s) miss registered seeds{where}: "
                   + ", ".join(f"{r.claim.id} {VERDICT_WORDS[r.verdict]} (registered: {VERDICT_WORDS[r.claim.expected]})"
                               for r in missing))
    moved = [r for r in moved if r not in missing]
    if moved:
        status += (f"; {len(moved)} of them empirical -- a finding: the registered evidence now gives "
                   + ", ".join(f"{r.claim.id} {VERDICT_WORDS[r.verdict]} (registered: {VERDICT_WORDS[r.claim.expected]})"
                               for r in moved)
                   + "; theory/preregistration.py changes only together with the records")
    # skipped where a verdict is expected, for an input missing here (a paper's text, a data set): not a
    # disagreement, but not checked either
    unchecked = [r for r in records if r.ok and r.verdict == "skipped" and r.claim.expected != "skipped"]
    if unchecked:
        status += (f"; {len(unchecked)} claim(s) not checked here, an input missing (reason column): "
                   + ", ".join(r.claim.id for r in unchecked))
    return f"{len(records)} claim(s): {parts or 'none'} in {total:.1f}s; {status}"


class ProgressLine:
    """'[3/17] fenchel.thm1.strong-duality: holds (0.41s)' on stderr, one line per claim; on a terminal the
    claim running is shown on a line of its own that is overwritten, with the overall ETA (the mean time
    of the claims run so far times the claims left) and cut to the terminal's width.  Where stderr is not a
    terminal, quiet: a line only for a claim whose verdict is not the expected one (the table that follows
    has every claim)."""

    def __init__(self, total: int, stream=sys.stderr):
        from attnlab.progress import is_tty

        self.total, self.stream, self.i = total, stream, 0
        self.tty = is_tty(stream)
        self.t0 = None

    def eta(self) -> str:
        """The overall time left, from the claims finished so far ('' before the first has finished)."""
        import time

        done = self.i - 1
        if self.t0 is None or done < 1 or self.total <= done:
            return ""
        left = (time.monotonic() - self.t0) / done * (self.total - done)
        m, sec = divmod(int(round(left)), 60)
        return f"ETA {m // 60}:{m % 60:02d}:{sec:02d}" if m >= 60 else f"ETA {m}:{sec:02d}"

    def start(self, cid: str) -> None:
        import shutil
        import time

        if self.t0 is None:
            self.t0 = time.monotonic()
        self.i += 1
        if self.tty:
            eta = self.eta()
            line = f"[{self.i}/{self.total}] {cid} ..." + (f"  {eta}" if eta else "")
            width = shutil.get_terminal_size().columns
            self.stream.write("\r\x1b[K" + (line if len(line) < width else line[:max(width - 2, 1)] + "…"))
            self.stream.flush()

    def done(self, rec: Record) -> None:
        if not self.tty and rec.ok:
            return
        mark = "" if rec.ok else "  <-- expected " + rec.claim.expected
        line = f"[{self.i}/{self.total}] {rec.claim.id}: {rec.verdict} ({rec.seconds:.2f}s){mark}"
        if rec.verdict == "error":
            line += f"\n      {rec.evidence.explanation}"
        self.stream.write(("\r\x1b[K" if self.tty else "") + line + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()
