"""The claim catalog.

A *claim* is one checkable statement of a paper: a proposition, an equation, an error order, a
number in a table.  It is registered once, with the decorator :func:`claim`, in the paper's module
under ``theory/``; pytest (``tests/test_claims.py``) and ``attnlab verify`` both read this catalog,
so they can never disagree.

A check is a function of no arguments that returns an :class:`Evidence`, built with
:func:`holds_if` (for claims expected to hold) or :func:`erratum_if` (for claims whose printed form
fails and whose corrected form holds).  It may raise :class:`Skip` when an optional dependency or
data set is missing.  Any other exception becomes the verdict ``error``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import math
import pkgutil
import random
import sys
import time
import traceback
from typing import Any, Callable, Iterable

PAPERS = ("efa", "bidir", "fenchel", "kernel")
PAPER_TITLES = {
    "efa": "Exponential Family Attention",
    "bidir": "Bidirectional Attention as a Mixture of Continuous Word Experts",
    "fenchel": "Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions",
    "kernel": "Kernel Multimodal Continuous Attention",
}
METHODS = ("sympy", "mpmath", "cvxpy", "float64", "torch", "training", "results")
TIERS = ("fast", "slow")
# The verdict scale of the empirical (`results`) claims (attnlab.evidence states the rule): `holds` =
# reproduced on the paper's data and protocol; `erratum` = contradicted there, the paper's printed number
# outside our interval; `fails` = contradicted where the paper prints no number for the statement;
# `inconclusive` = our interval cannot tell (or the registered seeds are not all there); on substitute
# data, a changed model or protocol: reproduced / not reproduced on a substitute, never `erratum`.
RESULTS_VERDICTS = ("holds", "erratum", "fails", "inconclusive", "reproduced-on-substitute",
                    "not-reproduced-on-substitute")
# What each verdict says, in words (tables, report, README).
VERDICT_WORDS = {"holds": "holds", "erratum": "erratum", "fails": "fails", "inconclusive": "inconclusive",
                 "reproduced-on-substitute": "reproduced on a substitute",
                 "not-reproduced-on-substitute": "not reproduced on a substitute",
                 "skipped": "skipped", "error": "error"}
# Expected verdicts: a theory claim holds or is an erratum (the printed form fails, a corrected form
# holds); an empirical claim expects what its registered evidence gave (theory/preregistration.py),
# `skipped` while there is none.
EXPECTED = RESULTS_VERDICTS + ("skipped",)
# Verdicts a run can produce.  `fails`: the statement (or, for an erratum, the corrected statement)
# does not hold.  `skipped`: the check could not run.  `error`: the check itself raised.
VERDICTS = RESULTS_VERDICTS + ("skipped", "error")

# Packages that make up the catalog: every module below them is imported to register its claims.
CLAIM_PACKAGES = ("attnlab.theory",)


class Skip(Exception):
    """Raised by a check that cannot run here (missing optional dependency or data)."""


@dataclasses.dataclass
class Evidence:
    """What a check found.

    verdict      one of VERDICTS
    measured     the measured value(s): a number, a dict of numbers, or a short string
    tolerance    the tolerance the measurement is held to (number or short string)
    explanation  one line saying what was compared and how
    data         anything else worth keeping in the JSON report (reference values, per-case values)
    """

    verdict: str
    measured: Any = None
    tolerance: Any = None
    explanation: str = ""
    data: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def _nan_at(x: Any, path: str = "") -> str | None:
    """The path of the first NaN among the numbers in x (dicts, lists, tuples, floats, numpy scalars and
    arrays), or None."""
    if isinstance(x, dict):
        for k, v in x.items():
            hit = _nan_at(v, f"{path}/{k}")
            if hit is not None:
                return hit
        return None
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            hit = _nan_at(v, f"{path}[{i}]")
            if hit is not None:
                return hit
        return None
    if isinstance(x, float) or type(x).__module__ == "numpy":
        try:
            import numpy as np

            return path or "/" if bool(np.isnan(np.asarray(x, dtype=float)).any()) else None
        except (TypeError, ValueError):
            return None
    return None


def _no_nan(verdict: str, measured, data: dict) -> tuple[str, str]:
    """A NaN among a check's numbers is the largest error, not a missing one (max(worst, nan) keeps worst):
    no `holds` or `erratum` stands on it.  Returns (verdict, note)."""
    where = _nan_at(measured, "measured") or _nan_at(data, "data")
    if where is None or verdict not in ("holds", "erratum"):
        return verdict, ""
    return "fails", f" [a NaN among the measured numbers ({where}): no verdict stands on it]"


def holds_if(ok: bool, measured: Any = None, tolerance: Any = None, explanation: str = "",
             **data) -> Evidence:
    """Evidence for a claim expected to hold: verdict `holds` if `ok` else `fails` (and `fails` where a NaN
    is among the measured numbers, see _no_nan)."""
    verdict, note = _no_nan("holds" if bool(ok) else "fails", measured, data)
    return Evidence(verdict, measured, tolerance, explanation + note, data)


def erratum_if(printed_holds: bool, corrected_holds: bool, measured: Any = None,
               tolerance: Any = None, explanation: str = "", **data) -> Evidence:
    """Evidence for an erratum: the check evaluated the printed form AND the corrected form.

    verdict `erratum` when the printed form fails and the corrected form holds; `holds` when the
    printed form turned out to hold (the erratum was wrong, which the test must flag); `fails` when
    the corrected form fails too.
    """
    if bool(printed_holds):
        verdict = "holds"
    elif bool(corrected_holds):
        verdict = "erratum"
    else:
        verdict = "fails"
    data = dict(data, printed_holds=bool(printed_holds), corrected_holds=bool(corrected_holds))
    verdict, note = _no_nan(verdict, measured, data)
    return Evidence(verdict, measured, tolerance, explanation + note, data)


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    reference: str
    statement: str
    method: str
    tier: str
    expected: str
    check: Callable[[], Evidence]
    corrected: str = ""          # for errata: the corrected statement that the check shows holds
    requires: tuple = ()         # importable module names the check needs (else `skipped`)
    registration: Any = None     # an empirical claim's pre-registration (theory/preregistration.py)
    vouches_for: tuple = ()      # the library functions the check holds against its oracle (attnlab.vouching)
    algebra: str = ""            # for a claim about the paper's algebra alone: why no library code is involved

    @property
    def scope(self) -> str:
        """`empirical` (read from records), `library` (vouches for library functions), `algebra` (the
        paper's own algebra, no library code), or `undeclared` (breaks the rule of attnlab.vouching)."""
        if self.method == "results":
            return "empirical"
        if self.vouches_for:
            return "library"
        return "algebra" if self.algebra else "undeclared"

    def missing_requirements(self) -> list[str]:
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


_REGISTRY: dict[str, Claim] = {}


def on_results_scale(c: "Claim") -> bool:
    """Whether claim `c` is judged on the empirical verdict scale (docs/results_verdicts.md): every `results`
    claim (from the committed records), and a `training` claim with a registration, which trains in its
    check and holds the run against the paper's printed numbers by the same rule."""
    return c.method == "results" or (c.method == "training" and c.registration is not None)


def _validate(value, allowed, name):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def claim(id: str, *, reference: str, statement: str, method: str, tier: str = "fast",
          expected: str = "holds", corrected: str = "", requires: Iterable[str] = (), registration: Any = None,
          vouches_for: Iterable[str] = (), algebra: str = ""):
    """Register the decorated zero-argument function as the check of claim `id`.

    `id` is ``<paper>.<label>`` and is stable forever.  For ``expected="erratum"`` give the
    corrected statement in `corrected` and build the evidence with :func:`erratum_if`.

    `vouches_for` names the library functions the check calls and holds against an independent oracle
    (dotted names below ``attnlab``, e.g. ``"numerics.fenchel_attention.fenchel_attention"``); a claim
    about the paper's algebra alone gives instead `algebra`, the reason no library code is involved.
    The rule and its tests are in :mod:`attnlab.vouching`.
    """
    if isinstance(vouches_for, str):
        vouches_for = (vouches_for,)
    paper = id.split(".", 1)[0]
    _validate(paper, PAPERS, "claim id prefix (paper)")
    if "." not in id or not id.split(".", 1)[1]:
        raise ValueError(f"claim id must be '<paper>.<label>', got {id!r}")
    _validate(method, METHODS, "method")
    _validate(tier, TIERS, "tier")
    _validate(expected, EXPECTED, "expected")
    if expected == "erratum" and not corrected:
        raise ValueError(f"claim {id}: an erratum needs the corrected statement (corrected=...)")
    if expected not in ("holds", "erratum") and not (method == "results" or (method == "training" and registration is not None)):
        raise ValueError(f"claim {id}: only an empirical claim (method 'results', or 'training' with a registration) "
                         f"may expect {expected!r}; a theory claim that fails is an erratum (expected='erratum', "
                         "corrected=...)")

    def deco(fn: Callable[[], Evidence]):
        if id in _REGISTRY and _REGISTRY[id].check.__qualname__ != fn.__qualname__:
            raise ValueError(f"claim id {id!r} registered twice")
        _REGISTRY[id] = Claim(id, paper, reference, statement, method, tier, expected, fn,
                              corrected, tuple(requires), registration, tuple(vouches_for), algebra)
        return fn

    return deco


_discovered = False


def discover() -> None:
    """Import every module under CLAIM_PACKAGES so that their claims register."""
    global _discovered
    if _discovered:
        return
    for pkg_name in CLAIM_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg_name + "."):
            importlib.import_module(info.name)
    _discovered = True


def all_claims(paper: str | None = None, tier: str = "all") -> list[Claim]:
    """Claims of the catalog, sorted by id, filtered by paper and tier ('fast', 'slow', 'all')."""
    discover()
    if paper is not None:
        _validate(paper, PAPERS, "paper")
    _validate(tier, TIERS + ("all",), "tier")
    out = [c for c in _REGISTRY.values()
           if (paper is None or c.paper == paper) and (tier == "all" or c.tier == tier)]
    return sorted(out, key=lambda c: c.id)


def get_claim(claim_id: str) -> Claim:
    discover()
    try:
        return _REGISTRY[claim_id]
    except KeyError:
        raise KeyError(claim_id) from None


@dataclasses.dataclass
class Record:
    """One claim, run: the claim's metadata plus the evidence and the time it took."""

    claim: Claim
    evidence: Evidence
    seconds: float

    @property
    def verdict(self) -> str:
        return self.evidence.verdict

    @property
    def ok(self) -> bool:
        """The verdict equals the expected one.  A skipped theory claim (an optional dependency missing) is
        not a disagreement; an empirical claim registered with evidence that finds no usable record is."""
        if self.verdict == self.claim.expected:
            return True
        # an empirical claim registered with evidence that finds none (records missing) is a disagreement
        return self.verdict == "skipped" and (self.claim.method != "results" or self.claim.expected == "skipped")

    def to_json(self) -> dict:
        c, e = self.claim, self.evidence
        return {
            "id": c.id, "paper": c.paper, "reference": c.reference, "statement": c.statement,
            "corrected": c.corrected or None, "method": c.method, "tier": c.tier,
            "expected": c.expected, "verdict": e.verdict, "ok": self.ok, "measured": jsonable(e.measured),
            "tolerance": jsonable(e.tolerance), "seconds": round(self.seconds, 4),
            "explanation": e.explanation, "data": jsonable(e.data), "scope": c.scope,
            "vouches_for": list(c.vouches_for), **self.results_fields(),
        }

    def results_fields(self) -> dict:
        """For an empirical claim: data_source, statistic, ci95 (of our mean), paper_interval (where the mean of
        paper_runs runs of ours would fall: what the paper's number is held against), paper_effect, margin,
        n_seeds_registered, n_seeds_used (the seeds behind ci95), seeds_missing ({part: registered seeds
        without a usable record}) (from its registration, and from the evidence where the check got that far)."""
        reg = self.claim.registration
        if reg is None:
            return {}
        out = {"data_source": reg.data_source, "statistic": reg.statistic, "ci95": None, "paper_interval": None,
               "paper_runs": reg.paper_runs,
               "paper_effect": reg.parts[0].paper, "margin": None if reg.rule == "value" else reg.margin,
               "n_seeds_registered": len(reg.seeds), "n_seeds_used": 0, "seeds_missing": {}}
        out.update(jsonable(self.evidence.data.get("results", {})))
        return out


@contextlib.contextmanager
def _as_if_first():
    """Run a check as if it were the first in its process: the global random generators (random, numpy's
    legacy one, torch's CPU one) seeded with 0, torch's default dtype float32 and mpmath at its default precision
    (53 bits), whatever the checks before it (or a notebook) left there; the caller's states come back
    afterwards.  So a verdict and its numbers do not depend on which claims ran before (``verify --jobs`` runs
    them in other orders)."""
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    mp = sys.modules.get("mpmath")
    saved = (random.getstate(), np.random.get_state() if np else None,
             torch.random.get_rng_state() if torch else None, mp.mp.prec if mp else None,
             torch.get_default_dtype() if torch else None)
    random.seed(0)
    if np:
        np.random.seed(0)
    if torch:
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)      # (a notebook's float64 default made claims fail or error)
    if mp:
        mp.mp.prec = 53
    try:
        yield
    finally:
        random.setstate(saved[0])
        if np:
            np.random.set_state(saved[1])
        if torch:
            torch.random.set_rng_state(saved[2])
            torch.set_default_dtype(saved[4])
        if mp:
            mp.mp.prec = saved[3]


def run_claim(c: Claim) -> Record:
    """Run one claim's check (:func:`_as_if_first`); never raises (a raising check gives verdict `error`)."""
    t0 = time.perf_counter()
    missing = c.missing_requirements()
    if missing:
        ev = Evidence("skipped", explanation=f"optional dependency not installed: {', '.join(missing)}")
        return Record(c, ev, time.perf_counter() - t0)
    try:
        with _as_if_first():
            ev = c.check()
        if not isinstance(ev, Evidence):
            raise TypeError(f"check of {c.id} returned {type(ev).__name__}, not Evidence")
    except Skip as exc:
        ev = Evidence("skipped", explanation=str(exc))
    except Exception as exc:  # noqa: BLE001 -- a broken check must not end the run
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        ev = Evidence("error", explanation=last, data={"traceback": traceback.format_exc()})
    return Record(c, ev, time.perf_counter() - t0)


def jsonable(x: Any) -> Any:
    """Convert numpy/torch scalars and arrays, tuples and non-finite floats into JSON-safe values."""
    if x is None or isinstance(x, (bool, str, int)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):  # numpy / torch
        return jsonable(x.tolist())
    if hasattr(x, "item"):
        return jsonable(x.item())
    try:
        return jsonable(float(x))
    except Exception:  # noqa: BLE001
        return str(x)


def format_value(x: Any, width: int = 30) -> str:
    """Short human-readable form of a measured value or tolerance for the table."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.3g}"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, dict):
        s = ", ".join(f"{k}={format_value(v)}" for k, v in x.items())
    elif isinstance(x, (list, tuple)):
        s = "[" + ", ".join(format_value(v) for v in x) + "]"
    elif hasattr(x, "item") and getattr(x, "ndim", 0) == 0:
        return format_value(x.item())
    else:
        s = str(x)
    return s if len(s) <= width else s[: width - 1] + "…"
