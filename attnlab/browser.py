"""A page of the report in a real headless browser: Chromium (Debian's `chromium` package) loads it,
takes a screenshot and reports what it wrote to its console (a missing image, a script error); and
:func:`layout` measures how the browser laid the page out at a given window width (does the page overflow
sideways, is the maths laid out as MathML, do the figures carry captions).

`attnlab report --screenshots` and tests/test_report.py use it; without a browser they say so.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The path of the first Chromium-family browser on PATH, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def console_messages(log: str) -> list[str]:
    """The page's console messages in Chromium's log (lines 'INFO:CONSOLE(...)] "text", source: ...')."""
    return [line.split("] ", 1)[-1] for line in log.splitlines() if ":CONSOLE" in line]


def screenshot(page: Path, png: Path, browser: str | None = None, width: int = 1280, height: int = 1600,
               timeout: float = 120) -> list[str]:
    """Load `page` headless, write a `width` x `height` screenshot to `png` and return the console
    messages the page produced (an empty list when it loaded cleanly)."""
    from attnlab.errors import UsageError

    browser = browser or find_browser()
    if browser is None:
        raise UsageError(f"--screenshots: no headless browser found (looked for {', '.join(BROWSERS)}); "
                         "install Debian's chromium package")
    page, png = Path(page).resolve(), Path(png).resolve()
    if not page.is_file():
        raise UsageError(f"page {page}: no such file")
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}",
           "--virtual-time-budget=5000", f"--screenshot={png}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if not png.is_file():
        raise UsageError(f"{browser} wrote no screenshot of {page} (exit {proc.returncode}): "
                         + (proc.stderr.strip().splitlines() or ["no output"])[-1])
    return console_messages(proc.stderr)


# Measures the laid-out page and logs the result to the console, base64-encoded JSON after a marker.
# An element that ends right of the viewport and is not inside a table's scrolling box (.scroll) makes the
# page itself scroll sideways; a <math> element laid out as MathML has a computed display of "... math"; an
# <msup> whose superscript sits above its base shows the maths really laid out, not shown as a line of text.
_PROBE = """<script>
(function () {
  var de = document.documentElement, vw = de.clientWidth, wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.closest(".scroll") || el.closest("details:not([open])")) { return; }
    var r = el.getBoundingClientRect();
    if (r.right > vw + 1 && wide.length < 5) {
      wide.push(el.tagName.toLowerCase() + (el.className ? "." + el.className : "") + " right=" + Math.round(r.right));
    }
  });
  var maths = document.querySelectorAll("math"), laid = 0, sup = 0, raised = 0;
  maths.forEach(function (m) { if (getComputedStyle(m).display.indexOf("math") >= 0) { laid++; } });
  document.querySelectorAll("msup").forEach(function (e) {
    if (e.children.length !== 2 || e.closest("details:not([open])")) { return; }
    var b = e.children[0].getBoundingClientRect(), x = e.children[1].getBoundingClientRect();
    sup++;
    if (x.height > 0 && x.top < b.top - 0.5) { raised++; }
  });
  var figures = document.querySelectorAll("figure"), captioned = 0;
  figures.forEach(function (f) {
    var c = f.querySelector("figcaption");
    if (c && c.textContent.trim().length >= 40 && c.getBoundingClientRect().height > 0) { captioned++; }
  });
  var boxes = document.querySelectorAll(".scroll"), scrolling = 0;
  boxes.forEach(function (b) { if (b.scrollWidth > b.clientWidth + 1) { scrolling++; } });
  console.log("attnlab-layout " + btoa(JSON.stringify({
    page: decodeURIComponent(location.pathname.split("/").pop()), viewport: vw, page_width: de.scrollWidth,
    body_width: document.body.scrollWidth, overflowing: wide,
    math: maths.length, math_laid_out: laid, msup: sup, msup_raised: raised,
    figures: figures.length, captioned: captioned, tables: document.querySelectorAll("table").length,
    tables_in_scroll_box: document.querySelectorAll(".scroll > table").length, boxes_scrolling: scrolling})));
})();
</script>"""


def layout(pages, width: int, height: int = 1600, png: Path | None = None, browser: str | None = None,
           timeout: float = 180) -> dict[str, dict]:
    """Load each of `pages` at a viewport of `width` x `height` CSS pixels and return, per page file name,
    how it was laid out: ``viewport``, ``page_width`` and ``body_width`` (the scroll widths: wider than the
    viewport means the page scrolls sideways), ``overflowing`` (up to 5 elements outside every scrolling
    box that end right of the viewport), ``math`` / ``math_laid_out`` (<math> elements, and those laid out
    as MathML), ``msup`` / ``msup_raised`` (superscripts, and those drawn above their base), ``figures`` /
    ``captioned``, ``tables`` / ``tables_in_scroll_box`` and ``boxes_scrolling`` (scrolling boxes narrower
    than their table); and under ``"console"`` the console messages of all of them (a missing image is
    one).  With `png`, a screenshot of the pages one below the other.

    One browser loads them all, each from a copy beside it with a measuring script appended, into a frame
    of exactly `width` x `height` (Chromium's windows are at least 500 pixels wide; a frame sets a page's
    viewport, media queries included, at any width); images and stylesheet resolve as they do for the page
    itself, and the copies are removed afterwards."""
    from attnlab.errors import UsageError

    browser = browser or find_browser()
    if browser is None:
        raise UsageError(f"no headless browser found (looked for {', '.join(BROWSERS)}); "
                         "install Debian's chromium package")
    pages = [Path(p).resolve() for p in pages]
    copies = [p.with_name(f".layout-{p.name}") for p in pages]
    frame = pages[0].with_name(f".layout-{width}x{height}.html")
    try:
        for page, copy in zip(pages, copies):
            copy.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "\n</body>", 1),
                            encoding="utf-8")
        frames = "".join(f'<iframe src="{c.as_uri()}" style="border:0;display:block;width:{width}px;'
                         f'height:{height}px"></iframe>' for c in copies)
        frame.write_text(f'<!DOCTYPE html><html><body style="margin:0">{frames}</body></html>', encoding="utf-8")
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--enable-logging=stderr", "--v=0", f"--window-size={max(width, 500)},{height * len(pages)}",
               "--virtual-time-budget=5000"]
        cmd.append(f"--screenshot={Path(png).resolve()}" if png is not None else "--dump-dom")
        proc = subprocess.run(cmd + [frame.as_uri()], capture_output=True, text=True, timeout=timeout)
    finally:
        for path in copies + [frame]:
            path.unlink(missing_ok=True)
    out = {}
    for found in re.finditer(r"attnlab-layout ([A-Za-z0-9+/=]+)", proc.stderr):
        measured = json.loads(base64.b64decode(found.group(1)))
        out[measured.pop("page").removeprefix(".layout-")] = measured
    missing = [p.name for p in pages if p.name not in out]
    if missing:
        raise UsageError(f"{browser} did not measure {', '.join(missing)} (exit {proc.returncode}): "
                         + (proc.stderr.strip().splitlines() or ["no output"])[-1])
    out["console"] = [m for m in console_messages(proc.stderr) if "attnlab-layout" not in m]
    return out
