"""The one table renderer: a pandas DataFrame as aligned text, Markdown, LaTeX, CSV or JSON.

Every table attnlab prints -- the claims of `attnlab list`, the verdicts of `attnlab verify`, the
results of `attnlab results` -- is built as a DataFrame by its own module and rendered here.
"""
from __future__ import annotations

FORMATS = ("table", "md", "latex", "csv", "json")


def frame(rows, columns):
    """A DataFrame of `rows` (sequences or dicts) with the given column names, every column kept as
    given (no dtype inference that would turn ``None`` into ``NaN`` in a text column)."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=list(columns), dtype=object)


def _cell(x) -> str:
    return "" if x is None else str(x)


def text(df) -> str:
    """Left-aligned columns separated by two spaces, a dashed rule under the header."""
    head = [str(c) for c in df.columns]
    body = [[_cell(x) for x in row] for row in df.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


def md_escape(x) -> str:
    """A Markdown table cell: pipes escaped, newlines folded."""
    return _cell(x).replace("|", "\\|").replace("\n", " ")


def markdown(df) -> str:
    """A GitHub Markdown table; cells are escaped (a caller that wants `code` adds the backticks)."""
    out = ["| " + " | ".join(md_escape(c) for c in df.columns) + " |",
           "|" + "|".join("---" for _ in df.columns) + "|"]
    out += ["| " + " | ".join(md_escape(x) for x in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(out)


def render(df, fmt: str) -> str:
    """`df` in one of FORMATS: 'table' (aligned text), 'md', 'latex' (a tabular, special characters
    escaped), 'csv', 'json' (a list of row objects)."""
    if fmt not in FORMATS:
        from attnlab.errors import UsageError

        raise UsageError(f"--format {fmt!r}: not a table format; valid: {', '.join(FORMATS)}")
    if fmt == "table":
        return text(df)
    if fmt == "md":
        return markdown(df)
    if fmt == "latex":
        return df.fillna("").astype(str).to_latex(index=False, escape=True).rstrip("\n")
    if fmt == "csv":
        return df.to_csv(index=False).rstrip("\n")
    return df.to_json(orient="records", indent=2, force_ascii=False, double_precision=15)
