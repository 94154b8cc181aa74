"""A page of the report in a real headless browser: Chromium (Debian's `chromium` package) loads it,
takes a screenshot and reports what it wrote to its console (a missing image, a script error).

`attnlab report --screenshots` and tests/test_report.py use it; without a browser they say so.
"""
from __future__ import annotations

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
