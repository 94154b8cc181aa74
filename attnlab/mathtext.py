"""Text with LaTeX maths, as HTML with MathML: what `attnlab report` shows for a claim's statement, an
erratum's printed and corrected forms and a figure's caption.

A *math text* is plain text with inline maths between dollar signs, ``"for $\\alpha \\to 0$ the error
is $O(\\alpha^2)$"`` (``\\$`` is a literal dollar).  :func:`to_html` escapes the text and converts each
span to MathML with latex2mathml; browsers lay MathML out natively (MathML Core), so the pages need no
JavaScript.  A span that does not convert cleanly -- latex2mathml raises, braces do not balance, an
unknown command survives into the output, an element lacks its arguments -- makes :func:`to_html`
return the escaped plain text it was given as `fallback`: a typo in a LaTeX form never breaks a page.

The LaTeX forms of the claims are written once per paper in ``theory/<paper>/latex.py``
(``LATEX = {claim id: Tex(statement, corrected, of)}``); ``of`` is :func:`fingerprint` of the plain
statement and corrected form they were written for, so a statement reworded later shows as plain text
until its LaTeX form is rewritten.  ``python -m attnlab.mathtext`` lists the claims whose LaTeX form is
stale or missing (a statement with ASCII maths and no form), with the fingerprint of the present wording,
and exits with code 1 while there are any (0 when every form is current); tests/test_report.py fails
while there are any.
"""
from __future__ import annotations

import hashlib
import importlib
import re
import xml.etree.ElementTree as ET
from html import escape
from typing import NamedTuple

from markupsafe import Markup

MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
# MathML elements and the number of children each needs (latex2mathml writes `\frac{1}` as an mfrac
# with one child instead of raising)
_ARITY = {"mfrac": 2, "msub": 2, "msup": 2, "mover": 2, "munder": 2, "mroot": 2, "msubsup": 3,
          "munderover": 3}
_SPAN = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$", re.S)
# What latex2mathml sets differently from TeX: `\sim` becomes a plain tilde identifier (\thicksim is the
# relation), and a function name takes no space before its argument (TeX adds a thin one: `\log M`).
_SIM = re.compile(r"\\sim(?![A-Za-z])")
_FUNCTION = re.compile(r"(\\(?:log|ln|exp|max|min|sup|inf|det|sin|cos)(?![A-Za-z])|\\operatorname\*?\{[^{}]*\})"
                       r"(?=\s*(?:[A-Za-z0-9]|\\(?!big|Big|left|right)[A-Za-z]))")


class Tex(NamedTuple):
    """The LaTeX form of one claim: its statement and (for an erratum) its corrected form, as math
    texts, and the fingerprint of the plain forms they render."""

    statement: str
    corrected: str = ""
    of: str = ""


def fingerprint(statement: str, corrected: str = "") -> str:
    """Eight hex digits that change whenever the plain statement or corrected form changes."""
    return hashlib.sha1(f"{statement}\n{corrected}".encode("utf-8")).hexdigest()[:8]


def to_mathml(tex: str) -> str:
    """One inline LaTeX formula as a MathML ``<math>`` element; ValueError when it does not convert
    cleanly (see the module docstring)."""
    from latex2mathml.converter import convert

    depth = 0
    for i, ch in enumerate(tex):
        if ch in "{}" and (i == 0 or tex[i - 1] != "\\"):
            depth += 1 if ch == "{" else -1
            if depth < 0:
                raise ValueError(f"unbalanced '}}' in {tex!r}")
    if depth:
        raise ValueError(f"unbalanced '{{' in {tex!r}")
    try:
        mathml = convert(_FUNCTION.sub(r"\1\\,", _SIM.sub(r"\\thicksim", tex)))
    except Exception as exc:  # noqa: BLE001 -- latex2mathml raises its own error classes, and IndexError
        raise ValueError(f"latex2mathml cannot convert {tex!r}: {type(exc).__name__} {exc}") from None
    root = ET.fromstring(mathml)
    for el in root.iter():
        tag = el.tag.removeprefix(MATHML_NS)
        if tag in _ARITY and len(el) != _ARITY[tag]:
            raise ValueError(f"{tex!r}: <{tag}> with {len(el)} of its {_ARITY[tag]} arguments")
        if el.text and "\\" in el.text:
            raise ValueError(f"{tex!r}: unknown command {el.text.strip()!r}")
    return mathml


def spans(text: str) -> list[tuple[bool, str]]:
    """`text` cut into (is_math, piece) in order; LaTeX's escaped characters (``\\$``, ``\\_``, ``\\%``,
    ``\\&``, ``\\#``) become the characters in the text pieces.  ValueError on a ``$`` without its partner."""
    out, pos = [], 0

    def text_piece(raw):
        if re.search(r"(?<!\\)\$", raw):
            raise ValueError(f"unpaired '$' in {text!r}")
        out.append((False, re.sub(r"\\([$_%&#])", r"\1", raw)))

    for m in _SPAN.finditer(text):
        if m.start() > pos:
            text_piece(text[pos:m.start()])
        out.append((True, m.group(1)))
        pos = m.end()
    if pos < len(text):
        text_piece(text[pos:])
    return out


def to_html(text: str, fallback: str | None = None, strict: bool = False) -> Markup:
    """`text` (a math text) as HTML: escaped text and MathML.  When a span fails to convert, the escaped
    `fallback` (default: `text` itself), or ValueError with ``strict=True``."""
    try:
        html = "".join(to_mathml(p) if is_math else escape(p, quote=False) for is_math, p in spans(text))
    except ValueError:
        if strict:
            raise
        return escaped(text if fallback is None else fallback)
    return Markup(html)


def escaped(text: str) -> Markup:
    """Plain text (no maths in it) as HTML."""
    return Markup(escape(text, quote=False))


def plain(text: str) -> str:
    """A math text without its dollar signs (an image's alt text, say); `text` itself where its dollar
    signs do not pair."""
    try:
        return "".join(p for _, p in spans(text))
    except ValueError:
        return text


def claim_forms(claim) -> Tex | None:
    """The current LaTeX form of `claim` from ``theory/<paper>/latex.py``, or None where there is none or
    it was written for an older wording of the statement."""
    tex = latex_table(claim.paper).get(claim.id)
    if tex is None or tex.of != fingerprint(claim.statement, claim.corrected):
        return None
    return tex


def latex_table(paper: str) -> dict[str, Tex]:
    """``theory/<paper>/latex.py``'s LATEX (empty where the paper has none)."""
    try:
        module = importlib.import_module(f"attnlab.theory.{paper}.latex")
    except ModuleNotFoundError:
        return {}
    return dict(module.LATEX)


# ASCII maths in a plain statement: a superscript, a subscript, a norm, sqrt( , a comparison, a Greek name
ASCII_MATHS = re.compile(r"\^|_\{|\b[A-Za-z]_[A-Za-z0-9]|\|\||sqrt\(|<=|>=|!=|"
                         r"\b(?:alpha|beta|gamma|delta|lambda|sigma|theta|kappa|eta|rho|mu|xi|zeta|tau|pi|phi|psi|"
                         r"Sigma|Omega|Theta|Lambda)\b")


def needing_forms() -> list[tuple[str, str, str]]:
    """(claim id, what is wrong, the fingerprint of its present wording) for every claim whose LaTeX form
    was written for an older wording, or that has ASCII maths in its statement and no LaTeX form."""
    from attnlab import catalog

    out = []
    for c in catalog.all_claims():
        tex = latex_table(c.paper).get(c.id)
        now = fingerprint(c.statement, c.corrected)
        if tex is not None and tex.of != now:
            out.append((c.id, "stale: the statement was reworded", now))
        elif tex is None and ASCII_MATHS.search(f"{c.statement} {c.corrected}"):
            out.append((c.id, "missing: ASCII maths and no LaTeX form", now))
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m attnlab.mathtext``: list the claims of :func:`needing_forms`; exit code 1 when there are
    any (a LaTeX form stale or missing), 0 when every form is current."""
    from attnlab.errors import ArgumentParser

    ArgumentParser(prog="python -m attnlab.mathtext",
                   description="List the claims whose LaTeX form (theory/<paper>/latex.py) is stale (written for "
                   "an older wording of the statement) or missing (ASCII maths in the statement and no form), "
                   "with the fingerprint of the present wording.  Exit code 1 when there are any, 0 when every "
                   "form is current.").parse_args(argv)
    rows = needing_forms()
    for cid, why, now in rows:
        print(f"{cid}  {why}  (of={now!r})")
    print(f"{len(rows)} claim(s) need a LaTeX form in theory/<paper>/latex.py" if rows
          else "every LaTeX form is current")
    return 1 if rows else 0


if __name__ == "__main__":
    import sys

    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
