"""The headline view of `attnlab results` (the paper's configuration and metric, the registered verdicts),
its LaTeX export, and tables that fit the terminal."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from attnlab.convergence import RULE

from attnlab import cli, headline, tables
from attnlab.results import summarize


def judgement(converged) -> dict:
    """A record's convergence judgement under this attnlab's rule, as its `converged` flag implies (the readers
    count a record without one, or one that contradicts the flag, as not judged)."""
    return {"status": {True: "converged", False: "not-levelled", None: "unknown"}[converged], "rule": RULE}


def _write(root, exp, config, seed, metrics, converged=True):
    d = root / exp / config
    d.mkdir(parents=True, exist_ok=True)
    rec = {"experiment": exp, "config": config, "seed": seed, "device": "cpu", "converged": converged,
           "convergence": judgement(converged),
           "wall_seconds": 12.5 + seed, "training": {"epochs_run": 5, "stopped": "early-stopping"},
           "metrics": [{"setting": s, "model": m, "metric": k, "value": v} for s, m, k, v in metrics]}
    (d / f"seed{seed}.json").write_text(json.dumps(rec))


@pytest.fixture
def root(tmp_path):
    """efa-instacart at its paper config (full-es, 3 seeds), at full and quick, with a second metric."""
    r = tmp_path / "results"
    for seed in range(3):
        _write(r, "efa-instacart", "full-es", seed,
               [("bidirectional", "EFA", "test CE", 3.40 + 0.01 * seed), ("bidirectional", "FM", "test CE", 3.47),
                ("bidirectional", "EFA", "train CE", 3.1), ("bidirectional", "PMF", "test CE", 3.6)])
        _write(r, "efa-instacart", "quick", seed, [("bidirectional", "EFA", "test CE", 3.9)], converged=False)
    _write(r, "efa-instacart", "full", 0, [("bidirectional", "EFA", "test CE", 3.5)])
    return r


def test_headline_config_is_the_registered_claims_config():
    assert headline.headline_config("efa-instacart") == "full-es"
    assert headline.headline_config("kernel-forda") == "full-es"
    assert headline.headline_config("efa-synthetic") == "full"
    assert headline.headline_config("kernel-cost") == "full"            # no registered claim
    assert headline.headline_metrics("bidir-toy-corpus") == ("spearman_prop9_ratio", "pearson_prop9_M")


def test_headline_rows_keep_the_paper_config_and_metric(root):
    rows = headline.headline_rows("efa", root)
    assert {r["experiment"] for r in rows} >= {"efa-instacart", "efa-synthetic"}
    insta = [r for r in rows if r["experiment"] == "efa-instacart"]
    assert {r["config"] for r in insta} == {"full-es"} and {r["metric"] for r in insta} == {"test CE"}
    efa = next(r for r in insta if r["setting"] == "bidirectional" and r["model"] == "EFA")
    assert efa["n_seeds"] == 3 and efa["ours_mean"] == pytest.approx(3.41) and efa["paper"] == 3.42
    assert efa["claims"] == ["efa.results.instacart-bidirectional"]
    assert efa["verdicts"] == ["inconclusive"]           # judged on the fixture's 3 of the 5 registered seeds
    assert efa["data_source"] == "substitute"
    uni = next(r for r in insta if r["setting"] == "unidirectional" and r["model"] == "EFA")
    assert uni["n_seeds"] == 0 and uni["ours_mean"] is None and uni["paper"] is not None   # not run: shown
    syn = next(r for r in rows if r["experiment"] == "efa-synthetic" and r["model"] == "FM")
    assert syn["data_source"] == "paper" and syn["n_seeds"] == 0
    # a model neither the paper nor a claim speaks of is one level down
    assert not any(r["model"] == "PMF" for r in rows)
    assert "substitute: protocol" in headline.caption("efa-instacart", insta)
    synthetic = [r for r in rows if r["experiment"] == "efa-synthetic"]
    assert "substitute" not in headline.caption("efa-synthetic", synthetic)


def test_results_cli_headline_by_default_all_on_request(root, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root)]) == 0
    out = capsys.readouterr().out
    block = out.split("efa-instacart", 1)[1].split("\n\n", 1)[0]
    # (the verdicts judged on these records: 3 of the 5 registered seeds, no unidirectional record)
    assert "(full-es)" in block and "inconclusive" in block and "3.41 ± " in block
    assert "reproduced on a substitute" not in block
    assert "train CE" not in out and "3.9" not in block and "quick" not in block
    assert "--all" in out
    assert cli.main(["results", "efa", "--results-dir", str(root), "--all"]) == 0
    out = capsys.readouterr().out
    assert "train CE" in out and "quick" in out and "full-es" in out and "PMF" in out


def test_results_json_and_csv_headline_and_all(root, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root), "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(set(headline.HEADLINE_KEYS) <= set(r) for r in rows)
    assert {r["config"] for r in rows if r["experiment"] == "efa-instacart"} == {"full-es"}
    assert any(r["claims"] == ["efa.results.instacart-bidirectional"] for r in rows)
    assert cli.main(["results", "efa", "--results-dir", str(root), "--json", "-", "--all"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert {"quick", "full", "full-es"} <= {r["config"] for r in every} and "claims" not in every[0]
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "csv"]) == 0
    csv = capsys.readouterr().out.splitlines()
    assert csv[0].split(",") == list(headline.HEADLINE_KEYS)
    assert any("efa.results.instacart-bidirectional" in line and "full-es" in line for line in csv)
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "csv", "--all"]) == 0
    assert "quick" in capsys.readouterr().out


def test_results_config_gives_the_headline_at_that_config(root, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root), "--config", "quick", "--json", "-"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["n_seeds"]]
    assert [(r["config"], r["ours_mean"]) for r in rows] == [("quick", 3.9)]


def test_another_config_leaves_out_the_experiments_without_its_records(root, capsys):
    """`--config quick` names the experiments that have quick records: the others' tables would hold only the paper's
    numbers beside empty cells (their own paper configuration still shows them, with 0 seeds)."""
    _write(root, "efa-synthetic", "full", 0, [("bidirectional", "EFA", "test MSE", 0.5)])
    assert cli.main(["results", "efa", "--results-dir", str(root), "--config", "quick", "--json", "-"]) == 0
    assert {r["experiment"] for r in json.loads(capsys.readouterr().out)} == {"efa-instacart"}
    assert cli.main(["results", "efa", "--results-dir", str(root), "--json", "-"]) == 0
    shown = {r["experiment"] for r in json.loads(capsys.readouterr().out)}
    assert {"efa-instacart", "efa-synthetic", "efa-temperature"} <= shown       # (temperature: paper numbers only)


def test_markdown_one_table_per_experiment(root, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "md"]) == 0
    md = capsys.readouterr().out
    rules = [line for line in md.splitlines() if line.startswith("|---|")]
    assert md.count("#### ") == len(rules) == len({r["experiment"] for r in headline.headline_rows("efa", root)})


# ----------------------------------------------------------------------------------------------- LaTeX
def _check_latex(tex: str, n_tables: int) -> None:
    """Balanced environments, one tabular per experiment, as many cells in each row as columns."""
    begins, ends = re.findall(r"\\begin\{(\w+)\}", tex), re.findall(r"\\end\{(\w+)\}", tex)
    stack = []
    for m in re.finditer(r"\\(begin|end)\{(\w+)\}", tex):
        if m.group(1) == "begin":
            stack.append(m.group(2))
        else:
            assert stack and stack.pop() == m.group(2), m.group(0)
    assert not stack and sorted(begins) == sorted(ends)
    assert begins.count("tabular") == n_tables == begins.count("table") == tex.count("\\caption{")
    for tab in re.findall(r"\\begin\{tabular\}\{([^\n]*)\}\n(.*?)\\end\{tabular\}", tex, re.S):
        spec, body = tab
        ncols = len(re.findall(r"S\[[^\]]*\]|\bl\b", spec))
        assert "\\toprule" in body and "\\midrule" in body and "\\bottomrule" in body
        for line in body.splitlines():
            if line.endswith("\\\\"):
                cells = re.split(r"(?<!\\)&", line[:-2])
                assert len(cells) == ncols, (spec, line)


def test_latex_one_booktabs_table_per_experiment(root, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    n = len({r["experiment"] for r in headline.headline_rows("efa", root)})
    _check_latex(tex, n)
    insta = tex.split("\\caption{efa-instacart", 1)[1].split("\\end{table}", 1)[0]
    assert "(full-es)" in insta and "3 seeds" in insta and "test CE" in insta
    # the numbers are siunitx S columns: paper, ours, the CI, n
    assert re.search(r"\\begin\{tabular\}\{l l S\[table-format=1\.\d+\] S\[table-format=1\.\d+\] "
                     r"S\[table-format=1\.\d+\] S\[table-format=1\.0\] l\}", insta)     # verdict; data in the caption
    assert "; substitute: " in insta and "(data: substitute)" not in insta     # said once, where it says what differs
    assert "notes" not in insta                                                   # no empty column
    assert re.search(r"3\.41 & 0\.0\d+ & 3 &", insta)
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "latex", "--all"]) == 0
    _check_latex(capsys.readouterr().out, len({r["experiment"] for r in summarize("efa", root)}))


def test_latex_escapes_special_characters():
    df = tables.frame([("a|b_c", "50% & #1 {x} ~^\\ <>", "1.5", "-"), ("t", "u", "-12.25", "3e-05")],
                      ("name", "note", "value", "other"))
    tex = tables.latex(df, caption="cap_1 | 5%", label="tab:x y")
    assert "a\\textbar{}b\\_c" in tex
    assert "50\\% \\& \\#1 \\{x\\} \\textasciitilde{}\\textasciicircum{}\\textbackslash{}" in tex
    assert "\\textless{}\\textgreater{}" in tex and "\\caption{cap\\_1 \\textbar{} 5\\%}" in tex
    assert "\\label{tab:x-y}" in tex
    assert "S[table-format=-2.2]" in tex and "S[table-format=1.0e-2]" in tex and "{--}" in tex
    _check_latex(tex, 1)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX installed (pdflatex)")
def test_latex_compiles(root, tmp_path, capsys):
    assert cli.main(["results", "efa", "--results-dir", str(root), "--format", "latex"]) == 0
    (tmp_path / "tables.tex").write_text(capsys.readouterr().out, encoding="utf-8")
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n" + tables.LATEX_PACKAGES + "\n\\begin{document}\n"
                                      "\\input{tables.tex}\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "doc.pdf").is_file()


# ------------------------------------------------------------------------------------------ the report
def test_report_shows_the_headline_first_and_the_rest_collapsed(root, tmp_path):
    from attnlab import report

    res = report.result_tables("efa", root)
    insta = next(t for t in res["headline"] if t["experiment"] == "efa-instacart")
    assert "full-es" in insta["caption"] and "verdict" in insta["columns"]
    assert {r["verdict"] for r in insta["rows"]} == {"inconclusive", "skipped"}      # (3 of 5 seeds; none)
    env = report._environment()
    page = {"paper": "efa", "title": "t", "claims": [], "errata": [], "findings": [], "counts": [], "surprises": [],
            "compare": [], "results": res, "figures": [], "links": []}
    html = env.get_template("paper.html").render(page=page, nav=[], claims_source="x", results_from="r",
                                                      scale=report.verdict_scale())
    section = html.split('id="results"', 1)[1]
    head, rest = section.split('<details id="results-all">', 1)
    assert "inconclusive" in head and "train CE" not in head
    assert "train CE" in rest and "quick" in rest
    costs = rest.split('id="results-costs"', 1)[1].split("</details>", 1)[0]
    assert "early-stopping 3" in costs and "13.5" in costs                     # full-es: 12.5, 13.5, 14.5 s


def test_report_warns_once_per_bad_record(root, capsys):
    from attnlab import report

    (root / "efa-instacart" / "full-es" / "broken-seed9.json").write_text("{not json")
    report.result_tables("efa", root)
    err = capsys.readouterr().err
    assert err.count("broken-seed9.json") == 1


# ----------------------------------------------------------------------------------------- terminal width
def test_text_fits_the_width_by_priority():
    df = tables.frame([("fenchel.thm1.strong-duality", "a long statement " * 6, "12.5"),
                       ("kernel.x", "short", "3")], ("id", "statement", "value"))
    wide = tables.text(df)
    assert max(map(len, wide.splitlines())) > 60
    out = tables.text(df, width=60, priority=("id", "value", "statement"), keep=("id", "value"))
    assert max(map(len, out.splitlines())) <= 60 and "fenchel.thm1.strong-duality" in out and "12.5" in out
    assert len(out.splitlines()) > len(wide.splitlines())                  # the statement wrapped
    one = tables.text(df, width=60, priority=("id", "value", "statement"), keep=("id",), overflow="elide")
    assert len(one.splitlines()) == 4 and "…" in one and max(map(len, one.splitlines())) <= 60
    tiny = tables.text(df, width=34, keep=("id",))
    assert "left out" in tiny and "statement, value" in tiny.replace("\n", " ")
    assert max(map(len, tiny.splitlines())) <= 34 and "12.5" not in tiny


def test_results_and_list_fit_a_narrow_terminal(root, capsys, monkeypatch):
    monkeypatch.setattr(tables, "terminal_width", lambda: 72)
    assert cli.main(["results", "efa", "--results-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 72 and "3.41 ± " in out
    assert cli.main(["list", "--paper", "fenchel"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 72 and any("fenchel.thm1.strong-duality" in x for x in lines)
    monkeypatch.setattr(tables, "terminal_width", lambda: None)            # a pipe: no limit, one line a claim
    assert cli.main(["list", "--paper", "fenchel"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) > 72


# ------------------------------------------------------------------------------- verify: reasons, --claim
def test_verify_table_shows_skip_reasons(capsys, monkeypatch):
    from attnlab import catalog
    from attnlab.listing import records_table

    c = catalog.get_claim("fenchel.thm1.strong-duality")
    ran = catalog.Record(c, catalog.Evidence("holds", 1e-12, 1e-9, "fine"), 0.1)
    skipped = catalog.Record(c, catalog.Evidence("skipped", explanation="needs cvxpy, which is not installed"), 0.0)
    assert "reason" not in records_table([ran])
    out = records_table([ran, skipped])
    assert "needs cvxpy, which is not installed" in out and out.splitlines()[0].rstrip().endswith("reason")
    narrow = records_table([ran, skipped], width=70)
    assert max(map(len, narrow.splitlines())) <= 70 and "installed" in narrow
    monkeypatch.setattr(catalog, "run_claim", lambda claim: catalog.Record(claim, skipped.evidence, 0.0))
    assert cli.main(["verify", "--claim", "fenchel.thm1.strong-duality"]) == 0
    assert "needs cvxpy, which is not installed" in capsys.readouterr().out


def test_claim_globs_and_suggestions(capsys, monkeypatch):
    from attnlab import catalog

    ran = []
    monkeypatch.setattr(catalog, "run_claim",
                        lambda c: ran.append(c.id) or catalog.Record(c, catalog.Evidence(c.expected), 0.0))
    assert cli.main(["verify", "--claim", "fenchel.thm1.*"]) == 0
    thm1 = sorted(c.id for c in catalog.all_claims(paper="fenchel") if c.id.startswith("fenchel.thm1."))
    assert sorted(ran) == thm1 and len(thm1) >= 2
    ran.clear()
    assert cli.main(["verify", "--claim", "fenchel.thm1.*", "fenchel.thm1.strong-duality", "--tier", "all"]) == 0
    assert sorted(ran) == thm1                                            # each claim once
    capsys.readouterr()
    assert cli.main(["verify", "--claim", "fenchel.thm1.strong-dualty"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did you mean: fenchel.thm1.strong-duality" in err
    assert len(err) < 600                                                 # not the 183 ids
    assert cli.main(["verify", "--claim", "nothing.like.this.*"]) == 2
    assert "no claim matches 'nothing.like.this.*'" in capsys.readouterr().err


# ------------------------------------------------------------------------ converge --json: one value a key
def test_rate_parts_one_value_per_key():
    import numpy as np

    from attnlab.numerics.convergence import describe_rate, rate_parts, rate_text

    h = 0.5 ** np.arange(6)
    parts = rate_parts(h, np.maximum(np.exp(-2 * np.pi / h), 1e-16), 1e-13)
    assert parts["rate"] == "exponential" and parts["floor_from"] == "h=0.125" and parts["slope"] > 6
    assert rate_text(parts) == describe_rate(h, np.maximum(np.exp(-2 * np.pi / h), 1e-16), 1e-13)[0] \
        == "exponential; at floor from h=0.125"
    alg = rate_parts(h, h ** 2, 1e-13)
    assert alg == {"rate": "algebraic", "slope": pytest.approx(2.0), "floor_from": None}
    flat = rate_parts(h, [1e-16] * 6, 1e-13, labels=[f"G={g}" for g in range(6)])
    assert flat == {"rate": "at floor", "slope": None, "floor_from": "G=0"} and rate_text(flat) == "at floor from G=0"


def test_progress_eta_on_a_terminal_only(monkeypatch):
    import io
    import time

    from attnlab import catalog
    from attnlab.listing import ProgressLine

    class Tty(io.StringIO):
        def isatty(self):
            return True

    c = catalog.get_claim("fenchel.thm1.strong-duality")
    rec = catalog.Record(c, catalog.Evidence("holds"), 1.0)
    clock = iter([100.0, 110.0, 120.0])
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    tty = Tty()
    prog = ProgressLine(4, stream=tty)
    prog.start(c.id)                                   # t = 100: nothing finished, no ETA yet
    prog.done(rec)
    prog.start(c.id)                                   # t = 110: 1 done in 10 s, 3 left -> 0:30
    assert "ETA" not in tty.getvalue().split("\n")[0] and tty.getvalue().rstrip().endswith("ETA 0:30")
    pipe = io.StringIO()
    quiet = ProgressLine(4, stream=pipe)
    quiet.start(c.id)
    assert pipe.getvalue() == ""                       # not a terminal: no progress line, only the results
    quiet.done(rec)
    assert pipe.getvalue() == ""                       # ... and no line for a claim as expected (the table has it)
    quiet.start(c.id)
    quiet.done(catalog.Record(c, catalog.Evidence("fails"), 1.0))
    assert pipe.getvalue() == f"[2/4] {c.id}: fails (1.00s)  <-- expected holds\n"


def test_per_seed_and_wall_times_fit_a_narrow_terminal(root, capsys, monkeypatch):
    monkeypatch.setattr(tables, "terminal_width", lambda: 60)
    assert cli.main(["results", "efa", "--results-dir", str(root), "--per-seed"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 60 and "3.42" in out
    monkeypatch.setattr(tables, "terminal_width", lambda: None)
    assert cli.main(["results", "efa", "--results-dir", str(root), "--per-seed"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) > 60


def test_a_row_shows_only_the_claims_registered_on_its_config():
    # kernel-time-warping has claims on the paper's 10 epochs (full) and on early stopping (full-es)
    assert headline.headline_config("kernel-time-warping") == "full"      # equally used: the first registered
    full = headline.matching_claims("kernel-time-warping", "N=64", "Kernel Softmax", "accuracy", "full")
    es = headline.matching_claims("kernel-time-warping", "N=64", "Kernel Softmax", "accuracy", "full-es")
    assert {r.claim for r in full} == {"kernel.results.time-warping-softmax", "kernel.results.time-warping-gain-7-points"}
    assert {r.claim for r in es} == {"kernel.results.time-warping-softmax-es",
                                     "kernel.results.time-warping-gain-7-points-es"}


def test_caption_names_another_config_as_such():
    row = {"config": "full-es", "metric": "accuracy", "n_seeds": 10}
    assert headline.caption("kernel-time-warping", [row]).startswith("kernel-time-warping at config full-es, accuracy")
    row = {"config": "full", "metric": "accuracy", "n_seeds": 10}
    assert headline.caption("kernel-time-warping", [row]).startswith(
        "kernel-time-warping at the paper's configuration (full), accuracy")


def test_verdicts_speak_of_the_records_shown(tmp_path, capsys):
    """On records other than the committed ones (--results-dir, a ./results of one's own runs) a row's verdict is
    the claim's rule applied to them, not the registered verdict of the committed records: none there gives
    `skipped`, two of the five registered seeds `inconclusive`."""
    import shutil

    from attnlab import cli
    from attnlab.evidence import committed_records

    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["results", "efa", "--results-dir", str(empty), "--format", "json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["experiment"] == "efa-instacart"]
    assert rows and all(r["verdicts"] == ["skipped"] for r in rows if r["claims"])
    part = tmp_path / "part" / "efa-instacart" / "full-es"
    part.mkdir(parents=True)
    for f in (committed_records() / "efa-instacart" / "full-es").glob("*-seed[01].json"):
        shutil.copy(f, part / f.name)
    assert cli.main(["results", "efa", "--results-dir", str(tmp_path / "part"), "--format", "json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["experiment"] == "efa-instacart" and r["claims"]]
    assert rows and all(v == "inconclusive" for r in rows for v in r["verdicts"])
    assert cli.main(["results", "efa", "--format", "json"]) == 0          # the committed records: as registered
    rows = [r for r in json.loads(capsys.readouterr().out) if r["experiment"] == "efa-instacart" and r["claims"]]
    assert rows and all(v == "reproduced-on-substitute" for r in rows for v in r["verdicts"])


def test_caption_says_when_rows_stand_on_different_runs():
    """kernel time warping: 2 converged seeds of one model beside 10 unconverged of another read as a comparison
    of the models; the caption says the rows stand on different runs."""
    from attnlab.evidence import committed_records

    rows = [r for r in headline.headline_rows("kernel", committed_records()) if r["experiment"] == "kernel-time-warping"]
    assert len({r["n_seeds"] for r in rows}) > 1
    assert "stand on different runs" in headline.caption("kernel-time-warping", rows)
    same = [dict(r, n_seeds=5, n_not_converged=0, n_unknown=0, converged=True) for r in rows]
    assert "stand on different runs" not in headline.caption("kernel-time-warping", same)


def test_a_row_with_seeds_beyond_the_registered_says_so():
    """The headline pooled every seed beside the registered verdict: an eleventh seed far off showed "12.18 ± 19,
    n = 11" beside "holds" (outside review).  The note says how many seeds are beyond the registered ones."""
    from attnlab.headline import _notes

    row = {"n_seeds": 11, "registered_seeds": 5, "converged": True, "n_not_converged": 0, "n_unknown": 0}
    assert _notes(row) == "n includes 6 seed(s) beyond the 5 registered (the verdict reads the registered)"
    assert _notes(dict(row, n_seeds=5)) == "" and _notes(dict(row, registered_seeds=None)) == ""
