"""The `attnlab` command line.  Heavy modules are imported inside the commands, so `--help` is instant."""
from __future__ import annotations

import argparse
import difflib
import errno
import fnmatch
import json
import math
import re
import sys

from attnlab import __version__
from attnlab.registry import COMPARE, FIGURES, RUN

PAPERS = ("efa", "bidir", "fenchel", "kernel")  # kept in sync with catalog.PAPERS by a test
TIERS = ("fast", "slow", "all")
TABLE_FORMATS = ("table", "md", "latex", "csv", "json")  # kept in sync with tables.FORMATS by a test


from attnlab.errors import ArgumentParser, UsageError  # noqa: E402  (re-exported: attnlab.cli.UsageError)


#: where results and report read records without --results-dir (attnlab.experiment.results_root, read=True)
_READ_RESULTS_HELP = ("default $ATTNLAB_RESULTS, else ./results where it exists, else the committed records (of the "
                      "repository, or shipped with the package)")


def _choice(value: str, allowed, what: str) -> str:
    if value not in allowed:
        raise UsageError(f"unknown {what} {value!r}; valid: {', '.join(allowed)}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="attnlab",
        description="Check, compute and reproduce four papers on attention as statistical inference "
                    "(efa, bidir, fenchel, kernel).")
    p.add_argument("--version", action="version", version=f"attnlab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    q = sub.add_parser("list", help="list the claims without running them")
    q.add_argument("--paper", help=f"one of {', '.join(PAPERS)}")
    q.add_argument("--tier", default="all", help="fast | slow | all (default all)")
    q.add_argument("--json", metavar="FILE", help="write the list as JSON ('-' for stdout)")
    q.add_argument("--markdown", action="store_true",
                   help="print Markdown tables: the claims, then the errata (printed vs corrected)")

    v = sub.add_parser("verify", help="run the claims and print verdicts")
    v.add_argument("--paper", help=f"one of {', '.join(PAPERS)}")
    v.add_argument("--claim", nargs="+", metavar="ID",
                   help="claim ids to run, or globs of ids (quote them: 'fenchel.thm1.*')")
    v.add_argument("--tier", default=None, help="fast | slow | all (default fast)")
    v.add_argument("--json", metavar="FILE", help="write the records as JSON ('-' for stdout)")
    v.add_argument("--jobs", default="1", metavar="N",
                   help="run the claims in N processes (one torch thread each; same verdicts; default 1)")

    c = sub.add_parser("compare", help="exact against approximate solutions on an instance",
                       add_help=False)
    c.add_argument("target", nargs="?", help=", ".join(COMPARE))
    c.add_argument("rest", nargs=argparse.REMAINDER)

    cv = sub.add_parser("converge", help="trapezoid rule against a verified (Arb) reference on an instance "
                        "(= attnlab compare kernel-quadrature)", add_help=False)
    cv.add_argument("rest", nargs=argparse.REMAINDER)

    r = sub.add_parser("run", help="run an experiment (see `attnlab run NAME --help`)", add_help=False)
    r.add_argument("target", nargs="?", help=", ".join(RUN))
    r.add_argument("rest", nargs=argparse.REMAINDER)

    s = sub.add_parser("results", help="our numbers (mean ± 95%% CI over seeds) beside the paper's")
    s.add_argument("paper", help=f"one of {', '.join(PAPERS)}")
    s.add_argument("--json", metavar="FILE", help="write rows as JSON ('-' for stdout)")
    s.add_argument("--format", default="table", metavar="FMT",
                   help=f"how to print the table: {' | '.join(TABLE_FORMATS)} (default table; csv and json "
                        "carry the raw numbers)")
    s.add_argument("--all", action="store_true",
                   help="every row: every config and metric we ran (default: the headline, one table per experiment "
                        "at the paper's configuration and metric, with the registered verdicts)")
    s.add_argument("--config", help="only this config (quick, full, or a named reduced config such as cpu); "
                                    "the headline at this config instead of the paper's")
    s.add_argument("--results-dir", default=None, help=_READ_RESULTS_HELP)
    s.add_argument("--wall-times", action="store_true",
                   help="the cost of the runs instead: per experiment, config and run, the records' mean wall "
                        "seconds, epochs run, seconds per epoch and how training stopped")
    s.add_argument("--per-seed", action="store_true",
                   help="every seed's value instead of the mean: per experiment, config, setting, model and "
                        "metric, the seeds in order with their values, beside the paper's number")

    f = sub.add_parser("figures", help="render the papers' figures into paper_figures/")
    f.add_argument("--paper", help=f"one of {', '.join(PAPERS)}")
    f.add_argument("--only", nargs="+", metavar="NAME", help="figure names to render")
    f.add_argument("--out", default=None, help="output folder (default ./paper_figures)")
    f.add_argument("--check", action="store_true",
                   help="write nothing: say which figures in --out differ from what the records and the "
                        "library give now (their drawn content, not their pixels); exit 1 if any does")
    f.add_argument("--vector", action="store_true",
                   help="also write each figure as PDF and SVG beside its PNG (not committed: made on demand)")

    h = sub.add_parser("report", help="write a static HTML site: claims, errata, results and figures per paper")
    h.add_argument("--paper", help=f"one of {', '.join(PAPERS)} (default: all four)")
    h.add_argument("--out", default="report", help="output folder (default ./report)")
    h.add_argument("--verdicts", metavar="FILE",
                   help="the verdicts of a file written by `attnlab verify --json FILE` (default: run the fast claims)")
    h.add_argument("--claims", metavar="FILE", help=argparse.SUPPRESS)   # deprecated name of --verdicts
    h.add_argument("--results-dir", default=None, help=_READ_RESULTS_HELP)
    h.add_argument("--screenshots", action="store_true",
                   help="also load each page in headless Chromium and save <page>.png beside it")
    h.add_argument("--screenshot-size", default=None, metavar="WxH",
                   help="browser window of the screenshots in pixels (default 1280x1600)")

    d = sub.add_parser("data", help="locate the real data sets and verify their checksums (md5 of the uncompressed "
                       "content; a .gz file may also be given uncompressed)")
    d.add_argument("names", nargs="*", help="data set names (default: all)")
    return p


def _write_json(obj, dest: str) -> None:
    from attnlab.catalog import jsonable

    if dest == "-":
        sys.stdout.write(json.dumps(jsonable(obj), indent=2) + "\n")
    else:
        from attnlab.atomic_io import write_json_dest

        write_json_dest(dest, jsonable(obj))


def _select(args) -> list:
    from attnlab import catalog

    # an empty --tier / --paper is refused, not read as "not given"
    tier = _choice("fast" if args.tier is None else args.tier, TIERS, "tier")
    paper = _choice(args.paper, PAPERS, "paper") if args.paper is not None else None
    if getattr(args, "claim", None):
        out, named = [], []
        ids = [c.id for c in catalog.all_claims()]
        for cid in args.claim:
            # an id, or a glob of ids (fenchel.thm1.*: fnmatch's *, ? and [...]) that --paper / --tier filter
            glob = any(ch in cid for ch in "*?[")
            hits = fnmatch.filter(ids, cid) if glob else [cid] if cid in ids else []
            if glob:
                hits = [i for i in hits if (not paper or catalog.get_claim(i).paper == paper)
                        and (not args.tier or tier == "all" or catalog.get_claim(i).tier == tier)]
            else:
                named += hits
            if not hits:
                low = cid.lower()[:200]               # (ids are lower case: FENCHEL.THM1... found no suggestion)
                if glob:
                    # the ids sharing the longest start with the glob's text before its first wildcard ('efa.thm3.*':
                    # efa.thm1.*, efa.thm2.*), not difflib on the glob's characters, * included
                    stem = re.split(r"[*?\[]", low, maxsplit=1)[0]
                    near = []
                    for k in range(len(stem), 0, -1):
                        near = [i for i in ids if i.startswith(stem[:k])]
                        if near:
                            break
                    near = near[:8]
                else:
                    near = difflib.get_close_matches(low, ids, n=5, cutoff=0.6) or [
                        i for i in ids if i.startswith(low.split(".")[0] + ".")][:5]
                shown = cid if len(cid) <= 80 else cid[:60] + f"...({len(cid)} characters)"
                raise UsageError((f"no claim matches {shown!r}" + (" of --paper / --tier" if paper or args.tier else "")
                                  if glob else f"unknown claim id {shown!r}")
                                 + (f"; did you mean: {', '.join(near)}?" if near else "")
                                 + f" ({len(ids)} claims: `attnlab list`; a glob such as 'fenchel.thm1.*' picks several)")
            out += [catalog.get_claim(i) for i in hits if catalog.get_claim(i) not in out]
        # --paper / --tier beside a claim id were ignored: one they exclude is a contradiction, not a filter
        for c in (catalog.get_claim(i) for i in named):
            if paper and c.paper != paper:
                raise UsageError(f"--claim {c.id} is a claim of paper {c.paper}, not of --paper {paper}; "
                                 "give the claim ids alone, or --paper alone")
            if args.tier and tier != "all" and c.tier != tier:
                raise UsageError(f"--claim {c.id} is of tier {c.tier}, not of --tier {tier}; "
                                 "give the claim ids alone, or --tier alone")
        return out
    return catalog.all_claims(paper=paper, tier=tier)


def _check_json_dest(args) -> None:
    if getattr(args, "json", None) is not None and args.json != "-":
        from attnlab.atomic_io import check_writable

        check_writable(args.json, "--json")


def call(fn, argv: list[str]) -> int:
    """Run a command-line target `fn(argv)` through the one error path: a UsageError (bad input, a data
    error) is printed as one line and gives exit code 2."""
    from attnlab.experiment import _RESTORING, restore_failed

    try:
        try:
            return int(fn(list(argv)) or 0)
        except Exception as exc:                   # noqa: BLE001 -- one line only for a restored checkpoint's error
            usage = restore_failed(exc)
            if usage is None:
                raise
            raise usage from None
    except UsageError as exc:
        print(f"attnlab: error: {exc}", file=sys.stderr)
        return 2
    finally:
        _RESTORING.clear()                         # (a command's restored checkpoint is not the next one's)


def cmd_list(args) -> int:
    _check_json_dest(args)
    if args.json == "-" and args.markdown:
        raise UsageError("--json - prints JSON on stdout and --markdown a table there: give one of them")
    claims = _select(args)
    if args.json:
        _write_json([{"id": c.id, "paper": c.paper, "reference": c.reference, "statement": c.statement,
                      "corrected": c.corrected or None, "method": c.method, "tier": c.tier,
                      "expected": c.expected, "requires": list(c.requires)} for c in claims], args.json)
        if args.json == "-":
            return 0
    from attnlab.listing import claims_markdown, claims_table
    from attnlab.tables import terminal_width

    print(claims_markdown(claims) if args.markdown else claims_table(claims, terminal_width()))
    return 0


def cmd_verify(args) -> int:
    from attnlab.listing import ProgressLine, records_table, summary_line

    _check_json_dest(args)
    claims = _select(args)
    from pathlib import Path

    from attnlab.evidence import results_root

    # the records the empirical claims judge ($ATTNLAB_RESULTS, else the committed ones; not a ./results of the
    # working directory, which `results` and `report` read): its summary and its --json's fingerprint name them (a
    # ./results there was fingerprinted instead, and `report --verdicts` took verdicts judged on other records)
    results_folder = Path(results_root())
    _check_results_folder(args, results_folder)      # $ATTNLAB_RESULTS naming no folder: one line, not 46 skips
    to_stdout = args.json == "-"
    out = sys.stderr if to_stdout else sys.stdout
    jobs = _positive_int(args.jobs, "--jobs")
    from attnlab import verdict_cache

    prog = ProgressLine(len(claims), stream=sys.stderr)
    records = []
    before = verdict_cache.key()
    for rec in _run_claims(claims, jobs, prog.start):
        prog.done(rec)
        records.append(rec)
    prog.close()
    if verdict_cache.key() == before:          # the tree did not change under the run: the test suite may reuse it
        verdict_cache.store(records, before)
    from attnlab.tables import terminal_width

    width = None if to_stdout else terminal_width()
    print(records_table(records, width), file=out)
    import textwrap

    line = summary_line(records, str(results_folder))
    print(textwrap.fill(line, width, break_on_hyphens=False) if width else line, file=out)
    if args.json:
        out_json = [r.to_json() for r in records]
        if any(r.claim.method == "results" for r in records):
            # which records the empirical verdicts were judged on: report --verdicts holds its tables' records to it
            from attnlab.results import records_fingerprint

            fingerprint = records_fingerprint(results_folder)
            for r, j in zip(records, out_json):
                if r.claim.method == "results":
                    j["records_fingerprint"] = fingerprint
        _write_json(out_json, args.json)
    return 0 if all(r.ok for r in records) else 1


def _positive_int(value: str, name: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n > 512:
        raise UsageError(f"{name} must be a whole number of processes from 1 to 512; got {value!r}")
    return n


def _run_one_claim_at(i: int, claim_id: str):
    """(i, evidence, seconds) of _run_one_claim: the position travels with the result."""
    return (i, *_run_one_claim(claim_id))


def _run_one_claim(claim_id: str):
    """A claim run in a worker process: found by id (the worker imports the catalog itself); limited to
    one thread (torch's and the BLAS libraries', attnlab.parallel.one_thread) so that N workers use N cores."""
    from attnlab import catalog
    from attnlab.parallel import one_thread

    one_thread()
    rec = catalog.run_claim(catalog.get_claim(claim_id))
    return rec.evidence, rec.seconds


def _run_claims(claims, jobs: int, started):
    """The claims' records in catalog order: in this process, or in `jobs` worker processes, whose verdicts
    are the same (each check is a function of its inputs only; catalog.run_claim starts each as if first)."""
    from attnlab import catalog

    if jobs == 1 or len(claims) < 2:
        # one torch thread here too, as in the workers: the checks are many small tensor operations, which
        # a second thread slows down (a 5x5 reduction took ~8 ms with two threads on a busy 2-core machine,
        # 5 us with one; the fast tier 150 s against 71 s there), and the verdicts are the same; the BLAS
        # libraries' pools likewise (attnlab.parallel.one_thread)
        from attnlab.parallel import one_thread

        one_thread()
        for c in claims:
            started(c.id)
            yield catalog.run_claim(c)
        return
    import warnings
    from concurrent.futures import as_completed

    from attnlab import verdict_cache

    # the costliest first (by each claim's last kept run; unknown ones count as costly), one claim per task,
    # so that a long claim does not start last and leave the other processes idle; yielded in catalog order
    cost = verdict_cache.last_seconds()
    order = sorted(range(len(claims)), key=lambda i: -cost.get(claims[i].id, math.inf))
    done: dict[int, tuple] = {}
    nxt = 0
    started(claims[0].id)
    with _claim_workers(min(jobs, len(claims))) as pool:
        with warnings.catch_warnings():               # the workers are forked as the tasks are queued
            # Python >= 3.12 warns when a process with threads forks (here the pool's manager thread and
            # OpenBLAS's idle pool): see _claim_workers
            warnings.filterwarnings("ignore", message=".*use of fork\\(\\) may lead to deadlocks",
                                    category=DeprecationWarning)
            futures = [pool.submit(_run_one_claim_at, i, claims[i].id) for i in order]     # (queued in order)
        try:
            for fut in as_completed(futures):
                i, evidence, seconds = fut.result()
                done[i] = (evidence, seconds)
                while nxt in done:
                    evidence, seconds = done.pop(nxt)
                    if nxt:
                        started(claims[nxt].id)
                    yield catalog.Record(claims[nxt], evidence, seconds)
                    nxt += 1
        finally:
            for fut in futures:
                fut.cancel()


def _claim_workers(n: int):
    """n worker processes for the claims.  On Linux they are forked from this process, which has imported
    the catalog (torch, sympy, scipy and the claims' modules) and limited torch to one thread: a worker
    starts in milliseconds instead of importing all that again (~5 s each; `verify --jobs 2` 36 -> 29 s on
    an idle 2-core machine).  Forking is safe here because this process has run no parallel region before
    (torch's and OpenMP's pools start lazily; OpenBLAS re-creates its threads in a forked child), and each
    claim starts from the same state in any process (catalog.run_claim).  Elsewhere: the platform's default
    start method (spawn), where each worker imports the catalog itself."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        from attnlab.parallel import one_thread

        one_thread()                                  # (inherited by the workers)
        return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"))
    return ProcessPoolExecutor(n)


def _dispatch(table: dict, target: str | None, rest: list[str], what: str) -> int:
    import importlib

    if target in ("-h", "--help"):
        print(f"usage: attnlab {what} NAME [options]   (attnlab {what} NAME --help)\n"
              f"names: {', '.join(table)}")
        return 0
    if not target or not target.strip():        # (the usage block went to stdout, with exit 2)
        raise UsageError(f"{what} needs a NAME, one of {', '.join(table)} (attnlab {what} NAME --help)")
    _choice(target, table, f"{what} target")
    mod_name, func = table[target].split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == mod_name or mod_name.startswith(exc.name + ".")):
            raise UsageError(f"`attnlab {what} {target}` is not available in this version "
                             f"(module {mod_name} is missing)") from None
        raise
    return call(getattr(mod, func), rest)


def _check_results_folder(args, root) -> None:
    """--results-dir or $ATTNLAB_RESULTS naming no folder (a typo, a file): one line, not an empty table."""
    import os

    given = getattr(args, "results_dir", None)
    if not root.is_dir() and (given or os.environ.get("ATTNLAB_RESULTS")):
        where = "--results-dir" if given else "$ATTNLAB_RESULTS"
        raise UsageError(f"{where} {root}: " + ("is a file, not a folder" if root.exists() else "no such folder"))


def cmd_results(args) -> int:
    from pathlib import Path

    from attnlab.experiment import results_root
    from attnlab.results import summarize

    _choice(args.paper, PAPERS, "paper")
    _choice(args.format, TABLE_FORMATS, "--format")
    if args.json == "-" and args.format not in ("table", "json"):     # (--format was dropped without a word)
        raise UsageError(f"--json - prints JSON on stdout and --format {args.format} a table there: give one of them "
                         "(--format json is the same rows as a table of JSON)")
    if args.config is not None and not args.config.strip():
        raise UsageError("--config is empty; give a config name (quick, full, or a named one such as cpu)")
    _check_json_dest(args)
    root = Path(results_root(args, read=True))
    _check_results_folder(args, root)
    if args.wall_times and args.per_seed:
        raise UsageError("--per-seed and --wall-times are two different tables; give one of them")
    if args.wall_times or args.per_seed:
        from attnlab import results as R

        flag, build, fmt = (("--wall-times", R.wall_times, R.format_wall_times) if args.wall_times else
                            ("--per-seed", R.per_seed, R.format_per_seed))
        rows = build(args.paper, root, config=args.config)
        if not rows:
            raise UsageError(f"{flag}: no {args.paper} records"
                             + (f" of config {args.config}" if args.config else "") + f" under {root}")
        if args.json:
            _write_json(rows, args.json)
            if args.json == "-":
                return 0
        from attnlab.tables import terminal_width

        print(fmt(rows, args.format, terminal_width()))
        return 0
    rows = summarize(args.paper, root, config=args.config)
    ours = [r for r in rows if r["n_seeds"]]
    if args.config and not ours:
        from attnlab.results import load_records

        have = sorted({r["config"] for r in load_records(root, args.paper, warn=lambda m: None)})
        raise UsageError(f"--config {args.config}: no {args.paper} records of that config under {root}"
                         + (f"; configs with records: {', '.join(have)}" if have else ""))
    if not ours:
        print(f"attnlab: warning: no {args.paper} records under {root} (only the paper's numbers are shown; "
              "run `attnlab run ...`, or point --results-dir / $ATTNLAB_RESULTS at your records)", file=sys.stderr)
    from attnlab import headline
    from attnlab.tables import terminal_width

    if not args.all:
        rows = headline.headline_rows(args.paper, root, config=args.config, summary=rows)
    if args.json:                       # the rows --format json prints (the headline's keys), one JSON shape
        _write_json(rows if args.all else [{k: r.get(k) for k in headline.HEADLINE_KEYS} for r in rows], args.json)
        if args.json == "-":
            return 0
    if not rows:
        print(f"no results for {args.paper} under {results_root(args, read=True)}")
        return 0
    width = terminal_width()
    print(headline.format_all(rows, args.format, width) if args.all else
          headline.format_headline(rows, args.format, width))
    if args.format == "table" and not args.all:
        import textwrap

        which = (f"config {args.config} and the paper's metric of each experiment" if args.config
                 else "the paper's configuration and metric of each experiment")
        hint = (f"({which}; every config and metric: attnlab results {args.paper} --all; also --per-seed, "
                "--wall-times)")
        print("\n" + (textwrap.fill(hint, max(width, 20)) if width else hint))
    return 0


def cmd_figures(args) -> int:
    import importlib
    from pathlib import Path

    papers = [_choice(args.paper, PAPERS, "paper")] if args.paper is not None else list(FIGURES)
    available = {}
    for paper in papers:
        for mod_name in FIGURES[paper]:
            try:
                mod = importlib.import_module(mod_name)
            except ModuleNotFoundError as exc:
                if exc.name == mod_name:
                    continue
                raise
            for name, fn in getattr(mod, "FIGURES", {}).items():
                available[name] = (paper, fn, Path(mod.__file__).resolve().parent)
    if args.only:
        unknown = [x for x in args.only if x not in available]
        if unknown:
            import difflib

            # (a figure's name is not its file's: efa_exp_fig6.png is figure exp_fig6 of --paper efa)
            near = list(dict.fromkeys(m for x in unknown for m in difflib.get_close_matches(x, list(available), n=1)))
            raise UsageError(f"unknown figure(s) {', '.join(unknown)}" + (f" (did you mean {', '.join(near)}?)"
                                                                          if near else "")
                             + f"; valid: {', '.join(available) or 'none'}")
    names = list(dict.fromkeys(args.only)) if args.only else list(available)     # a name twice is drawn once
    from attnlab.experiment import results_root

    # $ATTNLAB_RESULTS naming no folder (a typo): one line, before a figure of "no records yet" replaces a good one
    _check_results_folder(args, Path(results_root(read=True)))
    n = 0
    # ./paper_figures of the working directory by default (the repository's folder when run there), never
    # into an installed package
    from attnlab.atomic_io import check_folder

    # a file there or on the way to it, an empty name, a folder that cannot be made: one line, before drawing
    check = bool(getattr(args, "check", False))
    if check and args.vector:
        raise UsageError("--check writes no file and --vector writes PDF and SVG files: give one of them")
    if check:                                   # compares with the folder's PNGs: it must be there, not made
        out_dir = Path(args.out if args.out is not None else "paper_figures")
        if not out_dir.is_dir():
            raise UsageError(f"--out {out_dir}: " + ("is a file, not a folder of figures" if out_dir.exists()
                                                     else "no such folder of figures to check"))
    else:
        out_dir = check_folder(args.out if args.out is not None else "paper_figures", "--out", make=True)
    missing = []
    from attnlab.paper_figures import style
    from attnlab.progress import is_tty

    drawn = {} if check else None
    drawn_by: dict = {}                             # --check: file stem -> the figure name that draws it
    previous_check = style.check_mode(drawn)
    try:
        for name in names:
            paper, fn, _ = available[name]
            before = set(drawn) if check else set()
            if is_tty():                                # (quiet where stderr is no terminal)
                print(f"[{paper}] {'drawing' if check else 'rendering'} {name} ...", file=sys.stderr, flush=True)
            previous = style.vector_output(args.vector)
            try:
                paths = fn(out_dir) or []
            except FileNotFoundError as exc:            # a figure drawn from records that are not there
                missing.append(f"figure {name}: {exc} (records are read from ./results or $ATTNLAB_RESULTS)")
                continue
            except UsageError as exc:                   # a stored artefact is missing: the message names the run
                missing.append(f"figure {name}: {exc}")
                continue
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                # a record that passed the checks of attnlab.results but whose stored curves or samples are not
                # what the figure draws (a hand-edited or foreign record): one line naming the figure, the others drawn
                missing.append(f"figure {name}: its records cannot be drawn ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0][:120] if str(exc) else ''}); check the records it reads")
                continue
            finally:
                style.vector_output(previous)
            if check:
                drawn_by.update(dict.fromkeys(set(drawn) - before, name))
            for path in paths:
                print(path)
                n += 1
    finally:
        style.check_mode(previous_check)
    if check:
        n = _check_figures(drawn, out_dir, len(missing), drawn_by)
    else:
        print(f"{n} file(s) written", file=sys.stderr)
    if missing:                                     # the others are drawn; each missing one is one line
        if len(missing) == 1:
            raise UsageError(missing[0])
        for line in missing[:-1]:
            print(f"attnlab: error: {line}", file=sys.stderr)
        raise UsageError(missing[-1])
    return 1 if check and n else 0


def _check_figures(drawn: dict, out_dir, not_drawn: int = 0, drawn_by: dict | None = None) -> int:
    """`attnlab figures --check`: each figure drawn (its content digest in `drawn`) against the digest its
    PNG in `out_dir` carries; one line per figure (current, stale, missing, unreadable, no digest: a PNG
    written without one or without the digest of its pixels, or modified: its pixels are not those it was
    written with), a summary line that counts the `not_drawn` figures (no records to draw them
    from) among those asked for; returns how many are not current."""
    from attnlab.paper_figures.style import png_digest, png_pixels_intact

    bad = 0
    redraw: list = []                               # the figure names (not file names) to redraw
    unnamed = 0                                     # files not current whose figure is not known
    for stem, digest in drawn.items():
        path = out_dir / f"{stem}.png"
        if not path.is_file():
            state = "missing"
        else:
            try:
                stored = png_digest(path)
                state = "current" if stored == digest else "stale" if stored else "no digest"
                if state == "current":
                    intact = png_pixels_intact(path)
                    state = "no digest" if intact is None else "current" if intact else "modified"   # (changed after)
            except OSError:                         # not a PNG (PIL cannot read it), or not readable
                state = "unreadable"
        bad += state != "current"
        name = (drawn_by or {}).get(stem)
        if state != "current":
            unnamed += name is None
            if name and name not in redraw:         # (one figure may draw several files)
                redraw.append(name)
        print(f"{state:10} {path}")
    only = f" --only {' '.join(redraw)}" if redraw and not unnamed else ""
    print(f"{len(drawn) - bad} of {len(drawn) + not_drawn} figure(s) current"
          + (f"; {not_drawn} could not be drawn (below)" if not_drawn else "")
          + (f"; redraw the others with `attnlab figures{only} --out {out_dir}`" if bad else ""), file=sys.stderr)
    return bad


def _window_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
        if not (100 <= w <= 10000 and 100 <= h <= 20000):
            raise ValueError
    except ValueError:
        raise UsageError(f"--screenshot-size must be WxH in pixels (100..10000 x 100..20000), e.g. 1280x1600; "
                         f"got {text!r}") from None
    return w, h


def cmd_report(args) -> int:
    from pathlib import Path

    from attnlab import report
    from attnlab.atomic_io import check_writable
    from attnlab.experiment import results_root

    papers = [_choice(args.paper, PAPERS, "paper")] if args.paper is not None else list(PAPERS)
    root = Path(results_root(args, read=True))
    _check_results_folder(args, root)
    from attnlab.atomic_io import check_folder

    out = check_folder(args.out, "--out")
    check_writable(str(out / "index.html"), "--out")
    size = _window_size(args.screenshot_size or "1280x1600")
    if not args.screenshots and args.screenshot_size is not None:
        raise UsageError("--screenshot-size is the browser window of --screenshots; without --screenshots it would "
                         "be ignored")
    if args.screenshots:
        from attnlab.browser import BROWSERS, find_browser

        if find_browser() is None:
            raise UsageError(f"--screenshots: no headless browser found (looked for {', '.join(BROWSERS)}); "
                             "install Debian's chromium package")
    if args.claims is not None:
        if args.verdicts is not None:
            raise UsageError("--claims is the old name of --verdicts: give --verdicts FILE only")
        print("attnlab: warning: report --claims is deprecated; use --verdicts FILE (the same file)", file=sys.stderr)
    verdicts, option = (args.claims, "--claims") if args.claims is not None else (args.verdicts, "--verdicts")
    if verdicts is not None:
        from pathlib import Path

        # (the file's name only: a folder of this machine has no place in a site that travels)
        records, source = report.read_claim_records(verdicts, option), f"read from {Path(verdicts).name}"
        from attnlab import catalog

        judged_on = {r.get("records_fingerprint") for r in records.values() if r.get("method") == "results"}
        if judged_on - {None}:
            from attnlab.results import records_fingerprint

            if judged_on != {records_fingerprint(root)}:
                # (its verdicts beside tables of other records: "5/5 seeds" beside "no seeds run")
                raise UsageError(f"{option} {verdicts}: its empirical verdicts were judged on other records than the "
                                 "ones this report's tables show (another results folder, or records changed since); "
                                 "write it again with `attnlab verify --json FILE` over the same records, or leave "
                                 f"{option} out")
        elif judged_on:
            print(f"attnlab: warning: {option} {verdicts} does not say which records its empirical verdicts were "
                  "judged on (written by an older attnlab): they are shown beside this report's tables as they are",
                  file=sys.stderr)
        fast = [c.id for c in catalog.all_claims() if c.paper in papers and c.tier == "fast"]
        missing = [cid for cid in fast if cid not in records]
        if missing:                             # (a file of another subset: a report of 'not run' rows)
            print(f"attnlab: warning: {option} {verdicts} holds no verdict for {len(missing)} of the {len(fast)} fast "
                  f"claims shown (e.g. {missing[0]}): they read 'not run'; write the file with `attnlab verify "
                  f"--json FILE` over the papers reported", file=sys.stderr)
    else:
        from attnlab.listing import ProgressLine

        prog = ProgressLine(0, stream=sys.stderr)
        with report.results_in(root):          # the empirical claims judged on the records the tables show
            records, source = report.run_fast_claims(papers, prog), "the fast claims, run when the report was built"
    pages = report.build(out, papers, records, source, root)
    for page in pages:
        print(page)
    if args.screenshots:
        from attnlab.browser import screenshot

        bad = 0
        for page in pages:
            png = page.with_suffix(".png")
            messages = screenshot(page, png, width=size[0], height=size[1])
            print(png)
            for m in messages:
                print(f"attnlab: warning: {page.name}: browser console: {m}", file=sys.stderr)
            bad += bool(messages)
        return 1 if bad else 0
    return 0


def cmd_data(args) -> int:
    from attnlab.experiments.data import DATASETS, DataError, data_file, locate

    names = args.names or list(DATASETS)
    for name in names:
        _choice(name, DATASETS, "data set")
    bad = 0
    for name in names:
        try:
            path = locate(name, verify=True)
            print(f"{name:28s} ok       {path}")
            for f in DATASETS[name].files:         # the checksums verified (md5 of the uncompressed content)
                print(f"{'':28s}   md5 {f.md5}  {data_file(name, f.name, path, verify=False).name}")
        except DataError as exc:
            bad += 1
            print(f"{name:28s} {'CORRUPT ' if exc.kind == 'corrupt' else 'MISSING '} {exc}")
    return 1 if bad else 0


_WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # `run`, `compare` and `converge` hand everything after the target to the target's own parser
        # (argparse's REMAINDER would not pass on a leading --option such as --help).
        if argv[:1] == ["converge"]:
            args = argparse.Namespace(command="converge", rest=argv[1:])
        elif argv[:1] in (["run"], ["compare"]):
            args = argparse.Namespace(command=argv[0], target=argv[1] if len(argv) > 1 else None,
                                      rest=argv[2:])
        else:
            args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"attnlab: error: {exc}", file=sys.stderr)
        return 2
    if not args.command:
        parser.print_help()
        return 2
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "verify":
            return cmd_verify(args)
        if args.command == "compare":
            return _dispatch(COMPARE, args.target, args.rest, "compare")
        if args.command == "converge":              # (the same command under its own name in --help and errors)
            from attnlab.theory.kernel.compare import main as kernel_quadrature

            return kernel_quadrature(args.rest, prog="attnlab converge")
        if args.command == "run":
            from attnlab.parallel import keep_freed_memory

            keep_freed_memory()
            return _dispatch(RUN, args.target, args.rest, "run")
        if args.command == "results":
            return cmd_results(args)
        if args.command == "figures":
            return cmd_figures(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "data":
            return cmd_data(args)
    except UsageError as exc:                      # bad input, data errors (DataError is one)
        print(f"attnlab: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:                        # `attnlab ... | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        # a path that stopped being writable while the command ran (made read-only, the disk full): the
        # paths are checked before the first step, so this is the world changing under a run; what was
        # written before (records, the last checkpoint) stays
        if exc.errno not in _WRITE_ERRNOS or not exc.filename:
            raise
        print(f"attnlab: error: cannot write {exc.filename}: {exc.strerror or exc} (it changed while the command "
              "ran; the records and checkpoints written before stay)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnlab: interrupted", file=sys.stderr)
        return 130
    except SystemError as exc:
        # Ctrl-C inside a compiled callback (python-flint's acb.integral under `converge`) surfaces as a
        # SystemError chained to the KeyboardInterrupt: thousands of lines of chained tracebacks, exit 1
        if not _interrupted(exc):
            raise
        print("attnlab: interrupted", file=sys.stderr)
        return 130
    return 2


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in exc's chain of causes and contexts."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
