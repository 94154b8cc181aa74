"""attnlab.tables, the one table renderer, and `attnlab results --format`."""
from __future__ import annotations

import json

import pytest

from attnlab import cli, tables
from attnlab.results import format_rows

ROWS = [
    {"experiment": "kernel-x", "setting": "N64", "model": "Kernel | Softmax", "metric": "accuracy", "paper": 93.5,
     "ours_mean": 91.25, "ours_ci95": 1.5, "n_seeds": 5, "device": "cpu", "config": "full", "diff": -2.25,
     "substitute": None, "converged": True},
    {"experiment": "kernel-x", "setting": "N64", "model": "Cts_Softmax", "metric": "accuracy", "paper": 90.0,
     "ours_mean": None, "ours_ci95": None, "n_seeds": 0, "device": None, "config": None, "diff": None,
     "substitute": "synthetic", "converged": False},
]


def test_cli_formats_are_the_renderer_formats():
    assert cli.TABLE_FORMATS == tables.FORMATS


def test_text_and_markdown():
    t = format_rows(ROWS, "table").splitlines()
    assert t[0].startswith("experiment") and set(t[1]) <= {"-", " "} and "91.25 ± 1.5" in t[2]
    assert "substitute data; not converged" in t[3]
    md = format_rows(ROWS, "md").splitlines()
    assert md[1].startswith("|---|") and "Kernel \\| Softmax" in md[2] and len(md) == 4


def test_latex_escapes():
    tex = format_rows(ROWS, "latex")
    assert tex.startswith("\\begin{tabular}") and "Cts\\_Softmax" in tex and "95\\% CI" in tex


def test_latex_protects_brackets_and_non_ascii():
    """A cell starting with [ after \\\\ or \\midrule was read as their optional length, and pdflatex stops at a
    character its UTF-8 input does not set (β): brackets are braced, Greek letters are math macros, accented
    Latin letters stay, anything else is its code point."""
    from attnlab.tables import latex_escape

    assert latex_escape("[5, 0] β=1") == r"{[}5, 0{]} \ensuremath{\beta}=1"
    assert latex_escape("λ Λ α") == r"\ensuremath{\lambda} \ensuremath{\Lambda} \ensuremath{\alpha}"
    assert latex_escape("°C² é") == r"\textdegree{}C\textsuperscript{2} é"
    assert latex_escape("中ϵ") == "{[}U+4E2D{]}{[}U+03F5{]}"
    tex = format_rows([{**ROWS[0], "setting": "[5, 0]"}], "latex")
    assert "\\\\\n[" not in tex and "\\midrule\n[" not in tex and "{[}5, 0{]}" in tex


def test_csv_and_json_carry_raw_numbers():
    csv = format_rows(ROWS, "csv").splitlines()
    assert csv[0].split(",")[:6] == ["experiment", "setting", "model", "metric", "paper", "ours_mean"]
    assert "91.25" in csv[1]
    rows = json.loads(format_rows(ROWS, "json"))
    assert rows[0]["ours_mean"] == 91.25 and rows[1]["ours_mean"] is None and rows[1]["converged"] is False


def test_results_format_option(tmp_path, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(tmp_path), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("experiment,setting,model,metric")
    assert cli.main(["results", "efa", "--format", "html"]) == 2
    assert "--format" in capsys.readouterr().err


def test_bad_format_is_a_usage_error():
    from attnlab.errors import UsageError

    with pytest.raises(UsageError, match="--format"):
        tables.render(tables.frame([], ("a",)), "xml")


def test_notes_tell_not_converged_from_unknown():
    """A run the rule found unconverged and a run it could not judge (no curve: `converged` null) are told
    apart in the notes and counted in n_unknown; both are left out where converged runs exist."""
    from attnlab.results import convergence_note, summarize

    def rec(seed, value, converged, model="M"):
        return {"experiment": "efa-x", "config": "full", "seed": seed, "converged": converged,
                "metrics": [{"setting": "s", "model": model, "metric": "MSE", "value": value}]}

    def row(*records):
        (r,) = [r for r in summarize("efa", None, records=list(records)) if r["experiment"] == "efa-x"]
        return r, convergence_note(r)

    assert row(rec(0, 1.0, None), rec(1, 2.0, None))[1] == "convergence unknown"
    assert row(rec(0, 1.0, False), rec(1, 2.0, False))[1] == "not converged"
    r, note = row(rec(0, 1.0, False), rec(1, 2.0, None), rec(2, 3.0, None))
    assert (r["n_not_converged"], r["n_unknown"], note) == (3, 2, "not converged (1 run(s)) or unknown (2)")
    r, note = row(rec(0, 1.0, True), rec(1, 2.0, False), rec(2, 3.0, None))
    assert (r["ours_mean"], r["n_seeds"], r["n_unknown"]) == (1.0, 1, 1)
    assert note == "1 run(s) not converged and 1 run(s) of unknown convergence, left out"
    assert row(rec(0, 1.0, True), rec(1, 2.0, None))[1] == "1 run(s) of unknown convergence, left out"
    assert row(rec(0, 1.0, True), rec(1, 2.0, True))[1] == ""
