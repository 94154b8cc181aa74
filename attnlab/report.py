"""`attnlab report`: a static HTML site -- an index and one page per paper -- that a reader opens in
a browser, no server needed.

Per paper it shows a link to the paper, the claims with their verdicts (each with an anchor, #<claim
id>, that the index links to), the errata (printed beside corrected form), the verdict scale of the
empirical claims, the exact-against-approximate tables of `attnlab compare` on their default instances
(:mod:`attnlab.comparisons`), our results beside the paper's numbers (mean ± 95% CI, substitute data
and convergence marked) and every committed figure with a caption that says what it shows and which
figure of the paper it regenerates (``paper_figures/captions.py``).  Statements are rendered from their
LaTeX forms (``theory/<paper>/latex.py``) to MathML, which browsers lay out without JavaScript
(:mod:`attnlab.mathtext`); a claim without a current LaTeX form shows its plain statement.  Every table
scrolls inside its own box on a narrow screen.

It reads what is there and never trains: the verdicts come from running the fast claims (seconds each)
or from a file written by ``attnlab verify --json FILE`` (``--verdicts FILE``); the results from the
committed records, or from ``--results-dir`` (then the claims are run on those records too, and the figures
drawn from records are drawn from them); the other figures from the PNGs under ``paper_figures/``.  Every file
of the site is checked before the first is written, and each is written atomically.  The pages are Jinja2 templates
under ``attnlab/templates/``.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from pathlib import Path

from attnlab.errors import UsageError

def _verdict_order():
    from attnlab.catalog import VERDICTS

    return VERDICTS + ("not run",)


VERDICT_ORDER = _verdict_order()
TEMPLATES = Path(__file__).resolve().parent / "templates"

# Where each paper is published (the versions the claims cite; the README's table of papers says the same)
PAPER_LINKS = {
    "efa": [("arXiv:2501.16790", "https://arxiv.org/abs/2501.16790"),
            ("authors' code", "https://github.com/yixinw-lab/EFA")],
    "bidir": [("UAI 2023 proceedings", "https://proceedings.mlr.press/v216/wibisono23a.html"),
              ("arXiv:2307.04057 (v2, the version checked)", "https://arxiv.org/abs/2307.04057"),
              ("authors' code", "https://github.com/yixinw-lab/attention-uai")],
    "fenchel": [("OpenReview (TMLR submission)", "https://openreview.net/forum?id=lHnbmXtJXf")],
    "kernel": [("arXiv:2111.01222 (an earlier version)", "https://arxiv.org/abs/2111.01222"),
               ("authors' code", "https://github.com/onenoc/kernel-continuous-attention")],
}
# The verdict scale of the empirical claims (catalog.RESULTS_VERDICTS, and `skipped`): when each is given,
# in the words of docs/results_verdicts.md (tests/test_report.py keeps the two equal).
VERDICT_SCALE = {
    "holds": "reproduced: on the paper's data, model and protocol, our 95% interval supports the statement",
    "erratum": "contradicted on the paper's own data and protocol, with the registered seeds, and the paper's "
               "printed number (or effect) lies outside our interval; the corrected statement is what we measured",
    "fails": "contradicted on the paper's data where the paper prints no number for the statement",
    "inconclusive": "our interval contains both the paper's effect and no effect, or the registered seeds are not "
                    "all there",
    "reproduced-on-substitute": "supported, but on substitute data, another model or a changed protocol",
    "not-reproduced-on-substitute": "not supported on a substitute -- never an erratum: a substitute cannot show "
                                    "the paper wrong",
    "skipped": "no usable record at all (the reason is given)",
}


def figures_folder() -> Path:
    """The folder `attnlab figures` renders into by default: the paper_figures package."""
    import attnlab.paper_figures

    return Path(attnlab.paper_figures.__file__).resolve().parent


def read_claim_records(path: str | Path, option: str = "--verdicts") -> dict[str, dict]:
    """The records of a file written by ``attnlab verify --json FILE``, keyed by claim id; bad input is a
    UsageError naming `option` (the command-line option that gave the file)."""
    from attnlab.atomic_io import read_json

    if not str(path).strip():                  # ('' read as the current folder: "Is a directory")
        raise UsageError(f"{option} is empty; give a file written by `attnlab verify --json FILE`")
    p = Path(path)
    try:
        data = read_json(p)                    # unreadable, binary, not JSON, nested too deeply: one line
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}; give a file written by `attnlab verify --json FILE`") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str)
                                             and isinstance(r.get("verdict"), str) for r in data):
        raise UsageError(f"{option} {p}: not a list of claim records with 'id' and 'verdict'; "
                         "give a file written by `attnlab verify --json FILE`")
    if not data:                    # (a report with "not run" everywhere, exit 0)
        raise UsageError(f"{option} {p}: holds no claim record; give a file written by `attnlab verify --json FILE`")
    from attnlab.catalog import VERDICTS

    bad = next((r for r in data if r["verdict"] not in VERDICTS), None)
    if bad is not None:
        raise UsageError(f"{option} {p}: claim {str(bad['id'])[:60]!r} has verdict {str(bad['verdict'])[:30]!r}; "
                         f"a verdict is one of {', '.join(VERDICTS)}")
    out: dict[str, dict] = {}
    for r in data:                  # one claim twice with two verdicts: which one to show cannot be told
        if r["id"] in out and out[r["id"]]["verdict"] != r["verdict"]:
            raise UsageError(f"{option} {p}: claim {r['id'][:60]!r} appears twice, with verdicts "
                             f"{out[r['id']]['verdict']!r} and {r['verdict']!r}; give one record per claim")
        out[r["id"]] = r
    from attnlab import catalog

    known = {c.id for c in catalog.all_claims()}
    stale = sorted(set(out) - known)
    if stale:                       # written by another version of attnlab: not shown, said so
        print(f"attnlab: warning: {option} {p}: {len(stale)} record(s) of claims this version does not have "
              f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}) are not shown", file=sys.stderr)
    return out


def run_fast_claims(papers, progress=None) -> dict[str, dict]:
    """Run the fast claims of `papers` (as `attnlab verify --tier fast` does) and return their records."""
    from attnlab import catalog

    claims = [c for p in papers for c in catalog.all_claims(paper=p, tier="fast")]
    out = {}
    if progress is not None:
        progress.total = len(claims)
    for c in claims:
        if progress is not None:
            progress.start(c.id)
        rec = catalog.run_claim(c)
        if progress is not None:
            progress.done(rec)
        out[c.id] = rec.to_json()
    return out


def _short(x, width=60) -> str:
    from attnlab.catalog import format_value

    return format_value(x, width)


def claim_rows(paper: str, records: dict[str, dict]) -> list[dict]:
    """Every claim of `paper` with its verdict ('not run' where `records` lacks it); ``statement_html`` and
    ``corrected_html`` are the statement and corrected form with MathML maths where the claim has a
    current LaTeX form (attnlab.mathtext.claim_forms), else escaped plain text."""
    from attnlab import catalog, mathtext

    rows = []
    for c in catalog.all_claims(paper=paper):
        r = records.get(c.id)
        verdict = r["verdict"] if r else "not run"
        tex = mathtext.claim_forms(c)
        rows.append({
            "id": c.id, "reference": c.reference, "statement": c.statement, "corrected": c.corrected,
            "statement_html": mathtext.to_html(tex.statement, c.statement) if tex else mathtext.escaped(c.statement),
            "corrected_html": mathtext.to_html(tex.corrected, c.corrected) if tex and tex.corrected
                              else mathtext.escaped(c.corrected),
            "method": c.method, "tier": c.tier, "expected": c.expected, "verdict": verdict,
            "surprise": verdict not in (c.expected, "skipped", "not run") or (
                verdict == "skipped" and c.method == "results" and c.expected != "skipped"),
            "measured": _short(r.get("measured")) if r else "", "tolerance": _short(r.get("tolerance"), 24) if r else "",
            "explanation": (r.get("explanation") or "") if r else "",
            "empirical": catalog.on_results_scale(c),
            "data_source": None if c.registration is None else c.registration.data_source,
            "deviation": "" if c.registration is None else c.registration.deviation,
            "ci95": _short(r.get("ci95")) if r and r.get("ci95") else "-",
            "paper_interval": (f"{_short(r.get('paper_interval'))} (R = {r.get('paper_runs')})"
                               if r and r.get("paper_interval") else "-"),
            "paper_effect": _short(r.get("paper_effect")) if r and r.get("paper_effect") is not None else "-",
            "seeds": f"{r.get('n_seeds_used', 0)}/{len(c.registration.seeds)}"
                     if r and c.registration is not None else "",
        })
    return rows


def result_tables(paper: str, root: Path) -> dict:
    """The results of `paper`, one table per experiment: ``headline`` (attnlab.headline: the paper's
    configuration and metric, paper beside ours, the registered verdict and data source) and ``all`` (the
    display rows of attnlab.results: every config and metric) and ``costs`` (attnlab.results.wall_times: the
    wall seconds, epochs and stop rules of the runs)."""
    from attnlab import headline
    from attnlab.results import (DISPLAY_COLUMNS, WALL_COLUMNS, display_row, load_records, summarize,
                                 wall_display_row, wall_times)

    records = load_records(root, paper)           # read once (a warning about a record is said once)
    rows = summarize(paper, root, records=records)
    walls = wall_times(paper, root, records=records)
    tables: dict[str, list] = {}
    for r in rows:
        tables.setdefault(r["experiment"], []).append(display_row(r))
    full = [{"experiment": exp, "columns": [c for c in DISPLAY_COLUMNS if c != "experiment"], "rows": rs,
             "n_ours": sum(r["n"] != "0" for r in rs)} for exp, rs in tables.items()]
    groups: dict[str, list] = {}
    for r in headline.headline_rows(paper, root, summary=rows):
        groups.setdefault(r["experiment"], []).append(r)
    heads = []
    for exp, rs in groups.items():
        df = headline.experiment_frame(rs)
        shown = [{**cells, "verdict_class": r["verdicts"][0] if len(set(r["verdicts"])) == 1 else "mixed"}
                 for cells, r in zip(df.to_dict("records"), rs)]
        heads.append({"experiment": exp, "caption": headline.caption(exp, rs), "columns": list(df.columns),
                      "rows": shown, "n_ours": sum(r["n_seeds"] > 0 for r in rs)})
    costs = {"columns": list(WALL_COLUMNS), "rows": [wall_display_row(w) for w in walls]}
    return {"headline": heads, "all": full, "costs": costs}


def paper_figures(paper: str, folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{paper}_*.png"))


@contextlib.contextmanager
def results_in(root: Path):
    """$ATTNLAB_RESULTS set to `root` for the duration (the claims and the figures read records from there),
    as it was afterwards."""
    before = os.environ.get("ATTNLAB_RESULTS")
    os.environ["ATTNLAB_RESULTS"] = str(Path(root).resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("ATTNLAB_RESULTS", None)
        else:
            os.environ["ATTNLAB_RESULTS"] = before


def from_records(png: Path) -> bool:
    """Whether a committed figure is drawn from results records (the experiments' figures, <paper>_exp_*, and the
    toy corpus scatter of bidir), not from the library's numerics alone."""
    return "_exp_" in png.stem or png.stem == "bidir_toy_scatter"


def draw_from_records(paper: str, root: Path, folder: Path, warn) -> list[Path]:
    """The figures of `paper` that are drawn from records, drawn from those under `root` into `folder` (a
    report of other records than the committed ones shows their figures, not the committed PNGs); one that
    cannot be drawn (no records of its experiment there) is left out with a warning through `warn`."""
    import importlib

    from attnlab.paper_figures import style
    from attnlab.registry import FIGURES

    drawn: list[Path] = []
    with results_in(root):
        for mod_name in FIGURES[paper]:
            mod = importlib.import_module(mod_name)
            for name in getattr(mod, "FROM_RECORDS", ()):
                previous = style.vector_output(False)
                try:
                    drawn += [Path(p) for p in mod.FIGURES[name](folder) or [] if from_records(Path(p))]
                except (FileNotFoundError, UsageError, KeyError, TypeError, ValueError, IndexError,
                        AttributeError) as exc:
                    warn(f"figure {name} is not shown: it cannot be drawn from the records in "
                         f"{Path(root).name} ({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__})")
                finally:
                    style.vector_output(previous)
    return sorted(drawn)


def figure_entry(path: Path) -> dict:
    """What the page shows for one figure: its caption from paper_figures/captions.py (the paper's figure
    number, or that the paper has none, and what it shows) and an alt text in words."""
    from attnlab import mathtext
    from attnlab.paper_figures.captions import CAPTIONS

    cap = CAPTIONS.get(path.stem)
    if cap is None:                      # a figure rendered here that the caption table does not know yet
        label, text = "Figure", "(no caption yet)"
    else:
        label = f"{cap.paper_figure} of the paper" if cap.paper_figure else "Not a figure of the paper"
        text = cap.text
    return {"src": f"figures/{path.name}", "name": path.stem, "label": label,
            "caption_html": mathtext.to_html(text), "alt": f"{label}: {mathtext.plain(text)}"}


def paper_page(paper: str, records: dict[str, dict], root: Path, figures: list[Path]) -> dict:
    """Everything the paper template shows."""
    from attnlab import comparisons
    from attnlab.catalog import PAPER_TITLES

    claims = claim_rows(paper, records)
    counts = Counter(c["verdict"] for c in claims)
    return {
        "paper": paper, "title": PAPER_TITLES[paper], "claims": claims,
        "errata": [c for c in claims if c["expected"] == "erratum" and not c["empirical"]],
        "findings": [c for c in claims if c["empirical"]],
        "counts": [(v, counts[v]) for v in VERDICT_ORDER if counts[v]],
        "surprises": [c["id"] for c in claims if c["surprise"]],
        "compare": comparisons.tables(paper),
        "results": result_tables(paper, root),
        "figures": [figure_entry(p) for p in figures],
        "links": PAPER_LINKS[paper],
    }


def _environment():
    import jinja2

    from attnlab.catalog import VERDICT_WORDS

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(("html",)),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["words"] = lambda v: VERDICT_WORDS.get(v, v)
    return env


def verdict_scale() -> list[dict]:
    """The verdict scale of the empirical claims, in the order of catalog.RESULTS_VERDICTS, then `skipped`."""
    from attnlab.catalog import RESULTS_VERDICTS, VERDICT_WORDS

    return [{"verdict": v, "words": VERDICT_WORDS[v], "when": VERDICT_SCALE[v]}
            for v in RESULTS_VERDICTS + ("skipped",)]


def build(out: Path, papers, records: dict[str, dict], claims_source: str, root: Path,
          figures_dir: Path | None = None) -> list[Path]:
    """Write the site into `out` (index.html, <paper>.html, style.css, figures/) and return the pages."""
    from attnlab.catalog import PAPERS

    for p in papers:
        if p not in PAPERS:
            raise UsageError(f"unknown paper {p!r}; valid: {', '.join(PAPERS)}")
    figures_dir = figures_dir or figures_folder()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a folder")
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    from attnlab.atomic_io import atomic_write_bytes, atomic_write_text, check_writable

    from attnlab.evidence import committed_records
    from attnlab.results import stderr_warning

    committed = Path(root).resolve() == committed_records().resolve()
    with contextlib.ExitStack() as stack:   # (the figures drawn for this site, removed when it is written)
        figs = {p: paper_figures(p, figures_dir) for p in papers}
        if not committed:                       # the figures of the records shown, drawn from them
            import tempfile

            drawn_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="attnlab-report-figures-")))
            for p in papers:
                figs[p] = sorted([f for f in figs[p] if not from_records(f)]
                                 + draw_from_records(p, root, drawn_dir, warn=stderr_warning))
        # every file the site replaces, checked before the first is written (a read-only page left a site
        # half-updated: its style sheet and figures new, its pages old); each then written atomically
        for target in ([out / "index.html", out / "style.css"] + [out / f"{p}.html" for p in papers]
                       + [out / "figures" / f.name for p in papers for f in figs[p]]):
            check_writable(target, "--out")
        env = _environment()
        pages, written = [], []
        for p in papers:
            for f in figs[p]:
                atomic_write_bytes(out / "figures" / f.name, f.read_bytes())
            pages.append(paper_page(p, records, root, figs[p]))
        nav = [(pg["paper"], pg["title"]) for pg in pages]
        # where the results came from, without a folder of this machine (a site travels)
        shown = ("the committed records" if committed else f"the records in a folder named {Path(root).resolve().name}")
        common = {"nav": nav, "claims_source": claims_source, "results_from": shown, "scale": verdict_scale()}
        atomic_write_bytes(out / "style.css", (TEMPLATES / "style.css").read_bytes())
        for pg in pages:
            path = out / f"{pg['paper']}.html"
            atomic_write_text(path, env.get_template("paper.html").render(page=pg, **common))
            written.append(path)
        index = out / "index.html"
        atomic_write_text(index, env.get_template("index.html").render(pages=pages, **common))
        return [index] + written
