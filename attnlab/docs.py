"""Regenerate a repository checkout's generated docs from the live catalog and the committed records:
`python -m attnlab.docs` (`--check`: write nothing, list the files that are out of date, exit 1 if any).

It writes, in the checkout that holds this package (the folder above ``attnlab/``, whatever the working
directory), only the files whose content changes (each atomically):

- docs/claims.md -- the claims and errata, the vouching rule and the statements that are not claims
  (:func:`render`), the whole file;
- docs/claims_vouching.md -- what each claim vouches for (:func:`vouching_markdown`), the whole file;
- docs/results_verdicts.md -- the pre-registration table between its ``registry`` markers;
- docs/convergence.md -- the records by convergence status between its ``status`` markers;
- README.md -- the per-paper claim counts, the errata table and the findings table between their
  ``papers``, ``errata`` and ``findings`` markers.

An installed (not editable) package has no checkout around it: the command then refuses in one line,
exit code 2, and writes nothing.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from attnlab import catalog
from attnlab.atomic_io import atomic_write_text
from attnlab.listing import claims_markdown, errata_markdown, findings_markdown

HEADER = """# Claims and errata

Generated from the catalog by `python -m attnlab.docs`; a test fails when this file and the catalog
disagree. `attnlab verify --tier all --json -` gives the measured values, tolerances and verdicts.
Empirical claims (method `results`) are judged from the committed results records of the experiments,
each on the seeds, margin and rule fixed for it in theory/preregistration.py (docs/results_verdicts.md):
`holds` (reproduced), `erratum` (contradicted on the paper's own data and protocol, the paper's number
outside our interval), `fails` (contradicted where the paper prints no number), `inconclusive`, and on
substitute data, models or protocols "reproduced / not reproduced on a substitute"; `skipped`, with
the reason, while there is no usable record.  A `training` claim with a registration (slow: it trains in
its check) is judged by the same rule and counted with them.  Per paper: {counts}.

"""


# Statements of the papers that look checkable but are not (or not fully) claims, and why.  Kept here so
# that docs/claims.md lists them beside the claims: (paper, reference, statement, why).
NON_CLAIMS = (
    ("efa", "Thm 1 (recovery of theta_2)",
     "Two EFAs with equal conditionals, fitted independently, have K'(y) = C K*(y) and L' = D L*.",
     "Independent fits did not reach equal conditional means (best remaining gaps 0.1 to 6e-4 after 1,500 "
     "L-BFGS iterations), so `efa.thm1.recovery-theta2` checks the proof's algebra on a constructed pair; "
     "whether equal means force K' = C K* is `efa.thm1.gap-pointwise` (an erratum: they do not). theta_1 "
     "is recovered from an independent fit (`efa.thm1.recovery-theta1`)."),
    ("efa", "Table 2 (constant predictor)",
     "The best constant predictor of Table 2's losses scores 0.995 (v1) / 0.542 (v2).",
     "These values come out only with the mean rating rounded to 2.1; `efa.table2.constant-predictor` checks "
     "the constant fitted from the data (0.993 / 0.527) against every Table 2 entry."),
    ("efa", "App. D (Wainwright Ex. 5.8; Bai et al. Prop B.4, Cor L.1)",
     "log N(delta; B(r), |||.|||) <= d log(1 + 2r/delta), and Prop B.4 gives sup_theta |X_theta| <= 2 C B_y^2 "
     "sqrt((d log(4 + 4(L+1) B_H^L B_Theta B / B_y) + log(1/xi)) / F) with probability 1 - xi.",
     "Cited results, taken as given: the volumetric covering bound holds for the ball of any norm on R^d "
     "(|||.||| is one: every parameter enters one of its operator norms), and Prop B.4's constant C is "
     "unspecified, so the bound on sup |X_theta| has no number to test.  What App. D supplies to them are "
     "claims: d (`efa.thm2.parameter-count`), |l| <= 2 B_y^2 and the Lipschitz steps "
     "(`efa.thm2.loss-bound-lipschitz`, `efa.thm2.transformer-lipschitz`), the log constant "
     "(`efa.thm2.log-constant`, `efa.thm2.log-constant-proof`), the last line (`efa.thm2.erm-decomposition`) "
     "and the rate on data (`efa.thm2.excess-loss-rate`)."),
    ("bidir", "App. F (question counts)",
     "The analogy data set has 2,278 semantic and 7,244 syntactic questions over the three vocabularies.",
     "Only the printed arithmetic is a claim (`bidir.app-f.question-counts`); counting the data set needs "
     "the analogy questions file of the `nlp` extra, which the default install does not have."),
    ("fenchel", "App. D, Eqs. (42), (43) (indices)",
     "Sigma_t = sum_{t in A} q_t(t') (t' - mu_t)(t' - mu_t)^T (42); sum_t u(t) mu_t = sum_{i=1}^N u(t) sum_t' "
     "q_t(t') t' = mu~ (43).",
     "Index slips with nothing to compute: (42) sums over t' and (43)'s middle sum runs over t. So read, (42) "
     "is `fenchel.eq39.lse-decomposition` (the library's Sigma-bar against the moments of q_t) and (43) holds "
     "for the symmetric M of footnote 9 (`fenchel.prop1.true-preference`; its index order is "
     "`fenchel.prop1.index-order`)."),
    ("fenchel", "Sec 9 (group example)",
     "If two templates t, t' belong to the same group, M(t, t') = 0; otherwise, M(t, t) = infinity.",
     "A typo for M(t, t') = infinity (M(t, t) = 0, t being in its own group); the example so read is "
     "`fenchel.sec9.group-example`, and what infinite costs do to 'all templates' is "
     "`fenchel.sec9.all-templates-weighted`."),
    ("bidir", "Sec. 3.1, Results (gain at corr = 0.9)",
     "ATN's performance gain is more apparent when corr = 0.9 than when corr = 0.1.",
     "Checked on Table 1 as printed (`bidir.table1.gain-larger-at-corr-0.9`); on our own runs it would be a "
     "contrast of paired differences between settings, which the pre-registered statistics (one comparison per "
     "setting) do not include, and the ATN records do not yet pass the convergence rule."),
    ("kernel", "App. F, Table 5 (memory)",
     "Kernel continuous attention needs O(N^2 + NGD) memory (N basis functions, G grid points, D dims).",
     "Our forward also stores the I x G kernel matrix, which the bound leaves out (the paper calls its "
     "count an upper bound and a streaming implementation would not need it), so measuring our memory "
     "would not test the statement; the computation bound is `kernel.appF.complexity`."),
    ("kernel", "App. B.3 (the aligned process)",
     "Z_k ~ U(-4, 4), k = 1, 2, 3, 4.",
     "The process uses Z_0 .. Z_3: an index slip with nothing to compute; the generator draws four Z's "
     "and its labels are checked against the closed forms in `kernel.B3.class-label-closed-forms`."),
    ("kernel", "Fig. 2a caption",
     "The kernel deformed exponential family tends to converge faster than kernel exponential family attention.",
     "On [0, 1] both trapezoid errors are O(G^-2) with Euler-Maclaurin constants (`kernel.E4.unit-interval-rate`, "
     "`kernel.E4.unit-interval-sparsemax`), so 'faster' is a comparison of constants over the paper's 100 "
     "unseeded draws, measured against its own finest grid; the paper gives no numbers to hold it to."),
    ("kernel", "Fig. 2b caption, App. E.4",
     "The softplus approximation becomes indistinguishable from the deformed exponential attention for rho = 5, 10.",
     "A visual judgement on one unnamed instance; what can be checked is Cor E.5's uniform gap "
     "0 <= exp_{rho,0} - exp_0 <= ln 2/rho and its effect on Algorithm 1's normaliser (`kernel.corE5.softplus-gap`)."),
)


def non_claims_markdown() -> str:
    from attnlab.tables import frame, markdown

    rows = [dict(zip(("paper", "reference", "statement", "why it is not a claim"), r)) for r in NON_CLAIMS]
    return ("\n## Statements that are not claims\n\nStatements of the papers that look checkable but are "
            "not claims here (or only in part), and why.\n\n"
            + markdown(frame(rows, ("paper", "reference", "statement", "why it is not a claim"))) + "\n")


def _empirical_counts(claims, paper: str) -> str:
    n = Counter(c.expected for c in claims if c.paper == paper and catalog.on_results_scale(c))
    return ", ".join(f"{n[v]} {catalog.VERDICT_WORDS[v]}" for v in catalog.EXPECTED if n[v]) or "none"


def render() -> str:
    claims = catalog.all_claims()
    by = Counter((c.paper, c.expected) for c in claims)
    emp = Counter(c.paper for c in claims if catalog.on_results_scale(c))
    th_errata = Counter(c.paper for c in claims if not catalog.on_results_scale(c) and c.expected == "erratum")
    counts = "; ".join(f"{p} {sum(n for (q, _), n in by.items() if q == p) - emp[p]} theory claims "
                       f"({th_errata[p]} errata) + {emp[p]} empirical ({_empirical_counts(claims, p)})"
                       for p in catalog.PAPERS)
    return (HEADER.format(counts=counts) + vouching_summary(claims) + claims_markdown(claims) + "\n"
            + non_claims_markdown())


VOUCHING_RULE = """## What a verdict vouches for

A theory claim's check calls the library function it vouches for -- the one a user gets, in
`attnlab.numerics`, `attnlab.experiments.models`, an experiment's data code (`attnlab.experiments.<name>`)
or an `attnlab` tool -- on inputs that reach its edges,
and holds it against an independent oracle (sympy, mpmath, Arb's rigorous ball integrals, cvxpy, a plain transcription of the equation
as printed) under an honest tolerance.  A private re-implementation may be the oracle, never the thing
under test.  Each claim has one scope: `library` (it names the functions it vouches for), `algebra` (the
paper's algebra alone, no library code: it says why) or `empirical` (committed training records).
tests/test_vouching.py holds every claim to the rule: a `library` claim must call each function it
names (a profile hook sees every call), and a fault injected into any of them must change its verdict
(slow tier).  docs/claims_vouching.md lists the claims and the functions each vouches for.
"""


def _scope_counts(claims) -> str:
    n = Counter(c.scope for c in claims)
    return ", ".join(f"{n[s]} {s}" for s in ("library", "algebra", "empirical", "undeclared") if n[s])


def vouching_summary(claims) -> str:
    return VOUCHING_RULE + f"\nScopes today: {_scope_counts(claims)}.\n\n"


def vouching_markdown() -> str:
    """docs/claims_vouching.md: every claim, its scope and the library functions it vouches for."""
    from attnlab.tables import frame, markdown

    claims = catalog.all_claims()
    rows = [(f"`{c.id}`", c.scope, c.method,
             "<br>".join(f"`{f}`" for f in c.vouches_for) or (c.algebra if c.scope == "algebra" else "-"))
            for c in claims]
    return ("# What each claim vouches for\n\nGenerated from the catalog by `python -m attnlab.docs`; the "
            "rule is in docs/claims.md (\"What a verdict vouches for\") and tests/test_vouching.py holds "
            f"every claim to it.  Scopes: {_scope_counts(claims)}.\n\n"
            + markdown(frame(rows, ("claim", "scope", "oracle method", "vouches for (library) / why none (algebra)")))
            + "\n")


BEGIN, END = "<!-- errata:begin (generated by python -m attnlab.docs) -->", "<!-- errata:end -->"
FINDINGS_BEGIN, FINDINGS_END = "<!-- findings:begin (generated by python -m attnlab.docs) -->", "<!-- findings:end -->"
REGISTRY_BEGIN, REGISTRY_END = "<!-- registry:begin (generated by python -m attnlab.docs) -->", "<!-- registry:end -->"


def registry_markdown() -> str:
    """The pre-registration of every empirical claim (theory/preregistration.py) as a table."""
    from attnlab.tables import frame, markdown
    from attnlab.theory.preregistration import REGISTRY

    rows = []
    for cid, r in sorted(REGISTRY.items()):
        seeds = f"{r.seeds[0]}-{r.seeds[-1]}" if list(r.seeds) == list(range(r.seeds[0], r.seeds[-1] + 1)) else \
            ",".join(map(str, r.seeds))
        rows.append((f"`{cid}`", f"{r.experiment} ({r.config})", r.rule, "; ".join(
            f"{p.a}{' vs ' + p.b if p.b else ''}" + (f" < {p.bound:g}" if p.bound is not None else "")
            + f" [{p.setting if isinstance(p.setting, str) else ' + '.join(p.setting)}]" for p in r.parts[:3])
            + (f"; ... ({len(r.parts)} parts)" if len(r.parts) > 3 else ""),
            "-" if r.rule == "value" else f"{r.margin:g}", r.margin_source, f"{seeds} ({len(r.seeds)})",
            f"{r.paper_runs:g}", r.data_source + (f": {r.deviation}" if r.deviation else ""),
            catalog.VERDICT_WORDS[r.expected]))
    return markdown(frame(rows, ("claim", "experiment (config)", "rule", "parts", "margin", "margin from",
                                 "seeds", "paper's runs R", "data source", "expected")))


STATUS_BEGIN, STATUS_END = "<!-- status:begin (generated by python -m attnlab.docs) -->", "<!-- status:end -->"


def status_markdown() -> str:
    """The committed records by convergence status per experiment and config, then the records at chance,
    from the judgement each record stores (attnlab.migrate_convergence.table), for docs/convergence.md."""
    from collections import Counter

    from attnlab.evidence import committed_records
    from attnlab.migrate_convergence import stored_summary, table

    summary = stored_summary(committed_records())
    rules = Counter(r["rule"] for r in summary)
    return table(summary, history=False) + "\n\nRules named by the records: " + ", ".join(
        f"{r} ({n})" for r, n in sorted(rules.items())) + "."


PAPERS_BEGIN, PAPERS_END = "<!-- papers:begin (generated by python -m attnlab.docs) -->", "<!-- papers:end -->"


def papers_markdown() -> str:
    """Per paper: theory claims (fast + slow), empirical claims, errata, and the docs."""
    from attnlab.tables import frame, markdown

    claims = catalog.all_claims()
    rows = []
    for p in catalog.PAPERS:
        mine = [c for c in claims if c.paper == p]
        th = [c for c in mine if not catalog.on_results_scale(c)]
        fast = sum(c.tier == "fast" for c in th)
        rows.append([f"`{p}`", f"{fast} + {len(th) - fast} + {len(mine) - len(th)}",
                     sum(c.expected == "erratum" for c in th), _empirical_counts(claims, p),
                     f"[docs/{p}.md](docs/{p}.md)", f"[docs/{p}_experiments.md](docs/{p}_experiments.md)"])
    return markdown(frame(rows, ("paper", "claims: theory (fast + slow) + empirical", "theory errata",
                                 "empirical verdicts", "theory notes", "experiments")))


class MissingMarkers(ValueError):
    """A file that the generated blocks go into lacks their markers (or is missing)."""


def _replace_block(text: str, begin: str, end: str, body: str) -> str:
    if begin not in text or end not in text:
        raise MissingMarkers(f"the file lacks the markers {begin!r} ... {end!r}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + body + "\n" + end + tail


def readme_with_errata(readme: str) -> str:
    """The README text with the generated blocks (the per-paper claim counts and the errata table)
    replaced by their live versions."""
    readme = _replace_block(readme, PAPERS_BEGIN, PAPERS_END, papers_markdown())
    readme = _replace_block(readme, BEGIN, END, errata_markdown(catalog.all_claims()))
    return _replace_block(readme, FINDINGS_BEGIN, FINDINGS_END, findings_markdown(catalog.all_claims()))


# The files `python -m attnlab.docs` writes, relative to the checkout, and how each one's new text is made
# from its present text (None where the file does not exist yet).
def _in_place(make_text):
    """A file generated in part (blocks between markers): its present text must exist."""
    def make(old: str | None) -> str:
        if old is None:
            raise MissingMarkers("no such file (its generated blocks go between markers in it)")
        return make_text(old)
    return make


GENERATED = (
    ("docs/claims.md", lambda old: render()),
    ("docs/claims_vouching.md", lambda old: vouching_markdown()),
    ("docs/results_verdicts.md",
     _in_place(lambda old: _replace_block(old, REGISTRY_BEGIN, REGISTRY_END, registry_markdown()))),
    ("docs/convergence.md", _in_place(lambda old: _replace_block(old, STATUS_BEGIN, STATUS_END, status_markdown()))),
    ("README.md", _in_place(readme_with_errata)),
)

PROG = "python -m attnlab.docs"


def _checkout(root: Path) -> Path:
    """`root` when it is a repository checkout (a docs/ folder and README.md beside the package), else UsageError."""
    from attnlab.errors import UsageError

    if not (root / "docs").is_dir() or not (root / "README.md").is_file():
        raise UsageError(f"{PROG} regenerates the docs of a repository checkout (docs/ and README.md beside the "
                         f"attnlab package); {root} has no docs/ folder or no README.md (an installed package): "
                         f"run it in a checkout of the repository")
    return root


def out_of_date(root: Path) -> dict[str, str]:
    """{path relative to `root`: its new text} for every generated file whose text would change; reads only.
    UsageError naming the file when one cannot be read or lacks its markers."""
    from attnlab.errors import UsageError

    changed = {}
    for rel, make in GENERATED:
        path = root / rel
        try:
            old = path.read_text(encoding="utf-8") if path.exists() else None
            new = make(old)
        except (OSError, UnicodeDecodeError, MissingMarkers) as exc:
            raise UsageError(f"{path}: {exc}; {PROG} cannot regenerate it") from None
        if new != old:
            changed[rel] = new
    return changed


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    """The command line; `root` (the checkout, default: the folder above the package) is for the tests."""
    from attnlab.atomic_io import check_writable
    from attnlab.errors import ArgumentParser

    p = ArgumentParser(prog=PROG, description="Regenerate the checkout's generated docs ("
                       + ", ".join(rel for rel, _ in GENERATED) + ") from the catalog and the committed "
                       "records, writing only the files whose content changes.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; list the files that are out of date and exit with code 1 if any")
    args = p.parse_args(argv)
    root = _checkout(Path(__file__).resolve().parents[1] if root is None else Path(root))
    changed = out_of_date(root)
    if args.check:
        if changed:
            print(f"{len(changed)} of {len(GENERATED)} generated files are out of date: {', '.join(changed)}; "
                  f"regenerate them with `{PROG}`")
            return 1
        print(f"the {len(GENERATED)} generated files are current")
        return 0
    for rel in changed:                      # every file is checked before any is written
        check_writable(root / rel, rel)
    for rel, text in changed.items():
        print(atomic_write_text(root / rel, text))
    print(f"{len(changed)} of {len(GENERATED)} generated files rewritten"
          + ("" if changed else " (all current)"))
    return 0


if __name__ == "__main__":
    import sys

    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
