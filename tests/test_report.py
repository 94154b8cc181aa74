"""`attnlab report`: the HTML site builds from stored verdicts, records and figures without training;
its pages parse, every image and link resolves; in a headless browser the pages load cleanly."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from attnlab import catalog
from attnlab.cli import main

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Page(HTMLParser):
    """Collects img src, a href and link href, and checks that every element is closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.imgs, self.links, self.problems = [], [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src"))
        if tag in ("a", "link") and a.get("href"):
            self.links.append(a["href"])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        else:
            self.stack.pop()


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert not page.problems and not page.stack, (path.name, page.problems[:3], page.stack)
    return page


def _claims_file(tmp_path) -> Path:
    """A verify --json file with one stored verdict per paper (an erratum where the paper has one)."""
    recs = []
    for p in catalog.PAPERS:
        cs = catalog.all_claims(paper=p)
        c = next((c for c in cs if c.expected == "erratum"), cs[0])
        recs.append({"id": c.id, "verdict": c.expected, "measured": 1e-12, "tolerance": 1e-9,
                     "explanation": "stored verdict"})
    f = tmp_path / "claims.json"
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
        assert main(["report", "--claims", str(_claims_file(tmp)), "--out", str(out)]) == 0
    finally:
        mp.undo()
    return out


def test_site_has_an_index_and_a_page_per_paper(site):
    assert {p.name for p in site.glob("*.html")} == {"index.html"} | {f"{p}.html" for p in catalog.PAPERS}


def test_pages_parse_and_every_image_and_link_resolves(site):
    n_img = 0
    for page in site.glob("*.html"):
        parsed = _parse(page)
        for src in parsed.imgs:
            assert src and (site / src).is_file(), f"{page.name}: <img src={src!r}> does not exist"
            n_img += 1
        for href in parsed.links:
            target = href.split("#", 1)[0]
            if target and "://" not in target:
                assert (site / target).is_file(), f"{page.name}: link {href!r} does not resolve"
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
    assert main(["report", "--paper", "fenchel", "--claims", str(_claims_file(tmp_path)), "--out", str(out)]) == 0
    assert {p.name for p in out.glob("*.html")} == {"index.html", "fenchel.html"}
    assert all(p.name.startswith("fenchel_") for p in (out / "figures").iterdir())


@pytest.mark.parametrize("content,word", [("not json", "not JSON"), ('{"id": 1}', "not a list of claim records")])
def test_bad_claims_file_is_one_line_exit_2(tmp_path, capsys, content, word):
    f = tmp_path / "bad.json"
    f.write_text(content)
    assert main(["report", "--claims", str(f), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--claims" in err and word in err


def test_bad_paper_and_out_exit_2(tmp_path, capsys):
    assert main(["report", "--paper", "nope"]) == 2
    assert "paper" in capsys.readouterr().err
    f = tmp_path / "file"
    f.write_text("")
    assert main(["report", "--out", str(f), "--claims", str(_claims_file(tmp_path))]) == 2
    assert "--out" in capsys.readouterr().err


def test_pages_in_a_headless_browser(site, tmp_path):
    """Every page loads in Chromium without a console message (a missing image is one), and a
    screenshot of each is produced -- the same as `attnlab report --screenshots`."""
    from attnlab.browser import BROWSERS, find_browser, screenshot

    if find_browser() is None:
        pytest.skip(f"no headless browser installed (looked for {', '.join(BROWSERS)}); "
                    "install Debian's chromium package to run this test")
    for page in sorted(site.glob("*.html")):
        png = tmp_path / (page.stem + ".png")
        messages = screenshot(page, png)
        assert messages == [], f"{page.name}: {messages[:3]}"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
