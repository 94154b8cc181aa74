"""`attnlab report`: the HTML site builds from stored verdicts (``--verdicts FILE``), records and figures
without training; its pages parse, every image, link and anchor resolves; the claims' statements and the
errata carry MathML rendered from their LaTeX forms; each figure has a caption naming the paper's figure;
each paper is linked; every table sits in a box that scrolls; the verdict scale is shown.  In a headless
browser, at 400 and at 1400 pixels, no page scrolls sideways, the maths is laid out as MathML and the
figures are captioned."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from attnlab import catalog
from attnlab.cli import main

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Page(HTMLParser):
    """Collects img src, a href and link href, the ids, and the parent of every table; checks that every
    element is closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.imgs, self.links, self.problems, self.ids, self.table_parents = [], [], [], [], set(), []
        self.classes = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src"))
        if tag in ("a", "link") and a.get("href"):
            self.links.append(a["href"])
        if a.get("id"):
            assert a["id"] not in self.ids, f"id {a['id']!r} twice"
            self.ids.add(a["id"])
        if tag == "table":
            self.table_parents.append((self.stack[-1] if self.stack else None,
                                       self.classes[-1] if self.classes else ""))
        if tag not in VOID:
            self.stack.append(tag)
            self.classes.append(a.get("class") or "")

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        else:
            self.stack.pop()
            self.classes.pop()


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert not page.problems and not page.stack, (path.name, page.problems[:3], page.stack)
    return page


def _verdicts_file(tmp_path) -> Path:
    """A verify --json file with one stored verdict per paper (an erratum where the paper has one)."""
    recs = []
    for p in catalog.PAPERS:
        cs = catalog.all_claims(paper=p)
        c = next((c for c in cs if c.expected == "erratum"), cs[0])
        recs.append({"id": c.id, "verdict": c.expected, "measured": 1e-12, "tolerance": 1e-9,
                     "explanation": "stored verdict"})
    f = tmp_path / "verdicts.json"
    f.write_text(json.dumps(recs))
    return f


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    import torch

    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "site"
    mp = pytest.MonkeyPatch()

    def no_training(*a, **k):
        raise AssertionError("attnlab report trained a model")

    mp.setattr(torch.Tensor, "backward", no_training)
    try:
        assert main(["report", "--verdicts", str(_verdicts_file(tmp)), "--out", str(out)]) == 0
    finally:
        mp.undo()
    return out


def test_site_has_an_index_and_a_page_per_paper(site):
    assert {p.name for p in site.glob("*.html")} == {"index.html"} | {f"{p}.html" for p in catalog.PAPERS}


def test_pages_parse_and_every_image_link_and_anchor_resolves(site):
    n_img, n_anchor = 0, 0
    parsed = {page.name: _parse(page) for page in site.glob("*.html")}
    for name, page in parsed.items():
        for src in page.imgs:
            assert src and (site / src).is_file(), f"{name}: <img src={src!r}> does not exist"
            n_img += 1
        for href in page.links:
            target, _, fragment = href.partition("#")
            if "://" in target:
                continue
            if target:
                assert (site / target).is_file(), f"{name}: link {href!r} does not resolve"
            if fragment:
                assert fragment in parsed[target or name].ids, f"{name}: link {href!r}: no such anchor"
                n_anchor += 1
    assert n_anchor > 0
    figures = Path(__file__).resolve().parents[1] / "paper_figures"
    assert n_img == len([p for p in figures.glob("*.png") if p.stem.split("_")[0] in catalog.PAPERS])


def test_pages_show_verdicts_errata_and_results(site):
    html = (site / "kernel.html").read_text(encoding="utf-8")
    erratum = next(c for c in catalog.all_claims(paper="kernel") if c.expected == "erratum")
    assert erratum.id in html and "corrected (holds)" in html
    assert 'class="verdict erratum"' in html and "not run" in html
    assert "ours (mean ± 95% CI)" in html and "kernel-forda" in html
    index = (site / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{p}.html"' in index for p in catalog.PAPERS)


def test_pages_show_the_compare_tables_on_default_instances(site):
    """Each paper page carries the exact-vs-approximate table of `attnlab compare` on its default
    instance, with numbers in it (errors of the exact forms at rounding level)."""
    import re

    for paper, command in (("efa", "efa-fm"), ("bidir", "bidir-moe"), ("fenchel", "fenchel"),
                           ("kernel", "kernel-quadrature")):
        html = (site / f"{paper}.html").read_text(encoding="utf-8")
        assert 'id="compare"' in html and f"attnlab compare {command}" in html, paper
        table = html.split('id="compare"', 1)[1].split('id="results"', 1)[0]
        assert '<table class="compare">' in table, paper
        assert re.search(r"<td class=\"num\">\d\.\d\de-1[0-7]</td>", table), f"{paper}: no rounding-level error"


def test_one_paper_only(tmp_path):
    out = tmp_path / "one"
    assert main(["report", "--paper", "fenchel", "--verdicts", str(_verdicts_file(tmp_path)), "--out", str(out)]) == 0
    assert {p.name for p in out.glob("*.html")} == {"index.html", "fenchel.html"}
    assert all(p.name.startswith("fenchel_") for p in (out / "figures").iterdir())


def test_a_report_of_other_records_judges_and_draws_from_them(tmp_path, monkeypatch):
    """`report --results-dir X` showed X's tables beside verdicts and figures of the committed records: the claims
    are run on X, the figures drawn from records are drawn from X (left out, with a warning, where X has none),
    and the others are the committed ones."""
    from attnlab import report
    from attnlab.evidence import committed_records

    seen = {}

    def fast_claims(papers, progress=None):
        import os

        seen["root"] = os.environ.get("ATTNLAB_RESULTS")
        return {}
    monkeypatch.setattr(report, "run_fast_claims", fast_claims)
    few = tmp_path / "few"
    (few / "efa-synthetic").mkdir(parents=True)
    import shutil

    shutil.copytree(committed_records() / "efa-synthetic" / "full", few / "efa-synthetic" / "full")
    assert main(["report", "--paper", "efa", "--results-dir", str(few), "--out", str(tmp_path / "site")]) == 0
    assert seen["root"] == str(few.resolve())
    shown = sorted(p.name for p in (tmp_path / "site" / "figures").iterdir())
    assert shown == ["efa_identifiability.png"]          # (no Instacart or temperature records in X)
    assert "records in a folder named few" in (tmp_path / "site" / "efa.html").read_text()


def test_report_checks_every_page_before_writing_any(tmp_path, monkeypatch, capsys):
    """A page that cannot be replaced left the site half-updated (style sheet and figures new, pages old) with a
    message that the file 'changed while the command ran': every file is checked first, the site unchanged."""
    from attnlab import atomic_io

    out = tmp_path / "site"
    verdicts = str(_verdicts_file(tmp_path))
    assert main(["report", "--paper", "fenchel", "--verdicts", verdicts, "--out", str(out)]) == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    real = atomic_io.check_writable

    def refuse(path, what):
        if Path(path).name == "fenchel.html":
            from attnlab.errors import UsageError

            raise UsageError(f"{what} {path}: the file exists and is not writable")
        return real(path, what)
    monkeypatch.setattr(atomic_io, "check_writable", refuse)
    assert main(["report", "--paper", "fenchel", "--verdicts", verdicts, "--out", str(out)]) == 2
    assert "fenchel.html: the file exists and is not writable" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("content,word", [("not json", "not JSON"), ('{"id": 1}', "not a list of claim records")])
@pytest.mark.parametrize("option", ["--verdicts", "--claims"])
def test_bad_verdicts_file_is_one_line_exit_2(tmp_path, capsys, content, word, option):
    f = tmp_path / "bad.json"
    f.write_text(content)
    assert main(["report", option, str(f), "--out", str(tmp_path / "s")]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "deprecated" not in line]
    assert len(err) == 1 and option in err[0] and word in err[0]


def test_claims_is_a_deprecated_alias_of_verdicts(tmp_path, capsys, monkeypatch):
    """`--claims FILE` (the old name) still reads the file, with one warning naming --verdicts; the option
    is gone from --help; giving both is one line, exit 2."""
    import attnlab.comparisons

    monkeypatch.setattr(attnlab.comparisons, "tables", lambda paper: [])     # the compare tables take seconds
    f = _verdicts_file(tmp_path)
    assert main(["report", "--paper", "efa", "--claims", str(f), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "--claims is deprecated" in err and "--verdicts" in err
    page = (tmp_path / "a" / "efa.html").read_text(encoding="utf-8")
    assert f"read from {f.name}" in page and str(tmp_path) not in page            # no folder of this machine
    assert main(["report", "--claims", str(f), "--verdicts", str(f), "--out", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = capsys.readouterr().out
    assert "--verdicts" in out and "--claims" not in out


def test_bad_paper_and_out_exit_2(tmp_path, capsys):
    assert main(["report", "--paper", "nope"]) == 2
    assert "paper" in capsys.readouterr().err
    f = tmp_path / "file"
    f.write_text("")
    assert main(["report", "--out", str(f), "--verdicts", str(_verdicts_file(tmp_path))]) == 2
    assert "--out" in capsys.readouterr().err


def test_statements_and_errata_are_mathml(site):
    """Every erratum shows its printed and its corrected form with MathML made from its LaTeX form, and
    every page carries maths; the ASCII maths of the plain statement is not what the reader sees."""
    import re

    from attnlab import mathtext

    for paper in catalog.PAPERS:
        html = (site / f"{paper}.html").read_text(encoding="utf-8")
        assert html.count("<math ") > 20, paper
        errata = html.split('id="errata"', 1)[1].split('id="findings"', 1)[0]
        for row in re.findall(r"<tr><td><a href=\"#([^\"]+)\">.*?</tr>", errata, re.S):
            c = catalog.get_claim(row)
            tex = mathtext.claim_forms(c)
            assert tex is not None, f"{c.id}: no current LaTeX form"
            if "$" in tex.statement + tex.corrected:
                cells = errata.split(f'href="#{c.id}"', 1)[1].split("</tr>", 1)[0]
                assert "<math " in cells, c.id
    fenchel = (site / "fenchel.html").read_text(encoding="utf-8")
    claims = fenchel.split('id="claims"', 1)[1].split('id="compare"', 1)[0]
    assert "||lambda* - alpha z||" not in claims and "&#x02016;" in claims    # ‖ in MathML


def test_every_latex_form_converts_and_is_current():
    """Each LaTeX form converts to MathML without falling back, belongs to a claim of its paper and was
    written for the claim's present wording (its fingerprint); every theory erratum has one.  A claim
    reworded since shows its plain statement until its LaTeX form in theory/<paper>/latex.py is rewritten
    and its `of` set to the fingerprint named here."""
    from attnlab import mathtext

    stale, bad = [], []
    for paper in catalog.PAPERS:
        table = mathtext.latex_table(paper)
        assert table, paper
        for cid, tex in table.items():
            c = catalog.get_claim(cid)
            assert c.paper == paper
            if tex.of != mathtext.fingerprint(c.statement, c.corrected):
                stale.append(f"{cid} (now {mathtext.fingerprint(c.statement, c.corrected)})")
            assert bool(tex.corrected) == bool(c.corrected), cid
            for text in (tex.statement, tex.corrected):
                try:
                    mathtext.to_html(text, strict=True)
                except ValueError as exc:
                    bad.append(f"{cid}: {exc}")
        errata = [c.id for c in catalog.all_claims(paper=paper) if c.expected == "erratum" and c.method != "results"]
        assert not [cid for cid in errata if cid not in table], f"errata without a LaTeX form: {paper}"
    assert not bad, bad
    assert not stale, f"LaTeX forms written for an older wording: {stale}"


def test_every_statement_with_ascii_maths_has_a_latex_form():
    """A claim whose plain statement carries ASCII maths (x^2, w_i, ||z||, sqrt(, <=, alpha) has a current
    LaTeX form, so the report never shows the ASCII; `python -m attnlab.mathtext` lists any that do not."""
    from attnlab import mathtext

    assert mathtext.ASCII_MATHS.search("||lambda* - alpha z||") and not mathtext.ASCII_MATHS.search("Table 2, 98.67")
    assert mathtext.needing_forms() == []


def test_a_broken_latex_form_falls_back_to_the_plain_text():
    from markupsafe import Markup

    from attnlab import mathtext

    good = mathtext.to_html(r"error $O(\alpha^2)$ when a < b, $a < b$")
    assert isinstance(good, Markup) and good.count("<math ") == 2 and "<msup>" in good
    assert "when a &lt; b, <math " in good and "<mi>&#x003B1;</mi>" in good and "<mo>&#x0003C;</mo>" in good
    for broken in (r"$\frac{1}$", r"$x^$", r"$\left( x$", r"$\notacommand x$", r"an unpaired $x", r"${x$"):
        html = mathtext.to_html("as printed: " + broken, fallback="plain <form>")
        assert html == "plain &lt;form&gt;", broken
        with pytest.raises(ValueError):
            mathtext.to_html(broken, strict=True)
    assert mathtext.to_html(r"costs \$5") == "costs $5"
    assert mathtext.plain(r"slope $G^{-2}$") == "slope G^{-2}"


def test_every_committed_figure_has_a_caption_naming_the_papers_figure(site):
    """paper_figures/captions.py has exactly one caption per committed PNG; the pages show it, with the
    paper's figure number where the figure regenerates one, and never the file name as the caption."""
    import re

    from attnlab.paper_figures.captions import CAPTIONS

    figures = Path(__file__).resolve().parents[1] / "paper_figures"
    stems = {p.stem for p in figures.glob("*.png")}
    assert stems == set(CAPTIONS), (f"figures without a caption: {sorted(stems - set(CAPTIONS))}; "
                                    f"captions without a figure: {sorted(set(CAPTIONS) - stems)}")
    for stem, cap in CAPTIONS.items():
        assert len(cap.text) >= 80 and stem not in cap.text, stem
        assert cap.paper_figure is None or re.fullmatch(r"Figures? \d+[a-z]?(, \d+[a-z]?)*( and \d+[a-z]?)?",
                                                         cap.paper_figure), stem
    fenchel = (site / "fenchel.html").read_text(encoding="utf-8")
    fig4 = fenchel.split('id="fig-fenchel_exp_fig4_bert"', 1)[1].split("</figure>", 1)[0]
    assert "<strong>Figure 4a of the paper.</strong>" in fig4 and "<math " in fig4
    assert "<code>fenchel_exp_fig4_bert</code>" not in fenchel
    kernel = (site / "kernel.html").read_text(encoding="utf-8")
    assert "<strong>Not a figure of the paper.</strong>" in kernel


def test_each_paper_is_linked_and_the_index_links_every_claim(site):
    from attnlab.report import PAPER_LINKS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    index = (site / "index.html").read_text(encoding="utf-8")
    for paper in catalog.PAPERS:
        html = (site / f"{paper}.html").read_text(encoding="utf-8")
        assert PAPER_LINKS[paper], paper
        for _, url in PAPER_LINKS[paper]:
            assert f"({url})" in readme, f"{url} is not the README's link"
            assert f'href="{url}"' in html and f'href="{url}"' in index
        for c in catalog.all_claims(paper=paper):
            assert f'<tr id="{c.id}"' in html and f'href="{paper}.html#{c.id}"' in index, c.id


def test_the_verdict_scale_is_shown_as_documented(site):
    """The report's verdict scale is catalog.RESULTS_VERDICTS (and skipped), in docs/results_verdicts.md's
    words, on the index and on every paper page."""
    import re

    from attnlab.catalog import RESULTS_VERDICTS, VERDICT_WORDS
    from attnlab.report import VERDICT_SCALE

    assert tuple(VERDICT_SCALE) == RESULTS_VERDICTS + ("skipped",)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "results_verdicts.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([a-z-]+)` \| (.+?) \|$", doc.split("## The scale", 1)[1].split("##", 1)[0], re.M))
    assert table == VERDICT_SCALE
    for page in ["index"] + list(catalog.PAPERS):
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        scale = html.split('<table class="scale">', 1)[1].split("</table>", 1)[0]
        for v in VERDICT_SCALE:
            assert f'<span class="verdict {v}">{VERDICT_WORDS[v]}</span>' in scale, (page, v)


def test_every_table_sits_in_a_scrolling_box(site):
    css = (site / "style.css").read_text(encoding="utf-8")
    assert ".scroll { overflow-x: auto;" in css
    for page in site.glob("*.html"):
        parents = _parse(page).table_parents
        assert parents and all(p == ("div", "scroll") for p in parents), (page.name, parents)


@pytest.fixture(scope="module")
def browser():
    from attnlab.browser import BROWSERS, find_browser

    path = find_browser()
    if path is None:
        pytest.skip(f"no headless browser installed (looked for {', '.join(BROWSERS)}); "
                    "install Debian's chromium package to run this test")
    return path


@pytest.mark.parametrize("width", [400, 1400])
def test_pages_in_a_headless_browser_narrow_and_wide(site, browser, width, tmp_path):
    """Chromium lays out every page at a `width`-pixel viewport: the page never scrolls sideways (a wide
    table scrolls inside its box instead; at 400 px every paper page has such boxes), the maths is laid
    out as MathML (superscripts above their base), each figure has its caption, and no page writes to the
    console."""
    from attnlab.browser import layout

    pages = sorted(site.glob("*.html"))
    measured = layout(pages, width, png=tmp_path / f"pages-{width}.png", browser=browser)
    assert measured.pop("console") == []
    assert (tmp_path / f"pages-{width}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name, m in measured.items():
        assert m["viewport"] == width, name
        assert m["page_width"] <= width and m["body_width"] <= width and not m["overflowing"], (name, m)
        assert m["tables"] == m["tables_in_scroll_box"] > 0, (name, m)
        if name != "index.html":
            assert m["math"] > 20 and m["math_laid_out"] == m["math"], (name, m)
            assert m["msup"] > 0 and m["msup_raised"] == m["msup"], (name, m)
            assert m["figures"] > 0 and m["captioned"] == m["figures"], (name, m)
            if width == 400:
                assert m["boxes_scrolling"] > 0, (name, m)


def test_the_layout_check_sees_an_overflowing_page_and_plain_maths(browser, tmp_path):
    """The measurement behind the browser test can fail: a wide table outside a scrolling box makes the
    page scroll sideways, and MathML elements outside <math> are not laid out as maths."""
    from attnlab.browser import layout

    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><table><tr><td style="min-width:900px">wide</td></tr></table>'
                    "<p><msup><mi>x</mi><mn>2</mn></msup></p></body></html>", encoding="utf-8")
    m = layout([page], 400, browser=browser)["bad.html"]
    assert m["page_width"] > 400 and m["overflowing"] and m["tables_in_scroll_box"] == 0
    assert m["math"] == 0 and m["msup"] == 1 and m["msup_raised"] == 0


def test_screenshot_of_a_page(site, browser, tmp_path):
    """`attnlab report --screenshots` loads a page in Chromium and saves a PNG of it."""
    from attnlab.browser import screenshot

    png = tmp_path / "index.png"
    assert screenshot(site / "index.html", png, browser=browser) == []
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_refuses_verdicts_judged_on_other_records(tmp_path, monkeypatch, capsys):
    """`report --verdicts v.json` with other records: the tables said "no seeds run" beside claim rows judged
    5/5 on the committed records (outside review).  verify --json stores which records it judged on."""
    from attnlab.cli import main

    root = tmp_path / "some"
    src = Path(__file__).resolve().parents[1] / "results" / "kernel-forda" / "full-es"
    if not src.is_dir():
        pytest.skip("no committed kernel-forda records in this checkout")
    (root / "kernel-forda" / "full-es").mkdir(parents=True)
    for f in sorted(src.glob("*seed[01].json")):
        (root / "kernel-forda" / "full-es" / f.name).write_bytes(f.read_bytes())
    committed = tmp_path / "committed.json"
    monkeypatch.delenv("ATTNLAB_RESULTS", raising=False)
    main(["verify", "--claim", "kernel.results.forda-discrete-softmax", "--json", str(committed)])
    assert json.loads(committed.read_text())[0]["records_fingerprint"]
    monkeypatch.setenv("ATTNLAB_RESULTS", str(root))
    capsys.readouterr()
    assert main(["report", "--paper", "kernel", "--verdicts", str(committed), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "judged on other records" in err[0], err
    own = tmp_path / "own.json"                      # judged on the same records: accepted
    main(["verify", "--claim", "kernel.results.forda-discrete-softmax", "--json", str(own)])
    assert main(["report", "--paper", "kernel", "--verdicts", str(own), "--out", str(tmp_path / "site")]) == 0
