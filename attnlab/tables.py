"""The one table renderer: a pandas DataFrame as aligned text, Markdown, LaTeX, CSV or JSON.

Every table attnlab prints -- the claims of `attnlab list`, the verdicts of `attnlab verify`, the
results of `attnlab results` -- is built as a DataFrame by its own module and rendered here.
"""
from __future__ import annotations

import re

FORMATS = ("table", "md", "latex", "csv", "json")


def frame(rows, columns):
    """A DataFrame of `rows` (sequences or dicts) with the given column names, every column kept as
    given (no dtype inference that would turn ``None`` into ``NaN`` in a text column)."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=list(columns), dtype=object)


def _cell(x) -> str:
    return "" if x is None else str(x)


def terminal_width() -> int | None:
    """The width to fit a table printed on stdout into: the terminal's columns when stdout is a terminal
    (shutil.get_terminal_size, which honours $COLUMNS), None (no limit) when it is a file or a pipe."""
    import shutil
    import sys

    from attnlab.progress import is_tty

    return shutil.get_terminal_size().columns if is_tty(sys.stdout) else None


def _fit(widths: list[int], floors: list[int], order: list[int], width: int, gap: int) -> tuple[list[int], list[int]]:
    """Column widths that fit `width`: the columns are narrowed down to their floors, the least important
    first (`order`: most important first); what still does not fit is hidden, least important first.
    Returns (widths, indices of the hidden columns)."""
    w = list(widths)
    shown = list(order)

    def total():
        return sum(w[i] for i in shown) + gap * (len(shown) - 1)

    for i in reversed(order):
        excess = total() - width
        if excess <= 0:
            break
        w[i] -= min(excess, w[i] - floors[i])
    hidden = []
    while total() > width and len(shown) > 1:
        hidden.append(shown.pop())
    for i in shown:                                   # what hiding freed goes back, most important first
        w[i] += max(0, min(width - total(), widths[i] - w[i]))
    return w, hidden


def text(df, width: int | None = None, priority=None, keep=(), overflow: str = "wrap", whole: str = "--format csv") -> str:
    """Left-aligned columns separated by two spaces, a dashed rule under the header.

    With `width` (the terminal's: :func:`terminal_width`) the table fits it: the columns are narrowed
    least important first (`priority`: column names, most important first; default left to right) down
    to their longest word (6 to 20 characters; the columns in `keep`, e.g. numbers and ids, no narrower
    than their cells), their cells wrapped onto more
    lines (`overflow="wrap"`) or cut with an ellipsis (`"elide"`: one line per row); where even that does
    not fit, the least important columns are left out and a last line names them (and the option that
    gives every column, `whole`)."""
    import textwrap

    head = [str(c) for c in df.columns]
    body = [[_cell(x).replace("\n", " ") for x in row] for row in df.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]
    hidden: list[int] = []
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        names = list(priority or head)
        order = [head.index(c) for c in names if c in head] + [i for i, h in enumerate(head) if h not in names]
        # a column narrows to its longest word (at most 20, at least 6): wrapping breaks no word that fits
        words = [max([len(x) for r in body + [head] for x in r[i].split()] or [0]) for i in range(len(head))]
        # a kept column narrows only its header (to its longest word)
        # (cut with an ellipsis, to 12 characters)
        floors = [max([len(r[i]) for r in body] + [max(map(len, h.split()), default=0)]) if h in keep
                  else min(w, 12) if overflow == "elide"
                  else min(w, max(6, min(words[i], 20))) for i, (h, w) in enumerate(zip(head, widths))]
        widths, hidden = _fit(widths, floors, order, width, 2)
    cols = [i for i in range(len(head)) if i not in hidden]

    def cell_lines(s: str, w: int) -> list[str]:
        if len(s) <= w:
            return [s]
        if overflow == "elide":
            return [s[:max(w - 1, 0)] + "…"]
        return textwrap.wrap(s, w, break_long_words=True, break_on_hyphens=False) or [""]

    def row_lines(cells: list[str]) -> list[str]:
        parts = [cell_lines(cells[i], widths[i]) for i in cols]
        n = max(len(p) for p in parts)
        return ["  ".join((p[k] if k < len(p) else "").ljust(widths[i]) for p, i in zip(parts, cols)).rstrip()
                for k in range(n)]

    lines = row_lines(head) + ["  ".join("-" * widths[i] for i in cols)]
    for r in body:
        lines += row_lines(r)
    if hidden:
        lines.append(textwrap.fill(f"({len(hidden)} column(s) left out to fit {width} characters: "
                                   f"{', '.join(head[i] for i in sorted(hidden))}; widen the terminal or use "
                                   f"{whole})", max(width, 20)))
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


def render(df, fmt: str, width: int | None = None) -> str:
    """`df` in one of FORMATS: 'table' (aligned text fit to `width`, unlimited by default: a caller that
    prints to a terminal gives :func:`terminal_width`), 'md', 'latex' (:func:`latex`), 'csv', 'json' (a
    list of row objects)."""
    if fmt not in FORMATS:
        from attnlab.errors import UsageError

        raise UsageError(f"--format {fmt!r}: not a table format; valid: {', '.join(FORMATS)}")
    if fmt == "table":
        return text(df, width=width)
    if fmt == "md":
        return markdown(df)
    if fmt == "latex":
        return latex(df)
    if fmt == "csv":
        return df.to_csv(index=False).rstrip("\n")
    # json.dumps of the rows (NaN as null): pandas' to_json rounds to at most 15 significant digits
    # (0.9714285714285715 as 0.971428571428572), and `csv` and `--json -` keep every digit
    import json

    rows = [{k: (None if isinstance(v, float) and v != v else v.item() if hasattr(v, "item") else v)
             for k, v in r.items()} for r in df.astype(object).to_dict(orient="records")]
    return json.dumps(rows, indent=2, ensure_ascii=False, default=str)



# LaTeX: every character that is special in text mode, and the few non-ASCII ones our tables hold
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "±": r"\ensuremath{\pm}", "−": r"\ensuremath{-}",
          "×": r"\ensuremath{\times}", "…": r"\dots{}", "≤": r"\ensuremath{\le}", "≥": r"\ensuremath{\ge}",
          "–": "--", "—": "---", "[": "{[}", "]": "{]}", "°": r"\textdegree{}", "²": r"\textsuperscript{2}",
          "³": r"\textsuperscript{3}", "µ": r"\ensuremath{\mu}", "·": r"\ensuremath{\cdot}",
          "∞": r"\ensuremath{\infty}", "≈": r"\ensuremath{\approx}", "→": r"\ensuremath{\to}",
          "\u00a0": "~"}
# ([ and ] braced: a cell that starts with [ after \\ or \midrule was read as their optional length)


def _latex_char(ch: str) -> str:
    """One character in LaTeX text mode (pdflatex with its default UTF-8 input): the specials and symbols of
    _LATEX; a Greek letter as its math macro; a Latin letter with accents as it is (the UTF-8 input sets them);
    any other non-ASCII character as its code point, [U+03F5], rather than a character pdflatex stops at."""
    if ch in _LATEX:
        return _LATEX[ch]
    if ch.isascii():
        return ch
    import unicodedata

    name = unicodedata.name(ch, "")
    if name.startswith("GREEK SMALL LETTER ") and name.count(" ") == 3:
        word = name.rsplit(" ", 1)[1].lower()
        return r"\ensuremath{\%s}" % {"lamda": "lambda"}.get(word, word)          # (Unicode spells it lamda)
    if name.startswith("GREEK CAPITAL LETTER ") and name.count(" ") == 3:
        word = {"Lamda": "Lambda"}.get(name.rsplit(" ", 1)[1].capitalize(), name.rsplit(" ", 1)[1].capitalize())
        if word in ("Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"):
            return r"\ensuremath{\%s}" % word
    base = unicodedata.normalize("NFD", ch)[0]
    if unicodedata.category(ch).startswith("L") and base.isascii() and base.isalpha() and ch.isalpha():
        return ch
    return "{[}U+%04X{]}" % ord(ch)
_NUMBER = re.compile(r"^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?$")
LATEX_PACKAGES = r"\usepackage{booktabs}\usepackage{siunitx}"


def latex_escape(x) -> str:
    """A LaTeX text-mode string: the special characters (\\ & % $ # _ { } ~ ^ | < > [ ]) escaped, the
    non-ASCII ones as _latex_char writes them."""
    return "".join(_latex_char(ch) for ch in _cell(x))


def _table_format(cells: list[str]) -> str:
    """siunitx's table-format of a column of numbers: sign, integer and decimal digits, exponent."""
    sign = intd = dec = exp = 0
    esign = False
    for c in cells:
        m = _NUMBER.match(c)
        if m:
            sign |= bool(m.group(1))
            intd, dec = max(intd, len(m.group(2))), max(dec, len(m.group(3) or ""))
            if m.group(5):
                exp, esign = max(exp, len(m.group(5))), esign or bool(m.group(4))
    return (("-" if sign else "") + f"{intd}.{dec}" + (f"e{'-' if esign else ''}{exp}" if exp else ""))


def latex(df, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs tabular (\\toprule, \\midrule, \\bottomrule; the packages of LATEX_PACKAGES): every column whose
    cells are all numbers (or empty, or "-") is a siunitx ``S`` column (aligned on the decimal point, its
    table-format read from the numbers; a missing number is "--"), every other cell is escaped.  With a
    `caption` (escaped) the tabular is placed in a ``table`` float (small type) with the caption and
    `label`.  A column with no cell filled in is left out."""
    head = [str(c) for c in df.columns]
    body = [[_cell(x) for x in row] for row in df.itertuples(index=False)]
    if body:                                  # a column with nothing in it only widens the table
        keep = [i for i in range(len(head)) if any(r[i] for r in body)]
        head, body = [head[i] for i in keep], [[r[i] for i in keep] for r in body]
    numeric = [any(_NUMBER.match(r[i]) for r in body) and all(_NUMBER.match(r[i]) or r[i] in ("", "-") for r in body)
               for i in range(len(head))]
    spec = " ".join(f"S[table-format={_table_format([r[i] for r in body])}]" if numeric[i] else "l"
                    for i in range(len(head)))
    lines = [f"\\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join("{" + latex_escape(h) + "}" if numeric[i] else latex_escape(h) for i, h in enumerate(head))
             + r" \\", r"\midrule"]
    for r in body:
        lines.append(" & ".join((c if _NUMBER.match(c) else "{--}") if numeric[i] else latex_escape(c)
                                for i, c in enumerate(r)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption is None:
        return "\n".join(lines)
    safe = re.sub(r"[^A-Za-z0-9:.-]+", "-", label) if label else None
    return "\n".join([r"\begin{table}[htbp]", r"\centering", r"\small", f"\\caption{{{latex_escape(caption)}}}"]
                     + ([f"\\label{{{safe}}}"] if safe else []) + lines + [r"\end{table}"])
